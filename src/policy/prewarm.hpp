// How early a tidal window's replicas start loading. One definition for everything that
// acts on it: the tidal controller, the rendered KEDA cron triggers, the consistency checks
// and the HPA model.
#pragma once

#include <chrono>

#include "core/duration.hpp"
#include "policy/policy_set.hpp"
#include "policy/types.hpp"

namespace gpubank::policy {

// What an unset prewarmBefore adds to the slowest model load among the window's services.
inline constexpr std::chrono::minutes kDefaultPrewarmMargin{2};

// The window's prewarmBefore when set; otherwise the largest modelLoadTime among the
// InferenceScalingPolicies the TidalPolicy targets that `set` holds, plus the margin
// (zero when it holds none of them: nothing is loaded, so nothing needs a lead).
[[nodiscard]] Duration effective_prewarm_before(const PolicySet& set, const TidalPolicySpec& tidal,
                                                const TidalWindow& window);

}  // namespace gpubank::policy
