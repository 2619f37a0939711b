// The twin's pod placement (src/twin/cluster) on the Alibaba GPU trace v2023 inventory
// (1,213 nodes, 6,212 GPUs): place/release churn with a seeded mix of shapes. The twin's
// target: up to 520,000 pods in a run of under 60 s, so an attempt must cost a few
// microseconds, and a failed one no more.
//
//   (a) naive_scan         baseline: the same decisions (best fit, ties by node order;
//                          shared fractions on the fullest GPU that fits) by a plain
//                          scan of all nodes (and all GPUs for fractions) per attempt,
//                          written here
//   (b) cluster_churn      Cluster::find + bind, and release, on the same sequence
//   (c) naive_failed       baseline of (d): attempts that cannot fit (8 GPUs on one node
//                          of a cluster where no node has 8 free), by the scan
//   (d) cluster_failed     the same attempts through Cluster::find
//   (e) naive_find         baseline of (f): the scan's find alone (nothing bound) for
//                          100,000 seeded requests on the state the churn leaves
//   (f) cluster_find       the same through Cluster::find
//
// The sequence (fixed seed): each step releases a random bound workload with probability
// 0.45, else attempts a pod: 30 % a shared fraction (1..999 milli), else 1 (40 %), 2, 4 or
// 8 GPUs (20 % each); half of the attempts select a pool (a random model's
// alibaba_pool_for_model). Before timing, both implementations run it once and must make
// the same decisions. --summary=FILE also writes the markdown summary there.
#include <benchmark/benchmark.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "summary_reporter.hpp"
#include "twin/cluster/cluster.hpp"
#include "twin/cluster/inventory.hpp"

namespace {

using namespace gpubank::twin::cluster;
using gpubank::bench::fixed;
using gpubank::bench::SummaryReporter;

constexpr int kSteps = 100'000;
constexpr int kFailedAttempts = 100'000;
constexpr std::uint64_t kSeed = 2023;
const char* const kModels[] = {"G2", "T4", "P100", "V100M16", "V100M32", "G3", "A10"};

Inventory load_alibaba() {
  const std::string file = std::string(GPUBANK_SHARED_DIR) + "/traces/alibaba-gpu-v2023/openb_node_list_gpu_node.csv";
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  gpubank::Diagnostics d;
  auto inventory = alibaba_inventory(text.str(), file, d);
  if (!inventory) {
    std::cerr << "placement_bench: cannot read " << file << (d.empty() ? "" : ": " + d.front().to_string()) << '\n';
    std::exit(1);
  }
  return std::move(*inventory);
}

const Inventory& inventory() {
  static const Inventory inv = load_alibaba();
  return inv;
}

// ---- the baseline: a plain scan -------------------------------------------------------------

class NaiveCluster {
 public:
  explicit NaiveCluster(const Inventory& inv) {
    for (const auto& n : inv.nodes) {
      Node node;
      node.pool = std::string(n.pool());
      node.first_unit = static_cast<int>(units_.size());
      node.units = n.units();
      node.free = n.units();
      nodes_.push_back(node);
      for (int k = 0; k < node.units; ++k) units_.push_back(UnitState{static_cast<int>(nodes_.size()) - 1, 0, false});
    }
  }

  // Unit ids per pod, or empty.
  std::vector<int> find(const PlacementRequest& r) const {
    const std::string* pool = r.node_selector.empty() ? nullptr : &r.node_selector.begin()->second;
    if (r.gpu_milli > 0) {
      int best = -1;
      for (std::size_t u = 0; u < units_.size(); ++u) {
        const UnitState& x = units_[u];
        if (x.whole || x.used == 0 || 1000 - x.used < r.gpu_milli) continue;
        if (pool != nullptr && nodes_[static_cast<std::size_t>(x.node)].pool != *pool) continue;
        if (best < 0 || x.used > units_[static_cast<std::size_t>(best)].used) best = static_cast<int>(u);
      }
      if (best >= 0) return {best};
    }
    const int need = r.gpu_milli > 0 ? 1 : r.gpus_per_pod;
    int best = -1;
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      const Node& node = nodes_[n];
      if (node.free < need || (pool != nullptr && node.pool != *pool)) continue;
      if (best < 0 || node.free < nodes_[static_cast<std::size_t>(best)].free) best = static_cast<int>(n);
    }
    if (best < 0) return {};
    std::vector<int> out;
    const Node& node = nodes_[static_cast<std::size_t>(best)];
    for (int u = node.first_unit; u < node.first_unit + node.units && static_cast<int>(out.size()) < need; ++u) {
      if (units_[static_cast<std::size_t>(u)].used == 0) out.push_back(u);
    }
    return out;
  }

