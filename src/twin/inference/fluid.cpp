#include "twin/inference/fluid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpubank::twin::inference {

namespace {

constexpr std::int64_t kMinuteMs = 60'000;
constexpr std::int64_t kNeverKey = std::numeric_limits<std::int64_t>::min();
// Per-replica load is looked up in steps of 1 % of saturation.
constexpr double kLevelSteps = 100.0;
constexpr double kRateSmoothingS = 60.0;

// One rung of a ladder: a fresh service with `replicas` ready replicas, `rps` each.
Expected<LoadLevel> measure(const Service& service, int replicas, double rps, const LoadMaker& load,
                            const CalibrationWindows& windows, bool& steady) {
  const std::int64_t warmup_ms = windows.warmup_ms, measure_ms = windows.measure_ms, tail_ms = windows.tail_ms;
  const std::int64_t sample_ms = windows.sample_ms;
  Diagnostics findings;
  ServiceOptions options;
  options.keep_completions = true;
  auto made = InferenceService::create(service, findings, options);
  if (!made) return Unexpected{findings.empty() ? std::string("the service cannot be served") : findings.front().to_string()};
  InferenceService& s = *made;
  const std::vector<Request> requests = load(rps * replicas, warmup_ms + measure_ms + tail_ms);
  if (!s.add_requests(requests, findings)) return Unexpected{"calibration load: " + findings.front().to_string()};
  for (int i = 0; i < replicas; ++i) s.add_replica({"calibration-" + std::to_string(i), 1}, 0);
  LoadLevel level;
  level.offered_rps = rps;
  double running = 0, waiting = 0, kv = 0, waiting_first_half = 0;
  std::int64_t samples = 0, busy_start = 0, itl_sum_start = 0, itl_count_start = 0;
  struct Sums {
    std::int64_t running = 0, waiting = 0, busy_us = 0, itl_sum_us = 0, itl_count = 0;
    double kv = 0;
  };
  auto sums = [&s, replicas] {
    Sums x;
    for (ReplicaId id = 0; id < static_cast<ReplicaId>(replicas); ++id) {
      const ReplicaSnapshot r = s.replica_snapshot(id);
      x.running += r.running;
      x.waiting += r.waiting;
      x.kv += r.kv_cache_usage;
      x.busy_us += r.busy_us;
      x.itl_sum_us += s.counters(id).inter_token_latency.sum_us();
      x.itl_count += s.counters(id).inter_token_latency.count();
    }
    return x;
  };
  const auto per_replica = static_cast<double>(replicas);
  for (std::int64_t t = sample_ms; t <= warmup_ms + measure_ms + tail_ms; t += sample_ms) {
    s.advance_to(t);
    const Sums x = sums();
    if (t == warmup_ms) {
      busy_start = x.busy_us;
      itl_sum_start = x.itl_sum_us;
      itl_count_start = x.itl_count;
    }
    if (t > warmup_ms && t <= warmup_ms + measure_ms) {
      running += static_cast<double>(x.running);
      waiting += static_cast<double>(x.waiting);
      if (t <= warmup_ms + measure_ms / 2) waiting_first_half += static_cast<double>(x.waiting);
      kv += x.kv;
      ++samples;
    }
    if (t == warmup_ms + measure_ms) {
      level.busy = static_cast<double>(x.busy_us - busy_start) / static_cast<double>(measure_ms * 1000) / per_replica;
      const std::int64_t n = x.itl_count - itl_count_start;
      level.itl_mean_us = n > 0 ? static_cast<double>(x.itl_sum_us - itl_sum_start) / static_cast<double>(n) : 0;
    }
  }
  level.running = running / static_cast<double>(samples) / per_replica;
  level.waiting = waiting / static_cast<double>(samples) / per_replica;
  level.kv_usage = kv / static_cast<double>(samples) / per_replica;
  // TTFT of the window's arrivals; one without a first token by the end is above all.
  std::vector<std::int64_t> ttft;
  std::int64_t arrived = 0, finished_in_window = 0;
  double e2e = 0;
  for (const Request& q : requests) {
    if (q.arrival_ms >= warmup_ms && q.arrival_ms < warmup_ms + measure_ms) ++arrived;
  }
  for (const Completion& c : s.completions()) {
    if (c.finished_us >= warmup_ms * 1000 && c.finished_us < (warmup_ms + measure_ms) * 1000) ++finished_in_window;
    if (c.arrival_us < warmup_ms * 1000 || c.arrival_us >= (warmup_ms + measure_ms) * 1000) continue;
    ttft.push_back(c.first_token_us - c.arrival_us);
    e2e += static_cast<double>(c.finished_us - c.arrival_us);
  }
  level.served_rps = static_cast<double>(finished_in_window) / (measure_ms / 1000.0) / per_replica;
  level.e2e_mean_us = ttft.empty() ? 0 : e2e / static_cast<double>(ttft.size());
  const auto answered = static_cast<std::int64_t>(ttft.size());
  // Steady: (almost) every arrival of the window answered by the end, the replica
  // finished about what arrived (within Poisson noise: two standard deviations and 2 %),
  // and its queue did not grow over the window (second half's mean at most 1.5 times the
  // first's, plus 4 requests).
  const auto n = static_cast<double>(arrived);
  const double half = static_cast<double>(samples) / 2;
  const double first_half = waiting_first_half / half, second_half = (waiting - waiting_first_half) / half;
  steady = arrived > 0 && answered >= arrived - std::max<std::int64_t>(3, arrived / 100) &&
           static_cast<double>(finished_in_window) >= 0.98 * n - 2 * std::sqrt(n) &&
           second_half <= 1.5 * first_half + 4 * per_replica;
  std::sort(ttft.begin(), ttft.end());
  for (std::size_t i = 0; i < kFluidQuantiles; ++i) {
    const double p = (static_cast<double>(i) + 0.5) / static_cast<double>(kFluidQuantiles);
    const auto rank = static_cast<std::int64_t>(std::ceil(p * static_cast<double>(arrived)));
    level.ttft_us[i] = rank >= 1 && rank <= answered ? ttft[static_cast<std::size_t>(rank - 1)]
                                                     : (tail_ms + measure_ms) * 1000;
  }
  return level;
}

// The bucket of a TTFT in microseconds (the last is +Inf).
std::size_t ttft_bucket(std::int64_t us) {
  for (std::size_t b = 0; b < kTtftBucketsSeconds.size(); ++b) {
    if (static_cast<double>(us) <= kTtftBucketsSeconds[b] * 1e6 + 0.5) return b;
  }
  return kTtftBucketsSeconds.size();
}

// Whole observations out of a fractional carry.
std::int64_t take_whole(double& carry) {
  const double whole = std::floor(carry + 1e-9);
  carry -= whole;
  return static_cast<std::int64_t>(whole);
}

}  // namespace

