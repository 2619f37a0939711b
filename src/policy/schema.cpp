#include "policy/schema.hpp"

#include <algorithm>
#include <cctype>

#include "core/timezone.hpp"
#include "policy/rules.hpp"

namespace gpubank::doc {
namespace {

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Kubernetes qualified name: [prefix/]name, name <= 63 of [A-Za-z0-9_.-] starting and
// ending alphanumeric; prefix a DNS-1123 subdomain <= 253.
std::optional<std::string> check_label_key(const std::string& key) {
  std::string_view name = key;
  if (auto slash = key.find('/'); slash != std::string::npos) {
    const std::string_view prefix(key.data(), slash);
    name = std::string_view(key).substr(slash + 1);
    const bool prefix_ok =
        !prefix.empty() && prefix.size() <= 253 && is_lower_alnum(prefix.front()) && is_lower_alnum(prefix.back()) &&
        std::all_of(prefix.begin(), prefix.end(), [](char c) { return is_lower_alnum(c) || c == '-' || c == '.'; });
    if (!prefix_ok) return "label key \"" + key + "\" has an invalid prefix (a DNS subdomain is required)";
  }
  const bool name_ok = !name.empty() && name.size() <= 63 && is_alnum(name.front()) && is_alnum(name.back()) &&
                       std::all_of(name.begin(), name.end(),
                                   [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; });
  if (!name_ok) {
    return "label key \"" + key +
           "\" is not a qualified name (at most 63 letters, digits, '-', '_' or '.', starting and ending with a "
           "letter or digit)";
  }
  return std::nullopt;
}

std::optional<std::string> check_label_value(const std::string& key, const std::string& value) {
  if (value.empty()) return std::nullopt;
  const bool ok = value.size() <= 63 && is_alnum(value.front()) && is_alnum(value.back()) &&
                  std::all_of(value.begin(), value.end(),
                              [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; });
  if (ok) return std::nullopt;
  return "label \"" + key + "\" has an invalid value \"" + value +
         "\" (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)";
}

}  // namespace

std::optional<std::string> SubjectFormat::operator()(const std::vector<std::string>& subjects) const {
  for (const auto& s : subjects) {
    const bool ok = (s.starts_with("user:") && s.size() > 5) || (s.starts_with("group:") && s.size() > 6);
    if (!ok) return "subject \"" + s + "\" must be \"user:<name>\" or \"group:<name>\"";
  }
  return std::nullopt;
}

std::optional<std::string> PartitionFormat::operator()(const std::string& v) const {
  if (v == "full") return std::nullopt;
  // <n>g.<m>gb with an optional "+me" (media extensions), e.g. 1g.10gb, 3g.40gb, 1g.10gb+me.
  std::size_t i = 0;
  auto digits = [&]() {
    const std::size_t start = i;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])) != 0) ++i;
    return i > start;
  };
  bool ok = digits() && v.compare(i, 2, "g.") == 0;
  if (ok) {
    i += 2;
    ok = digits() && v.compare(i, 2, "gb") == 0;
    i += 2;
    ok = ok && (i == v.size() || v.substr(i) == "+me");
  }
  if (ok) return std::nullopt;
  return "partition \"" + v + "\" must be \"full\" or a MIG profile such as \"1g.10gb\"";
}

std::optional<std::string> ModelFormat::operator()(const std::string& v) const {
  const bool ok = !v.empty() && v.size() <= 63 && std::all_of(v.begin(), v.end(), [](char c) {
    return is_alnum(c) || c == '-' || c == '_' || c == '.';
  });
  if (ok) return std::nullopt;
  return "GPU model \"" + v + "\" must be 1-63 letters, digits, '-', '_' or '.'";
}

std::optional<std::string> CurrencyFormat::operator()(const std::string& v) const {
  const bool ok = v.size() == 3 && std::all_of(v.begin(), v.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
  if (ok) return std::nullopt;
  return "currency \"" + v + "\" must be an ISO 4217 code such as \"USD\"";
}

std::optional<std::string> DnsLabels::operator()(const std::vector<std::string>& v) const {
  for (const auto& item : v) {
    if (auto e = DnsLabel{}(item)) return e;
  }
  return std::nullopt;
}

std::optional<std::string> LabelMapFormat::operator()(const std::map<std::string, std::string>& v) const {
  for (const auto& [key, value] : v) {
    if (auto e = check_label_key(key)) return e;
    if (auto e = check_label_value(key, value)) return e;
  }
  return std::nullopt;
}

bool Codec<CronSchedule>::decode(const Field& f, CronSchedule& out) {
  if (f.node.type != NodeType::String) {
    f.wrong_type("a cron expression string such as \"30 8 * * 1-5\"");
    return false;
  }
  auto parsed = CronSchedule::parse(f.node.text);
  if (!parsed) {
    f.error(policy::rule::kCronInvalid, parsed.error());
    return false;
  }
  out = std::move(*parsed);
  return true;
}

bool Codec<policy::TimeZoneRef>::decode(const Field& f, policy::TimeZoneRef& out) {
  if (f.node.type != NodeType::String) {
    f.wrong_type("an IANA time zone name such as \"Asia/Shanghai\"");
    return false;
  }
  auto zone = find_time_zone(f.node.text);
  if (!zone) {
    f.error(policy::rule::kTimezoneUnknown, zone.error());
    return false;
  }
  out = policy::TimeZoneRef{f.node.text, *zone};
  return true;
}

bool Codec<policy::ReplicaFloor>::decode(const Field& f, policy::ReplicaFloor& out) {
  if (f.node.type == NodeType::Int) {
    int value = 0;
    if (!Codec<int>::decode(f, value)) return false;
    if (auto e = GpuCount{0}(value)) {
      f.error(kRuleOutOfRange, *e);
      return false;
    }
    out.all = value;
    return true;
  }
  if (f.node.type == NodeType::Mapping) {
    if (!Codec<std::map<std::string, int>>::decode(f, out.per_policy)) return false;
    for (const auto& [name, value] : out.per_policy) {
      if (auto e = GpuCount{0}(value)) {
        f.child(*f.node.find(name), f.path + "." + name).error(kRuleOutOfRange, *e);
        return false;
      }
    }
    return true;
  }
  f.wrong_type("an integer or an object of {inference policy name: integer}");
  return false;
}

Json Codec<policy::ReplicaFloor>::encode(const policy::ReplicaFloor& v) {
  if (v.all) return *v.all;
  return Codec<std::map<std::string, int>>::encode(v.per_policy);
}

}  // namespace gpubank::doc
