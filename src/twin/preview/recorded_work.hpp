// The work a cluster did, recorded for the impact preview to replay (`gpubank controller
// --api-port`'s preview, `gpubank twin preview --store`).
//
//   record   one audit entry `WorkloadRecorded` per Kueue Workload that finished, written
//            by the controller's leader (controller/manager.hpp): its queue's group and
//            pool, pods and GPUs per pod, workload type, checkpointable, priority class,
//            and three times: created (arrival), quota reserved (start), finished.
//            Idempotent by id "<namespace>/<name>@<created ms>".
//   replay   the window [from, to): every recorded workload that ran or waited in it, and
//            the cluster's workloads not finished yet (from the informers):
//              - arrival: its creation, or the window's start for one created before it;
//              - run time: finished - started, or what was left of it at the window's
//                start; one still running runs until the window's end (at least); one
//                still pending gets its group's median recorded run time in the window
//                (1 h when the group has none), which only matters where the proposal
//                admits it sooner;
//              - a priority class the policies do not know is left out (the default).
//            Both runs of the preview replay the same arrivals; the queue waits the
//            cluster saw are not inputs, they are what each run predicts.
// What it cannot know: a workload deleted before it finished is not recorded (its GPUs
// held meanwhile are in the ledger, not in the replay); startup and checkpoint times are
// the twin's defaults; placement is the twin's (the inventory given).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bank/audit.hpp"
#include "core/expected.hpp"
#include "policy/policy_set.hpp"
#include "twin/run/scenario.hpp"

namespace gpubank::store {
class Store;
}

namespace gpubank::twin::preview {

inline constexpr std::string_view kWorkloadRecorded = "WorkloadRecorded";

struct WorkloadRecord {
  std::string key;  // "<namespace>/<name>"
  std::string business_group, pool;
  std::int64_t pods = 1, gpus_per_pod = 0;
  std::string workload_type;  // the workload-type label; "" unknown
  bool checkpointable = false;
  std::string priority_class;
  std::int64_t created_ms = 0, started_ms = 0, finished_ms = 0;  // started/finished 0: not yet

  [[nodiscard]] std::string id() const { return key + "@" + std::to_string(created_ms); }
};

[[nodiscard]] nlohmann::json to_json(const WorkloadRecord& r);
// Every field checked: an error names it.
[[nodiscard]] Expected<WorkloadRecord> record_from_json(const nlohmann::json& j);
[[nodiscard]] bank::AuditEntry audit_entry(const WorkloadRecord& r, const std::string& actor, std::int64_t now_ms);

// Reads the records after `after_seq` in the store's audit log (advancing it), appending to
// `out`; a malformed record fails, naming its seq.
Expected<bool> read_records(store::Store& store, std::int64_t& after_seq, std::vector<WorkloadRecord>& out);

// The scenario of the window [from_ms, to_ms): `records` (finished) and `live` (not
// finished: started_ms 0 for one still pending). `known_priorities`: the classes the
// policies know.
[[nodiscard]] run::Scenario replay_scenario(const std::vector<WorkloadRecord>& records,
                                            const std::vector<WorkloadRecord>& live, std::int64_t from_ms,
                                            std::int64_t to_ms, const std::set<std::string>& known_priorities);

// The priority classes a policy set's guardrails define.
[[nodiscard]] std::set<std::string> priority_classes(const policy::PolicySet& set);

}  // namespace gpubank::twin::preview
