// One low-utilisation scan: read the record, ask Prometheus the planned queries, judge every
// workload, step the alerts, record what changed, deliver the notices and record those that
// went out. The decisions (assess, step) are pure; this is the shell around them.
//
// Order of writes, so that a crash at any point loses nothing and notifies nobody twice:
//   1. the transitions without a notice (Detected, ReclaimCandidate, Resolved), one transaction;
//   2. the notices delivered to every notifier, then recorded (Notified, Escalated,
//      Renotified), one transaction. A notifier that fails leaves them unrecorded: the next
//      scan asks for them again. A crash between delivery and record redelivers once
//      (at least once; Alertmanager deduplicates by labels).
//   3. Alertmanager's keep-alive of the open alerts and the resolutions.
// With no notifier configured, a notice is what the scan prints and is recorded as delivered.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/expected.hpp"
#include "governance/alert_store.hpp"
#include "governance/alerts.hpp"
#include "governance/lowutil.hpp"
#include "governance/notify.hpp"
#include "governance/prometheus_client.hpp"
#include "store/store.hpp"

namespace gpubank::governance {

struct QueryTiming {
  std::string name;
  double seconds = 0;  // wall-clock, reported only (nothing decides on it)
  std::size_t samples = 0;
};

struct ScanReport {
  std::int64_t at_ms = 0;
  std::vector<QueryTiming> queries;
  std::vector<Transition> recorded;     // in record order
  std::vector<Transition> undelivered;  // notices to retry at the next scan
  std::vector<std::string> delivery_errors;
  std::vector<Observed> observed;       // every verdict (for --verbose)
  std::map<std::string, std::size_t, std::less<>> excluded;
  std::map<std::string, std::size_t, std::less<>> verdicts;
  std::vector<std::string> warnings;
  std::size_t open_alerts = 0;
  std::size_t workloads = 0;
};

class Scanner {
 public:
  Scanner(PrometheusClient& prometheus, store::Store& store, std::vector<Notifier*> notifiers, AssessOptions options)
      : prometheus_(prometheus), store_(store), notifiers_(std::move(notifiers)), options_(std::move(options)) {}

  // A scan at `now_ms` under `policies`. Fails (recording nothing) when the record cannot be
  // read or a query fails; delivery failures are reported, not failures.
  Expected<ScanReport> scan(const std::vector<ScanPolicy>& policies, std::int64_t now_ms);

  [[nodiscard]] const AlertBook& book() const { return book_; }

 private:
  PrometheusClient& prometheus_;
  store::Store& store_;
  std::vector<Notifier*> notifiers_;
  AssessOptions options_;
  AlertBook book_;
};

// The scan as -o json prints it: one object per workload whose alert this scan opened,
// updated or resolved (its last recorded transition), plus every verdict with `verbose`.
[[nodiscard]] nlohmann::ordered_json to_json(const ScanReport& report, bool verbose);

}  // namespace gpubank::governance
