// Fuzzes the write path's pure half (k8s/apply.hpp): the input's first line is a discovery
// document (APIResourceList) for a RestMapper, the rest an object to apply and whose status
// to patch; the object's string fields also drive an EventRecorder. Invariants: no crash;
// refusals name the discovery document, the object or the event field; an accepted apply
// request's path is the mapping's object path and its body has no status or server-owned
// metadata; a status patch goes to ".../status"; an Event's note is at most 1 KiB and a
// repeat of it is a series PATCH with count 2.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "k8s/apply.hpp"

using namespace gpubank::k8s;
using Json = nlohmann::json;

namespace {

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

std::string field(const Json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nl = std::min(input.find('\n'), input.size());
  RestMapper mapper;
  const Json discovery = Json::parse(input.substr(0, nl), nullptr, false);
  auto added = mapper.add_discovery(discovery);
  if (!added.ok() && !starts_with(added.error(), "discovery")) __builtin_trap();
  const Json object = Json::parse(nl < input.size() ? input.substr(nl + 1) : std::string_view(), nullptr, false);

  auto req = apply_request(mapper, object, "default");
  if (!req.ok()) {
    if (!starts_with(req.error(), "object") && !starts_with(req.error(), "no resource for kind")) __builtin_trap();
  } else {
    const Json body = Json::parse(req->body);
    const std::string name = body["metadata"]["name"];
    const std::string ns = req->mapping.namespaced ? body["metadata"]["namespace"].get<std::string>() : "";
    if (req->path != req->mapping.object_path(ns, name)) __builtin_trap();
    if (body.contains("status") || body["metadata"].contains("resourceVersion") || body["metadata"].contains("managedFields")) {
      __builtin_trap();
    }
    auto status = status_patch(mapper, object, Json::object(), "default");
    if (status.ok() != req->mapping.has_status) __builtin_trap();
    if (status.ok() && status->path != req->path + "/status") __builtin_trap();
  }

  if (!object.is_object()) return 0;
  std::chrono::system_clock::time_point now{std::chrono::seconds(1'767'225'600)};
  EventRecorder recorder("fuzz-0", [&] { return now; });
  EventSpec spec;
  spec.regarding = {field(object, "apiVersion"), field(object, "kind"), field(object, "namespace"), field(object, "name"), ""};
  spec.type = field(object, "type");
  spec.reason = field(object, "reason");
  spec.action = field(object, "action");
  spec.note = field(object, "note");
  auto first = recorder.record(spec);
  if (!first.ok()) {
    if (!starts_with(first.error(), "event ")) __builtin_trap();
    return 0;
  }
  if (first->verb != EventWrite::Verb::kCreate || first->body["note"].get<std::string>().size() > 1024) __builtin_trap();
  if (!starts_with(first->body["metadata"]["name"].get<std::string>(), spec.regarding.name + ".")) __builtin_trap();
  now += std::chrono::seconds(1);
  auto second = recorder.record(spec);
  if (!second.ok() || second->verb != EventWrite::Verb::kPatchSeries || second->body["series"]["count"] != 2) __builtin_trap();
  return 0;
}
