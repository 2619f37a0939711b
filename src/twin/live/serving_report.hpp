// `gpubank twin serving`: the embedded platform's day run once per way of deciding the
// inference replicas (DayOptions::ServingControl), and what each gave and cost per
// service: TTFT p95 SLO attainment (share of minutes within scaleUp.ttftP95, by arrival
// minute, Serving::slo), GPU-hours on inference, GPU-hours training got on the service's
// pool, scale-out reaction times, replicas at the peak. Static provisioning is run at the
// peak the autoscaler reached, when both are compared (serving_comparison.hpp searches the
// smallest static count that meets the SLO instead).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "policy/policy_set.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/day.hpp"
#include "twin/run/engine.hpp"

namespace gpubank::twin::live {

// The minutes a comparison weighs most: a service's peak hours, as [from, to) intervals of
// virtual time (0 = DayOptions::start).
struct PeakWindow {
  std::string source;  // where it comes from, e.g. "TidalPolicy weekday-serving-training window daytime-serving"
  std::vector<std::pair<std::int64_t, std::int64_t>> intervals_ms;
};

// Each InferenceScalingPolicy's peak window over [start, start + hours):
//   - `peak` ("HH:MM-HH:MM", local time in the zone of the policies' first TidalPolicy, else
//     UTC; an end at or before the start ends on the next day): that range every day, for
//     every service;
//   - else the occurrences of the window with the largest inferenceReplicaFloor for the
//     service among the TidalPolicies that target it (the window the platform staffs for
//     its peak);
//   - else those of the largest-floor windows of every TidalPolicy (the platform's daytime:
//     every service's load follows the same diurnal curve, serving.hpp);
//   - else the whole run.
// Errors: a `peak` that is not HH:MM-HH:MM, or an empty range.
[[nodiscard]] Expected<std::map<std::string, PeakWindow>> peak_windows(const policy::PolicySet& policies,
                                                                      Timestamp start, std::int64_t hours,
                                                                      const std::optional<std::string>& peak);

struct ServingOutcome {
  std::string control;  // to_string(ServingControl)
  std::uint64_t seed = 0;
  int static_replicas = 0;  // the count static provisioning ran (0 for the other controls)
  std::string policy, pool, business_group;
  std::int64_t ttft_target_ms = 0;
  std::int64_t minutes = 0, minutes_within = 0;
  // The same over the service's peak window only (every minute when no window is given).
  std::int64_t peak_minutes = 0, peak_minutes_within = 0;
  std::int64_t requests = 0, unanswered = 0, cut = 0;
  double inference_gpu_hours = 0;  // the service's replicas' pods
  double training_gpu_hours = 0;   // every other group's workloads on the same pool (the borrowers)
  int peak_replicas = 0;
  std::int64_t scale_ups = 0, scale_downs = 0, blocked = 0;
  std::vector<std::int64_t> reaction_ms;
  [[nodiscard]] double attainment() const {
    return minutes == 0 ? 1.0 : static_cast<double>(minutes_within) / static_cast<double>(minutes);
  }
  [[nodiscard]] double peak_attainment() const {
    return peak_minutes == 0 ? 1.0 : static_cast<double>(peak_minutes_within) / static_cast<double>(peak_minutes);
  }
};

// Runs the day to its end with `day.serving_control` and reports every service.
// `progress` (may be empty) is told the virtual hour reached.
// `events` (may be null) receives the run's event log; `stats` (may be null) the run's
// figures at the end (run::Simulation::stats()). `peaks` (may be null: every minute is a
// peak minute) gives each service's peak window.
Expected<std::vector<ServingOutcome>> run_serving_day(const policy::PolicySet& policies, const DayOptions& day,
                                                      std::shared_ptr<const cluster::Inventory> inventory,
                                                      const std::function<void(std::int64_t)>& progress = {},
                                                      std::vector<run::Event>* events = nullptr,
                                                      run::RunResult* stats = nullptr,
                                                      const std::map<std::string, PeakWindow>* peaks = nullptr);

// The outcomes side by side (JSON: {"runs": [...], "comparison": per service and seed, each
// control against the first: GPU-hour saving, attainment}; text: one line per run).
[[nodiscard]] nlohmann::ordered_json serving_json(const std::vector<ServingOutcome>& outcomes);
[[nodiscard]] std::string serving_text(const std::vector<ServingOutcome>& outcomes);

}  // namespace gpubank::twin::live
