// `gpubank twin serving`: the embedded platform's day run once per way of deciding the
// inference replicas (DayOptions::ServingControl), and what each gave and cost per
// service: TTFT p95 SLO attainment (share of minutes within scaleUp.ttftP95, by arrival
// minute, Serving::slo), GPU-hours on inference, GPU-hours training got on the service's
// pool, scale-out reaction times, replicas at the peak. Static provisioning is run at the
// peak the autoscaler reached, when both are compared.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "policy/policy_set.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/day.hpp"
#include "twin/run/engine.hpp"

namespace gpubank::twin::live {

struct ServingOutcome {
  std::string control;  // to_string(ServingControl)
  std::string policy, pool, business_group;
  std::int64_t ttft_target_ms = 0;
  std::int64_t minutes = 0, minutes_within = 0;
  std::int64_t requests = 0, unanswered = 0, cut = 0;
  double inference_gpu_hours = 0;  // the service's replicas' pods
  double training_gpu_hours = 0;   // every other group's workloads on the same pool (the borrowers)
  int peak_replicas = 0;
  std::int64_t scale_ups = 0, scale_downs = 0, blocked = 0;
  std::vector<std::int64_t> reaction_ms;
  [[nodiscard]] double attainment() const {
    return minutes == 0 ? 1.0 : static_cast<double>(minutes_within) / static_cast<double>(minutes);
  }
};

// Runs the day to its end with `day.serving_control` and reports every service.
// `progress` (may be empty) is told the virtual hour reached.
// `events` (may be null) receives the run's event log; `stats` (may be null) the run's
// figures at the end (run::Simulation::stats()).
Expected<std::vector<ServingOutcome>> run_serving_day(const policy::PolicySet& policies, const DayOptions& day,
                                                      std::shared_ptr<const cluster::Inventory> inventory,
                                                      const std::function<void(std::int64_t)>& progress = {},
                                                      std::vector<run::Event>* events = nullptr,
                                                      run::RunResult* stats = nullptr);

// The outcomes side by side (JSON: {"runs": [...], "comparison": per service, each control
// against the first: GPU-hour saving, attainment}).
[[nodiscard]] nlohmann::ordered_json serving_json(const std::vector<ServingOutcome>& outcomes);
[[nodiscard]] std::string serving_text(const std::vector<ServingOutcome>& outcomes);

}  // namespace gpubank::twin::live
