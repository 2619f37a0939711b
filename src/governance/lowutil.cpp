#include "governance/lowutil.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "document/decode.hpp"
#include "metrics/job_phase.hpp"
#include "policy/low_utilization.hpp"
#include "policy/schema.hpp"

namespace gpubank::governance {
namespace {

constexpr std::string_view kKeepRunningUntil = "platform.gpubank.dev/keep-running-until";

struct ExportedLabel {
  std::string_view pod_label;
  std::string_view series_label;
};
// What the attribution exporter writes on gpubank_gpu_allocation_info (docs/metrics-contract.md).
constexpr ExportedLabel kExported[] = {
    {"platform.gpubank.dev/capacity-role", "capacity_role"},
    {"platform.gpubank.dev/checkpointable", "checkpointable"},
    {"platform.gpubank.dev/workload-type", "workload_type"},
    {"platform.gpubank.dev/business-group", "business_group"},
    {"platform.gpubank.dev/owner-id", "owner_id"},
};

const std::string* facts_label(const WorkloadFacts& w, std::string_view series_label) {
  if (series_label == "capacity_role") return &w.capacity_role;
  if (series_label == "checkpointable") return &w.checkpointable;
  if (series_label == "workload_type") return &w.workload_type;
  if (series_label == "business_group") return &w.business_group;
  if (series_label == "owner_id") return &w.owner_id;
  return nullptr;
}

std::int64_t ms(const Duration& d) { return d.milliseconds(); }

bool matches(const policy::LowUtilizationMatch& m, const WorkloadFacts& w) {
  if (w.workload_type != doc::enum_name(m.workload_type)) return false;
  if (m.business_group && *m.business_group != w.business_group) return false;
  if (m.resource_pool && *m.resource_pool != w.pool) return false;
  return true;
}

std::string format_percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", v);
  return buf;
}

std::string format_rate(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string join(const std::vector<std::string>& states) {
  std::string out;
  for (const std::string& s : states) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? std::string("overhead states") : out;
}

}  // namespace

std::optional<double> WorkloadFacts::running_seconds(std::int64_t now_ms) const {
  if (!started_s) return std::nullopt;
  return std::max(0.0, static_cast<double>(now_ms) / 1000.0 - *started_s);
}

int ScanPolicy::specificity() const {
  return (spec.match.business_group ? 2 : 0) + (spec.match.resource_pool ? 1 : 0);
}

std::vector<ScanPolicy> scan_policies(const policy::PolicySet& set) {
  std::vector<ScanPolicy> out;
  for (const policy::PolicyObject& p : set.policies()) {
    if (p.kind != policy::Kind::LowUtilizationPolicy) continue;
    out.push_back({p.name(), p.ref(), policy::effective_low_utilization(p, set)});
  }
  std::sort(out.begin(), out.end(), [](const ScanPolicy& a, const ScanPolicy& b) { return a.name < b.name; });
  return out;
}

const ScanPolicy* governing_policy(const WorkloadFacts& w, const std::vector<ScanPolicy>& policies) {
  const ScanPolicy* best = nullptr;
  for (const ScanPolicy& p : policies) {  // sorted by name: the first of equal specificity wins
    if (!matches(p.spec.match, w)) continue;
    if (best == nullptr || p.specificity() > best->specificity()) best = &p;
  }
  return best;
}

std::string_view to_string(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::Low: return "low";
    case VerdictKind::Fine: return "fine";
    case VerdictKind::Excluded: return "excluded";
    case VerdictKind::Uncovered: return "uncovered";
    case VerdictKind::NoData: return "no-data";
  }
  return "?";
}

std::optional<std::string_view> exported_label(std::string_view pod_label_key) {
  for (const ExportedLabel& e : kExported) {
    if (e.pod_label == pod_label_key) return e.series_label;
  }
  return std::nullopt;
}

