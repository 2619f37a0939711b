#include "twin/trace/philly.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <set>

#include "core/quote.hpp"
#include "twin/trace/seeded.hpp"

namespace gpubank::twin::trace {

namespace {

constexpr std::array<std::string_view, 2> kVcColumns{"vc", "node num"};
constexpr std::array<std::string_view, 3> kSequenceColumns{"time", "active", "total"};

}  // namespace

std::optional<std::vector<PhillyVc>> read_philly_vcs(std::string_view text, const std::string& file,
                                                     Diagnostics& diagnostics, const CsvLimits& limits) {
  TraceErrors errors(file, diagnostics, limits.max_errors);
  const auto table = read_csv(text, errors, limits);
  if (!table || !check_header(*table, kVcColumns, errors)) return std::nullopt;
  std::vector<PhillyVc> vcs;
  std::set<std::string, std::less<>> names;
  for (const auto& record : table->rows) {
    const FieldReader row(*table, record, errors);
    PhillyVc vc;
    bool ok = row.required(0);
    if (ok && !names.insert(record.fields[0]).second) {
      row.report(0, kRuleDuplicate, "virtual cluster " + quote(record.fields[0]) + " is listed more than once");
      ok = false;
    }
    vc.name = record.fields[0];
    ok = row.integer(1, 0, kMaxPhillyNodes, vc.nodes) && ok;
    if (ok) vcs.push_back(std::move(vc));
  }
  if (errors.count() > 0) return std::nullopt;
  return vcs;
}

std::optional<std::vector<PhillyNodeSample>> read_philly_node_sequence(std::string_view text, const std::string& file,
                                                                       Diagnostics& diagnostics,
                                                                       const CsvLimits& limits) {
  TraceErrors errors(file, diagnostics, limits.max_errors);
  const auto table = read_csv(text, errors, limits);
  if (!table || !check_header(*table, kSequenceColumns, errors)) return std::nullopt;
  std::vector<PhillyNodeSample> samples;
  samples.reserve(table->rows.size());
  std::optional<std::int64_t> previous;
  for (const auto& record : table->rows) {
    const FieldReader row(*table, record, errors);
    PhillyNodeSample s;
    bool ok = row.required(0);
    if (ok) {
      const auto ns = record.fields[0].size() == 19 ? parse_date_time(record.fields[0]) : std::nullopt;
      if (!ns) {
        row.report(0, kRuleTime, "time must be \"YYYY-MM-DD HH:MM:SS\" (years 1970-2200), got " + quote(record.fields[0]));
        ok = false;
      } else {
        s.time_s = *ns / 1'000'000'000;
        if (previous && s.time_s <= *previous) {
          row.report(0, kRuleOrder, "time " + record.fields[0] + " is not after the previous row's");
          ok = false;
        }
        previous = s.time_s;
      }
    }
    ok = row.integer(1, 0, kMaxPhillyNodes, s.active) && ok;
    ok = row.integer(2, 0, kMaxPhillyNodes, s.total) && ok;
    if (ok && s.active > s.total) {
      row.report(1, kRuleOutOfRange,
                 "active " + std::to_string(s.active) + " is above total " + std::to_string(s.total));
      ok = false;
    }
    if (ok) samples.push_back(s);
  }
  if (errors.count() > 0) return std::nullopt;
  return samples;
}

Expected<PhillyDemandCurve> philly_demand_curve(const std::vector<PhillyVc>& vcs,
                                                const std::vector<PhillyNodeSample>& samples,
                                                std::int64_t max_minutes) {
  if (vcs.empty()) return Unexpected{"no virtual clusters"};
  if (samples.empty()) return Unexpected{"no node samples"};
  std::int64_t all_nodes = 0;
  for (const auto& vc : vcs) all_nodes += vc.nodes;
  if (all_nodes <= 0) return Unexpected{"the virtual clusters have no nodes"};
  PhillyDemandCurve curve;
  curve.start_s = samples.front().time_s;
  const std::int64_t span = (samples.back().time_s - curve.start_s) / 60 + 1;
  if (span <= 0 || span > max_minutes) {
    return Unexpected{"the samples span " + std::to_string(span) + " minutes; the limit is " + std::to_string(max_minutes)};
  }
  const auto minutes = static_cast<std::size_t>(span);
  for (const auto& vc : vcs) curve.vcs.push_back(vc.name);
  curve.nodes.assign(vcs.size(), std::vector<std::int32_t>(minutes, 0));
  curve.present.assign(minutes, false);
  std::vector<std::int64_t> remainder(vcs.size());
  std::vector<std::size_t> order(vcs.size());
  for (const auto& s : samples) {
    if (s.time_s < curve.start_s) return Unexpected{"the samples are not in time order"};
    const auto m = static_cast<std::size_t>((s.time_s - curve.start_s) / 60);
    curve.present[m] = true;
    std::int64_t given = 0;
    for (std::size_t v = 0; v < vcs.size(); ++v) {
      const std::int64_t share = s.active * vcs[v].nodes;  // <= 1e12: no overflow
      curve.nodes[v][m] = static_cast<std::int32_t>(share / all_nodes);
      remainder[v] = share % all_nodes;
      given += share / all_nodes;
    }
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
    for (std::size_t k = 0; given < s.active && k < order.size(); ++k, ++given) curve.nodes[order[k]][m] += 1;
  }
  curve.missing_minutes = static_cast<std::int64_t>(std::count(curve.present.begin(), curve.present.end(), false));
  return curve;
}

namespace {

struct PhillyJob {
  std::int64_t arrival_min = 0;
  std::size_t vc = 0;
  std::int64_t layer = 0;
  std::int64_t length_min = 0;
};

}  // namespace

Expected<PhillyScenario> philly_scenario(const PhillyDemandCurve& curve, const PhillyScenarioOptions& options) {
  if (options.resolution_minutes < 1 || options.resolution_minutes > 1440) {
    return Unexpected{"resolution_minutes must be between 1 and 1440"};
  }
  if (options.gpus_per_node < 1 || options.gpus_per_node > 1024) return Unexpected{"gpus_per_node must be between 1 and 1024"};
  if (options.days && (*options.days < 1 || *options.days > 366)) return Unexpected{"days must be between 1 and 366"};
  if (!(options.checkpointable_fraction >= 0 && options.checkpointable_fraction <= 1)) {
    return Unexpected{"checkpointable_fraction must be between 0 and 1"};
  }
  const std::int64_t res = options.resolution_minutes;
  const std::int64_t max_blocks = std::max<std::int64_t>(1, options.max_run_time.nanoseconds().count() / 60'000'000'000 / res);
  std::int64_t minutes = static_cast<std::int64_t>(curve.minutes());
  if (options.days) minutes = std::min(minutes, *options.days * 1440);
  const std::int64_t blocks = (minutes + res - 1) / res;

  PhillyScenario out;
  std::vector<PhillyJob> jobs;
  out.levels.assign(curve.vcs.size(), std::vector<std::int64_t>(static_cast<std::size_t>(blocks), 0));
  for (std::size_t v = 0; v < curve.vcs.size(); ++v) {
    auto& level = out.levels[v];
    for (std::int64_t b = 0; b < blocks; ++b) {
      std::int64_t sum = 0;
      std::int64_t count = 0;
      for (std::int64_t m = b * res; m < std::min(minutes, (b + 1) * res); ++m) {
        if (!curve.present[static_cast<std::size_t>(m)]) continue;
        sum += curve.nodes[v][static_cast<std::size_t>(m)];
        ++count;
      }
      level[static_cast<std::size_t>(b)] = count == 0 ? 0 : (2 * sum + count) / (2 * count);
    }
    // Layers: open[j] is the block where layer j+1 opened.
    std::vector<std::int64_t> open;
    auto close_layer = [&](std::int64_t end_block) {
      const std::int64_t layer = static_cast<std::int64_t>(open.size());
      std::int64_t start = open.back();
      open.pop_back();
      std::uint64_t chunk = 0;
      while (start < end_block) {
        const std::uint64_t h = seeded_hash(options.seed, "philly-run", v, static_cast<std::uint64_t>(layer) << 32 | chunk,
                                            static_cast<std::uint64_t>(start));
        const std::int64_t length = std::min(end_block - start, 1 + static_cast<std::int64_t>(below(h, static_cast<std::uint64_t>(max_blocks))));
        jobs.push_back(PhillyJob{start * res, v, layer, std::min(length * res, minutes - start * res)});
        start += length;
        ++chunk;
      }
    };
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t want = level[static_cast<std::size_t>(b)];
      while (static_cast<std::int64_t>(open.size()) > want) close_layer(b);
      while (static_cast<std::int64_t>(open.size()) < want) open.push_back(b);
    }
    while (!open.empty()) close_layer(blocks);
  }
  std::sort(jobs.begin(), jobs.end(), [](const PhillyJob& a, const PhillyJob& b) {
    if (a.arrival_min != b.arrival_min) return a.arrival_min < b.arrival_min;
    if (a.vc != b.vc) return a.vc < b.vc;
    return a.layer < b.layer;
  });
  std::vector<std::int64_t> counters(curve.vcs.size(), 0);
  // Virtual time 0 is the first sample's time, so the run's output is dated as the trace.
  out.scenario.start = Timestamp{std::chrono::seconds(curve.start_s)};
  out.scenario.workloads.reserve(jobs.size());
  for (const auto& job : jobs) {
    run::ScenarioWorkload w;
    w.business_group = options.group_prefix + curve.vcs[job.vc];
    w.name = w.business_group + "-" + std::to_string(counters[job.vc]++);
    w.resource_pool = options.resource_pool;
    w.gpus = options.gpus_per_node;
    w.pods = 1;
    w.workload_type = policy::WorkloadType::Training;
    w.checkpointable = unit_interval(seeded_hash(options.seed, "checkpointable", w.name)) < options.checkpointable_fraction;
    w.arrival_time = Duration(std::chrono::minutes(job.arrival_min));
    w.run_time = Duration(std::chrono::minutes(job.length_min));
    auto& totals = out.per_group[w.business_group];
    totals.workloads += 1;
    totals.node_minutes += job.length_min;
    out.scenario.workloads.push_back(std::move(w));
  }
  return out;
}

}  // namespace gpubank::twin::trace
