#include "autoscale/pool_view.hpp"

#include <algorithm>
#include <climits>
#include <map>

#include "render/scheduling.hpp"

namespace gpubank::autoscale {
namespace {

using Json = nlohmann::json;

// o[key], or null (iterates as empty, contains nothing) when o has no such key.
const Json& at(const Json& o, const char* key) {
  static const Json null;
  if (!o.is_object()) return null;
  const auto it = o.find(key);
  return it == o.end() ? null : *it;
}


// A whole-number quantity ("4", 4); nullopt for anything else ("500m", "1.5", "1Ki"):
// extended resources are requested in whole units.
std::optional<long long> whole(const Json& q) {
  if (q.is_number_integer()) return q.get<long long>() >= 0 ? std::optional<long long>(q.get<long long>()) : std::nullopt;
  if (!q.is_string()) return std::nullopt;
  const std::string s = q.get<std::string>();
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoll(s);
}

long long container_devices(const Json& container, const std::string& resource) {
  for (const char* field : {"requests", "limits"}) {
    const Json& r = at(at(container, "resources"), field);
    if (r.is_object() && r.contains(resource)) return whole(r[resource]).value_or(0);
  }
  return 0;
}

bool ready(const Json& pod) {
  const Json& status = at(pod, "status");
  for (const auto& c : at(status, "conditions")) {
    if (at(c, "type") == "Ready" && at(c, "status") == "True") return true;  // false for other types
  }
  return false;
}

std::string text(const Json& o, const char* a, const char* b) {
  const Json& inner = at(o, a);
  return inner.is_object() && inner.contains(b) && inner[b].is_string() ? inner[b].get<std::string>() : "";
}

}  // namespace

int pod_devices(const Json& pod, const std::string& resource) {
  const Json& spec = at(pod, "spec");
  long long sum = 0, init = 0;
  for (const auto& c : at(spec, "containers")) sum += container_devices(c, resource);
  for (const auto& c : at(spec, "initContainers")) init = std::max(init, container_devices(c, resource));
  return static_cast<int>(std::min<long long>(INT_MAX, std::max(sum, init)));
}

Expected<serving::PoolCapacity> pool_view(const policy::PolicySet& set, const policy::InferenceScalingPolicySpec& spec,
                                          const ClusterObjects& objects) {
  const policy::PlatformGuardrailsSpec* guardrails = set.guardrails_spec();
  if (guardrails == nullptr) return Unexpected{std::string("the policies hold no PlatformGuardrails")};
  const policy::Pool* pool = guardrails->find_pool(spec.resource_pool);
  if (pool == nullptr) return Unexpected{"resourcePool " + spec.resource_pool + " is not in the PlatformGuardrails"};
  const std::string resource = render::gpu_resource(*pool);

  serving::PoolCapacity out;
  out.pool = pool->name;
  std::map<std::string, std::size_t> node_index;  // name -> out.nodes
  std::map<std::string, int> allocatable;
  for (const auto& n : objects.nodes) {
    const Json& meta = at(n, "metadata");
    const Json& labels = at(meta, "labels");
    const bool in_pool = std::all_of(pool->node_labels.begin(), pool->node_labels.end(), [&](const auto& kv) {
      return labels.is_object() && labels.contains(kv.first) && labels[kv.first] == kv.second;
    });
    const std::string name = text(n, "metadata", "name");
    if (!in_pool || name.empty()) continue;
    const Json& status = at(n, "status");
    const long long devices = whole(at(at(status, "allocatable"), resource.c_str())).value_or(0);
    const long long installed =
        whole(at(at(status, "capacity"), resource.c_str())).value_or(devices);
    serving::NodeCapacity nc;
    nc.name = name;
    nc.gpus = static_cast<int>(std::min<long long>(INT_MAX / 2, std::max(devices, installed)));
    nc.unhealthy = static_cast<int>(std::max<long long>(0, installed - devices));
    nc.free = static_cast<int>(std::min<long long>(INT_MAX / 2, devices));  // less what pods hold, below
    if (at(at(n, "spec"), "unschedulable") == Json(true)) nc.free = 0;
    allocatable[name] = static_cast<int>(std::min<long long>(INT_MAX / 2, devices));
    node_index[name] = out.nodes.size();
    out.nodes.push_back(std::move(nc));
  }

  std::map<std::string, long long> used_by_group;
  for (const auto& p : objects.pods) {
    const std::string node = text(p, "spec", "nodeName");
    const auto it = node_index.find(node);
    if (it == node_index.end()) continue;
    const std::string phase = text(p, "status", "phase");
    if (phase == "Succeeded" || phase == "Failed") continue;
    const int held = pod_devices(p, resource);
    if (held == 0) continue;
    serving::NodeCapacity& nc = out.nodes[it->second];
    nc.free = std::max(0, nc.free - held);
    const policy::Group* g = guardrails->group_of_namespace(text(p, "metadata", "namespace"));
    const std::string group = g == nullptr ? "" : g->name;
    used_by_group[group] += held;
    if (group != spec.business_group) nc.held_by_borrowers = std::min(nc.gpus, nc.held_by_borrowers + held);
  }

  std::map<std::string, long long> guaranteed;
  for (const auto& o : set.policies()) {
    if (o.kind != policy::Kind::GPUQuotaPolicy) continue;
    const auto& q = o.as<policy::GPUQuotaPolicySpec>();
    if (q.resource_pool != pool->name) continue;
    guaranteed[q.business_group] = q.guaranteed;
    if (q.business_group == spec.business_group) {
      out.quota.guaranteed = q.guaranteed;
      out.quota.max_capacity = static_cast<int>(std::min<std::int64_t>(INT_MAX, q.effective_max_capacity()));
    }
  }
  out.quota.used = static_cast<int>(std::min<long long>(INT_MAX, used_by_group[spec.business_group]));
  long long borrowed_by_others = 0;
  for (const auto& [group, used] : used_by_group) {
    if (group == spec.business_group) continue;
    const auto g = guaranteed.find(group);
    borrowed_by_others += std::max<long long>(0, used - (g == guaranteed.end() ? 0 : g->second));
  }
  out.quota.lent = static_cast<int>(
      std::min<long long>(std::max<long long>(0, out.quota.guaranteed - out.quota.used), borrowed_by_others));
  long long free = 0;
  for (const auto& nc : out.nodes) free += nc.free;
  out.quota.cohort_free = static_cast<int>(std::min<long long>(INT_MAX, free));
  return out;
}

ReplicaPhases replica_phases(const std::vector<Json>& pods) {
  ReplicaPhases out;
  for (const auto& p : pods) {
    const std::string phase = text(p, "status", "phase");
    if (phase == "Succeeded" || phase == "Failed") continue;
    if (at(p, "metadata").contains("deletionTimestamp")) {
      ++out.draining;
    } else if (ready(p)) {
      ++out.ready;
    } else if (!text(p, "spec", "nodeName").empty()) {
      ++out.loading;
    } else {
      ++out.requested;
    }
  }
  return out;
}

serving::Capacity live_capacity(const policy::PolicySet& set, const LiveCapacityInputs& in) {
  const policy::InferenceScalingPolicySpec& spec = *in.spec;
  serving::CapacityInputs c;
  c.policy = in.policy;
  c.ready = in.phases.ready;
  c.loading = in.phases.loading;
  c.draining = in.phases.draining;
  c.requested = in.phases.requested;
  c.max_replicas = spec.max_replicas;
  if (in.observation) {
    c.queue_depth = in.observation->queue_depth;
    c.arrival_rps = in.observation->request_rate;
  }
  c.replica_rps = spec.scale_up.requests_per_second_per_replica.value_or(0.0);
  c.model_load_time = spec.model_load_time;
  serving::ShapeRequest request;
  request.service = in.policy;
  request.shape = spec.replica_shape;
  request.serving_floor_gpus = in.serving_floor_replicas * spec.replica_shape.gpu_per_replica;
  request.burst_headroom_gpus = spec.effective_burst_headroom();
  serving::PoolCapacity pool = in.pool;
  if (in.phases.requested > 0) {  // they take their GPUs first
    serving::ShapeRequest waiting = request;
    waiting.replicas = in.phases.requested;
    for (const auto& placed : serving::check_shape(waiting, pool).placements) {
      for (const auto& name : placed.nodes) {
        for (auto& node : pool.nodes) {
          if (node.name == name) node.free = std::max(0, node.free - placed.gpus_per_node);
        }
      }
    }
  }
  request.replicas = 1;
  c.next_replica = serving::check_shape(request, pool);
  for (const auto& o : set.policies()) {
    if (o.kind != policy::Kind::GPUQuotaPolicy) continue;
    const auto& q = o.as<policy::GPUQuotaPolicySpec>();
    if (q.business_group == spec.business_group && q.resource_pool == spec.resource_pool && q.reclaim_policy &&
        q.reclaim_policy->grace_period) {
      c.reclaim_grace = *q.reclaim_policy->grace_period;
    }
  }
  return serving::gateway_capacity(c);
}

}  // namespace gpubank::autoscale
