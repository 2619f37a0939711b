// Graceful reclaim in a cluster, the half that writes (reclaim.hpp plans): JSON merge
// patches of the victim Workload (its annotations and spec.active) and of the job that owns
// it (the checkpoint-requested annotation), the way `kubectl annotate` and `kubectl patch`
// would. Workloads and jobs belong to Kueue and the job controllers, so gpubank patches
// only the fields it names and never applies whole objects to them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/reclaim.hpp"
#include "k8s/apply.hpp"
#include "k8s/transport.hpp"

namespace gpubank::controller {

// The path of the Workload's controller owner (ownerReferences with controller: true), or
// "" when it has none or discovery does not know its kind.
[[nodiscard]] std::string owner_path(const k8s::RestMapper& mapper, const nlohmann::json& workload);

// For the Workloads under a reclaim notice (reclaim-for set, not stopped yet): the time of
// their job's checkpoint-completed annotation, read from the job, by Workload key.
[[nodiscard]] std::map<std::string, std::int64_t> checkpoint_completions(k8s::Transport& transport,
                                                                         const k8s::RestMapper& mapper,
                                                                         const std::vector<nlohmann::json>& workloads);

struct ReclaimOutcome {
  ReclaimStep step;
  std::string error;  // empty: done
  // Done, but not all as planned: why, one clause for the Event and the audit entry. A
  // Downgrade whose job label the admission webhook refused lowers spec.priority alone.
  std::string note;
};

// Carries out each step in order; a failed step is reported and the next still runs (each
// step's state is in the cluster, so the next pass retries what failed). A Downgrade whose
// job label patch an admission webhook refuses (403 or 422 with the API server's "admission
// webhook ... denied the request": Kueue's job webhook keeps the label immutable on a job
// that is not suspended, before the newest Kueue) is done in part: spec.priority and the
// downgraded-to annotation only, the class reference left as it is (see `note`).
[[nodiscard]] std::vector<ReclaimOutcome> execute_reclaims(k8s::Transport& transport, const k8s::RestMapper& mapper,
                                                           const ReclaimPlan& plan,
                                                           const std::map<std::string, nlohmann::json>& workloads,
                                                           std::int64_t now_ms);

// "2026-01-01T00:00:00Z" for a time in milliseconds since the epoch (whole seconds).
[[nodiscard]] std::string rfc3339_seconds(std::int64_t ms);

}  // namespace gpubank::controller
