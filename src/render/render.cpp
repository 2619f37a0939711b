#include "render/render.hpp"

#include <openssl/evp.h>

#include <memory>
#include <stdexcept>
#include <unordered_map>

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
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(static_cast<std::size_t>(length) * 2);
    for (unsigned int i = 0; i < length; ++i) {
      out += kHex[digest[i] >> 4];
      out += kHex[digest[i] & 0xF];
    }
    return out;
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

std::string to_file_text(const RenderedObject& object) {
  if (object.path.ends_with(".json")) return object.manifest.dump(2) + "\n";
  return doc::to_yaml(object.manifest);
}

}  // namespace gpubank::render
