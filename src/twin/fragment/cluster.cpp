// The cluster while pods arrive: filter, the policies' scores, the tie draw, binding, and
// F_n(M) cached per node and memoised per node state.
#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

#include "twin/fragment/fragment.hpp"
#include "twin/fragment/measure.hpp"

namespace gpubank::twin::fragment {

namespace {

// What F_n(M) depends on: the model, free CPU and the free GPUs (largest first).
struct StateKey {
  std::int64_t cpu_free = 0;
  std::int32_t model = 0;
  std::int32_t gpus = 0;
  std::array<std::int32_t, kMaxGpusPerNode> gpu_free{};
  friend bool operator==(const StateKey&, const StateKey&) = default;
};

struct StateKeyHash {
  std::size_t operator()(const StateKey& key) const noexcept {
    // FNV-1a over the fields that are set; the tail of gpu_free stays zero.
    std::uint64_t h = 14695981039346656037ULL;
    auto mix = [&h](std::uint64_t v) {
      h ^= v;
      h *= 1099511628211ULL;
    };
    mix(static_cast<std::uint64_t>(key.cpu_free));
    mix(static_cast<std::uint64_t>(key.model) << 32 | static_cast<std::uint32_t>(key.gpus));
    for (std::int32_t i = 0; i < key.gpus; ++i)
      mix(static_cast<std::uint32_t>(key.gpu_free[static_cast<std::size_t>(i)]));
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

// A pod in the form the loops use.
struct Demand {
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
  int gpu_count = 0;
  std::int32_t gpu_milli = 0;
  bool any_model = true;
  std::uint64_t models = 0;  // bit i: model i allowed
  [[nodiscard]] bool shared() const { return gpu_count == 1 && gpu_milli < kMilliPerGpu; }
  [[nodiscard]] std::int64_t gpu_total() const { return std::int64_t{gpu_count} * gpu_milli; }
  // Clustering's GPU kind (gpu_clustering_score.go): bit 0 shared, bit k k whole GPUs.
  [[nodiscard]] std::uint32_t kind_bit() const {
    return shared() ? 1U : (1U << static_cast<unsigned>(std::min(gpu_count, 31)));
  }
};

// ln(k / (100 - k)) for k = 1..99: floor(100 * sigmoid(x)) >= k exactly when x >= the k-th
// entry. Literals, so that the FGD score does not depend on a platform's exp or log.
constexpr std::array<double, 99> kSigmoidSteps{
    -4.59511985013459,    -3.891820298110627,   -3.4760986898352733,  -3.1780538303479458,  -2.9444389791664407,
    -2.751535313041949,   -2.5866893440979424,  -2.4423470353692043,  -2.3136349291806306,  -2.1972245773362196,
    -2.0907410969337694,  -1.9924301646902063,  -1.900958761193047,   -1.8152899666382492,  -1.7346010553881064,
    -1.6582280766035324,  -1.5856272637403819,  -1.5163474893680884,  -1.4500101755059984,  -1.3862943611198906,
    -1.3249254147435987,  -1.2656663733312759,  -1.2083112059245342,  -1.1526795099383855,  -1.0986122886681098,
    -1.0459685551826876,  -0.9946225751440622,  -0.9444616088408514,  -0.8953840470548413,  -0.8472978603872037,
    -0.8001193001121132,  -0.7537718023763802,  -0.7081850579244858,  -0.6632942174102642,  -0.6190392084062235,
    -0.5753641449035618,  -0.5322168137473082,  -0.4895482253187058,  -0.4473122180436648,  -0.40546510810816444,
    -0.3639653772014116,  -0.322773392263051,   -0.2818511521409877,  -0.2411620568168881,  -0.2006706954621511,
    -0.16034265007517937, -0.12014431184206321, -0.08004270767353637, -0.04000533461369913, 0.0,
    0.040005334613699206, 0.08004270767353636,  0.12014431184206321,  0.16034265007517948,  0.20067069546215124,
    0.24116205681688804,  0.28185115214098766,  0.322773392263051,    0.3639653772014116,   0.4054651081081644,
    0.44731221804366483,  0.4895482253187058,   0.5322168137473082,   0.5753641449035618,   0.6190392084062235,
    0.6632942174102642,   0.7081850579244858,   0.7537718023763802,   0.8001193001121131,   0.8472978603872037,
    0.8953840470548413,   0.9444616088408515,   0.994622575144062,    1.0459685551826878,   1.0986122886681098,
    1.1526795099383853,   1.2083112059245342,   1.2656663733312759,   1.3249254147435985,   1.3862943611198906,
    1.4500101755059984,   1.5163474893680884,   1.5856272637403819,   1.6582280766035324,   1.7346010553881064,
    1.8152899666382492,   1.900958761193047,    1.992430164690206,    2.0907410969337694,   2.1972245773362196,
    2.3136349291806306,   2.4423470353692043,   2.586689344097943,    2.751535313041949,    2.9444389791664403,
    3.1780538303479458,   3.4760986898352733,   3.8918202981106265,   4.59511985013459};

// The simulator's normalising constants (open-gpu-share utils: MaxSpecCpu, MaxSpecGpu).
constexpr std::int64_t kMaxSpecCpu = 128'000;
constexpr std::int64_t kMaxSpecGpu = 8'000;
constexpr std::int64_t kMaxNodeScore = 100;

// The GPUs a pod takes on a node, as positions in the largest-first list: for a shared task
// the one at `shared_position`, otherwise the gpu_count least-free sufficient ones
// (NodeResource.Sub: ascending, least sufficient first).
std::pair<std::size_t, std::size_t> taken_range(const std::vector<std::int32_t>& free, const Demand& d,
                                                std::size_t shared_position) {
  if (d.gpu_count == 0) return {0, 0};
  if (d.shared()) return {shared_position, shared_position + 1};
  std::size_t sufficient = 0;
  while (sufficient < free.size() && free[sufficient] >= d.gpu_milli) ++sufficient;
  return {sufficient - static_cast<std::size_t>(d.gpu_count), sufficient};
}

std::size_t sufficient_count(const std::vector<std::int32_t>& free, std::int32_t milli) {
  return static_cast<std::size_t>(std::ranges::count_if(free, [milli](std::int32_t f) { return f >= milli; }));
}

}  // namespace

struct Cluster::Impl {
  std::vector<Node> nodes;
  Workload workload;
  std::map<std::string, std::int32_t, std::less<>> model_ids;
  std::vector<std::int32_t> node_model;
  std::vector<NodeState> states;
  std::vector<std::uint32_t> kinds;        // clustering: the GPU kinds each node holds
  std::vector<std::size_t> name_rank;      // position of each node in name order (ties)
  std::array<double, 99> sigmoid_steps{};  // kSigmoidSteps in weighted milli (x typical_pods x 1000)
  // The workload's task types with their models as a mask and their pod counts.
  struct WeightedTask {
    detail::TaskDemand demand;
    bool any_model = true;
    std::uint64_t models = 0;
    std::int64_t pods = 0;
  };
  std::vector<WeightedTask> tasks;
  std::vector<std::int64_t> node_fragment;  // sum_m pods_m F_n(m)
  std::int64_t fragment_total = 0;
  std::int64_t capacity = 0;
  std::int64_t allocated = 0;
  mutable std::unordered_map<StateKey, std::int64_t, StateKeyHash> memo;
  std::vector<std::size_t> ties;              // scratch: the nodes with the best score
  std::vector<std::size_t> shared_positions;  // scratch: FGD's GPU per node for a shared task

