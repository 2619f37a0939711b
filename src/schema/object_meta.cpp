#include "schema/object_meta.hpp"

#include "core/quote.hpp"

namespace gpubank::schema::detail {
namespace {

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool alnum(char c) { return lower_alnum(c) || (c >= 'A' && c <= 'Z'); }

// first, last and middle characters of a token match the given classes.
template <class First, class Last, class Middle>
bool token(std::string_view s, First first, Last last, Middle middle) {
  if (s.empty() || !first(s.front()) || !last(s.back())) return false;
  for (std::size_t i = 1; i + 1 < s.size(); ++i) {
    if (!middle(s[i])) return false;
  }
  return true;
}

bool label_token(std::string_view s) {
  return token(s, lower_alnum, lower_alnum, [](char c) { return lower_alnum(c) || c == '-'; });
}
bool name_token(std::string_view s) {  // the name part of a qualified name, a label value
  return token(s, alnum, alnum, [](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

std::string too_long(std::size_t max) { return "must be no more than " + std::to_string(max) + " characters"; }

constexpr std::string_view kSubdomainSyntax =
    "must be a lowercase RFC 1123 subdomain: lower case alphanumeric characters, '-' or '.', starting and ending "
    "with an alphanumeric character (regex '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr std::string_view kNameSyntax =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (regex '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

// generateName is a prefix: the server appends random characters, so a trailing '-' is fine.
std::string mask_trailing_dash(std::string_view s) {
  std::string out(s);
  if (out.size() > 1 && out.back() == '-') out.back() = 'a';
  return out;
}

std::optional<std::string> check_name(std::string_view name, const MetaRules& rules) {
  if (rules.max_name_length > 0 && name.size() > rules.max_name_length) return too_long(rules.max_name_length);
  switch (rules.name) {
    case NameRule::Subdomain: return check_dns1123_subdomain(name);
    case NameRule::Dns1035Label: return check_dns1035_label(name);
    case NameRule::PathSegment: return check_path_segment_name(name);
  }
  return std::nullopt;
}

const std::string* string_at(const nlohmann::ordered_json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
}

void add(std::vector<Violation>& out, std::string path, std::string_view rule, std::string message) {
  out.push_back({std::move(path), std::string(rule), std::move(message)});
}

std::string invalid(std::string_view value, const std::string& detail) {
  return "Invalid value: " + quote(value) + ": " + detail;
}

}  // namespace

std::optional<std::string> check_dns1123_label(std::string_view s) {
  if (s.size() > 63) return too_long(63);
  if (!label_token(s)) {
    return "must be a lowercase RFC 1123 label: lower case alphanumeric characters or '-', starting and ending with "
           "an alphanumeric character (regex '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
  }
  return std::nullopt;
}

std::optional<std::string> check_dns1123_subdomain(std::string_view s) {
  if (s.size() > 253) return too_long(253);
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = s.find('.', start);
    if (!label_token(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start))) {
      return std::string(kSubdomainSyntax);
    }
    if (dot == std::string_view::npos) return std::nullopt;
    start = dot + 1;
  }
}

std::optional<std::string> check_dns1035_label(std::string_view s) {
  if (s.size() > 63) return too_long(63);
  const auto letter = [](char c) { return c >= 'a' && c <= 'z'; };
  if (!token(s, letter, lower_alnum, [](char c) { return lower_alnum(c) || c == '-'; })) {
    return "must be a DNS-1035 label: lower case alphanumeric characters or '-', starting with a letter and ending "
           "with an alphanumeric character (regex '[a-z]([-a-z0-9]*[a-z0-9])?')";
  }
  return std::nullopt;
}

std::optional<std::string> check_qualified_name(std::string_view s) {
  std::string_view name = s;
  const std::size_t slash = s.find('/');
  if (slash != std::string_view::npos) {
    if (s.find('/', slash + 1) != std::string_view::npos) {
      return "a qualified name " + std::string(kNameSyntax) + ", with an optional DNS subdomain prefix and '/'";
    }
    const std::string_view prefix = s.substr(0, slash);
    if (prefix.empty()) return std::string("prefix part must be non-empty");
    if (auto problem = check_dns1123_subdomain(prefix)) return "prefix part " + *problem;
    name = s.substr(slash + 1);
  }
  if (name.empty()) return std::string("name part must be non-empty");
  if (name.size() > 63) return "name part " + too_long(63);
  if (!name_token(name)) return "name part " + std::string(kNameSyntax);
  return std::nullopt;
}

std::optional<std::string> check_label_value(std::string_view s) {
  if (s.size() > 63) return too_long(63);
  if (!s.empty() && !name_token(s)) return "a valid label value must be empty or " + std::string(kNameSyntax);
  return std::nullopt;
}

std::optional<std::string> check_path_segment_name(std::string_view s) {
  if (s == "." || s == "..") return "may not be '" + std::string(s) + "'";
  for (const char c : {'/', '%'}) {
    if (s.find(c) != std::string_view::npos) return std::string("may not contain '") + c + "'";
  }
  return std::nullopt;
}

void check_object_meta(const nlohmann::ordered_json& meta, const std::string& path, const MetaRules& rules,
                       std::vector<Violation>& out) {
  if (!meta.is_object()) return;
  const std::string* name = string_at(meta, "name");
  const std::string* generate_name = string_at(meta, "generateName");
  const std::string reason = rules.name_reason.empty() ? "" : " (" + rules.name_reason + ")";
  if (generate_name != nullptr && !generate_name->empty()) {
    if (auto problem = check_name(mask_trailing_dash(*generate_name), rules)) {
      add(out, path + ".generateName", "name", invalid(*generate_name, *problem + reason));
    }
  }
  if (name != nullptr && !name->empty()) {
    if (auto problem = check_name(*name, rules)) add(out, path + ".name", "name", invalid(*name, *problem + reason));
  } else if (rules.name_required && (generate_name == nullptr || generate_name->empty())) {
    add(out, path + ".name", "required", "Required value: name or generateName is required");
  }

  // The server clears the namespace of a cluster-scoped object instead of refusing it.
  const std::string* ns = string_at(meta, "namespace");
  if (ns != nullptr && !ns->empty() && (rules.namespaced || rules.name == NameRule::PathSegment)) {
    if (auto problem = check_dns1123_label(*ns)) add(out, path + ".namespace", "namespace", invalid(*ns, *problem));
  }

  if (const auto labels = meta.find("labels"); labels != meta.end() && labels->is_object()) {
    for (const auto& [key, value] : labels->items()) {
      const std::string at = path + ".labels[" + key + "]";
      if (auto problem = check_qualified_name(key)) add(out, at, "label-key", invalid(key, *problem));
      if (!value.is_string()) continue;
      const auto& v = value.get_ref<const std::string&>();
      if (auto problem = check_label_value(v)) add(out, at, "label-value", invalid(v, *problem));
    }
  }

  if (const auto annotations = meta.find("annotations"); annotations != meta.end() && annotations->is_object()) {
    std::size_t total = 0;
    for (const auto& [key, value] : annotations->items()) {
      std::string lower = key;  // annotation keys are checked case-insensitively
      for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      if (auto problem = check_qualified_name(lower)) {
        add(out, path + ".annotations[" + key + "]", "annotation-key", invalid(key, *problem));
      }
      total += key.size() + (value.is_string() ? value.get_ref<const std::string&>().size() : 0);
    }
    if (total > kMaxAnnotationsBytes) {
      add(out, path + ".annotations", "annotations-size",
          "Too long: must have at most " + std::to_string(kMaxAnnotationsBytes) + " bytes (keys and values add up to " +
              std::to_string(total) + ")");
    }
  }

  if (const auto finalizers = meta.find("finalizers"); finalizers != meta.end() && finalizers->is_array()) {
    for (std::size_t i = 0; i < finalizers->size(); ++i) {
      const auto& f = (*finalizers)[i];
      if (!f.is_string()) continue;
      const auto& v = f.get_ref<const std::string&>();
      if (auto problem = check_qualified_name(v)) {
        add(out, path + ".finalizers[" + std::to_string(i) + "]", "finalizer", invalid(v, *problem));
      }
    }
  }
}

}  // namespace gpubank::schema::detail
