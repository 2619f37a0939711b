#include "policy/validate.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "document/decode.hpp"
#include "policy/lease_approval.hpp"
#include "policy/low_utilization.hpp"
#include "policy/rules.hpp"
#include "policy/schema.hpp"
#include "policy/tidal_windows.hpp"
#include "policy/workload.hpp"

namespace gpubank::policy {
namespace {

std::string idx(std::string_view base, std::size_t i) { return std::string(base) + "[" + std::to_string(i) + "]"; }

std::string local_time(std::chrono::sys_seconds t, const date::time_zone& zone) {
  return date::format("%a %Y-%m-%d %H:%M %Z", date::make_zoned(&zone, t));
}

template <class T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

class Validator {
 public:
  Validator(const PolicySet& set, const ValidationOptions& options)
      : set_(set), options_(options), g_(set.guardrails_spec()) {}

  Diagnostics run() {
    check_duplicates();
    const PolicyObject* primary = set_.guardrails();
    if (primary == nullptr && !set_.policies().empty()) {
      out_.push_back(Diagnostic{Severity::Error, std::string(rule::kGuardrailsMissing), {}, {}, {}, {}, {},
                                "the policies are checked against a PlatformGuardrails object, and none was given "
                                "(add the guardrails file to the paths)"});
    }
    index_quotas();
    for (const auto& o : set_.policies()) {
      switch (o.kind) {
        case Kind::PlatformGuardrails:
          if (&o != primary) {
            report(o, rule::kGuardrailsSingleton, "metadata.name",
                   "there is one PlatformGuardrails per platform; " + primary->ref() + " is already defined" +
                       at(*primary) + " (only that one is used)");
          }
          check_guardrails(o);
          break;
        case Kind::GPUQuotaPolicy: check_quota(o); break;
        case Kind::InferenceScalingPolicy: check_inference(o); break;
        case Kind::TidalPolicy: check_tidal(o); break;
        case Kind::CapacityLease: check_lease(o); break;
        case Kind::LowUtilizationPolicy: check_low_utilization(o); break;
      }
    }
    check_quota_sums();
    check_workloads();
    return std::move(out_);
  }

 private:
  void report(const PolicyObject& o, std::string_view rule, const std::string& path, std::string message,
              Severity severity = Severity::Error) {
    out_.push_back(Diagnostic{severity, std::string(rule), o.origin.file, o.position_of(path),
                              std::string(kind_name(o.kind)), o.name(), path, std::move(message)});
  }

  static std::string at(const PolicyObject& o) {
    if (o.origin.file.empty()) return "";
    return " at " + o.origin.file + (o.origin.pos.line > 0 ? ":" + std::to_string(o.origin.pos.line) : "");
  }

  // ---- whole set ---------------------------------------------------------------------

  void check_duplicates() {
    std::map<std::pair<Kind, std::string>, const PolicyObject*> seen;
    for (const auto& o : set_.policies()) {
      auto [it, fresh] = seen.emplace(std::pair{o.kind, o.name()}, &o);
      if (!fresh) {
        report(o, rule::kDuplicateObject, "metadata.name", o.ref() + " is defined twice; the first is" + at(*it->second));
      }
    }
  }

  // Quotas by (group, pool), the guarantees per pool, and temporary-quota leases per pool,
  // so that the per-object checks stay linear in the size of the set.
  void index_quotas() {
    for (const auto& o : set_.policies()) {
      if (o.kind == Kind::GPUQuotaPolicy) {
        const auto& q = o.as<GPUQuotaPolicySpec>();
        if (quotas_.emplace(std::pair{q.business_group, q.resource_pool}, &o).second) {  // first one wins
          pool_guaranteed_[q.resource_pool] += q.guaranteed;
        }
      } else if (o.kind == Kind::CapacityLease) {
        const auto& l = o.as<CapacityLeaseSpec>();
        if (l.type == LeaseType::TemporaryQuota && l.extra_guaranteed) temporary_quotas_[l.resource_pool].push_back(&o);
      }
    }
  }

  const GPUQuotaPolicySpec* quota_of(const std::string& group, const std::string& pool) const {
    auto it = quotas_.find({group, pool});
    return it == quotas_.end() ? nullptr : &it->second->as<GPUQuotaPolicySpec>();
  }

  // group.unknown / pool.unknown for a reference; returns the found objects.
  const Group* known_group(const PolicyObject& o, const std::string& name, const std::string& path) {
    if (g_ == nullptr) return nullptr;
    const Group* group = g_->find_group(name);
    if (group == nullptr) {
      report(o, rule::kGroupUnknown, path, "business group \"" + name + "\" is not defined in the guardrails" + groups_hint());
    }
    return group;
  }
  const Pool* known_pool(const PolicyObject& o, const std::string& name, const std::string& path) {
    if (g_ == nullptr) return nullptr;
    const Pool* pool = g_->find_pool(name);
    if (pool == nullptr) {
      report(o, rule::kPoolUnknown, path, "resource pool \"" + name + "\" is not defined in the guardrails" + pools_hint());
    }
    return pool;
  }
  std::string groups_hint() const {
    std::string s;
    for (const auto& g : g_->groups) s += (s.empty() ? "" : ", ") + g.name;
    return " (defined: " + s + ")";
  }
  std::string pools_hint() const {
    std::string s;
    for (const auto& p : g_->pools) s += (s.empty() ? "" : ", ") + p.name;
    return " (defined: " + s + ")";
  }