Verdict assess(const WorkloadFacts& w, const std::vector<ScanPolicy>& policies, std::int64_t now_ms,
               const AssessOptions& options) {
  Verdict v;
  v.policy = governing_policy(w, policies);
  if (v.policy == nullptr) {
    v.reason = w.workload_type.empty() ? "no workload type" : "no LowUtilizationPolicy matches";
    return v;
  }
  const policy::LowUtilizationPolicySpec& s = v.policy->spec;
  auto excluded = [&](std::string reason) {
    v.kind = VerdictKind::Excluded;
    v.reason = std::move(reason);
    return v;
  };
  if (!w.owner_id.empty() && options.allowed_owners.contains(w.owner_id)) return excluded("allow-listed-owner");
  if (w.capacity_role == "serving-floor") return excluded("serving-floor");
  if (w.keep_running_until_s && *w.keep_running_until_s * 1000 > now_ms) return excluded("keep-running-until");
  for (const policy::Exclusion& e : s.exclude_when) {
    if (!e.label) continue;
    const auto series = exported_label(*e.label);
    if (!series) continue;
    const std::string* value = facts_label(w, *series);
    if (value != nullptr && !value->empty() && (!e.value || *e.value == *value)) {
      return excluded("excluded-by-label");
    }
  }
  const std::optional<double> running = w.running_seconds(now_ms);
  if (running && *running * 1000 < static_cast<double>(ms(s.startup_grace_period))) return excluded("startup-grace");
  if (w.last_checkpoint_ms && now_ms - *w.last_checkpoint_ms < ms(s.checkpoint_grace_period)) {
    return excluded("checkpoint-grace");
  }
  const bool all_overhead = w.overhead_fraction && *w.overhead_fraction >= metrics::job_phase::kWholeWindowFraction;
  if (!w.overhead_phases.empty() && !all_overhead) return excluded("job-phase");
  if (!running || *running * 1000 < static_cast<double>(ms(s.window))) return excluded("short-history");

  if (w.training_steps && !all_overhead && (w.workload_type == "training" || w.workload_type == "batch")) {
    const std::string window = s.window.to_string();
    const std::string busy =
        w.gpu_utilization ? " at GPU utilisation " + format_percent(*w.gpu_utilization) : std::string();
    // increase() of a counter that did not move is exactly 0; anything below one step is
    // extrapolation of a counter that did not move either.
    if (*w.training_steps < 1) {
      v.kind = VerdictKind::Low;
      v.reason = "no training steps in " + window + busy;
      return v;
    }
    v.kind = VerdictKind::Fine;
    v.reason = format_rate(*w.training_steps) + " training steps in " + window + busy;
    return v;
  }

  struct Check {
    const std::optional<double>* threshold;
    const std::optional<double>* value;
    std::string_view what;
  };
  const Check checks[] = {
      {&s.thresholds.average_gpu_utilization, &w.gpu_utilization, "GPU utilisation"},
      {&s.thresholds.average_memory_utilization, &w.memory_utilization, "memory utilisation"},
      {&s.thresholds.average_power_fraction, &w.power_fraction, "power draw"},
  };
  std::string below;
  for (const Check& c : checks) {
    if (!c.threshold->has_value()) continue;
    if (c.value == &w.memory_utilization && w.tokens_per_second) {
      // A vLLM server's memory is its KV cache, held from start: tokens say whether it is used.
      if (*w.tokens_per_second > 0) {
        v.kind = VerdictKind::Fine;
        v.reason = "served " + format_rate(*w.tokens_per_second) + " tokens/s (vLLM holds its memory for the KV cache)";
        return v;
      }
      below += (below.empty() ? "" : ", ") + std::string("no tokens served");
      continue;
    }
    if (!c.value->has_value() || !std::isfinite(**c.value)) {
      v.kind = VerdictKind::NoData;
      v.reason = "no " + std::string(c.what) + " samples";
      return v;
    }
    if (!(**c.value < **c.threshold)) {
      v.kind = VerdictKind::Fine;
      v.reason = std::string(c.what) + " " + format_percent(**c.value) + " is not below " +
                 format_percent(**c.threshold);
      return v;
    }
    below += (below.empty() ? "" : ", ") + std::string(c.what) + " " + format_percent(**c.value) + " < " +
             format_percent(**c.threshold);
  }
  if (below.empty()) {  // a policy without thresholds flags nothing
    v.kind = VerdictKind::Fine;
    v.reason = "the policy sets no threshold";
    return v;
  }
  v.kind = VerdictKind::Low;
  v.reason = all_overhead ? below + " (in " + join(w.overhead_phases) + " for the whole " + s.window.to_string() + ")"
                          : below;
  return v;
}

std::vector<std::string> unsupported_exclusions(const std::vector<ScanPolicy>& policies) {
  std::vector<std::string> out;
  for (const ScanPolicy& p : policies) {
    for (const policy::Exclusion& e : p.spec.exclude_when) {
      if (e.annotation && *e.annotation != kKeepRunningUntil) {
        out.push_back(p.ref + ": excludeWhen annotation " + *e.annotation +
                      " is not exported to Prometheus; only " + std::string(kKeepRunningUntil) + " is evaluated");
      } else if (e.label && !exported_label(*e.label)) {
        out.push_back(p.ref + ": excludeWhen label " + *e.label + " is not exported to Prometheus");
      }
    }
  }
  return out;
}

}  // namespace gpubank::governance
