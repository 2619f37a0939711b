// The impact preview (`gpubank twin preview`, the portal's policy editor): the same work
// run under the policies in force and under a proposal, side by side per business group
// and pool, with what the proposal changes and which checks it trips.
//
//   work      the seeded day of `gpubank up` (twin/live/day.hpp), generated once from the
//             policies in force and run under both sets with every seed shared, serving
//             included; or a scenario file (`twin run --workloads`), run without serving.
//             Serving answers requests with the model DayOptions::serving_model names: the
//             CLI and the portal take the fluid model (twin/inference/fluid.hpp), which
//             makes a week take seconds; `--serving-model requests` runs every request.
//   checks    the proposal is decoded and validated as `gpubank validate` does (the
//             guardrails included); with an error it is refused and nothing runs. A run
//             that stops on an error (a capacity check of the twin: a group without a
//             queue, a pool that cannot hold a guarantee) is reported with that error.
//   figures   per (group, pool): GPU-hours used, borrowed and lent, recompute loss,
//             workloads arrived and admitted, reclaims started as lender, stops, queue wait
//             p50/p90/p99 (twin/run/summary.hpp's definitions); per inference service: TTFT
//             p95 SLO attainment (share of minutes within target) and GPU-hours.
// Pure: a function of the two sets, the work and its seed. The two runs go side by side (the
// proposal's on a thread of its own); `progress` is called from both, one call at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/diagnostic.hpp"
#include "core/expected.hpp"
#include "policy/policy_set.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/day.hpp"
#include "twin/run/scenario.hpp"

namespace gpubank::twin::preview {

struct Figures {
  double used_gpu_hours = 0, borrowed_gpu_hours = 0, lent_gpu_hours = 0, loss_gpu_hours = 0;
  std::int64_t workloads = 0, admitted = 0, reclaims = 0, stops = 0;
  std::int64_t wait_p50_ms = 0, wait_p90_ms = 0, wait_p99_ms = 0;
};

struct Row {
  std::string business_group, pool;
  std::optional<Figures> current, proposed;  // none: the pair has no queue in that run
};

struct ServiceRow {
  std::string policy, business_group, pool;
  std::int64_t ttft_target_ms = 0;
  std::optional<double> current_attainment, proposed_attainment;  // 0..1
  double current_gpu_hours = 0, proposed_gpu_hours = 0;
};

struct Change {
  std::string object;  // Kind/name
  std::string change;  // added, removed, changed
  nlohmann::json patch;  // RFC 6902 from the current spec to the proposed one (changed only)
};

struct Preview {
  std::string current_version, proposed_version;
  std::vector<Change> changes;
  Diagnostics findings;  // the proposal's, errors and warnings
  bool refused = false;  // an error among the findings: nothing ran
  std::string current_error, proposed_error;  // a run that stopped
  std::string work;  // what ran: "seeded day (seed 1, 24 h, serving: fluid model)" or the scenario's name
  std::vector<Row> rows;  // by group, then pool
  std::vector<ServiceRow> services;
};

struct Work {
  // A scenario to run (without serving); unset: the seeded day of `day`.
  std::optional<run::Scenario> scenario;
  std::string scenario_name;  // what the preview says ran: "scenario <file>", "the cluster's work of ..."
  live::DayOptions day;
  std::shared_ptr<const cluster::Inventory> inventory;
};

// `progress` (may be empty) hears "current"/"proposed" and the virtual hour reached.
Expected<Preview> run_preview(const policy::PolicySet& current, const policy::PolicySet& proposed, const Work& work,
                              const std::function<void(const std::string&, std::int64_t)>& progress = {});

[[nodiscard]] nlohmann::ordered_json to_json(const Preview& preview);
[[nodiscard]] std::string to_text(const Preview& preview);

}  // namespace gpubank::twin::preview
