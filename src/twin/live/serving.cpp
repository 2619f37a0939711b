#include "twin/live/serving.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>

#include <unistd.h>

#include <date/tz.h>

#include "core/fnv1a.hpp"
#include "metrics/histogram.hpp"
#include "serving/autoscaler.hpp"
#include "twin/inference/fluid.hpp"
#include "twin/inference/vllm_metrics.hpp"

namespace gpubank::twin::live {

namespace {

using Json = nlohmann::ordered_json;
constexpr std::int64_t kHourMs = 3'600'000;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr std::uint64_t kCalibrationSeed = 0x9e3779b97f4a7c15ULL;


// A standard normal draw (Box-Muller, the cosine half), from two of the generator's
// uniforms: the same on every platform, unlike std::normal_distribution.
double standard_normal(SeededRandom& rng) {
  const double u1 = rng.uniform();
  const double u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(6.283185307179586 * u2);
}

// A log-normal with the given median and mean: mu = ln(median), sigma^2 = 2 ln(mean/median).
struct LogNormal {
  double mu = 0, sigma = 0;
  LogNormal(double median, double mean) : mu(std::log(median)), sigma(std::sqrt(2.0 * std::log(mean / median))) {}
  std::int32_t draw(SeededRandom& rng, std::int32_t cap) const {
    const double x = std::exp(mu + sigma * standard_normal(rng));
    return static_cast<std::int32_t>(std::clamp<double>(std::round(x), 1.0, static_cast<double>(cap)));
  }
};

class SyntheticSource final : public RequestSource {
 public:
  SyntheticSource(std::uint64_t seed, const std::vector<double>& rates_per_hour, std::int64_t horizon_ms,
                  const TokenProfile& tokens, RateShape shape)
      : rng_(seed),
        horizon_ms_(horizon_ms),
        tokens_(tokens),
        prompt_(tokens.prompt_median, tokens.prompt_mean),
        output_(tokens.output_median, tokens.output_mean) {
    std::vector<double> per_ms;
    for (double r : rates_per_hour) per_ms.push_back(std::isfinite(r) && r > 0 ? r / 1000.0 : 0.0);
    if (shape == RateShape::Steps) {
      segment_ms_ = kHourMs;
      for (double r : per_ms) segments_.push_back({r, r});
    } else {
      // Through each hour's rate at its middle: half-hour segments from the mean of two
      // neighbouring hours at the boundary to the hour's own rate at its middle (the first
      // and last hours have no neighbour outside the run: flat there).
      segment_ms_ = kHourMs / 2;
      for (std::size_t h = 0; h < per_ms.size(); ++h) {
        const double before = h > 0 ? per_ms[h - 1] : per_ms[h];
        const double after = h + 1 < per_ms.size() ? per_ms[h + 1] : per_ms[h];
        segments_.push_back({(before + per_ms[h]) / 2, per_ms[h]});
        segments_.push_back({per_ms[h], (per_ms[h] + after) / 2});
      }
    }
    for (const Segment& g : segments_) expected_ += (g.from + g.to) / 2 * static_cast<double>(segment_ms_);
    draw_next();
  }

  std::vector<inference::Request> take_until(std::int64_t t_ms) override {
    std::vector<inference::Request> out;
    while (!done_ && static_cast<std::int64_t>(next_) <= t_ms) {
      inference::Request r;
      r.arrival_ms = static_cast<std::int64_t>(next_);
      r.prompt_tokens = prompt_.draw(rng_, tokens_.prompt_cap);
      r.output_tokens = output_.draw(rng_, tokens_.output_cap);
      r.id = id_++;
      out.push_back(r);
      draw_next();
    }
    return out;
  }

  [[nodiscard]] double expected_total() const override { return expected_; }

  std::vector<inference::ArrivalBatch> batches_until(std::int64_t t_ms) override {
    std::vector<inference::ArrivalBatch> out;
    const std::int64_t until = std::min(t_ms + 1, horizon_ms_);
    while (batched_to_ < until) {
      const std::int64_t from = batched_to_;
      const std::int64_t to = std::min({until, (from / inference::kFluidSliceMs + 1) * inference::kFluidSliceMs,
                                         (from / segment_ms_ + 1) * segment_ms_});
      const auto k = static_cast<std::size_t>(from / segment_ms_);
      const double mean = k < segments_.size() ? (rate_at(static_cast<double>(from)) + rate_at(static_cast<double>(to))) /
                                                     2 * static_cast<double>(to - from)
                                               : 0.0;
      const double n = poisson(mean);
      out.push_back({from, to, n, n * tokens_.prompt_mean, n * tokens_.output_mean});
      batched_to_ = to;
    }
    return out;
  }

 private:
  struct Segment {
    double from = 0, to = 0;  // requests per ms at the segment's start and end, linear between
  };

  // The intensity at t (within the segment t falls in; its end for t on a boundary).
  [[nodiscard]] double rate_at(double t) const {
    auto k = static_cast<std::size_t>(t / static_cast<double>(segment_ms_));
    if (k >= segments_.size()) k = segments_.size() - 1;
    const Segment& g = segments_[k];
    const double x = (t - static_cast<double>(k) * static_cast<double>(segment_ms_)) / static_cast<double>(segment_ms_);
    return g.from + (g.to - g.from) * std::min(x, 1.0);
  }

  // A Poisson draw: Knuth's product of uniforms below a mean of 30, else the normal
  // approximation rounded (its error at 30 is far below the fluid model's own).
  double poisson(double mean) {
    if (!(mean > 0)) return 0;
    if (mean < 30) {
      const double limit = std::exp(-mean);
      double product = rng_.uniform();
      double k = 0;
      while (product > limit) {
        product *= rng_.uniform();
        ++k;
      }
      return k;
    }
    return std::max(0.0, std::round(mean + std::sqrt(mean) * standard_normal(rng_)));
  }

  // The next arrival: a unit exponential spent across the segments' intensities (their
  // integral over time), so the gaps follow the rate exactly: within a segment whose rate
  // moves linearly from l (now) with slope k, e is spent after d with l d + k d^2 / 2 = e.
  void draw_next() {
    double e = rng_.exponential(1.0);
    double t = next_;
    while (true) {
      const auto k = static_cast<std::size_t>(t / static_cast<double>(segment_ms_));
      if (k >= segments_.size() || t >= static_cast<double>(horizon_ms_)) {
        done_ = true;
        return;
      }
      const Segment& g = segments_[k];
      const double end = std::min(static_cast<double>(k + 1) * static_cast<double>(segment_ms_),
                                  static_cast<double>(horizon_ms_));
      if (g.from == g.to) {  // a constant rate: the exact e / rate, as the steps always were
        const double rate = g.from;
        if (rate > 0 && e <= rate * (end - t)) {
          next_ = t + e / rate;
          if (next_ >= static_cast<double>(horizon_ms_)) done_ = true;
          return;
        }
        if (rate > 0) e -= rate * (end - t);
        t = end;
        continue;
      }
      const double slope = (g.to - g.from) / static_cast<double>(segment_ms_);
      const double now = rate_at(t);
      const double here = (now + now + slope * (end - t)) / 2 * (end - t);  // the integral to the segment's end
      if (here > 0 && e <= here) {
        // d = 2e / (l + sqrt(l^2 + 2ke)): the root without cancellation when k < 0.
        const double root = std::sqrt(std::max(0.0, now * now + 2 * slope * e));
        next_ = std::min(end, t + 2 * e / (now + root));
        if (next_ >= static_cast<double>(horizon_ms_)) done_ = true;
        return;
      }
      if (here > 0) e -= here;
      t = end;
    }
  }

