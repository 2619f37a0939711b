// Kueue's waitForPodsReady (the manager Configuration's section), as the twin runs it.
//
// Read from kueue's pkg/controller/core/workload_controller.go (reconcileNotReadyTimeout,
// admittedNotReadyWorkload, triggerDeactivationOrBackoffRequeue) and pkg/workload
// (UpdateRequeueState):
//   - an admitted Workload whose pods are not all ready `timeout` after its admission
//     (here: still Placing, or Starting) is evicted: condition Evicted, reason
//     PodsReadyTimeout; its quota is released and its pods removed;
//   - a Workload that was ready and lost pods (here: a GPU failure sends it back to
//     Placing) gets `recoveryTimeout` from then (unset: `timeout`; 0: never);
//   - each such eviction counts in requeueState.count. When backoffLimitCount is set and
//     count + 1 would exceed it, the Workload is deactivated instead (spec.active=false,
//     reason RequeuingLimitExceeded): it leaves the queue for good. Otherwise it is requeued
//     at now + min(backoffBaseSeconds x 2^(count-1), backoffMaxSeconds) (Kueue adds a
//     0.01 % jitter; the twin does not), ordered in its queue by the eviction time
//     (timestamp Eviction) or its creation (Creation). The count is never reset while the
//     Workload lives.
// Not modelled: blockAdmission (admitting one Workload at a time until the previous one's
// pods are ready) and the alpha per-Workload timeouts and unscheduledTimeout.
#pragma once

#include <cstdint>
#include <optional>

#include "policy/policy_set.hpp"

namespace gpubank::twin::run {

struct WaitForPodsReady {
  std::int64_t timeout_ms = 5 * 60'000;              // Kueue's default (5m)
  std::optional<std::int64_t> recovery_timeout_ms;   // unset: timeout_ms; 0: no recovery timeout
  enum class RequeueTimestamp { Eviction, Creation };
  RequeueTimestamp timestamp = RequeueTimestamp::Eviction;
  std::int64_t backoff_base_seconds = 60;
  std::int64_t backoff_max_seconds = 3600;
  std::optional<std::int32_t> backoff_limit_count;   // unset: requeued without end

  [[nodiscard]] std::int64_t recovery_ms() const { return recovery_timeout_ms.value_or(timeout_ms); }
};

// What to do when a Workload's pods were not ready in time, given how many times it was
// requeued for it before (requeueState.count).
struct PodsReadyEviction {
  bool deactivate = false;      // backoffLimitCount reached: not requeued
  std::int32_t requeue_count = 0;  // requeueState.count after this eviction
  std::int64_t backoff_ms = 0;  // until it queues again (requeueAt - now)
};

// min(base x 2^(count-1), max) seconds, in ms (count >= 1).
[[nodiscard]] std::int64_t pods_ready_backoff_ms(const WaitForPodsReady& config, std::int32_t count);

// What `gpubank render` writes into Kueue's manager Configuration for `policies`
// (render/kueue.hpp): timeout 10m or 1.5 x the longest modelLoadTime
// (render::pods_ready_timeout_seconds), recovery as the timeout, timestamp Eviction,
// backoff 60 s doubling up to an hour, no backoffLimitCount.
[[nodiscard]] WaitForPodsReady rendered_wait_for_pods_ready(const policy::PolicySet& policies);

[[nodiscard]] PodsReadyEviction on_pods_ready_timeout(const WaitForPodsReady& config, std::int32_t requeue_count);

}  // namespace gpubank::twin::run
