#include "governance/scanner.hpp"

#include <chrono>

#include "core/timestamp.hpp"
#include "governance/queries.hpp"

namespace gpubank::governance {

Expected<ScanReport> Scanner::scan(const std::vector<ScanPolicy>& policies, std::int64_t now_ms) {
  ScanReport report;
  report.at_ms = now_ms;
  if (auto read = refresh(store_, book_); !read) return Unexpected{"store: " + read.error()};
  report.warnings = unsupported_exclusions(policies);

  Answers answers;
  for (const Query& q : plan_queries(policies)) {
    const auto start = std::chrono::steady_clock::now();
    auto samples = prometheus_.query(q.promql, now_ms);
    if (!samples) return Unexpected{"query " + q.name + ": " + samples.error()};
    report.queries.push_back({q.name, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                              samples->size()});
    answers[q.name] = std::move(*samples);
  }
  auto facts = facts_from(answers, policies);
  if (!facts) return Unexpected{facts.error()};
  report.workloads = facts->size();
  report.observed.reserve(facts->size());
  for (WorkloadFacts& w : *facts) {
    w.last_checkpoint_ms = last_checkpoint(book_, w);
    Verdict v = assess(w, policies, now_ms, options_);
    report.observed.push_back({std::move(w), v});
  }
  ScanResult result = step(book_.open, book_.last_ids, report.observed, now_ms);
  report.excluded = std::move(result.excluded);
  report.verdicts = std::move(result.verdicts);

  // 1. What needs no delivery.
  std::vector<Transition> direct;
  std::vector<Transition> notices;
  std::vector<Transition> resolved;
  for (Transition& t : result.transitions) {
    if (t.notice) {
      notices.push_back(std::move(t));
    } else {
      if (t.alert.state == AlertState::Resolved) resolved.push_back(t);
      direct.push_back(std::move(t));
    }
  }
  if (auto stored = record(store_, book_, direct, now_ms); !stored) return Unexpected{"store: " + stored.error()};
  report.recorded = direct;

  // 2. The notices: recorded once every notifier took them.
  bool delivered = true;
  for (Notifier* n : notifiers_) {
    if (notices.empty()) break;
    if (auto sent = n->deliver(notices, now_ms); !sent) {
      report.delivery_errors.push_back(n->describe() + ": " + sent.error());
      delivered = false;
    }
  }
  if (delivered) {
    if (auto stored = record(store_, book_, notices, now_ms); !stored) return Unexpected{"store: " + stored.error()};
    report.recorded.insert(report.recorded.end(), notices.begin(), notices.end());
  } else {
    report.undelivered = std::move(notices);
  }

  // 3. Keep Alertmanager's view current.
  std::vector<Alert> open;
  open.reserve(book_.open.size());
  for (const auto& [uid, a] : book_.open) open.push_back(a);
  for (Notifier* n : notifiers_) {
    if (auto sent = n->keep_alive(open, resolved, now_ms); !sent) {
      report.delivery_errors.push_back(n->describe() + ": " + sent.error());
    }
  }
  report.open_alerts = book_.open.size();
  return report;
}

nlohmann::ordered_json to_json(const ScanReport& report, bool verbose) {
  using Json = nlohmann::ordered_json;
  Json alerts = Json::array();
  // The last recorded transition of each workload, in workload order.
  std::map<std::string, const Transition*> last;
  for (const Transition& t : report.recorded) last[t.alert.workload_uid] = &t;
  for (const auto& [uid, t] : last) {
    const Alert& a = t->alert;
    Json j{{"workload_uid", a.workload_uid},
           {"business_group", a.evidence.business_group},
           {"owner_id", a.evidence.owner_id},
           {"state", std::string(to_string(a.state))},
           {"action", t->action},
           {"alert_id", a.id},
           {"policy", a.policy}};
    if (!a.resolution.empty()) j["resolution"] = a.resolution;
    j["evidence"] = to_json(a.evidence);
    alerts.push_back(std::move(j));
  }
  Json queries = Json::array();
  for (const QueryTiming& q : report.queries) {
    queries.push_back(Json{{"name", q.name}, {"seconds", q.seconds}, {"samples", q.samples}});
  }
  Json out{{"at", format_rfc3339(Timestamp(std::chrono::milliseconds(report.at_ms)))},
           {"workloads", report.workloads},
           {"openAlerts", report.open_alerts},
           {"alerts", std::move(alerts)},
           {"verdicts", report.verdicts},
           {"excluded", report.excluded},
           {"queries", std::move(queries)}};
  if (!report.undelivered.empty()) {
    Json pending = Json::array();
    for (const Transition& t : report.undelivered) {
      pending.push_back(Json{{"workload_uid", t.alert.workload_uid}, {"action", t.action},
                             {"audience", std::string(to_string(t.notice.value_or(Audience::Owner)))}});
    }
    out["undelivered"] = std::move(pending);
  }
  if (!report.delivery_errors.empty()) out["deliveryErrors"] = report.delivery_errors;
  if (!report.warnings.empty()) out["warnings"] = report.warnings;
  if (verbose) {
    Json all = Json::array();
    for (const Observed& o : report.observed) {
      Json j{{"workload_uid", o.facts.workload_uid},
             {"business_group", o.facts.business_group},
             {"owner_id", o.facts.owner_id},
             {"verdict", std::string(to_string(o.verdict.kind))},
             {"reason", o.verdict.reason}};
      if (o.verdict.policy != nullptr) j["policy"] = o.verdict.policy->name;
      all.push_back(std::move(j));
    }
    out["verdictsByWorkload"] = std::move(all);
  }
  return out;
}

}  // namespace gpubank::governance
