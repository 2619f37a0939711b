// `gpubank twin serving` as a fair comparison: every control run over the same seeds, each
// service judged on its peak window (serving_report.hpp, peak_windows), and static
// provisioning at the smallest replica count that meets the SLO there, searched, not
// assumed.
//
// The static baseline: per service, the smallest count n in [max(1, minReplicas),
// maxReplicas] whose worst peak attainment over the seeds is at least `slo_target`,
// found by bisection (every seed runs at each probed count; the services are probed
// together, each at its own count, one run per seed and round). Bisection assumes more
// replicas never serve worse, which holds for the twin's static replicas on a pool whose
// quota lets them all run (they are asked for at virtual time 0 and never removed). When
// not even maxReplicas meets the target, the baseline is maxReplicas and `met` is false.
//
// The tidal floor search (`search_floor`): a floor is a policy choice that depends on the
// traffic. Where requests come in bursts shorter than a model load, no autoscaler adds a
// replica in time, and what serves the burst is what is already loaded. So per service
// that a TidalPolicy window staffs (its peak window, serving_report.hpp), the smallest
// floor n of that window in [the policy's floor, maxReplicas] whose autoscaler runs reach
// `slo_target` in every seed, by bisection as above (the policy's own floor is probed
// first; one more replica kept loaded is assumed never to serve worse). Every control then
// runs on the policies with those floors: the report compares the policy the platform
// would set, and says which floor that is and what each probed floor gave.
//
// Pure apart from the time it takes: the same options give the same report.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "policy/policy_set.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/day.hpp"
#include "twin/live/serving.hpp"
#include "twin/live/serving_report.hpp"

namespace gpubank::twin::live {

struct ComparisonOptions {
  DayOptions day;  // everything but seed, serving_control and the static counts
  std::vector<std::uint64_t> seeds{1};
  std::vector<DayOptions::ServingControl> controls;  // in report order
  // Static provisioning at this count for every service instead of the search.
  std::optional<int> static_replicas;
  double slo_target = 0.95;  // peak attainment, worst seed
  double saving_goal = 0.30;  // GPU-hours fewer than the static baseline (issue 33's goal)
  std::optional<std::string> peak;  // "HH:MM-HH:MM"; else from the TidalPolicies (peak_windows)
  // Runs at once (independent runs of the day; the report does not depend on it).
  int jobs = 1;
  bool keep_events = false;  // keep each reported run's event log
  bool search_floor = false;  // search each peak window's inferenceReplicaFloor (above)
};


// One probe of the static search: a count and what it gave over the seeds.
struct StaticProbe {
  std::string policy;
  int replicas = 0;
  double worst_peak_attainment = 0, mean_peak_attainment = 0;
};

// The window whose floor the search sets for one service, and what it found.
struct FloorSearch {
  std::string policy;             // the InferenceScalingPolicy
  std::string tidal_policy;       // the TidalPolicy and its window
  std::string window;
  int policy_floor = 0;           // what the window sets now
  int floor = 0;                  // the smallest floor that meets the target (maxReplicas when none does)
  bool met = false;
  std::vector<StaticProbe> probes;  // replicas = the floor probed, in the order probed
};

// A service under one control over the seeds.
struct ControlSummary {
  std::string policy, control;
  int seeds = 0;
  double mean_peak_attainment = 0, worst_peak_attainment = 0;
  double mean_attainment = 0, worst_attainment = 0;
  double mean_inference_gpu_hours = 0, mean_training_gpu_hours = 0;
  std::int64_t cut = 0;
  // Against the static baseline (absent for the baseline itself or without one).
  std::optional<double> gpu_hours_saved_share;
  // Worst peak attainment at least the target and at least saving_goal fewer GPU-hours.
  std::optional<bool> meets_goal;
};

struct ServingComparison {
  ComparisonOptions options;
  std::map<std::string, PeakWindow> peaks;
  std::vector<ServingOutcome> runs;  // per control (in order), seed, service
  std::map<std::string, int> static_baseline;  // per service: the count reported as "static"
  std::map<std::string, bool> static_met;      // that count meets slo_target in every seed
  bool static_searched = false;
  std::vector<StaticProbe> probes;  // in the order probed
  std::vector<FloorSearch> floors;  // with search_floor: per service a TidalPolicy window staffs
  std::vector<ControlSummary> summaries;  // per service, per control
  // The consistency check, before any run (Serving::feasibility of the first seed's day).
  std::vector<ServingFeasibility> feasibility;
  // With keep_events: each reported run's events, keyed "<control>.<seed>".
  std::map<std::string, std::vector<run::Event>> events;
};

// Errors: no seed, no control, a static count outside [1, maxReplicas] of a service
// (naming it), a bad `peak`, a run that fails. `progress` (may be empty) gets a line per
// run started and, before the first, a line "warning: <policy>: <why>" for each service
// whose target or peak its GPUs cannot meet (ServingFeasibility).
[[nodiscard]] Expected<ServingComparison> compare_serving(const policy::PolicySet& policies,
                                                          const ComparisonOptions& options,
                                                          std::shared_ptr<const cluster::Inventory> inventory,
                                                          const std::function<void(const std::string&)>& progress = {});

// "1..5", "1,3,7", "4": seeds in the order given, each once; errors name the rule.
[[nodiscard]] Expected<std::vector<std::uint64_t>> parse_seeds(const std::string& text);

[[nodiscard]] nlohmann::ordered_json comparison_json(const ServingComparison& c);
[[nodiscard]] std::string comparison_text(const ServingComparison& c);

}  // namespace gpubank::twin::live
