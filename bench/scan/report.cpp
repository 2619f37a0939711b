// scan_bench: the summary: the medians of the measurements, in Markdown (the tables that
// bench/RESULTS.md holds), to stdout and --summary, and the numbers' formatting.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/timestamp.hpp"
#include "document/decode.hpp"
#include "governance/queries.hpp"
#include "policy/schema.hpp"
#include "scan/scan_bench.hpp"

namespace gpubank::bench::scan {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

// 12345678 -> "12,345,678".
std::string grouped(std::uint64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string list_of(const std::vector<double>& v, int digits) {
  std::string out;
  for (double x : v) out += (out.empty() ? "" : ", ") + fixed(x, digits);
  return out;
}

// A path under the source tree as relative to it (the summaries go into RESULTS.md).
std::string shown_path(const std::string& path) {
  const std::string root = std::string(GPUBANK_SOURCE_DIR) + "/";
  return path.rfind(root, 0) == 0 ? path.substr(root.size()) : path;
}

std::string rfc3339(std::int64_t s) { return format_rfc3339(Timestamp(std::chrono::seconds(s))); }

struct ScanStats {
  std::vector<double> first_s, first_prom_cpu, first_thread_cpu, first_query_sum;
  std::vector<double> later_s, later_prom_cpu, later_thread_cpu, later_query_sum;
  std::map<std::string, std::vector<double>> first_query_ms, later_query_ms;
  std::map<std::string, std::size_t> query_samples;  // at T1
  std::vector<std::string> query_order;
  double slowest = 0;
  std::size_t count = 0;
};

ScanStats stats_of(const ScanSeries& series) {
  ScanStats st;
  auto take = [&](const ScanRun& r, bool first) {
    double sum = 0;
    for (const gov::QueryTiming& q : r.report.queries) {
      if (first) {
        if (!st.query_samples.count(q.name)) st.query_order.push_back(q.name);
        st.query_samples[q.name] = q.samples;
      }
      (first ? st.first_query_ms : st.later_query_ms)[q.name].push_back(q.seconds * 1000);
      sum += q.seconds;
    }
    (first ? st.first_s : st.later_s).push_back(r.seconds);
    (first ? st.first_prom_cpu : st.later_prom_cpu).push_back(r.prometheus_cpu_s);
    (first ? st.first_thread_cpu : st.later_thread_cpu).push_back(r.thread_cpu_s);
    (first ? st.first_query_sum : st.later_query_sum).push_back(sum);
    st.slowest = std::max(st.slowest, r.seconds);
    ++st.count;
  };
  for (const ScanRun& r : series.firsts) take(r, true);
  for (const auto& rep : series.laters) {
    for (const ScanRun& r : rep) take(r, false);
  }
  return st;
}

std::vector<double> map_get(const std::map<std::string, std::vector<double>>& m, const std::string& key) {
  const auto it = m.find(key);
  return it == m.end() ? std::vector<double>{} : it->second;
}

std::string verdict_counts(const gov::ScanReport& r) {
  std::string out;
  for (const auto& [kind, count] : r.verdicts) out += (out.empty() ? "" : ", ") + kind + " " + grouped(count);
  if (!r.excluded.empty()) {
    out += " (excluded: ";
    bool first = true;
    for (const auto& [reason, count] : r.excluded) {
      out += (first ? "" : ", ") + reason + " " + grouped(count);
      first = false;
    }
    out += ")";
  }
  return out;
}

std::string transition_counts(const std::vector<gov::Transition>& recorded) {
  std::map<std::string, std::size_t> by_action;
  for (const gov::Transition& t : recorded) ++by_action[t.action];
  std::string out;
  for (const auto& [action, count] : by_action) out += (out.empty() ? "" : ", ") + action + " " + grouped(count);
  return out.empty() ? "none" : out;
}

}  // namespace

int report(const Options& o, const Cluster& c, const std::vector<gov::ScanPolicy>& policies, const Measured& m) {
  const std::string& load_before = m.load_before;
  const std::string& load_after = m.load_after;
  const std::string& prometheus_version = m.prometheus_version;
  const std::uint64_t samples = m.samples;
  const auto& mix = m.mix;
  const LoadReport& load = m.load;
  const double settle_s = m.settle_s;
  const std::vector<double>& probes = m.probes;
  const std::vector<std::string>& failures = m.failures;
  const ScanSeries& product = m.product;
  const ScanSeries& fixed_client = m.fixed_client;
  const std::vector<BaselineRun>& baselines = m.baselines;
  const BaselineRun& baseline_product = m.baseline_product;
  const bool extrapolated = m.extrapolated;
  std::map<std::string, std::size_t> answer_bytes = m.answer_bytes;  // [] below: 0 for a query that had no answer
  const double prometheus_rss_end = m.prometheus_rss_end;

  const ScanStats ps = stats_of(product);
  const ScanStats ns = stats_of(fixed_client);
  std::vector<double> baseline_s, baseline_cpu, baseline_all_ms;
  for (const BaselineRun& b : baselines) {
    baseline_s.push_back(b.seconds);
    baseline_cpu.push_back(b.prometheus_cpu_s);
    baseline_all_ms.insert(baseline_all_ms.end(), b.query_ms.begin(), b.query_ms.end());
  }
  const double scale = static_cast<double>(c.workloads.size()) / static_cast<double>(m.baseline_query_count);
  const double baseline_total = median(baseline_s) * scale;
  const std::size_t queries_per_scan = product.firsts.empty() ? 0 : product.firsts[0].report.queries.size();
  std::size_t n_held = 0;
  for (const Device& d : c.devices) n_held += d.holders.empty() ? 0 : 1;
  std::size_t uidless = 0;
  for (const Workload& w : c.workloads) uidless += w.has_uid ? 0 : 1;

  std::ostringstream out;
  out << "scan_bench: " << grouped(c.workloads.size()) << " workloads holding 2 GPUs each on a cluster of "
      << grouped(c.devices.size()) << " GPUs (" << grouped(c.nodes.size()) << " nodes of 8; "
      << grouped(static_cast<std::uint64_t>(c.shared_notebooks)) << " notebooks time-sliced two to a GPU, so "
      << grouped(n_held) << " GPUs held and " << grouped(static_cast<std::uint64_t>(c.unallocated))
      << " unallocated; the " << grouped(uidless)
      << " InferenceServices and LeaderWorkerSets carry no workload_uid and are keyed by kind, namespace and name). "
      << grouped(c.series_count()) << " series: per DCGM field " << grouped(family_size(c, Field::Util))
      << " (a device per holder, and the unallocated ones), " << grouped(family_size(c, Field::Allocation))
      << " gpubank_gpu_allocation_info, " << grouped(family_size(c, Field::PodStart))
      << " gpubank_pod_start_time_seconds (one per pod), " << c.loans.size()
      << " gpubank_bank_loan_gpus. One sample every " << c.step_s << " s from T1-" << (c.t1_s - c.from_s) / kMinute
      << "m to T1+" << (c.ts(c.steps - 1) - c.t1_s) / kMinute << "m (" << c.steps << " per series; T1 = "
      << rfc3339(c.t1_s) << "), " << grouped(samples) << " samples. Policies: " << shown_path(o.policies) << " (";
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto& p = policies[i];
    out << (i ? "; " : "") << p.name << ": " << gov::promql_duration(p.spec.window) << " window over "
        << doc::enum_name(p.spec.match.workload_type) << (p.spec.match.resource_pool ? " in " + *p.spec.match.resource_pool : "");
  }
  out << "). " << prometheus_version << ". Load average before: " << load_before << ", after: " << load_after << ".\n\n";