  SeededRandom rng_;
  std::vector<Segment> segments_;
  std::int64_t segment_ms_ = kHourMs;
  std::int64_t horizon_ms_ = 0;
  double expected_ = 0;
  double next_ = 0;
  bool done_ = false;
  std::uint64_t id_ = 0;
  TokenProfile tokens_;
  LogNormal prompt_;
  LogNormal output_;
};

class ListSource final : public RequestSource {
 public:
  explicit ListSource(std::vector<inference::Request> requests) : requests_(std::move(requests)) {}
  std::vector<inference::Request> take_until(std::int64_t t_ms) override {
    const std::size_t from = next_;
    while (next_ < requests_.size() && requests_[next_].arrival_ms <= t_ms) ++next_;
    return {requests_.begin() + static_cast<std::ptrdiff_t>(from), requests_.begin() + static_cast<std::ptrdiff_t>(next_)};
  }
  [[nodiscard]] double expected_total() const override { return static_cast<double>(requests_.size()); }

 private:
  std::vector<inference::Request> requests_;
  std::size_t next_ = 0;
};

std::string pod_of(const std::string& key) { return key.substr(key.find('/') + 1) + "-0"; }

// The largest replica floor the policy gets over a day: its TidalPolicy floors (if it is a
// target), within minReplicas..maxReplicas, as make_day starts replicas.
int peak_replicas_of(const policy::PolicySet& policies, const std::string& name,
                     const policy::InferenceScalingPolicySpec& spec) {
  int peak = spec.min_replicas;
  for (const auto& p : policies.policies()) {
    if (p.kind != policy::Kind::TidalPolicy) continue;
    if (const auto window = p.as<policy::TidalPolicySpec>().largest_floor_window(name)) {
      peak = std::max(peak, std::min(window->second, spec.max_replicas));
    }
  }
  return std::max(peak, 1);
}

// Calibrations of the fluid model by service definition: computed once per process (a
// few hundred milliseconds each) and shared, read only, by every run that needs one.
std::string calibration_key(const inference::Service& s) {
  const auto& m = s.model;
  const auto& e = s.engine;
  return std::string(inference::to_string(s.task)) + "|" + s.gpu_model + "|" + std::to_string(s.tensor_parallel_size) +
         "|" + std::to_string(m.parameters) + "|" +
         std::to_string(m.bytes_per_parameter) + "|" + std::to_string(m.num_layers) + "|" + std::to_string(m.num_kv_heads) +
         "|" + std::to_string(m.head_dim) + "|" + std::to_string(m.kv_dtype_bytes) + "|" + std::to_string(m.max_model_len) +
         "|" + std::to_string(e.gpu_memory_utilization) + "|" + std::to_string(e.block_size) + "|" +
         std::to_string(e.max_num_seqs) + "|" + std::to_string(e.max_num_batched_tokens) + "|" +
         std::to_string(e.memory_efficiency) + "|" + std::to_string(e.compute_efficiency) + "|" +
         std::to_string(e.step_overhead_us);
}

// The calibration cache across processes (opt-in: GPUBANK_CALIBRATION_CACHE names a
// directory). A calibration is a pure function of its key, and JSON carries every double
// exactly (17 significant digits), so a cached one gives byte-identical runs; the crash
// tests, which restart `gpubank up` dozens of times, use it so that each start does not
// calibrate again. Bump kCalibrationFormat whenever inference::calibrate() or the load it
// is given changes: a cached calibration from older code would be silently different.
constexpr std::string_view kCalibrationFormat = "calibration-1";

Json calibration_to_json(const std::string& key, const inference::Calibration& c) {
  Json ladders = Json::array();
  for (const auto& l : c.ladders) {
    Json levels = Json::array();
    for (const auto& v : l.levels) {
      Json ttft = Json::array();
      for (const auto t : v.ttft_us) ttft.push_back(t);
      levels.push_back(Json{{"offered", v.offered_rps}, {"served", v.served_rps}, {"running", v.running},
                            {"waiting", v.waiting}, {"kv", v.kv_usage}, {"busy", v.busy}, {"e2e", v.e2e_mean_us},
                            {"itl", v.itl_mean_us}, {"ttft", std::move(ttft)}});
    }
    ladders.push_back(Json{{"replicas", l.replicas}, {"saturation", l.saturation_rps}, {"levels", std::move(levels)}});
  }
  return Json{{"format", kCalibrationFormat}, {"key", key}, {"ladders", std::move(ladders)}};
}

std::optional<inference::Calibration> calibration_from_json(const std::string& key, const std::string& text) {
  try {
    const Json j = Json::parse(text);
    if (j.at("format") != kCalibrationFormat || j.at("key") != key) return std::nullopt;
    inference::Calibration c;
    for (const auto& l : j.at("ladders")) {
      inference::Ladder ladder;
      ladder.replicas = l.at("replicas").get<int>();
      ladder.saturation_rps = l.at("saturation").get<double>();
      for (const auto& v : l.at("levels")) {
        inference::LoadLevel level;
        level.offered_rps = v.at("offered").get<double>();
        level.served_rps = v.at("served").get<double>();
        level.running = v.at("running").get<double>();
        level.waiting = v.at("waiting").get<double>();
        level.kv_usage = v.at("kv").get<double>();
        level.busy = v.at("busy").get<double>();
        level.e2e_mean_us = v.at("e2e").get<double>();
        level.itl_mean_us = v.at("itl").get<double>();
        const auto& ttft = v.at("ttft");
        if (ttft.size() != level.ttft_us.size()) return std::nullopt;
        for (std::size_t i = 0; i < level.ttft_us.size(); ++i) level.ttft_us[i] = ttft[i].get<std::int64_t>();
        ladder.levels.push_back(level);
      }
      if (ladder.levels.empty()) return std::nullopt;
      c.ladders.push_back(std::move(ladder));
    }
    if (c.ladders.empty()) return std::nullopt;
    return c;
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable or another shape: calibrate afresh
  }
}

Expected<std::shared_ptr<const inference::Calibration>> calibration_of(const inference::Service& service,
                                                                       const inference::ReplicaCosts& costs) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const inference::Calibration>> cache;
  const std::string key = calibration_key(service);
  std::lock_guard lock(mu);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  std::filesystem::path file;
  if (const char* dir = std::getenv("GPUBANK_CALIBRATION_CACHE"); dir != nullptr && *dir != '\0') {
    char name[32];
    std::snprintf(name, sizeof name, "%016llx.json",
                  static_cast<unsigned long long>(fnv1a64(std::string(kCalibrationFormat) + "|" + key)));
    file = std::filesystem::path(dir) / name;
    std::ifstream in(file, std::ios::binary);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      if (auto cached = calibration_from_json(key, text.str())) {
        auto shared = std::make_shared<const inference::Calibration>(std::move(*cached));
        cache.emplace(key, shared);
        return shared;
      }
    }
  }
  // The synthetic load's own token distributions, Poisson at a constant rate; the seed is
  // fixed so that a calibration is the same in every process.
  const TokenProfile& tokens = token_profile(service.task);
  auto load = [&tokens](double rps, std::int64_t horizon_ms) {
    const auto hours = static_cast<std::size_t>((horizon_ms + kHourMs - 1) / kHourMs);
    return synthetic_requests(kCalibrationSeed, std::vector<double>(hours, rps), horizon_ms, tokens)
        ->take_until(horizon_ms - 1);
  };
  // An embed replica answers in tens of milliseconds and thousands of requests a second: a
  // few seconds reach its steady state, and 20 s measured hold many times the requests of
  // an LLM's six minutes. (Measured: 20 s and 60 s windows give the same day within 0.5
  // GPU-hours; a calibration is a few seconds under the sanitizers, in every `gpubank up`.)
  inference::CalibrationWindows windows;
  if (service.task == inference::Task::Embed) windows = {2'000, 20'000, 2'000, 100};
  auto made = inference::calibrate(service, service_capacity_rps(service, costs, tokens.prompt_mean, tokens.output_mean),
                                   load, inference::kCalibrationReplicas, windows);
  if (!made) return Unexpected{made.error()};
  auto shared = std::make_shared<const inference::Calibration>(std::move(*made));
  cache.emplace(key, shared);
  if (!file.empty()) {
    // Written whole under a name of this process, then renamed: another process reads the
    // old file, none, or this one, never a part. A cache that cannot be written is skipped.
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
    const auto tmp = file.string() + "." + std::to_string(::getpid()) + ".tmp";
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << calibration_to_json(key, *shared).dump();
    out.close();
    if (out) {
      std::filesystem::rename(tmp, file, ec);
    }
    if (!out || ec) std::filesystem::remove(tmp, ec);
  }
  return shared;
}

Expected<std::unique_ptr<inference::ServiceModel>> make_model(inference::Service service, DayOptions::ServingModel model) {
  Diagnostics findings;
  auto first = [&findings] { return findings.empty() ? std::string("unknown") : findings.front().to_string(); };
  // An embed service always keeps counts: thousands of requests a second for a day are
  // more than request by request can run (its calibration runs them, for minutes).
  if (model == DayOptions::ServingModel::Fluid || service.task == inference::Task::Embed) {
    auto costs = inference::replica_costs(service.model, service.engine, service.gpu_model, service.tensor_parallel_size);
    if (!costs) return Unexpected{"no cost model for " + service.gpu_model + " x" + std::to_string(service.tensor_parallel_size)};
    auto calibration = calibration_of(service, *costs);
    if (!calibration) return Unexpected{"calibrating the fluid model: " + calibration.error()};
    auto made = inference::FluidService::create(std::move(service), *calibration, findings);
    if (!made) return Unexpected{first()};
    return std::unique_ptr<inference::ServiceModel>(std::make_unique<inference::FluidService>(std::move(*made)));
  }
  inference::ServiceOptions options;
  options.keep_completions = true;  // the SLO report reads every request's TTFT
  auto made = inference::InferenceService::create(std::move(service), findings, options);
  if (!made) return Unexpected{first()};
  return std::unique_ptr<inference::ServiceModel>(std::make_unique<inference::InferenceService>(std::move(*made)));
}

// The TTFT of a lone request of `prompt` tokens on an idle replica: its prefill in chunks of
// the step's token budget (one step for an embed service, which takes no chunks).
double lone_first_token_s(const inference::Service& service, const inference::ReplicaCosts& costs, std::int64_t prompt) {
  const std::int64_t budget = std::max<std::int64_t>(1, service.engine.max_num_batched_tokens);
  std::int64_t done = 0, us = 0;
  while (done < prompt) {
    const std::int64_t chunk = std::min(budget, prompt - done);
    done += chunk;
    us += costs.step_us(chunk, done);
  }
  return static_cast<double>(us) / 1e6;
}

// Requests per second one replica finishes at best (ServingFeasibility::max_replica_rps).
double best_replica_rps(const inference::Service& service, const inference::ReplicaCosts& costs, double prompt_mean,
                        double output_mean) {
  const std::int64_t budget = std::max<std::int64_t>(1, service.engine.max_num_batched_tokens);
  if (service.task == inference::Task::Embed) {
    return static_cast<double>(budget) / std::max(1.0, prompt_mean) * 1e6 /
           static_cast<double>(costs.step_us(budget, budget));
  }
  const std::int64_t batch = std::max(1, service.engine.max_num_seqs);
  const double prefill_us = prompt_mean * costs.flop_per_token / costs.replica_flop_per_us;
  const auto context = static_cast<std::int64_t>(std::llround(static_cast<double>(batch) * (prompt_mean + output_mean / 2)));
  const double decode_us = static_cast<double>(costs.step_us(batch, context));
  return 1e6 / (prefill_us + std::max(1.0, output_mean) * decode_us / static_cast<double>(batch));
}

// The 95th percentile of a log-normal with this median and mean.
std::int64_t lognormal_p95(double median, double mean) {
  const double sigma = std::sqrt(2.0 * std::log(std::max(1.0, mean / median)));
  return std::max<std::int64_t>(1, std::llround(median * std::exp(1.6448536269514722 * sigma)));
}

std::string seconds_text(double s) {
  char buf[64];
  if (s < 1) {
    std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  }
  return buf;
}

std::string rps_text(double r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f requests/s", r);
  return buf;
}

// The model service_for chose, by name (for the consistency check's messages).
std::string model_label(const inference::Service& svc) {
  if (svc.task == inference::Task::Embed) return "BAAI/bge-m3 (XLM-RoBERTa-large)";
  return svc.model.parameters == inference::ModelConfig{}.parameters ? "Llama-3.1-70B" : "Llama-3.1-8B";
}

// What the service's GPUs can do at best against its target and its load (serving.hpp).
// `trace`: the trace that drives it, if one does (its first hour's prompts give the p95).
ServingFeasibility feasibility_of(const std::string& policy, const policy::InferenceScalingPolicySpec& spec,
                                  const inference::Service& svc, const inference::ReplicaCosts& costs,
                                  const TokenProfile& tokens, const std::vector<trace::AzureRequest>* trace,
                                  double prompt_mean, double output_mean, double peak_rps) {
  ServingFeasibility f;
  f.policy = policy;
  f.task = std::string(inference::to_string(svc.task));
  f.gpu_model = svc.gpu_model;
  f.tensor_parallel_size = svc.tensor_parallel_size;
  f.model = model_label(svc);
  f.max_replicas = spec.max_replicas;
  if (spec.scale_up.ttft_p95) f.target_s = static_cast<double>(spec.scale_up.ttft_p95->nanoseconds().count()) / 1e9;
  f.rate_target = spec.scale_up.requests_per_second_per_replica;
  if (trace != nullptr) {
    std::vector<std::int64_t> prompts;
    for (const auto& r : *trace) {
      if (r.t_ms < kHourMs) prompts.push_back(std::max<std::int64_t>(1, r.context_tokens));
    }
    std::sort(prompts.begin(), prompts.end());
    f.p95_prompt_tokens =
        prompts.empty() ? 1 : prompts[static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(prompts.size()))) - 1];
  } else {
    f.p95_prompt_tokens = std::min<std::int64_t>(lognormal_p95(tokens.prompt_median, tokens.prompt_mean), tokens.prompt_cap);
  }
  f.lone_p95_s = lone_first_token_s(svc, costs, f.p95_prompt_tokens);
  f.max_replica_rps = best_replica_rps(svc, costs, prompt_mean, output_mean);
  f.peak_rps = peak_rps;
  const std::string replica = "one " + svc.gpu_model +
                              (svc.tensor_parallel_size > 1 ? " x" + std::to_string(svc.tensor_parallel_size) : "") +
                              " replica of " + f.model;
  if (f.target_s && f.lone_p95_s > *f.target_s) {
    f.reachable = false;
    f.why = "ttftP95 " + seconds_text(*f.target_s) + " is below what " + replica + " answers at best: the load's " +
            "95th-percentile prompt (" + std::to_string(f.p95_prompt_tokens) + " tokens) alone takes " +
            seconds_text(f.lone_p95_s) + " to its first " + (svc.task == inference::Task::Embed ? "(only) output" : "token") +
            ", so no replica count meets the target";
  } else if (f.peak_rps > static_cast<double>(f.max_replicas) * f.max_replica_rps) {
    f.reachable = false;
    f.why = "the load's peak of " + rps_text(f.peak_rps) + " is more than maxReplicas " + std::to_string(f.max_replicas) +
            " x " + rps_text(f.max_replica_rps) + " (what " + replica + " finishes at best), so the peak queues " +
            "whatever the autoscaler does";
  }
  if (f.rate_target && *f.rate_target > f.max_replica_rps) {
    f.rate_warning = "requestsPerSecondPerReplica " + rps_text(*f.rate_target) + " is above what " + replica +
                     " finishes at best (" + rps_text(f.max_replica_rps) +
                     "): a saturated service finishes less than the target per replica, so the rate signal never asks "
                     "for more replicas and only the queue and the latency scale it out";
  } else if (f.rate_target && *f.rate_target * (1 + serving::AutoscalerOptions{}.tolerance) > f.max_replica_rps) {
    // The HPA acts on a ratio outside 1 +- tolerance only, so each replica may run at the
    // target plus the tolerance before another is asked for.
    const double tolerance = serving::AutoscalerOptions{}.tolerance;
    f.rate_warning = "requestsPerSecondPerReplica " + rps_text(*f.rate_target) + " plus the HPA's " +
                     std::to_string(static_cast<int>(tolerance * 100 + 0.5)) + " % tolerance (" +
                     rps_text(*f.rate_target * (1 + tolerance)) + ") is above what " + replica + " finishes at best (" +
                     rps_text(f.max_replica_rps) + "): replicas saturate before the rate signal asks for another; at most " +
                     rps_text(f.max_replica_rps / (1 + tolerance)) + " keeps them within";
  }
  return f;
}

}  // namespace