  std::pair<bool, std::uint64_t> model_mask(const std::vector<std::string>& allowed) const {
    std::uint64_t mask = 0;
    for (const auto& name : allowed) {
      if (const auto it = model_ids.find(name); it != model_ids.end()) mask |= std::uint64_t{1} << it->second;
    }
    return {allowed.empty(), mask};
  }

  Demand demand(const Pod& pod) const {
    const auto [any, mask] = model_mask(pod.gpu_models);
    return Demand{pod.cpu_milli, pod.memory_mib, pod.gpu_count, static_cast<std::int32_t>(pod.gpu_milli), any, mask};
  }

  bool fits(const Demand& d, std::size_t n) const {
    const NodeState& s = states[n];
    if (s.cpu_free < d.cpu || s.memory_free < d.memory) return false;
    if (d.gpu_count == 0) return true;
    if (!d.any_model && (d.models >> node_model[n] & 1U) == 0) return false;
    // Largest first: the gpu_count-th largest must have the share free.
    const auto k = static_cast<std::size_t>(d.gpu_count);
    return k <= s.gpu_free_milli.size() && s.gpu_free_milli[k - 1] >= d.gpu_milli;
  }

  // sum_m pods_m F_n(m) for a state, memoised.
  std::int64_t weighted_fragment(const StateKey& key) const {
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
    const std::span<const std::int32_t> gpus(key.gpu_free.data(), static_cast<std::size_t>(key.gpus));
    std::int64_t weighted = 0;
    for (const WeightedTask& task : tasks) {
      const bool allowed = task.any_model || (task.models >> key.model & 1U) != 0;
      weighted += task.pods * detail::task_fragment(allowed, key.cpu_free, gpus, task.demand);
    }
    memo.emplace(key, weighted);
    return weighted;
  }

