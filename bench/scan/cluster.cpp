// scan_bench: the generated cluster (workloads, pods, devices, nodes, loans) of the header
// comment of bench/scan_bench.cpp, from a fixed seed.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "scan/scan_bench.hpp"

namespace gpubank::bench::scan {

namespace {

enum PoolId { kTrainPool = 0, kInferencePool = 1, kL40sPool = 2, kDevPool = 3 };
constexpr int kGpusPerNode = 8;
constexpr const char* kGroups[] = {"search",      "ads",      "customer-service", "research", "recommendation", "speech",
                                   "vision",      "maps",     "payments",         "fraud",    "translation",    "robotics",
                                   "health",      "finance",  "security",         "retail"};
constexpr int kGroupCount = static_cast<int>(std::size(kGroups));
constexpr int kOwners = 2000;

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  double uniform(double a, double b) { return a + (b - a) * static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  int below(int n) { return static_cast<int>(engine_() % static_cast<std::uint64_t>(n)); }
  bool chance(double p) { return uniform(0, 1) < p; }
  std::string hex(int digits) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < digits; ++i) out += kHex[engine_() % 16];
    return out;
  }
  std::string uuid() { return hex(8) + "-" + hex(4) + "-4" + hex(3) + "-a" + hex(3) + "-" + hex(12); }

 private:
  std::mt19937_64 engine_;
};

std::string padded(int v, int width) {
  std::string s = std::to_string(v);
  return std::string(static_cast<std::size_t>(std::max(0, width - static_cast<int>(s.size()))), '0') + s;
}

// Places devices for a pod on the pool's current node (a new one when it does not fit).
class Placer {
 public:
  Placer(Cluster& c, Rng& rng) : c_(c), rng_(rng) {}
  std::vector<int> place(int pool, int gpus) {
    Cursor& cur = cursors_[pool];
    if (cur.node < 0 || cur.used + gpus > kGpusPerNode) {
      cur.node = static_cast<int>(c_.nodes.size());
      cur.used = 0;
      const int shard = cur.node % c_.shards;
      c_.nodes.push_back({std::string(kPools[pool].node_prefix) + "-" + padded(cur.count++, 5), shard});
    }
    std::vector<int> out;
    for (int i = 0; i < gpus; ++i) {
      out.push_back(static_cast<int>(c_.devices.size()));
      c_.devices.push_back({cur.node, cur.used++, pool, "GPU-" + rng_.uuid(), {}});
    }
    return out;
  }

 private:
  struct Cursor {
    int node = -1, used = 0, count = 0;
  };
  Cluster& c_;
  Rng& rng_;
  Cursor cursors_[std::size(kPools)];
};

struct Profile {
  double util, spread, mem, power;
};
Profile busy_training(Rng& r) { return {r.uniform(55, 95), 8, r.uniform(0.4, 0.9), r.uniform(0.5, 0.9)}; }
Profile idle(Rng& r) { return {r.uniform(0.3, 3.5), 1.5, r.uniform(0.02, 0.1), r.uniform(0.08, 0.14)}; }

void apply(Workload& w, const Profile& p) {
  w.util = p.util;
  w.util_spread = p.spread;
  w.mem = p.mem;
  w.power = p.power;
}

}  // namespace

