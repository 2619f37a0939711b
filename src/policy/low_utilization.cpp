#include "policy/low_utilization.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "policy/schema.hpp"

namespace gpubank::policy {
namespace {

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

bool same_exclusion(const Exclusion& a, const Exclusion& b) {
  return a.label == b.label && a.value == b.value && a.annotation == b.annotation;
}

std::string describe(const Exclusion& e) {
  if (e.annotation) return "annotation " + *e.annotation;
  return "label " + e.label.value_or("") + (e.value ? "=" + *e.value : std::string());
}

// The rank of a notification target: whom a notice reaches, higher is stricter.
int rank(NotifyTarget t) { return static_cast<int>(t); }

struct Threshold {
  const char* field;
  std::optional<double> LowUtilizationThresholds::*member;
};
constexpr Threshold kThresholds[] = {
    {"averageGpuUtilization", &LowUtilizationThresholds::average_gpu_utilization},
    {"averageMemoryUtilization", &LowUtilizationThresholds::average_memory_utilization},
    {"averagePowerFraction", &LowUtilizationThresholds::average_power_fraction},
};

}  // namespace

bool low_utilization_overlaps(const LowUtilizationMatch& a, const LowUtilizationMatch& b) {
  auto agree = [](const std::optional<std::string>& x, const std::optional<std::string>& y) {
    return !x || !y || *x == *y;
  };
  return a.workload_type == b.workload_type && agree(a.business_group, b.business_group) &&
         agree(a.resource_pool, b.resource_pool);
}

std::vector<const PolicyObject*> overridden_platform_policies(const PolicyObject& policy, const PolicySet& set) {
  std::vector<const PolicyObject*> out;
  const auto& match = policy.as<LowUtilizationPolicySpec>().match;
  if (!match.business_group) return out;
  for (const PolicyObject& other : set.policies()) {
    if (other.kind != Kind::LowUtilizationPolicy || &other == &policy) continue;
    const auto& m = other.as<LowUtilizationPolicySpec>().match;
    if (!m.business_group && low_utilization_overlaps(match, m)) out.push_back(&other);
  }
  std::sort(out.begin(), out.end(), [](const PolicyObject* a, const PolicyObject* b) { return a->name() < b->name(); });
  return out;
}

std::vector<Loosening> low_utilization_loosenings(const LowUtilizationPolicySpec& group,
                                                  const LowUtilizationPolicySpec& platform,
                                                  const std::string& platform_ref) {
  std::vector<Loosening> out;
  const std::string tail = "; a business group's policy may only tighten the platform's " + platform_ref;
  for (const Threshold& t : kThresholds) {
    const auto& mine = group.thresholds.*t.member;
    const auto& theirs = platform.thresholds.*t.member;
    if (!mine) continue;
    const std::string path = std::string("spec.thresholds.") + t.field;
    if (!theirs) {
      out.push_back({path, percent(*mine) + "% adds a condition the platform does not have (every threshold must " +
                               "hold, so an extra one flags fewer workloads)" + tail});
    } else if (*mine < *theirs) {
      out.push_back({path, percent(*mine) + "% is below the platform's " + percent(*theirs) + "%" + tail});
    }
  }
  auto longer = [&](const char* path, const Duration& mine, const Duration& theirs) {
    if (mine > theirs) {
      out.push_back({path, mine.to_string() + " is longer than the platform's " + theirs.to_string() + tail});
    }
  };
  longer("spec.window", group.window, platform.window);
  longer("spec.startupGracePeriod", group.startup_grace_period, platform.startup_grace_period);
  longer("spec.checkpointGracePeriod", group.checkpoint_grace_period, platform.checkpoint_grace_period);

  const NotifyPolicy mine = group.notify.value_or(NotifyPolicy{});
  const NotifyPolicy theirs = platform.notify.value_or(NotifyPolicy{});
  if (rank(mine.first) < rank(theirs.first)) {
    out.push_back({"spec.notify.first", "notifies " + std::string(doc::enum_name(mine.first)) +
                                            " first where the platform notifies " +
                                            std::string(doc::enum_name(theirs.first)) + tail});
  }
  if (theirs.escalate_to && theirs.after) {
    if (!mine.escalate_to || !mine.after) {
      out.push_back({"spec.notify.escalateTo", "does not escalate where the platform escalates to " +
                                                   std::string(doc::enum_name(*theirs.escalate_to)) + " after " +
                                                   theirs.after->to_string() + tail});
    } else {
      if (rank(*mine.escalate_to) < rank(*theirs.escalate_to)) {
        out.push_back({"spec.notify.escalateTo", "escalates to " + std::string(doc::enum_name(*mine.escalate_to)) +
                                                     " where the platform escalates to " +
                                                     std::string(doc::enum_name(*theirs.escalate_to)) + tail});
      }
      if (*mine.after > *theirs.after) {
        out.push_back({"spec.notify.after", mine.after->to_string() + " is later than the platform's " +
                                                theirs.after->to_string() + tail});
      }
    }
  }
  if (theirs.repeat_interval && (!mine.repeat_interval || *mine.repeat_interval > *theirs.repeat_interval)) {
    out.push_back({"spec.notify.repeatInterval",
                   (mine.repeat_interval ? mine.repeat_interval->to_string() + " is rarer than"
                                         : std::string("does not repeat notices, unlike")) +
                       " the platform's " + theirs.repeat_interval->to_string() + tail});
  }
  for (std::size_t i = 0; i < group.exclude_when.size(); ++i) {
    const Exclusion& e = group.exclude_when[i];
    const bool shared = std::any_of(platform.exclude_when.begin(), platform.exclude_when.end(),
                                    [&](const Exclusion& p) { return same_exclusion(e, p); });
    if (!shared) {
      out.push_back({"spec.excludeWhen[" + std::to_string(i) + "]",
                     "excludes workloads by " + describe(e) + ", which the platform does not exclude" + tail});
    }
  }
  return out;
}

LowUtilizationPolicySpec tighten_low_utilization(LowUtilizationPolicySpec group, const LowUtilizationPolicySpec& platform) {
  // A threshold is a condition that must hold ("below t"): a higher one, or none, flags more.
  LowUtilizationThresholds merged;
  for (const Threshold& t : kThresholds) {
    const auto& mine = group.thresholds.*t.member;
    const auto& theirs = platform.thresholds.*t.member;
    if (mine && theirs) merged.*t.member = std::max(*mine, *theirs);
  }
  if (merged.average_gpu_utilization || merged.average_memory_utilization || merged.average_power_fraction) {
    group.thresholds = merged;
  } else {
    group.thresholds = platform.thresholds;
  }
  group.window = std::min(group.window, platform.window);
  group.startup_grace_period = std::min(group.startup_grace_period, platform.startup_grace_period);
  group.checkpoint_grace_period = std::min(group.checkpoint_grace_period, platform.checkpoint_grace_period);

  if (group.notify || platform.notify) {
    NotifyPolicy mine = group.notify.value_or(NotifyPolicy{});
    const NotifyPolicy theirs = platform.notify.value_or(NotifyPolicy{});
    if (rank(theirs.first) > rank(mine.first)) mine.first = theirs.first;
    if (theirs.escalate_to && theirs.after) {
      if (!mine.escalate_to || !mine.after) {
        mine.escalate_to = theirs.escalate_to;
        mine.after = theirs.after;
      } else {
        if (rank(*theirs.escalate_to) > rank(*mine.escalate_to)) mine.escalate_to = theirs.escalate_to;
        mine.after = std::min(*mine.after, *theirs.after);
      }
    }
    if (theirs.repeat_interval) {
      mine.repeat_interval = mine.repeat_interval ? std::min(*mine.repeat_interval, *theirs.repeat_interval)
                                                  : *theirs.repeat_interval;
    }
    group.notify = mine;
  }
  std::erase_if(group.exclude_when, [&](const Exclusion& e) {
    return std::none_of(platform.exclude_when.begin(), platform.exclude_when.end(),
                        [&](const Exclusion& p) { return same_exclusion(e, p); });
  });
  return group;
}

LowUtilizationPolicySpec effective_low_utilization(const PolicyObject& policy, const PolicySet& set) {
  LowUtilizationPolicySpec spec = policy.as<LowUtilizationPolicySpec>();
  for (const PolicyObject* platform : overridden_platform_policies(policy, set)) {
    spec = tighten_low_utilization(std::move(spec), platform->as<LowUtilizationPolicySpec>());
  }
  return spec;
}

}  // namespace gpubank::policy
