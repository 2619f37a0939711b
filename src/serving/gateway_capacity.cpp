#include "serving/gateway_capacity.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

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
  // Without a capacity per replica there is no headroom to state (not 0: unknown).
  if (per > 0 && in.arrival_rps && std::isfinite(*in.arrival_rps)) {
    c.headroom_rps = std::max(0.0, c.capacity_rps - *in.arrival_rps);
  }

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

Expected<bool> export_capacity(metrics::Registry& registry, const std::vector<Capacity>& services) {
  auto replicas = registry.gauge("gpubank_service_replicas",
                                 "Replicas of an inference service by phase: ready, loading (model load), draining, "
                                 "requested (no GPUs yet).",
                                 {"policy", "phase"});
  auto queue = registry.gauge("gpubank_service_queue_depth",
                              "Requests waiting at an inference service's replicas and router.", {"policy"});
  auto headroom = registry.gauge("gpubank_service_headroom_requests_per_second",
                                 "Requests per second an inference service's ready replicas take beyond the last "
                                 "minute's arrivals before its SLO breaks (0 at or over capacity).",
                                 {"policy"});
  auto possible = registry.gauge("gpubank_service_scale_out_possible",
                                 "1 when a replica can be added to an inference service now (maxReplicas, quota and "
                                 "a node that holds its shape), else 0.",
                                 {"policy"});
  auto ready_in = registry.gauge("gpubank_service_scale_out_ready_seconds",
                                 "Seconds until a replica asked for now would serve (model load, after the borrowers' "
                                 "grace when GPUs must be reclaimed); absent when no scale-out is possible.",
                                 {"policy"});
  auto borrowable = registry.gauge("gpubank_service_borrowable_gpus",
                                   "GPUs an inference service's group can still get on its pool for replicas.",
                                   {"policy"});
  for (auto* f : {&replicas, &queue, &headroom, &possible, &ready_in, &borrowable}) {
    if (!*f) return Unexpected{f->error()};
  }
  for (const Capacity& service : services) {
    const Capacity* c = &service;
    const std::string& policy = c->policy;
    const std::pair<const char*, int> phases[] = {
        {"ready", c->ready}, {"loading", c->loading}, {"draining", c->draining}, {"requested", c->requested}};
    for (const auto& [phase, n] : phases) {
      if (auto s = (*replicas)->set({policy, phase}, n); !s) return Unexpected{s.error()};
    }
    if (c->queue_depth) {
      if (auto s = (*queue)->set({policy}, *c->queue_depth); !s) return Unexpected{s.error()};
    }
    if (c->headroom_rps) {
      if (auto s = (*headroom)->set({policy}, *c->headroom_rps); !s) return Unexpected{s.error()};
    }
    if (auto s = (*possible)->set({policy}, c->scale_out_possible ? 1 : 0); !s) return Unexpected{s.error()};
    if (c->scale_out_ready_seconds) {
      if (auto s = (*ready_in)->set({policy}, *c->scale_out_ready_seconds); !s) return Unexpected{s.error()};
    }
    if (auto s = (*borrowable)->set({policy}, c->borrowable_gpus); !s) return Unexpected{s.error()};
  }
  return true;
}


}  // namespace gpubank::serving
