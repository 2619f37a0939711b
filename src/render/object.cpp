#include "render/object.hpp"

#include <algorithm>
#include <stdexcept>

#include "policy/decode.hpp"

namespace gpubank::render {

std::string canonical_text(const policy::PolicyObject& object) {
  doc::Json encoded = policy::encode_policy(object);
  // What the controller reports about a policy (its conditions and observedGeneration) is
  // not part of it: writing status must not change the hash and so every object rendered
  // from it. Other status fields (a lease's approval) are kept: they change the render.
  if (auto status = encoded.find("status"); status != encoded.end() && status->is_object()) {
    status->erase("conditions");
    status->erase("observedGeneration");
    if (status->empty()) encoded.erase(status);
  }
  return encoded.dump();
}

const std::string& Stamper::digest(const policy::PolicyObject& policy) {
  auto [it, inserted] = digests_.try_emplace(&policy);
  if (inserted) it->second = sha256_hex(canonical_text(policy));
  return it->second;
}

void Stamper::stamp(RenderedObject& object) {
  auto meta = object.manifest.find("metadata");
  if (meta == object.manifest.end() || !meta->is_object()) return;
  Json& labels = (*meta)["labels"];
  if (!labels.contains(kLabelManagedBy)) labels[std::string(kLabelManagedBy)] = std::string(kManagedBy);
  if (object.sources.empty()) return;
  std::string sources, lines;
  for (const policy::PolicyObject* p : object.sources) {
    const std::string ref = std::string(policy::kind_name(p->kind)) + "/" + p->metadata.name;
    if (!sources.empty()) sources += ',';
    sources += ref;
    lines += ref + " " + digest(*p) + "\n";
  }
  Json& annotations = (*meta)["annotations"];
  if (!annotations.contains(kAnnotationSource)) annotations[std::string(kAnnotationSource)] = sources;
  if (!annotations.contains(kAnnotationSourceHash)) annotations[std::string(kAnnotationSourceHash)] = sha256_hex(lines);
}

void stamp(RenderedObject& object) { Stamper().stamp(object); }

void stamp_all(std::vector<RenderedObject>& objects) {
  Stamper stamper;
  for (auto& o : objects) stamper.stamp(o);
}

std::vector<Json*> flavor_resources(Json& manifest, std::string_view flavor) {
  std::vector<Json*> out;
  if (!manifest.contains("spec") || !manifest["spec"].contains("resourceGroups")) return out;
  for (Json& group : manifest["spec"]["resourceGroups"]) {
    if (!group.contains("flavors")) continue;
    for (Json& f : group["flavors"]) {
      if (f.value("name", "") != flavor || !f.contains("resources")) continue;
      for (Json& r : f["resources"]) out.push_back(&r);
    }
  }
  return out;
}

std::string label_of(const Json& manifest, std::string_view key) {
  if (!manifest.contains("metadata") || !manifest["metadata"].contains("labels")) return {};
  return manifest["metadata"]["labels"].value(std::string(key), "");
}

void sort_and_check_unique(std::vector<RenderedObject>& objects) {
  std::sort(objects.begin(), objects.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  for (std::size_t i = 1; i < objects.size(); ++i) {
    if (objects[i].path == objects[i - 1].path) throw std::logic_error("two rendered objects share " + objects[i].path);
  }
}

}  // namespace gpubank::render
