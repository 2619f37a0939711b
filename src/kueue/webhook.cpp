// Kueue's pkg/webhooks (clusterqueue_webhook.go, cohort_webhook.go, common.go,
// resourceflavor_webhook.go, workload_webhook.go) at the reference commit, with the default feature gates
// (WorkloadValidateResourcesAreNonNegative and PartialAdmission on). Messages are the
// field.Error bodies those webhooks return.
#include "kueue/webhook.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "kueue/decode.hpp"

namespace gpubank::kueue::detail {
namespace {

constexpr std::string_view kNegative = "must be greater than or equal to 0";

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

struct Webhook {
  Reader& r;
  const doc::SourceMap& positions;

  // `at`: the path the finding points at in the file when the message's path is not one
  // (Kueue names list entries by key, "reclaimablePods[main]", where the file has indices).
  void invalid(const std::string& path, const std::string& shown, std::string_view detail, const std::string* at = nullptr) {
    r.invalid(positions.find(at != nullptr ? *at : path), path, shown, detail, kRuleWebhook);
  }
  void report(const std::string& path, std::string message, const std::string* at = nullptr) {
    r.report(kRuleWebhook, positions.find(at != nullptr ? *at : path), path, std::move(message));
  }
};

struct LimitConfig {
  bool has_parent = false;
  bool enforce_nominal_above_lending = false;
  bool is_cohort = false;
};

// metavalidation.ValidateLabels. Go ranges over the map in random order; the twin goes by key.
void validate_labels(Webhook& w, const std::map<std::string, std::string>& labels, const std::string& path) {
  for (const auto& [key, value] : labels) {
    for (const auto& message : label_key_errors(key)) w.invalid(path, go_quote(key), message);
    for (const auto& message : label_value_errors(value)) w.invalid(path, go_quote(value), message);
  }
}

// apivalidation.ValidateAnnotations: keys are qualified names once lowercased, and keys and
// values together hold at most 256 KiB.
void validate_annotations(Webhook& w, const std::map<std::string, std::string>& annotations, const std::string& path) {
  std::size_t total = 0;
  for (const auto& [key, value] : annotations) {
    std::string lower = key;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const auto& message : label_key_errors(lower)) w.invalid(path, go_quote(key), message);
    total += key.size() + value.size();
  }
  constexpr std::size_t kTotalAnnotationSizeLimit = 256 * 1024;
  if (total > kTotalAnnotationSizeLimit) {
    w.report(path, "Too long: may not be more than " + std::to_string(kTotalAnnotationSizeLimit) + " bytes");
  }
}

void validate_quantity(Webhook& w, const Quantity& q, const std::string& path) {
  if (q.negative()) w.invalid(path, go_quote(q.to_string()), kNegative);
}

void validate_limit(Webhook& w, const Quantity& limit, const LimitConfig& config, const std::string& path) {
  if (config.has_parent) return;
  w.invalid(path, go_quote(limit.to_string()),
            config.is_cohort ? "must be nil when parent is empty" : "must be nil when cohort is empty");
}

void validate_resource_groups(Webhook& w, const std::vector<ResourceGroup>& groups, const LimitConfig& config,
                              const std::string& path) {
  std::set<std::string> seen_resources, seen_flavors;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const std::string gpath = index(path, i);
    const ResourceGroup& g = groups[i];
    for (std::size_t j = 0; j < g.covered_resources.size(); ++j) {
      const std::string cpath = index(join(gpath, "coveredResources"), j);
      const std::string& name = g.covered_resources[j];
      for (const auto& message : label_key_errors(name)) w.invalid(cpath, go_quote(name), message);
      if (!seen_resources.insert(name).second) w.report(cpath, "Duplicate value: " + go_quote(name));
    }
    for (std::size_t j = 0; j < g.flavors.size(); ++j) {
      const std::string fpath = index(join(gpath, "flavors"), j);
      const FlavorQuotas& f = g.flavors[j];
      for (std::size_t k = 0; k < f.resources.size() && k < g.covered_resources.size(); ++k) {
        const std::string rpath = index(join(fpath, "resources"), k);
        const ResourceQuota& q = f.resources[k];
        if (q.name != g.covered_resources[k]) {
          w.invalid(join(rpath, "name"), go_quote(q.name), "must match the name in coveredResources");
        }
        validate_quantity(w, q.nominal_quota, join(rpath, "nominalQuota"));
        if (q.borrowing_limit) {
          validate_limit(w, *q.borrowing_limit, config, join(rpath, "borrowingLimit"));
          validate_quantity(w, *q.borrowing_limit, join(rpath, "borrowingLimit"));
        }
        if (q.lending_limit) {
          const std::string lpath = join(rpath, "lendingLimit");
          validate_quantity(w, *q.lending_limit, lpath);
          validate_limit(w, *q.lending_limit, config, lpath);
          if (config.enforce_nominal_above_lending && *q.lending_limit > q.nominal_quota) {
            w.invalid(lpath, go_quote(q.lending_limit->to_string()), "must be less than or equal to the nominalQuota");
          }
        }
      }
      if (!seen_flavors.insert(f.name).second) w.report(join(fpath, "name"), "Duplicate value: " + go_quote(f.name));
    }
  }
}