  void check_grace(const PolicyObject& o, const std::optional<Duration>& grace, const std::string& path) {
    if (g_ == nullptr || !grace || *grace <= g_->max_grace_period) return;
    report(o, rule::kGracePeriodExceedsMax, path,
           "grace period " + grace->to_string() + " is above the platform's maxGracePeriod " +
               g_->max_grace_period.to_string());
  }

  // ---- PlatformGuardrails ------------------------------------------------------------

  void check_guardrails(const PolicyObject& o) {
    const auto& g = o.as<PlatformGuardrailsSpec>();
    auto unique_names = [&](const auto& items, std::string_view base, std::string_view what) {
      std::set<std::string> seen;
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (!seen.insert(items[i].name).second) {
          report(o, rule::kGuardrailsDuplicateName, idx(base, i) + ".name",
                 std::string(what) + " \"" + items[i].name + "\" is defined more than once");
        }
      }
    };
    unique_names(g.pools, "spec.pools", "pool");
    unique_names(g.groups, "spec.groups", "business group");
    unique_names(g.priorities, "spec.priorities", "priority class");

    std::map<std::string, std::int64_t> min_sum;  // 64-bit: a sum of int32 limits
    std::map<std::string, std::string> ns_owner;
    for (std::size_t i = 0; i < g.groups.size(); ++i) {
      const Group& group = g.groups[i];
      for (const auto& [pool_name, limit] : group.limits) {
        const std::string path = idx("spec.groups", i) + ".limits." + pool_name;
        const Pool* pool = g.find_pool(pool_name);
        if (pool == nullptr) {
          report(o, rule::kPoolUnknown, path, "limits name pool \"" + pool_name + "\", which is not in spec.pools");
          continue;
        }
        if (limit.min_guaranteed > limit.max_capacity) {
          report(o, rule::kGuardrailsLimitRange, path + ".minGuaranteed",
                 "minGuaranteed " + std::to_string(limit.min_guaranteed) + " is above maxCapacity " +
                     std::to_string(limit.max_capacity));
        }
        if (limit.max_capacity > pool->capacity) {
          report(o, rule::kGuardrailsLimitRange, path + ".maxCapacity",
                 "maxCapacity " + std::to_string(limit.max_capacity) + " is above the capacity " +
                     std::to_string(pool->capacity) + " of pool " + pool_name);
        }
        min_sum[pool_name] += limit.min_guaranteed;
      }
      const bool defaulted = group.namespaces.empty();
      const auto namespaces = group.effective_namespaces();
      for (std::size_t k = 0; k < namespaces.size(); ++k) {
        auto [it, fresh] = ns_owner.emplace(namespaces[k], group.name);
        if (!fresh && it->second != group.name) {
          report(o, rule::kGuardrailsNamespaceConflict,
                 defaulted ? idx("spec.groups", i) + ".name" : idx(idx("spec.groups", i) + ".namespaces", k),
                 "namespace \"" + namespaces[k] + "\" belongs to group " + it->second + " already" +
                     (defaulted ? " (a group without namespaces owns the namespace of its own name)" : ""));
        }
      }
    }
    for (std::size_t i = 0; i < g.pools.size(); ++i) {
      const Pool& pool = g.pools[i];
      if (auto it = min_sum.find(pool.name); it != min_sum.end() && it->second > pool.capacity) {
        report(o, rule::kGuardrailsMinGuaranteedExceedsPool, idx("spec.pools", i) + ".capacity",
               "the groups' minGuaranteed on pool " + pool.name + " add up to " + std::to_string(it->second) +
                   ", above its capacity " + std::to_string(pool.capacity) + ": not every group can get its minimum");
      }
      for (std::size_t j = 0; j < i; ++j) {
        const Pool& other = g.pools[j];
        if (other.flavor_key() == pool.flavor_key() && other.node_labels == pool.node_labels) {
          report(o, rule::kGuardrailsPoolsIndistinguishable, idx("spec.pools", i) + ".nodeLabels",
                 "pools " + other.name + " and " + pool.name + " are both " + pool.flavor_key() +
                     " with the same node labels, so they would share GPUs; give them different nodeLabels");
        }
      }
    }
    for (std::size_t i = 0; i < g.priorities.size(); ++i) {
      const auto& groups = g.priorities[i].groups;
      for (std::size_t k = 0; k < groups.size(); ++k) {
        if (g.find_group(groups[k]) == nullptr) {
          report(o, rule::kGroupUnknown, idx(idx("spec.priorities", i) + ".groups", k),
                 "priority class " + g.priorities[i].name + " names business group \"" + groups[k] +
                     "\", which is not in spec.groups");
        }
      }
    }
    if (!g.gpu_hour_price.empty()) {
      for (std::size_t i = 0; i < g.pools.size(); ++i) {
        if (!g.gpu_hour_price.contains(g.pools[i].gpu_model)) {
          report(o, rule::kGuardrailsPriceModelMismatch, idx("spec.pools", i) + ".gpuModel",
                 "GPU model " + g.pools[i].gpu_model + " has no entry in gpuHourPrice; showback will price it at 0",
                 Severity::Warning);
        }
      }
      for (const auto& entry : g.gpu_hour_price) {
        // Not a structured binding: clang < 16 cannot capture one in the lambda below.
        const std::string& model = entry.first;
        const auto& price = entry.second;
        const bool used = std::any_of(g.pools.begin(), g.pools.end(), [&](const Pool& p) { return p.gpu_model == model; });
        if (!used) {
          report(o, rule::kGuardrailsPriceModelMismatch, "spec.gpuHourPrice." + model,
                 "gpuHourPrice names GPU model " + model + ", which no pool has", Severity::Warning);
        }
        if (price < 0) {
          report(o, rule::kOutOfRange, "spec.gpuHourPrice." + model, "a price must not be negative");
        }
      }
    }
  }

