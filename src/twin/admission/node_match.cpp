#include "twin/admission/node_match.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

namespace gpubank::twin {
namespace {

// content.IsDecimalInteger (k8s.io/apimachinery): "0", or an optional '-' and digits
// without a leading zero, and within int64 (strconv.ParseInt). Toleration values are held
// to this; "+5", "05" and "-0" are not integers there.
std::optional<std::int64_t> decimal_integer(std::string_view s) {
  std::string_view digits = s.starts_with('-') ? s.substr(1) : s;
  if (digits.empty() || digits.front() < '0' || digits.front() > '9') return std::nullopt;
  if (digits.front() == '0' && s != "0") return std::nullopt;
  return parse_int_base10(s);
}

bool matches(const NodeSelectorRequirement& r, const std::string& label) {
  const auto listed = [&] { return std::find(r.values.begin(), r.values.end(), label) != r.values.end(); };
  switch (r.op) {
    case NodeSelectorOperator::In: return listed();
    case NodeSelectorOperator::NotIn: return !listed();
    // The key is one of the flavor's labels (flavorSelector kept only those).
    case NodeSelectorOperator::Exists: return true;
    case NodeSelectorOperator::DoesNotExist: return false;
    case NodeSelectorOperator::Gt:
    case NodeSelectorOperator::Lt: {
      const auto value = parse_int_base10(label);
      if (!value) return false;
      return r.op == NodeSelectorOperator::Gt ? *value > r.bound : *value < r.bound;
    }
  }
  return false;
}

// errors.Flatten(errors.NewAggregate(errs)).Error(): one error as it is; several as
// "[a, b]", each distinct message once.
std::string aggregate(const std::vector<std::string>& errors) {
  if (errors.size() == 1) return errors.front();
  std::vector<const std::string*> seen;
  for (const auto& e : errors) {
    if (std::none_of(seen.begin(), seen.end(), [&](const std::string* s) { return *s == e; })) seen.push_back(&e);
  }
  std::string out;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (i > 0) out += ", ";
    out += *seen[i];
  }
  return seen.size() == 1 ? out : "[" + out + "]";
}

}  // namespace

std::optional<std::int64_t> parse_int_base10(std::string_view s) {
  // strconv.ParseInt(s, 10, 64): an optional sign, then at least one decimal digit.
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    const bool negative = s.front() == '-';
    s.remove_prefix(1);
    if (s.empty() || s.front() == '+' || s.front() == '-') return std::nullopt;
    if (!negative) return parse_int_base10(s);
    // Parsed with the sign so that the smallest int64 is in range.
    std::string signed_text = "-";
    signed_text += s;
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(signed_text.data(), signed_text.data() + signed_text.size(), value);
    if (ec != std::errc{} || end != signed_text.data() + signed_text.size()) return std::nullopt;
    return value;
  }
  if (s.empty()) return std::nullopt;
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return value;
}

bool tolerates(const Toleration& toleration, const Taint& taint) {
  if (toleration.effect && *toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  switch (toleration.op) {
    case TolerationOperator::Equal: return toleration.value == taint.value;
    case TolerationOperator::Exists: return true;
    case TolerationOperator::Lt:
    case TolerationOperator::Gt: {
      const auto bound = decimal_integer(toleration.value);
      const auto value = decimal_integer(taint.value);
      if (!bound || !value) return false;
      return toleration.op == TolerationOperator::Lt ? *value < *bound : *value > *bound;
    }
    case TolerationOperator::Unsupported: return false;
  }
  return false;
}

const Taint* untolerated_taint(const ResourceFlavorSpec& flavor, const std::vector<Toleration>& pod_tolerations) {
  const auto tolerated = [&](const Taint& t) {
    const auto by = [&](const Toleration& tol) { return tolerates(tol, t); };
    return std::any_of(pod_tolerations.begin(), pod_tolerations.end(), by) ||
           std::any_of(flavor.tolerations.begin(), flavor.tolerations.end(), by);
  };
  for (const auto& t : flavor.node_taints) {
    if (t.effect == TaintEffect::PreferNoSchedule) continue;
    if (!tolerated(t)) return &t;
  }
  return nullptr;
}

std::string taint_text(const Taint& taint) {
  std::string out = "{" + taint.key + " " + taint.value + " ";
  switch (taint.effect) {
    case TaintEffect::NoSchedule: out += "NoSchedule"; break;
    case TaintEffect::PreferNoSchedule: out += "PreferNoSchedule"; break;
    case TaintEffect::NoExecute: out += "NoExecute"; break;
  }
  out += ' ';
  if (taint.time_added) {
    // "2026-12-01T08:00:00.5Z" -> "2026-12-01 08:00:00.5 +0000 UTC" (time.Time.String()).
    std::string t = format_rfc3339(*taint.time_added);
    t[10] = ' ';
    t.pop_back();
    out += t + " +0000 UTC";
  } else {
    out += "<nil>";
  }
  return out + "}";
}

AffinityMatch match_node_affinity(const PodSetSpec& pod_set, const std::map<std::string, std::string>& flavor_labels) {
  for (const auto& [key, value] : pod_set.node_selector) {
    const auto it = flavor_labels.find(key);
    if (it != flavor_labels.end() && it->second != value) return {false, {}};
  }
  if (pod_set.required_node_affinity.empty()) return {};
  // flavorSelector: the requirements on this flavor's keys, per term; a term with none
  // left matches any flavor, and so does the whole affinity then.
  std::vector<std::vector<const NodeSelectorRequirement*>> kept(pod_set.required_node_affinity.size());
  for (std::size_t i = 0; i < kept.size(); ++i) {
    for (const auto& r : pod_set.required_node_affinity[i].match_expressions) {
      if (flavor_labels.contains(r.key)) kept[i].push_back(&r);
    }
    if (kept[i].empty()) return {};
  }
  // LazyErrorNodeSelector.Match: the first term that parsed and matches wins; a term that
  // did not parse only contributes its errors.
  std::vector<std::string> errors;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    bool parsed = true;
    for (std::size_t j = 0; j < kept[i].size(); ++j) {
      for (const auto& e : kept[i][j]->errors) {
        errors.push_back("nodeSelectorTerms[" + std::to_string(i) + "].matchExpressions[" + std::to_string(j) + "]" + e);
        parsed = false;
      }
    }
    if (!parsed) continue;
    if (std::all_of(kept[i].begin(), kept[i].end(),
                    [&](const NodeSelectorRequirement* r) { return matches(*r, flavor_labels.at(r->key)); })) {
      return {};
    }
  }
  return {false, errors.empty() ? std::string{} : aggregate(errors)};
}

}  // namespace gpubank::twin
