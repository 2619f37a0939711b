#include "render/kueue.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>

#include "core/quantity.hpp"
#include "document/yaml_writer.hpp"
#include "policy/cohort_quota.hpp"
#include "policy/schema.hpp"
#include "render/scheduling.hpp"

namespace gpubank::render {
namespace {

using policy::GPUQuotaPolicySpec;
using policy::PolicyObject;

// Namespaces carry this label with their own name (Kubernetes sets it, NamespaceDefaultLabelName).
constexpr std::string_view kNamespaceNameLabel = "kubernetes.io/metadata.name";

// ---- per pool ---------------------------------------------------------------------------

RenderedObject resource_flavor(const policy::Pool& pool, const PolicyObject& guardrails) {
  Json o = object_head(kKueueApiVersion, "ResourceFlavor", pool.name);
  o["metadata"]["labels"] = pool_labels(pool.name);
  Json spec = Json::object();
  // Kueue copies nodeLabels into the nodeSelector of every pod it admits on this flavor,
  // so admitted pods land on the pool's nodes.
  if (!pool.node_labels.empty()) {
    Json labels = Json::object();
    for (const auto& [k, v] : pool.node_labels) labels[k] = v;
    spec["nodeLabels"] = std::move(labels);
  }
  // The pool's taints keep other pods off its nodes. Kueue adds spec.tolerations to the
  // pods it admits on this flavor, so only admitted pods get past them. (nodeTaints would
  // instead make Kueue refuse every workload that does not already tolerate them.)
  if (!pool.taints.empty()) {
    Json tolerations = Json::array();
    for (const auto& t : pool.taints) {
      Json tol = Json::object();
      tol["key"] = t.key;
      if (t.value.empty()) {
        tol["operator"] = "Exists";
      } else {
        tol["operator"] = "Equal";
        tol["value"] = t.value;
      }
      tol["effect"] = doc::enum_name(t.effect);
      tolerations.push_back(std::move(tol));
    }
    spec["tolerations"] = std::move(tolerations);
  }
  o["spec"] = std::move(spec);
  return {std::move(o), "kueue/resourceflavor-" + pool.name + ".yaml", {&guardrails}};
}

// One resource group covering the pool's GPU resource on its flavor, what a ClusterQueue
// and a Cohort of the pool both carry; `quota` holds the amounts (nominalQuota, ...).
Json gpu_resource_groups(const policy::Pool& pool, const Json& quota) {
  const std::string resource = gpu_resource(pool);
  Json named = Json::object();
  named["name"] = resource;
  named.update(quota);
  Json flavor = Json::object();
  flavor["name"] = pool.name;
  flavor["resources"] = Json::array({std::move(named)});
  Json rg = Json::object();
  rg["coveredResources"] = Json::array({resource});
  rg["flavors"] = Json::array({std::move(flavor)});
  return Json::array({std::move(rg)});
}

// ---- per quota --------------------------------------------------------------------------

// Kueue divides by fairSharing.weight's Quantity.MilliValue() (dominant resource share,
// pkg/cache), which rounds up to thousandths; rendering it that way writes the weight
// Kueue will use.
Json weight_quantity(double weight) {
  const auto milli = static_cast<std::int64_t>(std::ceil(weight * 1000.0 - 1e-6));
  if (milli % 1000 == 0) return milli / 1000;
  return Quantity::from_milli(milli).to_string();
}

Json preemption(const GPUQuotaPolicySpec& q, const policy::Pool& pool, const policy::Group& group,
                const PriorityModel& priorities, bool fair_sharing) {
  // The part of the guarantee other queues may borrow; unset lendingLimit lends it all.
  const bool lends = q.guaranteed > 0 && q.lending_limit.value_or(q.guaranteed) > 0;
  const bool traits_only = q.reclaim_policy && !q.reclaim_policy->only_preempt.empty();
  std::string reclaim = "Never";
  if (lends) {
    // Any: take lent GPUs back from any borrower. Only when the reclaim policy restricts
    // borrowers to reclaimable traits and no protected class can be borrowing here;
    // otherwise priority is all Kueue can go by, and protected classes rank highest.
    reclaim = traits_only && !priorities.protected_borrower_possible(pool, group) ? "Any" : "LowerPriority";
  }
  Json p = Json::object();
  p["reclaimWithinCohort"] = reclaim;
  Json borrow = Json::object();
  // A queue that lends may, while borrowing, displace lower-priority borrowers, up to the
  // highest unprotected class so that no protected workload is chosen. Kueue's CEL rule
  // forbids borrowWithinCohort without reclaimWithinCohort. Under fair sharing Kueue
  // ignores borrowWithinCohort (shares decide who yields while borrowing), so it is not
  // written: reclaimWithinCohort's priority filter, which fair sharing keeps, is what
  // keeps protected workloads from being chosen there.
  if (!fair_sharing) {
    if (reclaim != "Never" && priorities.highest_unprotected()) {
      borrow["policy"] = "LowerPriority";
      if (priorities.lowest_protected()) borrow["maxPriorityThreshold"] = *priorities.highest_unprotected();
    } else {
      borrow["policy"] = "Never";
    }
    p["borrowWithinCohort"] = std::move(borrow);
  }
  // Within its own quota a group's higher classes go first.
  p["withinClusterQueue"] = "LowerPriority";
  return p;
}

RenderedObject cluster_queue(const PolicyObject& policy, const policy::Pool& pool, const policy::Group& group,
                             const PriorityModel& priorities, const PolicyObject& guardrails, bool fair_sharing) {
  const auto& q = policy.as<GPUQuotaPolicySpec>();
  const std::string name = queue_name(q);
  Json o = object_head(kKueueApiVersion, "ClusterQueue", name);
  o["metadata"]["labels"] = pool_labels(pool.name, &group.name);

  Json spec = Json::object();
  spec["cohortName"] = pool.name;
  Json values = Json::array();
  for (const auto& ns : group.effective_namespaces()) values.push_back(ns);
  spec["namespaceSelector"] = {
      {"matchExpressions",
       Json::array({{{"key", kNamespaceNameLabel}, {"operator", "In"}, {"values", std::move(values)}}})}};
  // A big head that does not fit must not block smaller workloads behind it.
  spec["queueingStrategy"] = "BestEffortFIFO";

  Json quota = Json::object();
  quota["nominalQuota"] = q.guaranteed;
  // maxCapacity is the hard cap (guaranteed <= maxCapacity <= guaranteed + borrowLimit),
  // so what the queue may borrow is maxCapacity - guaranteed (policy-api.md's mapping).
  // effective_max_capacity() is 64-bit, so this is exact for every pair of int32 fields.
  // It bounds borrowing from the Cohort's own quota too.
  quota["borrowingLimit"] = q.effective_max_capacity() - q.guaranteed;
  if (q.lending_limit) quota["lendingLimit"] = *q.lending_limit;
  spec["resourceGroups"] = gpu_resource_groups(pool, quota);
  spec["preemption"] = preemption(q, pool, group, priorities, fair_sharing);
  spec["fairSharing"] = {{"weight", weight_quantity(q.fair_share_weight)}};
  o["spec"] = std::move(spec);
  return {std::move(o), "kueue/clusterqueue-" + name + ".yaml", {&guardrails, &policy}};
}

RenderedObject local_queue(const std::string& ns, const GPUQuotaPolicySpec& q, const PolicyObject& guardrails) {
  // Named after the pool, so a workload says `kueue.x-k8s.io/queue-name: <pool>` in any
  // of its group's namespaces. Its content comes from the guardrails alone (the
  // namespace, group and pool names); the quota policy only decides that it exists.
  Json o = object_head(kKueueApiVersion, "LocalQueue", q.resource_pool, ns);
  o["metadata"]["labels"] = pool_labels(q.resource_pool, &q.business_group);
  o["spec"] = {{"clusterQueue", queue_name(q)}};
  return {std::move(o), "kueue/localqueue-" + ns + "." + q.resource_pool + ".yaml", {&guardrails}};
}

RenderedObject workload_priority_class(const policy::PriorityRule& rule, const PolicyObject& guardrails) {
  // Workloads name it with the kueue.x-k8s.io/priority-class label; Kueue orders and
  // preempts by its value, which matches the PriorityClass of the same name.
  Json o = object_head(kKueueApiVersion, "WorkloadPriorityClass", rule.name);
  o["value"] = rule.value;
  o["description"] = "gpubank priority " + rule.name + " (PriorityClass " + rule.name + ")";
  return {std::move(o), "kueue/workloadpriorityclass-" + rule.name + ".yaml", {&guardrails}};
}

}  // namespace

Diagnostics check_kueue(const policy::PolicySet& set) {
  Diagnostics out;
  check_unique_names("ClusterQueue", quota_queue_names(set), out);
  return out;
}

std::vector<RenderedObject> render_kueue(const policy::PolicySet& set) {
  std::vector<RenderedObject> out;
  const PolicyObject* guardrails = set.guardrails();
  if (guardrails == nullptr) return out;
  const auto& g = guardrails->as<policy::PlatformGuardrailsSpec>();
  const PriorityModel priorities(g);
  for (const auto& pool : g.pools) {
    out.push_back(resource_flavor(pool, *guardrails));
    out.push_back(render_kueue_cohort(set, pool));
  }
  for (const auto& rule : g.priorities) out.push_back(workload_priority_class(rule, *guardrails));
  for (const auto& q : quota_placements(set)) {
    out.push_back(cluster_queue(*q.policy, *q.pool, *q.group, priorities, *guardrails, g.fair_sharing_enabled()));
    for (const auto& ns : q.group->effective_namespaces()) out.push_back(local_queue(ns, *q.quota, *guardrails));
  }
  return out;
}

RenderedObject render_kueue_cohort(const policy::PolicySet& set, const policy::Pool& pool,
                                   std::span<const policy::CapacityLeaseSpec* const> active) {
  const PolicyObject* guardrails = set.guardrails();
  if (guardrails == nullptr) throw std::invalid_argument("render_kueue_cohort: the policy set has no PlatformGuardrails");
  // One root cohort per pool: pools never share a GPU, so no quota flows between them and
  // no parent is needed (Kueue's webhook refuses lending and borrowing limits on a root).
  Json o = object_head(kKueueApiVersion, "Cohort", pool.name);
  o["metadata"]["labels"] = pool_labels(pool.name);
  // The GPUs no guarantee holds, so that idle ones can be borrowed: outside every quota
  // they would sit idle whatever waits (policy/cohort_quota.hpp).
  Json quota = Json::object();
  quota["nominalQuota"] = policy::cohort_nominal_quota(set, pool, active);
  Json spec = Json::object();
  spec["resourceGroups"] = gpu_resource_groups(pool, quota);
  o["spec"] = std::move(spec);
  // The quota is what the pool's guarantees leave: they are its sources, by name.
  std::vector<const PolicyObject*> sources;
  for (const auto& q : quota_placements(set)) {
    if (q.pool->name == pool.name) sources.push_back(q.policy);
  }
  std::sort(sources.begin(), sources.end(), [](const PolicyObject* a, const PolicyObject* b) { return a->name() < b->name(); });
  sources.insert(sources.begin(), guardrails);
  return {std::move(o), "kueue/cohort-" + pool.name + ".yaml", std::move(sources)};
}

std::int64_t pods_ready_timeout_seconds(const policy::PolicySet& set) {
  std::int64_t longest_ms = 0;
  for (const auto& p : set.policies()) {
    if (p.kind != policy::Kind::InferenceScalingPolicy) continue;
    const auto& load = p.as<policy::InferenceScalingPolicySpec>().model_load_time;
    longest_ms = std::max(longest_ms, load.milliseconds());
  }
  // 1.5 x, rounded up to the second, in seconds so that no load overflows.
  const std::int64_t longest_s = longest_ms / 1000 + (longest_ms % 1000 != 0 ? 1 : 0);
  const std::int64_t scaled_s = longest_s + (longest_s + 1) / 2;
  return std::max(kPodsReadyTimeoutSeconds, scaled_s);
}

std::optional<Json> kueue_manager_configuration(const policy::PolicySet& set) {
  const policy::PlatformGuardrailsSpec* g = set.guardrails_spec();
  if (g == nullptr) return std::nullopt;
  // v1beta2, the version of the Kueue releases that serve kueue.x-k8s.io/v1beta2 objects:
  // a section's presence turns fair sharing and waitForPodsReady on (no `enable`).
  Json c = Json::object();
  c["apiVersion"] = "config.kueue.x-k8s.io/v1beta2";
  c["kind"] = "Configuration";
  // Kueue would suspend every Job without a queue label in the managed namespaces, CPU
  // ones included, which no queue then admits; the webhook already makes GPU workloads
  // name a queue.
  c["manageJobsWithoutQueueName"] = false;
  // Only the groups' namespaces: Kueue's pod-based integrations (pod, deployment,
  // statefulset, leaderworkerset) then never touch system or platform namespaces.
  std::set<std::string> namespaces;
  for (const auto& group : g->groups) {
    for (auto& ns : group.effective_namespaces()) namespaces.insert(std::move(ns));
  }
  Json values = Json::array();
  for (const auto& ns : namespaces) values.push_back(ns);
  c["managedJobsNamespaceSelector"] = {
      {"matchExpressions",
       Json::array({{{"key", kNamespaceNameLabel}, {"operator", "In"}, {"values", std::move(values)}}})}};
  Json frameworks = Json::array();
  for (std::string_view f : kKueueFrameworks) frameworks.push_back(std::string(f));
  c["integrations"] = {{"frameworks", std::move(frameworks)}};
  // The ClusterQueue quota and usage series (kueue_cluster_queue_nominal_quota, ...) that
  // gpubank's recording rules and dashboards read (prometheus_rules.hpp); off by default.
  c["metrics"] = {{"enableClusterQueueResources", true}};
  Json excluded = Json::array();
  for (std::string_view r : kKueueExcludedResourcePrefixes) excluded.push_back(std::string(r));
  c["resources"] = {{"excludeResourcePrefixes", std::move(excluded)}};
  if (g->fair_sharing_enabled()) {
    Json strategies = Json::array();
    for (std::string_view st : kFairSharingStrategies) strategies.push_back(std::string(st));
    c["fairSharing"] = {{"preemptionStrategies", std::move(strategies)}};
  }
  Json requeuing = Json::object();
  requeuing["timestamp"] = "Eviction";
  requeuing["backoffBaseSeconds"] = kPodsReadyBackoffBaseSeconds;
  requeuing["backoffMaxSeconds"] = kPodsReadyBackoffMaxSeconds;
  Json pods_ready = Json::object();
  pods_ready["timeout"] = std::to_string(pods_ready_timeout_seconds(set)) + "s";
  pods_ready["blockAdmission"] = false;
  pods_ready["requeuingStrategy"] = std::move(requeuing);
  c["waitForPodsReady"] = std::move(pods_ready);
  return c;
}

std::vector<RenderedObject> render_kueue_manager_config(const policy::PolicySet& set) {
  const PolicyObject* guardrails = set.guardrails();
  const auto configuration = kueue_manager_configuration(set);
  if (guardrails == nullptr || !configuration) return {};
  // Kueue reads the file as YAML: written out as YAML, the Configuration stays readable
  // in the ConfigMap.
  Json o = object_head("v1", "ConfigMap", std::string(kKueueManagerConfigMap));
  o["metadata"]["namespace"] = std::string(kKueueNamespace);
  o["data"] = {{"controller_manager_config.yaml", doc::to_yaml(*configuration)}};
  std::vector<RenderedObject> out;
  out.push_back({std::move(o), "kueue/configmap-" + std::string(kKueueManagerConfigMap) + ".yaml", {guardrails}});
  return out;
}

}  // namespace gpubank::render
