#include "twin/preview/recorded_work.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "document/decode.hpp"
#include "policy/schema.hpp"
#include "store/store.hpp"

namespace gpubank::twin::preview {
namespace {

constexpr std::int64_t kDefaultRunMs = 3'600'000;  // a pending workload's run time when its group has no record

std::optional<policy::WorkloadType> type_of(std::string_view name) {
  for (const auto& [v, n] : doc::EnumNames<policy::WorkloadType>::values) {
    if (n == name) return v;
  }
  return std::nullopt;
}

// A scenario name from the Workload's key: "<namespace>-<name>", unique in the replay.
std::string scenario_name(const std::string& key, std::map<std::string, int>& seen) {
  std::string name = key;
  std::replace(name.begin(), name.end(), '/', '-');
  if (name.size() > 200) name.resize(200);
  const int n = seen[name]++;
  return n == 0 ? name : name + "-" + std::to_string(n);
}

}  // namespace

nlohmann::json to_json(const WorkloadRecord& r) {
  return {{"workload", r.key},
          {"businessGroup", r.business_group},
          {"pool", r.pool},
          {"pods", r.pods},
          {"gpusPerPod", r.gpus_per_pod},
          {"workloadType", r.workload_type},
          {"checkpointable", r.checkpointable},
          {"priorityClass", r.priority_class},
          {"createdMs", r.created_ms},
          {"startedMs", r.started_ms},
          {"finishedMs", r.finished_ms}};
}

Expected<WorkloadRecord> record_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Unexpected{std::string("a workload record must be a JSON object")};
  WorkloadRecord r;
  auto text = [&](const char* key, std::string& out) -> std::optional<std::string> {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::string(key) + " must be a string";
    out = it->get<std::string>();
    return std::nullopt;
  };
  auto count = [&](const char* key, std::int64_t& out, std::int64_t lo) -> std::optional<std::string> {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < lo) {
      return std::string(key) + " must be an integer of at least " + std::to_string(lo);
    }
    out = it->get<std::int64_t>();
    return std::nullopt;
  };
  for (auto e : {text("workload", r.key), text("businessGroup", r.business_group), text("pool", r.pool),
                 text("workloadType", r.workload_type), text("priorityClass", r.priority_class),
                 count("pods", r.pods, 1), count("gpusPerPod", r.gpus_per_pod, 0), count("createdMs", r.created_ms, 0),
                 count("startedMs", r.started_ms, 0), count("finishedMs", r.finished_ms, 0)}) {
    if (e) return Unexpected{*e};
  }
  const auto cp = j.find("checkpointable");
  if (cp == j.end() || !cp->is_boolean()) return Unexpected{std::string("checkpointable must be a boolean")};
  r.checkpointable = cp->get<bool>();
  if (r.key.find('/') == std::string::npos) return Unexpected{"workload must be <namespace>/<name>, got \"" + r.key.substr(0, 64) + "\""};
  if (r.started_ms != 0 && r.started_ms < r.created_ms) return Unexpected{std::string("startedMs is before createdMs")};
  if (r.finished_ms != 0 && r.finished_ms < r.started_ms) return Unexpected{std::string("finishedMs is before startedMs")};
  if (r.pods > 100'000 || r.gpus_per_pod > 100'000) return Unexpected{std::string("pods and gpusPerPod must be at most 100000")};
  return r;
}

bank::AuditEntry audit_entry(const WorkloadRecord& r, const std::string& actor, std::int64_t now_ms) {
  bank::AuditEntry e;
  e.time_ms = now_ms;
  e.actor = actor;
  e.action = std::string(kWorkloadRecorded);
  e.object = ("Workload/" + r.key).substr(0, bank::kMaxAuditFieldLength);
  e.decision = "Finished";
  e.reason = (r.key + " of " + r.business_group + " in " + r.pool + ": " + std::to_string(r.pods) + " x " +
              std::to_string(r.gpus_per_pod) + " GPUs, ran " + std::to_string((r.finished_ms - r.started_ms) / 1000) + " s")
                 .substr(0, bank::kMaxAuditReasonLength);
  e.numbers = to_json(r).dump();
  return e;
}

