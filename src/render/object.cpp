#include "render/object.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "policy/decode.hpp"

namespace gpubank::render {

std::string canonical_text(const policy::PolicyObject& object) { return policy::encode_policy(object).dump(); }

std::string sha256_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("sha256 failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(static_cast<std::size_t>(length) * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xF];
  }
  return out;
}

void stamp(RenderedObject& object) {
  auto meta = object.manifest.find("metadata");
  if (meta == object.manifest.end() || !meta->is_object()) return;
  Json& labels = (*meta)["labels"];
  if (!labels.contains(kLabelManagedBy)) labels[std::string(kLabelManagedBy)] = std::string(kManagedBy);
  if (object.sources.empty()) return;
  Json& annotations = (*meta)["annotations"];
  // Encoding the sources is the expensive part (the guardrails of a large platform are
  // hundreds of kilobytes): skip it when both annotations are there already.
  const bool want_sources = !annotations.contains(kAnnotationSource);
  const bool want_hash = !annotations.contains(kAnnotationSourceHash);
  if (!want_sources && !want_hash) return;
  std::string sources, texts;
  for (const policy::PolicyObject* p : object.sources) {
    if (!sources.empty()) sources += ',';
    sources += std::string(policy::kind_name(p->kind)) + "/" + p->metadata.name;
    if (want_hash) {
      texts += canonical_text(*p);
      texts += '\n';
    }
  }
  if (want_sources) annotations[std::string(kAnnotationSource)] = sources;
  if (want_hash) annotations[std::string(kAnnotationSourceHash)] = sha256_hex(texts);
}

void sort_and_check_unique(std::vector<RenderedObject>& objects) {
  std::sort(objects.begin(), objects.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  for (std::size_t i = 1; i < objects.size(); ++i) {
    if (objects[i].path == objects[i - 1].path) throw std::logic_error("two rendered objects share " + objects[i].path);
  }
}

}  // namespace gpubank::render
