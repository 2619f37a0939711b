#include "governance/alert_store.hpp"

#include <algorithm>
#include <cctype>

namespace gpubank::governance {
namespace {

void fold(AlertBook& book, Alert a) {
  // A decision is final: a scanner transition computed before it was recorded (the scan
  // and `gpubank scan approve` run concurrently) carries it on, and a second decision
  // recorded concurrently with the first has no effect.
  if (const auto it = book.open.find(a.workload_uid); it != book.open.end() && it->second.id == a.id &&
                                                      it->second.decision && a.decision != it->second.decision) {
    a.decision = it->second.decision;
  }
  std::int64_t& last = book.last_ids[a.workload_uid];
  if (a.id > last) {
    last = a.id;
    ++book.reopened[a.workload_uid];
  }
  if (a.state == AlertState::Resolved) {
    const auto it = book.open.find(a.workload_uid);
    if (it != book.open.end() && it->second.id == a.id) book.open.erase(it);
  } else {
    book.open[a.workload_uid] = std::move(a);
  }
}

std::string object_of(const Alert& a) {
  const Evidence& e = a.evidence;
  if (e.workload_kind.empty() || e.namespace_name.empty() || e.workload.empty()) return "Workload/" + a.workload_uid;
  return e.workload_kind + "/" + e.namespace_name + "/" + e.workload;
}

bool is_decision_action(std::string_view action) {
  return action == "LowUtilizationReclaimApproved" || action == "LowUtilizationReclaimRejected";
}

bool is_checkpoint(const bank::AuditEntry& e) {
  return e.action == "ReclaimNoticeSent" || (e.action == "ReclaimVictimStopped" && e.decision == "CheckpointCompleted");
}

}  // namespace

Expected<bool> refresh(store::Store& store, AlertBook& book) {
  return store::read_audit_after(store, book.last_seq, [&](const bank::AuditEntry& e) -> std::optional<std::string> {
    const bool decision = is_decision_action(e.action);
    if ((e.actor == kScanActor && e.action.starts_with(kActionPrefix)) || decision) {
      const nlohmann::json numbers = nlohmann::json::parse(e.numbers, nullptr, false);
      auto alert = alert_from_json(numbers);
      if (!alert) return alert.error();
      // A person's decision is recorded under their name: one that names another decider
      // was not written by `gpubank scan approve|reject`.
      if (decision && (!alert->decision || alert->decision->by != e.actor)) {
        return "a reclaim decision must be recorded by its decider (actor " + e.actor + ")";
      }
      fold(book, *alert);
      ++book.transitions;
    } else if (is_checkpoint(e) && e.object.starts_with("Workload/")) {
      std::int64_t& t = book.checkpoints[e.object.substr(9)];
      t = std::max(t, e.time_ms);
    }
    return std::nullopt;
  });
}

bank::AuditEntry audit_entry(const Transition& t, std::int64_t now_ms) {
  bank::AuditEntry e;
  e.time_ms = now_ms;
  const bool decision = t.action == "ReclaimApproved" || t.action == "ReclaimRejected";
  e.actor = decision && t.alert.decision ? t.alert.decision->by.substr(0, bank::kMaxAuditFieldLength)
                                         : std::string(kScanActor);
  e.action = std::string(kActionPrefix) + t.action;
  e.object = object_of(t.alert).substr(0, bank::kMaxAuditFieldLength);
  e.policy_version = "LowUtilizationPolicy/" + t.alert.policy;
  e.decision = std::string(to_string(t.alert.state));
  std::string reason = t.alert.state == AlertState::Resolved ? t.alert.resolution
                       : decision && t.alert.decision ? t.alert.decision->reason
                                                      : t.alert.evidence.reason;
  if (t.notice) reason += (reason.empty() ? "" : "; ") + std::string("notice delivered to ") + std::string(to_string(*t.notice));
  e.reason = reason.empty() ? t.action : reason.substr(0, bank::kMaxAuditReasonLength);
  e.numbers = to_json(t.alert).dump();
  return e;
}

Expected<bool> record(store::Store& store, AlertBook& book, std::span<const Transition> transitions,
                      std::int64_t now_ms) {
  if (transitions.empty()) return true;
  std::vector<bank::AuditEntry> entries;
  entries.reserve(transitions.size());
  for (const Transition& t : transitions) entries.push_back(audit_entry(t, now_ms));
  auto stored = store::append_in_batches(store, {}, entries);
  if (!stored) return Unexpected{stored.error()};
  // Read back what was committed (and whatever others appended meanwhile).
  return refresh(store, book);
}

std::optional<std::int64_t> last_checkpoint(const AlertBook& book, const WorkloadFacts& w) {
  if (w.namespace_name.empty() || w.workload.empty() || w.workload_kind.empty()) return std::nullopt;
  std::string prefix = w.namespace_name + "/";
  for (char c : w.workload_kind) prefix += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  prefix += "-" + w.workload + "-";
  std::optional<std::int64_t> last;
  for (auto it = book.checkpoints.lower_bound(prefix); it != book.checkpoints.end() && it->first.starts_with(prefix);
       ++it) {
    // Exactly Kueue's five hex digits after the prefix: "ranker" must not take "ranker-a"'s notices.
    const std::string_view hash = std::string_view(it->first).substr(prefix.size());
    const bool kueue_hash = hash.size() == 5 && std::all_of(hash.begin(), hash.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
    if (kueue_hash) last = std::max(last.value_or(it->second), it->second);
  }
  return last;
}

}  // namespace gpubank::governance