void validate_fair_sharing(Webhook& w, const std::optional<Quantity>& weight, const std::string& path) {
  if (!weight) return;
  if (weight->negative()) w.invalid(path, go_quote(weight->to_string()), kNegative);
  if (!weight->negative() && !weight->is_zero() && *weight <= *Quantity::parse("1n")) {
    w.invalid(path, go_quote(weight->to_string()), "When not 0, weight must be > 10e-9");
  }
}

void validate_totals(Webhook& w, const std::vector<ResourceGroup>& groups, const std::string& path) {
  std::size_t flavors = 0, covered = 0;
  for (const auto& g : groups) {
    flavors += g.flavors.size();
    covered += g.covered_resources.size();
  }
  if (flavors > 256) {
    w.invalid(path, std::to_string(flavors),
              "total number of flavors across all resourceGroups must be ≤ 256, got " + std::to_string(flavors));
  }
  if (covered > 256) {
    w.invalid(path, std::to_string(covered),
              "total number of covered resources across all resourceGroups must be ≤ 256, got " + std::to_string(covered));
  }
  for (std::size_t i = 0; i < groups.size(); ++i) {
    std::size_t combinations = 0;
    for (const auto& f : groups[i].flavors) combinations += f.resources.size();
    if (combinations > 512) {
      w.invalid(index(path, i), std::to_string(combinations),
                "number of flavor-resource combinations in a resourceGroup must be ≤ 512, got " +
                    std::to_string(combinations));
    }
  }
}

void validate_resource_list(Webhook& w, const ResourceList& list, const std::string& path) {
  for (const auto& [name, quantity] : list) {  // sorted by name: Go's map order is random
    const std::string key = map_key(path, name);
    if (name == "pods") w.invalid(key, go_quote("pods"), "the key is reserved for internal kueue use");
    validate_quantity(w, quantity, key);
  }
}

void validate_containers(Webhook& w, const std::vector<Container>& containers, const std::string& path) {
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const std::string cpath = join(index(path, i), "resources");
    validate_resource_list(w, containers[i].resources.requests, join(cpath, "requests"));
    validate_resource_list(w, containers[i].resources.limits, join(cpath, "limits"));
  }
}

}  // namespace

std::vector<std::string> label_key_errors(std::string_view key) {
  constexpr std::string_view kQualified =
      "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
      "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
      "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  constexpr std::string_view kSubdomain =
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
      "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  std::vector<std::string> errors;
  std::string_view name = key;
  const auto slashes = std::count(key.begin(), key.end(), '/');
  if (slashes > 1) {
    errors.push_back("a valid label key " + std::string(kQualified) +
                     " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
    return errors;
  }
  if (slashes == 1) {
    const auto slash = key.find('/');
    const std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty()) {
      errors.emplace_back("prefix part must be non-empty");
    } else {
      if (prefix.size() > 253) errors.emplace_back("prefix part must be no more than 253 bytes");
      if (!is_subdomain(prefix)) errors.push_back("prefix part " + std::string(kSubdomain));
    }
  }
  if (name.empty()) {
    errors.emplace_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errors.emplace_back("name part must be no more than 63 bytes");
  }
  const bool name_ok = !name.empty() && is_alnum(name.front()) && is_alnum(name.back()) &&
                       std::all_of(name.begin(), name.end(),
                                   [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; });
  if (!name_ok) errors.push_back("name part " + std::string(kQualified));
  return errors;
}