Cluster generate(int n, int step_s, int shards, std::int64_t from_s, std::int64_t t1_s, std::int64_t last_s,
                 std::uint64_t seed) {
  Cluster c;
  c.step_s = step_s;
  c.shards = shards;
  c.from_s = from_s;
  c.t1_s = t1_s;
  c.steps = static_cast<int>((last_s - from_s) / step_s) + 1;
  c.series.resize(static_cast<std::size_t>(shards));
  Rng rng(seed);
  Placer placer(c, rng);
  const std::int64_t t1 = c.t1_s;
  auto minutes = [&](double lo, double hi) { return static_cast<std::int64_t>(rng.uniform(lo, hi) * kMinute); };

  const int n_training = n / 2;
  const int n_notebook = n / 5;
  const int n_inference = n / 5;
  const int n_batch = n - n_training - n_notebook - n_inference;
  // Time-sliced notebooks, in pairs: 4 % of the workloads.
  c.shared_notebooks = std::min(n_notebook * 9 / 10, n / 25) / 2 * 2;

  auto base = [&](Workload& w, const char* type, int index) {
    w.uid = rng.uuid();
    w.type = type;
    const int g = rng.below(kGroupCount);
    w.group = kGroups[g];
    w.cost_center = "CC-" + std::to_string(1001 + g);
    w.owner = "u-" + padded(rng.below(kOwners), 5);
    w.name = std::string(type == std::string("training") ? "train" : type == std::string("notebook") ? "nb"
                         : type == std::string("inference") ? "svc" : "batch") + "-" + padded(index, 5);
  };
  auto add_pod = [&](Workload& w, std::string name, std::string container, std::int64_t start, int gpus) {
    Pod p{std::move(name), rng.uuid(), std::move(container), start, placer.place(w.pool, gpus)};
    w.pods.push_back(std::move(p));
  };

  for (int i = 0; i < n_training; ++i) {
    Workload w;
    base(w, "training", i);
    w.ns = w.group + "-training";
    w.queue = w.group + "-training";
    w.pool = kTrainPool;
    w.checkpointable = rng.chance(0.7) ? "true" : "false";
    std::int64_t start = t1 - minutes(120, 72 * 60);
    const double u = rng.uniform(0, 1);
    if (u < 0.74) {
      w.category = "busy";
      apply(w, busy_training(rng));
    } else if (u < 0.84) {
      w.category = "idle";
      apply(w, idle(rng));
    } else if (u < 0.88) {
      w.category = "stalled on input (low utilisation, memory held)";
      apply(w, {rng.uniform(1, 5), 2, rng.uniform(0.6, 0.8), 0.25});
    } else if (u < 0.91) {
      w.category = "idle, started < 30m ago";
      apply(w, idle(rng));
      start = t1 - minutes(5, 25);
    } else if (u < 0.95) {
      w.category = "idle, started 31-59m before T1";
      apply(w, idle(rng));
      start = t1 - minutes(31, 59.5);
    } else if (u < 0.97) {
      w.category = "idle, keep-running-until tomorrow";
      apply(w, idle(rng));
      w.keep_until_s = t1 + 24 * 3600;
    } else if (u < 0.99) {
      w.category = "idle, checkpoint notice 5m before T1";
      apply(w, idle(rng));
      w.checkpoint_ms = (t1 - 5 * kMinute) * 1000;
    } else {
      w.category = "idle, busy again from 1-3m before T1";
      apply(w, idle(rng));
      w.busy_from_s = t1 - minutes(1, 3);
    }
    if (rng.chance(0.7)) {
      w.kind = "PyTorchJob";
      add_pod(w, w.name + "-master-0", "pytorch", start, 1);
      add_pod(w, w.name + "-worker-0", "pytorch", start + rng.below(20), 1);
    } else {
      w.kind = "JobSet";
      add_pod(w, w.name + "-trainer-0-0-" + rng.hex(5), "trainer", start, 2);
    }
    c.workloads.push_back(std::move(w));
  }

  int shared_left = c.shared_notebooks;
  for (int i = 0; i < n_notebook; ++i) {
    Workload w;
    base(w, "notebook", i);
    w.ns = w.group + "-dev";
    w.kind = "Pod";
    // The second of a time-sliced pair shares the first's devices and behaviour.
    Workload* partner = nullptr;
    if (shared_left > 0 && shared_left % 2 == 1) partner = &c.workloads.back();
    w.pool = (shared_left > 0 || rng.chance(0.9)) ? kDevPool : kL40sPool;
    std::int64_t start = t1 - minutes(60, 48 * 60);
    const double u = partner != nullptr ? -1 : rng.uniform(0, 1);
    if (partner != nullptr) {
      w.category = partner->category;
      w.util = partner->util;
      w.util_spread = partner->util_spread;
      w.mem = partner->mem;
      w.power = partner->power;
      if (partner->pods[0].start_s > t1 - 60 * kMinute) start = t1 - minutes(2, 29);
    } else if (u < 0.40) {
      w.category = "idle";
      apply(w, idle(rng));
    } else if (u < 0.85) {
      w.category = "busy";
      apply(w, {rng.uniform(15, 60), 10, rng.uniform(0.2, 0.6), rng.uniform(0.35, 0.6)});
    } else if (u < 0.90) {
      w.category = "idle, power drawn above 20 %";
      apply(w, {rng.uniform(0.5, 3), 1, rng.uniform(0.05, 0.1), rng.uniform(0.25, 0.32)});
    } else if (u < 0.95) {
      w.category = "idle, started < 10m ago";
      apply(w, idle(rng));
      start = t1 - minutes(2, 9);
    } else {
      w.category = "idle, started 11-29m before T1";
      apply(w, idle(rng));
      start = t1 - minutes(11, 29);
    }
    if (partner != nullptr) {
      w.shared = partner->shared = true;
      Pod p{w.name, rng.uuid(), "notebook", start, partner->pods[0].devices};
      w.pods.push_back(std::move(p));
    } else {
      add_pod(w, w.name, "notebook", start, 2);
    }
    if (shared_left > 0) --shared_left;
    c.workloads.push_back(std::move(w));
  }

  for (int i = 0; i < n_inference; ++i) {
    Workload w;
    base(w, "inference", i);
    w.ns = w.group + "-serving";
    w.pool = rng.chance(0.7) ? kInferencePool : kL40sPool;
    const double u = rng.uniform(0, 1);
    w.capacity_role = u < 0.3 ? "serving-floor" : u < 0.5 ? "burst-headroom" : "";
    w.category = w.capacity_role.empty() ? "serving" : w.capacity_role;
    apply(w, {rng.uniform(5, 70), 10, rng.uniform(0.5, 0.9), rng.uniform(0.2, 0.7)});
    const std::int64_t start = t1 - minutes(60, 240 * 60);
    w.has_uid = false;
    if (rng.chance(0.6)) {
      w.kind = "InferenceService";
      add_pod(w, w.name + "-predictor-" + rng.hex(10) + "-" + rng.hex(5), "kserve-container", start, 2);
    } else {
      w.kind = "LeaderWorkerSet";
      add_pod(w, w.name + "-0", "vllm", start, 1);
      add_pod(w, w.name + "-0-1", "vllm", start + rng.below(30), 1);
    }
    c.workloads.push_back(std::move(w));
  }

  for (int i = 0; i < n_batch; ++i) {
    Workload w;
    base(w, "batch", i);
    w.ns = w.group + "-batch";
    w.queue = w.group + "-batch";
    w.kind = "Job";
    w.pool = rng.chance(0.5) ? kTrainPool : kL40sPool;
    w.category = "busy";
    apply(w, {rng.uniform(30, 95), 10, rng.uniform(0.3, 0.8), rng.uniform(0.4, 0.85)});
    add_pod(w, w.name + "-" + rng.hex(5), "main", t1 - minutes(70, 600), 2);
    c.workloads.push_back(std::move(w));
  }

  // The GPUs time-slicing saved stay in the cluster, unallocated.
  c.unallocated = c.shared_notebooks;
  for (int i = 0; i < c.unallocated; ++i) placer.place(kDevPool, 1);

  for (int i = 0; i < 24; ++i) {
    const int lender = rng.below(kGroupCount);
    const int borrower = (lender + 1 + rng.below(kGroupCount - 1)) % kGroupCount;
    c.loans.push_back({kPools[i % 2 == 0 ? kTrainPool : kInferencePool].name, kGroups[lender], kGroups[borrower],
                       static_cast<double>(2 + rng.below(31))});
  }

  for (std::size_t wi = 0; wi < c.workloads.size(); ++wi) {
    Workload& w = c.workloads[wi];
    for (std::size_t pi = 0; pi < w.pods.size(); ++pi) {
      for (int d : w.pods[pi].devices) {
        c.devices[static_cast<std::size_t>(d)].holders.push_back({static_cast<int>(wi), static_cast<int>(pi)});
      }
    }
  }
  return c;
}

}  // namespace gpubank::bench::scan
