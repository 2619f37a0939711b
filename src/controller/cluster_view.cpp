#include "controller/cluster_view.hpp"

#include <algorithm>
#include <map>

#include "bank/position_views.hpp"
#include "core/timestamp.hpp"
#include "policy/types.hpp"

namespace gpubank::controller {
namespace {

ViewJson time_or_null(std::int64_t ms) {
  return ms > 0 ? ViewJson(format_rfc3339(Timestamp(std::chrono::milliseconds(ms)))) : ViewJson(nullptr);
}

// A quantity as Kueue writes it ("8", 8): an integer, or null when it is not one.
ViewJson count_of(const nlohmann::json& q) {
  if (q.is_number_integer()) return q.get<std::int64_t>();
  if (q.is_string()) {
    const std::string s = q.get<std::string>();
    if (!s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::stoll(s);
    }
  }
  return nullptr;
}

}  // namespace

ViewJson pools_view(const policy::PolicySet& policies, const std::vector<bank::Position>& positions) {
  return bank::pools_json(policies.guardrails_spec(), positions);
}

ViewJson groups_view(const policy::PolicySet& policies, const std::vector<bank::Position>& positions) {
  return bank::groups_json(policies.guardrails_spec(), positions);
}

ViewJson queues_view(const std::vector<nlohmann::json>& cluster_queues) {
  ViewJson list = ViewJson::array();
  for (const nlohmann::json& q : cluster_queues) {
    const nlohmann::json meta = q.value("metadata", nlohmann::json::object());
    const nlohmann::json labels = meta.value("labels", nlohmann::json::object());
    const std::string group = labels.value("platform.gpubank.dev/business-group", "");
    const std::string pool = labels.value("platform.gpubank.dev/resource-pool", "");
    if (group.empty() || pool.empty()) continue;  // not a queue gpubank renders
    ViewJson j = ViewJson::object();
    j["clusterQueue"] = meta.value("name", "");
    j["businessGroup"] = group;
    j["pool"] = pool;
    // The GPU quota: the first resource of the first flavor (what read_workloads counts).
    std::string flavor, resource;
    nlohmann::json quota = nlohmann::json::object();
    const nlohmann::json spec = q.value("spec", nlohmann::json::object());
    for (const auto& rg : spec.value("resourceGroups", nlohmann::json::array())) {
      for (const auto& f : rg.value("flavors", nlohmann::json::array())) {
        for (const auto& r : f.value("resources", nlohmann::json::array())) {
          if (resource.empty() && r.is_object()) {
            flavor = f.value("name", "");
            resource = r.value("name", "");
            quota = r;
          }
        }
      }
    }
    j["flavor"] = flavor;
    j["resource"] = resource;
    j["nominalQuota"] = count_of(quota.value("nominalQuota", nlohmann::json()));
    j["borrowingLimit"] = count_of(quota.value("borrowingLimit", nlohmann::json()));
    j["lendingLimit"] = count_of(quota.value("lendingLimit", nlohmann::json()));
    ViewJson used = 0;
    const nlohmann::json status = q.value("status", nlohmann::json::object());
    for (const auto& fu : status.value("flavorsUsage", nlohmann::json::array())) {
      if (fu.value("name", "") != flavor) continue;
      for (const auto& r : fu.value("resources", nlohmann::json::array())) {
        if (r.value("name", "") == resource) used = count_of(r.value("total", nlohmann::json()));
      }
    }
    j["used"] = used;
    j["pendingWorkloads"] = status.value("pendingWorkloads", 0);
    j["admittedWorkloads"] = status.value("admittedWorkloads", 0);
    list.push_back(std::move(j));
  }
  std::sort(list.begin(), list.end(), [](const ViewJson& a, const ViewJson& b) {
    return a["clusterQueue"].get<std::string>() < b["clusterQueue"].get<std::string>();
  });
  return list;
}

std::string workload_state(const ClusterWorkload& w) {
  if (w.finished) return "Finished";
  if (!w.active) return "Deactivated";
  return w.admitted ? "Running" : "Pending";
}

ViewJson workload_view(const ClusterWorkload& w) {
  ViewJson j = ViewJson::object();
  j["workload"] = w.key;
  j["businessGroup"] = w.group;
  j["pool"] = w.pool;
  j["state"] = workload_state(w);
  j["gpus"] = w.gpus;
  j["workloadType"] = w.workload_type.empty() ? ViewJson(nullptr) : ViewJson(w.workload_type);
  j["priorityClass"] = w.priority_class;
  j["priority"] = w.priority;
  j["clusterQueue"] = w.cluster_queue;
  j["arrival"] = time_or_null(w.created_ms);
  j["firstAdmitted"] = w.admitted ? time_or_null(w.admitted_at_ms) : ViewJson(nullptr);
  if (!w.owner_name.empty()) j["owner"] = {{"kind", w.owner_kind}, {"name", w.owner_name}};
  if (!w.reclaim_for.empty()) j["reclaimFor"] = w.reclaim_for;
  return j;
}

ViewJson workloads_view(const std::vector<ClusterWorkload>& workloads, const WorkloadQuery& query) {
  std::vector<const ClusterWorkload*> shown;
  for (const ClusterWorkload& w : workloads) {
    if (!query.business_group.empty() && w.group != query.business_group) continue;
    if (!query.pool.empty() && w.pool != query.pool) continue;
    if (!query.state.empty() && workload_state(w) != query.state) continue;
    shown.push_back(&w);
  }
  std::sort(shown.begin(), shown.end(), [](const ClusterWorkload* a, const ClusterWorkload* b) { return a->key < b->key; });
  ViewJson list = ViewJson::array();
  for (const ClusterWorkload* w : shown) list.push_back(workload_view(*w));
  return list;
}

twin::preview::WorkloadRecord work_record(const ClusterWorkload& w, std::int64_t started_ms) {
  twin::preview::WorkloadRecord r;
  r.key = w.key;
  r.business_group = w.group;
  r.pool = w.pool;
  r.pods = std::max<std::int64_t>(1, w.pods);
  r.gpus_per_pod = w.gpus_per_pod;
  r.workload_type = w.workload_type;
  r.checkpointable = std::find(w.traits.begin(), w.traits.end(), "checkpointable") != w.traits.end();
  r.priority_class = w.priority_class;
  r.created_ms = w.created_ms;
  r.started_ms = started_ms > 0 ? std::max(started_ms, w.created_ms) : 0;
  r.finished_ms = w.finished && w.finished_ms > 0 ? std::max(w.finished_ms, r.started_ms) : 0;
  return r;
}

bool is_reclaim_step(const bank::AuditEntry& e) {
  return e.action == "ReclaimNoticeSent" || e.action == "ReclaimVictimStopped" || e.action == "ReclaimCancelled";
}

ViewJson reclaims_view(const std::vector<bank::AuditEntry>& steps, const std::vector<ClusterWorkload>& workloads,
                       std::size_t limit) {
  // The victim's group from the Workload, while it exists.
  std::map<std::string, const ClusterWorkload*> by_key;
  for (const ClusterWorkload& w : workloads) by_key[w.key] = &w;
  std::vector<ViewJson> all;
  std::map<std::string, std::size_t> open;  // victim -> its reclaim in `all`
  for (const bank::AuditEntry& e : steps) {
    if (!is_reclaim_step(e) || !e.object.starts_with("Workload/")) continue;
    const std::string key = e.object.substr(std::string_view("Workload/").size());
    const nlohmann::json numbers = nlohmann::json::parse(e.numbers, nullptr, false);
    if (!numbers.is_object()) continue;
    const ViewJson at = time_or_null(e.time_ms);
    if (e.action == "ReclaimNoticeSent") {
      const auto w = by_key.find(key);
      ViewJson victim = ViewJson::object();
      victim["workload"] = key;
      victim["businessGroup"] = w == by_key.end() ? std::string() : w->second->group;
      victim["gpus"] = numbers.value("gpus", std::int64_t{0});
      victim["class"] = e.decision == "CheckpointRequested" ? "Checkpointable" : "LongStateless";
      victim["notice"] = at;
      victim["checkpointRequested"] = e.decision == "CheckpointRequested" ? at : ViewJson(nullptr);
      victim["checkpointCompleted"] = nullptr;
      victim["checkpointFailed"] = nullptr;
      victim["stopped"] = nullptr;
      victim["finished"] = nullptr;
      victim["released"] = nullptr;
      victim["recomputeLossGpuHours"] = 0.0;
      ViewJson r = ViewJson::object();
      r["id"] = "notice-" + std::to_string(e.seq);
      r["lender"] = numbers.value("lender", "");
      r["pool"] = numbers.value("pool", "");
      r["demandGpus"] = numbers.value("gpus", std::int64_t{0});
      r["started"] = at;
      r["ended"] = nullptr;
      r["result"] = "InProgress";
      r["deadline"] = time_or_null(numbers.value("deadlineMs", std::int64_t{0}));
      r["victims"] = ViewJson::array({victim});
      open[key] = all.size();
      all.push_back(std::move(r));
      continue;
    }
    const auto it = open.find(key);
    if (it == open.end()) continue;  // a step without its notice (recorded before the store was)
    ViewJson& r = all[it->second];
    ViewJson& victim = r["victims"][0];
    r["ended"] = at;
    if (e.action == "ReclaimVictimStopped") {
      victim["stopped"] = at;
      victim["recomputeLossGpuHours"] = numbers.value("recomputeLossGpuHours", 0.0);
      r["result"] = "Completed";
    } else {
      victim["released"] = at;
      r["result"] = "Cancelled";
    }
    open.erase(it);
  }
  ViewJson out = ViewJson::array();
  for (auto it = all.rbegin(); it != all.rend() && out.size() < limit; ++it) out.push_back(std::move(*it));
  return out;
}

}  // namespace gpubank::controller