nlohmann::ordered_json feasibility_json(const ServingFeasibility& f) {
  Json j;
  j["policy"] = f.policy;
  j["task"] = f.task;
  j["gpuModel"] = f.gpu_model;
  j["tensorParallelSize"] = f.tensor_parallel_size;
  j["model"] = f.model;
  j["targetSeconds"] = f.target_s ? Json(*f.target_s) : Json(nullptr);
  j["requestsPerSecondPerReplicaTarget"] = f.rate_target ? Json(*f.rate_target) : Json(nullptr);
  j["p95PromptTokens"] = f.p95_prompt_tokens;
  j["loneP95Seconds"] = f.lone_p95_s;
  j["maxRequestsPerSecondPerReplica"] = f.max_replica_rps;
  j["maxReplicas"] = f.max_replicas;
  j["peakRequestsPerSecond"] = f.peak_rps;
  j["reachable"] = f.reachable;
  if (!f.why.empty()) j["why"] = f.why;
  if (!f.rate_warning.empty()) j["rateWarning"] = f.rate_warning;
  return j;
}

std::vector<inference::ArrivalBatch> RequestSource::batches_until(std::int64_t t_ms) {
  std::vector<inference::ArrivalBatch> out;
  for (const inference::Request& r : take_until(t_ms)) {
    const std::int64_t slice = r.arrival_ms / inference::kFluidSliceMs * inference::kFluidSliceMs;
    const std::int64_t from = std::max(slice, batched_to_);
    if (out.empty() || out.back().from_ms != from) {
      out.push_back({from, std::min(slice + inference::kFluidSliceMs, t_ms + 1), 0, 0, 0});
    }
    out.back().count += 1;
    out.back().prompt_tokens += r.prompt_tokens;
    out.back().output_tokens += r.output_tokens;
  }
  batched_to_ = std::max(batched_to_, t_ms + 1);
  return out;
}