Expected<Calibration> calibrate(const Service& service, double reference_rps, const LoadMaker& load,
                                std::span<const int> replica_counts, const CalibrationWindows& windows) {
  if (!(reference_rps > 0) || !std::isfinite(reference_rps)) return Unexpected{"calibration: reference rate must be > 0"};
  if (replica_counts.empty() || !std::is_sorted(replica_counts.begin(), replica_counts.end()) ||
      replica_counts.front() < 1 || replica_counts.back() > 64) {
    return Unexpected{"calibration: replica counts must be ascending, from 1 to 64"};
  }
  if (windows.sample_ms < 1 || windows.warmup_ms < 0 || windows.tail_ms < 0 || windows.measure_ms < 2 * windows.sample_ms ||
      windows.warmup_ms % windows.sample_ms != 0 || windows.measure_ms % (2 * windows.sample_ms) != 0) {
    return Unexpected{"calibration: windows must be whole numbers of samples, the measured one at least two"};
  }
  Calibration out;
  for (const int replicas : replica_counts) {
    Ladder ladder;
    ladder.replicas = replicas;
    for (int step = 1; step <= 60; ++step) {
      const double rps = reference_rps * 0.1 * step;
      bool steady = false;
      auto level = measure(service, replicas, rps, load, windows, steady);
      if (!level) return Unexpected{level.error()};
      if (!steady) {
        // Overloaded: what a replica finishes when it cannot keep up. Measured twice as
        // far past the last steady rung, where the queue never empties.
        bool ignored = false;
        auto over = measure(service, replicas, 2 * rps, load, windows, ignored);
        if (!over) return Unexpected{over.error()};
        ladder.saturation_rps = std::max({over->served_rps, level->served_rps,
                                          ladder.levels.empty() ? 0.0 : ladder.levels.back().served_rps});
        break;
      }
      ladder.levels.push_back(*level);
    }
    if (ladder.levels.empty()) {
      return Unexpected{"calibration: " + std::to_string(replicas) + " replica(s) cannot serve even the lowest load"};
    }
    if (ladder.saturation_rps <= 0) ladder.saturation_rps = ladder.levels.back().served_rps;
    out.ladders.push_back(std::move(ladder));
  }
  return out;
}

