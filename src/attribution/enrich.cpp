#include "attribution/enrich.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <tuple>

#include "attribution/labels.hpp"
#include "node/device_id.hpp"

namespace gpubank::attribution {
namespace {

using metrics::Label;
using metrics::Sample;

// A device as samples name it: the GPU's UUID and, for a MIG instance, its GPU instance id.
using DeviceKey = std::pair<std::string, std::string>;

struct Holder {
  const node::DeviceAllocation* allocation = nullptr;
  const PodMeta* meta = nullptr;  // nullptr: the snapshot does not know the pod
  bool shared = false;            // a time-slicing replica or a shared resource name
};

// The labels the join decides; an upstream sample's own labels of these names are removed
// (the allowlist's last three are written on gpubank_gpu_allocation_info only, never on the
// device samples: an upstream copy would still be a forgery).
constexpr std::array<std::string_view, 20> kJoinLabels{
    "container",     "namespace",      "pod",           "pod_uid",       "business_group",
    "owner_id",      "cost_center",    "queue",         "workload_type", "workload_uid",
    "workload_kind", "workload",       "model",         "model_version", "capacity_role",
    "checkpointable", "keep_running_until", "claim",   "sharing",       "mapping_status"};

bool is_join_label(std::string_view name) {
  return std::find(kJoinLabels.begin(), kJoinLabels.end(), name) != kJoinLabels.end();
}

std::string label_value(const Sample& s, std::string_view name) {
  for (const Label& l : s.labels) {
    if (l.name == name) return l.value;
  }
  return {};
}

// The series a sample belongs to: its name and label set, in any label order.
std::string series_key(const Sample& s) {
  std::vector<const Label*> labels;
  labels.reserve(s.labels.size());
  for (const Label& l : s.labels) labels.push_back(&l);
  std::sort(labels.begin(), labels.end(), [](const Label* a, const Label* b) { return a->name < b->name; });
  std::string key = s.name;
  for (const Label* l : labels) {
    key += '\0';
    key += l->name;
    key += '\0';
    key += l->value;
  }
  return key;
}

struct Join {
  std::map<DeviceKey, std::vector<Holder>> holders;
  std::set<std::string> mig_parents_held;  // GPU UUIDs some of whose MIG instances are held
  EnrichStats* stats = nullptr;
  std::vector<std::string>* unresolved = nullptr;