Expected<bool> read_records(store::Store& store, std::int64_t& after_seq, std::vector<WorkloadRecord>& out) {
  return store::read_audit_after(store, after_seq, [&](const bank::AuditEntry& e) -> std::optional<std::string> {
    if (e.action != kWorkloadRecorded) return std::nullopt;
    auto r = record_from_json(nlohmann::json::parse(e.numbers, nullptr, false));
    if (!r) return "workload record at seq " + std::to_string(e.seq) + ": " + r.error();
    out.push_back(std::move(*r));
    return std::nullopt;
  });
}

std::set<std::string> priority_classes(const policy::PolicySet& set) {
  std::set<std::string> out;
  if (const auto* g = set.guardrails_spec()) {
    for (const auto& p : g->priorities) out.insert(p.name);
  }
  return out;
}

run::Scenario replay_scenario(const std::vector<WorkloadRecord>& records, const std::vector<WorkloadRecord>& live,
                              std::int64_t from_ms, std::int64_t to_ms, const std::set<std::string>& known_priorities) {
  run::Scenario out;
  out.start = Timestamp(std::chrono::milliseconds(from_ms));
  // Median recorded run time per group, over the window's finished work.
  std::map<std::string, std::vector<std::int64_t>> runs;
  for (const WorkloadRecord& r : records) {
    if (r.started_ms > 0 && r.finished_ms > from_ms && r.created_ms < to_ms) runs[r.business_group].push_back(r.finished_ms - r.started_ms);
  }
  auto median = [&](const std::string& group) {
    auto it = runs.find(group);
    if (it == runs.end() || it->second.empty()) return kDefaultRunMs;
    std::vector<std::int64_t> v = it->second;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  std::vector<const WorkloadRecord*> all;
  for (const WorkloadRecord& r : records) all.push_back(&r);
  for (const WorkloadRecord& r : live) all.push_back(&r);
  // Arrival order, then the key: the same input gives the same scenario.
  std::sort(all.begin(), all.end(), [](const WorkloadRecord* a, const WorkloadRecord* b) {
    return std::tie(a->created_ms, a->key) < std::tie(b->created_ms, b->key);
  });
  std::map<std::string, int> names;
  for (const WorkloadRecord* r : all) {
    if (r->created_ms >= to_ms || r->gpus_per_pod <= 0) continue;
    const bool finished = r->finished_ms > 0;
    if (finished && r->finished_ms <= from_ms) continue;  // over before the window
    std::int64_t run_ms = 0;
    if (r->started_ms == 0) {
      if (finished) continue;  // finished without ever holding quota: nothing to replay
      run_ms = median(r->business_group);
    } else {
      const std::int64_t start = std::max(r->started_ms, from_ms);
      const std::int64_t end = finished ? r->finished_ms : std::max(to_ms, start + 1000);
      // Already running at the window's start: what was left of it, from the start.
      run_ms = r->started_ms < from_ms ? end - from_ms : end - r->started_ms;
    }
    run::ScenarioWorkload w;
    w.name = scenario_name(r->key, names);
    w.business_group = r->business_group;
    w.resource_pool = r->pool;
    w.pods = r->pods;
    w.gpus = r->gpus_per_pod;
    w.workload_type = type_of(r->workload_type).value_or(policy::WorkloadType::Training);
    w.checkpointable = r->checkpointable;
    if (known_priorities.contains(r->priority_class)) w.priority_class = r->priority_class;
    w.arrival_time = Duration(std::chrono::milliseconds(std::max<std::int64_t>(0, r->created_ms - from_ms)));
    w.run_time = Duration(std::chrono::milliseconds(std::max<std::int64_t>(1000, run_ms)));
    out.workloads.push_back(std::move(w));
  }
  return out;
}

}  // namespace gpubank::twin::preview