  out << "| workload type | category | workloads |\n|---|---|---:|\n";
  for (const auto& [type, categories] : mix) {
    for (const auto& [category, count] : categories) {
      out << "| " << type << " | " << category << " | " << grouped(static_cast<std::uint64_t>(count)) << " |\n";
    }
  }
  out << "\nLoading: ";
  if (load.how == "scraped") {
    out << "Prometheus scraped the series from " << c.shards << " loopback targets (this program, one page per step, "
        << "OpenMetrics with explicit timestamps; a shard's next page served once a query showed its marker) every "
        << o.scrape_interval_ms << " ms: " << c.steps << " pages per shard in " << fixed(load.load_s, 1) << " s ("
        << grouped(static_cast<std::uint64_t>(static_cast<double>(samples) / load.load_s)) << " samples/s"
        << (load.paced_s > 0 ? "; of that, up to " + fixed(load.paced_s, 0) + " s waiting for the clock to let the last pages in" : "")
        << ", " << grouped(load.scrapes) << " scrapes for "
        << grouped(static_cast<std::uint64_t>(c.steps) * static_cast<std::uint64_t>(c.shards))
        << " pages), Prometheus using " << fixed(load.prometheus_cpu_s, 1) << " s of CPU; Prometheus started and ready in "
        << fixed(load.prometheus_ready_s, 1) << " s before that. The data is in Prometheus' head, "
        << fixed(load.prometheus_rss_mib, 0) << " MiB resident after the load, " << fixed(prometheus_rss_end, 0)
        << " MiB after the scans; its data directory (WAL) " << fixed(static_cast<double>(load.tsdb_bytes) / (1 << 20), 0)
        << " MiB.\n";
  } else {
    out << "the series written as one OpenMetrics file of " << fixed(static_cast<double>(load.file_bytes) / (1 << 30), 2)
        << " GiB in " << fixed(load.write_s, 1) << " s, `promtool tsdb create-blocks-from openmetrics` on it "
        << fixed(load.promtool_s, 1) << " s (" << grouped(static_cast<std::uint64_t>(static_cast<double>(samples) / load.promtool_s))
        << " samples/s, peak resident set " << fixed(load.promtool_peak_mib, 0) << " MiB; blocks of " << fixed(static_cast<double>(load.tsdb_bytes) / (1 << 20), 0)
        << " MiB), Prometheus started on the blocks and ready in " << fixed(load.prometheus_ready_s, 1) << " s, "
        << fixed(load.prometheus_rss_mib, 0) << " MiB resident, " << fixed(prometheus_rss_end, 0)
        << " MiB after the scans. The data is in persisted blocks (the file is deleted).\n";
  }