std::vector<std::string> label_value_errors(std::string_view value) {
  constexpr std::string_view kLabelValue =
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
      "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
      "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
  std::vector<std::string> errors;
  if (value.size() > 63) errors.emplace_back("must be no more than 63 bytes");
  const bool ok = value.empty() || (is_alnum(value.front()) && is_alnum(value.back()) &&
                                    std::all_of(value.begin(), value.end(), [](char c) {
                                      return is_alnum(c) || c == '-' || c == '_' || c == '.';
                                    }));
  if (!ok) errors.emplace_back(kLabelValue);
  return errors;
}

void webhook_cluster_queue(Reader& r, const doc::SourceMap& positions, const ClusterQueue& cq) {
  Webhook w{r, positions};
  const LimitConfig config{!cq.cohort_name.empty(), true, false};
  validate_resource_groups(w, cq.resource_groups, config, "spec.resourceGroups");
  validate_fair_sharing(w, cq.fair_weight, "spec.fairSharing");
  validate_totals(w, cq.resource_groups, "spec.resourceGroups");
  // validateAdmissionCheckOnFlavors: every onFlavors entry names a flavor of the queue. The
  // supported values are a Go set's UnsortedList (random order); the twin sorts them. The
  // value is a ResourceFlavorReference, not a string, so ErrorBody shows it as JSON.
  std::set<std::string> flavors;
  for (const auto& g : cq.resource_groups) {
    for (const auto& f : g.flavors) flavors.insert(f.name);
  }
  for (std::size_t i = 0; i < cq.admission_checks.size(); ++i) {
    const auto& on_flavors = cq.admission_checks[i].second;
    const std::string path = join(index("spec.admissionChecksStrategy.admissionChecks", i), "onFlavors");
    for (std::size_t j = 0; j < on_flavors.size(); ++j) {
      if (!flavors.contains(on_flavors[j])) w.report(index(path, j), unsupported_value(go_json(on_flavors[j]), flavors));
    }
  }
}

namespace {

// corev1.Taint as encoding/json writes it (field.Duplicate shows the taint so): its fields
// in declaration order, value and timeAdded left out when empty, timeAdded as metav1.Time
// marshals it (RFC 3339 in UTC, whole seconds).
std::string taint_json(const Taint& t) {
  std::string s = "{\"key\":" + go_json(t.key);
  if (!t.value.empty()) s += ",\"value\":" + go_json(t.value);
  s += ",\"effect\":" + go_json(t.effect);
  if (t.time_added) {
    s += ",\"timeAdded\":" + go_json(format_rfc3339(std::chrono::floor<std::chrono::seconds>(*t.time_added)));
  }
  return s + "}";
}

}  // namespace

// ValidateResourceFlavor: metavalidation.ValidateLabels on nodeLabels, validateNodeTaints
// and validateTolerations (the toleration key only; the CRD's rules check the rest).
void webhook_resource_flavor(Reader& r, const doc::SourceMap& positions, const ResourceFlavor& rf) {
  Webhook w{r, positions};
  validate_labels(w, rf.node_labels, "spec.nodeLabels");
  std::map<std::string, std::set<std::string>> keys_by_effect;
  for (std::size_t i = 0; i < rf.node_taints.size(); ++i) {
    const Taint& t = rf.node_taints[i];
    const std::string path = index("spec.nodeTaints", i);
    for (const auto& message : label_key_errors(t.key)) w.invalid(join(path, "key"), go_quote(t.key), message);
    if (const auto errors = label_value_errors(t.value); !errors.empty()) {
      std::string joined;
      for (const auto& e : errors) joined.append(joined.empty() ? "" : ";").append(e);
      w.invalid(join(path, "value"), go_quote(t.value), joined);
    }
    if (!keys_by_effect[t.effect].insert(t.key).second) {
      w.report(path, "Duplicate value: " + taint_json(t) + ": taints must be unique by key and effect pair");
    }
  }
  for (std::size_t i = 0; i < rf.tolerations.size(); ++i) {
    const std::string& key = rf.tolerations[i].key;
    if (key.empty()) continue;
    const std::string path = join(index("spec.tolerations", i), "key");
    for (const auto& message : label_key_errors(key)) w.invalid(path, go_quote(key), message);
  }
}

