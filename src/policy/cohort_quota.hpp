// The GPUs of a pool that no group is guaranteed, and the quota the pool's Kueue Cohort
// holds for them. Kueue shares only what is in some node's quota: GPUs outside every
// ClusterQueue's nominalQuota and the Cohort's would sit idle, however many queues wait.
// So each pool's Cohort carries
//
//   nominalQuota = max(0, capacity - Σ guaranteed - Σ extraGuaranteed of the active
//                         TemporaryQuota leases on the pool)
//
// and the whole pool is in the quota tree: idle unguaranteed GPUs can be borrowed (within
// each queue's borrowingLimit), and a lease's extra guarantee moves GPUs from the Cohort
// to the lessee's ClusterQueue instead of adding GPUs that do not exist.
//
// `gpubank render` writes the Cohort with no lease active (a render has no clock); the
// controller recomputes it with cohort_nominal_quota(set, pool, active) whenever a lease
// starts or ends, and the twin does the same (twin/run). Pure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>

#include "policy/policy_set.hpp"
#include "policy/types.hpp"

namespace gpubank::policy {

// What no guarantee holds: capacity less the guarantees and the active lease extras,
// never below 0 (leases validation let through, or approved against an older set, may
// add up to more than the pool has left; the Cohort then holds nothing).
[[nodiscard]] constexpr std::int64_t unguaranteed_gpus(std::int64_t capacity, std::int64_t guaranteed,
                                                       std::int64_t lease_extras) {
  return std::max<std::int64_t>(0, capacity - guaranteed - lease_extras);
}

// Σ guaranteed of the set's GPUQuotaPolicies on `pool`.
[[nodiscard]] std::int64_t guaranteed_on_pool(const PolicySet& set, std::string_view pool);

// Σ extraGuaranteed of the TemporaryQuota leases among `active` that are on `pool`
// (Protection leases and leases on other pools add nothing). Which leases are active
// (approved, started, not ended) is the caller's to say.
[[nodiscard]] std::int64_t lease_extras_on_pool(std::span<const CapacityLeaseSpec* const> active, std::string_view pool);

// The nominalQuota of `pool`'s Cohort while `active` leases are in force; none: what
// `gpubank render` writes.
[[nodiscard]] std::int64_t cohort_nominal_quota(const PolicySet& set, const Pool& pool,
                                                std::span<const CapacityLeaseSpec* const> active = {});

}  // namespace gpubank::policy