  out << "\nThe scans: governance::Scanner, a fresh SQLite store per repetition, no notifier (the printed output is the "
         "delivery: notices are recorded at once); "
      << o.repetitions << " repetitions of a first scan at T1 and " << o.later_scans
      << " later scans a minute apart, medians, after Prometheus was idle (" << fixed(settle_s, 0)
      << " s after the load) and one unreported warm-up scan. Each repetition scans through "
         "gpubank's client (governance::PrometheusClient, what `gpubank scan` runs) and then through the same protocol "
         "with TCP_NODELAY (this program's): the product's client leaves Nagle's algorithm on, and httplib sends a "
         "POST's headers and body in two writes, so each query's body waits for the server's delayed ACK (about 40 ms on "
         "Linux). Prometheus CPU: its process's user + system time over the scan, from /proc; scanner CPU: the scanning "
         "thread's (HTTP, JSON, judging, SQLite). Host cache contention per repetition (bench/cache_probe.hpp, ns per "
         "dependent load through 8 MiB, the larger of the readings before and after; about 25-30 when the host is "
         "quiet): "
      << list_of(probes, 0) << ".\n\n";
  out << "| scan | client | wall (s), median | each run (s) | queries | Prometheus CPU (s) | scanner CPU (s) | "
         "query time, sum (s) | transitions recorded (first repetition) |\n|---|---|---:|---|---:|---:|---:|---:|---|\n";
  auto scan_rows = [&](const ScanSeries& series, const ScanStats& st, const char* client_name) {
    if (series.firsts.empty()) return;
    out << "| first (opens the alerts, notifies, records) | " << client_name << " | " << fixed(median(st.first_s), 2)
        << " | " << list_of(st.first_s, 2) << " | " << queries_per_scan << " | " << fixed(median(st.first_prom_cpu), 2)
        << " | " << fixed(median(st.first_thread_cpu), 2) << " | " << fixed(median(st.first_query_sum), 2) << " | "
        << transition_counts(series.firsts[0].report.recorded) << " |\n";
    if (st.later_s.empty()) return;
    std::string per_scan;
    for (const ScanRun& r : series.laters[0]) per_scan += (per_scan.empty() ? "" : "; ") + transition_counts(r.report.recorded);
    out << "| later (T1+1m ... T1+" << o.later_scans << "m) | " << client_name << " | " << fixed(median(st.later_s), 2)
        << " | " << fixed(*std::min_element(st.later_s.begin(), st.later_s.end()), 2) << " to "
        << fixed(*std::max_element(st.later_s.begin(), st.later_s.end()), 2) << " (" << st.later_s.size() << " scans) | " << queries_per_scan << " | " << fixed(median(st.later_prom_cpu), 2)
        << " | " << fixed(median(st.later_thread_cpu), 2) << " | " << fixed(median(st.later_query_sum), 2) << " | "
        << per_scan << " |\n";
  };
  scan_rows(product, ps, "gpubank's");
  scan_rows(fixed_client, ns, "TCP_NODELAY");
  if (!product.firsts.empty()) {
    out << "\nVerdicts at T1: " << verdict_counts(product.firsts[0].report) << "; "
        << product.firsts[0].report.open_alerts << " alerts open after the first scan.\n";
    out << "\n| query | samples at T1 | answer (bytes) | gpubank's client, first scan: median (ms) | later scans: median (ms) "
           "| TCP_NODELAY client, first scan: median (ms) |\n|---|---:|---:|---:|---:|---:|\n";
    for (const std::string& name : ps.query_order) {
      out << "| " << name << " | " << grouped(ps.query_samples.at(name)) << " | " << grouped(answer_bytes[name]) << " | "
          << fixed(median(ps.first_query_ms.at(name)), 1) << " | " << fixed(median(map_get(ps.later_query_ms, name)), 1)
          << " | " << fixed(median(map_get(ns.first_query_ms, name)), 1) << " |\n";
    }
    out << "\nAnswer sizes: the same queries posted once more after the scans (Prometheus' JSON); gpubank's client "
           "refuses an answer over "
        << grouped(serving::kPromMaxBodyBytes) << " bytes (serving::kPromMaxBodyBytes).\n";
  }

