#include "twin/run/pods_ready.hpp"

#include <algorithm>

#include "render/kueue.hpp"

namespace gpubank::twin::run {

std::int64_t pods_ready_backoff_ms(const WaitForPodsReady& config, std::int32_t count) {
  const std::int64_t max_ms = std::max<std::int64_t>(0, config.backoff_max_seconds) * 1000;
  std::int64_t wait = std::max<std::int64_t>(0, config.backoff_base_seconds) * 1000;
  // wait.Backoff.Step count times: base, 2 base, 4 base, ...; each capped at max.
  for (std::int32_t i = 1; i < count && wait < max_ms; ++i) wait *= 2;
  return std::min(wait, max_ms);
}

WaitForPodsReady rendered_wait_for_pods_ready(const policy::PolicySet& policies) {
  WaitForPodsReady out;
  out.timeout_ms = render::pods_ready_timeout_seconds(policies) * 1000;
  out.backoff_base_seconds = render::kPodsReadyBackoffBaseSeconds;
  out.backoff_max_seconds = render::kPodsReadyBackoffMaxSeconds;
  return out;
}

PodsReadyEviction on_pods_ready_timeout(const WaitForPodsReady& config, std::int32_t requeue_count) {
  PodsReadyEviction out;
  if (config.backoff_limit_count && requeue_count + 1 > *config.backoff_limit_count) {
    out.deactivate = true;
    out.requeue_count = requeue_count;
    return out;
  }
  out.requeue_count = requeue_count + 1;
  out.backoff_ms = pods_ready_backoff_ms(config, out.requeue_count);
  return out;
}

}  // namespace gpubank::twin::run
