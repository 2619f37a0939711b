#include "controller/desk_enactor.hpp"

#include <nlohmann/json.hpp>

namespace gpubank::controller {

std::vector<const proposals::Proposal*> to_enact(const std::vector<proposals::Proposal>& proposals) {
  std::vector<const proposals::Proposal*> out;
  for (const proposals::Proposal& p : proposals) {
    if (p.state == proposals::State::Applied && p.enacted_ms == 0 && !p.applied_document.empty()) out.push_back(&p);
  }
  return out;
}

Enactment enact(k8s::Transport& transport, const k8s::RestMapper& mapper, const proposals::Proposal& p) {
  Enactment out;
  out.id = p.id;
  out.object = p.object;
  const nlohmann::json object = nlohmann::json::parse(p.applied_document, nullptr, false);
  if (!object.is_object()) {
    out.error = "the applied document of proposal " + p.id + " is not a JSON object";
    return out;
  }
  auto target = k8s::apply_request(mapper, object);
  if (!target) {
    out.error = target.error();
    return out;
  }
  auto applied = transport.apply(target->path, target->body, /*force=*/true);
  if (!applied) {
    out.error = applied.error().describe();
    return out;
  }
  nlohmann::json after = nlohmann::json::parse(applied->body, nullptr, false);
  if (const auto status = object.find("status"); status != object.end() && status->is_object() &&
                                                  status->contains("approval") && target->mapping.has_status) {
    auto patch = k8s::status_patch(mapper, object, nlohmann::json{{"approval", (*status)["approval"]}});
    if (!patch) {
      out.error = patch.error();
      return out;
    }
    auto written = transport.merge_patch(patch->path, patch->body);
    if (!written) {
      out.error = "status.approval: " + written.error().describe();
      return out;
    }
    after = nlohmann::json::parse(written->body, nullptr, false);
  }
  if (after.is_object() && after.contains("metadata") && after["metadata"].is_object()) {
    out.resource_version = after["metadata"].value("resourceVersion", "");
  }
  out.ok = true;
  return out;
}

}  // namespace gpubank::controller