  // The state of node n after the pod took GPUs [first, last) and its CPU.
  StateKey key_after(std::size_t n, const Demand& d, std::pair<std::size_t, std::size_t> taken) const {
    const NodeState& s = states[n];
    StateKey key;
    key.cpu_free = s.cpu_free - d.cpu;
    key.model = node_model[n];
    key.gpus = static_cast<std::int32_t>(s.gpu_free_milli.size());
    std::ranges::copy(s.gpu_free_milli, key.gpu_free.begin());
    for (std::size_t i = taken.first; i < taken.second; ++i) key.gpu_free[i] -= d.gpu_milli;
    std::sort(key.gpu_free.begin(), key.gpu_free.begin() + key.gpus, std::greater<>());
    return key;
  }

  StateKey key_now(std::size_t n) const {
    const NodeState& s = states[n];
    StateKey key;
    key.cpu_free = s.cpu_free;
    key.model = node_model[n];
    key.gpus = static_cast<std::int32_t>(s.gpu_free_milli.size());
    std::ranges::copy(s.gpu_free_milli, key.gpu_free.begin());
    return key;
  }

  // FGD: the change of F_n(M) (x pods) and the shared GPU's position that gives the least.
  std::pair<std::int64_t, std::size_t> fgd(const Demand& d, std::size_t n) const {
    const auto& free = states[n].gpu_free_milli;
    if (!d.shared()) return {weighted_fragment(key_after(n, d, taken_range(free, d, 0))) - node_fragment[n], 0};
    std::int64_t best = std::numeric_limits<std::int64_t>::max();
    std::size_t best_position = 0;
    // GPUs with the same free milli give the same state: try each value once; on a tie
    // the later (less free) one wins.
    for (std::size_t i = 0; i < free.size() && free[i] >= d.gpu_milli; ++i) {
      if (i > 0 && free[i] == free[i - 1]) continue;
      const std::int64_t gradient = weighted_fragment(key_after(n, d, {i, i + 1})) - node_fragment[n];
      if (gradient <= best) {
        best = gradient;
        best_position = i;
      }
    }
    return {best, best_position};
  }

  // fgd: floor(100 * sigmoid(decrease in GPUs)); the gradient is in milli x typical pods.
  std::int64_t sigmoid_score(std::int64_t gradient) const {
    const auto decrease = static_cast<double>(-gradient);
    return std::ranges::upper_bound(sigmoid_steps, decrease) - sigmoid_steps.begin();
  }

  // best-fit: 100 * (1 - (0.5 cpuLeft/128000 + 0.5 gpuLeft/8000)) after placing, in integers.
  std::int64_t best_fit_score(const Demand& d, std::size_t n) const {
    const std::int64_t cpu_left = states[n].cpu_free - d.cpu;
    const std::int64_t gpu_left = states[n].gpu_free_total() - d.gpu_total();
    constexpr std::int64_t kScale = 2 * kMaxSpecCpu / kMaxNodeScore;  // 2560
    return (kMaxNodeScore * kScale - (cpu_left + (kMaxSpecCpu / kMaxSpecGpu) * gpu_left)) / kScale;
  }

  // dot-product ("merge", "max"): 100 * (1 - (cpu.cpu' + gpu.gpu') / 2) on normalised vectors.
  std::int64_t dot_product_score(const Demand& d, std::size_t n) const {
    constexpr std::int64_t kRatio = kMaxSpecCpu / kMaxSpecGpu;  // 16
    constexpr std::int64_t kDenominator = 2 * kMaxSpecCpu * kMaxSpecCpu;
    const std::int64_t dot = states[n].cpu_free * d.cpu + kRatio * kRatio * states[n].gpu_free_total() * d.gpu_total();
    return kMaxNodeScore * (kDenominator - dot) / kDenominator;
  }