double replica_capacity_rps(const inference::ReplicaCosts& costs, double prompt_tokens_mean, double output_tokens_mean) {
  const auto prompt = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(prompt_tokens_mean)));
  const double output = std::max(1.0, output_tokens_mean);
  const double prefill_us = static_cast<double>(costs.step_us(prompt, prompt));
  const auto context = static_cast<std::int64_t>(std::llround(kReferenceBatch * (prompt_tokens_mean + output / 2)));
  const double decode_us = static_cast<double>(costs.step_us(kReferenceBatch, context));
  return 1e6 / (prefill_us + output * decode_us / kReferenceBatch);
}

const TokenProfile& token_profile(inference::Task task) {
  return task == inference::Task::Embed ? kEmbedTokens : kChatTokens;
}

double service_capacity_rps(const inference::Service& service, const inference::ReplicaCosts& costs,
                            double prompt_tokens_mean, double output_tokens_mean) {
  if (service.task != inference::Task::Embed) return replica_capacity_rps(costs, prompt_tokens_mean, output_tokens_mean);
  return kEmbedReferenceBusy * best_replica_rps(service, costs, prompt_tokens_mean, output_tokens_mean);
}

inference::Service service_for(const std::string& policy_name, const policy::InferenceScalingPolicySpec& spec,
                               const std::string& gpu_model) {
  inference::Service s;
  s.name = policy_name;
  s.model_name = spec.workload_ref.name.empty() ? policy_name : spec.workload_ref.name;
  s.gpu_model = gpu_model;
  s.tensor_parallel_size = spec.replica_shape.tensor_parallel_size;
  if (spec.effective_task() == policy::ServingTask::Embed) {
    // BAAI/bge-m3's config.json (XLM-RoBERTa-large, fp16): 24 layers, 16 attention heads
    // of 64, 8,192 positions; about 568 M parameters by its model card. Every parameter
    // counted in the compute (the token embeddings are a lookup): a little pessimistic.
    s.task = inference::Task::Embed;
    s.model.parameters = 568'000'000;
    s.model.num_layers = 24;
    s.model.num_kv_heads = 16;
    s.model.head_dim = 64;
    s.model.max_model_len = 8'192;
    s.engine.max_num_batched_tokens = 8'192;
    return s;
  }
  const auto gpu = inference::find_gpu(gpu_model);
  const double weights = static_cast<double>(s.model.parameters) * s.model.bytes_per_parameter;
  if (gpu && weights > 0.5 * s.tensor_parallel_size * static_cast<double>(gpu->memory_bytes)) {
    // Llama-3.1-8B's config.json (bf16).
    s.model.parameters = 8'030'261'248;
    s.model.num_layers = 32;
    s.model.num_kv_heads = 8;
    s.model.head_dim = 128;
  }
  return s;
}

