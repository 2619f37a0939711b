#include "policy_generator.hpp"

#include <array>
#include <cstdio>
#include <map>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

namespace gpubank::bench {
namespace {

// Deterministic draws: std::mt19937_64's sequence is fixed by the standard, and the
// bounded draw below is ours (slightly biased, which does not matter here).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  // Uniform-ish in [lo, hi].
  int between(int lo, int hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<int>(engine_() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  bool chance(int percent) { return between(1, 100) <= percent; }
  template <class T, std::size_t N>
  const T& pick(const std::array<T, N>& items) {
    return items[static_cast<std::size_t>(between(0, static_cast<int>(N) - 1))];
  }

 private:
  std::mt19937_64 engine_;
};

std::string padded(int value, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*d", width, value);
  return buf;
}

std::string str(int v) { return std::to_string(v); }

constexpr std::array<const char*, 5> kModels{"H100", "A100", "L40S", "H200", "B200"};

struct PoolInfo {
  std::string name;
  std::string model;
  std::string role;  // training, inference, burst
  int capacity = 0;
  int committed = 0;  // guarantees plus every temporary lease on the pool (kept below capacity)
  [[nodiscard]] bool serves_inference() const { return role == "inference" || role == "burst"; }
};

struct Limit {
  int pool = 0;
  int min_guaranteed = 0;
  int max_capacity = 0;
};

struct GroupInfo {
  std::string name;
  std::string namespace_;
  std::vector<Limit> limits;
};

struct QuotaInfo {
  int guaranteed = 0;
  int max_capacity = 0;  // effective
};

struct InferenceInfo {
  std::string name;
  int pool = 0;
  int min_replicas = 0;
  int max_replicas = 0;
};

class Generator {
 public:
  explicit Generator(const GeneratorOptions& o) : o_(o), rng_(o.seed) {}

  GeneratedSet run() {
    if (o_.pools_per_group > o_.pools) throw std::invalid_argument("pools_per_group > pools");
    if (o_.low_utilization_policies > o_.groups * 4 * (o_.pools_per_group + 1)) {
      throw std::invalid_argument("more low-utilization policies than distinct matches");
    }
    make_pools();
    make_groups();
    guardrails();
    quotas();
    inference();
    low_utilization();
    leases();
    tidal();
    for (const auto& p : pools_) {
      if (p.committed > p.capacity) throw std::logic_error("generator overcommitted pool " + p.name);
    }
    return std::move(out_);
  }

 private:
  void begin(const char* kind, const std::string& name) {
    if (out_.objects > 0) y_ += "---\n";
    ++out_.objects;
    y_ += "apiVersion: platform.gpubank.dev/v1alpha1\nkind: ";
    y_ += kind;
    y_ += "\nmetadata:\n  name: " + name + "\n";
  }

  // ---- the shape of the platform -------------------------------------------------------

  void make_pools() {
    // Roles by index: two training pools, then an inference and a burst pool.
    constexpr std::array<const char*, 4> kRoles{"training", "training", "inference", "burst"};
    for (int i = 0; i < o_.pools; ++i) {
      PoolInfo p;
      p.model = kModels[static_cast<std::size_t>(i) % kModels.size()];
      p.role = kRoles[static_cast<std::size_t>(i) % kRoles.size()];
      std::string lower = p.model;
      for (auto& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      p.name = lower + "-" + p.role + "-" + padded(i, 2);
      p.capacity = o_.pool_capacity;
      pools_.push_back(std::move(p));
    }
  }

  void make_groups() {
    for (int g = 0; g < o_.groups; ++g) {
      GroupInfo group;
      group.name = "team-" + padded(g, 3);
      group.namespace_ = group.name;
      // 3 is coprime with the pool count used here (40), so the pools are distinct and
      // every group gets each role.
      for (int k = 0; k < o_.pools_per_group; ++k) {
        Limit l;
        l.pool = (g + 3 * k) % o_.pools;
        l.min_guaranteed = rng_.between(0, 2);
        l.max_capacity = 64;
        group.limits.push_back(l);
      }
      groups_.push_back(std::move(group));
    }
  }

  void guardrails() {
    begin("PlatformGuardrails", "platform");
    y_ += "spec:\n  platformAdmins:\n  - group:gpubank-platform-admins\n  pools:\n";
    for (const auto& p : pools_) {
      y_ += "  - name: " + p.name + "\n    gpuModel: " + p.model + "\n    partition: full\n    sharing: exclusive\n";
      y_ += "    capacity: " + str(p.capacity) + "\n    role: " + p.role + "\n    gpusPerNode: 8\n";
      y_ += "    nodeLabels:\n      platform.gpubank.dev/pool: " + p.name + "\n";
      y_ += "      nvidia.com/gpu.product: NVIDIA-" + p.model + "\n";
      y_ += "    taints:\n    - {key: platform.gpubank.dev/pool, value: " + p.name + ", effect: NoSchedule}\n";
    }
    y_ += "  groups:\n";
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const auto& group = groups_[g];
      y_ += "  - name: " + group.name + "\n    costCenter: CC-" + padded(static_cast<int>(1000 + g), 4) + "\n";
      y_ += "    admins: [group:" + group.name + "-admins]\n    members: [group:" + group.name + "-engineers]\n";
      y_ += "    namespaces: [" + group.namespace_ + ", " + group.namespace_ + "-batch]\n    limits:\n";
      for (const auto& l : group.limits) {
        y_ += "      " + pools_[static_cast<std::size_t>(l.pool)].name + ": {minGuaranteed: " + str(l.min_guaranteed) +
              ", maxCapacity: " + str(l.max_capacity) + "}\n";
      }
    }
    y_ += "  priorities:\n";
    y_ += "  - {name: inference-critical, value: 100000, workloadTypes: [inference], preemptible: false}\n";
    y_ += "  - {name: training-high, value: 50000, workloadTypes: [training], groups: [";
    for (int g = 0; g < 10 && g < o_.groups; ++g) y_ += (g > 0 ? ", " : "") + groups_[static_cast<std::size_t>(g)].name;
    y_ += "]}\n";
    y_ += "  - {name: training-standard, value: 10000, workloadTypes: [training, batch]}\n";
    y_ += "  - {name: batch-low, value: 1000, workloadTypes: [batch, training]}\n";
    y_ += "  - {name: notebook, value: 500, workloadTypes: [notebook]}\n";
    y_ += "  protectedWorkloadTypes: [inference]\n  maxGracePeriod: 30m\n  maxLeaseDuration: 24h\n";
    // A price for each model a pool has (guardrails.price-model-mismatch warns on others).
    constexpr std::array<const char*, 5> kPrices{"3.5", "1.6", "1.1", "4.2", "6"};
    y_ += "  gpuHourPrice: {";
    for (std::size_t m = 0; m < kModels.size() && m < static_cast<std::size_t>(o_.pools); ++m) {
      y_ += std::string(m > 0 ? ", " : "") + kModels[m] + ": " + kPrices[m];
    }
    y_ += "}\n  currency: USD\n";
  }

  // ---- GPUQuotaPolicy: one per group and pool it has limits on ---------------------------

  void quotas() {
    constexpr std::array<const char*, 4> kPreempt{"[batch]", "[checkpointable]", "[batch, checkpointable]",
                                                  "[checkpointable, training]"};
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const auto& group = groups_[g];
      for (const auto& l : group.limits) {
        PoolInfo& pool = pools_[static_cast<std::size_t>(l.pool)];
        // Inference pools get a guarantee big enough for a few replicas of any shape.
        const bool inference = pool.serves_inference();
        const int guaranteed = rng_.between(inference ? 8 : l.min_guaranteed, 16);
        const int borrow = rng_.between(inference ? 8 : 0, 32);
        begin("GPUQuotaPolicy", group.name + "-" + pool.name);
        y_ += "spec:\n  businessGroup: " + group.name + "\n  resourcePool: " + pool.name + "\n";
        y_ += "  guaranteed: " + str(guaranteed) + "\n  borrowLimit: " + str(borrow) + "\n";
        if (rng_.chance(50)) y_ += "  lendingLimit: " + str(rng_.between(0, guaranteed)) + "\n";
        QuotaInfo q{guaranteed, guaranteed + borrow};
        if (rng_.chance(50)) {
          q.max_capacity = rng_.between(guaranteed, guaranteed + borrow);
          y_ += "  maxCapacity: " + str(q.max_capacity) + "\n";
        }
        if (rng_.chance(30)) y_ += "  fairShareWeight: " + str(rng_.between(1, 4)) + "\n";
        if (rng_.chance(50)) {
          y_ += "  reclaimPolicy: {gracePeriod: " + str(rng_.between(1, 30)) + "m, onlyPreempt: " + rng_.pick(kPreempt) +
                "}\n";
        }
        pool.committed += guaranteed;
        quotas_[{g, l.pool}] = q;
        ++out_.quotas;
      }
    }
  }

  // ---- InferenceScalingPolicy: within the group's quota on an inference pool -------------

  void inference() {
    constexpr std::array<const char*, 4> kRefKinds{"InferenceService", "LLMInferenceService", "Deployment",
                                                   "RayService"};
    constexpr std::array<int, 4> kTp{1, 2, 4, 8};
    for (int i = 0; i < o_.inference_policies; ++i) {
      const std::size_t g = static_cast<std::size_t>(i % o_.groups);
      const auto& group = groups_[g];
      std::vector<int> candidates;
      for (const auto& l : group.limits) {
        if (pools_[static_cast<std::size_t>(l.pool)].serves_inference()) candidates.push_back(l.pool);
      }
      if (candidates.empty()) throw std::invalid_argument("a group has no inference pool");
      const int pool = candidates[static_cast<std::size_t>(i / o_.groups) % candidates.size()];
      const QuotaInfo& q = quotas_.at({g, pool});
      const int tp = rng_.pick(kTp);  // <= 8: fits a node and the smallest inference guarantee
      const int max_replicas = rng_.between(1, q.max_capacity / tp);
      const int min_replicas = rng_.between(0, std::min(max_replicas, q.guaranteed / tp));
      const int queue_up = rng_.between(4, 32);
      InferenceInfo info{"svc-" + padded(i, 5), pool, min_replicas, max_replicas};

      begin("InferenceScalingPolicy", info.name);
      y_ += "spec:\n  workloadRef: {kind: " + std::string(kRefKinds[static_cast<std::size_t>(i) % (o_.keda_scalable_refs ? 3 : kRefKinds.size())]) +
            ", name: " + info.name + ", namespace: " + group.namespace_ + "}\n";
      y_ += "  businessGroup: " + group.name + "\n  resourcePool: " + pools_[static_cast<std::size_t>(pool)].name + "\n";
      y_ += "  replicaShape: {tensorParallelSize: " + str(tp) + ", gpuPerReplica: " + str(tp) + "}\n";
      y_ += "  minReplicas: " + str(min_replicas) + "\n  maxReplicas: " + str(max_replicas) + "\n";
      y_ += "  scaleUp: {queueDepthPerReplica: " + str(queue_up) + ", ttftP95: " + str(rng_.between(2, 30) * 100) +
            "ms, kvCacheHighWatermark: " + str(rng_.between(70, 95)) + ", stabilizationWindow: 30s}\n";
      y_ += "  scaleDown: {queueDepthPerReplica: " + str(rng_.between(0, queue_up - 1)) +
            ", stabilizationWindow: 10m, drainTimeout: " + str(rng_.between(1, 20)) + "m}\n";
      y_ += "  modelLoadTime: " + str(rng_.between(1, 10)) + "m\n";
      inference_.push_back(std::move(info));
      ++out_.inference;
    }
  }

  // ---- LowUtilizationPolicy: distinct (workload type, group, pool) matches ---------------

  void low_utilization() {
    constexpr std::array<const char*, 4> kTypes{"training", "inference", "batch", "notebook"};
    const int per_round = o_.groups * static_cast<int>(kTypes.size());
    for (int i = 0; i < o_.low_utilization_policies; ++i) {
      const auto& group = groups_[static_cast<std::size_t>(i % o_.groups)];
      const char* type = kTypes[static_cast<std::size_t>((i / o_.groups) % static_cast<int>(kTypes.size()))];
      const int round = i / per_round;  // 0: the whole group; k: the group's k-th pool
      begin("LowUtilizationPolicy", group.name + "-" + type + "-idle-" + str(round));
      y_ += "spec:\n  match: {workloadType: " + std::string(type) + ", businessGroup: " + group.name;
      if (round > 0) {
        y_ += ", resourcePool: " + pools_[static_cast<std::size_t>(group.limits[static_cast<std::size_t>(round - 1)].pool)].name;
      }
      y_ += "}\n  window: " + str(rng_.between(15, 120)) + "m\n";
      y_ += "  thresholds: {averageGpuUtilization: " + str(rng_.between(2, 20));
      if (rng_.chance(50)) y_ += ", averageMemoryUtilization: " + str(rng_.between(5, 30));
      if (rng_.chance(30)) y_ += ", averagePowerFraction: " + str(rng_.between(10, 40));
      y_ += "}\n  startupGracePeriod: " + str(rng_.between(5, 60)) + "m\n";
      y_ += "  checkpointGracePeriod: " + str(rng_.between(5, 30)) + "m\n";
      y_ += "  notify: {first: owner, after: " + str(rng_.between(1, 4)) +
            "h, escalateTo: business-group-admin, repeatInterval: 6h}\n";
      y_ += "  excludeWhen:\n  - {label: platform.gpubank.dev/capacity-role, value: serving-floor}\n";
      y_ += "  - {annotation: platform.gpubank.dev/keep-running-until}\n";
      ++out_.low_utilization;
    }
  }

  // ---- CapacityLease: short, in 2026, within the group's cap and the pool ---------------

  static std::string timestamp_2026(int day_of_year, int hour) {
    constexpr std::array<int, 12> kDays{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int month = 0;
    while (day_of_year >= kDays[static_cast<std::size_t>(month)]) day_of_year -= kDays[static_cast<std::size_t>(month++)];
    return "2026-" + padded(month + 1, 2) + "-" + padded(day_of_year + 1, 2) + "T" + padded(hour, 2) + ":00:00Z";
  }

  void leases() {
    for (int i = 0; i < o_.leases; ++i) {
      const std::size_t g = static_cast<std::size_t>(i % o_.groups);
      const auto& group = groups_[g];
      const Limit& limit = group.limits[static_cast<std::size_t>(rng_.between(0, o_.pools_per_group - 1))];
      PoolInfo& pool = pools_[static_cast<std::size_t>(limit.pool)];
      const int day = rng_.between(0, 364);
      const int start_hour = rng_.between(0, 3);
      const int end_hour = start_hour + rng_.between(1, 20);  // well within maxLeaseDuration 24h
      begin("CapacityLease", group.name + "-lease-" + padded(i, 4));
      y_ += "spec:\n  businessGroup: " + group.name + "\n  resourcePool: " + pool.name + "\n";
      if (rng_.chance(60)) {
        const QuotaInfo& q = quotas_.at({g, limit.pool});
        const int extra = std::min(rng_.between(1, 8), limit.max_capacity - q.guaranteed);
        y_ += "  type: TemporaryQuota\n  extraGuaranteed: " + str(extra) + "\n";
        pool.committed += extra;  // counted as if every lease overlapped, as validation does
      } else {
        y_ += "  type: Protection\n  selector:\n    matchLabels: {app: job-" + padded(i, 4) + "}\n";
      }
      y_ += "  start: \"" + timestamp_2026(day, start_hour) + "\"\n  end: \"" + timestamp_2026(day, end_hour) + "\"\n";
      y_ += "  reason: Release-blocking work for quarter " + str(day / 92 + 1) + " (ticket GPU-" + padded(i, 5) + ")\n";
      ++out_.leases;
    }
  }

  // ---- TidalPolicy: day serving / night training on distinct inference pools ------------

  void tidal() {
    constexpr std::array<const char*, 4> kZones{"Asia/Shanghai", "Europe/Berlin", "America/New_York", "UTC"};
    std::vector<int> pools;
    for (int p = 0; p < o_.pools; ++p) {
      if (pools_[static_cast<std::size_t>(p)].serves_inference()) pools.push_back(p);
    }
    if (static_cast<std::size_t>(o_.tidal_policies) > pools.size()) throw std::invalid_argument("too many tidal policies");
    for (int t = 0; t < o_.tidal_policies; ++t) {
      const int pool = pools[static_cast<std::size_t>(t)];
      std::vector<const InferenceInfo*> targets;  // one tidal policy per inference service
      for (const auto& ip : inference_) {
        if (ip.pool == pool && ip.max_replicas >= 1 && targets.size() < 3) targets.push_back(&ip);
      }
      if (targets.empty()) throw std::invalid_argument("no inference policy on a tidal pool");
      auto floors = [&](bool day) {
        std::string s = "{";
        for (std::size_t k = 0; k < targets.size(); ++k) {
          const int floor = day ? targets[k]->max_replicas : std::max(targets[k]->min_replicas, 1);
          s += (k > 0 ? ", " : "") + targets[k]->name + ": " + str(floor);
        }
        return s + "}";
      };
      begin("TidalPolicy", "tidal-" + pools_[static_cast<std::size_t>(pool)].name);
      y_ += "spec:\n  timezone: " + std::string(kZones[static_cast<std::size_t>(t) % kZones.size()]) + "\n  windows:\n";
      y_ += "  - name: daytime-serving\n    start: \"30 8 * * 1-5\"\n    end: \"0 20 * * 1-5\"\n";
      y_ += "    inferenceReplicaFloor: " + floors(true) + "\n    prewarmBefore: 30m\n    trainingBorrowLimit: 8\n";
      y_ += "  - name: nighttime-training\n    start: \"0 20 * * 1-5\"\n    end: \"30 7 * * 2-6\"\n";
      y_ += "    inferenceReplicaFloor: " + floors(false) + "\n    trainingBorrowLimit: 40\n";
      y_ += "  reclaim: {checkpointBefore: 30m, gracePeriod: 10m}\n  targets:\n    inferencePolicies: [";
      for (std::size_t k = 0; k < targets.size(); ++k) y_ += (k > 0 ? ", " : "") + targets[k]->name;
      y_ += "]\n    trainingGroups: [" + groups_[static_cast<std::size_t>(t)].name + ", " +
            groups_[static_cast<std::size_t>(t + 1) % groups_.size()].name + "]\n";
      y_ += "    resourcePool: " + pools_[static_cast<std::size_t>(pool)].name + "\n";
      ++out_.tidal;
    }
  }

  const GeneratorOptions& o_;
  Rng rng_;
  GeneratedSet out_;
  std::string& y_ = out_.yaml;
  std::vector<PoolInfo> pools_;
  std::vector<GroupInfo> groups_;
  std::map<std::pair<std::size_t, int>, QuotaInfo> quotas_;
  std::vector<InferenceInfo> inference_;
};

}  // namespace

GeneratedSet generate_policy_set(const GeneratorOptions& options) { return Generator(options).run(); }

}  // namespace gpubank::bench
