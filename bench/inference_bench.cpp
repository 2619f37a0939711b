// How fast the twin simulates inference serving: one day of a diurnal load on one
// service (Llama-3.1-70B on 4 replicas of 4 x H100), against the same model stepping
// through every engine step on its own.
//
//   (a) step_by_step   baseline: ServiceOptions::max_steps_per_run = 1, every engine step
//                      simulated (the reference the fast path is tested equal to)
//   (b) day            the default: runs of identical decode steps jumped over
//   (c) day_scraped    (b) with advance_to every 15 s of virtual time and the vLLM
//                      exposition of all replicas written as text after each (5,760 scrapes)
//
// The load: arrivals of a Poisson process whose rate follows the day, from 2 requests/s at
// 02:00 to 20 requests/s at 14:00 (a raised cosine), thinned from a 20/s process with
// splitmix64; prompt and output tokens are pairs drawn from the Azure LLM conversation
// trace (../shared/traces/azure-llm-2023). Every case must finish every request before
// anything is timed. After the Google Benchmark output, a summary gives requests/s and
// virtual seconds per wall second, each time as a multiple of (a), and the model's results
// (TTFT quantiles, ITL, utilisation). --summary=FILE also writes it there (markdown).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "metrics/exposition.hpp"
#include "summary_reporter.hpp"
#include "twin/inference/service.hpp"

namespace {

namespace inf = gpubank::twin::inference;

constexpr std::int64_t kDayMs = 86'400'000;
constexpr std::int64_t kEndMs = kDayMs + 3'600'000;  // an hour to finish what is in flight
constexpr double kPeakPerSecond = 20.0;
constexpr double kTroughPerSecond = 2.0;
constexpr int kReplicas = 4;

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A double in (0, 1].
double unit(std::uint64_t& state) { return static_cast<double>((splitmix64(state) >> 11) + 1) * 0x1.0p-53; }

std::vector<std::pair<std::int32_t, std::int32_t>> azure_conv_tokens() {
  const std::string path = std::string(GPUBANK_SHARED_DIR) + "/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv";
  std::ifstream in(path);
  std::vector<std::pair<std::int32_t, std::int32_t>> out;
  std::string line;
  std::getline(in, line);  // TIMESTAMP,ContextTokens,GeneratedTokens
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string time, context, generated;
    std::getline(fields, time, ',');
    std::getline(fields, context, ',');
    std::getline(fields, generated, ',');
    const int p = std::atoi(context.c_str());
    const int o = std::atoi(generated.c_str());
    if (p >= 1 && o >= 1) out.emplace_back(p, o);
  }
  if (out.empty()) {
    std::cerr << "inference_bench: no requests in " << path << '\n';
    std::exit(1);
  }
  return out;
}

const std::vector<inf::Request>& day_load() {
  static const std::vector<inf::Request> load = [] {
    const auto tokens = azure_conv_tokens();
    std::vector<inf::Request> out;
    std::uint64_t seed = 20'231'116;
    double t_s = 0;
    const double peak_at_s = 14.0 * 3600.0;
    while (true) {
      t_s += -std::log(unit(seed)) / kPeakPerSecond;
      if (t_s >= kDayMs / 1000.0) break;
      const double phase = 2.0 * std::numbers::pi * (t_s - peak_at_s) / 86'400.0;
      const double rate = kTroughPerSecond + (kPeakPerSecond - kTroughPerSecond) * (1.0 + std::cos(phase)) / 2.0;
      if (unit(seed) * kPeakPerSecond > rate) continue;
      const auto& pair = tokens[splitmix64(seed) % tokens.size()];
      out.push_back({static_cast<std::int64_t>(t_s * 1000.0), pair.first, pair.second, out.size()});
    }
    return out;
  }();
  return load;
}

struct Outcome {
  std::int64_t finished = 0;
  std::int64_t scrapes = 0;
  std::int64_t scrape_bytes = 0;
  std::vector<double> ttft_s;
  double itl_mean_s = 0;
  double busy_fraction = 0;
  std::int64_t preemptions = 0;
};

