#include "bank/victims.hpp"

#include <algorithm>
#include <tuple>

#include "bank/attribution.hpp"

namespace gpubank::bank {

std::string_view victim_class_name(VictimClass c) {
  switch (c) {
    case VictimClass::NotRunning: return "NotRunning";
    case VictimClass::ShortRetryable: return "ShortRetryable";
    case VictimClass::Checkpointable: return "Checkpointable";
    case VictimClass::Development: return "Development";
    case VictimClass::LongStateless: return "LongStateless";
  }
  return "LongStateless";
}

VictimClass classify(const VictimFacts& f) {
  if (!f.running) return VictimClass::NotRunning;
  if (f.checkpointable) return VictimClass::Checkpointable;
  if (f.development) return VictimClass::Development;
  if (f.expected_runtime <= f.short_job) return VictimClass::ShortRetryable;
  return VictimClass::LongStateless;
}

bool eligible_victim(const VictimCandidate& c, const std::vector<std::string>& only_preempt) {
  if (c.protected_ || !c.preemptible) return false;
  return lends_to(only_preempt, c.traits);
}

VictimChoice choose_victims(std::vector<VictimCandidate> candidates, std::int64_t demand) {
  std::erase_if(candidates, [](const VictimCandidate& c) { return c.gpus <= 0 || !eligible_victim(c); });
  // The order within a class: most recent checkpoint, lowest priority, newest admission, name.
  std::sort(candidates.begin(), candidates.end(), [](const VictimCandidate& a, const VictimCandidate& b) {
    return std::tuple(static_cast<int>(a.klass), a.checkpoint_age, a.priority, -a.admitted_at, a.workload) <
           std::tuple(static_cast<int>(b.klass), b.checkpoint_age, b.priority, -b.admitted_at, b.workload);
  });
  VictimChoice out;
  std::vector<bool> taken(candidates.size(), false);
  std::int64_t need = demand;
  std::size_t begin = 0;
  while (need > 0 && begin < candidates.size()) {
    std::size_t end = begin;
    while (end < candidates.size() && candidates[end].klass == candidates[begin].klass) ++end;
    // The smallest one that covers what is left, else the largest (earliest in order on ties).
    std::size_t pick = end;
    for (std::size_t i = begin; i < end; ++i) {
      if (taken[i] || candidates[i].gpus < need) continue;
      if (pick == end || candidates[i].gpus < candidates[pick].gpus) pick = i;
    }
    if (pick == end) {
      for (std::size_t i = begin; i < end; ++i) {
        if (taken[i]) continue;
        if (pick == end || candidates[i].gpus > candidates[pick].gpus) pick = i;
      }
    }
    if (pick == end) {  // class exhausted
      begin = end;
      continue;
    }
    taken[pick] = true;
    need -= candidates[pick].gpus;
    out.victims.push_back(candidates[pick]);
  }
  // Fill-back: drop victims that are not needed after all, last chosen first.
  std::int64_t total = 0;
  for (const auto& v : out.victims) total += v.gpus;
  for (std::size_t i = out.victims.size(); i-- > 0;) {
    if (total - out.victims[i].gpus >= demand) {
      total -= out.victims[i].gpus;
      out.victims.erase(out.victims.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  out.gpus = total;
  out.covers = total >= demand;
  return out;
}

}  // namespace gpubank::bank
