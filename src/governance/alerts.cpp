#include "governance/alerts.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace gpubank::governance {
namespace {

using Json = nlohmann::ordered_json;

Audience audience_of(policy::NotifyTarget target) {
  switch (target) {
    case policy::NotifyTarget::Owner: return Audience::Owner;
    case policy::NotifyTarget::BusinessGroupAdmin: return Audience::GroupAdmin;
    case policy::NotifyTarget::PlatformAdmin: return Audience::PlatformAdmin;
  }
  return Audience::Owner;
}

policy::NotifyPolicy notify_of(const Verdict& v) {
  return v.policy != nullptr && v.policy->spec.notify ? *v.policy->spec.notify : policy::NotifyPolicy{};
}

bool due(const std::optional<std::int64_t>& since, const std::optional<Duration>& after, std::int64_t now_ms) {
  return since && after && now_ms - *since >= after->milliseconds();
}

void optional_number(Json& j, const char* key, const std::optional<double>& v) {
  if (v && std::isfinite(*v)) j[key] = *v;
}
void optional_time(Json& j, const char* key, const std::optional<std::int64_t>& v) {
  if (v) j[key] = *v;
}

}  // namespace

std::string_view to_string(AlertState state) {
  switch (state) {
    case AlertState::Detected: return "Detected";
    case AlertState::Notified: return "Notified";
    case AlertState::Escalated: return "Escalated";
    case AlertState::ReclaimCandidate: return "ReclaimCandidate";
    case AlertState::Resolved: return "Resolved";
  }
  return "?";
}