Outcome simulate(std::int64_t max_steps_per_run, std::int64_t scrape_every_ms, bool keep) {
  inf::Service svc;
  svc.name = "chat";
  inf::ServiceOptions options;
  options.max_steps_per_run = max_steps_per_run;
  options.keep_completions = keep;
  gpubank::Diagnostics findings;
  auto s = inf::InferenceService::create(svc, findings, options);
  for (int i = 0; i < kReplicas; ++i) s->add_replica({"chat-" + std::to_string(i), 1}, 0);
  if (!s->add_requests(day_load(), findings)) std::exit(1);
  Outcome o;
  if (scrape_every_ms > 0) {
    for (std::int64_t t = 0; t <= kEndMs; t += scrape_every_ms) {
      s->advance_to(t);
      const auto text = gpubank::metrics::write_text(s->exposition());
      o.scrape_bytes += static_cast<std::int64_t>(text->size());
      ++o.scrapes;
    }
  } else {
    s->advance_to(kEndMs);
  }
  const auto snap = s->snapshot();
  o.finished = snap.finished;
  std::int64_t itl_us = 0;
  std::int64_t itl_n = 0;
  std::int64_t busy = 0;
  for (int i = 0; i < kReplicas; ++i) {
    const auto& c = s->counters(static_cast<inf::ReplicaId>(i));
    itl_us += c.inter_token_latency.sum_us();
    itl_n += c.inter_token_latency.count();
    o.preemptions += c.preemptions;
    busy += snap.replicas[static_cast<std::size_t>(i)].busy_us;
  }
  o.itl_mean_s = itl_n > 0 ? static_cast<double>(itl_us) / static_cast<double>(itl_n) / 1e6 : 0;
  o.busy_fraction = static_cast<double>(busy) / (kReplicas * static_cast<double>(kDayMs) * 1000.0);
  if (keep) {
    for (const auto& c : s->completions()) o.ttft_s.push_back(static_cast<double>(c.first_token_us - c.dispatched_us) / 1e6);
    std::sort(o.ttft_s.begin(), o.ttft_s.end());
  }
  return o;
}

void set_rates(benchmark::State& state) {
  state.counters["requests/s"] = benchmark::Counter(static_cast<double>(day_load().size()),
                                                    benchmark::Counter::kIsIterationInvariantRate);
  state.counters["virtual s/s"] =
      benchmark::Counter(static_cast<double>(kEndMs) / 1000.0, benchmark::Counter::kIsIterationInvariantRate);
}

void step_by_step(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(simulate(1, 0, false).finished);
  set_rates(state);
}

void day(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(simulate(std::int64_t{1} << 40, 0, false).finished);
  set_rates(state);
}

void day_scraped(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(simulate(std::int64_t{1} << 40, 15'000, false).scrape_bytes);
  set_rates(state);
}

const gpubank::bench::Case kCases[] = {
    {"step_by_step", "every engine step simulated (baseline)", step_by_step},
    {"day", "runs of decode steps jumped over", day},
    {"day_scraped", "day, advance_to and vLLM text every 15 s", day_scraped},
};

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string summary_path = gpubank::bench::take_summary_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  // The model's results, and the check that every request finishes in every mode.
  const Outcome model = simulate(std::int64_t{1} << 40, 0, true);
  const auto requests = static_cast<std::int64_t>(day_load().size());
  if (model.finished != requests) {
    std::cerr << "inference_bench: " << model.finished << " of " << requests << " requests finished\n";
    return 1;
  }

  gpubank::bench::register_cases(kCases);
  gpubank::bench::SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::ostringstream s;
  s << "One day of diurnal load (" << requests << " requests, 2 to 20 requests/s, Azure conversation tokens) on "
    << kReplicas << " replicas of Llama-3.1-70B on 4 x H100.\n\n";
  const bool medians = gpubank::bench::write_table(s, reporter, kCases, "Requests/s", "requests/s");
  s << "\nTimes are " << (medians ? "medians of repetitions" : "single runs") << ".\n\n";
  s << "| Model result | Value |\n|---|---:|\n";
  s << "| TTFT p50 / p95 / p99 (s) | " << gpubank::bench::fixed(quantile(model.ttft_s, 0.5), 3) << " / "
    << gpubank::bench::fixed(quantile(model.ttft_s, 0.95), 3) << " / "
    << gpubank::bench::fixed(quantile(model.ttft_s, 0.99), 3) << " |\n";
  s << "| mean inter-token latency (ms) | " << gpubank::bench::fixed(model.itl_mean_s * 1000, 1) << " |\n";
  s << "| engine busy, fraction of the day | " << gpubank::bench::fixed(model.busy_fraction, 3) << " |\n";
  s << "| preemptions | " << model.preemptions << " |\n";
  return gpubank::bench::emit_summary(s.str(), summary_path, "inference_bench") ? 0 : 1;
}