  // ---- GPUQuotaPolicy ----------------------------------------------------------------

  void check_quota(const PolicyObject& o) {
    const auto& q = o.as<GPUQuotaPolicySpec>();
    // 64-bit: guaranteed and borrowLimit are int32s, their sum may not be.
    const std::int64_t uncapped = std::int64_t{q.guaranteed} + q.borrow_limit;
    if (q.lending_limit && *q.lending_limit > q.guaranteed) {
      report(o, rule::kQuotaLendingLimitRange, "spec.lendingLimit",
             "lendingLimit " + std::to_string(*q.lending_limit) + " is above guaranteed " +
                 std::to_string(q.guaranteed) + ": a group can lend at most its own unused guarantee");
    }
    if (q.max_capacity && (*q.max_capacity < q.guaranteed || *q.max_capacity > uncapped)) {
      report(o, rule::kQuotaMaxCapacityRange, "spec.maxCapacity",
             "maxCapacity " + std::to_string(*q.max_capacity) + " must be between guaranteed " +
                 std::to_string(q.guaranteed) + " and guaranteed + borrowLimit " + std::to_string(uncapped));
    }
    if (q.reclaim_policy) check_grace(o, q.reclaim_policy->grace_period, "spec.reclaimPolicy.gracePeriod");
    const Group* group = known_group(o, q.business_group, "spec.businessGroup");
    const Pool* pool = known_pool(o, q.resource_pool, "spec.resourcePool");
    // Whatever caps the queue, a borrowLimit above the whole pool promises GPUs that do
    // not exist (and maxCapacity may hide it only until someone removes maxCapacity).
    const bool borrow_exceeds_pool = pool != nullptr && q.borrow_limit > pool->capacity;
    if (borrow_exceeds_pool) {
      report(o, rule::kQuotaBorrowLimitExceedsPool, "spec.borrowLimit",
             "borrowLimit " + std::to_string(q.borrow_limit) + " is above the capacity " +
                 std::to_string(pool->capacity) + " of pool " + pool->name +
                 ": a group cannot borrow more GPUs than the pool has");
    }
    if (auto it = quotas_.find({q.business_group, q.resource_pool}); it != quotas_.end() && it->second != &o) {
      report(o, rule::kQuotaDuplicate, "spec.resourcePool",
             "group " + q.business_group + " already has a quota on pool " + q.resource_pool + ": " + it->second->ref() +
                 at(*it->second));
      return;
    }
    if (group == nullptr || pool == nullptr) return;
    auto limit_it = group->limits.find(q.resource_pool);
    if (limit_it == group->limits.end()) {
      report(o, rule::kQuotaPoolNotAllowed, "spec.resourcePool",
             "business group " + group->name + " has no limits on pool " + pool->name +
                 " in the guardrails, so it may not hold quota there");
      return;
    }
    const GroupPoolLimit& limit = limit_it->second;
    const std::string range =
        std::to_string(limit.min_guaranteed) + ".." + std::to_string(limit.max_capacity);
    if (q.guaranteed < limit.min_guaranteed || q.guaranteed > limit.max_capacity) {
      report(o, rule::kQuotaGuaranteedOutsideGuardrail, "spec.guaranteed",
             "guaranteed " + std::to_string(q.guaranteed) + " is outside the guardrail range " + range + " of group " +
                 group->name + " on pool " + pool->name);
      return;  // the derived bounds below would only repeat this
    }
    // The hard cap is maxCapacity when set, else guaranteed + borrowLimit; whichever
    // field defines it answers for it.
    if (!q.max_capacity && !borrow_exceeds_pool && uncapped > limit.max_capacity) {
      report(o, rule::kQuotaBorrowLimitOutsideGuardrail, "spec.borrowLimit",
             "guaranteed " + std::to_string(q.guaranteed) + " + borrowLimit " + std::to_string(q.borrow_limit) + " = " +
                 std::to_string(uncapped) + " is above the guardrail maxCapacity " +
                 std::to_string(limit.max_capacity) + " of group " + group->name + " on pool " + pool->name +
                 " (lower borrowLimit, or cap it with maxCapacity)");
    }
    if (q.max_capacity && *q.max_capacity > limit.max_capacity) {
      report(o, rule::kQuotaMaxCapacityOutsideGuardrail, "spec.maxCapacity",
             "maxCapacity " + std::to_string(*q.max_capacity) + " is above the guardrail maxCapacity " +
                 std::to_string(limit.max_capacity) + " of group " + group->name + " on pool " + pool->name);
    }
  }