  void add(const node::DeviceAllocation& a, const NodeSnapshot* snapshot, std::span<const node::GpuDevice> inventory) {
    const PodMeta* meta = snapshot != nullptr ? snapshot->resolve(a.namespace_name, a.pod) : nullptr;
    const bool shared_resource = a.resource_name.ends_with(".shared");
    std::optional<DeviceKey> key;
    bool replica = false;
    // DRA's device names are the driver's ("gpu-0"): the index, when it reads as one.
    std::string id = a.device_id;
    if (!a.driver.empty() && id.starts_with("gpu-") && id.find_first_not_of("0123456789", 4) == std::string::npos &&
        id.size() > 4) {
      id = "nvidia" + id.substr(4);
    }
    const node::DeviceRef ref = node::parse_device_id(id);
    switch (ref.kind) {
      case node::DeviceRef::Kind::Gpu: key = DeviceKey{ref.uuid, ""}; break;
      case node::DeviceRef::Kind::Replica:
        key = DeviceKey{ref.uuid, ""};
        replica = true;
        break;
      case node::DeviceRef::Kind::Mig:
        for (const node::GpuDevice& g : inventory) {
          for (const node::MigDevice& m : g.mig) {
            if (m.uuid == ref.uuid) key = DeviceKey{g.uuid, std::to_string(m.gpu_instance)};
          }
        }
        replica = ref.replica >= 0;
        break;
      case node::DeviceRef::Kind::Indexed:
        for (const node::GpuDevice& g : inventory) {
          if (static_cast<int>(g.index) != ref.gpu_index) continue;
          key = DeviceKey{g.uuid, ref.gpu_instance >= 0 && g.mig_enabled ? std::to_string(ref.gpu_instance) : ""};
        }
        // A plain "nvidia<i>" (DRA) names the whole GPU.
        break;
      case node::DeviceRef::Kind::Unknown: break;
    }
    if (!key) {
      ++stats->unresolved_devices;
      unresolved->push_back(a.namespace_name + "/" + a.pod + "/" + a.container + ": " + a.device_id);
      return;
    }
    if (!key->second.empty()) mig_parents_held.insert(key->first);
    std::vector<Holder>& held = holders[*key];
    // One container holding two replicas of one GPU is one holder (one series), shared.
    for (Holder& h : held) {
      if (h.allocation->namespace_name == a.namespace_name && h.allocation->pod == a.pod &&
          h.allocation->container == a.container) {
        h.shared = true;
        return;
      }
    }
    held.push_back(Holder{&a, meta, replica || shared_resource});
  }
};

// The attribution labels of a holder, in the documented order, values checked again (the
// snapshot is signed, but a value that fails the allowlist's rules is still never written).
void add_holder_labels(std::vector<Label>& labels, const Holder& h, EnrichStats& stats) {
  auto add = [&](std::string_view name, const std::string& value) {
    if (value.empty()) return;
    // Kubernetes object names (from the kubelet) are checked as names, the rest by the allowlist.
    const bool object_name = name == "container" || name == "pod" || name == "claim";
    if (check_value(object_name ? "name" : name, value)) {
      ++stats.values_dropped;
      return;
    }
    labels.push_back(Label{std::string(name), value});
  };
  const node::DeviceAllocation& a = *h.allocation;
  add("container", a.container);
  add("namespace", a.namespace_name);
  add("pod", a.pod);
  if (h.meta != nullptr) {
    const PodMeta& m = *h.meta;
    add("pod_uid", m.uid);
    add("business_group", m.business_group);
    add("owner_id", m.owner_id);
    add("cost_center", m.cost_center);
    add("queue", m.queue);
    add("workload_type", m.workload_type);
    add("workload_kind", m.workload_kind);
    add("workload", m.workload);
    add("workload_uid", m.workload_uid);
    add("model", m.model);
    add("model_version", m.model_version);
  }
  if (!a.claim_name.empty()) add("claim", a.claim_name);
}

// gpubank_pod_start_time_seconds: one sample per pod, its creation time, so that a query
// can tell how long a workload has run without kube-state-metrics (docs/metrics-contract.md).
metrics::Family pod_start_times(const std::set<const PodMeta*>& pods) {
  metrics::Family family{"gpubank_pod_start_time_seconds", metrics::MetricType::gauge,
                         "Creation time of each pod that holds a device of the node, in Unix seconds.", {}};
  // By namespace, pod and UID, whatever the order of the devices was.
  std::vector<const PodMeta*> sorted(pods.begin(), pods.end());
  std::sort(sorted.begin(), sorted.end(), [](const PodMeta* a, const PodMeta* b) {
    return std::tie(a->namespace_name, a->name, a->uid) < std::tie(b->namespace_name, b->name, b->uid);
  });
  std::set<std::string> written;
  for (const PodMeta* m : sorted) {
    // Unknown (no creationTimestamp): 0 would read as a pod running since 1970.
    if (m->created_ms <= 0) continue;
    std::vector<Label> labels;
    for (const auto& [name, value, rule] : std::initializer_list<std::tuple<const char*, const std::string*, const char*>>{
             {"namespace", &m->namespace_name, "namespace"}, {"pod", &m->name, "name"}, {"pod_uid", &m->uid, "pod_uid"},
             {"workload_kind", &m->workload_kind, "workload_kind"}, {"workload", &m->workload, "workload"},
             {"workload_uid", &m->workload_uid, "workload_uid"}, {"business_group", &m->business_group, "business_group"},
             {"owner_id", &m->owner_id, "owner_id"}}) {
      if (!value->empty() && !check_value(rule, *value)) labels.push_back({name, *value});
    }
    Sample one{"gpubank_pod_start_time_seconds", std::move(labels), static_cast<double>(m->created_ms) / 1000.0,
               std::nullopt};
    // Two pods left alike once refused values were dropped are one series, never two.
    if (written.insert(series_key(one)).second) family.samples.push_back(std::move(one));
  }
  return family;
}

}  // namespace

EnrichResult enrich(const metrics::Exposition& upstream, std::span<const node::DeviceAllocation> allocations,
                    const NodeSnapshot* snapshot, std::span<const node::GpuDevice> inventory, const NodeInfo& node) {
  EnrichResult out;
  EnrichStats& stats = out.stats;
  Join join{{}, {}, &stats, &out.unresolved};
  for (const node::DeviceAllocation& a : allocations) join.add(a, snapshot, inventory);

  std::set<DeviceKey> seen_devices;  // devices the samples name, for gpubank_gpu_info without NVML
  for (const metrics::Family& family : upstream.families) {
    metrics::Family f{family.name, family.type, family.help, {}};
    f.samples.reserve(family.samples.size());
    std::set<std::string> seen_series;  // a device's series once stripped of the join labels
    for (const Sample& s : family.samples) {
      const std::string uuid = label_value(s, "UUID");
      if (uuid.empty()) {
        ++stats.passed_through;
        f.samples.push_back(s);
        continue;
      }
      ++stats.samples;
      const DeviceKey key{uuid, label_value(s, "GPU_I_ID")};
      seen_devices.insert(key);
      Sample base{s.name, {}, s.value, s.timestamp_ms};
      for (const Label& l : s.labels) {
        if (is_join_label(l.name)) {
          ++stats.upstream_labels_removed;
          continue;
        }
        base.labels.push_back(l);
      }
      // dcgm-exporter with its own pod mapping writes a time-sliced device once per pod; with
      // those labels gone the copies are one series, which the join below expands once.
      if (!seen_series.insert(series_key(base)).second) {
        ++stats.upstream_duplicates;
        continue;
      }
      const auto h = join.holders.find(key);
      if (h == join.holders.end()) {
        const bool parent = key.second.empty() && join.mig_parents_held.contains(key.first);
        const std::string status = parent ? "mig-parent" : "unallocated";
        base.labels.push_back(Label{"mapping_status", status});
        ++stats.by_status[status];
        f.samples.push_back(std::move(base));
        continue;
      }
      const bool shared = h->second.size() > 1 ||
                          std::any_of(h->second.begin(), h->second.end(), [](const Holder& x) { return x.shared; });
      std::set<std::string> holder_series;
      for (const Holder& holder : h->second) {
        Sample one = base;
        add_holder_labels(one.labels, holder, stats);
        // Two holders whose differing values were all refused would be one series twice,
        // which no exposition may hold: the first is kept.
        if (!holder_series.insert(series_key(one)).second) {
          ++stats.holder_collisions;
          continue;
        }
        if (shared) {
          one.labels.push_back(Label{"sharing", "time-sliced"});
          ++stats.time_sliced;
        }
        const std::string status = holder.meta != nullptr ? "mapped" : "unknown";
        one.labels.push_back(Label{"mapping_status", status});
        ++stats.by_status[status];
        f.samples.push_back(std::move(one));
      }
    }
    out.exposition.families.push_back(std::move(f));
  }

  // gpubank's own series (docs/metrics-contract.md): every device, then every holder.
  std::vector<DeviceKey> devices;
  for (const node::GpuDevice& g : inventory) {
    if (!g.mig_enabled) devices.push_back({g.uuid, ""});
    for (const node::MigDevice& m : g.mig) devices.push_back({g.uuid, std::to_string(m.gpu_instance)});
  }
  if (inventory.empty()) devices.assign(seen_devices.begin(), seen_devices.end());
  std::sort(devices.begin(), devices.end());
  auto device_labels = [&](const DeviceKey& d) {
    std::vector<Label> labels{{"node", node.node},       {"pool", node.pool},     {"gpu_model", node.gpu_model},
                              {"partition", node.partition}, {"gpu_uuid", d.first}};
    if (!d.second.empty()) labels.push_back({"gpu_instance", d.second});
    std::erase_if(labels, [](const Label& l) { return l.value.empty(); });
    return labels;
  };
  metrics::Family info{"gpubank_gpu_info", metrics::MetricType::gauge,
                       "Every allocatable device of the node: a whole GPU or one MIG GPU instance.", {}};
  metrics::Family allocation{"gpubank_gpu_allocation_info", metrics::MetricType::gauge,
                             "One series per device held by a container, with the pod's attribution.", {}};
  std::set<std::string> allocation_series;
  std::set<const PodMeta*> holding_pods;  // the mapped pods, for gpubank_pod_start_time_seconds
  for (const DeviceKey& d : devices) {
    info.samples.push_back(Sample{"gpubank_gpu_info", device_labels(d), 1, std::nullopt});
    const auto h = join.holders.find(d);
    if (h == join.holders.end()) continue;
    for (const Holder& holder : h->second) {
      std::vector<Label> labels = device_labels(d);
      const node::DeviceAllocation& a = *holder.allocation;
      // The kubelet's names, checked as the device samples' are.
      for (const auto& [name, value, rule] : {std::tuple{"namespace", &a.namespace_name, "namespace"},
                                              std::tuple{"pod", &a.pod, "name"}, std::tuple{"container", &a.container, "name"}}) {
        if (!value->empty() && !check_value(rule, *value)) labels.push_back({name, *value});
      }
      if (holder.meta != nullptr) {
        const PodMeta& m = *holder.meta;
        holding_pods.insert(&m);
        // A refused value of the labels the device samples also carry is counted there; the
        // governance labels appear here alone, so their refusals are counted here.
        for (const auto& [name, value, own] : std::initializer_list<std::tuple<const char*, const std::string*, bool>>{
                 {"business_group", &m.business_group, false}, {"owner_id", &m.owner_id, false},
                 {"cost_center", &m.cost_center, false}, {"workload_type", &m.workload_type, false},
                 {"workload_kind", &m.workload_kind, false}, {"workload", &m.workload, false},
                 {"workload_uid", &m.workload_uid, false}, {"queue", &m.queue, false},
                 {"capacity_role", &m.capacity_role, true}, {"checkpointable", &m.checkpointable, true},
                 {"keep_running_until", &m.keep_running_until, true}}) {
          if (value->empty()) continue;
          if (!check_value(name, *value)) {
            labels.push_back({name, *value});
          } else if (own) {
            ++stats.values_dropped;
          }
        }
      }
      std::erase_if(labels, [](const Label& l) { return l.value.empty(); });
      Sample one{"gpubank_gpu_allocation_info", std::move(labels), 1, std::nullopt};
      if (!allocation_series.insert(series_key(one)).second) continue;  // counted with the device samples
      allocation.samples.push_back(std::move(one));
    }
  }
  out.exposition.families.push_back(std::move(info));
  out.exposition.families.push_back(std::move(allocation));
  out.exposition.families.push_back(pod_start_times(holding_pods));
  return out;
}

}  // namespace gpubank::attribution