std::vector<double> hourly_rates(double peak_rps, int first_local_hour, std::int64_t hours) {
  const auto& curve = trace::default_diurnal_curve();
  std::vector<double> out;
  for (std::int64_t h = 0; h < hours; ++h) {
    out.push_back(peak_rps * curve[static_cast<std::size_t>((first_local_hour + h) % 24)]);
  }
  return out;
}

std::unique_ptr<RequestSource> synthetic_requests(std::uint64_t seed, std::vector<double> rates_per_hour,
                                                  std::int64_t horizon_ms, const TokenProfile& tokens, RateShape shape) {
  return std::make_unique<SyntheticSource>(seed, rates_per_hour, horizon_ms, tokens, shape);
}

double trace_rps(const std::vector<trace::AzureRequest>& requests) {
  std::int64_t n = 0;
  for (const auto& r : requests) n += r.t_ms < kHourMs ? 1 : 0;
  return static_cast<double>(n) / 3600.0;
}

Expected<std::unique_ptr<RequestSource>> trace_requests(const std::vector<trace::AzureRequest>& requests,
                                                        std::uint64_t seed, double scale, int first_local_hour,
                                                        std::int64_t horizon_ms) {
  trace::DiurnalCurve curve{};
  for (std::size_t h = 0; h < curve.size(); ++h) {
    curve[h] = scale * trace::default_diurnal_curve()[(static_cast<std::size_t>(first_local_hour) + h) % 24];
  }
  const std::int64_t days = std::max<std::int64_t>(1, (horizon_ms + 24 * kHourMs - 1) / (24 * kHourMs));
  auto repeated = trace::diurnal_repeat(requests, days, curve, seed);
  if (!repeated) return Unexpected{"the LLM trace: " + repeated.error()};
  std::vector<inference::Request> out;
  out.reserve(repeated->size());
  for (const auto& r : *repeated) {
    if (r.t_ms >= horizon_ms) break;
    out.push_back({r.t_ms, static_cast<std::int32_t>(std::max<std::int64_t>(1, r.context_tokens)),
                   static_cast<std::int32_t>(std::max<std::int64_t>(1, r.generated_tokens)),
                   static_cast<std::uint64_t>(out.size())});
  }
  return std::unique_ptr<RequestSource>(std::make_unique<ListSource>(std::move(out)));
}

int local_hour_at(const policy::PolicySet& policies, const Timestamp& start) {
  const date::time_zone* zone = nullptr;
  for (const auto& p : policies.policies()) {
    if (p.kind == policy::Kind::TidalPolicy) zone = p.as<policy::TidalPolicySpec>().timezone.zone;
  }
  if (zone == nullptr) zone = date::locate_zone("Etc/UTC");
  const auto local = zone->to_local(std::chrono::floor<std::chrono::seconds>(start));
  const auto since_midnight = local - std::chrono::floor<date::days>(local);
  return static_cast<int>(std::chrono::floor<std::chrono::hours>(since_midnight).count());
}