  void check_quota_sums() {
    if (g_ == nullptr) return;
    struct PoolSum {
      std::int64_t sum = 0;  // of int32 guarantees
      std::string parts;
      bool reported = false;
    };
    std::map<std::string, PoolSum> sums;
    for (const auto& o : set_.policies()) {
      if (o.kind != Kind::GPUQuotaPolicy) continue;
      const auto& q = o.as<GPUQuotaPolicySpec>();
      if (quotas_.at({q.business_group, q.resource_pool}) != &o) continue;  // duplicates are reported already
      const Pool* pool = g_->find_pool(q.resource_pool);
      if (pool == nullptr) continue;
      PoolSum& s = sums[q.resource_pool];
      s.sum += q.guaranteed;
      s.parts += (s.parts.empty() ? "" : " + ") + q.business_group + " " + std::to_string(q.guaranteed);
      if (s.sum > pool->capacity && !s.reported) {
        s.reported = true;
        report(o, rule::kQuotaSumExceedsPool, "spec.guaranteed",
               "guarantees on pool " + pool->name + " add up to " + std::to_string(s.sum) + " (" + s.parts +
                   "), above its capacity " + std::to_string(pool->capacity));
      }
    }
  }

  // ---- InferenceScalingPolicy --------------------------------------------------------

  void check_inference(const PolicyObject& o) {
    const auto& p = o.as<InferenceScalingPolicySpec>();
    const auto& shape = p.replica_shape;
    if (shape.gpu_per_replica % shape.tensor_parallel_size != 0) {
      report(o, rule::kInferenceShapeTpMultiple, "spec.replicaShape.gpuPerReplica",
             "gpuPerReplica " + std::to_string(shape.gpu_per_replica) + " is not a multiple of tensorParallelSize " +
                 std::to_string(shape.tensor_parallel_size));
    }
    if (p.min_replicas > p.max_replicas) {
      report(o, rule::kInferenceReplicaRange, "spec.minReplicas",
             "minReplicas " + std::to_string(p.min_replicas) + " is above maxReplicas " + std::to_string(p.max_replicas));
    }
    const bool latency_or_queue =
        p.scale_up.queue_depth_per_replica || p.scale_up.ttft_p95 || p.scale_up.kv_cache_high_watermark;
    if (!latency_or_queue && !p.scale_up.requests_per_second_per_replica) {
      report(o, rule::kInferenceNoScaleUpSignal, "spec.scaleUp",
             "scaleUp needs at least one signal: queueDepthPerReplica, ttftP95, kvCacheHighWatermark or "
             "requestsPerSecondPerReplica");
    } else if (!latency_or_queue) {
      report(o, rule::kInferenceRateSignalAlone, "spec.scaleUp.requestsPerSecondPerReplica",
             "the request rate is measured as requests finished (vLLM's vllm:request_success_total): a saturated "
             "service finishes what its replicas serve, not what arrives, so this signal alone scales too little "
             "under overload; add queueDepthPerReplica or ttftP95",
             Severity::Warning);
    }
    if (p.effective_task() == ServingTask::Embed && p.scale_up.kv_cache_high_watermark) {
      report(o, rule::kInferenceKvSignalOnEmbed, "spec.scaleUp.kvCacheHighWatermark",
             "an embed service runs a pooling model, which frees its KV blocks when each step ends: the KV cache "
             "signal never reaches a watermark; scale on ttftP95 (the request's latency) and queueDepthPerReplica",
             Severity::Warning);
    }
    if (p.scale_up.queue_depth_per_replica && p.scale_down.queue_depth_per_replica &&
        *p.scale_down.queue_depth_per_replica >= *p.scale_up.queue_depth_per_replica) {
      report(o, rule::kInferenceScaleDownAboveScaleUp, "spec.scaleDown.queueDepthPerReplica",
             "scale-down queue depth " + std::to_string(*p.scale_down.queue_depth_per_replica) +
                 " must be below the scale-up queue depth " + std::to_string(*p.scale_up.queue_depth_per_replica) +
                 ", or the service flaps between the two");
    }
    const std::string target = std::string(doc::enum_name(p.workload_ref.kind)) + "/" + p.workload_ref.namespace_ +
                               "/" + p.workload_ref.name;
    if (auto [it, fresh] = inference_targets_.emplace(target, &o); !fresh) {
      report(o, rule::kInferenceDuplicateTarget, "spec.workloadRef",
             target + " is already scaled by " + it->second->ref() + at(*it->second));
    }
    const Group* group = known_group(o, p.business_group, "spec.businessGroup");
    const Pool* pool = known_pool(o, p.resource_pool, "spec.resourcePool");
    if (group != nullptr && !contains(group->effective_namespaces(), p.workload_ref.namespace_)) {
      report(o, rule::kInferenceNamespaceNotOwned, "spec.workloadRef.namespace",
             "namespace " + p.workload_ref.namespace_ + " does not belong to business group " + group->name);
    }
    if (pool != nullptr) {
      if (pool->role != PoolRole::Inference && pool->role != PoolRole::Burst) {
        report(o, rule::kInferencePoolRole, "spec.resourcePool",
               "pool " + pool->name + " has role " + std::string(doc::enum_name(pool->role)) +
                   "; inference policies need a pool with role inference or burst");
      }
      if (shape.tensor_parallel_size > 1 && (pool->partition != "full" || pool->sharing == Sharing::Shared)) {
        report(o, rule::kInferenceTpOnPartitionedGpu, "spec.replicaShape.tensorParallelSize",
               "tensor parallelism " + std::to_string(shape.tensor_parallel_size) + " needs whole GPUs that talk over "
               "NVLink; pool " + pool->name + " offers " + pool->flavor_key() + " devices");
      }
      if (pool->gpus_per_node) {
        const int per_node_capacity = *pool->gpus_per_node;
        if (shape.gpu_per_replica % shape.nodes_per_replica != 0) {
          report(o, rule::kInferenceShapeExceedsNode, "spec.replicaShape.nodesPerReplica",
                 "gpuPerReplica " + std::to_string(shape.gpu_per_replica) + " cannot be split evenly over " +
                     std::to_string(shape.nodes_per_replica) + " nodes");
        } else if (shape.gpu_per_replica / shape.nodes_per_replica > per_node_capacity) {
          report(o, rule::kInferenceShapeExceedsNode, "spec.replicaShape.gpuPerReplica",
                 "a replica needs " + std::to_string(shape.gpu_per_replica / shape.nodes_per_replica) +
                     " GPUs on each of " + std::to_string(shape.nodes_per_replica) + " node(s), but nodes of pool " +
                     pool->name + " have " + std::to_string(per_node_capacity) +
                     (shape.nodes_per_replica == 1 ? "; set nodesPerReplica for a multi-node replica" : ""));
        }
      }
    }
    if (group == nullptr || pool == nullptr) return;
    const GPUQuotaPolicySpec* quota = quota_of(p.business_group, p.resource_pool);
    if (quota == nullptr) {
      report(o, rule::kInferenceQuotaMissing, "spec.resourcePool",
             "business group " + group->name + " has no GPUQuotaPolicy on pool " + pool->name +
                 ", so the service could never get a replica there");
      return;
    }
    const long long needed = 1LL * p.max_replicas * shape.gpu_per_replica;
    if (needed > quota->effective_max_capacity()) {
      report(o, rule::kInferenceMaxExceedsQuota, "spec.maxReplicas",
             "maxReplicas " + std::to_string(p.max_replicas) + " x gpuPerReplica " +
                 std::to_string(shape.gpu_per_replica) + " = " + std::to_string(needed) + " GPUs, above the " +
                 std::to_string(quota->effective_max_capacity()) + " GPU maxCapacity of group " + group->name +
                 " on pool " + pool->name);
    }
    const long long floor = 1LL * p.min_replicas * shape.gpu_per_replica;
    if (floor > quota->guaranteed) {
      report(o, rule::kInferenceFloorAboveGuarantee, "spec.minReplicas",
             "the serving floor of " + std::to_string(p.min_replicas) + " replicas needs " + std::to_string(floor) +
                 " GPUs, above the group's guarantee of " + std::to_string(quota->guaranteed) +
                 " on pool " + pool->name + "; part of the floor would run on borrowed capacity",
             Severity::Warning);
    }
  }

