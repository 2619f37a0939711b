// What controllers do to a running engine between instants: submit, delete, reserve,
// cap borrowing, log decisions, mark GPUs (un)healthy (engine_internal.hpp).
#include "twin/run/engine_internal.hpp"

namespace gpubank::twin::run::detail {

Expected<bool> Engine::gpu_health(const std::string& uuid, bool healthy, int xid, VirtualTime now, const std::string& actor,
                                  std::int64_t ecc_double_bit) {
  if (!cluster_) return Unexpected{std::string("no cluster: the run has no inventory")};
  const auto gpu = cluster_->find_gpu(uuid);
  if (!gpu) return Unexpected{"no GPU " + uuid};
  if (ecc_double_bit > 0) {
    if (auto counted = cluster_->add_ecc_errors(uuid, ecc_double_bit); !counted) return counted;
  }
  const bool was_healthy = cluster_->gpu(*gpu).healthy;
  auto affected = cluster_->set_gpu_health(uuid, healthy, healthy ? 0 : xid);
  if (!affected) return Unexpected{affected.error()};
  if (was_healthy == healthy && healthy) return true;
  const cluster::NodeSpec& node = cluster_->node(cluster_->gpu(*gpu).node);
  Event g;
  g.t = now;
  g.kind = healthy ? "GpuHealthy" : "GpuUnhealthy";
  g.object = "GPU/" + uuid;
  g.pool = std::string(node.pool());
  g.reason = healthy ? "Recovered" : "XidError";
  g.message = healthy ? "GPU " + std::to_string(cluster_->gpu(*gpu).index) + " of " + node.name + " is healthy again"
                      : "GPU " + std::to_string(cluster_->gpu(*gpu).index) + " of " + node.name + " reported XID " +
                            std::to_string(xid) + "; " + std::to_string(affected->size()) + " workload(s) on it lose their pods";
  g.numbers = {{"xid", healthy ? 0 : xid}, {"eccDoubleBit", ecc_double_bit},
               {"workloads", static_cast<std::int64_t>(affected->size())}};
  for (const auto& key : *affected) g.related.push_back("Workload/" + key);
  actor_ = actor;
  event(std::move(g));
  actor_.clear();
  if (healthy) {
    cluster_freed_ = true;
    return true;
  }
  for (const auto& key : *affected) {
    const auto it = sim_index_.find(key);
    if (it == sim_index_.end()) continue;
    Sim& s = sims_[at(it->second)];
    if (!holds_gpus(s.state)) continue;
    if (s.reclaim >= 0) {
      stop_victim(s, now, "its GPU failed");
      continue;
    }
    const std::int64_t p = progress(s, now);
    const std::int64_t kept = last_periodic(s, p);
    const std::int64_t loss = (p - kept) * s.gpus;
    if (cluster_->placement_of(s.key) != nullptr) {
      allocation_changes(-placed_milli(s));
      if (auto released = cluster_->release(s.key); !released) throw std::logic_error("twin run: " + released.error());
      cluster_freed_ = true;
    }
    s.base = kept;
    s.frozen = false;
    ++s.version;  // its Started / Finish timers no longer hold
    ++s.outcome.stops;
    s.outcome.loss_gpu_ms += loss;
    result_.recompute_loss_gpu_ms += loss;
    Event e = workload_event(s, now, "Failed", "GpuXidError",
                             "The pods of " + s.key + " failed with XID " + std::to_string(xid) + " on " + node.name +
                                 ": new pods restart from " + std::to_string(kept / 1000) +
                                 " s of progress once the shape fits on healthy GPUs");
    e.numbers = {{"gpus", s.gpus}, {"xid", xid}, {"recomputeLossGpuHours", gpu_hours(loss)}};
    e.related = {"GPU/" + uuid};
    event(std::move(e), false);
    set_state(s, State::Placing);
    s.unschedulable_said = false;
    arm_pods_ready(s, it->second, now, true);
    try_place(s, it->second, now);
  }
  return true;
}

Expected<bool> Engine::set_gpu_health(const std::string& uuid, bool healthy, int xid, const std::string& actor,
                                      std::int64_t ecc_double_bit) {
  if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
  auto done = gpu_health(uuid, healthy, xid, now_, actor, ecc_double_bit);
  if (!done) return done;
  settle(now_);
  if (!flush()) return Unexpected{std::string("the run stopped: its entries could not be persisted")};
  return true;
}

Expected<std::string> Engine::submit_now(ScenarioWorkload w, const std::string& actor) {
  if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
  added_.push_back(std::move(w));
  ScenarioWorkload& stored = added_.back();
  stored.arrival_time = Duration(std::chrono::milliseconds(now_));
  Diagnostics problems;
  auto sim = make_sim(stored, "workload", problems);
  if (!sim) {
    added_.pop_back();
    return Unexpected{problems.front().path + ": " + problems.front().message};
  }
  if (sim_index_.contains(sim->key)) {
    added_.pop_back();
    return Unexpected{"workload " + sim->key + " exists already"};
  }
  const int index = static_cast<int>(sims_.size());
  sim_index_.emplace(sim->key, index);
  sims_.push_back(std::move(*sim));
  const std::string key = sims_.back().key;
  actor_ = actor;
  submit(sims_.back(), now_);
  actor_.clear();
  if (stored.delete_time) schedule(std::max(now_, stored.delete_time->milliseconds()), Timer::Kind::Delete, index);
  if (auto settled = settle_now(); !settled) return Unexpected{settled.error()};
  return key;
}

Expected<bool> Engine::delete_now(const std::string& key, const std::string& actor) {
  if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
  const auto it = sim_index_.find(key);
  if (it == sim_index_.end()) return Unexpected{"no workload " + key};
  Sim& s = sims_[at(it->second)];
  if (s.state == State::Finished) return false;
  actor_ = actor;
  if (s.state == State::Waiting) {  // not arrived yet: it never will
    s.state = State::Finished;
    s.deleted = true;
    ++s.version;
  } else {
    remove(s, now_);
  }
  actor_.clear();
  if (auto settled = settle_now(); !settled) return Unexpected{settled.error()};
  return true;
}

Expected<bool> Engine::reserve(const std::string& group, const std::string& pool, std::int64_t gpus,
                               std::optional<std::int64_t> grace_ms, const std::string& reason, const std::string& actor) {
  if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
  const auto it = quota_index_.find({group, pool});
  if (it == quota_index_.end()) return Unexpected{"no GPUQuotaPolicy gives " + group + " quota in " + pool};
  if (gpus < 0) return Unexpected{std::string("a reservation is at least 0 GPUs")};
  Quota& q = quotas_[at(it->second)];
  if (q.reserved == gpus && q.reserve_grace_ms == grace_ms) return false;
  const std::int64_t before = q.reserved;
  q.reserved = gpus;
  q.reserve_grace_ms = grace_ms;
  q.reserve_reason = reason;
  pools_[at(q.pool)].touch();
  Event e = lender_event(group, pool, q.cq, now_, "CapacityReserved", gpus > 0 ? "Reserved" : "Released",
                         group + " reserves " + std::to_string(gpus) + " of its " + std::to_string(q.guaranteed) +
                             " guaranteed GPUs in " + pool + " (was " + std::to_string(before) + "): " + reason);
  e.numbers = {{"reserved", gpus}, {"before", before}, {"guaranteed", q.guaranteed}, {"used", q.used}};
  if (grace_ms) e.numbers["graceSeconds"] = *grace_ms / 1000;
  return announce_and_settle(std::move(e), actor);
}

Expected<bool> Engine::cap_borrowing(const std::string& group, const std::string& pool, std::optional<std::int64_t> cap,
                                     const std::string& reason, const std::string& actor) {
  if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
  const auto it = quota_index_.find({group, pool});
  if (it == quota_index_.end()) return Unexpected{"no GPUQuotaPolicy gives " + group + " quota in " + pool};
  if (cap && *cap < 0) return Unexpected{std::string("a borrowing cap is at least 0 GPUs")};
  Quota& q = quotas_[at(it->second)];
  if (q.borrow_cap == cap) return false;
  q.borrow_cap = cap;
  const std::int64_t borrowed = std::max<std::int64_t>(0, q.used - q.guaranteed);
  Event e = lender_event(group, pool, q.cq, now_, "BorrowingCapped", cap ? "Capped" : "Uncapped",
                         cap ? group + " may borrow at most " + std::to_string(*cap) + " GPUs in " + pool + " (borrows " +
                                   std::to_string(borrowed) + " now): " + reason
                             : group + "'s borrowing in " + pool + " is back to its quota's limit: " + reason);
  e.numbers = {{"borrowed", borrowed}};
  if (cap) e.numbers["cap"] = *cap;
  if (q.borrowing_limit) e.numbers["borrowingLimit"] = *q.borrowing_limit;
  return announce_and_settle(std::move(e), actor);
}

Expected<bool> Engine::announce_and_settle(Event e, const std::string& actor) {
  actor_ = actor;
  event(std::move(e));
  actor_.clear();
  sync_quotas();
  if (auto settled = settle_now(); !settled) return Unexpected{settled.error()};
  return true;
}

Expected<bool> Engine::record_now(Event e, const std::string& actor) {
  if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
  e.t = now_;
  actor_ = actor;
  event(std::move(e));
  actor_.clear();
  if (!flush()) return Unexpected{std::string("the run stopped: its entries could not be persisted")};
  return true;
}

Expected<bool> Engine::settle_now() {
  settle(now_);
  if (!flush()) return Unexpected{std::string("the run stopped: its entries could not be persisted")};
  return true;
}

}  // namespace gpubank::twin::run::detail