  // packing (gpu_packing_score.go): shared GPUs, then free GPUs of used nodes, then idle nodes.
  std::int64_t packing_score(const Demand& d, std::size_t n) const {
    if (d.gpu_count == 0) return 0;
    const auto& free = states[n].gpu_free_milli;
    const auto fully_free = std::ranges::count(free, static_cast<std::int32_t>(kMilliPerGpu));
    if (fully_free == static_cast<std::ptrdiff_t>(free.size()))
      return std::max<std::int64_t>(kMaxNodeScore / 3 - fully_free, fully_free);
    const auto [first, last] = taken_range(free, d, sufficient_count(free, d.gpu_milli) - 1);
    std::int64_t fully_free_taken = 0, free_percent_taken = 0;
    for (std::size_t i = first; i < last; ++i) {
      fully_free_taken += free[i] == kMilliPerGpu ? 1 : 0;
      free_percent_taken += free[i] * 100 / kMilliPerGpu;
    }
    if (fully_free_taken > 0) return std::max(kMaxNodeScore / 2 - fully_free_taken, kMaxNodeScore / 3);
    return std::max(kMaxNodeScore - free_percent_taken / 10, kMaxNodeScore / 2);
  }

  // clustering (gpu_clustering_score.go): nodes holding only this kind, then this kind among
  // others, then idle nodes, then other kinds; fuller nodes first within each band.
  std::int64_t clustering_score(const Demand& d, std::size_t n) const {
    if (d.gpu_count == 0) return 0;
    const std::uint32_t held = kinds[n];
    const std::int64_t fullness = kMaxNodeScore / 4 * (kMaxSpecGpu - states[n].gpu_free_total()) / kMaxSpecGpu;
    if ((held & d.kind_bit()) != 0)
      return fullness + (std::popcount(held) == 1 ? kMaxNodeScore * 3 / 4 : kMaxNodeScore / 2);
    return fullness + (held == 0 ? kMaxNodeScore / 4 : 0);
  }

