// Fuzzes schema::SchemaSet::validate. One fixed CRD is loaded once: Kueue's ClusterQueue
// from ../shared/crds (patterns, int-or-string quantities, list-map keys, enums, CEL rules).
// Each input is read as a YAML stream (JSON is YAML) within the reader's limits, and every
// document is validated three times: as written, as a kueue.x-k8s.io/v1beta2 ClusterQueue
// (so arbitrary shapes reach the schema walk) and as a v1 ConfigMap (a built-in kind with
// its own rules). Invariants: validation never throws or crashes, gives the same result
// twice, and every violation has a rule and a message.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "document/reader.hpp"
#include "schema/schema_set.hpp"

namespace {

using namespace gpubank;

std::string shared_dir() {
  if (const char* dir = std::getenv("GPUBANK_SHARED_DIR")) return dir;
  const char* source = std::getenv("GPUBANK_SOURCE_DIR");
  return std::string(source != nullptr ? source : GPUBANK_DEFAULT_SOURCE_DIR) + "/../shared";
}

const schema::SchemaSet& schemas() {
  static const std::unique_ptr<schema::SchemaSet> instance = [] {
    const std::string crd = shared_dir() + "/crds/kueue/kueue.x-k8s.io_clusterqueues.yaml";
    auto set = std::make_unique<schema::SchemaSet>();
    Diagnostics diagnostics;
    if (set->load(crd, diagnostics) == 0 || !diagnostics.empty()) {
      std::fprintf(stderr, "schema_validate_fuzzer: cannot load %s (set GPUBANK_SHARED_DIR)\n", crd.c_str());
      for (const auto& d : diagnostics) std::fprintf(stderr, "  %s\n", d.to_string().c_str());
      std::abort();
    }
    return set;
  }();
  return *instance;
}

void check(const schema::Json& object) {
  const schema::Result first = schemas().validate(object);
  const schema::Result second = schemas().validate(object);
  if (first.violations != second.violations || first.not_checked.size() != second.not_checked.size()) {
    std::fprintf(stderr, "validation is not deterministic\n");
    __builtin_trap();
  }
  for (const auto& v : first.violations) {
    if (v.rule.empty() || v.message.empty()) {
      std::fprintf(stderr, "violation without rule or message at %s\n", v.path.c_str());
      __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<doc::Document> docs;
  Diagnostics diagnostics;
  doc::ReadLimits limits;
  limits.max_bytes = 256 * 1024;
  doc::read_yaml(text, "fuzz.yaml", docs, diagnostics, limits);
  for (const auto& d : docs) {
    schema::Json object = doc::to_ordered_json(d.root);
    check(object);
    if (!object.is_object()) continue;
    object["apiVersion"] = "kueue.x-k8s.io/v1beta2";
    object["kind"] = "ClusterQueue";
    check(object);
    object["apiVersion"] = "v1";
    object["kind"] = "ConfigMap";
    check(object);
  }
  return 0;
}