  // ---- TidalPolicy -------------------------------------------------------------------

  void check_tidal(const PolicyObject& o) {
    const auto& t = o.as<TidalPolicySpec>();
    std::set<std::string> window_names;
    std::vector<WindowSchedule> schedules;
    bool schedules_ok = true;
    for (std::size_t i = 0; i < t.windows.size(); ++i) {
      const TidalWindow& w = t.windows[i];
      const std::string base = idx("spec.windows", i);
      if (!window_names.insert(w.name).second) {
        report(o, rule::kTidalDuplicateWindow, base + ".name", "window name \"" + w.name + "\" is used twice");
      }
      if (w.start.text() == w.end.text()) {
        report(o, rule::kTidalWindowStartEqualsEnd, base + ".end",
               "start and end are the same schedule \"" + w.end.text() + "\", so the window is never active");
        schedules_ok = false;
      }
      for (const auto& [schedule, field] : {std::pair{&w.start, "start"}, std::pair{&w.end, "end"}}) {
        if (!fires(*schedule, *t.timezone.zone)) {
          report(o, rule::kCronNeverFires, base + "." + field,
                 "cron \"" + schedule->text() + "\" never fires (no matching date exists)");
          schedules_ok = false;
        }
      }
      schedules.push_back(WindowSchedule{&w.start, &w.end});
      if (const auto gap = start_in_dst_gap(w.start, *t.timezone.zone)) {
        report(o, rule::kTidalStartInDstGap, base + ".start",
               "cron \"" + w.start.text() + "\" fires at " + date::format("%F %R", *gap) + ", which does not exist in " +
                   t.timezone.name + " (clocks skip it): KEDA's cron, like robfig's, does not fire then, so the window "
                   "does not open that day; start it outside the skipped hour",
               Severity::Warning);
      }
      if (w.inference_replica_floor) {
        const ReplicaFloor& floor = *w.inference_replica_floor;
        if (t.targets.inference_policies.empty()) {
          report(o, rule::kTidalFloorWithoutTarget, base + ".inferenceReplicaFloor",
                 "the window sets a replica floor, but targets.inferencePolicies is empty");
        }
        for (const auto& [name, value] : floor.per_policy) {
          if (!contains(t.targets.inference_policies, name)) {
            report(o, rule::kTidalUnknownInferencePolicy, base + ".inferenceReplicaFloor." + name,
                   "the floor names \"" + name + "\", which is not in targets.inferencePolicies");
          }
        }
      }
      if (w.training_borrow_limit && g_ != nullptr) {
        if (const Pool* pool = g_->find_pool(t.targets.resource_pool); pool != nullptr && *w.training_borrow_limit > pool->capacity) {
          report(o, rule::kTidalTrainingBorrowLimitExceedsPool, base + ".trainingBorrowLimit",
                 "trainingBorrowLimit " + std::to_string(*w.training_borrow_limit) + " is above the capacity " +
                     std::to_string(pool->capacity) + " of pool " + pool->name);
        }
      }
    }
    if (schedules_ok && schedules.size() > 1) {
      const std::optional<WindowOverlap>* cached =
          options_.overlaps != nullptr ? options_.overlaps->find(OverlapCache::key_of(t)) : nullptr;
      if (auto overlap = cached != nullptr ? *cached : find_overlap(schedules, *t.timezone.zone)) {
        const auto& a = t.windows[overlap->first];
        const auto& b = t.windows[overlap->second];
        report(o, rule::kTidalWindowsOverlap, idx("spec.windows", overlap->second) + ".start",
               "windows \"" + a.name + "\" and \"" + b.name + "\" are both active from " +
                   local_time(overlap->at, *t.timezone.zone) + " (" + t.timezone.name + ")");
      }
    }
    if (t.reclaim) check_grace(o, t.reclaim->grace_period, "spec.reclaim.gracePeriod");
    // The notices go out at the approaching, checkpointBefore ahead of the prewarm: a
    // longer grace leaves borrowers on the GPUs the prewarm needs.
    if (t.reclaim && t.reclaim->grace_period) {
      const Duration checkpoint = t.reclaim->checkpoint_before.value_or(Duration{});
      if (*t.reclaim->grace_period > checkpoint) {
        report(o, rule::kTidalGraceExceedsCheckpoint, "spec.reclaim.gracePeriod",
               "gracePeriod " + t.reclaim->grace_period->to_string() + " is longer than checkpointBefore " +
                   (t.reclaim->checkpoint_before ? checkpoint.to_string() : "(unset: 0s)") +
                   ": the borrowers' notices start checkpointBefore ahead of the prewarm, so they would still "
                   "hold the GPUs the prewarm needs");
      }
    }

    if (g_ == nullptr) return;
    const Pool* pool = known_pool(o, t.targets.resource_pool, "spec.targets.resourcePool");
    for (std::size_t k = 0; k < t.targets.training_groups.size(); ++k) {
      known_group(o, t.targets.training_groups[k], idx("spec.targets.trainingGroups", k));
    }
    for (std::size_t k = 0; k < t.targets.inference_policies.size(); ++k) {
      const std::string& name = t.targets.inference_policies[k];
      const std::string path = idx("spec.targets.inferencePolicies", k);
      const PolicyObject* target = set_.find(Kind::InferenceScalingPolicy, name);
      if (target == nullptr) {
        report(o, rule::kTidalUnknownInferencePolicy, path, "InferenceScalingPolicy \"" + name + "\" does not exist");
        continue;
      }
      if (auto [it, fresh] = tidal_targets_.emplace(name, &o); !fresh && it->second != &o) {
        report(o, rule::kTidalConflictingPolicies, path,
               "InferenceScalingPolicy " + name + " is already driven by " + it->second->ref() + at(*it->second) +
                   "; one tidal policy per inference service");
      }
      const auto& ip = target->as<InferenceScalingPolicySpec>();
      if (pool != nullptr && ip.resource_pool != pool->name) {
        report(o, rule::kTidalTargetPoolMismatch, path,
               "InferenceScalingPolicy " + name + " runs on pool " + ip.resource_pool + ", not on the target pool " +
                   pool->name);
      }
      for (std::size_t i = 0; i < t.windows.size(); ++i) {
        if (!t.windows[i].inference_replica_floor) continue;
        const auto floor = t.windows[i].inference_replica_floor->for_policy(name);
        if (floor && (*floor < ip.min_replicas || *floor > ip.max_replicas)) {
          report(o, rule::kTidalFloorOutOfRange, idx("spec.windows", i) + ".inferenceReplicaFloor",
                 "window \"" + t.windows[i].name + "\" sets a floor of " + std::to_string(*floor) + " replicas for " +
                     name + ", outside its range " + std::to_string(ip.min_replicas) + ".." +
                     std::to_string(ip.max_replicas));
        }
      }
    }
  }

