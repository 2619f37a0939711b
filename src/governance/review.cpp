#include "governance/review.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "core/timestamp.hpp"
#include "governance/text.hpp"

namespace gpubank::governance {
namespace {

using Json = nlohmann::ordered_json;

std::string percent(double v) { return fixed(v * 100, 0) + "%"; }

const std::vector<serving::PromSample>& answer(const Answers& answers, std::string_view name) {
  static const std::vector<serving::PromSample> none;
  const auto it = answers.find(name);
  return it == answers.end() ? none : it->second;
}

}  // namespace

std::string idle_above_floor_query_name(int min_replicas) {
  return "idle_above_floor_" + std::to_string(min_replicas);
}

std::vector<Query> plan_review(const ShowbackPeriod& period, const policy::PolicySet& set) {
  const std::string minutes = std::to_string(period.minutes()) + "m";
  const std::string range = "[" + minutes + ":1m]";
  // Each vLLM pod's requests running and waiting, with its workload.
  const std::string activity =
      "((sum by (cluster, namespace, pod) (vllm:num_requests_running) + sum by (cluster, namespace, pod) "
      "(vllm:num_requests_waiting)) * on (cluster, namespace, pod) group_left (workload) max by (cluster, namespace, "
      "pod, workload) (gpubank_gpu_allocation_info))";
  std::set<int> floors;
  for (const policy::PolicyObject& p : set.policies()) {
    if (p.kind == policy::Kind::InferenceScalingPolicy) {
      floors.insert(p.as<policy::InferenceScalingPolicySpec>().min_replicas);
    }
  }
  std::vector<Query> idle;
  for (const int floor : floors) {
    // Minutes with more pods than the floor and at least one idle pod.
    idle.push_back({idle_above_floor_query_name(floor),
                    "sum by (cluster, namespace, workload) (sum_over_time(((count by (cluster, namespace, workload) " +
                        activity + " > bool " + std::to_string(floor) +
                        ") * on (cluster, namespace, workload) (count by (cluster, namespace, workload) (" + activity +
                        " == 0) >= bool 1))" + range + "))"});
  }
  std::vector<Query> out = {
      {"borrowing_minutes", "sum by (cluster, borrower, pool) (sum_over_time((sum by (cluster, borrower, pool) "
                            "(gpubank_bank_loan_gpus) > bool 0)" + range + "))"},
      {"pending_minutes", "sum by (cluster, cluster_queue) (sum_over_time((sum by (cluster, cluster_queue) "
                          "(kueue_pending_workloads{status=\"inadmissible\", replica_role!=\"follower\"}) > bool 0)" +
                              range + "))"},
      {"cluster_queues", "group by (cluster, cluster_queue) (last_over_time(kueue_cluster_queue_nominal_quota[" +
                             minutes + "]))"},
      // The most GPUs each group held on each pool in any minute (a time-sliced device 1/holders).
      {"peak_used", "max by (cluster, business_group, pool) (max_over_time((sum by (cluster, business_group, pool) "
                    "(gpubank_gpu_allocation_info / on (cluster, node, gpu_uuid, gpu_instance) group_left count by "
                    "(cluster, node, gpu_uuid, gpu_instance) (gpubank_gpu_allocation_info)))" + range + "))"},
  };
  for (Query& q : idle) out.push_back(std::move(q));
  return out;
}

std::vector<Finding> review(const Showback& s, const Answers& answers, const policy::PolicySet& set,
                            const AlertBook* alerts, const ReviewOptions& options) {
  std::vector<Finding> out;
  const double period_minutes = static_cast<double>(s.period.minutes());
  const double period_hours = period_minutes / 60.0;

  // The guarantees, by (group, pool).
  std::map<std::pair<std::string, std::string>, const policy::PolicyObject*> quotas;
  for (const policy::PolicyObject& p : set.policies()) {
    if (p.kind != policy::Kind::GPUQuotaPolicy) continue;
    const auto& q = p.as<policy::GPUQuotaPolicySpec>();
    quotas[{q.business_group, q.resource_pool}] = &p;
  }
  std::map<std::pair<std::string, std::string>, double> used;  // GPU-hours
  for (const ShowbackRow& r : s.rows) used[{r.business_group, r.pool}] += r.allocated_gpu_hours;

  for (const auto& [key, policy] : quotas) {
    const auto& q = policy->as<policy::GPUQuotaPolicySpec>();
    if (q.guaranteed <= 0) continue;
    const double average = used[key] / period_hours;
    const double share = average / q.guaranteed;
    if (share < options.unused_below) {
      const int suggested = static_cast<int>(std::ceil(average * (1 + options.headroom)));
      out.push_back({"guarantee-unused", policy->ref(), key.first + " on " + key.second,
                     "used " + fixed(average, 1) + " of " + std::to_string(q.guaranteed) + " guaranteed GPUs on average (" +
                         percent(share) + "): lower spec.guaranteed to " + std::to_string(suggested) +
                         " (average use plus " + percent(options.headroom) + ")",
                     Json{{"guaranteed", q.guaranteed},
                          {"averageGpusUsed", average},
                          {"usedShare", share},
                          {"suggestedGuaranteed", suggested}}});
    }
  }

  // Borrowing most of the time.
  std::map<std::pair<std::string, std::string>, double> borrowing_minutes;
  for (const serving::PromSample& x : answer(answers, "borrowing_minutes")) {
    if (std::isfinite(x.value)) borrowing_minutes[{label(x, "borrower"), label(x, "pool")}] += x.value;
  }
  for (const auto& [key, minutes] : borrowing_minutes) {
    const double share = minutes / period_minutes;
    if (share <= options.borrowed_above) continue;
    const auto loans = s.loans.find(key);
    const double borrowed_hours = loans == s.loans.end() ? 0 : loans->second.borrowed_gpu_hours;
    const double while_borrowing = minutes > 0 ? borrowed_hours * 60 / minutes : 0;  // GPUs, on average
    const auto policy = quotas.find(key);
    const int current = policy == quotas.end() ? 0 : policy->second->as<policy::GPUQuotaPolicySpec>().guaranteed;
    const int suggested = current + static_cast<int>(std::ceil(while_borrowing));
    out.push_back({"borrowed-most-of-the-time",
                   policy == quotas.end() ? "GPUQuotaPolicy (none for " + key.first + " on " + key.second + ")"
                                          : policy->second->ref(),
                   key.first + " on " + key.second,
                   "borrowed during " + percent(share) + " of the period, " + fixed(while_borrowing, 1) +
                       " GPUs on average while borrowing: raise spec.guaranteed from " + std::to_string(current) +
                       " to " + std::to_string(suggested),
                   Json{{"borrowingShare", share},
                        {"borrowedGpuHours", borrowed_hours},
                        {"averageGpusWhileBorrowing", while_borrowing},
                        {"guaranteed", current},
                        {"suggestedGuaranteed", suggested}}});
  }

  // Pending long in Kueue.
  for (const serving::PromSample& x : answer(answers, "pending_minutes")) {
    if (!std::isfinite(x.value)) continue;
    const double share = x.value / period_minutes;
    if (share <= options.pending_above) continue;
    const std::string queue = label(x, "cluster_queue");
    std::string policy = "GPUQuotaPolicy (none renders ClusterQueue " + queue + ")";
    for (const auto& [key, p] : quotas) {
      if (key.first + "-" + key.second == queue) policy = p->ref();
    }
    out.push_back({"pending-long", policy, "ClusterQueue " + queue,
                   "workloads were inadmissible (no quota left) during " + percent(share) +
                       " of the period: raise the guarantee or borrowLimit, or move work to another pool",
                   Json{{"inadmissibleShare", share}, {"inadmissibleMinutes", x.value}}});
  }

  // Pools and queues without a policy.
  const policy::PolicyObject* guardrails = set.guardrails();
  std::set<std::string> defined_pools;
  if (const auto* g = set.guardrails_spec()) {
    for (const policy::Pool& p : g->pools) defined_pools.insert(p.name);
  }
  std::set<std::string> seen_pools;
  for (const serving::PromSample& x : answer(answers, "capacity")) seen_pools.insert(label(x, "pool"));
  for (const std::string& pool : seen_pools) {
    if (pool.empty() || defined_pools.contains(pool)) continue;
    out.push_back({"pool-without-policy", guardrails != nullptr ? guardrails->ref() : "PlatformGuardrails",
                   "pool " + pool,
                   "devices report pool " + pool + ", which the guardrails do not define: add it to spec.pools",
                   Json{{"pool", pool}}});
  }
  for (const std::string& pool : defined_pools) {
    const bool guaranteed = std::any_of(quotas.begin(), quotas.end(), [&](const auto& q) {
      return q.first.second == pool && q.second->template as<policy::GPUQuotaPolicySpec>().guaranteed > 0;
    });
    if (!guaranteed) {
      out.push_back({"pool-without-policy", "GPUQuotaPolicy (none guarantees on " + pool + ")", "pool " + pool,
                     "no GPUQuotaPolicy guarantees anything on " + pool + ": its devices are nobody's to lend",
                     Json{{"pool", pool}}});
    }
  }
  for (const serving::PromSample& x : answer(answers, "cluster_queues")) {
    const std::string queue = label(x, "cluster_queue");
    const bool rendered = std::any_of(quotas.begin(), quotas.end(),
                                      [&](const auto& q) { return q.first.first + "-" + q.first.second == queue; });
    if (!queue.empty() && !rendered) {
      out.push_back({"queue-without-policy", "GPUQuotaPolicy (none renders ClusterQueue " + queue + ")",
                     "ClusterQueue " + queue,
                     "Kueue has ClusterQueue " + queue + " but no GPUQuotaPolicy renders it: adopt it or delete it",
                     Json{{"clusterQueue", queue}}});
    }
  }

  // Leases: ended, or in force while the group never needed more than its guarantee.
  const bool peaks_known = answers.contains("peak_used");
  std::map<std::pair<std::string, std::string>, double> peak;
  for (const serving::PromSample& x : answer(answers, "peak_used")) {
    if (!std::isfinite(x.value)) continue;
    double& most = peak[{label(x, "business_group"), label(x, "pool")}];  // one per cluster: the largest
    most = std::max(most, x.value);
  }
  auto ms_of = [](const Timestamp& t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  };
  for (const policy::PolicyObject& p : set.policies()) {
    if (p.kind != policy::Kind::CapacityLease) continue;
    const auto& l = p.as<policy::CapacityLeaseSpec>();
    const std::string subject = l.business_group + " on " + l.resource_pool;
    if (l.end && ms_of(*l.end) <= s.period.to_ms) {
      out.push_back({"lease-expired", p.ref(), subject,
                     "ended at " + format_rfc3339(*l.end) + ", before the period's end: it grants nothing any more, "
                     "delete it",
                     Json{{"end", format_rfc3339(*l.end)}}});
      continue;
    }
    const bool in_force = (!l.start || ms_of(*l.start) < s.period.to_ms) && (!l.end || ms_of(*l.end) > s.period.from_ms);
    if (!peaks_known || !in_force || l.type != policy::LeaseType::TemporaryQuota || !l.extra_guaranteed ||
        *l.extra_guaranteed <= 0) {
      continue;
    }
    const auto q = quotas.find({l.business_group, l.resource_pool});
    const int guaranteed = q == quotas.end() ? 0 : q->second->as<policy::GPUQuotaPolicySpec>().guaranteed;
    const auto held = peak.find({l.business_group, l.resource_pool});
    const double most = held == peak.end() ? 0.0 : held->second;
    if (most > guaranteed + 1e-9) continue;
    out.push_back({"lease-unused", p.ref(), subject,
                   "the group held at most " + fixed(most, 1) + " GPUs on the pool in any minute, within its " +
                       std::to_string(guaranteed) + " guaranteed without the lease: the " +
                       std::to_string(*l.extra_guaranteed) + " extra were not needed; let it end early or delete it",
                   Json{{"peakGpusUsed", most}, {"guaranteed", guaranteed}, {"extraGuaranteed", *l.extra_guaranteed}}});
  }

  // Inference replicas idle above their floor.
  for (const policy::PolicyObject& p : set.policies()) {
    if (p.kind != policy::Kind::InferenceScalingPolicy) continue;
    const auto& spec = p.as<policy::InferenceScalingPolicySpec>();
    double idle_minutes = 0;
    for (const serving::PromSample& x : answer(answers, idle_above_floor_query_name(spec.min_replicas))) {
      if (std::isfinite(x.value) && label(x, "namespace") == spec.workload_ref.namespace_ &&
          label(x, "workload") == spec.workload_ref.name) {
        idle_minutes += x.value;
      }
    }
    const double share = idle_minutes / period_minutes;
    if (share <= options.idle_above) continue;
    out.push_back({"replicas-idle-above-floor", p.ref(), spec.workload_ref.namespace_ + "/" + spec.workload_ref.name,
                   "ran more than minReplicas (" + std::to_string(spec.min_replicas) +
                       ") replicas with one or more idle during " + percent(share) +
                       " of the period: lower the TidalPolicy's inferenceReplicaFloor for it, or shorten "
                       "spec.scaleDown.stabilizationWindow",
                   Json{{"idleAboveFloorMinutes", idle_minutes}, {"idleAboveFloorShare", share},
                        {"minReplicas", spec.min_replicas}}});
  }

  // Alerts that kept re-opening.
  if (alerts != nullptr) {
    for (const auto& [uid, times] : alerts->reopened) {
      if (times < options.reopened_at_least) continue;
      std::string policy = "LowUtilizationPolicy";
      const auto open = alerts->open.find(uid);
      if (open != alerts->open.end()) policy += "/" + open->second.policy;
      out.push_back({"alert-reopened", policy, "workload " + uid,
                     "its low-utilisation alert opened " + std::to_string(times) +
                         " times: tune the policy's thresholds or window for such work, or grant an exclusion",
                     Json{{"workloadUid", uid}, {"alerts", times}}});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.kind, a.subject) < std::tie(b.kind, b.subject);
  });
  return out;
}

Json to_json(const std::vector<Finding>& findings) {
  Json out = Json::array();
  for (const Finding& f : findings) {
    out.push_back(Json{{"kind", f.kind}, {"policy", f.policy}, {"subject", f.subject}, {"message", f.message},
                       {"evidence", f.evidence}});
  }
  return out;
}

std::string review_text(const std::vector<Finding>& findings) {
  std::ostringstream out;
  if (findings.empty()) out << "nothing to change\n";
  for (const Finding& f : findings) {
    out << f.kind << "  " << f.subject << "\n  edit " << f.policy << ": " << f.message << '\n';
  }
  return out.str();
}

}  // namespace gpubank::governance