  void bind(const std::vector<int>& units, int milli) {
    for (const int u : units) change(u, milli == 0 ? 1000 : milli, milli == 0);
  }
  void release(const std::vector<int>& units, int milli) {
    for (const int u : units) change(u, -(milli == 0 ? 1000 : milli), false);
  }

 private:
  struct Node {
    std::string pool;
    int first_unit = 0, units = 0, free = 0;
  };
  struct UnitState {
    int node = 0;
    int used = 0;
    bool whole = false;
  };
  void change(int u, int delta, bool whole) {
    UnitState& x = units_[static_cast<std::size_t>(u)];
    const bool was_free = x.used == 0;
    x.used += delta;
    x.whole = whole;
    const bool now_free = x.used == 0;
    nodes_[static_cast<std::size_t>(x.node)].free += static_cast<int>(now_free) - static_cast<int>(was_free);
  }
  std::vector<Node> nodes_;
  std::vector<UnitState> units_;
};

// ---- the sequence ------------------------------------------------------------------------

struct Outcome {
  std::int64_t attempts = 0, placed = 0, releases = 0;
  std::uint64_t checksum = 0;  // over the units chosen, in order
};

PlacementRequest next_request(std::mt19937_64& rng, int id) {
  PlacementRequest r;
  r.workload = "pod-" + std::to_string(id);
  if (rng() % 10 < 3) {
    r.gpu_milli = 1 + static_cast<int>(rng() % 999);
  } else {
    const std::uint64_t roll = rng() % 10;
    r.gpus_per_pod = roll < 4 ? 1 : roll < 6 ? 2 : roll < 8 ? 4 : 8;
  }
  if (rng() % 2 == 0) r.node_selector = {{std::string(kPoolLabel), alibaba_pool_for_model(kModels[rng() % 7])}};
  return r;
}

// Runs the churn on either implementation: `place` returns the units per pod (empty: no
// fit) and binds them; `release` gives a placed workload's units back.
template <class Place, class Release>
Outcome run_churn(Place&& place, Release&& release) {
  std::mt19937_64 rng(kSeed);
  Outcome out;
  struct Bound {
    std::string workload;
    std::vector<int> units;
    int milli;
  };
  std::vector<Bound> bound;
  for (int step = 0; step < kSteps; ++step) {
    if (!bound.empty() && rng() % 100 < 45) {
      const std::size_t k = rng() % bound.size();
      release(bound[k].workload, bound[k].units, bound[k].milli);
      bound[k] = std::move(bound.back());
      bound.pop_back();
      ++out.releases;
      continue;
    }
    const PlacementRequest r = next_request(rng, step);
    ++out.attempts;
    std::vector<int> units = place(r);
    if (units.empty()) continue;
    ++out.placed;
    for (const int u : units) out.checksum = out.checksum * 1'000'003 + static_cast<std::uint64_t>(u) + 1;
    bound.push_back(Bound{r.workload, std::move(units), r.gpu_milli});
  }
  return out;
}

Outcome churn_naive(NaiveCluster& c) {
  return run_churn(
      [&](const PlacementRequest& r) {
        std::vector<int> units = c.find(r);
        if (!units.empty()) c.bind(units, r.gpu_milli);
        return units;
      },
      [&](const std::string&, const std::vector<int>& units, int milli) { c.release(units, milli); });
}

