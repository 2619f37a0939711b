// `gpubank render`'s entry point: a validated policy set in, the engines' objects out.
//
//   RenderResult r = render(set, {.backend = Backend::Kueue});
//   if (!r.ok()) ... r.diagnostics ...            // nothing rendered
//   for (const auto& o : r.objects) ... to_file_text(o) ...
//
// render() runs, in order: the policy validation (policy::check_all), the pipeline's
// checks, and only when none of them found an error, every renderer of the pipeline. The
// objects of all renderers are stamped (object.hpp) and sorted by path. Pure: no files,
// clocks or environment; the same set gives byte-identical objects.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "policy/policy_set.hpp"
#include "render/object.hpp"

namespace gpubank::render {

// Which queueing engine enforces the quotas.
enum class Backend { Kueue, Volcano };

[[nodiscard]] std::string_view backend_name(Backend backend);
[[nodiscard]] std::optional<Backend> backend_from_name(std::string_view name);

struct RenderOptions {
  Backend backend = Backend::Kueue;
};

struct RenderResult {
  std::vector<RenderedObject> objects;  // sorted by path; empty when a check failed
  Diagnostics diagnostics;              // validation and checks, warnings included

  [[nodiscard]] bool ok() const { return !has_errors(diagnostics); }
};

// A check looks at the validated set as a whole; one error stops the render.
using Check = std::function<Diagnostics(const policy::PolicySet&)>;
// A renderer returns the objects of one area; they need not be stamped yet.
using Renderer = std::function<std::vector<RenderedObject>(const policy::PolicySet&)>;

struct Pipeline {
  std::vector<Check> checks;
  std::vector<Renderer> renderers;
};

// What `gpubank render` runs for a backend: the four-layer capacity check
// (consistency.hpp) and the backend's checks; then the backend's objects, the
// PriorityClasses every backend needs, KEDA ScaledObjects and KServe annotations
// (scaling.hpp), PrometheusRules (prometheus_rules.hpp) and Grafana dashboards
// (grafana.hpp).
[[nodiscard]] Pipeline default_pipeline(const RenderOptions& options);

// The objects' sources point into `set`, which must outlive the result.
RenderResult render(const policy::PolicySet& set, const Pipeline& pipeline);
RenderResult render(const policy::PolicySet& set, const RenderOptions& options = {});

// doc::to_yaml's text for a map whose scalars are all names (letters, digits, ._/,-),
// integers or booleans and whose lists hold no lists, written directly instead of through
// yaml-cpp's emitter (several times faster); nullopt for anything else.
[[nodiscard]] std::optional<std::string> simple_yaml(const Json& value);

// The file content `gpubank render` writes for an object: YAML for ".yaml" paths, JSON
// (two-space indent) for ".json" paths; both end with a newline.
[[nodiscard]] std::string to_file_text(const RenderedObject& object);
// to_file_text of every object, in order, spread over the machine's cores: YAML
// emission (yaml-cpp) costs several times what rendering does.
[[nodiscard]] std::vector<std::string> to_file_texts(const std::vector<RenderedObject>& objects);

}  // namespace gpubank::render
