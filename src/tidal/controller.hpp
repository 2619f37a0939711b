// The tidal controller: one TidalPolicy acting on the InferenceScalingPolicies it targets.
// Inference by day, training by night: each occurrence [start, end) of a window (KEDA's
// cron-scaler semantics, policy::active_intervals, in the policy's time zone, DST-correct)
// is preceded by two instants counted back in absolute time:
//
//   approaching = start - prewarmBefore - reclaim.checkpointBefore   TidalWindowApproaching
//   prewarm     = start - prewarmBefore                              PrewarmStarted
//   start, end                                                       TidalWindowStarted/Ended
//
// What follows, as a pure function of time (timeline, state_at):
//   - floors: a window's inferenceReplicaFloor (clamped to [minReplicas, maxReplicas])
//     holds from its prewarm to its end; the floor of a policy is the largest floor held
//     at t, else minReplicas. So a next window's floor applies early only when higher, and
//     a lower one takes over at the previous window's end.
//   - training borrow limit on targets.resourcePool: a window's trainingBorrowLimit holds
//     from its approaching to its end and the tightest one held wins; none held: no tidal
//     cap. A tighter limit thus applies early, a looser one from the window's start (the
//     end of the tighter window before it).
//   - a window "needs capacity" when it raises a floor above what the other windows hold
//     just before its prewarm, or tightens the borrow limit below what they hold just
//     before its approaching. Only such a window holds admission of new long low-priority
//     training (admission_hold, from its approaching until its start) and orders a reclaim
//     (borrowers notified and checkpointed, reclaim.gracePeriod as the grace). The night
//     window of the mission's policy needs none: its approaching (19:22) falls inside the
//     daytime window, whose floor 6 and limit 8 are already stricter than its 1 and 40.
//
// prewarmBefore defaults to the largest targeted modelLoadTime plus a margin (2 min). It
// counts back in absolute time: across a DST change the replicas still get their full load
// time (the rendered KEDA trigger moves the cron expression instead, by wall clock; the two
// differ only when a transition falls between prewarm and start).
//
// The stateful part (step, freeze, unfreeze) turns observations into decisions and the
// records the shell logs as events.md events:
//   - floor_in_force = max(tidal floor, real-time desired), at most maxReplicas: a window
//     never lowers what real traffic needs. FloorChanged whenever it changes.
//   - prewarm failure (the shell observed a failed attempt, or replicas missing when a
//     window starts): PrewarmFailed (an alert); scale-down is not allowed while the failure
//     is open (keep the replicas there are, never scale down to meet a planned number);
//     retries after 30 s, doubling, at most 10 min apart, each a PrewarmRetried record with
//     the attempt number and the next retry time; PrewarmResolved once the floor is met.
//   - freeze pins every targeted policy at the replicas ready at the last step: the tidal
//     floor is replaced by that count (windows neither raise nor lower it; their
//     boundaries are still recorded, and the borrow limit and admission hold still follow
//     the windows, since they concern training, not the pinned replicas). Real-time
//     demand may still scale up above the pin, and back down to it, never below it.
//
// Pure: time is passed in, nothing is read from clocks, files or sockets.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "policy/prewarm.hpp"
#include "policy/types.hpp"

namespace gpubank::tidal {

using std::chrono::sys_seconds;

struct TidalOptions {
  std::chrono::seconds prewarm_margin{policy::kDefaultPrewarmMargin};  // what render and validation use
  std::chrono::seconds retry_initial{30};
  std::chrono::seconds retry_max{std::chrono::minutes(10)};
};

// In the order boundaries at one instant are applied: one window ends before the next starts.
enum class BoundaryKind { WindowEnded, Approaching, PrewarmStarted, WindowStarted };

// "TidalWindowEnded", "TidalWindowApproaching", "PrewarmStarted", "TidalWindowStarted".
[[nodiscard]] std::string_view event_kind(BoundaryKind kind);

// One occurrence of a window, in UTC.
struct WindowOccurrence {
  std::string window;
  std::size_t index = 0;  // into spec.windows
  sys_seconds approaching, prewarm, start, end;

