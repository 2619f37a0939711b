// scan_bench: the series of the generated cluster as the attribution exporter names them,
// their sample values, and their text (a scrape page per shard and step; one OpenMetrics file).
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "scan/scan_bench.hpp"

namespace gpubank::bench::scan {

namespace {

constexpr const char* kFieldNames[] = {"DCGM_FI_DEV_GPU_UTIL",       "DCGM_FI_DEV_FB_USED",
                                       "DCGM_FI_DEV_FB_FREE",        "DCGM_FI_DEV_POWER_USAGE",
                                       "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gpubank_gpu_allocation_info",
                                       "gpubank_pod_start_time_seconds", "gpubank_bank_loan_gpus"};

// A 64-bit mix (splitmix64's finaliser): the noise of a sample is a function of where and
// when it is, so a page can be rendered again identically and averages recomputed exactly.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
double noise(std::uint64_t device, std::uint64_t field, std::int64_t ts) {  // in [-1, 1)
  const std::uint64_t h = mix(device * 0x100000001b3ULL ^ mix(field ^ mix(static_cast<std::uint64_t>(ts))));
  return static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0;
}

using Labels = std::vector<std::pair<std::string, std::string>>;

std::string series_text(const char* name, const Labels& labels) {
  std::string out = name;
  out += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (v.empty()) continue;  // the exporter leaves out a label it does not know
    out += (first ? "" : ",") + k + "=\"" + v + "\"";
    first = false;
  }
  return out + "} ";
}

}  // namespace

void build_series(Cluster& c) {
  auto add = [&](int node, Series s) {
    c.series[static_cast<std::size_t>(c.nodes[static_cast<std::size_t>(node)].shard)][static_cast<std::size_t>(s.field)]
        .push_back(std::move(s));
  };
  for (std::size_t di = 0; di < c.devices.size(); ++di) {
    const Device& d = c.devices[di];
    const PoolDef& pool = kPools[d.pool];
    const Node& node = c.nodes[static_cast<std::size_t>(d.node)];
    const Labels dcgm{{"gpu", std::to_string(d.index)},
                      {"UUID", d.uuid},
                      {"device", "nvidia" + std::to_string(d.index)},
                      {"modelName", pool.model_name},
                      {"Hostname", node.name}};
    auto dcgm_series = [&](Labels labels, int wi, int pi, std::int64_t first) {
      for (int f = 0; f <= static_cast<int>(Field::PowerLimit); ++f) {
        add(d.node, {kFields[f], static_cast<int>(di), wi, pi, -1, first, series_text(kFieldNames[f], labels)});
      }
    };
    if (d.holders.empty()) {
      Labels l = dcgm;
      l.push_back({"mapping_status", "unallocated"});
      dcgm_series(l, -1, -1, c.from_s);
      continue;
    }
    for (const auto& [wi, pi] : d.holders) {
      const Workload& w = c.workloads[static_cast<std::size_t>(wi)];
      const Pod& p = w.pods[static_cast<std::size_t>(pi)];
      Labels l = dcgm;
      l.insert(l.end(), {{"mapping_status", "mapped"},
                         {"namespace", w.ns},
                         {"pod", p.name},
                         {"container", p.container},
                         {"pod_uid", p.uid},
                         {"business_group", w.group},
                         {"owner_id", w.owner},
                         {"cost_center", w.cost_center},
                         {"queue", w.queue},
                         {"workload_type", w.type},
                         {"workload_kind", w.kind},
                         {"workload", w.name},
                         {"workload_uid", w.has_uid ? w.uid : ""},
                         {"sharing", w.shared ? "time-sliced" : ""}});
      const std::int64_t first = std::max(c.from_s, p.start_s);
      dcgm_series(l, wi, pi, first);
      const Labels alloc{{"node", node.name},
                         {"pool", pool.name},
                         {"gpu_model", pool.gpu_model},
                         {"partition", pool.partition},
                         {"gpu_uuid", d.uuid},
                         {"namespace", w.ns},
                         {"pod", p.name},
                         {"container", p.container},
                         {"business_group", w.group},
                         {"owner_id", w.owner},
                         {"cost_center", w.cost_center},
                         {"workload_type", w.type},
                         {"workload_kind", w.kind},
                         {"workload", w.name},
                         {"workload_uid", w.has_uid ? w.uid : ""},
                         {"queue", w.queue},
                         {"capacity_role", w.capacity_role},
                         {"checkpointable", w.checkpointable},
                         {"keep_running_until", w.keep_until_s ? std::to_string(*w.keep_until_s) : ""}};
      add(d.node, {Field::Allocation, static_cast<int>(di), wi, pi, -1, first,
                   series_text(kFieldNames[static_cast<int>(Field::Allocation)], alloc)});
    }
  }
  // One start per pod, from the exporter of the node that holds its first device.
  for (std::size_t wi = 0; wi < c.workloads.size(); ++wi) {
    const Workload& w = c.workloads[wi];
    for (std::size_t pi = 0; pi < w.pods.size(); ++pi) {
      const Pod& p = w.pods[pi];
      const Labels l{{"namespace", w.ns},
                     {"pod", p.name},
                     {"pod_uid", p.uid},
                     {"workload_kind", w.kind},
                     {"workload", w.name},
                     {"workload_uid", w.has_uid ? w.uid : ""},
                     {"business_group", w.group},
                     {"owner_id", w.owner}};
      add(c.devices[static_cast<std::size_t>(p.devices[0])].node,
          {Field::PodStart, -1, static_cast<int>(wi), static_cast<int>(pi), -1, std::max(c.from_s, p.start_s),
           series_text(kFieldNames[static_cast<int>(Field::PodStart)], l)});
    }
  }
  // The controller's loans, on the first shard.
  for (std::size_t li = 0; li < c.loans.size(); ++li) {
    const Loan& loan = c.loans[li];
    c.series[0][static_cast<std::size_t>(Field::Loan)].push_back(
        {Field::Loan, -1, -1, -1, static_cast<int>(li), c.from_s,
         series_text(kFieldNames[static_cast<int>(Field::Loan)],
                     {{"pool", loan.pool}, {"lender", loan.lender}, {"borrower", loan.borrower}})});
  }
}

