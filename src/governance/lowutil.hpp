// The low-utilisation verdict: which LowUtilizationPolicy governs a workload, whether an
// exception excludes it, and whether its GPUs stayed below every threshold the policy sets
// over its window. Pure: the facts come from Prometheus (queries.hpp), the time is given.
//
// Exceptions, in the order they are checked (the first that applies is the reason counted):
//   allow-listed-owner   the owner is on the scanner's allow list (--allow-owner)
//   serving-floor        capacity-role=serving-floor: capacity kept for inference on purpose,
//                        counted as retention, never as waste (whether or not the policy's
//                        excludeWhen names it)
//   keep-running-until   the annotation names an instant still in the future
//   excluded-by-label    another excludeWhen label the workload carries
//   startup-grace        running for less than startupGracePeriod
//   checkpoint-grace     a checkpoint (the bank's notice or its completion) less than
//                        checkpointGracePeriod ago: its dip is not idleness
//   job-phase            a training or batch job's own gpubank_training_phase said loading,
//                        compiling, evaluating, checkpointing or recovering within the
//                        checkpoint grace (at least two minutes) — unless it said so for
//                        the whole window, which is judged like any other window
//   short-history        running for less than the window: the average would cover a part
// A workload no policy matches is "uncovered"; one without a sample for a threshold's metric
// is "no-data". Neither is judged.
//
// Token throughput: vLLM takes most of the GPU's memory for its KV cache at start
// (--gpu-memory-utilization, 0.9 by default), so a vLLM workload's memory says nothing about
// use. Where its pods report tokens, the memory threshold is read as "served tokens in the
// window": a server that served none is below it, one that served any is not.
//
// Training progress: where a training or batch workload's pods report
// gpubank_training_steps_total, progress decides instead of the thresholds. No step over
// the window is low whatever the utilisation (a job hung in a collective keeps its GPUs
// busy and makes no progress); any step is fine (an input-bound job is slow, not idle).
// Utilisation judges only workloads that report no steps, and those whose whole window was
// overhead (an evaluation makes no step; a busy one is not idle, a stuck load is).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy_set.hpp"
#include "policy/types.hpp"

namespace gpubank::governance {

// One workload as Prometheus shows it at the scan's instant (queries.hpp reads it).
struct WorkloadFacts {
  std::string workload_uid;  // or "<kind>/<namespace>/<name>" where pods carry no UID (queries.hpp)
  std::string cluster;  // empty in a single-cluster Prometheus
  std::string business_group;
  std::string owner_id;
  std::string namespace_name;
  std::string workload_kind;
  std::string workload;
  std::string workload_type;  // training, inference, batch, notebook; empty when unknown
  std::string pool;
  std::string gpu_model;
  std::string partition;         // "full" or a MIG profile
  std::string capacity_role;     // serving-floor, burst-headroom, borrowable-cold or empty
  std::string checkpointable;    // "true", "false" or empty
  std::optional<std::int64_t> keep_running_until_s;  // Unix seconds
  double gpus = 0;               // devices held now; a time-sliced device counts 1/holders
  std::optional<double> started_s;  // the earliest pod start, Unix seconds
  // Averages over the window of the policy that governs the workload, in percent.
  std::optional<double> gpu_utilization;
  std::optional<double> memory_utilization;
  std::optional<double> power_fraction;
  // vLLM's tokens per second over the window; none when its pods have no vLLM series.
  std::optional<double> tokens_per_second;
  // Training steps completed over the window; none when its pods do not report them.
  std::optional<double> training_steps;
  // The overhead states (metrics/job_phase.hpp) its pods reported over the phase lookback
  // (the checkpoint grace, at least two minutes), in kOverhead order; and the largest
  // fraction of the window one of its pods spent in them. Both empty when its pods report
  // no phase.
  std::vector<std::string> overhead_phases;
  std::optional<double> overhead_fraction;
  double group_borrowed_gpus = 0;  // what the business group borrows on the pool now (the ledger's loans)
  std::optional<std::int64_t> last_checkpoint_ms;  // the bank's last checkpoint notice or completion

  [[nodiscard]] std::optional<double> running_seconds(std::int64_t now_ms) const;
};

// A LowUtilizationPolicy as it takes effect (a group's tightened by the platform's).
struct ScanPolicy {
  std::string name;
  std::string ref;  // "LowUtilizationPolicy/<name>"
  policy::LowUtilizationPolicySpec spec;
  [[nodiscard]] int specificity() const;  // businessGroup 2, resourcePool 1
};

// The effective LowUtilizationPolicies of a set, sorted by name.
[[nodiscard]] std::vector<ScanPolicy> scan_policies(const policy::PolicySet& set);

// The policy that governs a workload: the most specific one matching its type, group and
// pool (ties by name); nullptr when none matches.
[[nodiscard]] const ScanPolicy* governing_policy(const WorkloadFacts& w, const std::vector<ScanPolicy>& policies);

enum class VerdictKind { Low, Fine, Excluded, Uncovered, NoData };
[[nodiscard]] std::string_view to_string(VerdictKind kind);

struct Verdict {
  VerdictKind kind = VerdictKind::Uncovered;
  const ScanPolicy* policy = nullptr;
  std::string reason;  // the exception, the missing metric, or which thresholds held
};

struct AssessOptions {
  std::set<std::string, std::less<>> allowed_owners;
};

[[nodiscard]] Verdict assess(const WorkloadFacts& w, const std::vector<ScanPolicy>& policies, std::int64_t now_ms,
                             const AssessOptions& options = {});

// excludeWhen entries the scanner cannot evaluate from Prometheus (an annotation other than
// keep-running-until, a label the exporter does not carry): "<policy ref>: <what>", to warn.
[[nodiscard]] std::vector<std::string> unsupported_exclusions(const std::vector<ScanPolicy>& policies);

// The pod label keys of excludeWhen that the exporter carries, and the series label each
// becomes (capacity-role -> capacity_role, ...).
[[nodiscard]] std::optional<std::string_view> exported_label(std::string_view pod_label_key);

}  // namespace gpubank::governance
