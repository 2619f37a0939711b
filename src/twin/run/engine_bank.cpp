// The engine's bank side: borrow attribution, refused borrowing, graceful reclaim, the
// quotas the bank keeps in step, and capacity leases (engine_internal.hpp).
#include "twin/run/engine_internal.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "serving/capacity.hpp"

namespace gpubank::twin::run::detail {

// ---- attribution ------------------------------------------------------------------------------

void Engine::attribute(VirtualTime now) {
  for (auto& pool : pools_) {
    if (!pool.attribution_dirty) continue;
    pool.attribution_dirty = false;
    // Borrow records exist only for usage above a guarantee: with nobody above theirs and
    // no record open, there is nothing to attribute (and no O(running) walk per instant).
    bool above = false;
    for (int qi : pool.quotas) above = above || quotas_[at(qi)].used > quotas_[at(qi)].guaranteed;
    if (!above && pool.tracker->open().empty()) {
      pool.ended.clear();
      continue;
    }
    std::vector<bank::RunningWorkload> storage;
    const auto changes =
        pool.tracker->update_from_usage(now, attribution_quotas(pool), attribution_usage(pool, storage), pool.ended);
    pool.ended.clear();
    if (!changes.empty()) pool.reclaim_dirty = true;
    for (const auto& c : changes) borrow_change(pool, c, now);
  }
}

std::vector<bank::PoolGroupQuota> Engine::attribution_quotas(const Pool& pool) const {
  std::vector<bank::PoolGroupQuota> quotas;
  for (int qi : pool.quotas) {
    const Quota& q = quotas_[at(qi)];
    quotas.push_back(bank::PoolGroupQuota{q.group, q.guaranteed, q.lending_limit, q.lend_only_to});
  }
  return quotas;
}

bank::PoolUsage Engine::attribution_usage(const Pool& pool, std::vector<bank::RunningWorkload>& storage) const {
  const auto running = [&](int i) {
    const Sim& s = sims_[at(i)];
    return bank::RunningWorkload{s.key, s.w->business_group, s.gpus, s.admission_seq, traits_of(s)};
  };
  // Each group's newest admissions, back to the first that borrows nothing (no older one
  // does), and the holders of open records. A workload's quota is its group's in the pool
  // (quota_index_ has one per group), so the quota's holdings are the group's.
  std::vector<std::pair<std::int64_t, int>> borrowers;  // (admission_seq, sim), with borrowed GPUs below
  std::map<int, std::int64_t> borrowed;
  bank::PoolUsage usage;
  for (int qi : pool.quotas) {
    const Quota& q = quotas_[at(qi)];
    usage.used[q.group] = q.used;
    std::int64_t after = 0;  // GPUs of the group's later admissions
    for (auto it = q.holding_by_admission.rbegin(); it != q.holding_by_admission.rend(); ++it) {
      const std::int64_t gpus = sims_[at(it->second)].gpus;
      const std::int64_t before = q.used - after - gpus;
      const std::int64_t b = gpus - std::clamp<std::int64_t>(q.guaranteed - before, 0, gpus);
      if (b <= 0) break;
      borrowers.push_back(*it);
      borrowed[it->second] = b;
      after += gpus;
    }
  }
  for (const auto& r : pool.tracker->open()) {
    const auto it = sim_index_.find(r.workload);
    if (it == sim_index_.end() || !pool.holding.contains(it->second) || borrowed.contains(it->second)) continue;
    borrowers.emplace_back(sims_[at(it->second)].admission_seq, it->second);
    borrowed[it->second] = 0;
  }
  std::sort(borrowers.begin(), borrowers.end());
  storage.clear();
  storage.reserve(borrowers.size());
  for (const auto& [seq, i] : borrowers) {
    storage.push_back(running(i));
    usage.borrowing.push_back(bank::Borrowing{&storage.back(), borrowed.at(i)});
  }
  return usage;
}

bool Engine::refuse_borrowing(Sim& s, int index, VirtualTime now) {
  const Quota& q = quotas_[at(s.quota)];
  if (q.used + s.gpus <= q.guaranteed) return false;  // within its guarantee: borrows nothing
  Pool& pool = pools_[at(q.pool)];
  const std::vector<std::string> traits = traits_of(s);
  std::vector<const Quota*> turning_away;
  for (int qi : pool.quotas) {
    const Quota& l = quotas_[at(qi)];
    if (l.group != q.group && !bank::lends_to(l.lend_only_to, traits)) turning_away.push_back(&l);
  }
  if (turning_away.empty()) return false;
  // The attribution as it would be with the workload admitted: it is the newest of its
  // group, so it borrows what it takes above the guarantee and no one else's part changes.
  bank::BorrowTracker trial = *pool.tracker;
  std::vector<bank::RunningWorkload> storage;
  bank::PoolUsage usage = attribution_usage(pool, storage);
  const bank::RunningWorkload admitted{s.key, s.w->business_group, s.gpus, admissions_ + 1, traits};
  usage.borrowing.push_back(bank::Borrowing{&admitted, s.gpus - std::clamp<std::int64_t>(q.guaranteed - q.used, 0, s.gpus)});
  usage.used[q.group] += s.gpus;
  trial.update_from_usage(now, attribution_quotas(pool), usage, pool.ended);
  const std::string cohort = bank::cohort_lender(q.pool_name);
  std::int64_t unlent = 0;
  for (const auto& r : trial.open()) unlent += r.workload == s.key && r.lender == cohort ? r.gpus : 0;
  // The Cohort's own quota (GPUs no one is guaranteed) lends to any workload: only what
  // the pool's borrowers draw from the Cohort beyond it runs on guarantees that turn the
  // workload away.
  unlent = std::min(unlent, std::max<std::int64_t>(0, trial.lent_by(cohort) - pool.cohort_quota));
  if (unlent == 0) return false;
  std::string idle_lenders;
  for (const Quota* l : turning_away) {
    std::int64_t lendable = std::max<std::int64_t>(0, l->guaranteed - l->used);
    if (l->lending_limit) lendable = std::min(lendable, *l->lending_limit);
    if (lendable - trial.lent_by(l->group) > 0) idle_lenders += (idle_lenders.empty() ? "" : ", ") + l->group;
  }
  if (idle_lenders.empty()) return false;  // over-committed for another reason: not the traits
  const std::int64_t backoff = std::min<std::int64_t>(kRequeueBackoffMs << std::min(s.refusals, 6), kRequeueBackoffMaxMs);
  ++s.refusals;
  const std::string message = s.key + " would borrow " + std::to_string(unlent) + " GPUs in " + q.pool_name +
                              " that only " + idle_lenders + " could lend, and they lend only to work with their " +
                              "reclaimPolicy.onlyPreempt traits; requeued in " + std::to_string(backoff / 1000) + " s";
  auto evicted = core_->evict(s.id, "AdmissionCheck", message, now);
  if (!evicted) throw std::logic_error("twin run: " + evicted.error());
  core_->release_evicted(s.id, now);
  end_in_core(s, now);
  ++s.version;
  s.pending_reason.clear();
  set_state(s, State::Requeuing);
  schedule(now + backoff, Timer::Kind::Resubmit, index);
  Event e = workload_event(s, now, "BorrowRefused", "OnlyPreempt", message);
  e.numbers = {{"gpus", s.gpus}, {"unlent", unlent}, {"requeueBackoffSeconds", backoff / 1000}};
  for (const Quota* l : turning_away) e.related.push_back("BusinessGroup/" + l->group);
  event(std::move(e));
  core_changed_ = true;
  return true;
}

void Engine::borrow_change(Pool& pool, const bank::BorrowChange& c, VirtualTime now) {
  const bool opened = c.kind == bank::BorrowChange::Kind::Opened;
  if (!opened) loan_closed(pool, c.record, now);
  bank::LedgerEntry e;
  e.time_ms = now;
  e.kind = opened ? bank::LedgerKind::BorrowOpened : bank::LedgerKind::BorrowClosed;
  e.pool = pool.pool->name;
  e.flavor = pool.flavor;
  e.business_group = c.record.borrower;
  e.lender = c.record.lender;
  e.workload = c.record.workload;
  e.record = c.record.id;
  e.gpus = c.record.gpus;
  e.reason = opened ? "" : c.close_reason;
  ledger(std::move(e));
  Event ev;
  ev.t = now;
  ev.kind = opened ? "BorrowStarted" : "BorrowEnded";
  ev.object = "Workload/" + c.record.workload;
  ev.business_group = c.record.borrower;
  ev.pool = pool.pool->name;
  ev.reason = opened ? "Borrowing" : c.close_reason;
  ev.message = opened ? c.record.workload + " borrows " + std::to_string(c.record.gpus) + " GPUs of " +
                            c.record.lender + "'s unused guarantee in " + pool.pool->name
                      : c.record.workload + " no longer borrows " + std::to_string(c.record.gpus) +
                            " GPUs from " + c.record.lender + " (" + c.close_reason + ")";
  ev.numbers = {{"gpus", c.record.gpus}, {"record", c.record.id}};
  if (!opened) ev.numbers["gpuHours"] = gpu_hours((now - c.record.start) * c.record.gpus);
  ev.related = {"BusinessGroup/" + c.record.lender};
  event(std::move(ev));
}

void Engine::loan_closed(const Pool& pool, const bank::Loan& record, VirtualTime now) {
  const std::int64_t gpu_ms = record.gpus * (now - record.start);
  for (int qi : pool.quotas) {
    Quota& q = quotas_[at(qi)];
    if (q.group == record.borrower) q.borrowed_gpu_ms += gpu_ms;
    if (q.group == record.lender) q.lent_gpu_ms += gpu_ms;
  }
}

// ---- reclaim ----------------------------------------------------------------------------------

void Engine::reclaim(VirtualTime now) {
  std::vector<char> changed(pools_.size(), 0);
  for (std::size_t p = 0; p < pools_.size(); ++p) {
    changed[p] = pools_[p].reclaim_dirty ? 1 : 0;
    pools_[p].reclaim_dirty = false;
  }
  for (std::size_t qi = 0; qi < quotas_.size(); ++qi) {
    Quota& q = quotas_[qi];
    if ((!q.graceful && q.reserved == 0) || !changed[at(q.pool)]) continue;
    Pool& pool = pools_[at(q.pool)];
    const std::int64_t used = q.used;
    // Lender demand: pending workloads that fit within the guarantee, in queue order. A
    // group at or above its guarantee has none (and a backed-up queue is not sorted for it).
    std::int64_t demand = 0;
    if (used < q.guaranteed) {
      std::vector<const Sim*> pending;
      for (int i : q.pending) pending.push_back(&sims_[at(i)]);
      std::sort(pending.begin(), pending.end(), [](const Sim* a, const Sim* b) {
        if (a->priority != b->priority) return a->priority > b->priority;
        return a->id < b->id;
      });
      for (const Sim* s : pending) {
        if (used + demand >= q.guaranteed) break;  // nothing more fits
        if (used + demand + s->gpus <= q.guaranteed) demand += s->gpus;
      }
    }
    // A reservation is demand too: the part of it not yet in use by the group.
    const std::int64_t reserve_demand = std::max<std::int64_t>(0, std::min(q.reserved, q.guaranteed) - used);
    const bool reserving = reserve_demand > demand;
    demand = std::max(demand, reserve_demand);
    const auto figures = core_->figures(q.cq, pool.flavor, pool.resource);
    const std::int64_t available = figures ? figures->available : 0;
    int active = q.active_reclaim;
    // A reservation in replica shapes also needs its pieces on nodes (victims under notice
    // count as freed).
    const int short_pieces = reserve_demand > 0 ? pieces_short(q, active) : 0;
    if (demand == 0 || (demand <= available && short_pieces == 0)) {
      blocked_.erase(qi);
      if (active >= 0) end_reclaim(active, now, demand == 0 ? "the lender no longer waits for capacity within its guarantee"
                                                            : "the lender's demand fits in what is free");
      continue;
    }
    std::int64_t in_flight = 0;
    if (active >= 0) {
      for (const auto& v : result_.reclaims[at(active)].victims) {
        if (!v.stopped && !v.finished && !v.released) in_flight += v.gpus;
      }
    }
    const std::int64_t need = demand - available - in_flight;
    if (need <= 0 && short_pieces == 0) continue;
    std::vector<bank::VictimCandidate> candidates;
    // Never taken: protected types, Protection leases, non-preemptible classes, and on
    // what this lender lent, work without its onlyPreempt traits (attribution never lends
    // it such work; what nobody guarantees is taken back whatever its traits).
    std::vector<std::string> shielded;
    const std::vector<std::string> any_trait;
    std::set<std::string> seen;
    // What this lender lent, then what nobody's guarantee covers (usage left above the
    // guarantees when a TemporaryQuota lease expired).
    auto records = pool.tracker->lent_records(q.group);
    for (const auto& r : pool.tracker->lent_records(bank::cohort_lender(q.pool_name))) records.push_back(r);
    for (const auto& record : records) {
      if (!seen.insert(record.workload).second) continue;
      const int si = sim_index_.at(record.workload);
      const Sim& s = sims_[at(si)];
      // Admitted and not on nodes yet (Placing) holds the lent quota as much as running
      // work does: a NotRunning victim, the first to go.
      if (s.reclaim >= 0 || s.approved_stop || !holds_gpus(s.state)) continue;
      bank::VictimFacts facts;
      facts.running = s.state == State::Running;
      facts.checkpointable = s.w->checkpointable;
      facts.development = s.w->workload_type == policy::WorkloadType::Notebook;
      facts.expected_runtime = s.w->run_time.milliseconds();
      bank::VictimCandidate c;
      c.workload = s.key;
      c.gpus = s.gpus;
      c.klass = bank::classify(facts);
      c.priority = s.priority;
      c.checkpoint_age = s.state == State::Running ? progress(s, now) - last_periodic(s, progress(s, now)) : 0;
      c.admitted_at = s.admission_seq;
      c.protected_ = s.protected_ || lease_protects(s);
      c.preemptible = s.preemptible;
      c.traits = traits_of(s);
      if (!bank::eligible_victim(c, record.lender == q.group ? q.lend_only_to : any_trait)) {
        shielded.push_back(c.workload);
        continue;
      }
      candidates.push_back(std::move(c));
    }
    // Pieces first, where they form; the rest of the count (if any) in the bank's order.
    bank::VictimChoice choice;
    bool shaped = false;
    if (short_pieces > 0) {
      if (auto by_shape = shape_victims(q, active, short_pieces, candidates)) {
        choice = std::move(*by_shape);
        shaped = true;
        std::set<std::string> taken;
        for (const auto& v : choice.victims) taken.insert(v.workload);
        std::erase_if(candidates, [&](const bank::VictimCandidate& c) { return taken.contains(c.workload); });
      }
    }
    // Pieces that no reclaim can form (own work in the way) are left to the prewarm's
    // shape check, which says so (ScaleUpBlocked, Fragmented).
    if (!shaped && need <= 0) continue;
    if (need - choice.gpus > 0) {
      auto rest = bank::choose_victims(std::move(candidates), need - choice.gpus);
      for (auto& v : rest.victims) choice.victims.push_back(std::move(v));
      choice.gpus += rest.gpus;
    }
    if (choice.victims.empty()) {
      // Said once per demand: the lender waits and nothing may be taken back for it.
      if (active < 0 && blocked_[qi] != demand) {
        blocked_[qi] = demand;
        std::string who;
        for (const auto& w : shielded) who += (who.empty() ? "" : ", ") + w;
        Event e = lender_event(
            q.group, q.pool_name, q.cq, now, "ReclaimBlocked", shielded.empty() ? "NothingLent" : "BorrowersProtected",
            q.group + " needs " + std::to_string(need) + " more GPUs within its guarantee in " + q.pool_name +
                (shielded.empty() ? (pool.tracker->lent_by(q.group) == 0
                                         ? "; none of its GPUs are lent out: they are in use by itself or over-committed"
                                         : "; the " + std::to_string(pool.tracker->lent_by(q.group)) +
                                               " GPUs it lent are already being returned")
                                  : "; what it lent runs protected work (" + who +
                                        "): it waits until that ends or its protection expires"));
        e.numbers = {{"demand", demand}, {"available", available}, {"need", need},
                     {"lent", pool.tracker->lent_by(q.group)}};
        for (const auto& w : shielded) e.related.push_back("Workload/" + w);
        event(std::move(e));
      }
      continue;
    }
    blocked_.erase(qi);
    if (active < 0) {
      ReclaimTimeline r;
      r.id = "reclaim-" + std::to_string(result_.reclaims.size() + 1);
      r.lender = q.group;
      r.pool = q.pool_name;
      r.demand = demand;
      r.started = now;
      r.result = "InProgress";
      result_.reclaims.push_back(std::move(r));
      active = static_cast<int>(result_.reclaims.size()) - 1;
      q.active_reclaim = active;
      ++q.reclaims;
      pool.touch();
      Event e = lender_event(q.group, q.pool_name, q.cq, now, "ReclaimStarted",
                             reserving || shaped ? "Reservation" : "LenderDemand",
                             q.group + " needs " + std::to_string(demand) + " GPUs within its guarantee of " +
                                 std::to_string(q.guaranteed) + " in " + q.pool_name + "; " + std::to_string(available) +
                                 " are free and " + std::to_string(pool.tracker->lent_by(q.group)) +
                                 " are lent out: reclaiming, no new borrowing in the pool until it is over" +
                                 (reserving || shaped ? " (reserved: " + q.reserve_reason + ")" : "") +
                                 (shaped ? "; " + std::to_string(short_pieces) + " more " +
                                               (short_pieces == 1 ? "replica needs " : "replicas need ") +
                                               std::to_string(q.reserve_piece) +
                                               " GPUs on one node, so borrowers are taken back where that frees a node's piece"
                                         : ""));
      e.numbers = {{"demand", demand}, {"available", available}, {"lent", pool.tracker->lent_by(q.group)},
                   {"guaranteed", q.guaranteed}, {"used", used}, {"reclaiming", choice.gpus},
                   {"shortfall", std::max<std::int64_t>(0, need - choice.gpus)}};
      if (short_pieces > 0) {
        e.numbers["pieceGpus"] = q.reserve_piece;
        e.numbers["piecesShort"] = short_pieces;
      }
      e.related = {"ReclaimTimeline/" + result_.reclaims[at(active)].id};
      event(std::move(e));
    } else {
      result_.reclaims[at(active)].demand = std::max(result_.reclaims[at(active)].demand, demand);
    }
    for (const auto& v : choice.victims) notice(active, sim_index_.at(v.workload), v, now);
  }
  sync_quotas();
}

namespace {

std::map<cluster::NodeId, int> gpus_by_node(const cluster::Cluster& c, const std::string& workload) {
  std::map<cluster::NodeId, int> out;
  if (const cluster::Placement* p = c.placement_of(workload); p != nullptr) {
    for (const auto& pod : p->pods) out[pod.node] += static_cast<int>(pod.units.size());
  }
  return out;
}

}  // namespace

std::map<cluster::NodeId, int> Engine::freed_by_notices(int active) const {
  std::map<cluster::NodeId, int> freed;
  if (active < 0 || !cluster_) return freed;
  for (const auto& v : result_.reclaims[at(active)].victims) {
    if (v.stopped || v.finished || v.released) continue;
    for (const auto& [node, gpus] : gpus_by_node(*cluster_, v.workload)) freed[node] += gpus;
  }
  return freed;
}

int Engine::pieces_short(const Quota& q, int active) const {
  if (q.reserve_piece <= 1 || !cluster_) return 0;
  const std::int64_t uncovered = std::max<std::int64_t>(0, std::min(q.reserved, q.guaranteed) - q.used);
  const auto pieces_needed = static_cast<int>((uncovered + q.reserve_piece - 1) / q.reserve_piece);
  if (pieces_needed == 0) return 0;
  std::map<cluster::NodeId, int> freed = freed_by_notices(active);
  int pieces = 0;
  for (cluster::NodeId n = 0; n < cluster_->node_count(); ++n) {
    if (cluster_->node(n).pool() != q.pool_name) continue;
    pieces += (cluster_->node_free(n) + freed[n]) / q.reserve_piece;
  }
  return std::max(0, pieces_needed - pieces);
}

std::optional<bank::VictimChoice> Engine::shape_victims(const Quota& q, int active, int pieces,
                                                        const std::vector<bank::VictimCandidate>& candidates) const {
  if (!cluster_ || pieces <= 0) return std::nullopt;
  std::map<cluster::NodeId, int> freed = freed_by_notices(active);
  std::map<cluster::NodeId, std::vector<std::pair<const bank::VictimCandidate*, int>>> on_node;
  for (const auto& c : candidates) {
    for (const auto& [node, gpus] : gpus_by_node(*cluster_, c.workload)) on_node[node].emplace_back(&c, gpus);
  }
  serving::PoolCapacity pool;
  pool.pool = q.pool_name;
  std::map<std::string, cluster::NodeId> by_name;
  int held_total = 0;
  for (cluster::NodeId n = 0; n < cluster_->node_count(); ++n) {
    if (cluster_->node(n).pool() != q.pool_name) continue;
    serving::NodeCapacity nc;
    nc.name = cluster_->node(n).name;
    nc.gpus = cluster_->node_units(n);
    nc.free = cluster_->node_free(n) + freed[n];
    const auto first = cluster_->node_first_unit(n);
    for (int u = 0; u < nc.gpus; ++u) nc.unhealthy += cluster_->unit(first + static_cast<cluster::UnitId>(u)).healthy ? 0 : 1;
    for (const auto& [c, gpus] : on_node[n]) nc.held_by_borrowers += gpus;
    held_total += nc.held_by_borrowers;
    by_name[nc.name] = n;
    pool.nodes.push_back(std::move(nc));
  }
  // Only the shape is asked here: the quota was checked by the count.
  pool.quota.guaranteed = pool.quota.max_capacity = pieces * q.reserve_piece;
  pool.quota.lent = held_total;
  serving::ShapeRequest request;
  request.service = q.group;
  request.shape.tensor_parallel_size = 1;
  request.shape.gpu_per_replica = q.reserve_piece;
  request.replicas = pieces;
  const auto decision = serving::check_shape(request, pool);
  if (decision.outcome != serving::ShapeOutcome::FitsAfterReclaim) return std::nullopt;
  bank::VictimChoice out;
  std::set<std::string> taken;
  for (const auto& ask : decision.reclaim) {
    const cluster::NodeId n = by_name.at(ask.node);
    // This node's candidates, each counted by the GPUs it holds here, in the bank's order.
    std::vector<bank::VictimCandidate> here;
    int already = 0;  // freed here by victims taken for an earlier node
    for (const auto& [c, gpus] : on_node[n]) {
      if (taken.contains(c->workload)) {
        already += gpus;
        continue;
      }
      bank::VictimCandidate local = *c;
      local.gpus = gpus;
      here.push_back(std::move(local));
    }
    if (already >= ask.gpus) continue;
    const auto choice = bank::choose_victims(std::move(here), ask.gpus - already);
    if (!choice.covers) return std::nullopt;
    for (const auto& v : choice.victims) {
      taken.insert(v.workload);
      const auto original = std::find_if(candidates.begin(), candidates.end(),
                                         [&](const bank::VictimCandidate& c) { return c.workload == v.workload; });
      out.victims.push_back(*original);
      out.gpus += original->gpus;
    }
  }
  out.covers = true;
  return out;
}

void Engine::notice(int reclaim_index, int index, const bank::VictimCandidate& candidate, VirtualTime now) {
  Sim& s = sims_[at(index)];
  ReclaimTimeline& r = result_.reclaims[at(reclaim_index)];
  const Quota& lender = quotas_[at(quota_index_.at({r.lender, r.pool}))];
  // A reservation's grace (the tidal policy's) applies while the lender reserves.
  const std::int64_t grace_ms = lender.reserved > 0 && lender.reserve_grace_ms ? *lender.reserve_grace_ms : lender.grace_ms;
  VictimTimeline v;
  v.workload = s.key;
  v.gpus = s.gpus;
  v.victim_class = std::string(bank::victim_class_name(candidate.klass));
  v.notice = now;
  r.victims.push_back(v);
  s.reclaim = reclaim_index;
  s.victim = static_cast<int>(r.victims.size()) - 1;
  touch_pool_of(s);
  Event e = workload_event(s, now, "ReclaimNoticeSent", "ReclaimNotice",
                           "Workload " + s.key + " runs on " + std::to_string(s.gpus) + " GPUs lent by " + r.lender +
                               ", who needs them back: " + std::to_string(grace_ms / 1000) +
                               " s of grace (class " + v.victim_class + ")");
  e.numbers = {{"gpus", s.gpus}, {"graceSeconds", grace_ms / 1000}};
  e.related = {"BusinessGroup/" + r.lender};
  event(std::move(e));
  if (s.state == State::Starting || s.state == State::Placing || grace_ms == 0) {
    stop_victim(s, now, s.state == State::Placing    ? "its pods were not placed yet"
                        : s.state == State::Starting ? "not running yet"
                                                     : "no grace period");
    return;
  }
  if (s.w->checkpointable) {
    s.frozen_progress = progress(s, now);
    s.frozen = true;
    ++s.version;  // its Finish no longer holds: progress stopped while it saves
    r.victims.back().checkpoint_requested = now;
    Event c = workload_event(s, now, "CheckpointRequested", "ReclaimNotice",
                             "Workload " + s.key + " is asked to checkpoint within " +
                                 std::to_string(grace_ms / 1000) + " s");
    c.numbers = {{"progressSeconds", s.frozen_progress / 1000},
                 {"checkpointDurationSeconds", s.w->checkpoint_duration.milliseconds() / 1000}};
    event(std::move(c));
    const VirtualTime done = now + s.w->checkpoint_duration.milliseconds();
    if (done < now + grace_ms) schedule(done, Timer::Kind::CheckpointDone, index);
  }
  schedule(now + grace_ms, Timer::Kind::GraceEnd, index);
}

void Engine::end_reclaim(int index, VirtualTime now, const std::string& why) {
  ReclaimTimeline& r = result_.reclaims[at(index)];
  bool any_stopped = false;  // or finished: either way GPUs came back
  for (auto& v : r.victims) {
    if (v.stopped || v.finished) any_stopped = true;
    if (v.stopped || v.finished || v.released) continue;
    v.released = now;
    Sim& s = sims_[at(sim_index_.at(v.workload))];
    if (s.frozen) {  // back to work from where it paused
      s.base = s.frozen_progress;
      s.frozen = false;
      s.running_since = now;
      ++s.version;
      schedule_finish(s, sim_index_.at(v.workload), now);
    }
    s.reclaim = s.victim = -1;
    touch_pool_of(s);
    Event e = workload_event(s, now, "ReclaimNoticeWithdrawn", "NoLongerNeeded",
                             "Workload " + s.key + " keeps running: " + why);
    e.related = {"BusinessGroup/" + r.lender};
    event(std::move(e));
  }
  r.ended = now;
  r.result = any_stopped ? "Completed" : "Cancelled";
  Quota& lender = quotas_[at(quota_index_.at({r.lender, r.pool}))];
  lender.active_reclaim = -1;
  pools_[at(lender.pool)].touch();
  Event e = lender_event(r.lender, r.pool, lender.cq, now, any_stopped ? "ReclaimCompleted" : "ReclaimCancelled",
                         any_stopped ? "CapacityReturned" : "DemandGone",
                         "Reclaim " + r.id + " for " + r.lender + " in " + r.pool + " is over after " +
                             std::to_string((now - r.started) / 1000) + " s: " + why);
  std::int64_t stopped = 0;
  for (const auto& v : r.victims) stopped += v.stopped ? v.gpus : 0;
  e.numbers = {{"durationSeconds", (now - r.started) / 1000}, {"gpusStopped", stopped},
               {"victims", static_cast<std::int64_t>(r.victims.size())}};
  e.related = {"ReclaimTimeline/" + r.id};
  event(std::move(e));
}

void Engine::sync_quotas() {
  for (auto& pool : pools_) {
    std::set<std::string> reclaiming;
    for (int qi : pool.quotas) {
      if (quotas_[at(qi)].active_reclaim >= 0) reclaiming.insert(quotas_[at(qi)].group);
    }
    for (int qi : pool.quotas) {
      Quota& q = quotas_[at(qi)];
      ResourceQuota rq;
      rq.resource = pool.resource;
      rq.nominal = q.guaranteed;
      rq.lending_limit = q.lending_limit;
      rq.borrowing_limit = q.borrowing_limit;
      if (q.borrow_cap) rq.borrowing_limit = std::min(rq.borrowing_limit.value_or(*q.borrow_cap), *q.borrow_cap);
      if (!reclaiming.empty() && !reclaiming.contains(q.group)) rq.borrowing_limit = 0;
      // A reservation is not lent out (a controller lowers the lender's lendingLimit), or
      // what a reclaim freed would be borrowed again at once.
      if (q.reserved > 0) {
        const Amount lendable = std::max<Amount>(0, q.guaranteed - std::min(q.reserved, q.guaranteed));
        rq.lending_limit = std::min(rq.lending_limit.value_or(lendable), lendable);
      }
      if (q.applied && q.applied->nominal == rq.nominal && q.applied->borrowing_limit == rq.borrowing_limit &&
          q.applied->lending_limit == rq.lending_limit) {
        continue;
      }
      if (!q.applied && rq.nominal == q.spec->guaranteed && rq.borrowing_limit == q.borrowing_limit &&
          rq.lending_limit == q.lending_limit) {
        q.applied = rq;  // what the rendered ClusterQueue already says
        continue;
      }
      auto set = core_->set_quota(q.cq, pool.flavor, rq);
      if (!set) throw std::logic_error("twin run: " + set.error());
      q.applied = rq;
      core_changed_ = true;
      pool.touch();
    }
  }
  // What a controller keeps each Cohort at: a lease's extra guarantee comes out of what no
  // one is guaranteed, so the pool's quota tree still adds up to its capacity.
  const auto active = active_leases();
  for (auto& pool : pools_) {
    const Amount cohort = cohort_quota_with(pool, active);
    if (cohort == pool.cohort_quota) continue;
    auto set = core_->set_cohort_quota(pool.pool->name, pool.flavor, ResourceQuota{pool.resource, cohort, {}, {}});
    if (!set) throw std::logic_error("twin run: " + set.error());
    pool.cohort_quota = cohort;
    core_changed_ = true;
    pool.touch();
  }
}

std::vector<const policy::CapacityLeaseSpec*> Engine::active_leases() const {
  std::vector<const policy::CapacityLeaseSpec*> active;
  for (const auto& l : leases_) {
    if (l.active) active.push_back(l.spec);
  }
  return active;
}

// ---- leases -------------------------------------------------------------------------------

Event Engine::lease_event(const Lease& l, VirtualTime now, std::string kind, std::string reason, std::string message) {
  Event e;
  e.t = now;
  e.kind = std::move(kind);
  e.object = "CapacityLease/" + l.object->name();
  e.business_group = l.spec->business_group;
  e.pool = l.spec->resource_pool;
  e.queue = quotas_[at(l.quota)].cq;
  e.reason = std::move(reason);
  e.message = std::move(message);
  return e;
}

void Engine::lease_requested(int index, VirtualTime now) {
  const Lease& l = leases_[at(index)];
  Event e = lease_event(l, now, "LeaseRequested", l.spec->type == policy::LeaseType::Protection ? "Protection" : "TemporaryQuota",
                        l.decision->requested_by.username + " requests " + l.object->name() + ": " + l.spec->reason);
  e.numbers = {{"startMs", l.start}, {"endMs", l.end}};
  if (l.spec->extra_guaranteed) e.numbers["extraGuaranteed"] = *l.spec->extra_guaranteed;
  actor_ = "user:" + l.decision->requested_by.username;
  event(std::move(e));
  actor_.clear();
}

void Engine::lease_decided(int index, VirtualTime now) {
  Lease& l = leases_[at(index)];
  const auto& d = *l.decision;
  actor_ = "user:" + d.decided_by.username;
  auto reject = [&](std::string reason, std::string message, Json numbers = Json::object()) {
    Event e = lease_event(l, now, "LeaseRejected", std::move(reason), std::move(message));
    e.numbers = std::move(numbers);
    event(std::move(e));
    actor_.clear();
  };
  if (d.decision == LeaseDecision::Rejected) {
    return reject("RejectedByAdministrator", d.decided_by.username + " rejected " + l.object->name() +
                                                 (d.reason.empty() ? std::string() : ": " + d.reason));
  }
  if (!policy::is_platform_admin(policy::UserInfo{d.decided_by.username, d.decided_by.groups}, *guardrails_)) {
    return reject("NotAPlatformAdministrator",
                  d.decided_by.username + " is not a platform administrator; only they approve leases");
  }
  if (l.end <= now) return reject("AlreadyOver", l.object->name() + " ends before it could be approved");
  const std::int64_t max_ms = guardrails_->max_lease_duration.milliseconds();
  if (l.end - l.start > max_ms) {
    return reject("TooLong", l.object->name() + " lasts longer than the guardrails' maxLeaseDuration",
                  {{"durationMs", l.end - l.start}, {"maxMs", max_ms}});
  }
  if (l.spec->type == policy::LeaseType::TemporaryQuota) {
    const std::int64_t extra = l.spec->extra_guaranteed.value_or(0);
    const Quota& q = quotas_[at(l.quota)];
    const Pool& pool = pools_[at(q.pool)];
    std::int64_t guaranteed = 0;
    for (int qi : pool.quotas) guaranteed += quotas_[at(qi)].spec->guaranteed;
    for (const auto& other : leases_) {
      if (&other == &l || !other.approved || other.spec->type != policy::LeaseType::TemporaryQuota) continue;
      if (quotas_[at(other.quota)].pool != q.pool || other.end <= l.start || other.start >= l.end) continue;
      guaranteed += other.spec->extra_guaranteed.value_or(0);
    }
    const std::int64_t capacity = pool.pool->capacity;
    if (extra <= 0 || guaranteed + extra > capacity) {
      return reject("ExceedsPoolCapacity",
                    "guarantees in " + pool.pool->name + " would be " + std::to_string(guaranteed + extra) + " GPUs of " +
                        std::to_string(capacity) + " with " + l.object->name(),
                    {{"guaranteed", guaranteed}, {"extra", extra}, {"capacity", capacity}});
    }
  }
  l.approved = true;
  Event e = lease_event(l, now, "LeaseApproved", "Approved",
                        d.decided_by.username + " approved " + l.object->name() +
                            (d.reason.empty() ? std::string() : ": " + d.reason));
  e.numbers = {{"startMs", std::max(now, l.start)}, {"endMs", l.end}};
  event(std::move(e));
  actor_.clear();
  schedule_lease(std::max(now, l.start), Timer::Kind::LeaseActivate, index);
  schedule_lease(l.end, Timer::Kind::LeaseExpire, index);
}

void Engine::lease_change(int index, VirtualTime now, bool activate) {
  Lease& l = leases_[at(index)];
  if (l.active == activate) return;
  l.active = activate;
  Quota& q = quotas_[at(l.quota)];
  pools_[at(q.pool)].touch();
  const bool temporary = l.spec->type == policy::LeaseType::TemporaryQuota;
  if (temporary) {
    const std::int64_t extra = l.spec->extra_guaranteed.value_or(0);
    q.guaranteed += activate ? extra : -extra;
    ledger_quota(q, now, activate ? "LeaseActivated" : "LeaseExpired");
  }
  Event e = lease_event(l, now, activate ? "LeaseActivated" : "LeaseExpired", temporary ? "TemporaryQuota" : "Protection",
                        temporary ? q.group + "'s guarantee in " + q.pool_name + " is now " + std::to_string(q.guaranteed) +
                                        " GPUs"
                                  : std::string(activate ? "Workloads it selects are protected from reclaim"
                                                         : "Workloads it selected may be reclaimed again"));
  e.numbers = {{"guaranteed", q.guaranteed}};
  // The GPUs the pool's Cohort holds from now on: the extra guarantee comes out of them.
  if (temporary) e.numbers["cohortQuota"] = cohort_quota_with(pools_[at(q.pool)], active_leases());
  event(std::move(e));
  sync_quotas();
}

bool Engine::lease_protects(const Sim& s) const {
  for (const auto& l : leases_) {
    if (!l.active || l.spec->type != policy::LeaseType::Protection) continue;
    if (l.spec->business_group != s.w->business_group || l.spec->resource_pool != s.w->resource_pool) continue;
    bool all = true;
    if (l.spec->selector) {
      for (const auto& [k, v] : l.spec->selector->match_labels) {
        auto it = s.w->labels.find(k);
        if (it == s.w->labels.end() || it->second != v) all = false;
      }
    }
    if (all) return true;
  }
  return false;
}

}  // namespace gpubank::twin::run::detail
