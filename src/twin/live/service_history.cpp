#include "twin/live/service_history.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/timestamp.hpp"
#include "twin/live/gpu_history.hpp"

namespace gpubank::twin::live {
namespace {

using Json = nlohmann::ordered_json;

std::string rfc3339(std::int64_t ms) { return format_rfc3339(Timestamp(std::chrono::milliseconds(ms))); }

std::uint16_t clamp16(int v) {
  return static_cast<std::uint16_t>(std::clamp(v, 0, static_cast<int>(std::numeric_limits<std::uint16_t>::max())));
}

}  // namespace

void ServiceHistory::record(const MinuteObservation& minute) {
  if (minute.t_ms <= last_ms_) return;
  last_ms_ = minute.t_ms;
  for (const ServingMinute& s : minute.serving) {
    auto& samples = series_[{s.namespace_name, s.workload}];
    Sample x;
    x.t_ms = minute.t_ms;
    x.pods = clamp16(s.pods);
    x.idle = clamp16(s.idle_pods);
    if (s.rated && s.ttft_p95_s && std::isfinite(*s.ttft_p95_s)) x.ttft_p95_s = static_cast<float>(*s.ttft_p95_s);
    x.tokens_per_minute = s.rated ? static_cast<float>(s.tokens_per_minute) : 0.0F;
    samples.push_back(x);
    while (samples.size() > keep_) samples.pop_front();
  }
}

Json ServiceHistory::json(const std::string& namespace_name, const std::string& name, const std::string& object,
                          const std::string& policy_ref, const std::string& pool, std::int64_t from_ms,
                          std::int64_t to_ms, std::span<const run::Event> events,
                          const std::function<std::int64_t(std::int64_t)>& unix_ms) const {
  Json out = Json::object();
  out["from"] = rfc3339(from_ms);
  out["to"] = rfc3339(to_ms);
  out["stepSeconds"] = 60;
  Json minutes = Json::array();
  for (const auto& [key, list] : series_) {
    if (key.second != name || (!namespace_name.empty() && key.first != namespace_name)) continue;
    auto s = std::lower_bound(list.begin(), list.end(), from_ms, [](const Sample& x, std::int64_t t) { return x.t_ms < t; });
    for (; s != list.end() && s->t_ms <= to_ms; ++s) {
      minutes.push_back(Json{{"t", rfc3339(s->t_ms)},
                             {"replicas", s->pods},
                             {"idleReplicas", s->idle},
                             {"ttftP95Seconds", s->ttft_p95_s < 0 ? Json(nullptr) : Json(std::round(s->ttft_p95_s * 1000.0) / 1000.0)},
                             {"tokensPerMinute", std::round(s->tokens_per_minute)}});
    }
    break;  // one service per workload name and namespace
  }
  out["minutes"] = std::move(minutes);
  Json markers = Json::array();
  for (const run::Event& e : events) {
    const bool mine = e.object == object || e.object == policy_ref ||
                      std::find(e.related.begin(), e.related.end(), policy_ref) != e.related.end() ||
                      (e.kind == "QuotaChanged" && !pool.empty() && e.pool == pool);
    if (!mine) continue;
    const std::int64_t t = unix_ms(e.t);
    if (t < from_ms || t > to_ms) continue;
    markers.push_back(marker_json(e, t));
  }
  out["markers"] = std::move(markers);
  return out;
}

}  // namespace gpubank::twin::live
