#include "twin/trace/alibaba_replay.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace gpubank::twin::trace {

namespace {
void fail(Diagnostics& d, const std::string& file, std::string rule, std::string message) {
  d.push_back(Diagnostic{Severity::Error, std::move(rule), file, {}, {}, {}, "", std::move(message)});
}
}  // namespace

std::optional<AlibabaReplay> alibaba_replay(std::string_view pods_csv, const std::string& pods_file,
                                            std::string_view nodes_csv, const std::string& nodes_file,
                                            const AlibabaReplayOptions& options, Diagnostics& diagnostics) {
  if (options.share_replicas < 1 || options.share_replicas > 64) {
    fail(diagnostics, "", "trace.out-of-range",
         "share replicas must be from 1 to 64, got " + std::to_string(options.share_replicas));
    return std::nullopt;
  }
  auto inventory = cluster::alibaba_inventory(nodes_csv, nodes_file, diagnostics);
  if (!inventory) return std::nullopt;
  const std::string shared_pool = options.mapping.shared_pool;
  const std::string shared_model_pool = alibaba_pool_for_model(options.shared_model);
  if (shared_model_pool == options.mapping.default_pool) {
    fail(diagnostics, nodes_file, "trace.shared-model",
         "the shared model " + options.shared_model + " is the default pool's model: whole-GPU pods would have no nodes");
    return std::nullopt;
  }
  // Pools by node label, in the order models first appear.
  std::map<std::string, std::size_t> index;
  std::vector<PoolInventory> pools;
  for (auto& node : inventory->nodes) {
    const bool shared = node.gpu_model == options.shared_model;
    const std::string pool = shared ? shared_pool : alibaba_pool_for_model(node.gpu_model);
    node.labels[std::string(cluster::kPoolLabel)] = pool;
    auto [it, added] = index.emplace(pool, pools.size());
    if (added) pools.push_back(PoolInventory{pool, node.gpu_model, 0, 0, shared});
    PoolInventory& p = pools[it->second];
    p.gpus += shared ? node.gpus * options.share_replicas : node.gpus;
    p.gpus_per_node = std::max<std::int64_t>(p.gpus_per_node, shared ? node.gpus * options.share_replicas : node.gpus);
  }
  if (!index.contains(shared_pool)) {
    fail(diagnostics, nodes_file, "trace.shared-model", "no node of the shared model " + options.shared_model);
    return std::nullopt;
  }
  auto yaml = trace_policy_yaml(pools, options.mapping.groups, options.policy);
  if (!yaml) {
    fail(diagnostics, "", "trace.policies", yaml.error());
    return std::nullopt;
  }
  auto pods = read_alibaba_pods(pods_csv, pods_file, diagnostics);
  if (!pods) return std::nullopt;
  TraceMapping mapping = options.mapping;
  // Whole GPUs only where a pool of whole GPUs exists: the shared model's nodes are carved
  // into the shared pool, and a spec naming several models takes the next one.
  if (!mapping.whole_gpu_pool) {
    mapping.whole_gpu_pool = [&index, &shared_pool](const std::string& pool) {
      return pool != shared_pool && index.contains(pool);
    };
  }
  auto mapped = alibaba_scenario(*pods, mapping);
  if (!mapped) {
    fail(diagnostics, pods_file, "trace.mapping", mapped.error());
    return std::nullopt;
  }
  if (mapped->report.workloads == 0) {
    // A run of nothing is not a replay. The multigpu lists carry no creation or deletion
    // times: they describe pods to place at once, not a timeline.
    std::string why;
    for (const auto& [reason, count] : mapped->report.skipped) {
      why += (why.empty() ? "" : ", ") + reason + " " + std::to_string(count);
    }
    const bool timeless = mapped->report.skipped.contains(std::string(kSkipNoCreationTime));
    fail(diagnostics, pods_file, "trace.empty",
         "no pod of the " + std::to_string(mapped->report.pods_read) + " read became a workload (skipped: " +
             (why.empty() ? "none" : why) + ")" +
             (timeless ? "; this list has no creation times (the multigpu lists), so a replay in time has nothing "
                         "to order: its authors place such lists at once, with no departures (not built yet)"
                       : ""));
    return std::nullopt;
  }
  AlibabaReplay out;
  out.inventory = std::move(*inventory);
  out.pools = std::move(pools);
  out.policy_yaml = std::move(*yaml);
  out.scenario = std::move(mapped->scenario);
  out.report = std::move(mapped->report);
  return out;
}

std::optional<PhillyReplay> philly_replay(std::string_view vc_csv, const std::string& vc_file,
                                          std::string_view sequence_csv, const std::string& sequence_file,
                                          const PhillyReplayOptions& options, Diagnostics& diagnostics) {
  auto vcs = read_philly_vcs(vc_csv, vc_file, diagnostics);
  if (!vcs) return std::nullopt;
  auto samples = read_philly_node_sequence(sequence_csv, sequence_file, diagnostics);
  if (!samples) return std::nullopt;
  auto curve = philly_demand_curve(*vcs, *samples);
  if (!curve) {
    fail(diagnostics, sequence_file, "trace.philly", curve.error());
    return std::nullopt;
  }
  auto mapped = philly_scenario(*curve, options.scenario);
  if (!mapped) {
    fail(diagnostics, sequence_file, "trace.philly", mapped.error());
    return std::nullopt;
  }
  PhillyReplay out;
  const std::string pool = options.scenario.resource_pool;
  std::vector<GroupWeight> groups;
  for (const auto& vc : *vcs) {
    out.nodes += vc.nodes;
    if (vc.nodes > 0) groups.push_back(GroupWeight{options.scenario.group_prefix + vc.name, vc.nodes});
  }
  out.vcs = static_cast<std::int64_t>(vcs->size());
  out.missing_minutes = curve->missing_minutes;
  for (std::int64_t n = 0; n < out.nodes; ++n) {
    cluster::NodeSpec node;
    char name[32];
    std::snprintf(name, sizeof name, "philly-%04lld", static_cast<long long>(n));
    node.name = name;
    node.gpu_model = options.gpu_model;
    node.product = "NVIDIA-Tesla-" + options.gpu_model;
    node.gpus = static_cast<int>(options.scenario.gpus_per_node);
    node.gpu_memory_mib = 16 * 1024;
    node.labels = {{std::string(cluster::kPoolLabel), pool}, {"nvidia.com/gpu.product", node.product}};
    out.inventory.nodes.push_back(std::move(node));
  }
  auto yaml = trace_policy_yaml({PoolInventory{pool, options.gpu_model, out.nodes * options.scenario.gpus_per_node,
                                               options.scenario.gpus_per_node, false}},
                                groups, options.policy);
  if (!yaml) {
    fail(diagnostics, vc_file, "trace.policies", yaml.error());
    return std::nullopt;
  }
  out.policy_yaml = std::move(*yaml);
  out.scenario = std::move(mapped->scenario);
  return out;
}

}  // namespace gpubank::twin::trace
