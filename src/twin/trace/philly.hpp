// Microsoft's Philly trace (msr-fiddle/philly-traces), as the derived files in
// ../shared/traces/philly: philly_vc.csv ("vc,node num": virtual clusters, i.e. business
// groups, and their node counts) and philly_node_sequence.csv ("time,active,total": per
// minute, the active and total nodes of the cluster, ~73 days with one 10-hour gap).
//
// The two are joined into a per-minute demand curve per VC, and that curve into training
// workloads for `gpubank twin run` whose aggregate follows it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/duration.hpp"
#include "core/expected.hpp"
#include "twin/run/scenario.hpp"
#include "twin/trace/csv.hpp"

namespace gpubank::twin::trace {

inline constexpr std::int64_t kMaxPhillyNodes = 1'000'000;

struct PhillyVc {
  std::string name;
  std::int64_t nodes = 0;
};

struct PhillyNodeSample {
  std::int64_t time_s = 0;  // seconds since the epoch (the file's times, read as UTC)
  std::int64_t active = 0;
  std::int64_t total = 0;   // active <= total
};

// philly_vc.csv: names unique and non-empty, node counts 0..kMaxPhillyNodes.
[[nodiscard]] std::optional<std::vector<PhillyVc>> read_philly_vcs(std::string_view text, const std::string& file,
                                                                   Diagnostics& diagnostics,
                                                                   const CsvLimits& limits = {});
// philly_node_sequence.csv: "YYYY-MM-DD HH:MM:SS" times strictly increasing, 0 <= active <= total.
[[nodiscard]] std::optional<std::vector<PhillyNodeSample>> read_philly_node_sequence(std::string_view text,
                                                                                     const std::string& file,
                                                                                     Diagnostics& diagnostics,
                                                                                     const CsvLimits& limits = {});

// Active nodes per VC per minute.
//
// Rule: minute m covers [start + 60m, start + 60(m+1)) seconds, start being the first
// sample's time. A minute with a sample splits that sample's active nodes across the VCs in
// proportion to their node counts (share = nodes / sum of all VCs' nodes), in whole nodes
// by the largest-remainder method (the floors first, then one node each to the largest
// remainders, ties to the earlier VC in philly_vc.csv), so the VCs' demands add up to the
// active count exactly. A minute without a sample (the file's gap) has demand 0 and is
// counted in missing_minutes. (Two samples in one minute: the later one counts.)
struct PhillyDemandCurve {
  std::int64_t start_s = 0;
  std::vector<std::string> vcs;              // philly_vc.csv order
  std::vector<std::vector<std::int32_t>> nodes;  // [vc][minute]
  std::vector<bool> present;                 // [minute]: whether the file had a sample
  std::int64_t missing_minutes = 0;

  [[nodiscard]] std::size_t minutes() const { return present.size(); }
};

// Errors: no VCs, VCs with no nodes at all, no samples, or a span above max_minutes.
[[nodiscard]] Expected<PhillyDemandCurve> philly_demand_curve(const std::vector<PhillyVc>& vcs,
                                                              const std::vector<PhillyNodeSample>& samples,
                                                              std::int64_t max_minutes = 366LL * 1440);

struct PhillyScenarioOptions {
  std::uint64_t seed = 1;
  std::string resource_pool = "philly";
  std::string group_prefix = "vc-";  // business group = prefix + VC name (a DNS label)
  std::int64_t gpus_per_node = 8;    // each workload is one node's GPUs
  std::int64_t resolution_minutes = 60;
  Duration max_run_time{std::chrono::hours(24)};
  std::optional<std::int64_t> days;  // only the first N days of the curve
  double checkpointable_fraction = 0.5;
};

struct PhillyVcTotals {
  std::int64_t workloads = 0;
  std::int64_t node_minutes = 0;  // sum over jobs of run minutes (x gpus_per_node: GPU-minutes)
};

struct PhillyScenario {
  run::Scenario scenario;
  std::vector<std::vector<std::int64_t>> levels;  // [vc][block]: the node level each block replays
  std::map<std::string, PhillyVcTotals> per_group;
};

// Training workloads whose running node count per VC equals, at every instant, the VC's
// demand curve smoothed to `resolution_minutes` blocks (given enough capacity to start each
// at its arrival).
//
// Rule: (1) a block's level is the mean of the VC's demand over the block's minutes that
// have a sample, rounded half up (0 when none has). (2) The levels are cut into unit
// layers: a rise from k to k+n nodes opens layers k+1..k+n, a fall closes the topmost
// layers first, so layer j is up exactly while the level is >= j. (3) Each layer's up
// interval is tiled by consecutive workloads of one node (gpus_per_node GPUs, pods 1), each
// lasting a seeded whole number of blocks in [1, max_run_time / resolution] (the last one
// cut to what is left). So the sum of run times is the sum of levels x block length, and
// the number running at any time is the level. Names are "<group>-<n>" in arrival order;
// workload type training, checkpointable with probability checkpointable_fraction (seeded
// by the name). Workloads are sorted by arrival time, then VC order, then layer. The
// scenario starts at the curve's first sample (philly_node_sequence.csv's times carry no
// zone and are read as UTC: the release starts 2017-10-03 00:00:00).
[[nodiscard]] Expected<PhillyScenario> philly_scenario(const PhillyDemandCurve& curve,
                                                       const PhillyScenarioOptions& options = {});

}  // namespace gpubank::twin::trace
