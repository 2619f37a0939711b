#include "controller/reclaim_executor.hpp"

#include <chrono>

#include "core/timestamp.hpp"

namespace gpubank::controller {
namespace {

using nlohmann::json;

std::string key_of(const json& w) {
  const json& m = w["metadata"];
  return m.value("namespace", "") + "/" + m.value("name", "");
}

std::string workload_path(const k8s::RestMapper& mapper, const json& w) {
  auto mapping = mapper.find(w.value("apiVersion", "kueue.x-k8s.io/v1beta2"), "Workload");
  if (!mapping) return {};
  return mapping->object_path(w["metadata"].value("namespace", ""), w["metadata"].value("name", ""));
}

// An admission webhook's refusal: the API server words every one "admission webhook
// \"<name>\" denied the request..." (k8s.io/apiserver's webhook ToStatusErr), with the
// webhook's code: 403 for controller-runtime's admission.Denied, 422 for a webhook that
// answers with an Invalid StatusError. An RBAC 403 ("... is forbidden: User ...") is not one.
bool refused_by_webhook(const k8s::ApiError& e) {
  return (e.http_status == 403 || e.http_status == 422) && e.message.find("admission webhook") != std::string::npos;
}

// At most `limit` bytes of `text`, cut at a UTF-8 sequence's start, "..." when cut.
std::string shortened(const std::string& text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t end = limit - 3;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end) + "...";
}

// The Workload's class as the Downgrade leaves it when the job label is refused.
std::string class_name(const json& spec) {
  if (!spec.is_object()) return {};
  if (spec.contains("priorityClassRef") && spec["priorityClassRef"].is_object()) {
    return spec["priorityClassRef"].value("name", "");
  }
  return spec.value("priorityClassName", "");
}

}  // namespace

std::string rfc3339_seconds(std::int64_t ms) {
  return format_rfc3339(Timestamp(std::chrono::seconds(ms / 1000)));
}

std::string owner_path(const k8s::RestMapper& mapper, const json& workload) {
  const json& refs = workload["metadata"].contains("ownerReferences") ? workload["metadata"]["ownerReferences"] : json();
  if (!refs.is_array()) return {};
  for (const json& ref : refs) {
    if (!ref.is_object() || !ref.value("controller", false)) continue;
    auto mapping = mapper.find(ref.value("apiVersion", ""), ref.value("kind", ""));
    if (!mapping) return {};
    return mapping->object_path(workload["metadata"].value("namespace", ""), ref.value("name", ""));
  }
  return {};
}

std::map<std::string, std::int64_t> checkpoint_completions(k8s::Transport& transport, const k8s::RestMapper& mapper,
                                                           const std::vector<json>& workloads) {
  std::map<std::string, std::int64_t> out;
  for (const json& w : workloads) {
    const json& annotations = w["metadata"].contains("annotations") ? w["metadata"]["annotations"] : json();
    if (!annotations.is_object() || !annotations.contains(std::string(kReclaimFor)) ||
        annotations.contains(std::string(kReclaimedAt))) {
      continue;
    }
    const std::string path = owner_path(mapper, w);
    if (path.empty()) continue;
    auto got = transport.get(path);
    if (!got) continue;  // the next pass asks again
    const json owner = json::parse(got->body, nullptr, false);
    if (!owner.is_object()) continue;
    const json& a = owner["metadata"].contains("annotations") ? owner["metadata"]["annotations"] : json();
    if (!a.is_object() || !a.contains(std::string(kCheckpointCompleted)) || !a[std::string(kCheckpointCompleted)].is_string()) {
      continue;
    }
    if (auto t = parse_rfc3339(a[std::string(kCheckpointCompleted)].get<std::string>())) {
      out[key_of(w)] = std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count();
    }
  }
  return out;
}

