// A seeded day of work for the embedded platform (`gpubank up`): what the policies' groups
// would plausibly run, so that borrowing, reclaim and tidal serving happen without a
// cluster or a trace. The rules, all driven by one seed (documented in docs/up.md):
//   - training: per GPUQuotaPolicy on a training pool, jobs of 8 GPUs per pod (1 or 2
//     pods), 1-6 h of work, checkpointable every 30 min; arrivals Poisson over the day
//     with a rate that asks for `load` x max(guaranteed, 8) GPUs on average;
//   - batch: on the same pools, 1-4 GPUs, 10-90 min, at half that rate;
//   - night training: groups without a guarantee on an inference pool that a TidalPolicy
//     lends to them (targets.trainingGroups) submit training there in the windows with
//     the largest trainingBorrowLimit (the night), until an hour before they end;
//   - notebooks: per GPUQuotaPolicy on a development pool, guaranteed/2 notebooks of one
//     device arriving 09:00-11:00 local time for 4-8 h;
//   - serving (with ServingControl::Planned only; otherwise the serving controller of
//     elastic.hpp creates replicas as it goes): per InferenceScalingPolicy, replica
//     workloads of gpuPerReplica GPUs; replica
//     i runs while the floor in force is at least i: the TidalPolicy floor of the window
//     (replicas arrive prewarmBefore ahead of its start and are deleted at its end), else
//     minReplicas all day.
// Pure: a function of the policies, the start instant, the seed and the options.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/diagnostic.hpp"
#include "core/timestamp.hpp"
#include "policy/policy_set.hpp"
#include "twin/run/scenario.hpp"

namespace gpubank::twin::live {

struct DayOptions {
  std::uint64_t seed = 1;
  Timestamp start{};   // virtual time 0
  std::int64_t hours = 24;
  double load = 1.1;   // training demand relative to the guarantee
  // The inference services' load (serving.hpp): empty for the seeded model, else the path
  // of an Azure LLM inference trace CSV (AzureLLMInferenceTrace_conv.csv) that
  // Platform::create reads and repeats over the day. make_day does not read it.
  std::string llm_trace;
  // The inference load relative to the scale rule (serving.hpp): 0.1 serves a tenth of the
  // requests (quick looks, and tests that do not measure serving), in (0, 10].
  double serving_load = 1.0;
  // What the load's peak is sized on (serving.hpp): by control (planned replicas: the
  // largest tidal floor; a controller: kPeakShareOfMaxReplicas x maxReplicas), or the
  // controllers' sizing for every control, planned included, so that a comparison serves
  // every control the same requests (`gpubank twin serving`).
  bool same_load_for_every_control = false;
  // Who decides the inference replicas (elastic.hpp): the autoscaler with the tidal floors
  // (default), or replicas planned in advance from the tidal floors alone (the day's own
  // replica workloads, as before the autoscaler existed), a static count all day, or a
  // CPU-style HPA on GPU utilisation (the comparisons of `gpubank twin serving`).
  // Keda: the HPA that the rendered KEDA ScaledObject creates (serving/hpa_model.hpp).
  enum class ServingControl { Autoscaler, Planned, Static, HpaGpuUtilization, Keda };
  ServingControl serving_control = ServingControl::Autoscaler;
  // Static: replicas per service: static_replicas_by_policy's count for the policy, else
  // static_replicas, else (0) its maxReplicas.
  int static_replicas = 0;
  std::map<std::string, int> static_replicas_by_policy;
  // How the services answer their requests (inference/service_model.hpp): every request
  // through the vLLM-like engine (InferenceService), or the fluid model calibrated on it
  // (FluidService), which the impact preview runs so that days take seconds.
  enum class ServingModel { Requests, Fluid };
  ServingModel serving_model = ServingModel::Requests;
  // Governance in virtual time (governance.hpp): the platform records every virtual minute
  // for the low-utilisation scan (every 15 virtual minutes) and the FinOps reports. `gpubank
  // up` turns it on; runs that do not read it (the comparisons, most tests) leave it off.
  bool governance = false;
  // The policies the day's work is generated from; unset: the run's own. An impact
  // preview (twin/preview) runs the work of the policies in force under a proposal too, so
  // that a difference between the runs is the policies' doing, not the work's.
  std::shared_ptr<const policy::PolicySet> work_from;
};

[[nodiscard]] std::string_view to_string(DayOptions::ServingControl control);
[[nodiscard]] std::optional<DayOptions::ServingControl> serving_control_from(std::string_view name);

// The priority class a workload of `type` gets from `group`: the highest (or lowest)
// class the guardrails allow it; "" when none does.
[[nodiscard]] std::string pick_priority(const policy::PlatformGuardrailsSpec& guardrails, policy::WorkloadType type,
                                        const std::string& group, bool highest);

// splitmix64: the generator behind every seeded choice of the twin's generators (its
// output is the same on every platform, unlike the standard distributions').
class SeededRandom {
 public:
  explicit SeededRandom(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  double uniform();                                     // [0, 1)
  std::int64_t between(std::int64_t lo, std::int64_t hi);  // [lo, hi]
  double exponential(double mean);

 private:
  std::uint64_t state_;
};


// The day's workloads, sorted by arrival time then name; errors when the policies hold no
// guardrails.
[[nodiscard]] run::Scenario make_day(const policy::PolicySet& policies, const DayOptions& options,
                                     Diagnostics& diagnostics);

}  // namespace gpubank::twin::live