  static bool fires(const CronSchedule& schedule, const date::time_zone& zone) {
    using namespace date;  // NOLINT(google-build-using-namespace): calendar literals
    // robfig searches five years ahead; from the horizon's start that covers every date.
    const auto from = zone.to_sys(local_days{year{kHorizonStartYear} / January / 1}, choose::earliest);
    return schedule.next(from, zone).has_value();
  }

  // ---- CapacityLease -----------------------------------------------------------------

  struct LeaseSpan {
    std::optional<Timestamp> begin;  // unset: open
    std::optional<Timestamp> end;
  };

  LeaseSpan span_of(const CapacityLeaseSpec& l) const {
    return LeaseSpan{l.start ? l.start : options_.now, l.end};
  }

  static bool overlaps(const LeaseSpan& a, const LeaseSpan& b) {
    const bool a_before_b = a.end && b.begin && *a.end <= *b.begin;
    const bool b_before_a = b.end && a.begin && *b.end <= *a.begin;
    return !a_before_b && !b_before_a;
  }

  void check_lease(const PolicyObject& o) {
    const auto& l = o.as<CapacityLeaseSpec>();
    if (!l.end) {
      report(o, rule::kLeaseEndRequired, "spec.end", "a lease needs an end time (RFC 3339); leases never run open-ended");
    }
    if (l.start && l.end && *l.end <= *l.start) {
      report(o, rule::kLeaseEndBeforeStart, "spec.end",
             "end " + format_rfc3339(*l.end) + " is not after start " + format_rfc3339(*l.start));
    }
    if (l.type == LeaseType::TemporaryQuota) {
      if (!l.extra_guaranteed) {
        report(o, rule::kLeaseTypeFields, "spec.extraGuaranteed", "a TemporaryQuota lease needs extraGuaranteed");
      }
      if (l.selector) {
        report(o, rule::kLeaseTypeFields, "spec.selector",
               "selector belongs to Protection leases; a TemporaryQuota lease raises the whole group's guarantee");
      }
    } else {
      if (!l.selector) {
        report(o, rule::kLeaseTypeFields, "spec.selector", "a Protection lease needs a selector of the workloads it protects");
      }
      if (l.extra_guaranteed) {
        report(o, rule::kLeaseTypeFields, "spec.extraGuaranteed", "extraGuaranteed belongs to TemporaryQuota leases");
      }
    }
    // An approval holds for the spec it approved, and for no other.
    std::optional<Timestamp> approved_at;
    if (const ApprovalRead approval = read_approval(o.status); approval.present) {
      if (!approval.approval) {
        report(o, rule::kLeaseApprovalMismatch, "status.approval", approval.problem + "; the lease counts as not approved");
      } else if (const std::string mine = lease_spec_hash(l); approval.approval->spec_hash != mine) {
        report(o, rule::kLeaseApprovalMismatch, "status.approval.specHash",
               "the approval by " + approval.approval->approved_by + " was for another spec (" +
                   approval.approval->spec_hash + "; this spec is " + mine +
                   "): the lease is not approved until a platform administrator approves this spec");
      } else {
        approved_at = approval.approval->approved_at;
      }
    }
    const Group* group = known_group(o, l.business_group, "spec.businessGroup");
    const Pool* pool = known_pool(o, l.resource_pool, "spec.resourcePool");
    if (g_ != nullptr && l.end) {
      // Without a start the lease runs from its approval: recorded, or (not approved yet)
      // the time of this check.
      const auto begin = l.start ? l.start : approved_at ? approved_at : options_.now;
      // end - begin overflows int64 nanoseconds for spans above 292 years (times reach
      // from 1677 to 2262), so the difference is checked.
      std::int64_t span = 0;
      const bool huge = begin && __builtin_sub_overflow(l.end->time_since_epoch().count(),
                                                        begin->time_since_epoch().count(), &span);
      if (begin && *l.end > *begin && (huge || std::chrono::nanoseconds(span) > g_->max_lease_duration.nanoseconds())) {
        report(o, rule::kLeaseTooLong, "spec.end",
               "the lease lasts " + (huge ? std::string("more than 292 years") : Duration(std::chrono::nanoseconds(span)).to_string()) +
                   (l.start ? "" : approved_at ? " from its approval" : " from now") +
                   ", above the platform's maxLeaseDuration " +
                   g_->max_lease_duration.to_string());
      }
    }
    if (group == nullptr || pool == nullptr || l.type != LeaseType::TemporaryQuota || !l.extra_guaranteed) return;
    const GPUQuotaPolicySpec* quota = quota_of(l.business_group, l.resource_pool);
    // 64-bit throughout: each term is an int32, the sums of several need not be.
    const std::int64_t base = quota != nullptr ? quota->guaranteed : 0;
    auto limit = group->limits.find(l.resource_pool);
    const std::int64_t cap = limit != group->limits.end() ? limit->second.max_capacity : 0;
    if (base + *l.extra_guaranteed > cap) {
      report(o, rule::kLeaseExceedsGroupCap, "spec.extraGuaranteed",
             "guaranteed " + std::to_string(base) + " + extraGuaranteed " + std::to_string(*l.extra_guaranteed) +
                 " = " + std::to_string(base + *l.extra_guaranteed) + " is above the guardrail maxCapacity " +
                 std::to_string(cap) + " of group " + group->name + " on pool " + pool->name);
      return;
    }
    // Conservative: every temporary quota whose span overlaps this one's is counted, as if
    // all were active at once.
    const std::int64_t total = pool_guaranteed_[l.resource_pool];
    std::int64_t extra = 0;
    const LeaseSpan mine = span_of(l);
    for (const PolicyObject* other : temporary_quotas_[l.resource_pool]) {
      const auto& ol = other->as<CapacityLeaseSpec>();
      if (other == &o || overlaps(mine, span_of(ol))) extra += *ol.extra_guaranteed;
    }
    if (total + extra > pool->capacity) {
      report(o, rule::kLeaseExceedsPool, "spec.extraGuaranteed",
             "guarantees on pool " + pool->name + " (" + std::to_string(total) + ") plus overlapping temporary quotas (" +
                 std::to_string(extra) + ") come to " + std::to_string(total + extra) + ", above its capacity " +
                 std::to_string(pool->capacity));
    }
  }