  out << "\nBaseline: one query per workload at T1, one after another through the TCP_NODELAY client (the baseline's "
         "best configuration), asking only that workload's series (`workload_uid=\"...\"`, or its namespace, "
         "workload_kind and workload where the pods carry no UID): its allocation series, its earliest pod start and "
         "the averages its governing policy's thresholds need over that policy's window (the first two only for a "
         "workload no policy covers), each tagged by label_replace and joined with `or`. "
      << (extrapolated ? "**A fixed random subset of " + grouped(m.baseline_query_count) + " of the " +
                             grouped(c.workloads.size()) + " workloads, the total extrapolated x" + fixed(scale, 2) + ".** "
                       : "Every workload. ")
      << baselines.size() << " repetitions, medians.\n\n";
  out << "| | queries | wall (s), median | each run (s) | per query: median (ms) | p99 (ms) | Prometheus CPU (s) |\n"
         "|---|---:|---:|---|---:|---:|---:|\n";
  out << "| baseline, " << (extrapolated ? "extrapolated to " : "") << grouped(c.workloads.size()) << " workloads | "
      << grouped(c.workloads.size()) << " | " << fixed(baseline_total, 1) << " | " << list_of(baseline_s, 1)
      << (extrapolated ? " (measured, " + grouped(m.baseline_query_count) + " queries)" : "") << " | "
      << fixed(median(baseline_all_ms), 2) << " | " << fixed(percentile(baseline_all_ms, 0.99), 2) << " | "
      << fixed(median(baseline_cpu) * scale, 1) << " |\n";
  if (!baseline_product.query_ms.empty()) {
    out << "| baseline through gpubank's client, first " << grouped(baseline_product.query_ms.size())
        << " workloads, extrapolated to " << grouped(c.workloads.size()) << " | " << grouped(c.workloads.size()) << " | "
        << fixed(baseline_product.seconds * static_cast<double>(c.workloads.size()) /
                     static_cast<double>(baseline_product.query_ms.size()),
                 1)
        << " | " << fixed(baseline_product.seconds, 1) << " (measured) | " << fixed(median(baseline_product.query_ms), 2)
        << " | " << fixed(percentile(baseline_product.query_ms, 0.99), 2) << " | |\n";
  }
  out << "| gpubank scan, first, gpubank's client | " << queries_per_scan << " | " << fixed(median(ps.first_s), 2) << " | "
      << list_of(ps.first_s, 2) << " | | | " << fixed(median(ps.first_prom_cpu), 2) << " |\n";
  out << "| gpubank scan, later, gpubank's client | " << queries_per_scan << " | " << fixed(median(ps.later_s), 2)
      << " | | | | " << fixed(median(ps.later_prom_cpu), 2) << " |\n";
  out << "| gpubank scan, first, TCP_NODELAY client | " << queries_per_scan << " | " << fixed(median(ns.first_s), 2)
      << " | " << list_of(ns.first_s, 2) << " | | | " << fixed(median(ns.first_prom_cpu), 2) << " |\n";
  out << "\nBaseline / scan, wall time: " << fixed(baseline_total / std::max(1e-9, median(ps.first_s)), 1)
      << "x the first scan, " << fixed(baseline_total / std::max(1e-9, median(ps.later_s)), 1)
      << "x a later scan (gpubank's client); " << fixed(baseline_total / std::max(1e-9, median(ns.first_s)), 1)
      << "x the first scan with both on the TCP_NODELAY client. Prometheus CPU: "
      << fixed(median(baseline_cpu) * scale / std::max(1e-9, median(ps.first_prom_cpu)), 1)
      << "x the first scan's. Queries: " << grouped(c.workloads.size()) << " against " << queries_per_scan << ".\n";

