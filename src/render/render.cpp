#include "render/render.hpp"

#include <algorithm>
#include <cctype>
#include <memory>
#include <stdexcept>
#include <thread>

#include "document/yaml_scalar.hpp"
#include "document/yaml_writer.hpp"
#include "policy/validate.hpp"
#include "render/consistency.hpp"
#include "render/grafana.hpp"
#include "render/kueue.hpp"
#include "render/prometheus_rules.hpp"
#include "render/scaling.hpp"
#include "render/scheduling.hpp"
#include "render/volcano.hpp"

namespace gpubank::render {

std::string_view backend_name(Backend backend) { return backend == Backend::Kueue ? "kueue" : "volcano"; }

std::optional<Backend> backend_from_name(std::string_view name) {
  if (name == "kueue") return Backend::Kueue;
  if (name == "volcano") return Backend::Volcano;
  return std::nullopt;
}

Pipeline default_pipeline(const RenderOptions& options) {
  Pipeline p;
  // The four layers (queue quota, pool, autoscaler, scheduler priority) must agree before
  // anything is written.
  p.checks.emplace_back([](const policy::PolicySet& set) { return check_consistency(set).diagnostics; });
  p.checks.emplace_back(check_priority_classes);
  if (options.backend == Backend::Kueue) {
    p.checks.emplace_back(check_kueue);
    p.renderers.emplace_back(render_kueue);
    p.renderers.emplace_back(render_kueue_manager_config);
  } else {
    p.checks.emplace_back(check_volcano);
    p.renderers.emplace_back(render_volcano);
  }
  p.renderers.emplace_back(render_priority_classes);
  p.renderers.emplace_back([](const policy::PolicySet& set) { return render_scaling(set); });
  p.renderers.emplace_back(render_prometheus_rules);
  p.renderers.emplace_back(render_grafana_dashboards);
  return p;
}

RenderResult render(const policy::PolicySet& set, const Pipeline& pipeline) {
  RenderResult result;
  result.diagnostics = policy::check_all(set);
  // Checks read the set as validation left it: on an invalid set they would report
  // consequences of errors already reported.
  if (!result.ok()) return result;
  for (const auto& check : pipeline.checks) {
    Diagnostics found = check(set);
    result.diagnostics.insert(result.diagnostics.end(), std::make_move_iterator(found.begin()),
                              std::make_move_iterator(found.end()));
  }
  if (!result.ok()) return result;
  for (const auto& renderer : pipeline.renderers) {
    std::vector<RenderedObject> objects = renderer(set);
    result.objects.insert(result.objects.end(), std::make_move_iterator(objects.begin()),
                          std::make_move_iterator(objects.end()));
  }
  stamp_all(result.objects);
  sort_and_check_unique(result.objects);
  return result;
}

RenderResult render(const policy::PolicySet& set, const RenderOptions& options) {
  return render(set, default_pipeline(options));
}

namespace {

// doc::to_yaml goes through yaml-cpp's emitter, which tests every scalar against its
// regular expressions: most of a large render's time. Rendered objects are mostly names,
// numbers and booleans, so a direct block writer takes them, byte for byte as
// doc::to_yaml writes them (tests compare the two on every rendered object), and
// anything else (spaces, quotes, floats, nulls, nested lists) goes to doc::to_yaml.
class BlockYaml {
 public:
  // The YAML text, or nothing when the value has a scalar or shape this writer leaves to
  // doc::to_yaml.
  static std::optional<std::string> write(const Json& value) {
    if (!value.is_object() || value.empty() || !simple(value)) return std::nullopt;
    BlockYaml w;
    w.block(value, 0, false);
    return std::move(w.out_);
  }

 private:
  // Letters, digits and ._/,- after a letter or digit: yaml-cpp writes these plain (or,
  // when they would read back as another type, double-quoted as they are).
  static bool simple_text(const std::string& s) {
    if (s.empty() || !std::isalnum(static_cast<unsigned char>(s[0]))) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '/' || c == ',' || c == '-';
    });
  }
  static bool simple(const Json& v, bool in_list = false) {
    switch (v.type()) {
      case Json::value_t::string: return simple_text(v.get_ref<const std::string&>());
      case Json::value_t::number_integer:
      case Json::value_t::number_unsigned:
      case Json::value_t::boolean: return true;
      case Json::value_t::object:
        for (const auto& [key, item] : v.items()) {
          if (!simple_text(key) || !simple(item)) return false;
        }
        return true;
      case Json::value_t::array:
        return !in_list && std::all_of(v.begin(), v.end(), [](const Json& item) { return simple(item, true); });
      default: return false;
    }
  }

  void text(const std::string& s) {
    if (doc::plain_reads_as_string(s)) {
      out_ += s;
    } else {
      out_ += '"';
      out_ += s;
      out_ += '"';
    }
  }
  // A scalar or an empty collection, on the line of its key or dash.
  bool inline_value(const Json& v) {
    if (v.is_string()) {
      text(v.get_ref<const std::string&>());
    } else if (v.is_boolean()) {
      out_ += v.get<bool>() ? "true" : "false";
    } else if (v.is_number()) {
      out_ += v.dump();
    } else if (v.empty()) {
      out_ += v.is_object() ? "{}" : "[]";
    } else {
      return false;
    }
    out_ += '\n';
    return true;
  }
  // A non-empty map or list whose lines start at `column`; `continues_line`: the first
  // line's indentation is already written (a map right after "- ").
  void block(const Json& v, std::size_t column, bool continues_line) {
    if (v.is_object()) {
      for (const auto& [key, item] : v.items()) {
        if (!continues_line) out_.append(column, ' ');
        continues_line = false;
        text(key);
        out_ += ':';
        if (item.is_primitive() || item.empty()) {
          out_ += ' ';
          inline_value(item);
        } else {
          out_ += '\n';
          block(item, column + 2, false);
        }
      }
      return;
    }
    for (const auto& item : v) {
      out_.append(column, ' ');
      out_ += "- ";
      if (!inline_value(item)) block(item, column + 2, true);
    }
  }

  std::string out_;
};

}  // namespace

std::optional<std::string> simple_yaml(const Json& value) { return BlockYaml::write(value); }

std::string to_file_text(const RenderedObject& object) {
  if (object.path.ends_with(".json")) return object.manifest.dump(2) + "\n";
  if (auto text = simple_yaml(object.manifest)) return std::move(*text);
  return doc::to_yaml(object.manifest);
}

std::vector<std::string> to_file_texts(const std::vector<RenderedObject>& objects) {
  std::vector<std::string> texts(objects.size());
  // Small renders are not worth a thread; each thread takes every n-th object.
  const std::size_t threads =
      objects.size() < 256 ? 1 : std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
  auto work = [&](std::size_t first) {
    for (std::size_t i = first; i < objects.size(); i += threads) texts[i] = to_file_text(objects[i]);
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& t : pool) t.join();
  return texts;
}

}  // namespace gpubank::render