std::optional<AlertState> alert_state_from(std::string_view text) {
  for (AlertState s : {AlertState::Detected, AlertState::Notified, AlertState::Escalated, AlertState::ReclaimCandidate,
                       AlertState::Resolved}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

std::string_view to_string(Audience audience) {
  switch (audience) {
    case Audience::Owner: return "owner";
    case Audience::GroupAdmin: return "business-group-admin";
    case Audience::PlatformAdmin: return "platform-admin";
  }
  return "?";
}

Evidence evidence_of(const WorkloadFacts& w, const Verdict& v, std::int64_t now_ms, std::int64_t low_since_ms) {
  Evidence e;
  e.business_group = w.business_group;
  e.owner_id = w.owner_id;
  e.namespace_name = w.namespace_name;
  e.workload_kind = w.workload_kind;
  e.workload = w.workload;
  e.workload_type = w.workload_type;
  e.pool = w.pool;
  e.gpu_model = w.gpu_model;
  e.partition = w.partition;
  e.gpus = w.gpus;
  e.running_seconds = w.running_seconds(now_ms).value_or(0);
  e.low_seconds = static_cast<double>(std::max<std::int64_t>(0, now_ms - low_since_ms)) / 1000.0;
  e.gpu_utilization = w.gpu_utilization;
  e.memory_utilization = w.memory_utilization;
  e.power_fraction = w.power_fraction;
  e.tokens_per_second = w.tokens_per_second;
  e.training_steps = w.training_steps;
  e.group_borrowed_gpus = w.group_borrowed_gpus;
  e.reason = v.reason;
  return e;
}

ScanResult step(const std::map<std::string, Alert, std::less<>>& open,
                const std::map<std::string, std::int64_t, std::less<>>& last_ids, const std::vector<Observed>& observed,
                std::int64_t now_ms) {
  ScanResult out;
  std::set<std::string, std::less<>> seen;
  std::vector<const Observed*> sorted;
  sorted.reserve(observed.size());
  for (const Observed& o : observed) sorted.push_back(&o);
  std::sort(sorted.begin(), sorted.end(),
            [](const Observed* a, const Observed* b) { return a->facts.workload_uid < b->facts.workload_uid; });

  auto resolve = [&](const Alert& a, std::string resolution) {
    Transition t{a.state, a, "Resolved", std::nullopt};
    t.alert.state = AlertState::Resolved;
    t.alert.resolved_ms = now_ms;
    t.alert.resolution = std::move(resolution);
    out.transitions.push_back(std::move(t));
  };

  for (const Observed* o : sorted) {
    const WorkloadFacts& w = o->facts;
    const Verdict& v = o->verdict;
    if (!seen.insert(w.workload_uid).second) continue;  // one verdict per workload
    ++out.verdicts[std::string(to_string(v.kind))];
    if (v.kind == VerdictKind::Excluded) ++out.excluded[v.reason];
    const auto it = open.find(w.workload_uid);

    if (it == open.end()) {
      if (v.kind != VerdictKind::Low) continue;
      const auto last = last_ids.find(w.workload_uid);
      Alert a;
      a.id = (last == last_ids.end() ? 0 : last->second) + 1;
      a.workload_uid = w.workload_uid;
      a.policy = v.policy->name;
      a.state = AlertState::Detected;
      a.detected_ms = now_ms;
      a.low_since_ms = now_ms - v.policy->spec.window.milliseconds();
      a.evidence = evidence_of(w, v, now_ms, a.low_since_ms);
      out.transitions.push_back({std::nullopt, a, "Detected", std::nullopt});
      Transition notice{AlertState::Detected, a, "Notified", audience_of(notify_of(v).first)};
      notice.alert.state = AlertState::Notified;
      notice.alert.notified_ms = now_ms;
      notice.alert.last_notice_ms = now_ms;
      notice.alert.last_audience = notice.notice;
      out.transitions.push_back(std::move(notice));
      continue;
    }

    const Alert& a = it->second;
    switch (v.kind) {
      case VerdictKind::Fine: resolve(a, "recovered"); continue;
      case VerdictKind::Excluded: resolve(a, "excluded: " + v.reason); continue;
      case VerdictKind::Uncovered: resolve(a, "uncovered: " + v.reason); continue;
      case VerdictKind::NoData: continue;  // nothing learnt: the alert stays as it is
      case VerdictKind::Low: break;
    }
    const policy::NotifyPolicy notify = notify_of(v);
    Alert now = a;
    now.policy = v.policy->name;
    now.evidence = evidence_of(w, v, now_ms, a.low_since_ms);
    auto with_notice = [&](AlertState state, std::string action, Audience audience) {
      Transition t{a.state, now, std::move(action), audience};
      t.alert.state = state;
      t.alert.last_notice_ms = now_ms;
      t.alert.last_audience = audience;
      if (state == AlertState::Notified && !t.alert.notified_ms) t.alert.notified_ms = now_ms;
      if (state == AlertState::Escalated && a.state != AlertState::Escalated) t.alert.escalated_ms = now_ms;
      out.transitions.push_back(std::move(t));
    };
    switch (a.state) {
      case AlertState::Detected:  // the owner's notice never went out: ask again
        with_notice(AlertState::Notified, "Notified", audience_of(notify.first));
        break;
      case AlertState::Notified:
        if (notify.escalate_to && due(a.notified_ms, notify.after, now_ms)) {
          with_notice(AlertState::Escalated, "Escalated", audience_of(*notify.escalate_to));
        } else if (due(a.last_notice_ms, notify.repeat_interval, now_ms)) {
          with_notice(a.state, "Renotified", a.last_audience.value_or(Audience::Owner));
        }
        break;
      case AlertState::Escalated:
        // The group's admins had as long as the owner; on borrowed quota the GPUs become a
        // reclaim candidate (acting on it needs an approval).
        if (w.group_borrowed_gpus > 0 && due(a.escalated_ms, notify.after, now_ms)) {
          Transition t{a.state, now, "ReclaimCandidate", std::nullopt};
          t.alert.state = AlertState::ReclaimCandidate;
          out.transitions.push_back(std::move(t));
        } else if (due(a.last_notice_ms, notify.repeat_interval, now_ms)) {
          with_notice(a.state, "Renotified", a.last_audience.value_or(Audience::Owner));
        }
        break;
      case AlertState::ReclaimCandidate:
        // An approved downgrade keeps the workload running, preemptible: asking again for
        // a decision already taken would only be noise. It stays open until utilisation
        // recovers or it ends.
        if (a.decision && a.decision->approved && !a.decision->downgrade_to.empty()) break;
        if (due(a.last_notice_ms, notify.repeat_interval, now_ms)) {
          with_notice(a.state, "Renotified", a.last_audience.value_or(Audience::Owner));
        }
        break;
      case AlertState::Resolved: break;  // not open
    }
  }
  // Alerts of workloads that hold no GPU any more: an approved reclaim did it, or they ended
  // (a downgraded one too: it was left running).
  for (const auto& [uid, a] : open) {
    if (seen.contains(uid)) continue;
    const bool reclaimed = a.decision && a.decision->approved && a.decision->downgrade_to.empty();
    resolve(a, reclaimed ? "reclaimed" : "ended");
  }
  std::stable_sort(out.transitions.begin(), out.transitions.end(), [](const Transition& x, const Transition& y) {
    return x.alert.workload_uid < y.alert.workload_uid;
  });
  return out;
}

Json to_json(const Evidence& e) {
  Json j{{"businessGroup", e.business_group}, {"ownerId", e.owner_id},   {"namespace", e.namespace_name},
         {"workloadKind", e.workload_kind},   {"workload", e.workload},  {"workloadType", e.workload_type},
         {"pool", e.pool},                    {"gpuModel", e.gpu_model}, {"partition", e.partition},
         {"gpus", e.gpus},                    {"runningSeconds", e.running_seconds},
         {"lowSeconds", e.low_seconds}};
  optional_number(j, "averageGpuUtilization", e.gpu_utilization);
  optional_number(j, "averageMemoryUtilization", e.memory_utilization);
  optional_number(j, "averagePowerFraction", e.power_fraction);
  optional_number(j, "tokensPerSecond", e.tokens_per_second);
  optional_number(j, "trainingSteps", e.training_steps);
  j["groupBorrowedGpus"] = e.group_borrowed_gpus;
  j["reason"] = e.reason;
  return j;
}

Json to_json(const Alert& a) {
  Json j{{"id", a.id},
         {"workloadUid", a.workload_uid},
         {"policy", a.policy},
         {"state", std::string(to_string(a.state))},
         {"detectedMs", a.detected_ms},
         {"lowSinceMs", a.low_since_ms}};
  optional_time(j, "notifiedMs", a.notified_ms);
  optional_time(j, "escalatedMs", a.escalated_ms);
  optional_time(j, "lastNoticeMs", a.last_notice_ms);
  if (a.last_audience) j["lastAudience"] = std::string(to_string(*a.last_audience));
  optional_time(j, "resolvedMs", a.resolved_ms);
  if (!a.resolution.empty()) j["resolution"] = a.resolution;
  if (a.decision) {
    j["decision"] = Json{{"verdict", a.decision->approved ? "Approved" : "Rejected"},
                         {"by", a.decision->by},
                         {"atMs", a.decision->at_ms},
                         {"reason", a.decision->reason}};
    if (!a.decision->downgrade_to.empty()) j["decision"]["downgradeTo"] = a.decision->downgrade_to;
  }
  j["evidence"] = to_json(a.evidence);
  return j;
}

Expected<Alert> alert_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Unexpected{std::string("alert: must be an object")};
  Alert a;
  auto integer = [&](const char* key, std::int64_t& into, bool required) -> std::optional<std::string> {
    const auto it = j.find(key);
    if (it == j.end()) return required ? std::optional<std::string>(std::string(key) + ": required") : std::nullopt;
    if (!it->is_number_integer()) return std::string(key) + ": must be an integer";
    into = it->get<std::int64_t>();
    return std::nullopt;
  };
  auto text = [&](const nlohmann::json& obj, const char* key, std::string& into) -> std::optional<std::string> {
    const auto it = obj.find(key);
    if (it == obj.end()) return std::nullopt;
    if (!it->is_string()) return std::string(key) + ": must be a string";
    into = it->get<std::string>();
    return std::nullopt;
  };
  auto maybe_time = [&](const char* key, std::optional<std::int64_t>& into) -> std::optional<std::string> {
    if (!j.contains(key)) return std::nullopt;
    std::int64_t v = 0;
    if (auto e = integer(key, v, true)) return e;
    into = v;
    return std::nullopt;
  };
  for (auto e : {integer("id", a.id, true), integer("detectedMs", a.detected_ms, true),
                 integer("lowSinceMs", a.low_since_ms, true), text(j, "workloadUid", a.workload_uid),
                 text(j, "policy", a.policy), text(j, "resolution", a.resolution), maybe_time("notifiedMs", a.notified_ms),
                 maybe_time("escalatedMs", a.escalated_ms), maybe_time("lastNoticeMs", a.last_notice_ms),
                 maybe_time("resolvedMs", a.resolved_ms)}) {
    if (e) return Unexpected{"alert." + *e};
  }
  if (a.workload_uid.empty()) return Unexpected{std::string("alert.workloadUid: required")};
  std::string state;
  if (auto e = text(j, "state", state)) return Unexpected{"alert." + *e};
  const auto parsed = alert_state_from(state);
  if (!parsed) return Unexpected{"alert.state: unknown state \"" + state + "\""};
  a.state = *parsed;
  std::string audience;
  if (auto e = text(j, "lastAudience", audience)) return Unexpected{"alert." + *e};
  if (!audience.empty()) {
    for (Audience x : {Audience::Owner, Audience::GroupAdmin, Audience::PlatformAdmin}) {
      if (to_string(x) == audience) a.last_audience = x;
    }
    if (!a.last_audience) return Unexpected{"alert.lastAudience: unknown audience \"" + audience + "\""};
  }
  if (const auto d = j.find("decision"); d != j.end()) {
    if (!d->is_object()) return Unexpected{std::string("alert.decision: must be an object")};
    ReclaimDecision decision;
    std::string verdict;
    for (auto e : {text(*d, "verdict", verdict), text(*d, "by", decision.by), text(*d, "reason", decision.reason),
                   text(*d, "downgradeTo", decision.downgrade_to)}) {
      if (e) return Unexpected{"alert.decision." + *e};
    }
    if (verdict != "Approved" && verdict != "Rejected") {
      return Unexpected{"alert.decision.verdict: must be Approved or Rejected, not \"" + verdict + "\""};
    }
    decision.approved = verdict == "Approved";
    if (decision.by.empty()) return Unexpected{std::string("alert.decision.by: required")};
    if (!decision.approved && !decision.downgrade_to.empty()) {
      return Unexpected{std::string("alert.decision.downgradeTo: only on an approved decision")};
    }
    const auto at = d->find("atMs");
    if (at == d->end() || !at->is_number_integer()) {
      return Unexpected{std::string("alert.decision.atMs: required, an integer")};
    }
    decision.at_ms = at->get<std::int64_t>();
    a.decision = std::move(decision);
  }
  const auto ev = j.find("evidence");
  if (ev != j.end()) {
    if (!ev->is_object()) return Unexpected{std::string("alert.evidence: must be an object")};
    Evidence& e = a.evidence;
    for (auto err : {text(*ev, "businessGroup", e.business_group), text(*ev, "ownerId", e.owner_id),
                     text(*ev, "namespace", e.namespace_name), text(*ev, "workloadKind", e.workload_kind),
                     text(*ev, "workload", e.workload), text(*ev, "workloadType", e.workload_type),
                     text(*ev, "pool", e.pool), text(*ev, "gpuModel", e.gpu_model), text(*ev, "partition", e.partition),
                     text(*ev, "reason", e.reason)}) {
      if (err) return Unexpected{"alert.evidence." + *err};
    }
    auto number = [&](const char* key) -> Expected<std::optional<double>> {
      const auto it = ev->find(key);
      if (it == ev->end()) return std::optional<double>{};
      if (!it->is_number()) return Unexpected{"alert.evidence." + std::string(key) + ": must be a number"};
      return std::optional<double>(it->get<double>());
    };
    for (const auto& [key, into] : {std::pair{"gpus", &e.gpus}, std::pair{"runningSeconds", &e.running_seconds},
                                    std::pair{"lowSeconds", &e.low_seconds},
                                    std::pair{"groupBorrowedGpus", &e.group_borrowed_gpus}}) {
      auto v = number(key);
      if (!v) return Unexpected{v.error()};
      *into = v->value_or(0);
    }
    for (const auto& [key, into] : {std::pair{"averageGpuUtilization", &e.gpu_utilization},
                                    std::pair{"averageMemoryUtilization", &e.memory_utilization},
                                    std::pair{"averagePowerFraction", &e.power_fraction},
                                    std::pair{"tokensPerSecond", &e.tokens_per_second},
                                    std::pair{"trainingSteps", &e.training_steps}}) {
      auto v = number(key);
      if (!v) return Unexpected{v.error()};
      *into = *v;
    }
  }
  return a;
}

}  // namespace gpubank::governance
