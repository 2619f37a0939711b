#include "render/volcano.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

#include "render/scheduling.hpp"

namespace gpubank::render {
namespace {

using policy::GPUQuotaPolicySpec;
using policy::PolicyObject;

// Volcano creates these queues itself (scheduler and webhook); a pool may not take their names.
constexpr std::array<std::string_view, 2> kVolcanoQueues{"root", "default"};

// 64-bit: a quota's cap (guaranteed + borrowLimit) is a sum of two int32 fields.
Json resources(const std::string& resource, std::int64_t amount) { return {{resource, amount}}; }

// The parent of a pool's queues. Its guarantee is the whole pool: the pool's nodes serve
// no other queue, and the capacity plugin lets children's guarantees add up to at most
// their parent's. Root's own deserved and guarantee are the sums of its children.
RenderedObject pool_queue(const policy::Pool& pool, const PolicyObject& guardrails) {
  const std::string resource = gpu_resource(pool);
  Json o = object_head(kVolcanoApiVersion, "Queue", pool.name);
  o["metadata"]["labels"] = pool_labels(pool.name);
  Json spec = Json::object();
  spec["parent"] = "root";
  spec["deserved"] = resources(resource, pool.capacity);
  spec["guarantee"] = {{"resource", resources(resource, pool.capacity)}};
  spec["capability"] = resources(resource, pool.capacity);
  o["spec"] = std::move(spec);
  return {std::move(o), "volcano/queue-" + pool.name + ".yaml", {&guardrails}};
}

RenderedObject group_queue(const PolicyObject& policy, const policy::Pool& pool, const PriorityModel& priorities,
                           const PolicyObject& guardrails) {
  const auto& q = policy.as<GPUQuotaPolicySpec>();
  const std::string resource = gpu_resource(pool);
  Json o = object_head(kVolcanoApiVersion, "Queue", queue_name(q));
  o["metadata"]["labels"] = pool_labels(pool.name, &q.business_group);
  Json spec = Json::object();
  spec["parent"] = pool.name;
  // deserved: what the queue may keep when others want their share back (the guarantee);
  // use above it is reclaimable.
  spec["deserved"] = resources(resource, q.guaranteed);
  // guarantee: reserved, never lent: the lending floor guaranteed - lendingLimit (none
  // when the whole guarantee is lent).
  const std::int64_t floor = std::int64_t{q.guaranteed} - q.lending_limit.value_or(q.guaranteed);
  if (floor > 0) spec["guarantee"] = {{"resource", resources(resource, floor)}};
  // capability: the hard cap.
  spec["capability"] = resources(resource, q.effective_max_capacity());
  // Whether other queues may take back what this one uses above deserved. Volcano knows
  // queues, not workload types: a group that may only run protected classes keeps what
  // it borrowed; every other group's borrowed GPUs go back when their lenders need them.
  spec["reclaimable"] = !priorities.only_protected(q.business_group);
  // Pin the queue's pods to the pool's nodes with the nodegroup plugin: nodes carry
  // volcano.sh/nodegroup-name, taken from the pool's nodeLabels when set there.
  const auto label = pool.node_labels.find(std::string(kVolcanoNodeGroupLabel));
  const std::string node_group = label != pool.node_labels.end() ? label->second : pool.name;
  spec["affinity"] = {
      {"nodeGroupAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", Json::array({node_group})}}}};
  o["spec"] = std::move(spec);
  return {std::move(o), "volcano/queue-" + queue_name(q) + ".yaml", {&guardrails, &policy}};
}

// What a gang job of the group submits its PodGroup as: copied per job (name, minMember
// and minResources are the job's), it names the group's queue on the pool.
RenderedObject podgroup_template(const std::string& ns, const GPUQuotaPolicySpec& q, const policy::Pool& pool,
                                 const PolicyObject& guardrails) {
  Json o = object_head(kVolcanoApiVersion, "PodGroup", q.resource_pool + "-gang-template", ns);
  o["metadata"]["labels"] = pool_labels(pool.name, &q.business_group);
  o["metadata"]["annotations"] = {
      {kAnnotationTemplate,
       "copy per gang job: set metadata.name, spec.minMember (pods that must start together) and "
       "spec.minResources (their " +
           gpu_resource(pool) + ")"}};
  Json spec = Json::object();
  spec["queue"] = queue_name(q);
  spec["minMember"] = 1;
  o["spec"] = std::move(spec);
  return {std::move(o), "volcano/templates/podgroup-" + ns + "." + q.resource_pool + ".yaml", {&guardrails}};
}

}  // namespace

Diagnostics check_volcano(const policy::PolicySet& set) {
  Diagnostics out;
  const PolicyObject* guardrails = set.guardrails();
  if (guardrails == nullptr) return out;
  const auto& g = guardrails->as<policy::PlatformGuardrailsSpec>();
  std::vector<NamedOrigin> names;  // pools first: a clash is reported on the quota
  for (std::size_t i = 0; i < g.pools.size(); ++i) {
    const std::string path = "spec.pools[" + std::to_string(i) + "].name";
    const auto& name = g.pools[i].name;
    if (std::find(kVolcanoQueues.begin(), kVolcanoQueues.end(), name) != kVolcanoQueues.end()) {
      out.push_back(finding(Severity::Error, kRuleNameCollision, *guardrails, path,
                            "pool " + name + " would render the Queue " + name +
                                ", which Volcano creates itself; rename the pool"));
    }
    names.push_back({name, guardrails, path});
  }
  for (auto& q : quota_queue_names(set)) names.push_back(std::move(q));
  check_unique_names("Queue", std::move(names), out);
  return out;
}

std::vector<RenderedObject> render_volcano(const policy::PolicySet& set) {
  std::vector<RenderedObject> out;
  const PolicyObject* guardrails = set.guardrails();
  if (guardrails == nullptr) return out;
  const auto& g = guardrails->as<policy::PlatformGuardrailsSpec>();
  const PriorityModel priorities(g);
  for (const auto& pool : g.pools) out.push_back(pool_queue(pool, *guardrails));
  for (const auto& q : quota_placements(set)) {
    out.push_back(group_queue(*q.policy, *q.pool, priorities, *guardrails));
    for (const auto& ns : q.group->effective_namespaces()) {
      out.push_back(podgroup_template(ns, *q.quota, *q.pool, *guardrails));
    }
  }
  return out;
}

}  // namespace gpubank::render
