#include "twin/trace/scenario_yaml.hpp"

#include "document/decode.hpp"
#include "document/yaml_writer.hpp"
#include "policy/schema.hpp"

namespace gpubank::twin::trace {

namespace {

doc::Json requester(const run::Requester& r) {
  doc::Json out = doc::Json::object();
  out["username"] = r.username;
  if (!r.groups.empty()) out["groups"] = r.groups;
  return out;
}

}  // namespace

std::string scenario_yaml(const run::Scenario& scenario) {
  const run::ScenarioWorkload defaults;
  doc::Json out = doc::Json::object();
  if (scenario.start) out["start"] = format_rfc3339(*scenario.start);
  doc::Json workloads = doc::Json::array();
  for (const auto& w : scenario.workloads) {
    doc::Json j = doc::Json::object();
    j["name"] = w.name;
    if (!w.namespace_.empty()) j["namespace"] = w.namespace_;
    j["businessGroup"] = w.business_group;
    j["resourcePool"] = w.resource_pool;
    j["gpus"] = w.gpus;
    if (w.pods != defaults.pods) j["pods"] = w.pods;
    j["workloadType"] = doc::encode_value(w.workload_type);
    if (w.checkpointable) j["checkpointable"] = true;
    if (w.checkpoint_interval) j["checkpointInterval"] = w.checkpoint_interval->to_string();
    if (w.checkpoint_duration != defaults.checkpoint_duration) j["checkpointDuration"] = w.checkpoint_duration.to_string();
    if (w.checkpoint_fails) j["checkpointFails"] = true;
    if (!w.priority_class.empty()) j["priorityClass"] = w.priority_class;
    j["arrivalTime"] = w.arrival_time.to_string();
    j["runTime"] = w.run_time.to_string();
    if (w.startup_time != defaults.startup_time) j["startupTime"] = w.startup_time.to_string();
    if (!w.labels.empty()) j["labels"] = w.labels;
    if (w.delete_time) j["deleteTime"] = w.delete_time->to_string();
    if (w.gpu_milli != 0) j["gpuMilli"] = w.gpu_milli;
    if (!w.gpu_models.empty()) j["gpuModels"] = w.gpu_models;
    workloads.push_back(std::move(j));
  }
  out["workloads"] = std::move(workloads);
  if (!scenario.leases.empty()) {
    doc::Json leases = doc::Json::array();
    for (const auto& l : scenario.leases) {
      doc::Json j = doc::Json::object();
      j["name"] = l.name;
      j["requestedAt"] = l.requested_at.to_string();
      j["requestedBy"] = requester(l.requested_by);
      j["decision"] = l.decision == run::LeaseDecision::Approved ? "Approved" : "Rejected";
      j["decidedAt"] = l.decided_at.to_string();
      j["decidedBy"] = requester(l.decided_by);
      if (!l.reason.empty()) j["reason"] = l.reason;
      leases.push_back(std::move(j));
    }
    out["leases"] = std::move(leases);
  }
  return doc::to_yaml(out);
}

}  // namespace gpubank::twin::trace