  void bind(const Demand& d, std::size_t n, std::pair<std::size_t, std::size_t> taken, Assignment& out) {
    NodeState& s = states[n];
    out.node = n;
    out.gpu_free_before.assign(s.gpu_free_milli.begin() + static_cast<std::ptrdiff_t>(taken.first),
                               s.gpu_free_milli.begin() + static_cast<std::ptrdiff_t>(taken.second));
    const StateKey after = key_after(n, d, taken);
    s.cpu_free -= d.cpu;
    s.memory_free -= d.memory;
    s.gpu_free_milli.assign(after.gpu_free.begin(), after.gpu_free.begin() + after.gpus);
    allocated += d.gpu_total();
    if (d.gpu_count > 0) kinds[n] |= d.kind_bit();
    const std::int64_t fragment = weighted_fragment(after);
    fragment_total += fragment - node_fragment[n];
    node_fragment[n] = fragment;
  }
};

Cluster::Cluster(std::vector<Node> nodes, Workload workload) : impl_(std::make_unique<Impl>()) {
  Impl& c = *impl_;
  c.nodes = std::move(nodes);
  c.workload = std::move(workload);
  for (const Node& node : c.nodes) c.model_ids.emplace(node.gpu_model, static_cast<std::int32_t>(c.model_ids.size()));
  const auto weighted_gpu = static_cast<double>(c.workload.typical_pods * kMilliPerGpu);
  std::ranges::transform(kSigmoidSteps, c.sigmoid_steps.begin(),
                         [weighted_gpu](double step) { return step * weighted_gpu; });
  for (const TaskType& task : c.workload.types) {
    const auto [any_model, models] = c.model_mask(task.gpu_models);
    c.tasks.push_back({{task.cpu_milli, task.gpu_count, task.gpu_milli}, any_model, models, task.pods});
  }
  std::vector<std::size_t> by_name(c.nodes.size());
  std::iota(by_name.begin(), by_name.end(), std::size_t{0});
  std::ranges::stable_sort(by_name, {}, [&c](std::size_t i) -> const std::string& { return c.nodes[i].name; });
  c.name_rank.resize(c.nodes.size());
  for (std::size_t rank = 0; rank < by_name.size(); ++rank) c.name_rank[by_name[rank]] = rank;
  for (std::size_t n = 0; n < c.nodes.size(); ++n) {
    c.node_model.push_back(c.model_ids.at(c.nodes[n].gpu_model));
    c.states.push_back(NodeState::idle(c.nodes[n]));
    c.kinds.push_back(0);
    c.capacity += std::int64_t{c.nodes[n].gpus} * kMilliPerGpu;
    c.node_fragment.push_back(c.weighted_fragment(c.key_now(n)));
    c.fragment_total += c.node_fragment.back();
  }
}

Cluster::~Cluster() = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;

bool Cluster::fits(const Pod& pod, std::size_t node) const { return impl_->fits(impl_->demand(pod), node); }

std::int64_t Cluster::fragment_gradient(const Pod& pod, std::size_t node, std::int32_t gpu_free) const {
  const Impl& c = *impl_;
  const Demand d = c.demand(pod);
  const auto& free = c.states[node].gpu_free_milli;
  const auto position = static_cast<std::size_t>(std::ranges::find(free, gpu_free) - free.begin());
  const std::size_t shared_position = d.shared() && position < free.size() ? position : 0;
  return c.weighted_fragment(c.key_after(node, d, taken_range(free, d, shared_position))) - c.node_fragment[node];
}

std::optional<Assignment> Cluster::place(const Pod& pod, Placement placement, Rng& rng) {
  Impl& c = *impl_;
  const Demand d = c.demand(pod);
  c.ties.clear();
  std::int64_t best = std::numeric_limits<std::int64_t>::min();
  const bool fgd = placement == Placement::Fgd || placement == Placement::FgdExact;
  if (fgd && d.shared()) c.shared_positions.resize(c.nodes.size());
  for (std::size_t n = 0; n < c.nodes.size(); ++n) {
    if (!c.fits(d, n)) continue;
    std::int64_t score = 0;
    switch (placement) {
      case Placement::Fgd:
      case Placement::FgdExact: {
        const auto [gradient, position] = c.fgd(d, n);
        score = placement == Placement::Fgd ? c.sigmoid_score(gradient) : -gradient;
        if (d.shared()) c.shared_positions[n] = position;
        break;
      }
      case Placement::BestFit:
        score = c.best_fit_score(d, n);
        break;
      case Placement::DotProduct:
        score = c.dot_product_score(d, n);
        break;
      case Placement::Packing:
        score = c.packing_score(d, n);
        break;
      case Placement::Clustering:
        score = c.clustering_score(d, n);
        break;
      case Placement::Random:
        break;
    }
    if (score > best) {
      best = score;
      c.ties.clear();
    }
    if (score == best) c.ties.push_back(n);
  }
  if (c.ties.empty()) return std::nullopt;
  // The authors' selectHost takes the node with the smallest name among the best (their
  // change to kube-scheduler, for reproducibility); random's score has a single best.
  const std::size_t n = placement == Placement::Random
                            ? c.ties[rng.below(c.ties.size())]
                            : *std::ranges::min_element(c.ties, {}, [&c](std::size_t i) { return c.name_rank[i]; });
  const auto& free = c.states[n].gpu_free_milli;
  // The shared GPU: FGD's choice, a uniformly drawn sufficient one (random), else the
  // sufficient one with the least free milli (the simulator's best-fit GPU selection).
  std::size_t shared_position = 0;
  if (d.shared()) {
    const std::size_t sufficient = sufficient_count(free, d.gpu_milli);
    shared_position = fgd                              ? c.shared_positions[n]
                      : placement == Placement::Random ? rng.below(sufficient)
                                                       : sufficient - 1;
  }
  Assignment out;
  c.bind(d, n, taken_range(free, d, shared_position), out);
  return out;
}

std::span<const Node> Cluster::nodes() const { return impl_->nodes; }
const NodeState& Cluster::state(std::size_t node) const { return impl_->states[node]; }
const Workload& Cluster::workload() const { return impl_->workload; }
std::int64_t Cluster::gpu_capacity_milli() const { return impl_->capacity; }
std::int64_t Cluster::gpu_allocated_milli() const { return impl_->allocated; }
std::size_t Cluster::memoised_states() const { return impl_->memo.size(); }

double Cluster::fragment_milli() const {
  if (impl_->workload.typical_pods == 0) return 0;
  return static_cast<double>(impl_->fragment_total) / static_cast<double>(impl_->workload.typical_pods);
}

}  // namespace gpubank::twin::fragment