  const double slowest = std::max(ps.slowest, ns.slowest);
  const bool met = slowest < 10.0 && queries_per_scan <= 10;
  out << "\n**Target: a scan over " << grouped(c.workloads.size()) << " workloads on " << grouped(c.devices.size())
      << " GPUs in under 10 s with at most 10 PromQL queries: " << (met ? "met" : "NOT met") << "** ("
      << queries_per_scan << " queries; through gpubank's client the first scan " << fixed(median(ps.first_s), 2)
      << " s and a later scan " << fixed(median(ps.later_s), 2) << " s, medians; the slowest of all "
      << ps.count + ns.count << " scans " << fixed(slowest, 2) << " s).\n";
  out << "\nChecks: " << (failures.empty() ? "passed" : "FAILED")
      << ": every first scan's facts (labels, GPUs, start, averages over the governing window) and verdicts, and those "
         "of the later scans of the first repetition, equal the generator's workload by workload, and every baseline "
         "answer of the first repetition equals the first scan's facts for its workload.\n";

  for (const std::string& f : failures) std::cerr << "scan_bench: FAILED: " << f << '\n';
  std::cout << '\n' << out.str();
  if (!o.summary.empty()) {
    std::ofstream file(o.summary);
    file << out.str();
    if (!file) {
      std::cerr << "scan_bench: cannot write " << o.summary << '\n';
      return 1;
    }
  }
  return failures.empty() ? 0 : 1;
}

}  // namespace gpubank::bench::scan