std::vector<ReclaimOutcome> execute_reclaims(k8s::Transport& transport, const k8s::RestMapper& mapper,
                                             const ReclaimPlan& plan, const std::map<std::string, json>& workloads,
                                             std::int64_t now_ms) {
  std::vector<ReclaimOutcome> out;
  const std::string now = rfc3339_seconds(now_ms);
  for (const ReclaimStep& step : plan.steps) {
    ReclaimOutcome o{step, {}, {}};
    const auto it = workloads.find(step.workload);
    if (it == workloads.end()) {
      o.error = "the Workload is gone";
      out.push_back(std::move(o));
      continue;
    }
    const json& w = it->second;
    const std::string path = workload_path(mapper, w);
    const std::string job = owner_path(mapper, w);
    json patch;
    json job_patch;  // null: the job is not touched
    switch (step.kind) {
      case ReclaimStep::Kind::Notice:
        patch = {{"metadata",
                  {{"annotations",
                    {{std::string(kReclaimFor), step.lender},
                     {std::string(kCheckpointRequested), now},
                     {std::string(kReclaimDeadline), rfc3339_seconds(step.deadline_ms)}}}}}};
        job_patch = {{"metadata", {{"annotations", {{std::string(kCheckpointRequested), now}}}}}};
        break;
      case ReclaimStep::Kind::Stop:
        patch = {{"spec", {{"active", false}}}, {"metadata", {{"annotations", {{std::string(kReclaimedAt), now}}}}}};
        break;
      case ReclaimStep::Kind::Resume:
      case ReclaimStep::Kind::Cancel:
        patch = {{"metadata",
                  {{"annotations",
                    {{std::string(kReclaimFor), nullptr},
                     {std::string(kCheckpointRequested), nullptr},
                     {std::string(kReclaimDeadline), nullptr},
                     {std::string(kReclaimedAt), nullptr}}}}}};
        if (step.kind == ReclaimStep::Kind::Resume) patch["spec"] = {{"active", true}};
        job_patch = {{"metadata", {{"annotations", {{std::string(kCheckpointRequested), nullptr}}}}}};
        break;
      case ReclaimStep::Kind::Downgrade: {
        // spec.priority is mutable at any time (Kueue's Workload CRD); the class reference
        // only when it names a WorkloadPriorityClass, and then the job's label must follow
        // or Kueue's job reconciler would set the old class back.
        const json& spec = w.contains("spec") ? w["spec"] : json::object();
        const json& ref = spec.contains("priorityClassRef") ? spec["priorityClassRef"] : json();
        const bool v1beta2_ref = ref.is_object() && ref.value("group", "") == "kueue.x-k8s.io";
        const bool v1beta1_ref = spec.is_object() && spec.value("priorityClassSource", "") == "kueue.x-k8s.io/workloadpriorityclass";
        patch = {{"spec", {{"priority", step.priority}}},
                 {"metadata", {{"annotations", {{std::string(kDowngradedTo), step.priority_class}}}}}};
        if (v1beta2_ref) patch["spec"]["priorityClassRef"] = {{"name", step.priority_class}};
        if (v1beta1_ref) patch["spec"]["priorityClassName"] = step.priority_class;
        if (v1beta1_ref || v1beta2_ref) {
          job_patch = {{"metadata", {{"labels", {{std::string(kKueuePriorityClassLabel), step.priority_class}}}}}};
        }
        break;
      }
    }
    // The job first: a notice must reach the job before the Workload records it, so a
    // failure in between is retried as a whole by the next pass.
    if (!job_patch.is_null() && !job.empty()) {
      if (auto r = transport.merge_patch(job, job_patch.dump()); !r && r.error().http_status != 404) {
        if (step.kind == ReclaimStep::Kind::Downgrade && refused_by_webhook(r.error())) {
          // Kueue's job webhook before the newest keeps the label immutable on a running
          // job; its job reconciler then compares the class name alone, so the Workload
          // keeps its class (agreeing with the label) and only spec.priority is lowered,
          // which Kueue leaves as it is. Marked downgraded-to: the plan does not redo it.
          patch = {{"spec", {{"priority", step.priority}}},
                   {"metadata", {{"annotations", {{std::string(kDowngradedTo), step.priority_class}}}}}};
          const json& spec = w.contains("spec") ? w["spec"] : json();
          const std::string kept = class_name(spec);
          o.note = "the admission webhook refused the job's " + std::string(kKueuePriorityClassLabel) + " label (" +
                   std::to_string(r.error().http_status) + ": " + shortened(r.error().message, 240) +
                   "), so only spec.priority was lowered" +
                   (kept.empty() ? std::string() : " and the Workload keeps the priority class " + kept);
        } else {
          o.error = r.error().describe();
          out.push_back(std::move(o));
          continue;
        }
      }
    }
    if (path.empty()) {
      o.error = "Kueue's Workload kind is not in discovery";
    } else if (auto r = transport.merge_patch(path, patch.dump()); !r) {
      o.error = r.error().describe();
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace gpubank::controller
