#include "render/render.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "document/yaml_scalar.hpp"
#include "document/yaml_writer.hpp"
#include "policy/validate.hpp"
#include "render/kueue.hpp"
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
  p.checks.emplace_back(check_priority_classes);
  if (options.backend == Backend::Kueue) {
    p.checks.emplace_back(check_kueue);
    p.renderers.emplace_back(render_kueue);
  } else {
    p.checks.emplace_back(check_volcano);
    p.renderers.emplace_back(render_volcano);
  }
  p.renderers.emplace_back(render_priority_classes);
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

struct DigestFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using Digest = std::unique_ptr<EVP_MD_CTX, DigestFree>;

// The source annotations of object.hpp, computed with caches: each policy's canonical
// text once, and the sha256 state after "<text of the first source>\n" once per first
// source. The hash is the same as stamp()'s; only the work is shared.
class SourceHasher {
 public:
  std::string hash(const std::vector<const policy::PolicyObject*>& sources) {
    Digest ctx(EVP_MD_CTX_new());
    if (!ctx || EVP_MD_CTX_copy_ex(ctx.get(), prefix(sources.front())) != 1) throw std::runtime_error("sha256 failed");
    for (std::size_t i = 1; i < sources.size(); ++i) update(ctx.get(), text(sources[i]));
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1) throw std::runtime_error("sha256 failed");
    std::string hex(static_cast<std::size_t>(length) * 2 + 1, '\0');
    for (unsigned int i = 0; i < length; ++i) std::snprintf(&hex[2 * i], 3, "%02x", digest[i]);
    hex.pop_back();  // snprintf's terminator
    return hex;
  }

 private:
  const std::string& text(const policy::PolicyObject* p) {
    auto it = texts_.find(p);
    if (it == texts_.end()) it = texts_.emplace(p, canonical_text(*p) + '\n').first;
    return it->second;
  }
  static void update(EVP_MD_CTX* ctx, const std::string& s) {
    if (EVP_DigestUpdate(ctx, s.data(), s.size()) != 1) throw std::runtime_error("sha256 failed");
  }
  const EVP_MD_CTX* prefix(const policy::PolicyObject* first) {
    auto it = prefixes_.find(first);
    if (it != prefixes_.end()) return it->second.get();
    Digest ctx(EVP_MD_CTX_new());
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("sha256 failed");
    update(ctx.get(), text(first));
    return prefixes_.emplace(first, std::move(ctx)).first->second.get();
  }

  std::unordered_map<const policy::PolicyObject*, std::string> texts_;
  std::unordered_map<const policy::PolicyObject*, Digest> prefixes_;
};

}  // namespace

void stamp_all(std::vector<RenderedObject>& objects) {
  SourceHasher hasher;
  const std::string source_key(kAnnotationSource), hash_key(kAnnotationSourceHash);
  for (auto& o : objects) {
    auto meta = o.manifest.find("metadata");
    if (!o.sources.empty() && meta != o.manifest.end() && meta->is_object()) {
      if (!meta->contains("labels")) (*meta)["labels"] = Json::object();  // labels before annotations
      Json& annotations = (*meta)["annotations"];
      if (annotations.is_null()) annotations = Json::object();
      if (!annotations.contains(source_key)) {
        std::string refs;
        for (const auto* p : o.sources) refs += (refs.empty() ? "" : ",") + p->ref();
        annotations[source_key] = std::move(refs);
      }
      if (!annotations.contains(hash_key)) annotations[hash_key] = hasher.hash(o.sources);
    }
    stamp(o);  // the label, and whatever stamp() adds beyond the annotations set here
  }
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