std::optional<FluidService> FluidService::create(Service service, std::shared_ptr<const Calibration> calibration,
                                                 Diagnostics& findings) {
  auto problems = check_service(service);
  if (has_errors(problems)) {
    findings.insert(findings.end(), problems.begin(), problems.end());
    return std::nullopt;
  }
  const bool usable = calibration && !calibration->ladders.empty() &&
                      std::all_of(calibration->ladders.begin(), calibration->ladders.end(),
                                  [](const Ladder& l) { return !l.levels.empty() && l.saturation_rps > 0; });
  if (!usable) {
    Diagnostic d;
    d.rule = std::string(kRuleServiceField);
    d.kind = "Service";
    d.name = service.name;
    d.path = "calibration";
    d.message = "the fluid model needs a calibration with at least one steady level";
    findings.push_back(std::move(d));
    return std::nullopt;
  }
  auto costs = replica_costs(service.model, service.engine, service.gpu_model, service.tensor_parallel_size);
  return FluidService(std::move(service), *costs, std::move(calibration));
}

FluidService::FluidService(Service service, ReplicaCosts costs, std::shared_ptr<const Calibration> calibration)
    : service_(std::move(service)), costs_(costs), calibration_(std::move(calibration)) {
  auto never = std::make_unique<Level>();
  never->never = true;
  never->ttft_us.fill(MinuteTtft::kNeverUs);
  levels_cache_.emplace(kNeverKey, std::move(never));
}

bool FluidService::add_requests(std::span<const Request> requests, Diagnostics& findings) {
  const std::int64_t last = next_arrival_ < arrivals_.size() ? arrivals_.back().arrival_ms : now_ms_;
  if (!check_requests(requests, last, findings, service_.task)) return false;
  if (next_arrival_ > 0 && next_arrival_ * 2 >= arrivals_.size()) {
    arrivals_.erase(arrivals_.begin(), arrivals_.begin() + static_cast<std::ptrdiff_t>(next_arrival_));
    next_arrival_ = 0;
  }
  arrivals_.insert(arrivals_.end(), requests.begin(), requests.end());
  return true;
}

ReplicaId FluidService::add_replica(ReplicaSpec spec, std::int64_t ready_at_ms) {
  Replica r;
  r.id = static_cast<ReplicaId>(replicas_.size());
  r.name = spec.name.empty() ? "replica-" + std::to_string(r.id) : std::move(spec.name);
  r.weight = spec.weight;
  r.ready_at_ms = std::max(ready_at_ms, now_ms_);
  r.state = r.ready_at_ms <= now_ms_ ? ReplicaState::ready : ReplicaState::loading;
  replicas_.push_back(std::move(r));
  return replicas_.back().id;
}

Expected<std::monostate> FluidService::start_drain(ReplicaId id) {
  if (id >= replicas_.size() || replicas_[id].state == ReplicaState::removed) {
    return Unexpected{"no replica " + std::to_string(id)};
  }
  Replica& r = replicas_[id];
  if (r.state == ReplicaState::draining) return std::monostate{};
  r.weight = 0;
  const double held = r.state == ReplicaState::ready ? r.running + r.waiting : 0;
  r.state = ReplicaState::draining;
  r.drain_start_ms = now_ms_;
  r.drain_in_flight = held;
  // What it holds finishes in about one end-to-end latency once its queue (at the
  // replica's throughput) is through.
  double e2e_us = 0;
  for (const auto& [key, level] : levels_cache_) {
    if (key != kNeverKey) e2e_us = std::max(e2e_us, level->e2e_mean_us);
  }
  const double queue_ms = r.waiting / saturation_rps(1) * 1000.0;
  r.drain_end_ms = held > 0 ? now_ms_ + static_cast<std::int64_t>(std::ceil(queue_ms + e2e_us / 1000.0)) : now_ms_;
  r.running = held;
  r.waiting = 0;
  return std::monostate{};
}

