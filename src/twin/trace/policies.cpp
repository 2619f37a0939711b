#include "twin/trace/policies.hpp"

#include <algorithm>
#include <set>

#include "document/yaml_writer.hpp"
#include "policy/decode.hpp"
#include "policy/types.hpp"
#include "twin/trace/seeded.hpp"

namespace gpubank::twin::trace {

namespace {

constexpr std::int64_t kMaxGpus = 1'000'000;

bool model_ok(const std::string& m) {
  return !m.empty() && m.size() <= 63 && std::all_of(m.begin(), m.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

std::string hex8(std::uint64_t h) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(8, '0');
  for (int i = 7; i >= 0; --i, h >>= 4) out[static_cast<std::size_t>(i)] = kHex[h & 0xf];
  return out;
}

policy::PolicyObject object(policy::Kind kind, std::string name, policy::Spec spec) {
  policy::PolicyObject o;
  o.kind = kind;
  o.metadata.name = std::move(name);
  o.spec = std::move(spec);
  return o;
}

}  // namespace

std::vector<std::int64_t> split_by_weight(std::int64_t capacity, const std::vector<GroupWeight>& groups) {
  std::vector<std::int64_t> out(groups.size(), 0);
  std::int64_t total = 0;
  for (const auto& g : groups) total += g.weight;
  if (total <= 0 || capacity <= 0) return out;
  std::int64_t given = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    out[i] = capacity * groups[i].weight / total;  // <= 1e6 x 1e9: no overflow
    given += out[i];
  }
  for (std::size_t i = 0; given < capacity && i < out.size(); ++i, ++given) out[i] += 1;
  return out;
}

Expected<std::string> trace_policy_yaml(const std::vector<PoolInventory>& pools, const std::vector<GroupWeight>& groups,
                                        const TracePolicyOptions& options) {
  if (pools.empty()) return Unexpected{"no pools"};
  if (groups.empty()) return Unexpected{"no business groups"};
  std::set<std::string> names;
  for (const auto& p : pools) {
    if (!is_dns_label(p.name)) return Unexpected{"pool \"" + p.name + "\" is not a DNS-1123 label"};
    if (!names.insert(p.name).second) return Unexpected{"pool " + p.name + " is listed twice"};
    if (!model_ok(p.gpu_model)) return Unexpected{"pool " + p.name + ": GPU model \"" + p.gpu_model + "\" is not valid"};
    if (p.gpus < 0 || p.gpus > kMaxGpus) return Unexpected{"pool " + p.name + ": gpus must be between 0 and 1000000"};
    if (p.gpus_per_node < 1 || p.gpus_per_node > kMaxGpus) {
      return Unexpected{"pool " + p.name + ": gpusPerNode must be between 1 and 1000000"};
    }
  }
  names.clear();
  for (const auto& g : groups) {
    if (!is_dns_label(g.name)) return Unexpected{"business group \"" + g.name + "\" is not a DNS-1123 label"};
    if (!names.insert(g.name).second) return Unexpected{"business group " + g.name + " is listed twice"};
    if (g.weight < 1 || g.weight > kMaxGroupWeight) {
      return Unexpected{"the weight of group " + g.name + " must be between 1 and 1000000000"};
    }
  }

  policy::PlatformGuardrailsSpec guardrails;
  guardrails.platform_admins = {options.platform_admins};
  for (const auto& p : pools) {
    policy::Pool pool;
    pool.name = p.name;
    pool.gpu_model = p.gpu_model;
    pool.sharing = p.shared ? policy::Sharing::Shared : policy::Sharing::Exclusive;
    pool.capacity = static_cast<int>(p.gpus);
    pool.role = p.shared ? policy::PoolRole::Inference : policy::PoolRole::Training;
    pool.gpus_per_node = static_cast<int>(p.gpus_per_node);
    pool.node_labels = {{"platform.gpubank.dev/pool", p.name}};
    guardrails.pools.push_back(std::move(pool));
  }
  for (const auto& g : groups) {
    policy::Group group;
    group.name = g.name;
    group.cost_center = "CC-" + g.name;
    group.admins = {"group:" + g.name + "-admins"};
    group.namespaces = {g.name};
    for (const auto& p : pools) group.limits[p.name] = policy::GroupPoolLimit{0, static_cast<int>(p.gpus)};
    guardrails.groups.push_back(std::move(group));
  }
  guardrails.priorities = {
      {"inference-critical", 100000, {policy::WorkloadType::Inference}, false, {}},
      {"training-standard", 10000, {policy::WorkloadType::Training, policy::WorkloadType::Batch}, true, {}},
      {"batch-low", 1000, {policy::WorkloadType::Batch}, true, {}},
  };

  std::string out = "# Derived from a trace's inventory and business groups (gpubank twin trace).\n";
  out += doc::to_yaml(policy::encode_policy(object(policy::Kind::PlatformGuardrails, "platform", guardrails)));
  for (const auto& p : pools) {
    const auto split = split_by_weight(p.gpus, groups);
    for (std::size_t i = 0; i < groups.size(); ++i) {
      policy::GPUQuotaPolicySpec q;
      q.business_group = groups[i].name;
      q.resource_pool = p.name;
      q.guaranteed = static_cast<int>(split[i]);
      q.borrow_limit = static_cast<int>(p.gpus - split[i]);
      q.max_capacity = static_cast<int>(p.gpus);
      if (options.reclaim) {
        q.reclaim_policy = policy::ReclaimPolicy{options.reclaim_grace_period,
                                                 {policy::WorkloadTrait::Batch, policy::WorkloadTrait::Checkpointable}};
      }
      std::string name = groups[i].name + "-" + p.name;
      if (name.size() > 63) {  // metadata.name is a DNS label
        name.resize(54);
        while (name.back() == '-') name.pop_back();
        name += "-" + hex8(hash_text(groups[i].name + "/" + p.name));
      }
      out += "---\n";
      out += doc::to_yaml(policy::encode_policy(object(policy::Kind::GPUQuotaPolicy, name, q)));
    }
  }
  return out;
}

}  // namespace gpubank::twin::trace