  // ---- LowUtilizationPolicy ----------------------------------------------------------

  void check_low_utilization(const PolicyObject& o) {
    const auto& p = o.as<LowUtilizationPolicySpec>();
    if (!p.thresholds.average_gpu_utilization && !p.thresholds.average_memory_utilization &&
        !p.thresholds.average_power_fraction) {
      report(o, rule::kLowUtilNoThreshold, "spec.thresholds",
             "set at least one of averageGpuUtilization, averageMemoryUtilization, averagePowerFraction");
    }
    for (std::size_t i = 0; i < p.exclude_when.size(); ++i) {
      const Exclusion& e = p.exclude_when[i];
      const std::string path = idx("spec.excludeWhen", i);
      if (e.label.has_value() == e.annotation.has_value()) {
        report(o, rule::kLowUtilExclusionForm, path, "an exclusion names exactly one of label or annotation");
      } else if (e.value && !e.label) {
        report(o, rule::kLowUtilExclusionForm, path + ".value", "value goes with label; an annotation matches by presence");
      }
    }
    if (p.match.business_group) known_group(o, *p.match.business_group, "spec.match.businessGroup");
    if (p.match.resource_pool) known_pool(o, *p.match.resource_pool, "spec.match.resourcePool");
    const std::string key = std::string(doc::enum_name(p.match.workload_type)) + "/" +
                            p.match.business_group.value_or("*") + "/" + p.match.resource_pool.value_or("*");
    if (auto [it, fresh] = low_util_matches_.emplace(key, &o); !fresh) {
      report(o, rule::kLowUtilDuplicateMatch, "spec.match",
             "the same match is already used by " + it->second->ref() + at(*it->second) +
                 "; it would be ambiguous which thresholds apply");
    }
    // A group's policy overrides the platform's for the group's workloads: only tighter.
    for (const PolicyObject* platform : overridden_platform_policies(o, set_)) {
      for (const Loosening& l : low_utilization_loosenings(p, platform->as<LowUtilizationPolicySpec>(),
                                                           platform->ref() + at(*platform))) {
        report(o, rule::kLowUtilLoosensPlatform, l.path, l.message);
      }
    }
  }

