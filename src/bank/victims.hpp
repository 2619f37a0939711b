// Which borrowed workloads yield when a lender takes its GPUs back (graceful reclaim).
//
// Victims come from the workloads running on capacity the reclaiming group lent, and are
// taken class by class in the order that loses the least work:
//   0. NotRunning: admitted, pods not running yet (nothing to lose);
//   1. ShortRetryable: not checkpointable, expected to run at most `short_job` in total
//      (cheap to run again);
//   2. Checkpointable: honours the checkpoint protocol (loses at most what it did since the
//      checkpoint it takes on notice); those with the most recent verified checkpoint first;
//   3. Development: notebooks and development work, lowest priority first;
//   4. LongStateless: everything else: long jobs that cannot save state, last.
// Never chosen: protected workload types (online inference) and workloads under an
// approved Protection lease (the caller marks both as `protected_`), workloads whose
// priority class says `preemptible: false`, and, among what a lender that restricts its
// lending (`reclaimPolicy.onlyPreempt`) lent, workloads that carry none of those traits.
//
// Within the order, the choice takes the fewest GPUs that cover the demand: in the current
// class, the smallest workload that covers what is still needed, else the largest one and
// go on; a later class is touched only when the earlier ones are exhausted. Then, like
// Kueue's fill-back, victims whose GPUs turn out not to be needed are dropped again (last
// chosen first). A workload (a whole gang) is taken or left whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpubank::bank {

enum class VictimClass { NotRunning = 0, ShortRetryable = 1, Checkpointable = 2, Development = 3, LongStateless = 4 };

[[nodiscard]] std::string_view victim_class_name(VictimClass c);

struct VictimCandidate {
  std::string workload;  // "<namespace>/<name>"
  std::int64_t gpus = 0;
  VictimClass klass = VictimClass::LongStateless;
  std::int32_t priority = 0;
  std::int64_t checkpoint_age = 0;  // ms since the last verified checkpoint (Checkpointable)
  std::int64_t admitted_at = 0;
  bool protected_ = false;
  bool preemptible = true;          // the priority class's `preemptible`
  std::vector<std::string> traits;  // batch, checkpointable, training, development
};

// Whether the candidate may be taken at all by a lender whose onlyPreempt traits are
// `only_preempt` (empty: any trait), whatever the demand.
[[nodiscard]] bool eligible_victim(const VictimCandidate& candidate, const std::vector<std::string>& only_preempt = {});

struct VictimFacts {
  bool running = true;
  bool checkpointable = false;
  bool development = false;          // notebook / development workload type
  std::int64_t expected_runtime = 0;  // ms, total
  std::int64_t short_job = 30LL * 60 * 1000;
};

[[nodiscard]] VictimClass classify(const VictimFacts& facts);

struct VictimChoice {
  std::vector<VictimCandidate> victims;  // in the order chosen
  std::int64_t gpus = 0;                 // their total
  bool covers = false;                   // gpus >= demand
};

// Chooses victims for `demand` GPUs. When all eligible candidates together do not cover
// the demand, all of them are returned with covers = false.
// Candidates that are not eligible_victim() are never chosen; the caller leaves out those
// a lender's onlyPreempt traits rule out (they apply to what it lent, not to all borrowing).
[[nodiscard]] VictimChoice choose_victims(std::vector<VictimCandidate> candidates, std::int64_t demand);

}  // namespace gpubank::bank