Expected<std::unique_ptr<Serving>> Serving::create(const policy::PolicySet& policies, const run::Scenario& scenario,
                                                   const DayOptions& day, const std::vector<trace::AzureRequest>* trace,
                                                   bool placement) {
  std::unique_ptr<Serving> out(new Serving());
  out->start_kind_ = placement ? "Placed" : "Admitted";
  const auto* guardrails = policies.guardrails_spec();
  if (guardrails == nullptr) return out;
  const int first_hour = local_hour_at(policies, day.start);
  const std::int64_t horizon = day.hours * kHourMs;
  std::map<std::string, std::size_t> prefix_length;  // workload key -> the policy name it matched
  for (const auto& p : policies.policies()) {
    if (p.kind != policy::Kind::InferenceScalingPolicy) continue;
    const auto& spec = p.as<policy::InferenceScalingPolicySpec>();
    const policy::Pool* pool = guardrails->find_pool(spec.resource_pool);
    if (pool == nullptr || guardrails->find_group(spec.business_group) == nullptr) continue;
    Live s;
    s.policy = p.name();
    s.workload_ref = spec.workload_ref.name;
    auto service = service_for(p.name(), spec, pool->gpu_model);
    for (const auto& other : out->services_) {  // two services may serve one name: keep series apart
      if (other.service->service().model_name == service.model_name) service.model_name = p.name();
    }
    auto made = make_model(std::move(service), day.serving_model);
    if (!made) return Unexpected{"InferenceScalingPolicy " + p.name() + ": cannot serve it in the twin: " + made.error()};
    s.service = std::move(*made);
    // Planned replicas follow the tidal floors only: the peak needs the largest floor. The
    // controllers scale on load: the peak is sized on maxReplicas (serving.hpp), so the
    // daytime moves between the floor and the maximum.
    const double sized = day.serving_control == DayOptions::ServingControl::Planned && !day.same_load_for_every_control
                             ? peak_replicas_of(policies, p.name(), spec)
                             : std::max(static_cast<double>(peak_replicas_of(policies, p.name(), spec)),
                                        kPeakShareOfMaxReplicas * spec.max_replicas);
    s.peak_replicas = static_cast<int>(std::ceil(sized));
    // The load's mean token counts: the trace's recorded hour, else the synthetic model's.
    // The Azure traces are LLM traffic: an embed service keeps its own synthetic load.
    const inference::Task task = s.service->service().task;
    const TokenProfile& tokens = token_profile(task);
    const bool traced = trace != nullptr && task == inference::Task::Generate;
    double prompt_mean = tokens.prompt_mean, output_mean = tokens.output_mean;
    if (traced) {
      double prompts = 0, outputs = 0, n = 0;
      for (const auto& r : *trace) {
        if (r.t_ms >= kHourMs) continue;
        prompts += static_cast<double>(std::max<std::int64_t>(1, r.context_tokens));
        outputs += static_cast<double>(std::max<std::int64_t>(1, r.generated_tokens));
        n += 1;
      }
      if (n > 0) prompt_mean = prompts / n, output_mean = outputs / n;
    }
    const double capacity = service_capacity_rps(s.service->service(), s.service->costs(), prompt_mean, output_mean);
    s.replica_rps = capacity;
    s.peak_rps = capacity * sized * day.serving_load;
    // The utilisation model's "at capacity": an embed replica's full steps, not its reference.
    const double at_capacity = task == inference::Task::Embed ? capacity / kEmbedReferenceBusy : capacity;
    s.capacity_tokens_per_ms = at_capacity * (prompt_mean + output_mean) / 1000.0;
    out->feasibility_.push_back(feasibility_of(p.name(), spec, s.service->service(), s.service->costs(), tokens,
                                               traced ? trace : nullptr, prompt_mean, output_mean, s.peak_rps));
    const std::uint64_t seed = SeededRandom(day.seed ^ fnv1a64(p.name())).next();
    if (traced) {
      const double recorded = trace_rps(*trace);
      if (!(recorded > 0)) return Unexpected{"the LLM trace has no request in its first hour"};
      auto source = trace_requests(*trace, seed, s.peak_rps / recorded, first_hour, horizon);
      if (!source) return Unexpected{source.error()};
      s.source = std::move(*source);
    } else {
      s.source = synthetic_requests(seed, hourly_rates(s.peak_rps, first_hour, day.hours), horizon, tokens,
                                    RateShape::Linear);
    }
    const std::string prefix = p.name() + "-r";
    for (const auto& w : scenario.workloads) {
      if (w.workload_type != policy::WorkloadType::Inference || !w.labels.contains("gpubank.dev/replica")) continue;
      if (w.name.rfind(prefix, 0) != 0) continue;
      const std::string key = w.namespace_ + "/" + w.name;
      auto& longest = prefix_length[key];
      if (longest > prefix.size()) continue;
      if (longest > 0) out->services_[out->service_of_[key]].startup_ms.erase(key);
      longest = prefix.size();
      out->service_of_[key] = out->services_.size();
      s.startup_ms[key] = w.startup_time.milliseconds();
    }
    out->services_.push_back(std::move(s));
  }
  return out;
}

