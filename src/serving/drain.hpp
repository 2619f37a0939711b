// Safe scale-in of an inference service: which replica goes, how many go, and the drain
// protocol of one replica (router weight 0, no new requests, wait for the requests in
// flight up to drainTimeout, then release the whole shape). Every transition is an
// event-ready record (DrainStarted, DrainCompleted, ReplicaRemoved of
// ../shared/spec/events.md). Pure: the caller passes virtual or cluster time in ms.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpubank::serving {

enum class Phase { loading, ready, draining };

struct ReplicaState {
  std::string id;
  Phase phase = Phase::ready;
  int in_flight = 0;  // routed to it and not finished (waiting, prefilling or streaming)
  int streaming = 0;  // of those, sending tokens now (a subset: in_flight >= streaming)
  std::int64_t started_ms = 0;
};

// The replica to remove next, as an index into `replicas`; nullopt when only draining
// ones are left. A loading replica first (it serves nothing: cancel it; the newest
// first), else the ready replica with the fewest requests in flight (ties: fewest
// streaming, then the newest started, then the smallest id). Never one already draining.
[[nodiscard]] std::optional<std::size_t> choose_scale_in(std::span<const ReplicaState> replicas);

struct ScaleInPlan {
  int count = 0;                 // replicas to drain now
  std::vector<std::string> ids;  // which, in choose_scale_in order
};

// How many to drain: current - desired, but never below the floor (floor =
// max(tidal floor, minReplicas)) and never more than the replicas that can still be
// chosen. `current` counts the replicas that serve or load (not those draining).
[[nodiscard]] ScaleInPlan plan_scale_in(int current, int desired, int floor, std::span<const ReplicaState> replicas);

// One record of the event log (events.md fields; the shell adds time and context).
struct ServingEvent {
  std::int64_t t_ms = 0;
  std::string kind;    // DrainStarted, DrainCompleted, ReplicaRemoved
  std::string object;  // the replica
  std::string reason;  // Drained, DrainTimeout, ScaleIn
  std::string message;
  nlohmann::ordered_json numbers = nlohmann::ordered_json::object();
};

enum class DrainStep { RouterWeightZero, StopNewRequests, WaitInFlight };
enum class DrainState { NotStarted, Waiting, Completed, TimedOut };

[[nodiscard]] std::string_view to_string(DrainStep step);
[[nodiscard]] std::string_view to_string(DrainState state);

struct DrainSpec {
  std::string service;
  std::string replica;
  std::int64_t drain_timeout_ms = 5 * 60 * 1000;  // scaleDown.drainTimeout (policy default 5m)
  int gpus = 0;                                   // the replica's whole shape, released at the end
  int tensor_parallel_size = 0;
};

struct DrainStart {
  std::vector<DrainStep> steps;  // what the caller carries out now, in order
  ServingEvent event;            // DrainStarted
};

struct DrainObservation {
  DrainState state = DrainState::NotStarted;
  int cut = 0;  // TimedOut: requests ended unanswered
  // On the transition only: DrainCompleted (reason Drained or DrainTimeout), then
  // ReplicaRemoved.
  std::vector<ServingEvent> events;
};

// The protocol of one replica. start() once; then observe() as the replica reports:
// Waiting until nothing is in flight (Completed) or drainTimeout has passed since the
// start (TimedOut: the rest are cut, and how many is reported). Once finished, further
// observations return the final state without events.
class Drain {
 public:
  explicit Drain(DrainSpec spec);

  DrainStart start(std::int64_t now_ms, int in_flight = 0, int streaming = 0);
  DrainObservation observe(std::int64_t now_ms, int in_flight, int streaming);

  [[nodiscard]] DrainState state() const { return state_; }
  [[nodiscard]] const DrainSpec& spec() const { return spec_; }
  [[nodiscard]] std::optional<std::int64_t> started_ms() const { return started_ms_; }

 private:
  DrainSpec spec_;
  DrainState state_ = DrainState::NotStarted;
  std::optional<std::int64_t> started_ms_;
};

}  // namespace gpubank::serving
