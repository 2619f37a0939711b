#include "serving/drain.hpp"

#include <algorithm>
#include <chrono>
#include <tuple>

#include "core/duration.hpp"

namespace gpubank::serving {
namespace {

std::string duration_text(std::int64_t ms) {
  return Duration(std::chrono::milliseconds(std::max<std::int64_t>(0, ms))).to_string();
}

std::string requests(int n) { return std::to_string(n) + (n == 1 ? " request" : " requests"); }

// Ready replicas by (fewest in flight, fewest streaming, newest, id); loading ones before
// all of them, newest first.
auto removal_key(const ReplicaState& r) {
  const bool ready = r.phase == Phase::ready;
  return std::make_tuple(ready ? 1 : 0, ready ? r.in_flight : 0, ready ? r.streaming : 0, -r.started_ms,
                         std::string_view(r.id));
}

}  // namespace

std::string_view to_string(DrainStep step) {
  switch (step) {
    case DrainStep::RouterWeightZero: return "RouterWeightZero";
    case DrainStep::StopNewRequests: return "StopNewRequests";
    case DrainStep::WaitInFlight: return "WaitInFlight";
  }
  return "WaitInFlight";
}

std::string_view to_string(DrainState state) {
  switch (state) {
    case DrainState::NotStarted: return "NotStarted";
    case DrainState::Waiting: return "Waiting";
    case DrainState::Completed: return "Completed";
    case DrainState::TimedOut: return "TimedOut";
  }
  return "NotStarted";
}

std::optional<std::size_t> choose_scale_in(std::span<const ReplicaState> replicas) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    if (replicas[i].phase == Phase::draining) continue;
    if (!best || removal_key(replicas[i]) < removal_key(replicas[*best])) best = i;
  }
  return best;
}

ScaleInPlan plan_scale_in(int current, int desired, int floor, std::span<const ReplicaState> replicas) {
  ScaleInPlan plan;
  const int wanted = std::min(current - desired, current - std::max(floor, 0));
  if (wanted <= 0) return plan;
  std::vector<ReplicaState> left(replicas.begin(), replicas.end());
  while (plan.count < wanted) {
    const auto i = choose_scale_in(left);
    if (!i) break;
    plan.ids.push_back(left[*i].id);
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(*i));
    ++plan.count;
  }
  return plan;
}

Drain::Drain(DrainSpec spec) : spec_(std::move(spec)) {}

DrainStart Drain::start(std::int64_t now_ms, int in_flight, int streaming) {
  DrainStart out;
  if (state_ != DrainState::NotStarted) return out;
  state_ = DrainState::Waiting;
  started_ms_ = now_ms;
  in_flight = std::max({0, in_flight, streaming});
  streaming = std::max(0, streaming);
  out.steps = {DrainStep::RouterWeightZero, DrainStep::StopNewRequests, DrainStep::WaitInFlight};
  ServingEvent& e = out.event;
  e.t_ms = now_ms;
  e.kind = "DrainStarted";
  e.object = spec_.replica;
  e.reason = "ScaleIn";
  e.message = spec_.service + ": draining replica " + spec_.replica +
              " (router weight 0, no new requests) with " + requests(in_flight) + " in flight (" +
              std::to_string(streaming) + " streaming); it is removed when they finish or after drainTimeout " +
              duration_text(spec_.drain_timeout_ms);
  e.numbers["inFlight"] = in_flight;
  e.numbers["streaming"] = streaming;
  e.numbers["drainTimeoutMs"] = spec_.drain_timeout_ms;
  return out;
}

DrainObservation Drain::observe(std::int64_t now_ms, int in_flight, int streaming) {
  DrainObservation out;
  out.state = state_;
  if (state_ != DrainState::Waiting) return out;
  in_flight = std::max({0, in_flight, streaming});
  streaming = std::max(0, streaming);
  const std::int64_t elapsed = now_ms - *started_ms_;
  const bool done = in_flight == 0;
  if (!done && elapsed < spec_.drain_timeout_ms) return out;

  state_ = done ? DrainState::Completed : DrainState::TimedOut;
  out.state = state_;
  out.cut = in_flight;
  ServingEvent completed;
  completed.t_ms = now_ms;
  completed.kind = "DrainCompleted";
  completed.object = spec_.replica;
  if (done) {
    completed.reason = "Drained";
    completed.message = spec_.service + ": replica " + spec_.replica + " drained in " + duration_text(elapsed) +
                        ", every request in flight finished";
  } else {
    completed.reason = "DrainTimeout";
    completed.message = spec_.service + ": replica " + spec_.replica + " still had " + requests(in_flight) +
                        " in flight (" + std::to_string(streaming) + " streaming) when drainTimeout " +
                        duration_text(spec_.drain_timeout_ms) + " passed; they are cut";
  }
  completed.numbers["elapsedMs"] = elapsed;
  completed.numbers["drainTimeoutMs"] = spec_.drain_timeout_ms;
  completed.numbers["cut"] = out.cut;
  completed.numbers["cutStreaming"] = done ? 0 : streaming;
  out.events.push_back(std::move(completed));

  ServingEvent removed;
  removed.t_ms = now_ms;
  removed.kind = "ReplicaRemoved";
  removed.object = spec_.replica;
  removed.reason = "ScaleIn";
  removed.message = spec_.service + ": replica " + spec_.replica + " removed, its " + std::to_string(spec_.gpus) +
                    " GPUs (TP=" + std::to_string(spec_.tensor_parallel_size) + ") released together";
  removed.numbers["gpus"] = spec_.gpus;
  removed.numbers["tensorParallelSize"] = spec_.tensor_parallel_size;
  out.events.push_back(std::move(removed));
  return out;
}

}  // namespace gpubank::serving