  // ---- workloads ---------------------------------------------------------------------

  void check_workloads() {
    if (g_ == nullptr) return;
    for (const auto& workload : set_.workloads()) {
      const WorkloadManifest& w = *workload;
      check_workload(w.root, WorkloadContext{w.namespace_, *g_, &set_, nullptr, nullptr},
                     [&](std::string_view rule, std::string path, std::string message, SourcePos pos) {
                       out_.push_back(Diagnostic{Severity::Error, std::string(rule), w.origin.file,
                                                 pos.line > 0 ? pos : w.origin.pos, w.kind, w.name, std::move(path),
                                                 std::move(message)});
                     });
    }
  }

  const PolicySet& set_;
  const ValidationOptions& options_;
  const PlatformGuardrailsSpec* g_;
  Diagnostics out_;
  std::map<std::pair<std::string, std::string>, const PolicyObject*> quotas_;
  std::map<std::string, std::int64_t> pool_guaranteed_;  // sums of int32 guarantees
  std::map<std::string, std::vector<const PolicyObject*>> temporary_quotas_;
  std::map<std::string, const PolicyObject*> inference_targets_;
  std::map<std::string, const PolicyObject*> tidal_targets_;
  std::map<std::string, const PolicyObject*> low_util_matches_;
};

}  // namespace

std::string OverlapCache::key_of(const TidalPolicySpec& spec) {
  std::string key = spec.timezone.name;
  for (const auto& w : spec.windows) key += "|" + w.start.text() + "|" + w.end.text();
  return key;
}

const std::optional<WindowOverlap>* OverlapCache::find(const std::string& key) const {
  auto it = results_.find(key);
  return it == results_.end() ? nullptr : &it->second;
}

std::optional<WindowOverlap> find_window_overlap(const TidalPolicySpec& spec) {
  std::vector<WindowSchedule> schedules;
  for (const auto& w : spec.windows) schedules.push_back({&w.start, &w.end});
  return find_overlap(schedules, *spec.timezone.zone);
}

OverlapCache OverlapCache::of(const PolicySet& set) {
  OverlapCache cache;
  for (const auto& p : set.policies()) {
    if (p.kind != Kind::TidalPolicy) continue;
    const auto& spec = p.as<TidalPolicySpec>();
    std::string key = key_of(spec);
    if (cache.find(key) == nullptr) cache.put(std::move(key), find_window_overlap(spec));
  }
  return cache;
}

Diagnostics validate(const PolicySet& set, const ValidationOptions& options) {
  return Validator(set, options).run();
}

Diagnostics check_all(const PolicySet& set, const ValidationOptions& options) {
  Diagnostics out = set.diagnostics();
  Diagnostics semantic = validate(set, options);
  out.insert(out.end(), std::make_move_iterator(semantic.begin()), std::make_move_iterator(semantic.end()));
  return out;
}

}  // namespace gpubank::policy
