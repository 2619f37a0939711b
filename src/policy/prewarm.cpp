#include "policy/prewarm.hpp"

#include <algorithm>

namespace gpubank::policy {

Duration effective_prewarm_before(const PolicySet& set, const TidalPolicySpec& tidal, const TidalWindow& window) {
  if (window.prewarm_before) return *window.prewarm_before;
  std::chrono::nanoseconds slowest{0};
  bool any = false;
  for (const auto& name : tidal.targets.inference_policies) {
    const PolicyObject* o = set.find(Kind::InferenceScalingPolicy, name);
    if (o == nullptr) continue;
    slowest = std::max(slowest, o->as<InferenceScalingPolicySpec>().model_load_time.nanoseconds());
    any = true;
  }
  return any ? Duration{slowest + kDefaultPrewarmMargin} : Duration{};
}

}  // namespace gpubank::policy