std::int64_t FluidService::in_flight(const Replica& r) const {
  if (r.state == ReplicaState::draining) {
    if (now_ms_ >= r.drain_end_ms) return 0;
    const double left = static_cast<double>(r.drain_end_ms - now_ms_) /
                        static_cast<double>(std::max<std::int64_t>(1, r.drain_end_ms - r.drain_start_ms));
    return static_cast<std::int64_t>(std::ceil(r.drain_in_flight * left - 1e-9));
  }
  if (r.state != ReplicaState::ready) return 0;
  return std::llround(r.running) + std::llround(r.waiting);
}

Expected<std::int64_t> FluidService::abort_replica(ReplicaId id) {
  if (id >= replicas_.size() || replicas_[id].state == ReplicaState::removed) {
    return Unexpected{"no replica " + std::to_string(id)};
  }
  Replica& r = replicas_[id];
  const std::int64_t cut = in_flight(r);
  if (r.state == ReplicaState::ready && r.weight > 0) {
    std::int64_t serving = 0;
    for (const Replica& x : replicas_) serving += x.state == ReplicaState::ready && x.weight > 0 ? 1 : 0;
    if (serving > 0) backlog_ -= backlog_ / static_cast<double>(serving);  // its share waited on it
  }
  aborted_ += cut;
  r.state = ReplicaState::removed;
  r.running = r.waiting = r.kv_usage = r.busy = 0;
  return cut;
}

bool FluidService::add_batches(std::span<const ArrivalBatch> batches) {
  std::int64_t last = batches_.empty() ? now_ms_ : batches_.back().to_ms;
  for (const ArrivalBatch& b : batches) {
    if (b.from_ms < last || b.to_ms <= b.from_ms || !(b.count >= 0)) return false;
    last = b.to_ms;
  }
  batches_.insert(batches_.end(), batches.begin(), batches.end());
  return true;
}

FluidService::Arrivals FluidService::take_arrivals(std::int64_t through_ms) {
  Arrivals a;
  while (!batches_.empty() && batches_.front().from_ms < through_ms) {
    ArrivalBatch& b = batches_.front();
    const double share = b.to_ms <= through_ms ? 1.0
                                               : static_cast<double>(through_ms - b.from_ms) /
                                                     static_cast<double>(b.to_ms - b.from_ms);
    a.count += share * b.count;
    a.prompt_tokens += share * b.prompt_tokens;
    a.output_tokens += share * b.output_tokens;
    if (share >= 1.0) {
      batches_.pop_front();
    } else {
      b.count -= share * b.count;
      b.prompt_tokens -= share * b.prompt_tokens;
      b.output_tokens -= share * b.output_tokens;
      b.from_ms = through_ms;
      break;
    }
  }
  while (next_arrival_ < arrivals_.size() && arrivals_[next_arrival_].arrival_ms <= through_ms) {
    const Request& q = arrivals_[next_arrival_++];
    if (static_cast<std::int64_t>(q.prompt_tokens) + q.output_tokens > costs_.max_request_tokens) {
      ++rejected_;
      continue;
    }
    a.count += 1;
    a.prompt_tokens += q.prompt_tokens;
    a.output_tokens += q.output_tokens;
  }
  return a;
}

FluidService::Between FluidService::ladders_for(std::size_t replicas) const {
  const auto& ladders = calibration_->ladders;
  const double r = std::max<double>(1.0, static_cast<double>(replicas));
  Between b;
  b.lo = &ladders.front();
  b.hi = &ladders.front();
  for (const Ladder& l : ladders) {
    if (static_cast<double>(l.replicas) <= r) b.lo = &l;
  }
  b.hi = b.lo;
  for (const Ladder& l : ladders) {
    if (static_cast<double>(l.replicas) >= r) {
      b.hi = &l;
      break;
    }
  }
  if (static_cast<double>(b.hi->replicas) < r) b.hi = b.lo;  // above the largest: it stands
  if (b.hi != b.lo) {
    b.w = (std::log2(r) - std::log2(b.lo->replicas)) / (std::log2(b.hi->replicas) - std::log2(b.lo->replicas));
  }
  return b;
}

