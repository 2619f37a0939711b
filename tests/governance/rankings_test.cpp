// The KPIs' printed forms: the table and the CSV carry every KPI, and a KPI that has no
// value (no denominator, no admissions) prints as "-" in the table and empty in the CSV.
#include "governance/rankings.hpp"

#include <gtest/gtest.h>

namespace gpubank::governance {
namespace {

std::vector<Kpi> two_kpis() {
  Kpi pool;
  pool.pool = "h100-rdma-training";
  pool.gpu_model = "H100";
  pool.allocated_gpu_hours = 4;
  pool.available_gpu_hours = 8;
  pool.allocation_rate = 0.5;
  pool.low_utilization_gpu_hours = 1;
  pool.idle_waste_share = 0.25;
  pool.effective_gpu_hours = 2.5;
  pool.measured_gpu_hours = 3;
  pool.effective_utilization = 2.5 / 3;
  Kpi group = pool;
  group.business_group = "search";
  group.available_gpu_hours = 32;
  group.allocation_rate = 4.0 / 32;
  group.borrowable_gpu_hours = 2;
  group.borrowed_gpu_hours = 1;
  group.borrow_rate = 0.5;
  group.recompute_loss_gpu_hours = 0.75;
  group.admissions = 10;
  group.queue_wait_mean_seconds = 147;
  group.queue_wait_p90_seconds = 60;
  return {pool, group};
}

TEST(KpiText, TableAndCsv) {
  EXPECT_EQ(kpi_table(two_kpis()),
            "POOL                GROUP   GPU   ALLOCATED  AVAILABLE  ALLOCATION  BORROWED  BORROW RATE  RECOMPUTE  "
            "IDLE WASTE  WASTE SHARE  EFFECTIVE  PER 1M TOKENS  WAIT P90 S\n"
            "h100-rdma-training  (pool)  H100       4.00       8.00       50.0%      0.00            -       0.00  "
            "      1.00        25.0%      83.3%              -           -\n"
            "h100-rdma-training  search  H100       4.00      32.00       12.5%      1.00        50.0%       0.75  "
            "      1.00        25.0%      83.3%              -          60\n");
  EXPECT_EQ(kpi_csv(two_kpis()),
            "pool,business_group,gpu_model,allocated_gpu_hours,available_gpu_hours,allocation_rate,borrowed_gpu_hours,"
            "borrowable_gpu_hours,borrow_rate,recompute_loss_gpu_hours,low_utilization_gpu_hours,idle_waste_share,"
            "effective_gpu_hours,measured_gpu_hours,effective_utilization,inference_cost,effective_tokens,"
            "inference_unit_cost,admissions,queue_wait_mean_seconds,queue_wait_p90_seconds\n"
            "h100-rdma-training,,H100,4.0000,8.0000,0.500000,0.0000,0.0000,,0.0000,1.0000,0.250000,2.5000,3.0000,"
            "0.833333,0.00,0,,0,,\n"
            "h100-rdma-training,search,H100,4.0000,32.0000,0.125000,1.0000,2.0000,0.500000,0.7500,1.0000,0.250000,"
            "2.5000,3.0000,0.833333,0.00,0,,10,147.000000,60.000000\n");
}

}  // namespace
}  // namespace gpubank::governance