  friend bool operator==(const WindowOccurrence&, const WindowOccurrence&) = default;
};

// What a window that needs capacity asks of the bank at its approaching.
struct ReclaimOrder {
  std::string resource_pool;
  std::vector<std::string> training_groups;
  std::optional<int> borrow_limit;  // tighten the groups' borrowing to this; unset: leave it
  int gpus_needed = 0;              // sum over policies of the floor rise x gpuPerReplica
  std::optional<std::chrono::seconds> grace;  // reclaim.gracePeriod; unset: the guardrails' default
  sys_seconds needed_at;            // the window's prewarm
};

struct TidalAction {
  sys_seconds at;
  BoundaryKind kind = BoundaryKind::Approaching;
  WindowOccurrence occurrence;
  // The state once every boundary at `at` has been applied.
  std::map<std::string, int> floors;         // per targeted InferenceScalingPolicy
  std::optional<int> training_borrow_limit;  // unset: no tidal cap
  bool admission_hold = false;
  std::optional<ReclaimOrder> reclaim;       // on Approaching of a window that needs capacity
  std::string reason;                        // stable CamelCase, e.g. WindowNeedsCapacity
  std::string message;                       // the state it leads to, with the numbers
};

struct TidalState {
  sys_seconds at;
  std::optional<WindowOccurrence> active;
  std::optional<WindowOccurrence> approaching;  // the next window, between its approaching and start
  std::optional<WindowOccurrence> prewarming;   // the next window, between its prewarm and start
  std::map<std::string, int> floors;
  std::optional<int> training_borrow_limit;
  bool admission_hold = false;
  std::optional<TidalAction> next;  // the first boundary after `at`, searched two years ahead
};

// Per targeted policy, what the shell saw at this step.
struct ServiceObservation {
  int ready = 0;             // replicas serving
  int realtime_desired = 0;  // what the real-time autoscaler asks for now
  // The attempt to add replicas asked for last (the prewarm, or the last retry_prewarm)
  // failed: no capacity for the shape, or the model failed to load.
  bool prewarm_failed = false;
};
using Observed = std::map<std::string, ServiceObservation>;

struct FloorDecision {
  std::string policy;
  int tidal_floor = 0;  // from the windows
  int realtime_desired = 0;
  std::optional<int> pinned;  // while frozen
  int floor_in_force = 0;     // max(pinned or tidal floor, realtime desired), at most maxReplicas
  bool scale_down_allowed = true;  // false while a prewarm failure is open
  bool retry_prewarm = false;      // ask for the missing replicas again now
};

// One event for the shell's log (events.md fields).
struct TidalRecord {
  sys_seconds at;
  std::string kind;
  std::string object;  // "TidalPolicy/<name>" or "InferenceScalingPolicy/<name>"
  std::string pool;
  std::string reason;
  std::string message;
  nlohmann::ordered_json numbers = nlohmann::ordered_json::object();
  std::vector<std::string> related;
  std::string actor;   // who froze or unfroze (audited); empty for the controller's own
  bool alert = false;  // page someone
};

struct TidalStep {
  TidalState state;
  std::vector<FloorDecision> decisions;  // in targets.inferencePolicies order
  std::vector<TidalRecord> records;      // in the order decided
};

class TidalController {
 public:
  // Errors: a targeted policy missing from `inference_policies`, no time zone.
  static Expected<TidalController> create(std::string name, policy::TidalPolicySpec spec,
                                          std::map<std::string, policy::InferenceScalingPolicySpec> inference_policies,
                                          TidalOptions options = {});

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] std::string object() const { return "TidalPolicy/" + name_; }
  // The lead a window's prewarm and approaching have over its start.
  [[nodiscard]] std::chrono::seconds prewarm_before(std::size_t window) const;
  [[nodiscard]] std::chrono::seconds checkpoint_before() const;

  // Every boundary in [from, to), in order.
  [[nodiscard]] std::vector<TidalAction> timeline(sys_seconds from, sys_seconds to) const;
  [[nodiscard]] TidalState state_at(sys_seconds t) const;

  // Steps must not go back in time. The boundaries passed since the last step (at the
  // first step: those at `now`) are recorded; every targeted policy must be observed.
  Expected<TidalStep> step(sys_seconds now, const Observed& observed);

  // Freeze pins the replicas ready at the last step; errors when already frozen or before
  // any step. Unfreeze errors when not frozen.
  Expected<TidalRecord> freeze(const std::string& actor, sys_seconds now, const std::string& reason);
  Expected<TidalRecord> unfreeze(const std::string& actor, sys_seconds now);
  [[nodiscard]] bool frozen() const { return freeze_.has_value(); }

  // A timeline action as the record the shell logs.
  [[nodiscard]] TidalRecord record_of(const TidalAction& action) const;

 private:
  struct Evaluation;
  struct Freeze {
    std::string actor, reason;
    sys_seconds at;
    std::map<std::string, int> pinned;
  };
  struct PrewarmFailure {
    int attempt = 1;            // the attempt in progress or last failed
    bool attempt_failed = true;  // the attempt in progress has been reported failed
    std::chrono::seconds backoff{0};
    sys_seconds next_retry;
  };

  TidalController() = default;

  [[nodiscard]] std::vector<WindowOccurrence> occurrences(sys_seconds from, sys_seconds to) const;
  [[nodiscard]] std::optional<int> window_floor(std::size_t window, const std::string& policy) const;
  [[nodiscard]] Evaluation evaluate(const std::vector<WindowOccurrence>& occs, sys_seconds t,
                                    const WindowOccurrence* excluded) const;
  [[nodiscard]] std::optional<ReclaimOrder> reclaim_of(const std::vector<WindowOccurrence>& occs,
                                                       const WindowOccurrence& occ) const;
  // The first `limit` boundaries in [from, to), with their state and message.
  [[nodiscard]] std::vector<TidalAction> actions(const std::vector<WindowOccurrence>& occs, sys_seconds from,
                                                 sys_seconds to, std::size_t limit = SIZE_MAX) const;
  [[nodiscard]] TidalState state_from(const std::vector<WindowOccurrence>& occs, sys_seconds t) const;
  [[nodiscard]] std::string local(sys_seconds t) const;
  [[nodiscard]] std::vector<std::string> related() const;

  std::string name_;
  policy::TidalPolicySpec spec_;
  std::map<std::string, policy::InferenceScalingPolicySpec> inference_;
  TidalOptions options_;
  std::vector<std::chrono::seconds> prewarm_before_;  // per window
  std::chrono::seconds checkpoint_before_{0};
  std::chrono::seconds max_lead_{0};

  // Stateful part.
  std::optional<sys_seconds> last_step_;
  Observed last_observed_;
  std::map<std::string, int> last_effective_;
  std::optional<Freeze> freeze_;
  std::map<std::string, PrewarmFailure> failures_;
  struct OccurrenceCache {
    sys_seconds from, to;
    std::vector<WindowOccurrence> occurrences;  // every occurrence that matters in [from, to)
  };
  std::optional<OccurrenceCache> cache_;
};

}  // namespace gpubank::tidal
