// scan_bench: what the scan must find: each workload's facts as the generator made them,
// and the comparison of a scan's report with them and with governance::assess.
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "scan/scan_bench.hpp"

namespace gpubank::bench::scan {

gov::WorkloadFacts intended_facts(const Cluster& c, std::size_t wi, const std::vector<gov::ScanPolicy>& policies,
                                  std::int64_t now_s) {
  const Workload& w = c.workloads[wi];
  const PoolDef& pool = kPools[w.pool];
  gov::WorkloadFacts f;
  f.workload_uid = w.key();
  f.business_group = w.group;
  f.owner_id = w.owner;
  f.namespace_name = w.ns;
  f.workload_kind = w.kind;
  f.workload = w.name;
  f.workload_type = w.type;
  f.pool = pool.name;
  f.gpu_model = pool.gpu_model;
  f.partition = pool.partition;
  f.capacity_role = w.capacity_role;
  f.checkpointable = w.checkpointable;
  f.keep_running_until_s = w.keep_until_s;
  f.last_checkpoint_ms = w.checkpoint_ms;
  double started = 0;
  for (std::size_t pi = 0; pi < w.pods.size(); ++pi) {
    const Pod& p = w.pods[pi];
    started = pi == 0 ? static_cast<double>(p.start_s) : std::min(started, static_cast<double>(p.start_s));
    for (int d : p.devices) f.gpus += 1.0 / static_cast<double>(c.devices[static_cast<std::size_t>(d)].holders.size());
  }
  f.started_s = started;
  const gov::ScanPolicy* policy = gov::governing_policy(f, policies);
  if (policy == nullptr) return f;
  const std::int64_t window_s = policy->spec.window.milliseconds() / 1000;
  // Per device series: the average of each field over the samples in [now - window, now]
  // (Prometheus 2's range selector includes both ends), then the average over the series.
  double util = 0, memory = 0, power = 0;
  int n = 0;
  for (const Pod& p : w.pods) {
    for (int d : p.devices) {
      double u = 0, used = 0, free = 0, pw = 0, limit = 0;
      int samples = 0;
      for (int k = 0; k < c.steps; ++k) {
        const std::int64_t ts = c.ts(k);
        if (ts < now_s - window_s || ts > now_s || ts < p.start_s) continue;
        const DeviceSample s = device_sample(c, d, ts);
        u += s.util;
        used += s.fb_used;
        free += s.fb_free;
        pw += s.power;
        limit += s.limit;
        ++samples;
      }
      if (samples == 0) continue;
      util += u / samples;
      memory += 100 * (used / samples) / (used / samples + free / samples);
      power += 100 * (pw / samples) / (limit / samples);
      ++n;
    }
  }
  if (n > 0) {
    f.gpu_utilization = util / n;
    f.memory_utilization = memory / n;
    f.power_fraction = power / n;
  }
  return f;
}

namespace {

std::string without_numbers(const std::string& text) {
  std::string out;
  for (char ch : text) {
    const bool digit = (ch >= '0' && ch <= '9') || ch == '.';
    if (!digit) {
      out += ch;
    } else if (out.empty() || out.back() != '#') {
      out += '#';
    }
  }
  return out;
}

bool near(const std::optional<double>& a, const std::optional<double>& b, double tolerance) {
  if (a.has_value() != b.has_value()) return false;
  return !a || std::fabs(*a - *b) <= tolerance;
}

std::string show(const std::optional<double>& v) { return v ? fixed(*v, 6) : "none"; }

}  // namespace

std::vector<std::string> check_scan(const Cluster& c, const std::vector<gov::ScanPolicy>& policies,
                                    const gov::ScanReport& report, std::int64_t now_s, std::size_t limit) {
  std::vector<std::string> out;
  std::map<std::string, const gov::Observed*, std::less<>> seen;
  for (const gov::Observed& o : report.observed) seen[o.facts.workload_uid] = &o;
  std::size_t differences = 0;
  auto differ = [&](const std::string& what) {
    if (++differences <= limit) out.push_back(what);
  };
  if (report.workloads != c.workloads.size()) {
    differ("the scan saw " + std::to_string(report.workloads) + " workloads, not " + std::to_string(c.workloads.size()));
  }
  for (std::size_t wi = 0; wi < c.workloads.size(); ++wi) {
    const gov::WorkloadFacts want = intended_facts(c, wi, policies, now_s);
    const auto it = seen.find(want.workload_uid);
    if (it == seen.end()) {
      differ(want.workload_uid + ": not in the scan");
      continue;
    }
    const gov::WorkloadFacts& got = it->second->facts;
    const std::string who = want.workload_uid + " (" + c.workloads[wi].type + ", " + c.workloads[wi].category + ")";
    if (std::tie(got.business_group, got.owner_id, got.namespace_name, got.workload_kind, got.workload, got.workload_type,
                 got.pool, got.gpu_model, got.partition, got.capacity_role, got.checkpointable,
                 got.keep_running_until_s) !=
        std::tie(want.business_group, want.owner_id, want.namespace_name, want.workload_kind, want.workload,
                 want.workload_type, want.pool, want.gpu_model, want.partition, want.capacity_role,
                 want.checkpointable, want.keep_running_until_s)) {
      differ(who + ": labels differ");
    }
    if (std::fabs(got.gpus - want.gpus) > 1e-9) differ(who + ": " + fixed(got.gpus, 3) + " GPUs, not " + fixed(want.gpus, 3));
    if (!near(got.started_s, want.started_s, 1e-6)) differ(who + ": started " + show(got.started_s) + ", not " + show(want.started_s));
    if (!near(got.gpu_utilization, want.gpu_utilization, 1e-6) || !near(got.memory_utilization, want.memory_utilization, 1e-6) ||
        !near(got.power_fraction, want.power_fraction, 1e-6)) {
      differ(who + ": averages " + show(got.gpu_utilization) + "/" + show(got.memory_utilization) + "/" +
             show(got.power_fraction) + ", not " + show(want.gpu_utilization) + "/" + show(want.memory_utilization) + "/" +
             show(want.power_fraction));
    }
    const gov::Verdict v = gov::assess(want, policies, now_s * 1000);
    const gov::Verdict& g = it->second->verdict;
    // The reasons' percentages are left out: Prometheus' running means and these sums agree
    // to about 1e-12, which can round 30.75 either way.
    if (g.kind != v.kind || without_numbers(g.reason) != without_numbers(v.reason)) {
      differ(who + ": verdict " + std::string(gov::to_string(g.kind)) + " (" + g.reason + "), not " +
             std::string(gov::to_string(v.kind)) + " (" + v.reason + ")");
    }
  }
  if (differences > limit) out.push_back("... " + std::to_string(differences - limit) + " more");
  return out;
}

}  // namespace gpubank::bench::scan