double FluidService::saturation_rps(std::size_t replicas) const {
  const Between b = ladders_for(replicas);
  return b.lo->saturation_rps + b.w * (b.hi->saturation_rps - b.lo->saturation_rps);
}

namespace {

// A ladder's level at `rps` per replica, interpolated between its rungs (the first or the
// last outside their range).
struct Rungs {
  const LoadLevel* lo = nullptr;
  const LoadLevel* hi = nullptr;
  double w = 0;
};
Rungs rungs_at(const Ladder& ladder, double rps) {
  const auto& levels = ladder.levels;
  std::size_t hi = 0;
  while (hi < levels.size() && levels[hi].offered_rps < rps) ++hi;
  Rungs r;
  r.lo = &levels[hi == 0 ? 0 : std::min(hi, levels.size()) - 1];
  r.hi = &levels[std::min(hi, levels.size() - 1)];
  if (r.hi != r.lo && r.hi->offered_rps > r.lo->offered_rps) {
    r.w = std::clamp((rps - r.lo->offered_rps) / (r.hi->offered_rps - r.lo->offered_rps), 0.0, 1.0);
  }
  return r;
}

}  // namespace

const FluidService::Level& FluidService::level_for(double rps_per_replica, bool saturated, std::size_t replicas) {
  const Between between = ladders_for(replicas);
  const int capped = std::min<int>(static_cast<int>(std::max<std::size_t>(1, replicas)), calibration_->ladders.back().replicas);
  const double mu = saturation_rps(replicas);
  const std::int64_t step =
      saturated ? 0 : std::clamp<std::int64_t>(std::llround(rps_per_replica / mu * kLevelSteps), 0, 100'000);
  const std::int64_t key = saturated ? -capped : capped * 1'000'000 + step;
  auto& slot = levels_cache_[key];
  if (slot) return *slot;
  auto level = std::make_unique<Level>();
  const double rps = static_cast<double>(step) / kLevelSteps * mu;
  // Each ladder's level (the saturated one: its top rung), then the two mixed.
  auto at = [&](const Ladder& ladder) {
    return saturated ? Rungs{&ladder.levels.back(), &ladder.levels.back(), 0} : rungs_at(ladder, rps);
  };
  const Rungs a = at(*between.lo), b = at(*between.hi);
  const double wb = between.w;
  auto mix = [&](double LoadLevel::*field) {
    const double x = a.lo->*field + a.w * (a.hi->*field - a.lo->*field);
    const double y = b.lo->*field + b.w * (b.hi->*field - b.lo->*field);
    return x + wb * (y - x);
  };
  level->running = mix(&LoadLevel::running);
  level->waiting = mix(&LoadLevel::waiting);
  level->kv_usage = mix(&LoadLevel::kv_usage);
  level->busy = std::clamp(mix(&LoadLevel::busy), 0.0, 1.0);
  level->e2e_mean_us = mix(&LoadLevel::e2e_mean_us);
  level->itl_mean_us = mix(&LoadLevel::itl_mean_us);
  for (std::size_t i = 0; i < kFluidQuantiles; ++i) {
    auto q = [i](const Rungs& r) {
      return static_cast<double>(r.lo->ttft_us[i]) + r.w * static_cast<double>(r.hi->ttft_us[i] - r.lo->ttft_us[i]);
    };
    const double x = q(a), y = q(b);
    level->ttft_us[i] = std::llround(x + wb * (y - x));
  }
  if (saturated) level->busy = 1.0;
  for (std::int64_t v : level->ttft_us) level->bucket_share[ttft_bucket(v)] += 1.0 / static_cast<double>(kFluidQuantiles);
  slot = std::move(level);
  return *slot;
}

void FluidService::record_minute(std::int64_t arrival_ms, double arrivals, std::int64_t wait_us, const Level& level) {
  if (arrivals <= 0) return;
  close_minutes(arrival_ms - arrival_ms % kMinuteMs);
  if (!open_minute_.empty() && open_minute_.back().level == &level && open_minute_.back().wait_us == wait_us) {
    open_minute_.back().arrivals += arrivals;
  } else {
    open_minute_.push_back({arrivals, wait_us, &level});
  }
}

// Closes the open minute when `before_ms` is past it: the nearest-rank p95 over its
// arrivals, each entry's arrivals spread as its level's quantiles shifted by its wait.
void FluidService::close_minutes(std::int64_t before_ms) {
  const std::int64_t minute = before_ms / kMinuteMs;
  if (minute <= open_minute_index_) return;
  if (!open_minute_.empty()) {
    if (minutes_.size() <= static_cast<std::size_t>(open_minute_index_)) {
      minutes_.resize(static_cast<std::size_t>(open_minute_index_) + 1);
    }
    MinuteTtft& m = minutes_[static_cast<std::size_t>(open_minute_index_)];
    double n = 0;
    for (const MinuteEntry& e : open_minute_) n += e.arrivals;
    m.arrived = std::llround(n);
    const double rank = std::ceil(0.95 * n - 1e-9);
    // Candidate values: every entry's quantiles; the p95 is the smallest value at which
    // the arrivals at or below it reach the rank. One entry (the usual minute): read off.
    m.p95_us = MinuteTtft::kNeverUs;
    if (open_minute_.size() == 1) {
      const MinuteEntry& e = open_minute_.front();
      if (!e.level->never) {
        // Quantile i stands for p = (i + 0.5) / kFluidQuantiles: the first at or above rank / n.
        const auto q = static_cast<std::size_t>(std::clamp<double>(
            std::ceil(rank / n * static_cast<double>(kFluidQuantiles) - 0.5 - 1e-9), 0, kFluidQuantiles - 1));
        m.p95_us = e.level->ttft_us[q] + e.wait_us;
        m.answered_by_us = (open_minute_index_ + 1) * kMinuteMs * 1000 + e.level->ttft_us.back() + e.wait_us;
      }
      open_minute_.clear();
      open_minute_index_ = minute;
      return;
    }
    // Several entries: the smallest v whose arrivals at or below it reach the rank, by
    // bisection over v (each entry's quantiles are sorted).
    auto at_or_below = [this](std::int64_t v) {
      double count = 0;
      for (const MinuteEntry& e : open_minute_) {
        if (e.level->never) continue;
        const auto k = std::upper_bound(e.level->ttft_us.begin(), e.level->ttft_us.end(), v - e.wait_us) -
                       e.level->ttft_us.begin();
        count += e.arrivals * static_cast<double>(k) / static_cast<double>(kFluidQuantiles);
      }
      return count;
    };
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = 0;
    for (const MinuteEntry& e : open_minute_) {
      if (e.level->never) continue;
      lo = std::min(lo, e.level->ttft_us.front() + e.wait_us);
      hi = std::max(hi, e.level->ttft_us.back() + e.wait_us);
    }
    if (lo <= hi && at_or_below(hi) + 1e-9 >= rank) {
      while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (at_or_below(mid) + 1e-9 >= rank) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      m.p95_us = lo;
    }
    for (const MinuteEntry& e : open_minute_) {
      if (!e.level->never) {
        m.answered_by_us = std::max(m.answered_by_us, (open_minute_index_ + 1) * kMinuteMs * 1000 + e.level->ttft_us.back() + e.wait_us);
      }
    }
    open_minute_.clear();
  }
  open_minute_index_ = minute;
}

void FluidService::observe(Replica& r, const Level& level, double arrivals, std::int64_t wait_us, double served,
                           double prompt_tokens, double output_tokens) {
  if (arrivals > 0 && !level.never) {
    if (wait_us == 0) {
      for (std::size_t b = 0; b < r.ttft_carry.size(); ++b) r.ttft_carry[b] += arrivals * level.bucket_share[b];
    } else {
      const double each = arrivals / static_cast<double>(kFluidQuantiles);
      for (std::int64_t v : level.ttft_us) r.ttft_carry[ttft_bucket(v + wait_us)] += each;
    }
    for (std::size_t b = 0; b < r.ttft_carry.size(); ++b) {
      if (r.ttft_carry[b] < 1.0) continue;
      const std::int64_t whole = take_whole(r.ttft_carry[b]);
      // Observed at the middle of the bucket (its count is exact, the sum approximate).
      const double lo = b == 0 ? 0.0 : kTtftBucketsSeconds[b - 1];
      const double hi = b < kTtftBucketsSeconds.size() ? kTtftBucketsSeconds[b] : 2 * kTtftBucketsSeconds.back();
      const std::int64_t at = std::llround((lo + hi) / 2 * 1e6);
      r.counters.time_to_first_token.observe(at, whole);
    }
  }
  if (served <= 0) return;
  r.finished_carry += served;
  r.prompt_carry += prompt_tokens;
  r.generation_carry += output_tokens;
  r.e2e_carry += served;
  r.itl_carry += std::max(0.0, output_tokens - served);
  const std::int64_t finished = take_whole(r.finished_carry);
  r.finished += finished;
  r.counters.request_success[0] += finished;
  r.counters.prompt_tokens += take_whole(r.prompt_carry);
  r.counters.generation_tokens += take_whole(r.generation_carry);
  if (const std::int64_t e2e = take_whole(r.e2e_carry); e2e > 0) {
    r.counters.e2e_request_latency.observe(std::llround(level.e2e_mean_us) + wait_us, e2e);
  }
  if (const std::int64_t itl = take_whole(r.itl_carry); itl > 0) {
    r.counters.inter_token_latency.observe(std::max<std::int64_t>(1, std::llround(level.itl_mean_us)), itl);
  }
}

void FluidService::slice(std::int64_t a_ms, std::int64_t b_ms) {
  for (Replica& r : replicas_) {
    if (r.state == ReplicaState::loading && r.ready_at_ms <= a_ms) r.state = ReplicaState::ready;
  }
  const Arrivals in = take_arrivals(b_ms);
  arrived_total_ += in.count;
  arrived_ = std::llround(arrived_total_);
  prompt_total_ += in.prompt_tokens;
  output_total_ += in.output_tokens;
  const double dt_s = static_cast<double>(b_ms - a_ms) / 1000.0;
  std::vector<Replica*> serving;
  for (Replica& r : replicas_) {
    if (r.state == ReplicaState::ready && r.weight > 0) serving.push_back(&r);
  }
  const double mu = saturation_rps(std::max<std::size_t>(1, serving.size()));
  const double prompt_mean = arrived_total_ > 0 ? prompt_total_ / arrived_total_ : 0;
  const double output_mean = arrived_total_ > 0 ? output_total_ / arrived_total_ : 0;
  if (serving.empty()) {
    backlog_ += in.count;
    // They wait for the first replica loading, then for the backlog ahead of them.
    std::int64_t first_ready = -1;
    for (const Replica& r : replicas_) {
      if (r.state == ReplicaState::loading && (first_ready < 0 || r.ready_at_ms < first_ready)) first_ready = r.ready_at_ms;
    }
    if (first_ready < 0) {
      record_minute(a_ms, in.count, 0, *levels_cache_.at(kNeverKey));
    } else {
      const auto wait_us = (first_ready - a_ms) * 1000 + std::llround(backlog_ / mu * 1e6);
      record_minute(a_ms, in.count, wait_us, level_for(0, true, 1));
    }
  } else {
    const auto n = static_cast<double>(serving.size());
    const double capacity = n * mu * dt_s;
    const double total = backlog_ + in.count;
    const double served = std::min(total, capacity);
    backlog_ = total - served;
    const bool saturated = backlog_ > 1e-9;
    // The level follows the arrival rate smoothed over about a minute: the calibration's
    // levels hold Poisson burstiness already, and a slice's own count would add it twice.
    const double rate = in.count / dt_s;
    rate_smoothed_ = rate_seeded_ ? rate_smoothed_ + (1.0 - std::exp(-dt_s / kRateSmoothingS)) * (rate - rate_smoothed_)
                                  : rate;
    rate_seeded_ = true;
    const Level& level = level_for(rate_smoothed_ / n, saturated, serving.size());
    const std::int64_t wait_us = saturated ? std::llround(backlog_ / (n * mu) * 1e6) : 0;
    record_minute(a_ms, in.count, wait_us, level);
    for (Replica* r : serving) {
      r->running = level.running;
      r->waiting = level.waiting + backlog_ / n;
      r->kv_usage = level.kv_usage;
      r->busy = level.busy;
      r->busy_us += level.busy * dt_s * 1e6;
      observe(*r, level, in.count / n, wait_us, served / n, served / n * prompt_mean, served / n * output_mean);
    }
  }
  for (Replica& r : replicas_) {
    if (r.state != ReplicaState::draining) continue;
    if (r.ready_at_ms > b_ms) continue;  // drained while loading: holds nothing
    // What it held finishes over the drain.
    const double total_ms = static_cast<double>(std::max<std::int64_t>(1, r.drain_end_ms - r.drain_start_ms));
    const double from = std::clamp(static_cast<double>(a_ms - r.drain_start_ms) / total_ms, 0.0, 1.0);
    const double to = std::clamp(static_cast<double>(b_ms - r.drain_start_ms) / total_ms, 0.0, 1.0);
    const double done = r.drain_in_flight * (to - from);
    if (done > 0) {
      const Level& level = level_for(0, false, 1);
      observe(r, level, 0, 0, done, done * prompt_mean, done * output_mean);
    }
    r.busy = to < 1.0 ? level_for(0, false, 1).busy : 0;
    r.running = r.drain_in_flight * (1.0 - to);
    r.kv_usage = to < 1.0 ? r.kv_usage : 0;
  }
}

bool FluidService::advance_to(std::int64_t t_ms) {
  if (t_ms < now_ms_) return false;
  while (now_ms_ < t_ms) {
    std::int64_t b = std::min(t_ms, (now_ms_ / kFluidSliceMs + 1) * kFluidSliceMs);
    for (const Replica& r : replicas_) {
      if (r.state == ReplicaState::loading && r.ready_at_ms > now_ms_) b = std::min(b, r.ready_at_ms);
      if (r.state == ReplicaState::draining && r.drain_end_ms > now_ms_) b = std::min(b, r.drain_end_ms);
    }
    slice(now_ms_, b);
    now_ms_ = b;
  }
  for (Replica& r : replicas_) {
    if (r.state == ReplicaState::loading && r.ready_at_ms <= now_ms_) r.state = ReplicaState::ready;
  }
  close_minutes(now_ms_);
  return true;
}

ReplicaSnapshot FluidService::replica_snapshot(ReplicaId id) const {
  const Replica& r = replicas_.at(id);
  ReplicaSnapshot s;
  s.id = r.id;
  s.name = r.name;
  s.state = r.state;
  s.weight = r.weight;
  if (r.state == ReplicaState::draining) {
    s.running = in_flight(r);
  } else if (r.state == ReplicaState::ready) {
    s.running = std::llround(r.running);
    s.waiting = std::llround(r.waiting);
  }
  s.in_flight = s.running + s.waiting;
  s.kv_cache_usage = std::clamp(r.kv_usage, 0.0, 1.0);
  s.prompt_tokens = r.counters.prompt_tokens;
  s.generation_tokens = r.counters.generation_tokens;
  s.finished = r.finished;
  s.busy_us = std::llround(r.busy_us);
  s.load_factor = r.busy;
  return s;
}

std::int64_t FluidService::router_waiting() const {
  // The backlog waits at the replicas while any serves; with none, at the router.
  for (const Replica& r : replicas_) {
    if (r.state == ReplicaState::ready && r.weight > 0) return 0;
  }
  return std::llround(backlog_);
}

ServiceSnapshot FluidService::snapshot() const {
  ServiceSnapshot s;
  s.now_ms = now_ms_;
  s.router_waiting = router_waiting();
  s.arrived = arrived_ + rejected_;
  s.rejected = rejected_;
  for (const Replica& r : replicas_) s.finished += r.finished;
  s.aborted = aborted_;
  for (const Replica& r : replicas_) s.replicas.push_back(replica_snapshot(r.id));
  return s;
}

const VllmCounters& FluidService::counters(ReplicaId id) const { return replicas_.at(id).counters; }

}  // namespace gpubank::twin::inference
