#include "policy/cohort_quota.hpp"

namespace gpubank::policy {

std::int64_t guaranteed_on_pool(const PolicySet& set, std::string_view pool) {
  std::int64_t sum = 0;
  for (const auto& o : set.policies()) {
    if (o.kind != Kind::GPUQuotaPolicy) continue;
    const auto& q = o.as<GPUQuotaPolicySpec>();
    if (q.resource_pool == pool) sum += q.guaranteed;
  }
  return sum;
}

std::int64_t lease_extras_on_pool(std::span<const CapacityLeaseSpec* const> active, std::string_view pool) {
  std::int64_t sum = 0;
  for (const CapacityLeaseSpec* lease : active) {
    if (lease == nullptr || lease->type != LeaseType::TemporaryQuota || lease->resource_pool != pool) continue;
    sum += lease->extra_guaranteed.value_or(0);
  }
  return sum;
}

std::int64_t cohort_nominal_quota(const PolicySet& set, const Pool& pool, std::span<const CapacityLeaseSpec* const> active) {
  return unguaranteed_gpus(pool.capacity, guaranteed_on_pool(set, pool.name), lease_extras_on_pool(active, pool.name));
}

}  // namespace gpubank::policy
