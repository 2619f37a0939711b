#include "twin/trace/alibaba_replay.hpp"

#include <algorithm>
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
  auto mapped = alibaba_scenario(*pods, options.mapping);
  if (!mapped) {
    fail(diagnostics, pods_file, "trace.mapping", mapped.error());
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

}  // namespace gpubank::twin::trace
