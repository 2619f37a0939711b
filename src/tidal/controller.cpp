#include "tidal/controller.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

#include <date/tz.h>

#include "core/timestamp.hpp"
#include "policy/tidal_windows.hpp"

namespace gpubank::tidal {
namespace {

using std::chrono::days;
using std::chrono::seconds;

constexpr seconds kSecond{1};
// How far around a requested span occurrences are computed: a week and a day, so every
// weekly window's neighbours are known.
constexpr seconds kMargin = days(8);
// How far a window active at the edge of that span is followed to find its real start or
// end (longer windows are reported as starting or ending there).
constexpr seconds kFollowLimit = days(800);

seconds to_seconds(const Duration& d) {
  return std::max(seconds{0}, std::chrono::ceil<seconds>(d.nanoseconds()));
}

std::string rfc3339(sys_seconds t) { return format_rfc3339(Timestamp{t}); }

std::string limit_text(const std::optional<int>& limit) {
  return limit ? std::to_string(*limit) + " GPUs" : std::string("unlimited");
}

nlohmann::ordered_json limit_json(const std::optional<int>& limit) {
  return limit ? nlohmann::ordered_json(*limit) : nlohmann::ordered_json(nullptr);
}

std::string duration_text(seconds s) { return Duration(s).to_string(); }

}  // namespace

std::string_view event_kind(BoundaryKind kind) {
  switch (kind) {
    case BoundaryKind::WindowEnded: return "TidalWindowEnded";
    case BoundaryKind::Approaching: return "TidalWindowApproaching";
    case BoundaryKind::PrewarmStarted: return "PrewarmStarted";
    case BoundaryKind::WindowStarted: return "TidalWindowStarted";
  }
  return "Unknown";
}

struct TidalController::Evaluation {
  std::map<std::string, int> floors;
  std::optional<int> limit;
  const WindowOccurrence* active = nullptr;
  const WindowOccurrence* approaching = nullptr;
  const WindowOccurrence* prewarming = nullptr;
};

Expected<TidalController> TidalController::create(
    std::string name, policy::TidalPolicySpec spec,
    std::map<std::string, policy::InferenceScalingPolicySpec> inference_policies, TidalOptions options) {
  const std::string object = "TidalPolicy/" + name;
  if (spec.timezone.zone == nullptr) {
    return Unexpected{object + ": time zone \"" + spec.timezone.name + "\" is not resolved"};
  }
  for (const auto& p : spec.targets.inference_policies) {
    if (!inference_policies.contains(p)) {
      return Unexpected{object + ": targets InferenceScalingPolicy/" + p + ", which was not given"};
    }
  }
  if (options.retry_initial <= seconds{0} || options.retry_max < options.retry_initial) {
    return Unexpected{object + ": retry backoff must start above 0s and not exceed its maximum"};
  }
  TidalController c;
  c.name_ = std::move(name);
  c.spec_ = std::move(spec);
  // Only the targeted policies matter; others given are ignored.
  for (const auto& p : c.spec_.targets.inference_policies) c.inference_[p] = inference_policies.at(p);
  c.options_ = options;

  seconds default_prewarm{0};
  for (const auto& entry : c.inference_) {
    default_prewarm = std::max(default_prewarm, to_seconds(entry.second.model_load_time) + options.prewarm_margin);
  }
  if (c.spec_.reclaim && c.spec_.reclaim->checkpoint_before) {
    c.checkpoint_before_ = to_seconds(*c.spec_.reclaim->checkpoint_before);
  }
  for (const auto& w : c.spec_.windows) {
    const seconds lead = w.prewarm_before ? to_seconds(*w.prewarm_before) : default_prewarm;
    c.prewarm_before_.push_back(lead);
    c.max_lead_ = std::max(c.max_lead_, lead + c.checkpoint_before_);
  }
  return c;
}

seconds TidalController::prewarm_before(std::size_t window) const { return prewarm_before_.at(window); }
seconds TidalController::checkpoint_before() const { return checkpoint_before_; }

std::optional<int> TidalController::window_floor(std::size_t window, const std::string& policy) const {
  const auto& w = spec_.windows[window];
  if (!w.inference_replica_floor) return std::nullopt;
  const auto floor = w.inference_replica_floor->for_policy(policy);
  if (!floor) return std::nullopt;
  const auto& inf = inference_.at(policy);
  return std::clamp(*floor, inf.min_replicas, std::max(inf.min_replicas, inf.max_replicas));
}

std::vector<WindowOccurrence> TidalController::occurrences(sys_seconds from, sys_seconds to) const {
  const auto& zone = *spec_.timezone.zone;
  std::vector<WindowOccurrence> out;
  for (std::size_t i = 0; i < spec_.windows.size(); ++i) {
    const auto& w = spec_.windows[i];
    const policy::WindowSchedule schedule{&w.start, &w.end};
    sys_seconds lo = from - max_lead_ - kMargin;
    sys_seconds hi = to + max_lead_ + kMargin;
    std::vector<policy::Interval> intervals;
    while (true) {
      intervals = policy::active_intervals(schedule, zone, lo, hi);
      // An interval cut by the span that matters inside it: follow it to its real edge.
      const bool cut_front = !intervals.empty() && intervals.front().begin == lo && intervals.front().end > from;
      const bool cut_back = !intervals.empty() && intervals.back().end == hi && intervals.back().begin < to + max_lead_;
      const bool room = (hi - lo) < kFollowLimit;
      if ((!cut_front && !cut_back) || !room) break;
      if (cut_front) lo -= (hi - lo);
      if (cut_back) hi += (hi - lo);
    }
    for (const auto& iv : intervals) {
      WindowOccurrence o;
      o.window = w.name;
      o.index = i;
      o.start = iv.begin;
      o.end = iv.end;
      o.prewarm = iv.begin - prewarm_before_[i];
      o.approaching = o.prewarm - checkpoint_before_;
      out.push_back(std::move(o));
    }
  }
  std::sort(out.begin(), out.end(), [](const WindowOccurrence& a, const WindowOccurrence& b) {
    return std::tie(a.start, a.index) < std::tie(b.start, b.index);
  });
  return out;
}

TidalController::Evaluation TidalController::evaluate(const std::vector<WindowOccurrence>& occs, sys_seconds t,
                                                      const WindowOccurrence* excluded) const {
  Evaluation e;
  for (const auto& p : spec_.targets.inference_policies) e.floors[p] = inference_.at(p).min_replicas;
  for (const auto& o : occs) {
    if (&o == excluded) continue;
    if (o.prewarm <= t && t < o.end) {
      for (auto& entry : e.floors) {
        if (auto f = window_floor(o.index, entry.first)) entry.second = std::max(entry.second, *f);
      }
    }
    if (o.approaching <= t && t < o.end) {
      if (const auto& limit = spec_.windows[o.index].training_borrow_limit) {
        e.limit = e.limit ? std::min(*e.limit, *limit) : *limit;
      }
    }
    if (o.start <= t && t < o.end) e.active = &o;
    if (o.approaching <= t && t < o.start && (e.approaching == nullptr || o.start < e.approaching->start)) {
      e.approaching = &o;
    }
    if (o.prewarm <= t && t < o.start && (e.prewarming == nullptr || o.start < e.prewarming->start)) {
      e.prewarming = &o;
    }
  }
  return e;
}

std::optional<ReclaimOrder> TidalController::reclaim_of(const std::vector<WindowOccurrence>& occs,
                                                        const WindowOccurrence& occ) const {
  // What the other windows hold just before this one's floors and limit would apply.
  const Evaluation floors_before = evaluate(occs, occ.prewarm - kSecond, &occ);
  const Evaluation limit_before = evaluate(occs, occ.approaching - kSecond, &occ);
  int gpus = 0;
  bool raises = false;
  for (const auto& p : spec_.targets.inference_policies) {
    const auto f = window_floor(occ.index, p);
    const int base = floors_before.floors.at(p);
    if (f && *f > base) {
      raises = true;
      gpus += (*f - base) * inference_.at(p).replica_shape.gpu_per_replica;
    }
  }
  const auto& limit = spec_.windows[occ.index].training_borrow_limit;
  const bool tightens = limit && (!limit_before.limit || *limit < *limit_before.limit);
  if (!raises && !tightens) return std::nullopt;
  ReclaimOrder r;
  r.resource_pool = spec_.targets.resource_pool;
  r.training_groups = spec_.targets.training_groups;
  if (tightens) r.borrow_limit = limit;
  r.gpus_needed = gpus;
  if (spec_.reclaim && spec_.reclaim->grace_period) r.grace = to_seconds(*spec_.reclaim->grace_period);
  r.needed_at = occ.prewarm;
  return r;
}

std::string TidalController::local(sys_seconds t) const {
  return date::format("%F %R %Z", date::make_zoned(spec_.timezone.zone, t));
}

std::vector<std::string> TidalController::related() const {
  std::vector<std::string> out;
  for (const auto& p : spec_.targets.inference_policies) out.push_back("InferenceScalingPolicy/" + p);
  return out;
}

std::vector<TidalAction> TidalController::actions(const std::vector<WindowOccurrence>& occs, sys_seconds from,
                                                  sys_seconds to, std::size_t limit) const {
  std::vector<TidalAction> out;
  for (const auto& o : occs) {
    const std::pair<BoundaryKind, sys_seconds> boundaries[] = {{BoundaryKind::Approaching, o.approaching},
                                                               {BoundaryKind::PrewarmStarted, o.prewarm},
                                                               {BoundaryKind::WindowStarted, o.start},
                                                               {BoundaryKind::WindowEnded, o.end}};
    for (const auto& b : boundaries) {
      if (b.second < from || b.second >= to) continue;
      TidalAction a;
      a.at = b.second;
      a.kind = b.first;
      a.occurrence = o;
      out.push_back(std::move(a));
    }
  }
  std::sort(out.begin(), out.end(), [](const TidalAction& a, const TidalAction& b) {
    return std::tie(a.at, a.kind, a.occurrence.start) < std::tie(b.at, b.kind, b.occurrence.start);
  });
  if (out.size() > limit) out.resize(limit);

  // The hold follows from which occurrences need capacity, worked out once per occurrence
  // and only for those approaching at some action.
  std::vector<std::optional<std::optional<ReclaimOrder>>> reclaims(occs.size());
  auto reclaim_at = [&](std::size_t i) -> const std::optional<ReclaimOrder>& {
    if (!reclaims[i]) reclaims[i] = reclaim_of(occs, occs[i]);
    return *reclaims[i];
  };
  auto hold_at = [&](sys_seconds t) {
    for (std::size_t i = 0; i < occs.size(); ++i) {
      if (occs[i].approaching <= t && t < occs[i].start && reclaim_at(i)) return true;
    }
    return false;
  };
  auto index_of = [&](const WindowOccurrence& o) {
    for (std::size_t i = 0; i < occs.size(); ++i) {
      if (occs[i] == o) return i;
    }
    return occs.size();
  };

  for (auto& a : out) {
    const Evaluation before = evaluate(occs, a.at - kSecond, nullptr);
    const Evaluation after = evaluate(occs, a.at, nullptr);
    a.floors = after.floors;
    a.training_borrow_limit = after.limit;
    a.admission_hold = hold_at(a.at);
    const auto& o = a.occurrence;
    const std::string& w = o.window;

    std::string floors_now;
    for (const auto& entry : a.floors) {
      if (!floors_now.empty()) floors_now += ", ";
      floors_now += entry.first + " " + std::to_string(entry.second);
    }
    const std::string state_text = "floors " + floors_now + "; training borrow limit on " +
                                   spec_.targets.resource_pool + " " + limit_text(a.training_borrow_limit) +
                                   "; admission " + (a.admission_hold ? "held" : "open");
    switch (a.kind) {
      case BoundaryKind::Approaching: {
        const std::size_t i = index_of(o);
        if (i < occs.size()) a.reclaim = reclaim_at(i);
        if (a.reclaim) {
          const auto& r = *a.reclaim;
          a.reason = "WindowNeedsCapacity";
          a.message = w + " starts " + local(o.start) + " and needs capacity on " + r.resource_pool + " by " +
                      local(o.prewarm) + " (prewarm " + duration_text(prewarm_before_[o.index]) + ", checkpoint " +
                      duration_text(checkpoint_before_) + " before that): " + std::to_string(r.gpus_needed) +
                      " GPUs for its floors";
          if (r.borrow_limit) {
            a.message += ", training borrowing tightened from " + limit_text(before.limit) + " to " +
                         limit_text(r.borrow_limit);
          }
          a.message += "; new long low-priority training held, borrowers";
          std::string groups;
          for (const auto& g : r.training_groups) groups += (groups.empty() ? " " : ", ") + g;
          a.message += groups + " told to checkpoint" +
                       (r.grace ? " within " + duration_text(*r.grace) : std::string(" within the default grace"));
        } else {
          a.reason = "NoCapacityNeeded";
          a.message = w + " starts " + local(o.start) +
                      " and needs no capacity: its floors and training borrow limit are no stricter than those "
                      "in force (" +
                      state_text + ")";
        }
        break;
      }
      case BoundaryKind::PrewarmStarted: {
        std::string rises;
        for (const auto& entry : after.floors) {
          const int was = before.floors.at(entry.first);
          if (entry.second > was) {
            rises += (rises.empty() ? "" : ", ") + entry.first + " " + std::to_string(was) + " -> " +
                     std::to_string(entry.second);
          }
        }
        if (!rises.empty()) {
          a.reason = "FloorRaised";
          a.message = w + " prewarm, " + duration_text(prewarm_before_[o.index]) + " before its start " +
                      local(o.start) + ": floor " + rises + " so replicas are ready by then";
        } else {
          a.reason = "FloorAlreadyInForce";
          a.message = w + " prewarm, " + duration_text(prewarm_before_[o.index]) + " before its start " +
                      local(o.start) + ": no floor rises (" + state_text + ")";
        }
        break;
      }
      case BoundaryKind::WindowStarted:
        a.reason = "ScheduleStart";
        a.message = w + " started " + local(o.start) + ", ends " + local(o.end) + ": " + state_text;
        break;
      case BoundaryKind::WindowEnded:
        a.reason = "ScheduleEnd";
        a.message = w + " ended " + local(o.end) + ": " + state_text;
        break;
    }
  }
  return out;
}

std::vector<TidalAction> TidalController::timeline(sys_seconds from, sys_seconds to) const {
  if (to <= from) return {};
  return actions(occurrences(from, to), from, to);
}

TidalState TidalController::state_from(const std::vector<WindowOccurrence>& occs, sys_seconds t) const {
  const Evaluation e = evaluate(occs, t, nullptr);
  TidalState s;
  s.at = t;
  if (e.active != nullptr) s.active = *e.active;
  if (e.approaching != nullptr) s.approaching = *e.approaching;
  if (e.prewarming != nullptr) s.prewarming = *e.prewarming;
  s.floors = e.floors;
  s.training_borrow_limit = e.limit;
  for (const auto& o : occs) {
    if (o.approaching <= t && t < o.start && reclaim_of(occs, o)) s.admission_hold = true;
  }
  return s;
}

TidalState TidalController::state_at(sys_seconds t) const {
  TidalState s = state_from(occurrences(t, t + kMargin), t);
  for (const seconds span : {seconds{kMargin}, seconds{days(730)}}) {
    auto next = actions(occurrences(t, t + span), t + kSecond, t + span + kSecond, 1);
    if (!next.empty()) {
      s.next = std::move(next.front());
      break;
    }
  }
  return s;
}

TidalRecord TidalController::record_of(const TidalAction& a) const {
  TidalRecord r;
  r.at = a.at;
  r.kind = std::string(event_kind(a.kind));
  r.object = object();
  r.pool = spec_.targets.resource_pool;
  r.reason = a.reason;
  r.message = a.message;
  r.related = related();
  auto& n = r.numbers;
  n["window"] = a.occurrence.window;
  n["start"] = rfc3339(a.occurrence.start);
  n["end"] = rfc3339(a.occurrence.end);
  n["floors"] = nlohmann::ordered_json::object();
  for (const auto& entry : a.floors) n["floors"][entry.first] = entry.second;
  n["trainingBorrowLimit"] = limit_json(a.training_borrow_limit);
  n["admissionHold"] = a.admission_hold;
  if (a.kind == BoundaryKind::Approaching || a.kind == BoundaryKind::PrewarmStarted) {
    n["prewarmBeforeSeconds"] = prewarm_before_[a.occurrence.index].count();
  }
  if (a.kind == BoundaryKind::Approaching) n["checkpointBeforeSeconds"] = checkpoint_before_.count();
  if (a.reclaim) {
    auto& rc = n["reclaim"];
    rc["borrowLimit"] = limit_json(a.reclaim->borrow_limit);
    rc["gpusNeeded"] = a.reclaim->gpus_needed;
    rc["graceSeconds"] = a.reclaim->grace ? nlohmann::ordered_json(a.reclaim->grace->count())
                                          : nlohmann::ordered_json(nullptr);
    rc["neededAt"] = rfc3339(a.reclaim->needed_at);
  }
  return r;
}

Expected<TidalStep> TidalController::step(sys_seconds now, const Observed& observed) {
  if (last_step_ && now < *last_step_) {
    return Unexpected{object() + ": step at " + rfc3339(now) + " is before the last step at " + rfc3339(*last_step_)};
  }
  for (const auto& p : spec_.targets.inference_policies) {
    if (!observed.contains(p)) return Unexpected{object() + ": no observation of InferenceScalingPolicy/" + p};
  }
  TidalStep out;
  const sys_seconds from = last_step_ ? *last_step_ + kSecond : now;
  // Steps come often: the occurrences are worked out for four weeks ahead and reused.
  if (!cache_ || from < cache_->from || now + kMargin > cache_->to) {
    cache_ = OccurrenceCache{from, now + 4 * kMargin, occurrences(from, now + 4 * kMargin)};
  }
  const auto& occs = cache_->occurrences;
  bool window_started = false;
  for (const auto& a : actions(occs, from, now + kSecond)) {
    TidalRecord r = record_of(a);
    if (freeze_) r.message += " (frozen by " + freeze_->actor + ": replicas stay pinned)";
    out.records.push_back(std::move(r));
    if (a.kind == BoundaryKind::WindowStarted) window_started = true;
  }
  out.state = state_from(occs, now);
  {
    auto next = actions(occs, now + kSecond, now + kMargin, 1);
    if (!next.empty()) {
      out.state.next = std::move(next.front());
    } else {
      out.state.next = state_at(now).next;
    }
  }

  for (const auto& p : spec_.targets.inference_policies) {
    const auto& inf = inference_.at(p);
    const ServiceObservation& obs = observed.at(p);
    FloorDecision d;
    d.policy = p;
    d.tidal_floor = out.state.floors.at(p);
    d.realtime_desired = std::max(0, obs.realtime_desired);
    if (freeze_) d.pinned = freeze_->pinned.at(p);
    const int base = d.pinned.value_or(d.tidal_floor);
    d.floor_in_force = std::min(std::max(base, d.realtime_desired), std::max(inf.min_replicas, inf.max_replicas));

    const std::string policy_object = "InferenceScalingPolicy/" + p;
    auto failure_record = [&](std::string kind, std::string reason, std::string message) {
      TidalRecord r;
      r.at = now;
      r.kind = std::move(kind);
      r.object = policy_object;
      r.pool = inf.resource_pool;
      r.reason = std::move(reason);
      r.message = std::move(message);
      r.related = {object()};
      r.numbers["ready"] = obs.ready;
      r.numbers["tidal"] = d.tidal_floor;
      r.numbers["missing"] = std::max(0, d.tidal_floor - obs.ready);
      return r;
    };
    const std::string shortfall = std::to_string(obs.ready) + " of " + std::to_string(d.tidal_floor) +
                                  " replicas (" + std::to_string(inf.replica_shape.gpu_per_replica) +
                                  " GPUs each) ready";
    if (!freeze_) {
      auto it = failures_.find(p);
      if (it != failures_.end()) {
        PrewarmFailure& f = it->second;
        if (obs.ready >= d.tidal_floor) {
          TidalRecord r = failure_record("PrewarmResolved", "FloorMet",
                                         p + ": " + shortfall + " after " + std::to_string(f.attempt) +
                                             " attempt(s); scale-down allowed again");
          r.numbers["attempts"] = f.attempt;
          out.records.push_back(std::move(r));
          failures_.erase(it);
        } else {
          if (obs.prewarm_failed && !f.attempt_failed) {
            f.attempt_failed = true;
            TidalRecord r = failure_record("PrewarmFailed", "PrewarmAttemptFailed",
                                           p + ": attempt " + std::to_string(f.attempt) + " failed, " + shortfall +
                                               "; keeping every replica, next attempt at " + rfc3339(f.next_retry));
            r.numbers["attempt"] = f.attempt;
            r.numbers["nextRetryAt"] = rfc3339(f.next_retry);
            r.alert = true;
            out.records.push_back(std::move(r));
          }
          if (now >= f.next_retry) {
            ++f.attempt;
            f.attempt_failed = false;
            f.backoff = std::min(f.backoff * 2, options_.retry_max);
            f.next_retry = now + f.backoff;
            d.retry_prewarm = true;
            TidalRecord r = failure_record("PrewarmRetried", "RetryWithBackoff",
                                           p + ": attempt " + std::to_string(f.attempt) + " to reach the floor, " +
                                               shortfall + "; if it fails, attempt " + std::to_string(f.attempt + 1) +
                                               " at " + rfc3339(f.next_retry) + " (backoff " +
                                               duration_text(f.backoff) + ")");
            r.numbers["attempt"] = f.attempt;
            r.numbers["backoffSeconds"] = f.backoff.count();
            r.numbers["nextRetryAt"] = rfc3339(f.next_retry);
            out.records.push_back(std::move(r));
          }
        }
      } else if (obs.ready < d.tidal_floor && (obs.prewarm_failed || window_started)) {
        PrewarmFailure f;
        f.backoff = options_.retry_initial;
        f.next_retry = now + f.backoff;
        const bool failed = obs.prewarm_failed;
        TidalRecord r = failure_record(
            "PrewarmFailed", failed ? "PrewarmAttemptFailed" : "NotReadyAtWindowStart",
            p + ": " + (failed ? std::string("prewarm failed") : std::string("window started")) + " with " + shortfall +
                "; keeping every replica (no scale-down), retrying at " + rfc3339(f.next_retry));
        r.numbers["attempt"] = f.attempt;
        r.numbers["nextRetryAt"] = rfc3339(f.next_retry);
        r.alert = true;
        out.records.push_back(std::move(r));
        failures_.emplace(p, f);
      }
    }
    d.scale_down_allowed = !failures_.contains(p);

    auto last = last_effective_.find(p);
    if (last == last_effective_.end() || last->second != d.floor_in_force) {
      TidalRecord r;
      r.at = now;
      r.kind = "FloorChanged";
      r.object = policy_object;
      r.pool = inf.resource_pool;
      r.related = {object()};
      const int wanted = std::max(base, d.realtime_desired);
      if (wanted > d.floor_in_force) {
        r.reason = "MaxReplicas";
      } else if (d.pinned && *d.pinned >= d.realtime_desired) {
        r.reason = "Frozen";
      } else if (base >= d.realtime_desired) {
        r.reason = "TidalFloor";
      } else {
        r.reason = "RealtimeDesired";
      }
      r.message = p + ": floor in force " +
                  (last == last_effective_.end() ? std::string() : std::to_string(last->second) + " -> ") +
                  std::to_string(d.floor_in_force) + " = max(" +
                  (d.pinned ? "pinned " + std::to_string(*d.pinned) : "tidal floor " + std::to_string(d.tidal_floor)) +
                  ", real-time desired " + std::to_string(d.realtime_desired) + ")" +
                  (wanted > d.floor_in_force ? ", capped at maxReplicas " + std::to_string(d.floor_in_force)
                                             : std::string());
      r.numbers["tidal"] = d.tidal_floor;
      r.numbers["realtime"] = d.realtime_desired;
      r.numbers["effective"] = d.floor_in_force;
      if (d.pinned) r.numbers["pinned"] = *d.pinned;
      out.records.push_back(std::move(r));
      last_effective_[p] = d.floor_in_force;
    }
    out.decisions.push_back(std::move(d));
  }
  last_step_ = now;
  last_observed_ = observed;
  return out;
}

Expected<TidalRecord> TidalController::freeze(const std::string& actor, sys_seconds now, const std::string& reason) {
  if (freeze_) {
    return Unexpected{object() + " is already frozen (by " + freeze_->actor + " at " + rfc3339(freeze_->at) +
                      "); unfreeze it first"};
  }
  if (!last_step_) {
    return Unexpected{object() + " cannot be frozen before its first step: no ready replicas have been observed"};
  }
  if (now < *last_step_) {
    return Unexpected{object() + ": freeze at " + rfc3339(now) + " is before the last step at " + rfc3339(*last_step_)};
  }
  Freeze f;
  f.actor = actor;
  f.reason = reason;
  f.at = now;
  TidalRecord r;
  r.at = now;
  r.kind = "TidalFrozen";
  r.object = object();
  r.pool = spec_.targets.resource_pool;
  r.reason = "ManualFreeze";
  r.actor = actor;
  r.related = related();
  r.numbers["pinned"] = nlohmann::ordered_json::object();
  std::string pins;
  for (const auto& p : spec_.targets.inference_policies) {
    const auto& inf = inference_.at(p);
    // At least minReplicas: a freeze pins what serves, it never asks for less than the policy's minimum.
    const int pinned = std::clamp(last_observed_.at(p).ready, inf.min_replicas,
                                  std::max(inf.min_replicas, inf.max_replicas));
    f.pinned[p] = pinned;
    r.numbers["pinned"][p] = pinned;
    pins += (pins.empty() ? "" : ", ") + p + " at " + std::to_string(pinned);
  }
  r.message = object() + " frozen by " + actor + ": replicas pinned (" + pins +
              "), windows no longer move them, real-time demand may still scale up; reason: " + reason;
  if (!failures_.empty()) {
    std::string stopped;
    for (const auto& entry : failures_) stopped += (stopped.empty() ? "" : ", ") + entry.first;
    r.message += "; prewarm retries stopped for " + stopped;
    failures_.clear();
  }
  freeze_ = std::move(f);
  return r;
}

Expected<TidalRecord> TidalController::unfreeze(const std::string& actor, sys_seconds now) {
  if (!freeze_) return Unexpected{object() + " is not frozen"};
  if (now < freeze_->at) {
    return Unexpected{object() + ": unfreeze at " + rfc3339(now) + " is before the freeze at " + rfc3339(freeze_->at)};
  }
  const TidalState s = state_at(now);
  TidalRecord r;
  r.at = now;
  r.kind = "TidalUnfrozen";
  r.object = object();
  r.pool = spec_.targets.resource_pool;
  r.reason = "ManualUnfreeze";
  r.actor = actor;
  r.related = related();
  r.numbers["pinned"] = nlohmann::ordered_json::object();
  std::string floors;
  for (const auto& p : spec_.targets.inference_policies) {
    r.numbers["pinned"][p] = freeze_->pinned.at(p);
    floors += (floors.empty() ? "" : ", ") + p + " " + std::to_string(s.floors.at(p));
  }
  r.numbers["frozenSeconds"] = (now - freeze_->at).count();
  r.message = object() + " unfrozen by " + actor + " after " + duration_text(now - freeze_->at) +
              " (frozen by " + freeze_->actor + "): floors follow the windows again (tidal floor " + floors + ")";
  freeze_.reset();
  return r;
}

}  // namespace gpubank::tidal
