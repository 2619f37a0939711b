// What controllers do to a running engine between instants: submit, delete, reserve,
// cap borrowing, log decisions, mark GPUs (un)healthy (engine_internal.hpp).
#include "twin/run/engine_internal.hpp"

namespace gpubank::twin::run::detail {

namespace {

// Each object of a set by "Kind/name", as its canonical text (what the policy version hashes).
std::map<std::string, std::string> canonical_objects(const policy::PolicySet& set) {
  std::map<std::string, std::string> out;
  for (const auto& p : set.policies()) out[std::string(policy::kind_name(p.kind)) + "/" + p.name()] = render::canonical_text(p);
  return out;
}

std::string limit_text(const std::optional<Amount>& a) { return a ? std::to_string(*a) : std::string("none"); }

}  // namespace

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
    if (s.reclaim >= 0 || s.approved_stop) {
      stop_noticed(s, now, "its GPU failed");
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

Expected<bool> Engine::stop_approved(const std::string& key, const std::string& approval, const std::string& actor) {
  if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
  const auto it = sim_index_.find(key);
  if (it == sim_index_.end()) return Unexpected{"no workload " + key};
  const int index = it->second;
  Sim& s = sims_[at(index)];
  if (s.state == State::Finished || s.state == State::Waiting) return false;  // it ended (or never came): nothing to stop
  if (s.approved_stop) return Unexpected{"workload " + key + " is already being stopped on an approved reclaim"};
  s.approved_stop = true;
  actor_ = actor;
  if (!holds_gpus(s.state)) {
    stop_approved_workload(s, now_, approval);
  } else if (s.reclaim >= 0) {
    // Under a lender's notice already: that notice's checkpoint or grace stops it, and
    // stop_victim deactivates it instead of requeuing it.
  } else {
    // The controller's grace for an approved reclaim: the group's own reclaimPolicy, else
    // the guardrails' maxGracePeriod.
    const Quota& q = quotas_[at(s.quota)];
    const std::int64_t grace_ms =
        q.graceful ? q.grace_ms : guardrails_ != nullptr ? guardrails_->max_grace_period.milliseconds() : 0;
    Event n = workload_event(s, now_, "ReclaimNoticeSent", "ReclaimApproved",
                             approval + ": " + key + " (" + std::to_string(s.gpus) + " GPUs of " + q.pool_name +
                                 ") is asked to checkpoint and stops within " + std::to_string(grace_ms / 1000) + " s");
    n.numbers = {{"gpus", s.gpus}, {"graceSeconds", grace_ms / 1000}};
    event(std::move(n));
    if (s.state != State::Running || grace_ms == 0) {
      stop_approved_workload(s, now_, s.state == State::Running ? "no grace period" : "not running yet");
    } else {
      if (s.w->checkpointable) {
        s.frozen_progress = progress(s, now_);
        s.frozen = true;
        ++s.version;  // its Finish no longer holds: progress stopped while it saves
        Event c = workload_event(s, now_, "CheckpointRequested", "ReclaimApproved",
                                 "Workload " + s.key + " is asked to checkpoint within " + std::to_string(grace_ms / 1000) +
                                     " s");
        c.numbers = {{"progressSeconds", s.frozen_progress / 1000},
                     {"checkpointDurationSeconds", s.w->checkpoint_duration.milliseconds() / 1000}};
        event(std::move(c));
        const VirtualTime done = now_ + s.w->checkpoint_duration.milliseconds();
        if (done < now_ + grace_ms) schedule(done, Timer::Kind::CheckpointDone, index);
      }
      schedule(now_ + grace_ms, Timer::Kind::GraceEnd, index);
    }
  }
  actor_.clear();
  if (auto settled = settle_now(); !settled) return Unexpected{settled.error()};
  return true;
}

Expected<bool> Engine::downgrade_approved(const std::string& key, const std::string& priority_class,
                                          const std::string& approval, const std::string& actor) {
  if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
  const auto it = sim_index_.find(key);
  if (it == sim_index_.end()) return Unexpected{"no workload " + key};
  const policy::PriorityRule* rule = guardrails_ != nullptr ? guardrails_->find_priority(priority_class) : nullptr;
  if (rule == nullptr) return Unexpected{"priority class " + priority_class + " is not in the guardrails"};
  if (!rule->preemptible) {
    return Unexpected{"priority class " + priority_class + " is preemptible: false, so a downgrade to it would free nothing"};
  }
  Sim& s = sims_[at(it->second)];
  // Only a workload holding quota has an admitted Workload whose priority matters now.
  if (!holds_gpus(s.state) || s.approved_stop) return false;
  const std::int32_t from = s.priority;
  if (from <= rule->value) {
    // What the controller skips (and logs) on a cluster: a "downgrade" that lowers nothing.
    actor_ = actor;
    Event e = workload_event(s, now_, "DowngradeSkipped", "DowngradeApproved",
                             approval + ": " + key + " stays at priority " + std::to_string(from) + ", not above " +
                                 priority_class + "'s " + std::to_string(rule->value));
    e.numbers = {{"priorityClass", priority_class}, {"priority", rule->value}, {"fromPriority", from}};
    event(std::move(e));
    actor_.clear();
    return false;
  }
  if (auto changed = core_->set_priority(s.id, rule->value); !changed) return Unexpected{changed.error()};
  s.priority = rule->value;
  s.preemptible = true;
  actor_ = actor;
  Event e = workload_event(s, now_, "WorkloadDowngraded", "DowngradeApproved",
                           approval + ": " + key + " (" + std::to_string(s.gpus) + " GPUs) moves from priority " +
                               std::to_string(from) + " to " + priority_class + " (" + std::to_string(rule->value) +
                               "); it keeps running, preemptible by work above it");
  e.numbers = {{"gpus", s.gpus}, {"priorityClass", priority_class}, {"priority", rule->value}, {"fromPriority", from}};
  event(std::move(e));
  actor_.clear();
  if (auto settled = settle_now(); !settled) return Unexpected{settled.error()};
  return true;
}

Expected<bool> Engine::change_policies(const policy::PolicySet& next, const std::string& reason, const std::string& actor) {
  if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
  const policy::PolicySet& current = changed_sets_.empty() ? policies_ : changed_sets_.back();
  // Only GPUQuotaPolicies' numbers change in place: everything else is what the run was
  // built from (pools, groups, the day's work, the serving and tidal controllers, leases).
  const auto before = canonical_objects(current);
  const auto after = canonical_objects(next);
  constexpr std::string_view kNextStart =
      " applies at the next start of the run (the running twin changes GPUQuotaPolicies' quotas in place)";
  for (const auto& [name, text] : after) {
    const auto it = before.find(name);
    if (it == before.end()) return Unexpected{name + ": a new object" + std::string(kNextStart)};
    if (it->second != text && !name.starts_with("GPUQuotaPolicy/")) return Unexpected{name + ": the change" + std::string(kNextStart)};
  }
  for (const auto& [name, text] : before) {
    if (!after.contains(name)) return Unexpected{name + ": its removal" + std::string(kNextStart)};
  }
  // The limits `gpubank render` derives, read back as the setup reads them.
  kueue::ObjectSet objects;
  Diagnostics problems;
  for (const auto& o : render::render_kueue(next)) {
    const doc::Node node = doc::from_json(nlohmann::json::parse(o.manifest.dump()));
    kueue::decode_object(node, kueue::Source{o.path, 0, -1, {}, {}}, objects, problems);
  }
  for (const auto& d : problems) {
    if (d.severity == Severity::Error) return Unexpected{"the changed policies do not render: " + d.to_string()};
  }
  const kueue::CoreInputs inputs = kueue::core_inputs(objects);
  struct Change {
    int quota = -1;
    const policy::GPUQuotaPolicySpec* spec = nullptr;  // in `next`, re-pointed once it is kept
    std::size_t index = 0;                              // of its object in next.policies()
    std::optional<Amount> borrowing_limit, lending_limit;
  };
  std::vector<Change> changes;
  for (std::size_t i = 0; i < next.policies().size(); ++i) {
    const policy::PolicyObject& o = next.policies()[i];
    if (o.kind != policy::Kind::GPUQuotaPolicy) continue;
    const auto& spec = o.as<policy::GPUQuotaPolicySpec>();
    const auto qi = quota_index_.find({spec.business_group, spec.resource_pool});
    if (qi == quota_index_.end()) {
      return Unexpected{"GPUQuotaPolicy/" + o.name() + ": its group or pool changed, which" + std::string(kNextStart)};
    }
    const Quota& q = quotas_[at(qi->second)];
    const bool graceful = spec.reclaim_policy && spec.reclaim_policy->grace_period.has_value();
    if (graceful != q.graceful) {
      return Unexpected{"GPUQuotaPolicy/" + o.name() + ": a reclaimPolicy grace added or removed changes the ClusterQueue's "
                        "preemption, which" + std::string(kNextStart)};
    }
    Change c{qi->second, &spec, i, std::nullopt, std::nullopt};
    for (const auto& cq : inputs.queues) {
      if (cq.name != q.cq) continue;
      for (const auto& g : cq.resource_groups) {
        for (const auto& f : g.flavors) {
          for (const auto& r : f.resources) {
            if (f.flavor == pools_[at(q.pool)].flavor && r.resource == pools_[at(q.pool)].resource) {
              c.borrowing_limit = r.borrowing_limit;
              c.lending_limit = r.lending_limit;
            }
          }
        }
      }
    }
    changes.push_back(c);
  }
  if (changes.size() != quotas_.size()) return Unexpected{"a GPUQuotaPolicy removed" + std::string(kNextStart)};

  // Kept from here on: the quotas' specs point into it.
  changed_sets_.push_back(next.policies_only());
  const policy::PolicySet& kept = changed_sets_.back();
  std::string canonical;
  for (const auto& p : kept.policies()) canonical += render::canonical_text(p) + "\n";
  actor_ = actor;
  for (const Change& c : changes) {
    Quota& q = quotas_[at(c.quota)];
    Pool& pool = pools_[at(q.pool)];
    const auto& spec = kept.policies()[c.index].as<policy::GPUQuotaPolicySpec>();
    // What the core holds while sync_quotas never pushed this queue: the rendered quota.
    if (!q.applied) q.applied = ResourceQuota{pool.resource, q.spec->guaranteed, q.borrowing_limit, q.lending_limit};
    const std::int64_t was_guaranteed = q.guaranteed;
    const auto was_borrowing = q.borrowing_limit, was_lending = q.lending_limit;
    const std::int64_t was_grace = q.grace_ms;
    const std::vector<std::string> was_traits = q.lend_only_to;
    const std::int64_t delta = spec.guaranteed - q.spec->guaranteed;  // leases in force keep their extra
    q.guaranteed += delta;
    pool.guaranteed += delta;
    q.borrowing_limit = c.borrowing_limit;
    q.lending_limit = c.lending_limit;
    q.grace_ms = q.graceful ? spec.reclaim_policy->grace_period->milliseconds() : 0;
    q.lend_only_to.clear();
    if (spec.reclaim_policy) {
      for (auto t : spec.reclaim_policy->only_preempt) q.lend_only_to.push_back(trait_name(t));
    }
    q.spec = &spec;
    if (delta == 0 && was_borrowing == q.borrowing_limit && was_lending == q.lending_limit && was_grace == q.grace_ms &&
        was_traits == q.lend_only_to) {
      continue;
    }
    pool.touch();
    ledger_quota(q, now_, "PolicyChangeApplied");
    Event e;
    e.t = now_;
    e.kind = "QuotaChanged";
    e.object = "GPUQuotaPolicy/" + kept.policies()[c.index].name();
    e.business_group = q.group;
    e.pool = q.pool_name;
    e.queue = q.cq;
    e.reason = "PolicyChangeApplied";
    e.message = reason + ": " + q.group + " in " + q.pool_name + " now guaranteed " + std::to_string(q.guaranteed) +
                " (was " + std::to_string(was_guaranteed) + "), borrowingLimit " + limit_text(q.borrowing_limit) + " (was " +
                limit_text(was_borrowing) + "), lendingLimit " + limit_text(q.lending_limit) + " (was " +
                limit_text(was_lending) + ")";
    e.numbers = {{"guaranteed", q.guaranteed}, {"previousGuaranteed", was_guaranteed}};
    if (q.borrowing_limit) e.numbers["borrowingLimit"] = *q.borrowing_limit;
    if (q.lending_limit) e.numbers["lendingLimit"] = *q.lending_limit;
    if (q.graceful) e.numbers["graceSeconds"] = q.grace_ms / 1000;
    event(std::move(e));
  }
  actor_.clear();
  result_.policy_version = render::sha256_hex(canonical);
  sync_quotas();
  if (auto settled = settle_now(); !settled) return Unexpected{settled.error()};
  return true;
}

Expected<bool> Engine::reserve(const std::string& group, const std::string& pool, std::int64_t gpus,
                               std::optional<std::int64_t> grace_ms, const std::string& reason, const std::string& actor,
                               int piece) {
  if (!started_ || !ok_) return Unexpected{std::string("the run is not going")};
  const auto it = quota_index_.find({group, pool});
  if (it == quota_index_.end()) return Unexpected{"no GPUQuotaPolicy gives " + group + " quota in " + pool};
  if (gpus < 0) return Unexpected{std::string("a reservation is at least 0 GPUs")};
  if (piece < 1) return Unexpected{std::string("a reservation's piece is at least 1 GPU")};
  Quota& q = quotas_[at(it->second)];
  if (q.reserved == gpus && q.reserve_grace_ms == grace_ms && q.reserve_piece == piece) return false;
  const std::int64_t before = q.reserved;
  q.reserved = gpus;
  q.reserve_piece = piece;
  q.reserve_grace_ms = grace_ms;
  q.reserve_reason = reason;
  pools_[at(q.pool)].touch();
  Event e = lender_event(group, pool, q.cq, now_, "CapacityReserved", gpus > 0 ? "Reserved" : "Released",
                         group + " reserves " + std::to_string(gpus) + " of its " + std::to_string(q.guaranteed) +
                             " guaranteed GPUs in " + pool +
                             (piece > 1 && gpus > 0 ? " in pieces of " + std::to_string(piece) + " GPUs on one node" : "") +
                             " (was " + std::to_string(before) + "): " + reason);
  e.numbers = {{"reserved", gpus}, {"before", before}, {"guaranteed", q.guaranteed}, {"used", q.used}};
  if (piece > 1) e.numbers["pieceGpus"] = piece;
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
