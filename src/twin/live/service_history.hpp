// Each inference service's minutes for the portal's Inference page: the pods with vLLM series
// (its replicas serving), how many of them were idle, its TTFT p95 over the last two minutes
// and the tokens it served per minute, as the governance recorder read its vLLM series, with
// the service's scale events, replica lifecycle, tidal and policy events as markers.
//
// Bounded: the last `keep_minutes` per service (a day by default). Pure bookkeeping: no clock
// of its own.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "twin/live/governance.hpp"
#include "twin/run/engine.hpp"

namespace gpubank::twin::live {

class ServiceHistory {
 public:
  explicit ServiceHistory(std::size_t keep_minutes = 24 * 60) : keep_(keep_minutes) {}

  // One minute of every service's vLLM signals. Minutes must come in order; one at or before
  // the last is ignored.
  void record(const MinuteObservation& minute);

  // The minutes in [from_ms, to_ms] (Unix ms) of the service whose workload is `name` (in
  // `namespace_name`, or any namespace when empty), and as markers the events whose object
  // is `object` ("InferenceService/<ns>/<name>") or that name `policy_ref`
  // ("InferenceScalingPolicy/<name>") as their object or a related object, and the quota
  // changes of `pool`.
  [[nodiscard]] nlohmann::ordered_json json(const std::string& namespace_name, const std::string& name,
                                            const std::string& object, const std::string& policy_ref,
                                            const std::string& pool, std::int64_t from_ms, std::int64_t to_ms,
                                            std::span<const run::Event> events,
                                            const std::function<std::int64_t(std::int64_t)>& unix_ms) const;

  [[nodiscard]] std::int64_t last_ms() const { return last_ms_; }

 private:
  struct Sample {
    std::int64_t t_ms = 0;
    std::uint16_t pods = 0, idle = 0;
    float ttft_p95_s = -1;  // < 0: no request in the two minutes
    float tokens_per_minute = 0;
  };
  std::size_t keep_;
  std::int64_t last_ms_ = 0;
  std::map<std::pair<std::string, std::string>, std::deque<Sample>> series_;  // (namespace, workload)
};

}  // namespace gpubank::twin::live