Outcome churn_cluster(Cluster& c) {
  return run_churn(
      [&](const PlacementRequest& r) {
        std::vector<int> units;
        const auto p = c.find(r);
        if (!p) return units;
        if (!c.bind(r.workload, *p).ok()) std::abort();
        for (const UnitId u : p->pods.front().units) units.push_back(static_cast<int>(u));
        return units;
      },
      [&](const std::string& workload, const std::vector<int>&, int) {
        if (!c.release(workload).ok()) std::abort();
      });
}

Outcome& expected() {
  static Outcome o;
  return o;
}

// Runs the churn on a fresh cluster per iteration; building and dropping it is not timed.
template <class C, class Run>
void timed_churn(benchmark::State& state, Run&& run) {
  for (auto _ : state) {
    state.PauseTiming();
    auto c = std::make_unique<C>(inventory());
    state.ResumeTiming();
    const Outcome o = run(*c);
    benchmark::DoNotOptimize(o.checksum);
    state.PauseTiming();
    c.reset();
    state.ResumeTiming();
  }
  state.counters["attempts/s"] = benchmark::Counter(static_cast<double>(expected().attempts),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

void naive_scan(benchmark::State& state) { timed_churn<NaiveCluster>(state, churn_naive); }
void cluster_churn(benchmark::State& state) { timed_churn<Cluster>(state, churn_cluster); }

// Every node left with fewer than 8 free GPUs (one GPU of each 8-GPU node taken), then
// whole-node attempts that must fail.
template <class Find>
void failed_attempts(benchmark::State& state, Find&& find) {
  PlacementRequest any;
  any.workload = "big";
  any.gpus_per_pod = 8;
  PlacementRequest g2 = any;
  g2.node_selector = {{std::string(kPoolLabel), "alibaba-g2"}};
  for (auto _ : state) {
    int fits = 0;
    for (int i = 0; i < kFailedAttempts; ++i) fits += find(i % 2 == 0 ? any : g2) ? 1 : 0;
    if (fits != 0) state.SkipWithError("an attempt that should fail fitted");
  }
  state.counters["attempts/s"] = benchmark::Counter(kFailedAttempts, benchmark::Counter::kIsIterationInvariantRate);
}

void naive_failed(benchmark::State& state) {
  NaiveCluster c(inventory());
  int first_unit = 0;
  for (const auto& node : inventory().nodes) {
    c.bind({first_unit}, 0);
    first_unit += node.units();
  }
  failed_attempts(state, [&](const PlacementRequest& r) { return !c.find(r).empty(); });
}

void cluster_failed(benchmark::State& state) {
  Cluster c(inventory());
  for (NodeId n = 0; n < c.node_count(); ++n) {
    if (!c.bind("hold-" + std::to_string(n), Placement{{PodPlacement{n, {c.node_first_unit(n)}}}, 0}).ok()) std::abort();
  }
  failed_attempts(state, [&](const PlacementRequest& r) { return c.find(r).has_value(); });
}

// The state the churn leaves (both implementations), and a seeded set of requests: find()
// alone, nothing bound, on a busy and fragmented cluster.
struct Settled {
  NaiveCluster naive{inventory()};
  Cluster cluster{inventory()};
  std::vector<PlacementRequest> requests;
  Settled() {
    churn_naive(naive);
    churn_cluster(cluster);
    std::mt19937_64 rng(kSeed + 1);
    for (int i = 0; i < kFailedAttempts; ++i) requests.push_back(next_request(rng, i));
  }
};

Settled& settled() {
  static Settled s;
  return s;
}

template <class Find>
void find_only(benchmark::State& state, Find&& find) {
  const auto& requests = settled().requests;
  for (auto _ : state) {
    std::int64_t fits = 0;
    for (const auto& r : requests) fits += find(r) ? 1 : 0;
    benchmark::DoNotOptimize(fits);
  }
  state.counters["attempts/s"] = benchmark::Counter(static_cast<double>(requests.size()),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

void naive_find(benchmark::State& state) {
  find_only(state, [](const PlacementRequest& r) { return !settled().naive.find(r).empty(); });
}
void cluster_find(benchmark::State& state) {
  find_only(state, [](const PlacementRequest& r) { return settled().cluster.find(r).has_value(); });
}

using gpubank::bench::Case;

constexpr Case kCases[] = {
    {"naive_scan", "(a) baseline: plain scan of all nodes per attempt, churn", naive_scan},
    {"cluster_churn", "(b) Cluster::find + bind / release, churn", cluster_churn},
    {"naive_failed", "(c) baseline: failing 8-GPU attempts by the scan", naive_failed},
    {"cluster_failed", "(d) failing 8-GPU attempts through Cluster::find", cluster_failed},
    {"naive_find", "(e) baseline: the scan's find alone on the churned state", naive_find},
    {"cluster_find", "(f) Cluster::find alone on the churned state", cluster_find},
};

std::string summary(const SummaryReporter& reporter) {
  const Outcome& o = expected();
  std::ostringstream s;
  s << "Alibaba v2023 inventory: " << inventory().nodes.size() << " nodes, " << inventory().gpu_count()
    << " GPUs. Churn: " << kSteps << " steps, " << o.attempts << " attempts (" << o.placed << " placed, "
    << o.attempts - o.placed << " did not fit), " << o.releases
    << " releases; both implementations made the same decisions. Failing attempts: " << kFailedAttempts
    << " per set.\n\n";
  s << "| Benchmark | What is timed | Time per set (ms) | ns per attempt | Time vs baseline |\n";
  s << "|---|---|---:|---:|---:|\n";
  const auto& results = reporter.results();
  bool medians = true;
  for (std::size_t i = 0; i < std::size(kCases); ++i) {
    const Case& c = kCases[i];
    const auto it = results.find(c.name);
    if (it == results.end()) continue;
    const auto base = results.find(kCases[i - i % 2].name);  // (a) for (b), (c) for (d), (e) for (f)
    const auto& r = it->second;
    medians = medians && r.from_median;
    const double rate = r.counter("attempts/s");
    s << "| " << c.name << " | " << c.what << " | " << fixed(r.ms_per_iteration, 1) << " | "
      << (rate > 0 ? fixed(1e9 / rate, 0) : std::string("n/a")) << " | "
      << (base != results.end() && base->second.ms_per_iteration > 0
              ? fixed(r.ms_per_iteration / base->second.ms_per_iteration, 3) + "x"
              : std::string("n/a"))
      << " |\n";
  }
  s << "\nTimes are wall-clock (real) time per set" << (medians ? ", medians of the repetitions" : ", one measurement each")
    << "; ns per attempt divides by the attempts (churn: releases included in the time).\n";
  const auto churn = results.find("cluster_churn");
  if (churn != results.end() && churn->second.counter("attempts/s") > 0) {
    const double ns = 1e9 / churn->second.counter("attempts/s");
    s << "\nAt that rate 520,000 pods cost " << fixed(520'000 * ns / 1e9, 2)
      << " s of placement (one attempt each), against the run's 60 s.\n";
  }
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string summary_path = gpubank::bench::take_summary_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  // Both must decide the same, or the comparison would be meaningless.
  NaiveCluster naive(inventory());
  expected() = churn_naive(naive);
  Cluster cluster(inventory());
  const Outcome indexed = churn_cluster(cluster);
  if (indexed.attempts != expected().attempts || indexed.placed != expected().placed ||
      indexed.checksum != expected().checksum) {
    std::cerr << "placement_bench: the index and the scan decided differently: " << indexed.placed << " vs "
              << expected().placed << " placed\n";
    return 1;
  }

  for (const Case& c : kCases) benchmark::RegisterBenchmark(c.name, c.fn)->Unit(benchmark::kMillisecond)->UseRealTime();
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return gpubank::bench::emit_summary(summary(reporter), summary_path, "placement_bench") ? 0 : 1;
}