DeviceSample device_sample(const Cluster& c, int device, std::int64_t ts) {
  const Device& d = c.devices[static_cast<std::size_t>(device)];
  const PoolDef& pool = kPools[d.pool];
  double util = 0, spread = 0.5, mem = 0.005, power = 0.09;
  if (!d.holders.empty()) {
    const Workload& w = c.workloads[static_cast<std::size_t>(d.holders[0].first)];  // a shared device: its first holder's
    const bool busy = w.busy_from_s && ts >= *w.busy_from_s;
    util = busy ? 90 : w.util;
    spread = w.util_spread;
    mem = busy ? 0.7 : w.mem;
    power = busy ? 0.8 : w.power;
  }
  const auto dev = static_cast<std::uint64_t>(device);
  DeviceSample s{};
  s.util = std::round(std::clamp(util + spread * noise(dev, 1, ts), 0.0, 100.0));
  s.fb_used = std::round(pool.fb_mib * std::clamp(mem + 0.02 * noise(dev, 2, ts), 0.002, 0.998));
  s.fb_free = pool.fb_mib - s.fb_used;
  s.power = std::round(pool.power_limit_w * std::clamp(power + 0.03 * noise(dev, 3, ts), 0.05, 1.0) * 10) / 10;
  s.limit = pool.power_limit_w;
  return s;
}

namespace {

double series_value(const Cluster& c, const Series& s, std::int64_t ts) {
  switch (s.field) {
    case Field::Util: return device_sample(c, s.device, ts).util;
    case Field::FbUsed: return device_sample(c, s.device, ts).fb_used;
    case Field::FbFree: return device_sample(c, s.device, ts).fb_free;
    case Field::Power: return device_sample(c, s.device, ts).power;
    case Field::PowerLimit: return kPools[c.devices[static_cast<std::size_t>(s.device)].pool].power_limit_w;
    case Field::Allocation: return 1;
    case Field::PodStart:
      return static_cast<double>(
          c.workloads[static_cast<std::size_t>(s.workload)].pods[static_cast<std::size_t>(s.pod)].start_s);
    case Field::Loan: return c.loans[static_cast<std::size_t>(s.loan)].gpus;
  }
  return 0;
}

void append_number(std::string& out, double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back as v
  out.append(buf, r.ptr);
}

void append_sample(std::string& out, const Cluster& c, const Series& s, std::int64_t ts) {
  out += s.prefix;
  append_number(out, series_value(c, s, ts));
  out += ' ';
  out += std::to_string(ts);
  out += '\n';
}

}  // namespace

std::string render_page(const Cluster& c, int shard, int k) {
  const std::int64_t ts = c.ts(k);
  std::string out;
  out.reserve(8 << 20);
  for (int f = 0; f < kFieldCount; ++f) {
    const auto& list = c.series[static_cast<std::size_t>(shard)][static_cast<std::size_t>(f)];
    if (list.empty()) continue;
    out += "# TYPE ";
    out += kFieldNames[f];
    out += " gauge\n";
    for (const Series& s : list) {
      if (s.first_s <= ts) append_sample(out, c, s, ts);
    }
  }
  out += "# TYPE scan_bench_page gauge\nscan_bench_page{shard=\"" + std::to_string(shard) + "\"} " + std::to_string(k) +
         " " + std::to_string(ts) + "\n# EOF\n";
  return out;
}

std::uint64_t write_openmetrics(const Cluster& c, const fs::path& file) {
  std::FILE* out = std::fopen(file.c_str(), "w");
  if (out == nullptr) throw std::runtime_error("cannot create " + file.string() + ": " + std::strerror(errno));
  std::uint64_t bytes = 0;
  std::string buf;
  auto flush = [&] {
    if (std::fwrite(buf.data(), 1, buf.size(), out) != buf.size()) {
      std::fclose(out);
      throw std::runtime_error("writing " + file.string() + " failed: " + std::strerror(errno));
    }
    bytes += buf.size();
    buf.clear();
  };
  for (int f = 0; f < kFieldCount; ++f) {
    buf += "# TYPE ";
    buf += kFieldNames[f];
    buf += " gauge\n";
    for (const auto& shard : c.series) {
      for (const Series& s : shard[static_cast<std::size_t>(f)]) {
        for (int k = 0; k < c.steps; ++k) {
          if (s.first_s <= c.ts(k)) append_sample(buf, c, s, c.ts(k));
        }
        if (buf.size() > (4 << 20)) {
          flush();
          check_interrupted();
        }
      }
    }
  }
  buf += "# EOF\n";
  flush();
  if (std::fclose(out) != 0) throw std::runtime_error("closing " + file.string() + " failed");
  return bytes;
}

std::uint64_t family_size(const Cluster& c, Field f) {
  std::uint64_t n = 0;
  for (const auto& shard : c.series) n += shard[static_cast<std::size_t>(f)].size();
  return n;
}

std::uint64_t sample_count(const Cluster& c) {
  std::uint64_t n = 0;
  for (const auto& shard : c.series) {
    for (const auto& list : shard) {
      for (const Series& s : list) {
        for (int k = 0; k < c.steps; ++k) n += s.first_s <= c.ts(k) ? 1 : 0;
      }
    }
  }
  return n;
}

}  // namespace gpubank::bench::scan
