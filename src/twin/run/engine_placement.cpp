// The engine's placement of admitted workloads on the cluster and Kueue's
// waitForPodsReady (engine_internal.hpp, pods_ready.hpp).
#include "twin/run/engine_internal.hpp"

namespace gpubank::twin::run::detail {

// ---- waitForPodsReady (pods_ready.hpp) ------------------------------------------------------

void Engine::arm_pods_ready(Sim& s, int index, VirtualTime now, bool recovery) {
  disarm_pods_ready(s, index);
  if (!cluster_ || !options_.wait_for_pods_ready) return;
  const WaitForPodsReady& config = *options_.wait_for_pods_ready;
  const std::int64_t timeout = recovery ? config.recovery_ms() : config.timeout_ms;
  if (timeout <= 0) return;
  s.pods_ready_deadline = now + timeout;
  pods_ready_deadlines_.insert({now + timeout, index});
}

void Engine::disarm_pods_ready(Sim& s, int index) {
  if (!s.pods_ready_deadline) return;
  pods_ready_deadlines_.erase({*s.pods_ready_deadline, index});
  s.pods_ready_deadline.reset();
}

void Engine::pods_ready_timeout(Sim& s, int index, VirtualTime now) {
  disarm_pods_ready(s, index);
  const WaitForPodsReady& config = *options_.wait_for_pods_ready;
  const PodsReadyEviction d = on_pods_ready_timeout(config, s.pods_ready_requeues);
  const bool placed = s.state == State::Starting;
  const std::string message =
      "Exceeded the PodsReady timeout " + s.key + ": its pods were " + (placed ? "placed but not ready" : "not placed") +
      " in time; " +
      (d.deactivate ? "deactivated (RequeuingLimitExceeded): it was requeued " + std::to_string(d.requeue_count) +
                          " times, the backoffLimitCount, and releases its " + std::to_string(s.gpus) + " GPUs of quota"
                    : "it releases its " + std::to_string(s.gpus) + " GPUs of quota and queues again in " +
                          std::to_string(d.backoff_ms / 1000) + " s (requeue " + std::to_string(d.requeue_count) + ")");
  auto evicted = core_->evict(s.id, "PodsReadyTimeout", message, now);
  if (!evicted) throw std::logic_error("twin run: " + evicted.error());
  core_->release_evicted(s.id, now);
  end_in_core(s, now);
  requeue(s, now, s.base, 0);  // nothing ran since its last start: no work is lost
  s.pods_ready_requeues = d.requeue_count;
  ledger_usage(s, bank::LedgerKind::UsageEnded, now, "PodsReadyTimeout");
  pools_[at(quotas_[at(s.quota)].pool)].ended[s.key] = "PodsReadyTimeout";
  Event e = workload_event(s, now, d.deactivate ? "Deactivated" : "Evicted",
                           d.deactivate ? "RequeuingLimitExceeded" : "PodsReadyTimeout", message);
  e.numbers = {{"gpus", s.gpus}, {"requeueCount", d.requeue_count}, {"requeueBackoffSeconds", d.backoff_ms / 1000}};
  if (d.deactivate) {
    set_state(s, State::Finished);
    s.deactivated = true;
  } else {
    set_state(s, State::Requeuing);
    s.queue_since = config.timestamp == WaitForPodsReady::RequeueTimestamp::Creation ? s.created_at : now;
    schedule(now + d.backoff_ms, Timer::Kind::Resubmit, index);
  }
  event(std::move(e), false);  // Kueue's decision, not the bank's
  core_changed_ = true;
}

void Engine::requeue(Sim& s, VirtualTime, std::int64_t kept, std::int64_t loss) {
  set_state(s, State::Pending);
  s.base = kept;
  s.frozen = false;
  s.checkpoint_saved = false;
  ++s.version;
  ++s.outcome.stops;
  s.outcome.loss_gpu_ms += loss;
  s.pending_reason.clear();
  result_.recompute_loss_gpu_ms += loss;
}

// ---- placement ----------------------------------------------------------------------------

bool Engine::try_place(Sim& s, int index, VirtualTime now) {
  if (cluster_) {
    const cluster::PlacementRequest request = placement_request(s);
    const auto placement = cluster_->find(request);
    if (!placement) {
      placing_.insert({s.admission_seq, index});
      placing_by_shape_[at(placement_shape_of(s))].insert({s.admission_seq, index});
      if (!s.unschedulable_said) {
        s.unschedulable_said = true;
        const cluster::Explanation why = cluster_->explain(request);
        const std::string reason = why.nodes_matching == 0                       ? "NoMatchingNodes"
                                   : why.free_units >= s.w->pods * s.w->gpus ? "FragmentedCapacity"
                                                                                 : "InsufficientGPUs";
        Event e = workload_event(s, now, "Unschedulable", reason,
                                 "Workload " + s.key + " holds its quota but its pods do not fit: " + why.message);
        e.numbers = {{"gpus", s.gpus},         {"nodesMatching", why.nodes_matching},
                     {"freeGpus", why.free_units}, {"mostFreeOnOneNode", why.most_free_on_one_node},
                     {"podsThatFit", why.pods_that_fit}};
        event(std::move(e), false);
      }
      return false;
    }
    if (auto bound = cluster_->bind(s.key, *placement); !bound) throw std::logic_error("twin run: " + bound.error());
    allocation_changes(placed_milli(s));
    Event e = workload_event(s, now, "Placed", "Scheduled",
                             "Workload " + s.key + ": " + std::to_string(s.w->pods) + " pod(s) of " +
                                 std::to_string(s.w->gpus) + " GPU(s) on " + placement_nodes(*placement));
    e.numbers = {{"gpus", s.gpus}, {"nodes", static_cast<std::int64_t>(placement->pods.size())}};
    event(std::move(e), false);
  }
  if (s.w->startup_time.milliseconds() > 0) {
    set_state(s, State::Starting);
    schedule(now + s.w->startup_time.milliseconds(), Timer::Kind::Started, index);
  } else {
    set_state(s, State::Running);
    s.running_since = now;
    schedule_finish(s, index, now);
  }
  return true;
}

std::int64_t Engine::placed_milli(const Sim& s) {
  return s.w->pods * (s.w->gpu_milli > 0 ? s.w->gpu_milli : s.w->gpus * cluster::kMilliPerGpu);
}

void Engine::allocation_changes(std::int64_t delta_milli) {
  result_.cluster.allocated_milli_ms += allocated_milli_ * (now_ - allocated_since_);
  allocated_since_ = now_;
  allocated_milli_ += delta_milli;
}

void Engine::sample_fragmentation() {
  std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::vector<std::string>>, cluster::PlacementRequest> shapes;
  auto add = [&](int index) {
    const Sim& s = sims_[at(index)];
    const auto key = std::make_tuple(quotas_[at(s.quota)].pool, s.w->pods, s.w->gpus, s.w->gpu_milli, s.w->gpu_models);
    if (!shapes.contains(key)) shapes.emplace(key, placement_request(s));
  };
  for (const auto& q : quotas_) {
    for (int i : q.pending) add(i);
  }
  for (const auto& [seq, i] : placing_) add(i);
  std::vector<cluster::PlacementRequest> requests;
  requests.reserve(shapes.size());
  for (auto& [key, r] : shapes) requests.push_back(std::move(r));
  const auto report = cluster_->fragmentation(requests);
  ++result_.cluster.samples;
  result_.cluster.stranded_unit_samples += report.total.stranded;
  result_.cluster.free_unit_samples += report.total.free;
}

std::string Engine::placement_nodes(const cluster::Placement& p) const {
  std::string out;
  for (const auto& pod : p.pods) {
    const std::string& name = cluster_->node(pod.node).name;
    if (out.find(name) == std::string::npos) out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

cluster::PlacementRequest Engine::placement_request(const Sim& s) const {
  const Quota& q = quotas_[at(s.quota)];
  const policy::Pool* pool = pools_[at(q.pool)].pool;
  cluster::PlacementRequest r;
  r.workload = s.key;
  r.pods = static_cast<int>(s.w->pods);
  r.gpus_per_pod = static_cast<int>(s.w->gpus);
  r.gpu_milli = static_cast<int>(s.w->gpu_milli);
  r.node_selector = pool->node_labels;
  // What Kueue injects from the pool's ResourceFlavor (nodeLabels, tolerations).
  for (const auto& t : pool->taints) {
    cluster::Toleration tol;
    tol.key = t.key;
    tol.value = t.value;
    tol.op = cluster::TolerationOperator::Equal;
    tol.effect = static_cast<cluster::TaintEffect>(static_cast<int>(t.effect));
    r.tolerations.push_back(std::move(tol));
  }
  r.gpu_models = s.w->gpu_models;
  return r;
}

int Engine::placement_shape_of(Sim& s) {
  if (s.placement_shape < 0) {
    PlacementShape key{quotas_[at(s.quota)].pool, s.w->pods, s.w->gpus, s.w->gpu_milli, s.w->gpu_models};
    const auto [it, added] = placement_shapes_.try_emplace(std::move(key), static_cast<int>(placement_shapes_.size()));
    if (added) placing_by_shape_.emplace_back();
    s.placement_shape = it->second;
  }
  return s.placement_shape;
}

// In admission order, as the scheduler retries unschedulable pods after a release. Within
// one pass the cluster only fills (binds, no releases) and whether find() places a shape
// is monotone in the free units (a node with enough free, a fabric or the shared units
// with enough room), so once a shape fails the rest of its workloads fail too: the pass
// visits each shape's workloads until the first that does not fit, O(shapes + placed) per
// release instead of every waiting workload.
void Engine::place_waiting(VirtualTime now) {
  if (!cluster_freed_ || placing_.empty()) {
    cluster_freed_ = false;
    return;
  }
  cluster_freed_ = false;
  using Next = std::tuple<std::int64_t, int, int>;  // (admission seq, sim, shape)
  std::priority_queue<Next, std::vector<Next>, std::greater<>> heads;
  for (std::size_t shape = 0; shape < placing_by_shape_.size(); ++shape) {
    const auto& waiting = placing_by_shape_[shape];
    if (!waiting.empty()) heads.emplace(waiting.begin()->first, waiting.begin()->second, static_cast<int>(shape));
  }
  while (!heads.empty()) {
    const auto [seq, index, shape] = heads.top();
    heads.pop();
    Sim& s = sims_[at(index)];
    placing_.erase({seq, index});
    placing_by_shape_[at(shape)].erase({seq, index});
    if (!try_place(s, index, now)) continue;  // back in placing_; its shape waits for the next release
    const auto& waiting = placing_by_shape_[at(shape)];
    if (!waiting.empty()) heads.emplace(waiting.begin()->first, waiting.begin()->second, shape);
  }
}

}  // namespace gpubank::twin::run::detail
