#include "twin/live/elastic.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "twin/cluster/cluster.hpp"

namespace gpubank::twin::live {

namespace {

using Json = nlohmann::ordered_json;
using Control = DayOptions::ServingControl;

std::string object_of(const policy::InferenceScalingPolicySpec& spec, const std::string& ns) {
  static constexpr std::array<std::string_view, 4> kinds{"InferenceService", "LLMInferenceService", "Deployment",
                                                         "RayService"};
  const auto k = static_cast<std::size_t>(spec.workload_ref.kind);
  return std::string(k < kinds.size() ? kinds[k] : "InferenceService") + "/" + ns + "/" + spec.workload_ref.name;
}

// An event about a service (events.md: the object is its workloadRef).
run::Event service_event(const policy::InferenceScalingPolicySpec& spec, const std::string& ns, std::string kind,
                         std::string reason, std::string message) {
  run::Event e;
  e.kind = std::move(kind);
  e.object = object_of(spec, ns);
  e.business_group = spec.business_group;
  e.pool = spec.resource_pool;
  e.reason = std::move(reason);
  e.message = std::move(message);
  return e;
}

// A tidal controller's record as an event of the run's log.
run::Event tidal_event(const tidal::TidalRecord& r) {
  run::Event e;
  e.kind = r.kind;
  e.object = r.object;
  e.pool = r.pool;
  e.reason = r.reason;
  e.message = r.message;
  e.numbers = r.numbers;
  e.related = r.related;
  return e;
}

std::string plural(std::int64_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

}  // namespace

Expected<std::unique_ptr<ElasticControl>> ElasticControl::create(const policy::PolicySet& policies,
                                                                 const DayOptions& day, Serving& serving,
                                                                 run::Simulation& simulation) {
  std::unique_ptr<ElasticControl> out(new ElasticControl(policies, day, serving, simulation));
  const auto* guardrails = policies.guardrails_spec();
  if (guardrails == nullptr) return out;
  const auto served = serving.policies();
  std::map<std::string, policy::InferenceScalingPolicySpec> specs;
  for (const auto& name : served) {
    const policy::PolicyObject* object = policies.find(policy::Kind::InferenceScalingPolicy, name);
    if (object == nullptr) continue;
    const auto& spec = object->as<policy::InferenceScalingPolicySpec>();
    specs.emplace(name, spec);
    Service s;
    s.policy = name;
    s.spec = spec;
    const policy::Group* group = guardrails->find_group(spec.business_group);
    s.namespace_ = !spec.workload_ref.namespace_.empty() ? spec.workload_ref.namespace_
                   : group != nullptr                    ? group->effective_namespaces().front()
                                                         : std::string();
    s.priority_class = pick_priority(*guardrails, policy::WorkloadType::Inference, spec.business_group, true);
    switch (day.serving_control) {
      case Control::Autoscaler: s.autoscaler = std::make_unique<serving::Autoscaler>(spec); break;
      case Control::HpaGpuUtilization:
        s.hpa = std::make_unique<serving::HpaModel>(
            serving::gpu_utilization_hpa(spec.min_replicas, spec.max_replicas, kHpaGpuUtilizationTarget));
        break;
      case Control::Keda: {
        auto hpa = serving::hpa_spec_for(policies, name);
        if (!hpa) return Unexpected{"InferenceScalingPolicy " + name + ": " + hpa.error()};
        s.hpa = std::make_unique<serving::HpaModel>(std::move(*hpa));
        break;
      }
      case Control::Static:
      case Control::Planned: break;
    }
    out->services_.push_back(std::move(s));
  }
  if (day.serving_control != Control::Autoscaler) return out;
  for (const auto& p : policies.policies()) {
    if (p.kind != policy::Kind::TidalPolicy) continue;
    const auto& spec = p.as<policy::TidalPolicySpec>();
    std::map<std::string, policy::InferenceScalingPolicySpec> targeted;
    Tidal t;
    for (const auto& name : spec.targets.inference_policies) {
      const auto it = specs.find(name);
      if (it == specs.end()) continue;
      targeted.emplace(name, it->second);
      for (std::size_t i = 0; i < out->services_.size(); ++i) {
        if (out->services_[i].policy == name) t.services.push_back(i);
      }
    }
    if (targeted.empty()) continue;
    auto controller = tidal::TidalController::create(p.name(), spec, std::move(targeted));
    if (!controller) return Unexpected{"TidalPolicy " + p.name() + ": " + controller.error()};
    t.controller = std::make_unique<tidal::TidalController>(std::move(*controller));
    out->tidal_.push_back(std::move(t));
  }
  return out;
}

std::chrono::sys_seconds ElasticControl::wall(VirtualTime t) const {
  return std::chrono::floor<std::chrono::seconds>(day_.start + std::chrono::milliseconds(t));
}

int ElasticControl::static_count(const Service& s) const {
  if (const auto it = day_.static_replicas_by_policy.find(s.policy); it != day_.static_replicas_by_policy.end()) {
    return it->second;
  }
  return day_.static_replicas > 0 ? day_.static_replicas : s.spec.max_replicas;
}

int ElasticControl::counting(const Service& s) const {
  return static_cast<int>(std::count_if(s.replicas.begin(), s.replicas.end(), [](const Replica& r) { return !r.drain; }));
}

Expected<bool> ElasticControl::log(run::Event e, const std::string& actor) { return simulation_.record(std::move(e), actor); }

Expected<bool> ElasticControl::step(VirtualTime now) {
  if (now < next_step_) return false;
  const VirtualTime since = last_step_ ? now - *last_step_ : 0;
  last_step_ = now;
  next_step_ = now + kPeriodMs;
  // What the services have now: pods started, replicas ready, replicas gone.
  for (auto& s : services_) {
    const auto live = serving_.replicas_of(s.policy);
    s.gpu_ms_ += static_cast<std::int64_t>(live.size()) * s.spec.replica_shape.gpu_per_replica * since;
    s.peak = std::max(s.peak, static_cast<int>(live.size()));
    std::map<std::string, const Serving::ReplicaStatus*> by_key;
    for (const auto& r : live) by_key.emplace(r.workload, &r);
    for (auto it = s.replicas.begin(); it != s.replicas.end();) {
      const auto found = by_key.find(it->key);
      if (found == by_key.end()) {
        if (it->placed) {  // its workload ended under us (deleted, preempted, evicted): forget it
          // An evicted one (PodsReadyTimeout) would queue again behind the controller's
          // back: the controller deletes it and asks for a new replica when it needs one.
          const std::string key = it->key;
          it = s.replicas.erase(it);
          if (auto removed = simulation_.remove(key, kActor); !removed) return Unexpected{removed.error()};
          continue;
        }
      } else {
        it->placed = true;
        if (!it->ready && found->second->snapshot.state == inference::ReplicaState::ready && s.load_failures > 0) {
          // Fault injection: the model fails to load; the pod is deleted, nothing served.
          --s.load_failures;
          s.prewarm_failed = true;
          const std::string key = it->key;
          it = s.replicas.erase(it);
          if (auto removed = simulation_.remove(key, kActor); !removed) return Unexpected{removed.error()};
          run::Event e = service_event(s.spec, s.namespace_, "ReplicaFailed", "ModelLoadFailed",
                                       "Replica " + key + " of " + s.policy + " failed to load its model after " +
                      std::to_string(s.spec.model_load_time.milliseconds() / 1000) + " s; its workload is deleted");
          e.related = {"Workload/" + key};
          if (auto logged = log(std::move(e)); !logged) return logged;
          continue;
        }
        if (!it->ready && found->second->snapshot.state == inference::ReplicaState::ready) {
          it->ready = true;
          run::Event e = service_event(s.spec, s.namespace_, "ReplicaReady", "ModelLoaded",
                                       "Replica " + it->key + " of " + s.policy + " serves after " +
                      std::to_string((now - it->requested_ms) / 1000) + " s (model load " +
                      std::to_string(s.spec.model_load_time.milliseconds() / 1000) + " s)");
          e.numbers = {{"sinceRequestSeconds", (now - it->requested_ms) / 1000}};
          e.related = {"Workload/" + it->key};
          if (auto logged = log(std::move(e)); !logged) return logged;
          for (auto w = s.awaiting_ready.begin(); w != s.awaiting_ready.end(); ++w) {
            if (w->first != it->key) continue;
            s.reaction_ms.push_back(now - w->second);
            s.awaiting_ready.erase(w);
            break;
          }
        }
      }
      ++it;
    }
    if (auto drained = follow_drains(s, now); !drained) return drained;
  }
  if (day_.serving_control == Control::Planned) return true;
  for (auto& s : services_) {
    if (auto recommended = recommend(s, now); !recommended) return recommended;
  }
  for (auto& t : tidal_) {
    if (auto stepped = tidal_step(t, now); !stepped) return stepped;
  }
  for (auto& s : services_) {
    if (auto decided = decide(s, now); !decided) return decided;
  }
  return true;
}

Expected<bool> ElasticControl::recommend(Service& s, VirtualTime now) {
  // The replicas' vLLM signals as a scrape of their pages would read them (Serving::scrape_of
  // builds it without the page: a week of the impact preview makes 160,000 of them).
  if (auto added = s.window.add(serving_.scrape_of(s.policy, now)); !added) return Unexpected{added.error()};
  const serving::Observation obs = [&] {
    auto o = s.window.observe();
    // Requests at the router wait for any replica: they are queue depth too (all of it
    // when no replica serves yet).
    const auto router = static_cast<double>(serving_.router_waiting(s.policy));
    if (router > 0) o.queue_depth = o.queue_depth.value_or(0) + router;
    return o;
  }();
  const int current = counting(s);
  int ready = 0;
  double utilization = 0, kv_sum = 0;
  for (const auto& r : serving_.replicas_of(s.policy)) {
    if (r.snapshot.state != inference::ReplicaState::ready) continue;
    ++ready;
    utilization += 100.0 * r.snapshot.load_factor;
    kv_sum += r.snapshot.kv_cache_usage;
  }
  int desired = current;
  switch (day_.serving_control) {
    case Control::Autoscaler:
      s.last = s.autoscaler->recommend(obs, current, std::min(ready, current));
      desired = s.last->desired;
      break;
    case Control::Static:
      desired = static_count(s);
      break;
    case Control::HpaGpuUtilization:
    case Control::Keda: {
      serving::ServiceSample sample;
      sample.pods_reporting = obs.replicas_reporting;
      sample.waiting = obs.queue_depth.value_or(0);
      sample.ttft_p95_s = obs.ttft_p95_s;
      sample.ttft_idle = obs.ttft_idle;
      sample.kv_cache_sum = kv_sum;
      sample.gpu_utilization_sum = utilization;
      sample.request_rate = obs.request_rate;
      sample.now = wall(now);
      const auto values = serving::metric_values(s.hpa->spec(), sample);
      desired = s.hpa->step(now, current, values, ready);
      break;
    }
    case Control::Planned: break;
  }
  s.target = desired;
  s.floor_in_force = desired;
  // A scale-out episode: the demand asks for more than serves (static provisioning has
  // no demand to react to).
  if (desired > ready && day_.serving_control != Control::Static) {
    if (!s.short_since) s.short_since = now;
  } else {
    s.short_since.reset();
  }
  return true;
}

Expected<bool> ElasticControl::tidal_step(Tidal& t, VirtualTime now) {
  tidal::Observed observed;
  for (std::size_t i : t.services) {
    const Service& s = services_[i];
    tidal::ServiceObservation o;
    o.ready = static_cast<int>(std::count_if(s.replicas.begin(), s.replicas.end(),
                                             [](const Replica& r) { return r.ready && !r.drain; }));
    o.realtime_desired = s.target;
    o.prewarm_failed = s.prewarm_failed;
    observed.emplace(s.policy, o);
  }
  auto stepped = t.controller->step(wall(now), observed);
  if (!stepped) return Unexpected{stepped.error()};
  for (const auto& r : stepped->records) {
    run::Event e = tidal_event(r);
    if (auto logged = log(std::move(e), r.actor.empty() ? kActor : r.actor); !logged) return logged;
  }
  // The coming window's boundaries, between its approaching and its start: the floors its
  // prewarm sets and the reclaim its approaching orders.
  std::map<std::string, int> upcoming;
  std::optional<tidal::ReclaimOrder> order;
  if (const auto& occ = stepped->state.approaching) {
    for (const auto& action : t.controller->timeline(occ->approaching, occ->prewarm + std::chrono::seconds(1))) {
      if (action.kind == tidal::BoundaryKind::PrewarmStarted && !stepped->state.prewarming) upcoming = action.floors;
      if (action.kind == tidal::BoundaryKind::Approaching && action.reclaim) order = action.reclaim;
    }
  }
  // Between a window's approaching and its prewarm no replica goes below the floor the
  // window will ask for: it would be removed only to be loaded again minutes later.
  for (const auto& d : stepped->decisions) {
    for (std::size_t i : t.services) {
      Service& s = services_[i];
      if (s.policy != d.policy) continue;
      const auto next = upcoming.find(s.policy);
      s.keep_at_least = next == upcoming.end() ? 0 : next->second;
      s.tidal_floor = d.tidal_floor;
      s.floor_in_force = d.floor_in_force;
      s.scale_down_allowed = d.scale_down_allowed;
      s.retry_now = d.retry_prewarm;
      s.target = std::max(s.target, d.floor_in_force);
      if (d.retry_prewarm) s.prewarm_failed = false;  // the next scale-out is the retry
    }
  }
  // The bank: the inference groups reserve their floors (and, from a window's approaching,
  // what its floor rise needs) so borrowers are told in time; training's borrowing is
  // capped at the window's limit, and at what it holds during the admission hold.
  const tidal::TidalState& state = stepped->state;
  std::map<std::pair<std::string, std::string>, std::int64_t> reserve;
  // In replica shapes: what one replica needs on one node (the largest of the group's
  // services on the pool), so the reclaim frees whole pieces of nodes.
  std::map<std::pair<std::string, std::string>, int> piece;
  std::optional<std::chrono::seconds> grace;
  for (std::size_t i : t.services) {
    const Service& s = services_[i];
    const auto floor = state.floors.find(s.policy);
    const auto& shape = s.spec.replica_shape;
    reserve[{s.spec.business_group, s.spec.resource_pool}] +=
        static_cast<std::int64_t>(floor == state.floors.end() ? 0 : floor->second) * shape.gpu_per_replica;
    int& p = piece[{s.spec.business_group, s.spec.resource_pool}];
    p = std::max({p, 1, shape.gpu_per_replica / std::max(1, shape.nodes_per_replica)});
  }
  // The notices of the reclaims a reservation starts get the policy's grace, always (a
  // reservation held across a window keeps the same terms).
  if (const auto* object = policies_.find(policy::Kind::TidalPolicy, t.controller->name()); object != nullptr) {
    const auto& reclaim = object->as<policy::TidalPolicySpec>().reclaim;
    if (reclaim && reclaim->grace_period) {
      grace = std::chrono::duration_cast<std::chrono::seconds>(reclaim->grace_period->nanoseconds());
    }
  }
  std::string pool = services_[t.services.front()].spec.resource_pool;
  std::vector<std::string> training;
  if (order) {
    pool = order->resource_pool;
    training = order->training_groups;
    if (!state.prewarming) {  // the floors rise at the prewarm: until then reserve the rise
      reserve[{services_[t.services.front()].spec.business_group, pool}] += order->gpus_needed;
    }
  }
  for (const auto& [where, gpus] : reserve) {
    const auto shaped = piece.find(where);
    const auto done = simulation_.reserve(
        where.first, where.second, gpus,
        grace ? std::optional<VirtualTime>(std::chrono::duration_cast<std::chrono::milliseconds>(*grace).count())
              : std::nullopt,
        "TidalPolicy " + t.controller->name() + " floors", kActor, shaped == piece.end() ? 1 : shaped->second);
    if (!done) return Unexpected{done.error()};
  }
  if (training.empty()) {
    const auto* spec = policies_.find(policy::Kind::TidalPolicy, t.controller->name());
    if (spec != nullptr) training = spec->as<policy::TidalPolicySpec>().targets.training_groups;
  }
  const auto positions = simulation_.positions();
  for (const auto& group : training) {
    std::optional<std::int64_t> cap;
    if (state.training_borrow_limit) cap = *state.training_borrow_limit;
    if (state.admission_hold) {
      auto held = t.hold_caps.find(group);
      if (held == t.hold_caps.end()) {
        std::int64_t borrowed = 0;
        for (const auto& p : positions) {
          if (p.business_group == group && p.pool == pool) borrowed = p.borrowed;
        }
        held = t.hold_caps.emplace(group, borrowed).first;
      }
      cap = std::min(cap.value_or(held->second), held->second);
    } else {
      t.hold_caps.erase(group);
    }
    const bool has_quota = std::any_of(positions.begin(), positions.end(), [&](const run::Position& p) {
      return p.business_group == group && p.pool == pool;
    });
    if (!has_quota) continue;
    const auto done = simulation_.cap_borrowing(
        group, pool, cap,
        state.admission_hold ? "TidalPolicy " + t.controller->name() + " holds new training before a window"
        : cap                ? "TidalPolicy " + t.controller->name() + " trainingBorrowLimit"
                             : "TidalPolicy " + t.controller->name() + " sets no limit now",
        kActor);
    if (!done) return Unexpected{done.error()};
  }
  return true;
}

Expected<bool> ElasticControl::decide(Service& s, VirtualTime now) {
  int target = std::clamp(s.target, s.spec.min_replicas, s.spec.max_replicas);
  const int current = counting(s);
  if (!s.scale_down_allowed) target = std::max(target, current);
  // A failed prewarm is retried on the tidal controller's backoff, not every sync: until
  // then only real-time demand adds replicas.
  if (!s.scale_down_allowed && !s.retry_now && target > current) {
    target = std::max(current, s.last ? std::min(s.last->desired, s.spec.max_replicas) : current);
  }
  if (target < current && s.keep_at_least > 0) target = std::max(target, std::min(current, s.keep_at_least));
  s.target = target;
  if (target > current) {
    const std::string why = s.last ? s.last->reason
                            : day_.serving_control == Control::Static
                                ? "static provisioning at " + plural(target, "replica")
                                : s.hpa ? "the HPA asks for " + plural(target, "replica") + " (" + s.hpa->last().reason + ")"
                                        : std::string();
    return scale_out(s, target - current, now, s.tidal_floor > 0 && s.tidal_floor >= target && (!s.last || s.last->desired < target)
                                                   ? "the tidal floor is " + plural(s.tidal_floor, "replica")
                                                   : why);
  }
  if (target < current) return scale_in(s, current - target, now);
  return true;
}

serving::ShapeRequest ElasticControl::shape_request(const Service& s, int count) const {
  serving::ShapeRequest request;
  request.service = s.policy;
  request.shape = s.spec.replica_shape;
  request.replicas = count;
  request.serving_floor_gpus = s.tidal_floor * s.spec.replica_shape.gpu_per_replica;
  request.burst_headroom_gpus = s.spec.effective_burst_headroom();
  return request;
}

serving::PoolCapacity ElasticControl::pool_after_unplaced(const Service& s, const serving::ShapeRequest& request) const {
  auto pool = pool_capacity(s);
  const int unplaced = static_cast<int>(
      std::count_if(s.replicas.begin(), s.replicas.end(), [](const Replica& r) { return !r.placed && !r.drain; }));
  if (unplaced > 0) {
    serving::ShapeRequest earlier = request;
    earlier.replicas = unplaced;
    const auto before = serving::check_shape(earlier, pool);
    for (const auto& p : before.placements) {
      for (const auto& name : p.nodes) {
        for (auto& node : pool.nodes) {
          if (node.name == name) node.free = std::max(0, node.free - p.gpus_per_node);
        }
      }
    }
  }
  return pool;
}

std::vector<std::string> ElasticControl::policies() const {
  std::vector<std::string> out;
  for (const auto& s : services_) out.push_back(s.policy);
  return out;
}

std::optional<serving::Capacity> ElasticControl::capacity(const std::string& policy) const {
  const auto it = std::find_if(services_.begin(), services_.end(), [&](const Service& s) { return s.policy == policy; });
  if (it == services_.end()) return std::nullopt;
  const Service& s = *it;
  serving::CapacityInputs in;
  in.policy = s.policy;
  for (const Replica& r : s.replicas) {
    if (r.drain) {
      ++in.draining;
    } else if (r.ready) {
      ++in.ready;
    } else if (r.placed) {
      ++in.loading;
    } else {
      ++in.requested;
    }
  }
  in.max_replicas = s.spec.max_replicas;
  const VirtualTime at = last_step_.value_or(0);
  auto queue = s.window.observe().queue_depth;
  const auto router = static_cast<double>(serving_.router_waiting(s.policy));
  if (queue || router > 0) queue = queue.value_or(0) + router;
  in.queue_depth = queue;
  in.arrival_rps = serving_.arrival_rps(s.policy, at);
  in.replica_rps = serving_.replica_rps(s.policy);
  in.model_load_time = s.spec.model_load_time;
  if (simulation_.cluster() != nullptr) {
    const serving::ShapeRequest request = shape_request(s, 1);
    in.next_replica = serving::check_shape(request, pool_after_unplaced(s, request));
  }
  // A demand reclaim of the group's lent GPUs runs on its quota's reclaimPolicy.gracePeriod
  // (none: the borrowers are preempted at once).
  for (const auto& p : policies_.policies()) {
    if (p.kind != policy::Kind::GPUQuotaPolicy) continue;
    const auto& q = p.as<policy::GPUQuotaPolicySpec>();
    if (q.business_group != s.spec.business_group || q.resource_pool != s.spec.resource_pool) continue;
    if (q.reclaim_policy && q.reclaim_policy->grace_period) in.reclaim_grace = *q.reclaim_policy->grace_period;
  }
  return serving::gateway_capacity(in);
}

serving::PoolCapacity ElasticControl::pool_capacity(const Service& s) const {
  serving::PoolCapacity pool;
  pool.pool = s.spec.resource_pool;
  const auto* guardrails = policies_.guardrails_spec();
  if (const cluster::Cluster* c = simulation_.cluster(); c != nullptr) {
    for (cluster::NodeId n = 0; n < c->node_count(); ++n) {
      const auto& node = c->node(n);
      if (node.pool() != s.spec.resource_pool) continue;
      serving::NodeCapacity nc;
      nc.name = node.name;
      nc.gpus = c->node_units(n);
      nc.free = c->node_free(n);
      nc.fabric = node.fabric;
      const auto first = c->node_first_unit(n);
      for (int u = 0; u < nc.gpus; ++u) {
        const auto& unit = c->unit(first + static_cast<cluster::UnitId>(u));
        if (!unit.healthy) {
          ++nc.unhealthy;
          continue;
        }
        // Another group's workload on this pool holds GPUs of this group's guarantee or
        // of the cohort: what the bank can reclaim (approximation: protected types of
        // other groups count too; check_shape only uses it to say where a reclaim helps).
        bool borrower = false;
        for (const auto& key : c->workloads_on_unit(first + static_cast<cluster::UnitId>(u))) {
          const auto slash = key.find('/');
          const policy::Group* g = guardrails == nullptr ? nullptr : guardrails->group_of_namespace(key.substr(0, slash));
          if (g != nullptr && g->name != s.spec.business_group) borrower = true;
        }
        nc.held_by_borrowers += borrower ? 1 : 0;
      }
      pool.nodes.push_back(std::move(nc));
    }
  }
  for (const auto& p : simulation_.positions()) {
    if (p.business_group != s.spec.business_group || p.pool != s.spec.resource_pool) continue;
    pool.quota.guaranteed = static_cast<int>(p.guaranteed);
    pool.quota.used = static_cast<int>(p.used);
    pool.quota.lent = static_cast<int>(p.lent);
    pool.quota.cohort_free = static_cast<int>(p.borrowable);
  }
  pool.quota.max_capacity = pool.quota.guaranteed;
  for (const auto& p : policies_.policies()) {
    if (p.kind != policy::Kind::GPUQuotaPolicy) continue;
    const auto& q = p.as<policy::GPUQuotaPolicySpec>();
    if (q.business_group == s.spec.business_group && q.resource_pool == s.spec.resource_pool) {
      pool.quota.max_capacity = q.effective_max_capacity();
    }
  }
  return pool;
}

Expected<bool> ElasticControl::scale_out(Service& s, int count, VirtualTime now, const std::string& why) {
  const auto& shape = s.spec.replica_shape;
  int granted = count;
  serving::ShapeDecision decision;
  if (simulation_.cluster() != nullptr) {
    const serving::ShapeRequest request = shape_request(s, count);
    decision = serving::check_shape(request, pool_after_unplaced(s, request));
    if (decision.outcome == serving::ShapeOutcome::Blocked) {
      granted = decision.numbers.contains("replicasThatFit") ? decision.numbers["replicasThatFit"].get<int>() : 0;
      granted = std::clamp(granted, 0, count - 1);
      const std::string reason(serving::to_string(decision.reason));
      s.prewarm_failed = true;
      if (reason != s.blocked_reason) {
        s.blocked_reason = reason;
        ++s.blocked;
        run::Event e = service_event(s.spec, s.namespace_, "ScaleUpBlocked", reason,
                                     decision.message);
        e.numbers = decision.numbers;
        if (auto logged = log(std::move(e)); !logged) return logged;
      }
    } else {
      s.blocked_reason.clear();
    }
  }
  if (granted <= 0) return true;
  run::Event e;
  e.kind = "ScaleUpRequested";
  e.object = object_of(s.spec, s.namespace_);
  e.business_group = s.spec.business_group;
  e.pool = s.spec.resource_pool;
  e.reason = simulation_.cluster() != nullptr && decision.outcome == serving::ShapeOutcome::FitsAfterReclaim
                 ? "FitsAfterReclaim"
                 : "CapacityAvailable";
  const int before = counting(s);
  e.message = s.policy + " scales out from " + std::to_string(before) + " to " + std::to_string(before + granted) +
              " replicas of " + std::to_string(shape.gpu_per_replica) + " GPUs: " + why;
  e.numbers = {{"from", before},
               {"to", before + granted},
               {"gpuPerReplica", shape.gpu_per_replica},
               {"tidalFloor", s.tidal_floor},
               {"floorInForce", s.floor_in_force}};
  if (s.last) {
    e.numbers["realtime"] = s.last->desired;
    for (const auto& sig : s.last->signals) {
      if (sig.value) e.numbers[sig.name] = *sig.value;
    }
  }
  if (decision.reclaim_gpus > 0) e.numbers["reclaimGpus"] = decision.reclaim_gpus;
  std::vector<std::string> keys;
  for (int i = 0; i < granted; ++i) {
    run::ScenarioWorkload w;
    w.name = s.policy + "-r" + std::to_string(s.next_index++);
    w.namespace_ = s.namespace_;
    w.business_group = s.spec.business_group;
    w.resource_pool = s.spec.resource_pool;
    w.pods = std::max(1, shape.nodes_per_replica);
    w.gpus = shape.gpu_per_replica / static_cast<int>(w.pods);
    w.workload_type = policy::WorkloadType::Inference;
    w.priority_class = s.priority_class;
    // Serves past the day's end: the run stops first, so no replica finishes with requests
    // in flight.
    w.run_time = Duration(std::chrono::milliseconds(day_.hours * 3'600'000 - now + 3'600'000));
    // The day begins with the service already serving: replicas asked for at virtual time
    // 0 are warm (their model loaded before the day).
    w.startup_time = now == 0 ? Duration{} : s.spec.model_load_time;
    w.labels = {{"app", s.spec.workload_ref.name},
                {"platform.gpubank.dev/workload-type", "inference"},
                {"platform.gpubank.dev/capacity-role", counting(s) + i < s.tidal_floor ? "serving-floor" : "burst-headroom"}};
    auto key = simulation_.submit(std::move(w), kActor);
    if (!key) return Unexpected{"scaling out " + s.policy + ": " + key.error()};
    if (auto adopted = serving_.adopt(*key, s.policy, now == 0 ? 0 : s.spec.model_load_time.milliseconds()); !adopted) {
      return Unexpected{adopted.error()};
    }
    Replica r;
    r.key = *key;
    r.requested_ms = now;
    s.replicas.push_back(std::move(r));
    if (s.short_since) s.awaiting_ready.emplace_back(*key, *s.short_since);
    keys.push_back("Workload/" + *key);
  }
  e.related = keys;
  ++s.scale_ups;
  // The submissions settled their instant; the decision is logged after them.
  return log(std::move(e));
}

Expected<bool> ElasticControl::scale_in(Service& s, int count, VirtualTime now) {
  // Replicas still waiting for GPUs serve nothing: withdrawn first, newest first.
  for (auto it = s.replicas.rbegin(); it != s.replicas.rend() && count > 0;) {
    if (it->placed || it->drain) {
      ++it;
      continue;
    }
    const std::string key = it->key;
    s.replicas.erase(std::next(it).base());
    it = s.replicas.rbegin();
    --count;
    if (auto removed = simulation_.remove(key, kActor); !removed) return Unexpected{removed.error()};
    run::Event e = service_event(s.spec, s.namespace_, "ReplicaRemoved", "Withdrawn",
                                 "Replica " + key + " of " + s.policy + " is withdrawn before it got GPUs: the service needs " +
                plural(s.target, "replica"));
    e.related = {"Workload/" + key};
    if (auto logged = log(std::move(e)); !logged) return logged;
    ++s.scale_downs;
  }
  if (count <= 0) return true;
  std::vector<serving::ReplicaState> states;
  const auto live = serving_.replicas_of(s.policy);
  for (const auto& r : s.replicas) {
    if (!r.placed || r.drain) continue;
    serving::ReplicaState st;
    st.id = r.key;
    st.phase = r.ready ? serving::Phase::ready : serving::Phase::loading;
    st.started_ms = r.requested_ms;
    for (const auto& l : live) {
      if (l.workload != r.key) continue;
      st.in_flight = static_cast<int>(l.snapshot.in_flight);
      st.streaming = static_cast<int>(l.snapshot.running);
    }
    states.push_back(std::move(st));
  }
  const int current = counting(s);
  const auto plan = serving::plan_scale_in(current, current - count, s.target, states);
  for (const auto& id : plan.ids) {
    auto r = std::find_if(s.replicas.begin(), s.replicas.end(), [&](const Replica& x) { return x.key == id; });
    if (r == s.replicas.end()) continue;
    serving::DrainSpec spec;
    spec.service = s.policy;
    spec.replica = id;
    spec.drain_timeout_ms = s.spec.scale_down.drain_timeout.milliseconds();
    spec.gpus = s.spec.replica_shape.gpu_per_replica;
    spec.tensor_parallel_size = s.spec.replica_shape.tensor_parallel_size;
    r->drain.emplace(spec);
    int in_flight = 0, streaming = 0;
    for (const auto& st : states) {
      if (st.id == id) {
        in_flight = st.in_flight;
        streaming = st.streaming;
      }
    }
    const auto started = r->drain->start(now, in_flight, streaming);
    if (auto drained = serving_.start_drain(id); !drained) return Unexpected{drained.error()};
    run::Event e = service_event(s.spec, s.namespace_, started.event.kind, started.event.reason,
                                 started.event.message + (s.last ? " (" + s.last->reason + ")" : ""));
    e.numbers = started.event.numbers;
    e.numbers["floorInForce"] = s.floor_in_force;
    e.numbers["target"] = s.target;
    e.related = {"Workload/" + id};
    if (auto logged = log(std::move(e)); !logged) return logged;
  }
  return follow_drains(s, now);
}

Expected<bool> ElasticControl::follow_drains(Service& s, VirtualTime now) {
  const auto live = serving_.replicas_of(s.policy);
  for (auto it = s.replicas.begin(); it != s.replicas.end();) {
    if (!it->drain) {
      ++it;
      continue;
    }
    int in_flight = 0, streaming = 0;
    for (const auto& l : live) {
      if (l.workload != it->key) continue;
      in_flight = static_cast<int>(l.snapshot.in_flight);
      streaming = static_cast<int>(l.snapshot.running);
    }
    const auto seen = it->drain->observe(now, in_flight, streaming);
    if (seen.state != serving::DrainState::Completed && seen.state != serving::DrainState::TimedOut) {
      ++it;
      continue;
    }
    const std::string key = it->key;
    it = s.replicas.erase(it);
    ++s.scale_downs;
    if (auto removed = simulation_.remove(key, kActor); !removed) return Unexpected{removed.error()};
    for (const auto& ev : seen.events) {
      run::Event e = service_event(s.spec, s.namespace_, ev.kind, ev.reason,
                                   ev.message);
      e.numbers = ev.numbers;
      e.related = {"Workload/" + key};
      if (auto logged = log(std::move(e)); !logged) return logged;
    }
  }
  return true;
}

Expected<bool> ElasticControl::freeze(const std::string& tidal_policy, const std::string& actor,
                                      const std::string& reason) {
  return pin(tidal_policy, actor, reason, true);
}

Expected<bool> ElasticControl::unfreeze(const std::string& tidal_policy, const std::string& actor) {
  return pin(tidal_policy, actor, "", false);
}

Expected<bool> ElasticControl::pin(const std::string& tidal_policy, const std::string& actor, const std::string& reason,
                                   bool freeze) {
  for (auto& t : tidal_) {
    if (t.controller->name() != tidal_policy) continue;
    auto record = freeze ? t.controller->freeze(actor, wall(simulation_.now()), reason)
                         : t.controller->unfreeze(actor, wall(simulation_.now()));
    if (!record) return Unexpected{record.error()};
    if (auto logged = log(tidal_event(*record), actor); !logged) return logged;
    return true;
  }
  return Unexpected{"no TidalPolicy " + tidal_policy + " is in force" +
                    (day_.serving_control == Control::Autoscaler ? std::string()
                                                                 : " (serving control is " +
                                                                       std::string(to_string(day_.serving_control)) + ")")};
}

Expected<bool> ElasticControl::fail_model_loads(const std::string& policy, int count, const std::string& actor) {
  if (count < 1 || count > 1000) return Unexpected{std::string("count must be from 1 to 1000")};
  for (auto& s : services_) {
    if (s.policy != policy) continue;
    s.load_failures += count;
    run::Event e = service_event(s.spec, s.namespace_, "FaultInjected", "ModelLoadFailure",
                                 "The next " + plural(count, "replica") + " of " + policy + " to finish loading will fail to load the model");
    e.numbers = {{"count", count}, {"pending", s.load_failures}};
    return log(std::move(e), actor);
  }
  return Unexpected{"no inference service for InferenceScalingPolicy " + policy};
}

Json ElasticControl::json() const {
  Json list = Json::array();
  for (const auto& s : services_) {
    Json j = Json::object();
    j["policy"] = s.policy;
    j["control"] = std::string(to_string(day_.serving_control));
    j["replicas"] = counting(s);
    j["target"] = s.target;
    j["tidalFloor"] = s.tidal_floor;
    j["floorInForce"] = s.floor_in_force;
    if (s.last) {
      Json signals = Json::object();
      for (const auto& sig : s.last->signals) {
        signals[sig.name] = {{"value", sig.value ? Json(*sig.value) : Json(nullptr)},
                             {"target", sig.target},
                             {"replicas", sig.replicas ? Json(*sig.replicas) : Json(nullptr)}};
      }
      j["recommendation"] = {{"raw", s.last->raw},
                             {"stabilized", s.last->stabilized},
                             {"desired", s.last->desired},
                             {"metricsMissing", s.last->metrics_missing},
                             {"reason", s.last->reason},
                             {"signals", std::move(signals)}};
    }
    if (!s.blocked_reason.empty()) j["blocked"] = s.blocked_reason;
    Json replicas = Json::array();
    for (const auto& r : s.replicas) {
      replicas.push_back({{"workload", r.key},
                          {"phase", r.drain ? "Draining" : r.ready ? "Ready" : r.placed ? "Loading" : "Requested"}});
    }
    j["replicaWorkloads"] = std::move(replicas);
    list.push_back(std::move(j));
  }
  return list;
}

std::vector<ElasticControl::ServiceReport> ElasticControl::report() const {
  std::vector<ServiceReport> out;
  for (const auto& s : services_) {
    ServiceReport r;
    r.policy = s.policy;
    r.control = std::string(to_string(day_.serving_control));
    r.peak_replicas = s.peak;
    if (day_.serving_control == Control::Static) r.static_replicas = static_count(s);
    r.replica_gpu_ms = s.gpu_ms_;
    r.scale_ups = s.scale_ups;
    r.scale_downs = s.scale_downs;
    r.blocked = s.blocked;
    r.reaction_ms = s.reaction_ms;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gpubank::twin::live
