#include "controller/reclaim.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <tuple>

#include "bank/attribution.hpp"
#include "controller/cluster_ledger.hpp"
#include "bank/victims.hpp"
#include "core/timestamp.hpp"
#include "policy/types.hpp"

namespace gpubank::controller {
namespace {

using nlohmann::json;

const json& field(const json& o, const char* key) {
  static const json kNull;
  if (!o.is_object()) return kNull;
  const auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}
std::string text(const json& o, const char* key) {
  const json& v = field(o, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}
std::optional<std::int64_t> time_ms(const std::string& rfc3339) {
  if (rfc3339.empty()) return std::nullopt;
  auto t = parse_rfc3339(rfc3339);
  if (!t) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count();
}
// A whole-number quantity ("4"); 0 for anything else (GPUs are counted in whole devices).
std::int64_t whole_quantity(const json& v) {
  if (v.is_number_integer()) return std::max<std::int64_t>(0, v.get<std::int64_t>());
  if (!v.is_string()) return 0;
  const std::string s = v.get<std::string>();
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  return ec == std::errc() && end == s.data() + s.size() && n >= 0 ? n : 0;
}
const json* condition(const json& workload, std::string_view type) {
  const json& conditions = field(field(workload, "status"), "conditions");
  if (!conditions.is_array()) return nullptr;
  for (const json& c : conditions) {
    if (text(c, "type") == type) return &c;
  }
  return nullptr;
}
bool condition_true(const json& workload, std::string_view type) {
  const json* c = condition(workload, type);
  return c != nullptr && text(*c, "status") == "True";
}

struct QueueInfo {
  std::string group, pool, resource;
};

}  // namespace

std::string_view step_name(ReclaimStep::Kind kind) {
  switch (kind) {
    case ReclaimStep::Kind::Notice: return "Notice";
    case ReclaimStep::Kind::Stop: return "Stop";
    case ReclaimStep::Kind::Resume: return "Resume";
    case ReclaimStep::Kind::Cancel: return "Cancel";
    case ReclaimStep::Kind::Downgrade: return "Downgrade";
  }
  return "Unknown";
}

std::vector<ClusterWorkload> read_workloads(const std::vector<json>& workloads, const std::vector<json>& cluster_queues,
                                            const std::vector<json>& local_queues,
                                            const std::map<std::string, std::int64_t>& owners) {
  std::map<std::string, QueueInfo> queues;
  for (const json& cq : cluster_queues) {
    const json& labels = field(field(cq, "metadata"), "labels");
    QueueInfo q{text(labels, "platform.gpubank.dev/business-group"), text(labels, "platform.gpubank.dev/resource-pool"), ""};
    const json& groups = field(field(cq, "spec"), "resourceGroups");
    if (groups.is_array() && !groups.empty()) {
      const json& covered = field(groups[0], "coveredResources");
      if (covered.is_array() && !covered.empty() && covered[0].is_string()) q.resource = covered[0].get<std::string>();
    }
    if (!q.group.empty() && !q.pool.empty() && !q.resource.empty()) queues[text(field(cq, "metadata"), "name")] = q;
  }
  std::map<std::string, std::string> local;  // "<ns>/<name>" -> ClusterQueue
  for (const json& lq : local_queues) {
    const json& meta = field(lq, "metadata");
    local[text(meta, "namespace") + "/" + text(meta, "name")] = text(field(lq, "spec"), "clusterQueue");
  }
  std::vector<ClusterWorkload> out;
  for (const json& w : workloads) {
    const json& meta = field(w, "metadata");
    const json& spec = field(w, "spec");
    ClusterWorkload c;
    const std::string ns = text(meta, "namespace");
    c.key = ns + "/" + text(meta, "name");
    if (const json& refs = field(meta, "ownerReferences"); refs.is_array()) {
      for (const json& r : refs) {
        if (field(r, "controller").is_boolean() && field(r, "controller").get<bool>()) {
          c.owner_uid = text(r, "uid");
          c.owner_kind = text(r, "kind");
          c.owner_name = text(r, "name");
        }
      }
    }
    c.cluster_queue = text(field(field(w, "status"), "admission"), "clusterQueue");
    if (c.cluster_queue.empty()) {
      const auto it = local.find(ns + "/" + text(spec, "queueName"));
      if (it != local.end()) c.cluster_queue = it->second;
    }
    const auto q = queues.find(c.cluster_queue);
    if (q == queues.end()) continue;  // not a queue gpubank rendered
    c.group = q->second.group;
    c.pool = q->second.pool;
    c.flavor = c.pool;  // gpubank names each pool's ResourceFlavor after the pool
    const json& assignments = field(field(field(w, "status"), "admission"), "podSetAssignments");
    if (assignments.is_array()) {
      for (const json& a : assignments) {
        const std::string flavor = text(field(a, "flavors"), q->second.resource.c_str());
        if (!flavor.empty()) {
          c.flavor = flavor;
          break;
        }
      }
    }
    const json& pod_sets = field(spec, "podSets");
    json template_labels;
    if (pod_sets.is_array()) {
      for (const json& ps : pod_sets) {
        const std::int64_t count = std::max<std::int64_t>(0, field(ps, "count").is_number_integer() ? field(ps, "count").get<std::int64_t>() : 1);
        const json& pod_spec = field(field(ps, "template"), "spec");
        std::int64_t per_pod = 0;
        const json& containers = field(pod_spec, "containers");
        if (containers.is_array()) {
          for (const json& ct : containers) {
            const json& resources = field(ct, "resources");
            const json& requests = field(resources, "requests");
            const json& limits = field(resources, "limits");
            per_pod += whole_quantity(requests.contains(q->second.resource) ? requests[q->second.resource]
                                                                            : field(limits, q->second.resource.c_str()));
          }
        }
        c.gpus += count * per_pod;
        c.pods += count;
        if (c.gpus_per_pod == 0) c.gpus_per_pod = per_pod;
        if (template_labels.is_null()) template_labels = field(field(field(ps, "template"), "metadata"), "labels");
      }
    }
    const json& active = field(spec, "active");
    c.active = !active.is_boolean() || active.get<bool>();
    c.finished = condition_true(w, "Finished");
    c.admitted = condition_true(w, "QuotaReserved") && !c.finished;
    if (const json* qr = condition(w, "QuotaReserved"); qr != nullptr && condition_true(w, "QuotaReserved")) {
      c.quota_reserved_ms = time_ms(text(*qr, "lastTransitionTime")).value_or(0);
      if (c.admitted) c.admitted_at_ms = c.quota_reserved_ms;
    }
    if (const json* f = condition(w, "Finished"); f != nullptr && c.finished) {
      c.finished_ms = time_ms(text(*f, "lastTransitionTime")).value_or(0);
    }
    if (field(spec, "priority").is_number_integer()) c.priority = field(spec, "priority").get<std::int32_t>();
    c.priority_class = text(spec, "priorityClassName");
    if (c.priority_class.empty()) c.priority_class = text(field(spec, "priorityClassRef"), "name");
    c.created_ms = time_ms(text(meta, "creationTimestamp")).value_or(0);
    // The job's labels reach the Workload when Kueue copies them (labelKeysToCopy); the
    // pod template always carries them.
    const json& labels = field(meta, "labels");
    auto label = [&](std::string_view key) {
      std::string v = text(labels, std::string(key).c_str());
      return v.empty() ? text(template_labels, std::string(key).c_str()) : v;
    };
    c.workload_type = label(kWorkloadTypeLabel);
    if (c.workload_type == "batch") c.traits.emplace_back("batch");
    if (label(kCheckpointableLabel) == "true") c.traits.emplace_back("checkpointable");
    if (c.workload_type == "training") c.traits.emplace_back("training");
    if (c.workload_type == "notebook") c.traits.emplace_back("development");
    const json& annotations = field(meta, "annotations");
    c.reclaim_for = text(annotations, std::string(kReclaimFor).c_str());
    c.checkpoint_requested_ms = time_ms(text(annotations, std::string(kCheckpointRequested).c_str()));
    c.reclaim_deadline_ms = time_ms(text(annotations, std::string(kReclaimDeadline).c_str()));
    c.reclaimed_ms = time_ms(text(annotations, std::string(kReclaimedAt).c_str()));
    c.downgraded_to = text(annotations, std::string(kDowngradedTo).c_str());
    if (const auto o = owners.find(c.key); o != owners.end()) c.checkpoint_completed_ms = o->second;
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const ClusterWorkload& a, const ClusterWorkload& b) { return a.key < b.key; });
  return out;
}

ReclaimPlan plan_reclaims(const policy::PolicySet& set, const std::vector<ClusterWorkload>& workloads, std::int64_t now_ms,
                          const std::vector<ApprovedStop>& approved) {
  ReclaimPlan plan;
  const policy::PlatformGuardrailsSpec* guardrails = set.guardrails_spec();
  if (guardrails == nullptr) return plan;
  auto is_protected = [&](const ClusterWorkload& w) {
    return std::any_of(guardrails->protected_workload_types.begin(), guardrails->protected_workload_types.end(),
                       [&](policy::WorkloadType t) {
                         return (t == policy::WorkloadType::Inference && w.workload_type == "inference") ||
                                (t == policy::WorkloadType::Training && w.workload_type == "training") ||
                                (t == policy::WorkloadType::Batch && w.workload_type == "batch") ||
                                (t == policy::WorkloadType::Notebook && w.workload_type == "notebook");
                       });
  };
  std::map<std::string, int> capacity;
  for (const policy::Pool& p : guardrails->pools) capacity[p.name] = p.capacity;
  // Guarantees as Kueue enforces them now: TemporaryQuota leases in force included.
  const std::vector<GroupQuota> quotas_now =
      group_quotas(set, Timestamp(std::chrono::duration_cast<Timestamp::duration>(std::chrono::milliseconds(now_ms))));

  for (const auto& [pool, pool_capacity] : capacity) {
    struct Lender {
      std::int64_t guaranteed = 0;
      std::vector<std::string> only_preempt;
      std::int64_t grace_ms = 0;
    };
    std::map<std::string, Lender> lenders;
    for (const GroupQuota& g : quotas_now) {
      if (g.pool == pool) lenders[g.group] = Lender{g.guaranteed, g.lend_only_to, g.grace_ms};
    }
    const std::vector<bank::PoolGroupQuota> quotas = pool_group_quotas(quotas_now, pool);
    std::vector<bank::RunningWorkload> running;
    std::map<std::string, std::int64_t> used;
    std::int64_t in_use = 0;
    std::map<std::string, const ClusterWorkload*> by_key;
    for (const ClusterWorkload& w : workloads) {
      if (w.pool != pool) continue;
      by_key[w.key] = &w;
      if (!w.admitted || !w.active) continue;
      running.push_back({w.key, w.group, w.gpus, w.admitted_at_ms, w.traits});
      used[w.group] += w.gpus;
      in_use += w.gpus;
    }
    std::sort(running.begin(), running.end(), [](const auto& a, const auto& b) {
      return std::tie(a.admitted_at, a.name) < std::tie(b.admitted_at, b.name);
    });
    bank::BorrowTracker tracker(pool);
    (void)tracker.update(now_ms, quotas, running);

    // What each lender's pending workloads need within its guarantee, in Kueue's order
    // (priority, then creation).
    std::map<std::string, std::int64_t> need;
    for (const auto& [group, lender] : lenders) {
      std::vector<const ClusterWorkload*> pending;
      for (const ClusterWorkload& w : workloads) {
        if (w.pool == pool && w.group == group && w.active && !w.admitted && !w.finished && w.reclaimed_ms == std::nullopt) {
          pending.push_back(&w);
        }
      }
      std::sort(pending.begin(), pending.end(), [](const ClusterWorkload* a, const ClusterWorkload* b) {
        return std::tuple(-a->priority, a->created_ms, a->key) < std::tuple(-b->priority, b->created_ms, b->key);
      });
      std::int64_t fits = 0;
      for (const ClusterWorkload* w : pending) {
        if (used[group] + fits + w->gpus <= lender.guaranteed) fits += w->gpus;
      }
      need[group] = fits;
    }

    // Notices under way: stop them when their job checkpointed or their grace is over;
    // withdraw them when their lender needs nothing any more.
    std::map<std::string, std::int64_t> under_notice;  // by lender
    std::set<std::string> noticed;
    for (const auto& [key, w] : by_key) {
      if (w->reclaim_for.empty() || w->reclaimed_ms || !w->admitted || !w->active) continue;
      noticed.insert(key);
      const bool approved_stop = w->reclaim_for == kApprovedLowUtilization;
      const std::string gives_back = approved_stop ? "frees " + std::to_string(w->gpus) + " GPUs of " + pool +
                                                         " (an approved low-utilisation reclaim)"
                                                   : "gives " + std::to_string(w->gpus) + " GPUs of " + pool +
                                                         " back to " + w->reclaim_for;
      const std::int64_t requested = w->checkpoint_requested_ms.value_or(0);
      const std::int64_t deadline = w->reclaim_deadline_ms.value_or(now_ms);
      ReclaimStep s{ReclaimStep::Kind::Stop, key, w->reclaim_for, pool, w->gpus, deadline, "", "", w->group, {}, "", 0};
      // Work since the later of its admission (a resumed job restarts from its checkpoint)
      // and its last checkpoint is lost.
      if (w->checkpoint_completed_ms || w->admitted_at_ms > 0) {
        const std::int64_t since = std::max(w->checkpoint_completed_ms.value_or(0), w->admitted_at_ms);
        s.recompute_loss_gpu_ms = w->gpus * std::max<std::int64_t>(0, now_ms - since);
      }
      if (w->checkpoint_completed_ms && *w->checkpoint_completed_ms >= requested) {
        s.reason = "CheckpointCompleted";
        s.message = key + " checkpointed; it stops and " + gives_back;
        plan.steps.push_back(std::move(s));
      } else if (now_ms >= deadline) {
        s.reason = "GraceExpired";
        s.message = key + " did not report a checkpoint within its grace period; it stops and " + gives_back;
        plan.steps.push_back(std::move(s));
      } else if (!approved_stop && need[w->reclaim_for] == 0) {
        s.kind = ReclaimStep::Kind::Cancel;
        s.reason = "DemandGone";
        s.message = w->reclaim_for + " no longer needs its GPUs of " + pool + "; the notice to " + key + " is withdrawn";
        plan.steps.push_back(std::move(s));
      } else {
        if (!approved_stop) {
          under_notice[w->reclaim_for] += w->gpus;
          plan.reclaiming[pool].insert(w->reclaim_for);
        }
        // Look again at the deadline, and every kCheckpointPollMs before it: a job's
        // checkpoint-completed annotation is read, not watched.
        const std::int64_t due = std::min(deadline, now_ms + kCheckpointPollMs);
        plan.next_deadline_ms = std::min(plan.next_deadline_ms.value_or(due), due);
      }
    }

    // Approved low-utilisation reclaims: a notice to each running Workload of an approved
    // job that has none yet, with its own group's grace.
    for (const auto& [key, w] : by_key) {
      if (!w->admitted || !w->active || !w->reclaim_for.empty() || w->reclaimed_ms || w->owner_uid.empty()) continue;
      const std::string& owner = w->owner_uid;
      const auto a =
          std::find_if(approved.begin(), approved.end(), [&](const ApprovedStop& x) { return x.owner_uid == owner; });
      if (a == approved.end()) continue;
      if (!a->downgrade_to.empty()) {
        const auto rule = std::find_if(guardrails->priorities.begin(), guardrails->priorities.end(),
                                       [&](const policy::PriorityRule& r) { return r.name == a->downgrade_to; });
        if (rule == guardrails->priorities.end()) {
          plan.downgrades_skipped[key] = "priority class " + a->downgrade_to + " is no longer among the guardrails' priorities";
        } else if (w->priority <= rule->value) {
          if (w->downgraded_to != a->downgrade_to) {
            plan.downgrades_skipped[key] = "its priority " + std::to_string(w->priority) + " is not above " +
                                           a->downgrade_to + "'s " + std::to_string(rule->value);
          }
        } else {
          ReclaimStep step{ReclaimStep::Kind::Downgrade, key, "", pool, w->gpus, 0, "DowngradeApproved",
                           a->approver + " approved the downgrade of " + key + " (" + std::to_string(w->gpus) +
                               " GPUs of " + pool + ", low-utilisation alert " + std::to_string(a->alert_id) +
                               ") from priority " + std::to_string(w->priority) + " to " + rule->name + " (" +
                               std::to_string(rule->value) + "); it keeps running, preemptible by work above it",
                           "", std::nullopt, rule->name, rule->value};
          plan.steps.push_back(std::move(step));
        }
        continue;
      }
      const auto own = lenders.find(w->group);
      const std::int64_t grace_ms = own != lenders.end() ? own->second.grace_ms : guardrails->max_grace_period.milliseconds();
      const std::int64_t deadline = now_ms + grace_ms;
      noticed.insert(key);
      plan.steps.push_back({ReclaimStep::Kind::Notice, key, std::string(kApprovedLowUtilization), pool, w->gpus, deadline,
                            "ReclaimApproved",
                            a->approver + " approved the reclaim of " + key + " (" + std::to_string(w->gpus) +
                                " GPUs of " + pool + ", low-utilisation alert " + std::to_string(a->alert_id) +
                                "); it is asked to checkpoint and stops within " + std::to_string(grace_ms / 1000) + " s",
                            "", std::nullopt, "", 0});
      const std::int64_t due = std::min(deadline, now_ms + kCheckpointPollMs);
      plan.next_deadline_ms = std::min(plan.next_deadline_ms.value_or(due), due);
    }

    // New notices: what each lender needs beyond the pool's free quota and the notices
    // already under way, taken from what it lent.
    std::int64_t free_quota = std::max<std::int64_t>(0, pool_capacity - in_use);
    for (const auto& [group, lender] : lenders) {
      const std::int64_t from_free = std::min(free_quota, need[group]);
      free_quota -= from_free;
      // What the lender still lacks, and what of it can be taken back from its loans.
      const std::int64_t want = need[group] - from_free - under_notice[group];
      if (want <= 0) continue;
      const std::int64_t demand = std::min(want, tracker.lent_by(group) - under_notice[group]);
      if (demand <= 0) {
        plan.uncovered[pool + "/" + group] = want;
        continue;
      }
      std::vector<bank::VictimCandidate> candidates;
      std::set<std::string> seen;
      for (const bank::Loan& loan : tracker.lent_records(group)) {
        if (!seen.insert(loan.workload).second || noticed.contains(loan.workload)) continue;
        const ClusterWorkload& w = *by_key.at(loan.workload);
        bank::VictimCandidate c;
        c.workload = w.key;
        c.gpus = w.gpus;
        const bool checkpointable = std::find(w.traits.begin(), w.traits.end(), "checkpointable") != w.traits.end();
        c.klass = bank::classify({.running = true, .checkpointable = checkpointable,
                                  .development = w.workload_type == "notebook",
                                  .expected_runtime = std::numeric_limits<std::int64_t>::max()});
        c.priority = w.priority;
        c.admitted_at = w.admitted_at_ms;
        c.protected_ = is_protected(w);
        // A priority class the guardrails declare `preemptible: false` is never a victim.
        for (const policy::PriorityRule& rule : guardrails->priorities) {
          if (rule.name == w.priority_class) c.preemptible = rule.preemptible;
        }
        c.traits = w.traits;
        if (!bank::eligible_victim(c, lender.only_preempt)) continue;
        candidates.push_back(std::move(c));
      }
      const bank::VictimChoice choice = bank::choose_victims(std::move(candidates), demand);
      if (!choice.victims.empty()) plan.reclaiming[pool].insert(group);
      for (const bank::VictimCandidate& v : choice.victims) {
        const std::int64_t deadline = now_ms + lender.grace_ms;
        plan.steps.push_back({ReclaimStep::Kind::Notice, v.workload, group, pool, v.gpus, deadline, "CheckpointRequested",
                              group + " needs " + std::to_string(demand) + " of the GPUs of " + pool + " it lent; " +
                                  v.workload + " (" + std::to_string(v.gpus) + " GPUs, " +
                                  std::string(bank::victim_class_name(v.klass)) + ") is asked to checkpoint and stops within " +
                                  std::to_string(lender.grace_ms / 1000) + " s",
                            "", std::nullopt, "", 0});
        const std::int64_t due = std::min(deadline, now_ms + kCheckpointPollMs);
        plan.next_deadline_ms = std::min(plan.next_deadline_ms.value_or(due), due);
      }
      if (want > choice.gpus) plan.uncovered[pool + "/" + group] = want - choice.gpus;
    }

    // Victims gpubank stopped come back once their lender needs nothing more.
    for (const auto& [key, w] : by_key) {
      if (!w->reclaimed_ms || w->active || w->finished || w->reclaim_for == kApprovedLowUtilization) continue;
      if (need[w->reclaim_for] > 0) {
        plan.reclaiming[pool].insert(w->reclaim_for);  // stopped; its lender is not admitted yet
        continue;
      }
      plan.steps.push_back({ReclaimStep::Kind::Resume, key, w->reclaim_for, pool, w->gpus, 0, "LenderIdle",
                            w->reclaim_for + " has no pending demand on " + pool + " any more; " + key +
                                " is queued again",
                            "", std::nullopt, "", 0});
    }
  }
  return plan;
}

std::vector<std::string> hold_borrowing_during_reclaims(std::vector<render::RenderedObject>& objects,
                                                        const std::map<std::string, std::set<std::string>>& reclaiming) {
  std::vector<std::string> held;
  for (render::RenderedObject& object : objects) {
    render::Json& m = object.manifest;
    if (m.value("kind", "") != "ClusterQueue") continue;
    const std::string pool = render::label_of(m, "platform.gpubank.dev/resource-pool");
    const auto lenders = reclaiming.find(pool);
    if (lenders == reclaiming.end() || lenders->second.contains(render::label_of(m, "platform.gpubank.dev/business-group"))) {
      continue;
    }
    bool changed = false;
    for (render::Json* r : render::flavor_resources(m, pool)) {
      (*r)["borrowingLimit"] = 0;
      changed = true;
    }
    std::string names;
    for (const std::string& l : lenders->second) names += (names.empty() ? "" : ", ") + l;
    if (changed) {
      held.push_back("ClusterQueue/" + m["metadata"].value("name", "") + ": borrowingLimit 0 while " + names +
                     " reclaim" + (lenders->second.size() == 1 ? "s" : "") + " on " + pool);
    }
  }
  return held;
}

}  // namespace gpubank::controller