void webhook_cohort(Reader& r, const doc::SourceMap& positions, const Cohort& cohort) {
  Webhook w{r, positions};
  validate_fair_sharing(w, cohort.fair_weight, "spec.fairSharing");
  const LimitConfig config{!cohort.parent_name.empty(), false, true};
  validate_resource_groups(w, cohort.resource_groups, config, "spec.resourceGroups");
}

void webhook_workload(Reader& r, const doc::SourceMap& positions, const Workload& wl) {
  Webhook w{r, positions};
  std::size_t variable_count = 0;
  for (std::size_t i = 0; i < wl.pod_sets.size(); ++i) {
    const PodSet& ps = wl.pod_sets[i];
    // validatePodSet; the metadata checks are WorkloadValidationForPodSetMetadata's (beta,
    // on by default since Kueue 0.20).
    const std::string metadata = index("spec.podSets", i) + ".template.metadata";
    validate_labels(w, ps.template_labels, join(metadata, "labels"));
    validate_annotations(w, ps.template_annotations, join(metadata, "annotations"));
    const std::string spec = index("spec.podSets", i) + ".template.spec";
    validate_containers(w, ps.spec.init_containers, join(spec, "initContainers"));
    validate_containers(w, ps.spec.containers, join(spec, "containers"));
    if (ps.spec.resources) {
      validate_resource_list(w, ps.spec.resources->requests, join(spec, "resources.requests"));
      validate_resource_list(w, ps.spec.resources->limits, join(spec, "resources.limits"));
    }
    if (ps.min_count) ++variable_count;
  }
  if (variable_count > 1) w.invalid("spec.podSets", std::to_string(variable_count), "at most one podSet can use minCount");

  if (wl.has_quota_reservation()) {
    if (!wl.admission) {
      w.report("status.admission", "Required value: must be set while the QuotaReserved condition is true");
    } else {
      for (std::size_t i = 0; i < wl.admission->pod_set_assignments.size(); ++i) {
        const PodSetAssignment& psa = wl.admission->pod_set_assignments[i];
        const std::string ppath = index("status.admission.podSetAssignments", i);
        const bool known = std::any_of(wl.pod_sets.begin(), wl.pod_sets.end(),
                                       [&](const PodSet& ps) { return ps.name == psa.name; });
        if (!known) w.report(join(ppath, "name"), "Not found: " + go_quote(psa.name));
        const std::int32_t count = psa.count.value_or(0);
        if (count <= 0) continue;
        for (const auto& [res, q] : psa.resource_usage) {
          const std::int64_t v = res == "cpu" ? q.milli_value() : q.value();
          if (v % count != 0) {
            w.invalid(map_key(join(ppath, "resourceUsage"), res), q.to_string(),
                      "is not a multiple of " + std::to_string(count));
          }
        }
      }
    }
  }
  // metav1validation.ValidateConditions: what the CRD's pattern for a condition type does
  // not check of IsQualifiedName is the length of its parts (name 63, prefix 253 bytes).
  for (std::size_t i = 0; i < wl.conditions.size(); ++i) {
    const std::string& type = wl.conditions[i].type;
    const std::string path = join(index("status.conditions", i), "type");
    for (const auto& message : label_key_errors(type)) w.invalid(path, go_quote(type), message);
  }
  // validateReclaimablePods on create: each entry names a pod set and reclaims at most its
  // count. Kueue names the entry by key; the finding points at its index in the file.
  std::vector<std::string> known;
  for (const auto& ps : wl.pod_sets) known.push_back(ps.name);
  for (std::size_t i = 0; i < wl.reclaimable_pods.size(); ++i) {
    const ReclaimablePod& rp = wl.reclaimable_pods[i];
    const std::string path = map_key("status.reclaimablePods", rp.name);
    const std::string at = index("status.reclaimablePods", i);
    const auto ps = std::find_if(wl.pod_sets.begin(), wl.pod_sets.end(), [&](const PodSet& p) { return p.name == rp.name; });
    if (ps == wl.pod_sets.end()) {
      // The name is a PodSetReference, so ErrorBody shows it as JSON.
      const std::string name_at = join(at, "name");
      w.report(join(path, "name"), unsupported_value(go_json(rp.name), known), &name_at);
    } else if (rp.count > ps->count) {
      const std::string count_at = join(at, "count");
      w.invalid(join(path, "count"), std::to_string(rp.count), "should be less or equal to " + std::to_string(ps->count),
                &count_at);
    }
  }
}

}  // namespace gpubank::kueue::detail
