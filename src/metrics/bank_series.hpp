// The bank's series, as the twin (`gpubank up`, `twin run --metrics`) and the controller
// both export them: one definition of each name, HELP text and label list, so the rendered
// PrometheusRules and dashboards read either the same way (docs/metrics-contract.md).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpubank::metrics::bank_series {

struct Series {
  std::string_view name;
  std::string_view help;
  std::array<std::string_view, 3> label_names{};  // the first label_count are used
  std::size_t label_count = 0;
  [[nodiscard]] std::vector<std::string> labels() const {
    return {label_names.begin(), label_names.begin() + static_cast<std::ptrdiff_t>(label_count)};
  }
};

inline constexpr Series kQuotaGpus{
    "gpubank_quota_gpus",
    "GPUs of a business group in a pool by kind: guaranteed, used, borrowed (use above the guarantee), lent (others' "
    "use of its unused guarantee), borrowable now, lending floor.",
    {"business_group", "pool", "kind"}, 3};
inline constexpr Series kLoanGpus{"gpubank_bank_loan_gpus",
                                  "GPUs of lender's guarantee on pool that borrower uses now, from the ledger.",
                                  {"pool", "lender", "borrower"}, 3};
inline constexpr Series kBorrowedGpuHours{
    "gpubank_borrowed_gpu_hours_total",
    "GPU-hours borrowed, by lender, borrower and pool (integral of the borrow records).",
    {"lender", "borrower", "pool"}, 3};
inline constexpr Series kCheckpoints{"gpubank_checkpoint_total", "Checkpoints asked for on a reclaim notice, by result.",
                                     {"result"}, 1};
inline constexpr Series kRecomputeLossGpuHours{
    "gpubank_recompute_loss_gpu_hours_total",
    "GPU-hours of work lost since the last checkpoint of stopped or preempted workloads, by their business group and "
    "pool.",
    {"business_group", "pool"}, 2};
// The checkpoint window (docs/governance.md): while a job checkpoints for a reclaim notice,
// and for the LowUtilizationPolicy's checkpointGracePeriod after, its GPUs' dip is not waste.
inline constexpr Series kLastCheckpoint{
    "gpubank_last_checkpoint_timestamp_seconds",
    "Unix time of the last checkpoint a job was asked for (a reclaim notice) or reported, for jobs that hold GPUs.",
    {"namespace", "workload_kind", "workload"}, 3};

}  // namespace gpubank::metrics::bank_series