bool Serving::move_to(Live& s, std::int64_t t) {
  if (t < s.service->now_ms()) return true;
  if (s.service->takes_batches()) {
    const auto batches = s.source->batches_until(t);
    for (const auto& b : batches) {
      const auto minute = static_cast<std::size_t>(b.from_ms / 60'000);
      if (s.arrivals_per_minute.size() <= minute) s.arrivals_per_minute.resize(minute + 1, 0);
      s.arrivals_per_minute[minute] += std::llround(b.count);
    }
    if (!batches.empty() && !s.service->add_batches(batches)) return false;
    return s.service->advance_to(t);
  }
  const auto requests = s.source->take_until(t);
  for (const auto& r : requests) {
    const auto minute = static_cast<std::size_t>(r.arrival_ms / 60'000);
    if (s.arrivals_per_minute.size() <= minute) s.arrivals_per_minute.resize(minute + 1, 0);
    ++s.arrivals_per_minute[minute];
  }
  Diagnostics findings;
  if (!requests.empty() && !s.service->add_requests(requests, findings)) return false;
  return s.service->advance_to(t);
}

bool Serving::advance_to(std::span<const run::Event> events, VirtualTime t) {
  constexpr std::string_view kWorkload = "Workload/";
  for (; events_seen_ < events.size(); ++events_seen_) {
    const run::Event& e = events[events_seen_];
    if (e.object.rfind(kWorkload, 0) != 0) continue;
    const std::string key = e.object.substr(kWorkload.size());
    const auto which = service_of_.find(key);
    if (which == service_of_.end()) continue;
    const bool starts = e.kind == start_kind_;
    const bool gone =
        e.kind == "Deleted" || e.kind == "Finished" || e.kind == "Preempted" || e.kind == "ReclaimVictimStopped" ||
        e.kind == "Evicted" || e.kind == "Deactivated";  // Evicted: PodsReadyTimeout (run/pods_ready.hpp)
    if (!starts && !gone) continue;
    Live& s = services_[which->second];
    if (!move_to(s, e.t)) return false;
    const auto live = s.replicas.find(key);
    if (starts && live == s.replicas.end()) {
      Replica r;
      r.id = s.service->add_replica({pod_of(key), 1}, e.t + s.startup_ms[key]);
      r.workload = key;
      s.replicas.emplace(key, r);
      s.observed_peak = std::max(s.observed_peak, static_cast<int>(s.replicas.size()));
    } else if (gone && live != s.replicas.end()) {
      if (!s.service->abort_replica(live->second.id)) return false;
      s.replicas.erase(live);
    }
  }
  for (Live& s : services_) {
    if (!move_to(s, t)) return false;
    const auto& c = s.service->costs();
    for (auto& [key, r] : s.replicas) {
      const auto snap = s.service->replica_snapshot(r.id);
      const std::int64_t tokens = snap.prompt_tokens + snap.generation_tokens;
      if (t > now_ && s.capacity_tokens_per_ms > 0) {
        const double share = static_cast<double>(tokens - r.tokens_at_last_advance) /
                             (static_cast<double>(t - now_) * s.capacity_tokens_per_ms);
        r.load.load = std::clamp(share, 0.0, 1.0);
      }
      r.tokens_at_last_advance = tokens;
      r.load.weights_mib = c.weight_bytes_per_gpu / kMiB;
      r.load.kv_cache_mib = snap.kv_cache_usage * static_cast<double>(c.kv_tokens) *
                            static_cast<double>(c.kv_bytes_per_token) / c.tensor_parallel_size / kMiB;
    }
    s.ttft_history.emplace_back(t, ttft_buckets(s));
    while (s.ttft_history.size() >= 2 && s.ttft_history[1].first <= t - kTtftWindowMs) s.ttft_history.pop_front();
  }
  now_ = t;
  return true;
}

std::optional<ReplicaLoad> Serving::load_of(const std::string& key) const {
  const auto which = service_of_.find(key);
  if (which == service_of_.end()) return std::nullopt;
  const Live& s = services_[which->second];
  const auto r = s.replicas.find(key);
  if (r == s.replicas.end()) return std::nullopt;
  return r->second.load;
}

std::vector<std::int64_t> Serving::ttft_buckets(const Live& s) const {
  std::vector<std::int64_t> sum(inference::kTtftBucketsSeconds.size() + 1, 0);
  for (inference::ReplicaId id = 0; id < s.service->replica_count(); ++id) {
    const auto& counts = s.service->counters(id).time_to_first_token.bucket_counts();
    for (std::size_t i = 0; i < sum.size() && i < counts.size(); ++i) sum[i] += counts[i];
  }
  return sum;
}

std::optional<double> ttft_quantile(double q, std::span<const std::int64_t> counts) {
  std::vector<metrics::Bucket> buckets;
  double cumulative = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    cumulative += static_cast<double>(counts[i]);
    const double bound = i < inference::kTtftBucketsSeconds.size() ? inference::kTtftBucketsSeconds[i]
                                                                    : std::numeric_limits<double>::infinity();
    buckets.push_back({bound, cumulative});
  }
  if (cumulative <= 0) return std::nullopt;
  return metrics::bucket_quantile(q, std::move(buckets));
}

std::optional<double> Serving::ttft_p95(const Live& s) const {
  if (s.ttft_history.empty()) return std::nullopt;
  const auto& base = s.ttft_history.front().second;
  const auto& now = s.ttft_history.back().second;
  std::vector<std::int64_t> grown(now.size());
  for (std::size_t i = 0; i < now.size(); ++i) grown[i] = now[i] - base[i];
  return ttft_quantile(0.95, grown);
}

std::vector<metrics::Family> Serving::families() const {
  std::vector<metrics::Family> out;
  std::map<std::string, std::size_t> index;
  metrics::Family cut{"gpubank_inference_requests_cut_total", metrics::MetricType::counter,
                      "Requests of an inference service cut unanswered because their replica's workload was deleted "
                      "or stopped before they finished (a drain that reached its drainTimeout, or a replica whose workload ended without a drain).",
                      {}};
  for (const Live& s : services_) {
    auto e = s.service->exposition();
    for (auto& f : e.families) {
      const auto [at, fresh] = index.emplace(f.name, out.size());
      if (fresh) {
        out.push_back(std::move(f));
      } else {
        auto& into = out[at->second].samples;
        into.insert(into.end(), std::make_move_iterator(f.samples.begin()), std::make_move_iterator(f.samples.end()));
      }
    }
    cut.samples.push_back({cut.name,
                           {{"model_name", s.service->service().model_name}},
                           static_cast<double>(s.service->snapshot().aborted),
                           {}});
  }
  if (!services_.empty()) out.push_back(std::move(cut));
  return out;
}

std::vector<Serving::Stats> Serving::stats() const {
  std::vector<Stats> out;
  for (const Live& s : services_) {
    Stats st;
    st.policy = s.policy;
    st.model_name = s.service->service().model_name;
    st.peak_rps = s.peak_rps;
    st.peak_replicas = s.peak_replicas;
    st.expected_requests = s.source->expected_total();
    st.snapshot = s.service->snapshot();
    st.ttft_p95_s = ttft_p95(s);
    out.push_back(std::move(st));
  }
  return out;
}

Json Serving::json() const {
  Json list = Json::array();
  for (const Live& s : services_) {
    const auto snap = s.service->snapshot();
    const auto& svc = s.service->service();
    Json j = Json::object();
    j["policy"] = s.policy;
    j["workloadRef"] = s.workload_ref;
    j["modelName"] = svc.model_name;
    j["modelParameters"] = svc.model.parameters;
    j["gpuModel"] = svc.gpu_model;
    j["tensorParallelSize"] = svc.tensor_parallel_size;
    // What the load's peak hour was sized for (serving.hpp), and the most replicas that
    // served at once so far (pods started, loading included).
    j["loadSizedForReplicas"] = s.peak_replicas;
    j["peakReplicas"] = s.observed_peak;
    j["peakRequestsPerSecond"] = s.peak_rps;
    std::int64_t running = 0, waiting = 0;
    Json replicas = Json::array();
    for (const auto& [key, r] : s.replicas) {
      const auto rs = s.service->replica_snapshot(r.id);
      running += rs.running;
      waiting += rs.waiting;
      replicas.push_back({{"workload", key},
                          {"replica", rs.name},
                          {"state", std::string(inference::to_string(rs.state))},
                          {"running", rs.running},
                          {"waiting", rs.waiting},
                          {"kvCacheUsage", rs.kv_cache_usage},
                          {"load", r.load.load},
                          {"finished", rs.finished}});
    }
    j["running"] = running;
    j["waiting"] = waiting;
    j["routerWaiting"] = snap.router_waiting;
    j["arrived"] = snap.arrived;
    j["finished"] = snap.finished;
    j["rejected"] = snap.rejected;
    j["cut"] = snap.aborted;
    const auto p95 = ttft_p95(s);
    j["ttftP95Seconds"] = p95 ? Json(*p95) : Json(nullptr);
    j["ttftWindowSeconds"] = kTtftWindowMs / 1000;
    j["replicas"] = std::move(replicas);
    list.push_back(std::move(j));
  }
  return list;
}

const Serving::Live* Serving::find_service(const std::string& policy) const {
  for (const Live& s : services_) {
    if (s.policy == policy) return &s;
  }
  return nullptr;
}

std::optional<std::string> Serving::model_of(const std::string& key) const {
  const auto which = service_of_.find(key);
  if (which == service_of_.end()) return std::nullopt;
  return services_[which->second].service->service().model_name;
}

std::vector<std::string> Serving::policies() const {
  std::vector<std::string> out;
  for (const Live& s : services_) out.push_back(s.policy);
  return out;
}

Expected<bool> Serving::adopt(const std::string& key, const std::string& policy, std::int64_t startup_ms) {
  for (std::size_t i = 0; i < services_.size(); ++i) {
    if (services_[i].policy != policy) continue;
    if (service_of_.contains(key)) return Unexpected{"replica workload " + key + " is adopted already"};
    service_of_[key] = i;
    services_[i].startup_ms[key] = startup_ms;
    return true;
  }
  return Unexpected{"no inference service for policy " + policy};
}

std::vector<Serving::ReplicaStatus> Serving::replicas_of(const std::string& policy) const {
  std::vector<ReplicaStatus> out;
  const Live* s = find_service(policy);
  if (s == nullptr) return out;
  for (const auto& [key, r] : s->replicas) out.push_back({key, s->service->replica_snapshot(r.id)});
  return out;
}

std::vector<Serving::ReplicaCounters> Serving::counters() const {
  std::vector<ReplicaCounters> out;
  for (const Live& s : services_) {
    for (const auto& [key, r] : s.replicas) {
      const inference::VllmCounters& c = s.service->counters(r.id);
      out.push_back({key, c.prompt_tokens + c.generation_tokens, c.time_to_first_token.bucket_counts(),
                     s.service->replica_snapshot(r.id).in_flight});
    }
  }
  return out;
}

std::map<std::string, std::string> Serving::replica_workloads() const {
  std::map<std::string, std::string> out;
  for (const Live& s : services_) {
    for (const auto& [key, r] : s.replicas) out[s.service->replica_snapshot(r.id).name] = key;
  }
  return out;
}

Expected<bool> Serving::start_drain(const std::string& key) {
  const auto which = service_of_.find(key);
  if (which == service_of_.end()) return Unexpected{"no replica workload " + key};
  Live& s = services_[which->second];
  const auto r = s.replicas.find(key);
  if (r == s.replicas.end()) return Unexpected{"replica workload " + key + " has no pod yet"};
  if (auto drained = s.service->start_drain(r->second.id); !drained) return Unexpected{drained.error()};
  return true;
}

metrics::Exposition Serving::exposition_of(const std::string& policy,
                                           const inference::VllmExpositionOptions& options) const {
  const Live* s = find_service(policy);
  return s == nullptr ? metrics::Exposition{} : s->service->exposition(options);
}

serving::Scrape Serving::scrape_of(const std::string& policy, std::int64_t t_ms) const {
  serving::Scrape out;
  out.t_ms = t_ms;
  const Live* s = find_service(policy);
  if (s == nullptr) return out;
  for (inference::ReplicaId id = 0; id < s->service->replica_count(); ++id) {
    // A loading pod serves no /metrics yet; a removed one is gone.
    const auto state = s->service->replica_state(id);
    if (state != inference::ReplicaState::ready && state != inference::ReplicaState::draining) continue;
    const inference::ReplicaSnapshot r = s->service->replica_snapshot(id);
    serving::ReplicaSignals signals;
    signals.replica = r.name;
    signals.waiting = static_cast<double>(r.waiting);
    signals.running = static_cast<double>(r.running);
    signals.kv_cache_usage = r.kv_cache_usage;
    const auto& h = s->service->counters(r.id).time_to_first_token;
    const auto bounds = h.bounds_seconds();
    std::int64_t cumulative = 0;
    signals.ttft_buckets.reserve(bounds.size() + 1);
    for (std::size_t i = 0; i <= bounds.size(); ++i) {
      cumulative += h.bucket_counts()[i];
      signals.ttft_buckets.push_back(
          {i < bounds.size() ? bounds[i] : std::numeric_limits<double>::infinity(), static_cast<double>(cumulative)});
    }
    std::int64_t finished = 0;
    for (const auto n : s->service->counters(r.id).request_success) finished += n;
    signals.requests_finished = static_cast<double>(finished);
    out.replicas.push_back(std::move(signals));
  }
  std::sort(out.replicas.begin(), out.replicas.end(),
            [](const serving::ReplicaSignals& a, const serving::ReplicaSignals& b) { return a.replica < b.replica; });
  return out;
}

std::optional<double> Serving::arrival_rps(const std::string& policy, std::int64_t t_ms) const {
  const Live* s = find_service(policy);
  constexpr std::int64_t kMinuteMs = 60'000;
  if (s == nullptr || t_ms < kMinuteMs) return std::nullopt;
  const auto minute = static_cast<std::size_t>(t_ms / kMinuteMs - 1);
  const std::int64_t arrived = minute < s->arrivals_per_minute.size() ? s->arrivals_per_minute[minute] : 0;
  return static_cast<double>(arrived) / 60.0;
}

double Serving::replica_rps(const std::string& policy) const {
  const Live* s = find_service(policy);
  return s == nullptr ? 0.0 : s->replica_rps;
}

std::int64_t Serving::router_waiting(const std::string& policy) const {
  const Live* s = find_service(policy);
  return s == nullptr ? 0 : s->service->router_waiting();
}

Serving::Slo Serving::slo(const std::string& policy, std::int64_t target_ms, std::int64_t from_ms,
                          std::int64_t until_ms, std::optional<std::int64_t> answered_by_ms) const {
  Slo out;
  const std::int64_t answered_by = answered_by_ms.value_or(until_ms);
  const Live* s = find_service(policy);
  if (s == nullptr) return out;
  constexpr std::int64_t kMinuteMs = 60'000;
  if (const auto* estimates = s->service->minute_ttft()) {
    // The fluid model's own per-minute estimates (it keeps no requests).
    for (std::size_t m = 0; m < s->arrivals_per_minute.size(); ++m) {
      const std::int64_t start = static_cast<std::int64_t>(m) * kMinuteMs;
      const std::int64_t arrived = s->arrivals_per_minute[m];
      if (arrived == 0 || start < from_ms || start + kMinuteMs > until_ms) continue;
      ++out.minutes;
      out.requests += arrived;
      const inference::MinuteTtft e = m < estimates->size() ? (*estimates)[m] : inference::MinuteTtft{};
      const bool answered = e.p95_us != inference::MinuteTtft::kNeverUs && e.answered_by_us / 1000 <= answered_by;
      if (!answered) out.unanswered += arrived;
      if (answered && e.p95_us <= target_ms * 1000) ++out.within;
    }
    return out;
  }
  std::vector<std::vector<std::int64_t>> ttft(s->arrivals_per_minute.size());
  for (const auto& c : s->service->completions()) {
    const auto minute = static_cast<std::size_t>(c.arrival_us / 1000 / kMinuteMs);
    if (minute < ttft.size() && c.first_token_us / 1000 <= answered_by) ttft[minute].push_back(c.first_token_us - c.arrival_us);
  }
  for (std::size_t m = 0; m < ttft.size(); ++m) {
    const std::int64_t start = static_cast<std::int64_t>(m) * kMinuteMs;
    const std::int64_t arrived = s->arrivals_per_minute[m];
    if (arrived == 0 || start < from_ms || start + kMinuteMs > until_ms) continue;
    auto& values = ttft[m];
    const auto answered = static_cast<std::int64_t>(values.size());
    ++out.minutes;
    out.requests += arrived;
    out.unanswered += arrived - answered;
    // Nearest rank: the ceil(0.95 n)-th smallest, the unanswered ones being the largest.
    const std::int64_t rank = (95 * arrived + 99) / 100;
    if (rank > answered) continue;
    std::nth_element(values.begin(), values.begin() + (rank - 1), values.end());
    if (values[static_cast<std::size_t>(rank - 1)] <= target_ms * 1000) ++out.within;
  }
  return out;
}

}  // namespace gpubank::twin::live
