// The engine's setup: policies and the scenario into quotas, pools, leases and workloads
// (engine_internal.hpp).
#include "twin/run/engine_internal.hpp"

namespace gpubank::twin::run::detail {

bool Engine::setup() {
  result_.start = scenario_.start.value_or(Timestamp{});
  guardrails_ = policies_.guardrails_spec();
  if (guardrails_ == nullptr) {
    error(kRulePolicies, "", "the policies hold no PlatformGuardrails: pools and groups are unknown");
    return false;
  }
  std::string canonical;
  for (const auto& p : policies_.policies()) canonical += render::canonical_text(p) + "\n";
  result_.policy_version = render::sha256_hex(canonical);

  // The Kueue objects `gpubank render` writes, and its manager Configuration, read back
  // the way `twin admit` reads them: the twin runs the quota tree and the mode (fair
  // sharing or not) a cluster given those objects would. The Configuration's parts the
  // core does not run (waitForPodsReady: RunOptions) are said as warnings by the reader;
  // they are the render's, not the scenario's, so they are not reported here.
  kueue::ObjectSet objects;
  Diagnostics manager_notes;
  for (const auto& o : render::render_kueue(policies_)) {
    const doc::Node node = doc::from_json(nlohmann::json::parse(o.manifest.dump()));
    kueue::decode_object(node, kueue::Source{o.path, 0, -1, {}, {}}, objects, result_.diagnostics);
  }
  for (const auto& o : render::render_kueue_manager_config(policies_)) {
    const doc::Node node = doc::from_json(nlohmann::json::parse(o.manifest.dump()));
    kueue::decode_object(node, kueue::Source{o.path, 0, -1, {}, {}}, objects, manager_notes);
  }
  if (has_errors(manager_notes)) {
    for (auto& d : manager_notes) {
      if (d.severity == Severity::Error) result_.diagnostics.push_back(std::move(d));
    }
  }
  if (has_errors(result_.diagnostics)) return false;
  auto core_options = kueue::AdmissionRun::core_options(objects, false, {}, manager_notes);
  if (!core_options) {
    error(kRulePolicies, "", "the rendered Kueue manager Configuration does not load: " + core_options.error());
    return false;
  }
  kueue::CoreInputs inputs = kueue::core_inputs(objects);

  for (const auto& p : policies_.policies()) {
    if (p.kind != policy::Kind::GPUQuotaPolicy) continue;
    const auto& q = p.as<policy::GPUQuotaPolicySpec>();
    const policy::Pool* pool = guardrails_->find_pool(q.resource_pool);
    if (pool == nullptr) continue;  // policy validation reports it
    Quota quota;
    quota.spec = &q;
    quota.group = q.business_group;
    quota.pool_name = q.resource_pool;
    quota.cq = render::queue_name(q);
    quota.guaranteed = q.guaranteed;
    quota.graceful = q.reclaim_policy && q.reclaim_policy->grace_period.has_value();
    if (quota.graceful) quota.grace_ms = q.reclaim_policy->grace_period->milliseconds();
    if (q.reclaim_policy) {
      for (auto t : q.reclaim_policy->only_preempt) quota.lend_only_to.push_back(trait_name(t));
    }
    auto pit = pool_index_.find(pool->name);
    if (pit == pool_index_.end()) {
      Pool pl;
      pl.pool = pool;
      pl.flavor = pool->name;
      pl.resource = render::gpu_resource(*pool);
      pl.tracker = std::make_unique<bank::BorrowTracker>(pool->name, options_.record_prefix);
      pl.guaranteed = policy::guaranteed_on_pool(policies_, pool->name);
      pl.cohort_quota = policy::cohort_nominal_quota(policies_, *pool);  // as rendered
      pit = pool_index_.emplace(pool->name, static_cast<int>(pools_.size())).first;
      pools_.push_back(std::move(pl));
    }
    quota.pool = pit->second;
    for (auto& cq : inputs.queues) {
      if (cq.name != quota.cq) continue;
      for (const auto& g : cq.resource_groups) {
        for (const auto& f : g.flavors) {
          for (const auto& r : f.resources) {
            if (f.flavor == pools_[at(quota.pool)].flavor && r.resource == pools_[at(quota.pool)].resource) {
              quota.borrowing_limit = r.borrowing_limit;
              quota.lending_limit = r.lending_limit;
            }
          }
        }
      }
      // The bank reclaims for this queue, gracefully; Kueue must not do it at once.
      if (quota.graceful) {
        cq.preemption.reclaim_within_cohort = PreemptionPolicy::Never;
        cq.preemption.borrow_within_cohort = BorrowWithinCohortPolicy::Never;
      }
    }
    quota_index_[{quota.group, quota.pool_name}] = static_cast<int>(quotas_.size());
    pools_[at(quota.pool)].quotas.push_back(static_cast<int>(quotas_.size()));
    quotas_.push_back(std::move(quota));
  }

  if (options_.inventory) {
    try {
      cluster_ = std::make_unique<cluster::Cluster>(*options_.inventory);
    } catch (const std::invalid_argument& e) {
      error(kRulePolicies, "", std::string("the inventory does not load: ") + e.what());
      return false;
    }
  }

  auto core = AdmissionCore::create(*core_options, std::move(inputs.flavors), std::move(inputs.cohorts),
                                    std::move(inputs.queues));
  if (!core) {
    error(kRulePolicies, "", "the rendered Kueue objects do not load: " + core.error());
    return false;
  }
  core_ = std::move(core.value());

  // Workloads.
  sims_.reserve(scenario_.workloads.size());
  for (std::size_t i = 0; i < scenario_.workloads.size(); ++i) {
    auto s = make_sim(scenario_.workloads[i], "workloads[" + std::to_string(i) + "]", result_.diagnostics);
    if (s) sims_.push_back(std::move(*s));
  }
  for (std::size_t i = 0; i < scenario_.leases.size(); ++i) {
    const ScenarioLease& d = scenario_.leases[i];
    const std::string path = "leases[" + std::to_string(i) + "]";
    const policy::PolicyObject* object = policies_.find(policy::Kind::CapacityLease, d.name);
    if (object == nullptr) {
      error(kRuleScenario, path + ".name", "no CapacityLease named \"" + d.name + "\" among the policies");
      continue;
    }
    Lease l;
    l.object = object;
    l.spec = &object->as<policy::CapacityLeaseSpec>();
    l.decision = &d;
    auto qit = quota_index_.find({l.spec->business_group, l.spec->resource_pool});
    if (qit == quota_index_.end()) {
      error(kRuleScenario, path + ".name",
            "CapacityLease " + d.name + " is for business group " + l.spec->business_group + " in pool " +
                l.spec->resource_pool + ", where no GPUQuotaPolicy gives it quota");
      continue;
    }
    if (!l.spec->end) {
      error(kRuleScenario, path + ".name", "CapacityLease " + d.name + " has no end");
      continue;
    }
    l.quota = qit->second;
    auto to_virtual = [&](Timestamp t) {
      return std::max<VirtualTime>(0, std::chrono::duration_cast<std::chrono::milliseconds>(t - result_.start).count());
    };
    l.start = l.spec->start ? to_virtual(*l.spec->start) : d.decided_at.milliseconds();
    l.end = to_virtual(*l.spec->end);
    leases_.push_back(l);
  }
  for (std::size_t i = 0; i < scenario_.gpu_faults.size(); ++i) {
    const auto& f = scenario_.gpu_faults[i];
    const std::string path = "gpuFaults[" + std::to_string(i) + "]";
    if (!cluster_) {
      error(kRuleScenario, path, "GPU faults need a cluster: run with an inventory");
      continue;
    }
    const auto node = cluster_->find_node(f.node);
    if (!node) {
      error(kRuleScenario, path + ".node", "no node \"" + f.node + "\" in the inventory");
    } else if (f.gpu >= cluster_->node(*node).gpus) {
      error(kRuleScenario, path + ".gpu",
            "node " + f.node + " has " + std::to_string(cluster_->node(*node).gpus) + " GPUs, no GPU " + std::to_string(f.gpu));
    }
  }
  if (has_errors(result_.diagnostics)) return false;
  for (std::size_t i = 0; i < sims_.size(); ++i) sim_index_.emplace(sims_[i].key, static_cast<int>(i));

  for (const auto& q : quotas_) ledger_quota(q, 0, "Policy");
  return true;
}

std::optional<Sim> Engine::make_sim(const ScenarioWorkload& w, const std::string& path, Diagnostics& diagnostics) {
  auto fail = [&](const std::string& field, std::string message) {
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleScenario), {}, {}, {}, {}, path + field, std::move(message)});
    return std::nullopt;
  };
  Sim s;
  s.w = &w;
  const policy::Group* group = guardrails_->find_group(w.business_group);
  if (group == nullptr) return fail(".businessGroup", "business group \"" + w.business_group + "\" is not in the guardrails");
  auto qit = quota_index_.find({w.business_group, w.resource_pool});
  if (qit == quota_index_.end()) {
    return fail(".resourcePool", "no GPUQuotaPolicy gives business group " + w.business_group + " quota in pool \"" +
                                     w.resource_pool + "\"");
  }
  s.quota = qit->second;
  s.ns = w.namespace_.empty() ? group->effective_namespaces().front() : w.namespace_;
  const auto namespaces = group->effective_namespaces();
  if (std::find(namespaces.begin(), namespaces.end(), s.ns) == namespaces.end()) {
    return fail(".namespace", "namespace " + s.ns + " does not belong to business group " + w.business_group);
  }
  const auto& prot = guardrails_->protected_workload_types;
  s.protected_ = std::find(prot.begin(), prot.end(), w.workload_type) != prot.end();
  if (w.priority_class.empty() && s.protected_) {
    // Without a class Kueue would give it priority 0, below every batch job of its queue.
    const policy::PriorityRule* rule = policy::default_priority_for(*guardrails_, w.workload_type, w.business_group);
    if (rule == nullptr) {
      return fail(".priorityClass", type_name(w.workload_type) +
                                        " workloads are protected and need a priority class, but the guardrails have "
                                        "none for that type and business group " + w.business_group);
    }
    s.priority = rule->value;
    s.preemptible = rule->preemptible;
  }
  if (!w.priority_class.empty()) {
    const policy::PriorityRule* rule = guardrails_->find_priority(w.priority_class);
    if (rule == nullptr) return fail(".priorityClass", "priority class \"" + w.priority_class + "\" is not in the guardrails");
    const auto& types = rule->workload_types;
    if (!types.empty() && std::find(types.begin(), types.end(), w.workload_type) == types.end()) {
      return fail(".priorityClass",
                  "priority class " + w.priority_class + " is not allowed for workload type " + type_name(w.workload_type));
    }
    if (!rule->groups.empty() && std::find(rule->groups.begin(), rule->groups.end(), w.business_group) == rule->groups.end()) {
      return fail(".priorityClass",
                  "priority class " + w.priority_class + " is not allowed for business group " + w.business_group);
    }
    s.priority = rule->value;
    s.preemptible = rule->preemptible;
  }
  s.key = s.ns + "/" + w.name;
  s.gpus = w.total_gpus();
  s.outcome.workload = s.key;
  s.outcome.business_group = w.business_group;
  s.outcome.pool = w.resource_pool;
  s.outcome.gpus = s.gpus;
  return s;
}

}  // namespace gpubank::twin::run::detail
