// The low-utilisation alert lifecycle. Pure: the open alerts, this scan's verdicts and the
// time in; the transitions out, each to be recorded (alert_store.hpp) before the next scan
// reads them back.
//
//   (none) --low--> Detected --owner notified--> Notified --notify.after--> Escalated
//                                                   |                          |
//                                                   |      borrowed quota and another notify.after
//                                                   |                          v
//                                                   |                  ReclaimCandidate
//   any open state --fine again / excluded / the workload ended--> Resolved
//
// One open alert per workload (workload_uid). Detected asks for the owner's notice; the
// shell records Notified only once a notice was delivered, so a failed delivery is asked
// for again at the next scan and never lost, and a restarted scanner (which reads the
// record) never notifies twice. While low, a notice is repeated every notify.repeatInterval
// (to whoever was last told). A ReclaimCandidate is reclaimed only once a person approved
// it (reclaim_approval.hpp); its alert then resolves "reclaimed" when the workload holds no
// GPU any more. A workload without a verdict this scan (no data, not covered) keeps
// its alert as it is; one that is no longer allocated resolves it ("ended").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "governance/lowutil.hpp"

namespace gpubank::governance {

enum class AlertState { Detected, Notified, Escalated, ReclaimCandidate, Resolved };
[[nodiscard]] std::string_view to_string(AlertState state);
[[nodiscard]] std::optional<AlertState> alert_state_from(std::string_view text);

// Who a notice goes to.
enum class Audience { Owner, GroupAdmin, PlatformAdmin };
[[nodiscard]] std::string_view to_string(Audience audience);

// What a notice says (the list): the facts at the scan that raised it.
struct Evidence {
  std::string business_group;
  std::string owner_id;
  std::string namespace_name;
  std::string workload_kind;
  std::string workload;
  std::string workload_type;
  std::string pool;
  std::string gpu_model;
  std::string partition;
  double gpus = 0;
  double running_seconds = 0;
  double low_seconds = 0;  // continuous low utilisation: since detection, plus the window it covered
  std::optional<double> gpu_utilization;
  std::optional<double> memory_utilization;
  std::optional<double> power_fraction;
  std::optional<double> tokens_per_second;  // vLLM's, where its pods report tokens
  std::optional<double> training_steps;     // over the window, where its pods report steps
  double group_borrowed_gpus = 0;
  std::string reason;  // which thresholds held
  friend bool operator==(const Evidence&, const Evidence&) = default;
};

// A person's decision on a ReclaimCandidate (reclaim_approval.hpp). Final: one per alert.
struct ReclaimDecision {
  bool approved = false;
  std::string by;  // the deciding user's name: the audit entry's actor
  std::int64_t at_ms = 0;
  std::string reason;
  // Approved as a downgrade instead of a reclaim: the WorkloadPriorityClass (one of the
  // guardrails' priorities) the workload is moved to; it keeps running, preemptible by
  // anyone above it. Empty: a reclaim (stopped after a checkpoint or its grace).
  std::string downgrade_to;
  friend bool operator==(const ReclaimDecision&, const ReclaimDecision&) = default;
};

struct Alert {
  std::int64_t id = 0;  // this workload's n-th alert (a re-opened one gets the next)
  std::string workload_uid;
  std::string policy;  // LowUtilizationPolicy name
  AlertState state = AlertState::Detected;
  std::int64_t detected_ms = 0;
  std::int64_t low_since_ms = 0;  // detected_ms minus the window
  std::optional<std::int64_t> notified_ms;      // the owner's first notice
  std::optional<std::int64_t> escalated_ms;
  std::optional<std::int64_t> last_notice_ms;   // the last notice of any kind
  std::optional<Audience> last_audience;
  std::optional<std::int64_t> resolved_ms;
  std::string resolution;  // "recovered", "excluded: <reason>", "ended", "reclaimed"
  std::optional<ReclaimDecision> decision;  // on a ReclaimCandidate, once decided
  Evidence evidence;       // as of the last transition
  friend bool operator==(const Alert&, const Alert&) = default;
};

// A change to record. One with a `notice` (Notified, Escalated, Renotified) is recorded only
// once that notice was delivered to its audience; the others at once.
struct Transition {
  std::optional<AlertState> from;  // none for a new alert
  Alert alert;                     // after the change
  // "Detected", "Notified", "Renotified", "Escalated", "ReclaimCandidate", "Resolved", and a
  // person's "ReclaimApproved" or "ReclaimRejected"
  std::string action;
  std::optional<Audience> notice;
};

struct ScanResult {
  std::vector<Transition> transitions;  // sorted by workload_uid
  std::map<std::string, std::size_t, std::less<>> excluded;  // reason -> workloads
  std::map<std::string, std::size_t, std::less<>> verdicts;  // verdict kind -> workloads
};

struct Observed {
  WorkloadFacts facts;
  Verdict verdict;
};

// The lifecycle step of one scan. `open` holds every alert not Resolved, by workload_uid;
// `last_ids` the highest alert id each workload ever had (so a re-opened alert is new). A
// workload may get two transitions (Detected, then Notified): record them in order, and
// none of a workload after a notice that failed.
[[nodiscard]] ScanResult step(const std::map<std::string, Alert, std::less<>>& open,
                              const std::map<std::string, std::int64_t, std::less<>>& last_ids,
                              const std::vector<Observed>& observed, std::int64_t now_ms);

[[nodiscard]] Evidence evidence_of(const WorkloadFacts& w, const Verdict& v, std::int64_t now_ms,
                                   std::int64_t low_since_ms);

[[nodiscard]] nlohmann::ordered_json to_json(const Alert& alert);
[[nodiscard]] nlohmann::ordered_json to_json(const Evidence& evidence);
// Reads what to_json wrote; an error names the field.
[[nodiscard]] Expected<Alert> alert_from_json(const nlohmann::json& j);

}  // namespace gpubank::governance
