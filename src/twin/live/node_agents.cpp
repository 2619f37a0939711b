#include "twin/live/node_agents.hpp"

#include <string_view>
#include <utility>

#include "attribution/labels.hpp"
#include "core/fnv1a.hpp"
#include "twin/cluster/identity.hpp"

namespace gpubank::twin::live {
namespace {

using Json = nlohmann::json;

// A ReplicaSet's pod-template-hash as Kubernetes spells it: 10 characters of its safe
// alphabet (no vowels, no 0/1/3), here from the Deployment's name so that it is stable.
std::string template_hash(std::string_view deployment) {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::uint64_t h = fnv1a64(deployment);
  std::string out;
  for (int i = 0; i < 10; ++i) {
    out += kAlphabet[h % kAlphabet.size()];
    h /= kAlphabet.size();  // 27^10 < 2^64: ten digits never run out
  }
  return out;
}

void set_if(Json& labels, std::string_view key, const std::string& value) {
  if (!value.empty()) labels[std::string(key)] = value;
}

// Appends every sample of `from` to the family of the same name in `into` (added when new).
void merge(metrics::Exposition& into, std::map<std::string, std::size_t>& index, metrics::Exposition from) {
  for (metrics::Family& f : from.families) {
    const auto [it, added] = index.try_emplace(f.name, into.families.size());
    if (added) {
      into.families.push_back(std::move(f));
      continue;
    }
    auto& samples = into.families[it->second].samples;
    samples.insert(samples.end(), std::make_move_iterator(f.samples.begin()), std::make_move_iterator(f.samples.end()));
  }
}

}  // namespace

std::string twin_uid(std::string_view kind, std::string_view namespace_name, std::string_view name, int epoch) {
  std::string key;
  key.append(kind).append("/").append(namespace_name).append("/").append(name).append("/").append(std::to_string(epoch));
  return cluster::uuid_v5(cluster::kGpuNamespace, key);
}

Json pod_object(const TwinPodSpec& spec) {
  namespace keys = attribution::keys;
  Json labels = Json::object();
  for (const auto& [k, v] : spec.labels) labels[k] = v;
  set_if(labels, keys::kBusinessGroup, spec.business_group);
  set_if(labels, keys::kCostCenter, spec.cost_center);
  set_if(labels, keys::kOwnerId, spec.owner_id);
  set_if(labels, keys::kWorkloadType, spec.workload_type);
  set_if(labels, keys::kKueueQueue, spec.queue);
  set_if(labels, keys::kCapacityRole, spec.capacity_role);
  if (spec.checkpointable) labels[std::string(keys::kCheckpointable)] = "true";
  Json owner;
  if (spec.deployment) {
    const std::string hash = template_hash(spec.workload);
    labels["pod-template-hash"] = hash;
    const std::string replica_set = spec.workload + "-" + hash;
    owner = {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", replica_set},
             {"uid", twin_uid("replicaset", spec.namespace_name, replica_set, 0)}, {"controller", true},
             {"blockOwnerDeletion", true}};
  } else {
    labels["batch.kubernetes.io/job-name"] = spec.workload;
    labels["batch.kubernetes.io/controller-uid"] = spec.workload_uid;
    owner = {{"apiVersion", "batch/v1"}, {"kind", "Job"},       {"name", spec.workload},
             {"uid", spec.workload_uid}, {"controller", true}, {"blockOwnerDeletion", true}};
  }
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", spec.name},
                {"namespace", spec.namespace_name},
                {"uid", spec.uid},
                {"creationTimestamp", spec.created},
                {"labels", std::move(labels)},
                {"ownerReferences", Json::array({std::move(owner)})}}},
              {"spec", {{"nodeName", spec.node}}},
              {"status", {{"phase", "Running"}}}};
}

metrics::Exposition NodeAgents::scrape(std::span<const TwinPod> pods, std::span<const TwinNode> nodes,
                                       std::int64_t now_ms) {
  // metasync: the pods as a watch would report them since the last scrape.
  std::set<std::string, std::less<>> now_live;
  for (const TwinPod& p : pods) {
    now_live.insert(p.spec.uid);
    // A pod's attribution is pinned at first sight: only a new one is written out.
    if (!live_.contains(p.spec.uid)) (void)builder_.upsert(pod_object(p.spec), now_ms);
  }
  for (const std::string& uid : live_) {
    if (!now_live.contains(uid)) (void)builder_.remove(uid, now_ms);
  }
  live_ = std::move(now_live);
  (void)builder_.expire(now_ms);

  // The kubelets: each node's PodResources answer.
  std::map<std::string, std::vector<node::DeviceAllocation>, std::less<>> held;
  for (const TwinPod& p : pods) {
    for (const node::DeviceAllocation& a : p.devices) held[p.spec.node].push_back(a);
  }

  // The exporters.
  metrics::Exposition out;
  std::map<std::string, std::size_t> index;
  stats_ = {};
  static const std::vector<node::DeviceAllocation> kNone;
  for (const TwinNode& n : nodes) {
    const auto h = held.find(n.info.node);
    const auto snapshot = builder_.snapshot(n.info.node);
    attribution::EnrichResult r = attribution::enrich(n.dcgm, h != held.end() ? h->second : kNone,
                                                      snapshot ? &*snapshot : nullptr, n.inventory, n.info);
    stats_.samples += r.stats.samples;
    stats_.passed_through += r.stats.passed_through;
    for (const auto& [status, count] : r.stats.by_status) stats_.by_status[status] += count;
    stats_.time_sliced += r.stats.time_sliced;
    stats_.unresolved_devices += r.stats.unresolved_devices;
    stats_.upstream_labels_removed += r.stats.upstream_labels_removed;
    stats_.upstream_duplicates += r.stats.upstream_duplicates;
    stats_.values_dropped += r.stats.values_dropped;
    stats_.holder_collisions += r.stats.holder_collisions;
    merge(out, index, std::move(r.exposition));
  }
  return out;
}

}  // namespace gpubank::twin::live
