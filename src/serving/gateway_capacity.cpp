#include "serving/gateway_capacity.hpp"

#include <algorithm>
#include <cmath>

namespace gpubank::serving {

namespace {

double seconds(const Duration& d) { return static_cast<double>(d.nanoseconds().count()) / 1e9; }

int number(const nlohmann::ordered_json& numbers, const char* key) {
  const auto it = numbers.find(key);
  return it != numbers.end() && it->is_number_integer() ? it->get<int>() : 0;
}

}  // namespace

Capacity gateway_capacity(const CapacityInputs& in) {
  Capacity c;
  c.policy = in.policy;
  c.ready = std::max(0, in.ready);
  c.loading = std::max(0, in.loading);
  c.draining = std::max(0, in.draining);
  c.requested = std::max(0, in.requested);
  c.queue_depth = in.queue_depth;
  c.arrival_rps = in.arrival_rps;
  const double per = std::isfinite(in.replica_rps) && in.replica_rps > 0 ? in.replica_rps : 0.0;
  c.capacity_rps = c.ready * per;
  c.coming_rps = (c.loading + c.requested) * per;
  if (in.arrival_rps && std::isfinite(*in.arrival_rps)) c.headroom_rps = std::max(0.0, c.capacity_rps - *in.arrival_rps);

  const int counting = c.ready + c.loading + c.requested;
  if (counting >= in.max_replicas) {
    c.scale_out_blocked_reason = "MaxReplicas";
    c.scale_out_message = in.policy + " has " + std::to_string(counting) + " replicas counting (ready, loading or " +
                          "asked for), its maxReplicas " + std::to_string(in.max_replicas);
  } else if (!in.next_replica) {
    c.scale_out_blocked_reason = "NoPoolView";
    c.scale_out_message = "no view of " + in.policy + "'s pool: whether a replica fits is not known";
  } else {
    const ShapeDecision& d = *in.next_replica;
    switch (d.outcome) {
      case ShapeOutcome::Fits:
        c.scale_out_possible = true;
        c.scale_out_ready_seconds = seconds(in.model_load_time);
        break;
      case ShapeOutcome::FitsAfterReclaim:
        c.scale_out_possible = true;
        c.scale_out_ready_seconds = seconds(in.reclaim_grace) + seconds(in.model_load_time);
        c.scale_out_message = "the replica needs " + std::to_string(d.reclaim_gpus) +
                              " GPUs back from borrowers first (their grace, then the model load)";
        break;
      case ShapeOutcome::Blocked:
        c.scale_out_blocked_reason = std::string(to_string(d.reason));
        c.scale_out_message = d.message;
        break;
    }
  }
  if (in.next_replica) {
    const auto& n = in.next_replica->numbers;
    const int from_borrowers = std::min(number(n, "heldByBorrowers"), number(n, "lent"));
    c.borrowable_gpus = std::max(0, std::min(number(n, "quotaRemaining"), number(n, "free") + from_borrowers));
  }
  return c;
}

nlohmann::ordered_json to_json(const Capacity& c) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["policy"] = c.policy;
  j["replicas"] = {{"ready", c.ready}, {"loading", c.loading}, {"draining", c.draining}, {"requested", c.requested}};
  j["queueDepth"] = c.queue_depth ? nlohmann::ordered_json(*c.queue_depth) : nlohmann::ordered_json(nullptr);
  j["arrivalRequestsPerSecond"] = c.arrival_rps ? nlohmann::ordered_json(*c.arrival_rps) : nlohmann::ordered_json(nullptr);
  j["capacityRequestsPerSecond"] = c.capacity_rps;
  j["comingRequestsPerSecond"] = c.coming_rps;
  j["headroomRequestsPerSecond"] = c.headroom_rps ? nlohmann::ordered_json(*c.headroom_rps) : nlohmann::ordered_json(nullptr);
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["possible"] = c.scale_out_possible;
  if (c.scale_out_ready_seconds) out["readySeconds"] = *c.scale_out_ready_seconds;
  if (!c.scale_out_blocked_reason.empty()) out["blockedReason"] = c.scale_out_blocked_reason;
  if (!c.scale_out_message.empty()) out["message"] = c.scale_out_message;
  j["scaleOut"] = std::move(out);
  j["borrowableGpus"] = c.borrowable_gpus;
  return j;
}

}  // namespace gpubank::serving
