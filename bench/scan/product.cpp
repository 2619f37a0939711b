// scan_bench: the product's side of the measurement: gpubank's scans (governance::Scanner)
// on fresh stores, timed, with their Prometheus and scanner CPU, and checked.
#include <time.h>

#include <cctype>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "scan/scan_bench.hpp"

namespace gpubank::bench::scan {

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

std::unique_ptr<store::Store> fresh_store(const Context& x, const std::string& name) {
  const fs::path path = x.dir / name;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path.string() + suffix);
  auto store = store::Store::open(path.string());
  if (!store) throw std::runtime_error("store: " + store.error());
  std::vector<bank::AuditEntry> notices;
  for (const Workload& w : x.c.workloads) {
    if (!w.checkpoint_ms) continue;
    bank::AuditEntry e;
    e.time_ms = *w.checkpoint_ms;
    e.actor = "gpubank-controller/c-0";
    e.action = "ReclaimNoticeSent";
    std::string kind;
    for (char ch : w.kind) kind += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    e.object = "Workload/" + w.ns + "/" + kind + "-" + w.name + "-0f3a9";  // Kueue's name for the job's Workload
    e.decision = "CheckpointRequested";
    e.reason = "the lender reclaims its guarantee";
    e.numbers = "{}";
    notices.push_back(std::move(e));
  }
  if (!notices.empty()) {
    if (auto r = store::append_in_batches(**store, {}, notices); !r) throw std::runtime_error("store: " + r.error());
  }
  return std::move(*store);
}

ScanRun timed_scan(const Context& x, gov::Scanner& scanner, std::int64_t at_ms) {
  ScanRun run;
  const double cpu0 = process_cpu_seconds(x.prometheus.pid());
  const double thread0 = thread_cpu_seconds();
  const auto t0 = Clock::now();
  auto report = scanner.scan(x.policies, at_ms);
  run.seconds = seconds_since(t0);
  run.thread_cpu_s = thread_cpu_seconds() - thread0;
  run.prometheus_cpu_s = process_cpu_seconds(x.prometheus.pid()) - cpu0;
  if (!report) throw std::runtime_error("scan: " + report.error());
  run.report = std::move(*report);
  return run;
}

void scan_series(const Context& x, gov::PrometheusClient& via, const std::string& store_name, const std::string& what,
                 bool check_later, ScanSeries& into) {
  auto store = fresh_store(x, store_name);
  gov::Scanner scanner(via, *store, {}, {});
  ScanRun first = timed_scan(x, scanner, x.t1_ms);
  std::cerr << "scan_bench:   " << what << ": first scan " << fixed(first.seconds, 2) << " s ("
            << first.report.queries.size() << " queries, " << first.report.recorded.size() << " transitions), later";
  for (const std::string& d : check_scan(x.c, x.policies, first.report, x.c.t1_s, 10)) {
    x.failures.push_back(what + ", first scan: " + d);
  }
  std::vector<ScanRun> later;
  for (int k = 1; k <= x.o.later_scans; ++k) {
    check_interrupted();
    ScanRun run = timed_scan(x, scanner, x.t1_ms + k * kMinute * 1000);
    std::cerr << ' ' << fixed(run.seconds, 2);
    if (check_later) {
      for (const std::string& d : check_scan(x.c, x.policies, run.report, x.c.t1_s + k * kMinute, 10)) {
        x.failures.push_back(what + ", later scan " + std::to_string(k) + ": " + d);
      }
    }
    later.push_back(std::move(run));
  }
  std::cerr << " s\n";
  into.firsts.push_back(std::move(first));
  into.laters.push_back(std::move(later));
}

}  // namespace gpubank::bench::scan
