#include "serving/autoscaler.hpp"

#include <algorithm>
#include <cmath>

#include "metrics/number.hpp"

namespace gpubank::serving {

namespace {

// No service has a million replicas; counts are clamped there so that a zero target or a
// hostile observation cannot overflow an int.
constexpr double kMaxCount = 1'000'000;

int ceil_count(double x) {
  if (std::isnan(x) || x <= 0) return 0;
  return static_cast<int>(std::ceil(std::min(x, kMaxCount)));
}

std::string num(double v) { return metrics::format_value(v); }

double seconds(const Duration& d) { return static_cast<double>(d.nanoseconds().count()) / 1e9; }

}  // namespace

Autoscaler::Autoscaler(const policy::InferenceScalingPolicySpec& policy, AutoscalerOptions options)
    : policy_(policy), options_(options) {}

std::vector<SignalDesire> Autoscaler::desires(const Observation& obs, int c, int ready) const {
  const auto& up = policy_.scale_up;
  const auto& down = policy_.scale_down;
  const double tolerance = options_.tolerance;
  const auto within = [tolerance](double ratio) { return std::abs(1.0 - ratio) <= tolerance; };
  std::vector<SignalDesire> out;
  // No load at all: nothing waits, nothing runs, and no first token in the TTFT window
  // (without a TTFT signal, a reported zero of running requests says it).
  const bool idle = obs.queue_depth.value_or(0) == 0 && obs.running.value_or(0) == 0 &&
                    (obs.ttft_idle || (!up.ttft_p95 && obs.running.has_value()));

  if (up.queue_depth_per_replica || down.queue_depth_per_replica) {
    // Plain numbers with flags: GCC 12 at -O3 reports std::optional<double> reads here as
    // maybe-uninitialized (a false positive that -Werror turns into a failed build).
    const bool has_u = up.queue_depth_per_replica.has_value();
    const bool has_d = down.queue_depth_per_replica.has_value();
    const double u = has_u ? static_cast<double>(*up.queue_depth_per_replica) : 0.0;
    const double d = has_d ? static_cast<double>(*down.queue_depth_per_replica) : 0.0;
    SignalDesire s{"queueDepth", obs.queue_depth, has_u ? u : d, std::nullopt};
    if (obs.queue_depth) {
      const double queue = *obs.queue_depth;
      if (c == 0) {
        // Scaling from zero: any queue asks for a replica, more when U says so.
        s.replicas = queue > 0 ? std::max(1, has_u ? ceil_count(queue / u) : 1) : 0;
      } else {
        const double per_replica = queue / c;
        if (has_u && !has_d) {
          s.replicas = within(per_replica / u) ? c : ceil_count(queue / u);
        } else if (has_u && per_replica > u) {
          s.replicas = within(per_replica / u) ? c : ceil_count(queue / u);
        } else if (has_d && per_replica < d) {
          // Spare capacity, but an empty queue says nothing about how much: one replica
          // fewer, when the queue would still be below D on the replicas left.
          const bool step = c > 1 && !within(per_replica / d) && queue / (c - 1) < d;
          s.replicas = step ? c - 1 : c == 1 && idle ? 0 : c;
        } else {
          s.replicas = c;  // between the targets: hold
        }
      }
    }
    out.push_back(std::move(s));
  }

  if (up.ttft_p95) {
    const double target = seconds(*up.ttft_p95);
    SignalDesire s{"ttftP95", obs.ttft_p95_s, target, std::nullopt};
    if (!obs.ttft_p95_s && obs.ttft_idle && c > 0) {
      s.idle = true;
      if (idle) s.replicas = c - 1;  // else requests run without a first token in the window: no demand
    } else if (obs.ttft_p95_s && c > 0) {
      const double ratio = target > 0 ? *obs.ttft_p95_s / target : kMaxCount;
      if (ratio > 1) {
        // The replicas serving are what the latency measures; loading ones are on the way.
        const int serving = std::clamp(ready, 0, c);
        s.replicas = within(ratio) ? c : std::max(c, ceil_count(serving * std::min(ratio, options_.ttft_max_ratio)));
      } else if (within(ratio)) {
        s.replicas = c;  // close below the target: no replica may go
      }
    }
    out.push_back(std::move(s));
  }

  if (up.kv_cache_high_watermark) {
    const int watermark = *up.kv_cache_high_watermark;
    SignalDesire s{"kvCache", obs.kv_cache_usage, watermark / 100.0, std::nullopt};
    if (obs.kv_cache_usage) {
      if (c == 0) {
        s.replicas = 0;
      } else {
        const double ratio = watermark > 0 ? *obs.kv_cache_usage * 100 / watermark : kMaxCount;
        if (ratio > 1 || within(ratio)) {
          s.replicas = within(ratio) ? c : ceil_count(c * ratio);
        } else if (c > 1) {
          // Below the watermark: one replica fewer when the cache would stay below the
          // band on the replicas left, else hold.
          const double after = ratio * c / (c - 1);
          s.replicas = after < 1.0 - tolerance ? c - 1 : c;
        }
        // c == 1 below the watermark: no demand (minReplicas decides).
      }
    }
    out.push_back(std::move(s));
  }

  if (up.requests_per_second_per_replica) {
    const double target = *up.requests_per_second_per_replica;
    SignalDesire s{"requestRate", obs.request_rate, target, std::nullopt};
    if (obs.request_rate) {
      const double rate = *obs.request_rate;
      // The HPA's AverageValue, both ways: unlike a queue or a latency, a rate says how
      // many replicas the traffic needs, not only whether there are enough.
      if (c == 0) {
        s.replicas = rate > 0 ? std::max(1, ceil_count(rate / target)) : 0;
      } else {
        s.replicas = within(rate / (c * target)) ? c : ceil_count(rate / target);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

int Autoscaler::change_within(const std::deque<Timed>& events, std::int64_t now, std::int64_t period_ms) const {
  int sum = 0;
  for (const Timed& e : events) {
    if (e.t_ms > now - period_ms) sum += e.value;  // horizontal.go getReplicasChangePerPeriod: After(cutoff)
  }
  return sum;
}

Recommendation Autoscaler::recommend(const Observation& obs, int current, std::optional<int> ready) {
  current = std::max(current, 0);
  const std::int64_t now = started_ ? std::max(obs.t_ms, last_t_ms_) : obs.t_ms;
  started_ = true;
  last_t_ms_ = now;

  Recommendation rec;
  rec.t_ms = now;
  rec.current = current;
  rec.signals = desires(obs, current, ready.value_or(current));

  // Steps 2-4: the largest count asked for; missing metrics never lower it below current.
  std::optional<int> largest;
  int present = 0;
  for (const SignalDesire& s : rec.signals) {
    if (s.value || s.idle) ++present;
    if (s.replicas) largest = std::max(largest.value_or(0), *s.replicas);
  }
  const int configured = static_cast<int>(rec.signals.size());
  const bool none_reporting = current > 0 && obs.replicas_reporting == 0;
  rec.metrics_missing = present < configured || none_reporting;
  std::string held;
  if (configured == 0 || present == 0 || none_reporting) {
    rec.raw = current;
    held = configured == 0 ? "no signal is configured" : "no replica reports";
  } else {
    rec.raw = largest.value_or(current);
    if (present < configured && rec.raw < current) {
      rec.raw = current;
      held = "a signal is missing";
    }
  }

  // Step 5: stabilization over the raw counts (stabilizeRecommendationWithBehaviors).
  const std::int64_t up_window = policy_.scale_up.stabilization_window.milliseconds();
  const std::int64_t down_window = policy_.scale_down.stabilization_window.milliseconds();
  int up_recommendation = rec.raw;
  int down_recommendation = rec.raw;
  for (const Timed& r : recommendations_) {
    if (r.t_ms > now - up_window) up_recommendation = std::min(up_recommendation, r.value);
    if (r.t_ms > now - down_window) down_recommendation = std::max(down_recommendation, r.value);
  }
  rec.stabilized = std::clamp(current, up_recommendation, down_recommendation);
  recommendations_.push_back({now, rec.raw});
  const std::int64_t keep = std::max(up_window, down_window);
  while (!recommendations_.empty() && recommendations_.front().t_ms <= now - keep) recommendations_.pop_front();

  // Step 6: rate limits from the replicas at the start of each period
  // (calculateScaleUpLimitWithScalingRules, calculateScaleDownLimitWithBehaviors).
  int desired = rec.stabilized;
  std::string limited;
  if (desired > current) {
    const int start = current - change_within(scale_up_events_, now, options_.scale_up_period_ms) +
                      change_within(scale_down_events_, now, options_.scale_up_period_ms);
    const int by_replicas = start + options_.scale_up_replicas;
    const int by_percent =
        static_cast<int>(std::ceil(static_cast<double>(start) * (1 + options_.scale_up_percent / 100.0)));
    const int limit = std::max({by_replicas, by_percent, current});
    if (desired > limit) {
      desired = limit;
      limited = "scale-up rate limit " + std::to_string(limit);
    }
  } else if (desired < current) {
    const int start = current - change_within(scale_up_events_, now, options_.scale_down_period_ms) +
                      change_within(scale_down_events_, now, options_.scale_down_period_ms);
    // Go's int32(float64(x) * (1 - p/100)): truncation.
    int limit = static_cast<int>(static_cast<double>(start) * (1 - options_.scale_down_percent / 100.0));
    if (options_.scale_down_replicas) limit = std::max(limit, start - *options_.scale_down_replicas);
    limit = std::min(limit, current);
    if (desired < limit) {
      desired = limit;
      limited = "scale-down rate limit " + std::to_string(limit);
    }
  }

  // Step 7: the policy's range.
  const int clamped = std::clamp(desired, policy_.min_replicas, std::max(policy_.min_replicas, policy_.max_replicas));
  if (clamped != desired) {
    limited = (limited.empty() ? "" : limited + ", then ") + "clamped to [" + std::to_string(policy_.min_replicas) +
              ", " + std::to_string(policy_.max_replicas) + "]";
  }
  rec.desired = clamped;
  if (rec.desired > current) scale_up_events_.push_back({now, rec.desired - current});
  if (rec.desired < current) scale_down_events_.push_back({now, current - rec.desired});
  const std::int64_t event_keep = std::max(options_.scale_up_period_ms, options_.scale_down_period_ms);
  for (auto* events : {&scale_up_events_, &scale_down_events_}) {
    while (!events->empty() && events->front().t_ms <= now - event_keep) events->pop_front();
  }

  // The reason: every signal, then the steps that changed the count.
  std::string reason;
  for (const SignalDesire& s : rec.signals) {
    if (!reason.empty()) reason += "; ";
    reason += s.name + " ";
    if (s.idle) {
      reason += "idle (no first token in the window)";
      reason += s.replicas ? " asks for " + std::to_string(*s.replicas) : ": no demand";
      continue;
    }
    if (!s.value) {
      reason += "missing";
      continue;
    }
    if (s.name == "queueDepth") {
      reason += num(*s.value);
      if (current > 0) reason += " (" + num(*s.value / current) + " per replica)";
    } else if (s.name == "ttftP95") {
      reason += num(*s.value) + "s (target " + num(s.target) + "s)";
    } else if (s.name == "requestRate") {
      reason += num(*s.value) + "/s (target " + num(s.target) + "/s per replica)";
    } else {
      reason += num(*s.value) + " (watermark " + num(s.target) + ")";
    }
    reason += s.replicas ? " asks for " + std::to_string(*s.replicas) : ": no demand";
  }
  if (reason.empty()) reason = "no signal";
  reason += "; raw " + std::to_string(rec.raw);
  if (!held.empty()) reason += " (held at " + std::to_string(current) + ": " + held + ")";
  if (rec.stabilized != rec.raw) {
    reason += ", stabilized " + std::to_string(rec.stabilized) + " (within [" + std::to_string(up_recommendation) +
              ", " + std::to_string(down_recommendation) + "] of the stabilization windows)";
  }
  reason += ", desired " + std::to_string(rec.desired);
  if (!limited.empty()) reason += " (" + limited + ")";
  reason += " from " + std::to_string(current) + ".";
  rec.reason = std::move(reason);
  return rec;
}

}  // namespace gpubank::serving
