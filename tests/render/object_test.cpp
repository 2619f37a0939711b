#include "render/object.hpp"

#include <gtest/gtest.h>

#include "policy/policy_set.hpp"
#include "support/paths.hpp"

namespace gpubank::render {
namespace {

TEST(RenderObject, Sha256MatchesTheKnownVector) {
  // FIPS 180-2 test vector.
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(RenderObject, StampAddsLabelSourcesAndHashAndKeepsExistingKeys) {
  const auto set = policy::load_policy_set({gpubank::testing::examples_dir() + "/policies"});
  ASSERT_TRUE(set.diagnostics().empty());
  const policy::PolicyObject* guardrails = set.guardrails();
  ASSERT_NE(guardrails, nullptr);
  RenderedObject o;
  o.manifest = Json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"b"}}})");
  o.path = "x.yaml";
  o.sources = {guardrails};
  stamp(o);
  const Json& meta = o.manifest["metadata"];
  EXPECT_EQ(meta["labels"]["a"], "b");
  EXPECT_EQ(meta["labels"][std::string(kLabelManagedBy)], "gpubank");
  EXPECT_EQ(meta["annotations"][std::string(kAnnotationSource)], "PlatformGuardrails/" + guardrails->metadata.name);
  EXPECT_EQ(meta["annotations"][std::string(kAnnotationSourceHash)],
            sha256_hex("PlatformGuardrails/" + guardrails->metadata.name + " " + sha256_hex(canonical_text(*guardrails)) + "\n"));
}

TEST(RenderObject, DashboardsWithoutMetadataAreLeftAlone) {
  RenderedObject o;
  o.manifest = Json::parse(R"({"title":"GPU NOC"})");
  stamp(o);
  EXPECT_EQ(o.manifest.dump(), R"({"title":"GPU NOC"})");
}

TEST(RenderObject, DuplicatePathsAreARendererBug) {
  std::vector<RenderedObject> objects(2);
  objects[0].path = "b.yaml";
  objects[1].path = "a.yaml";
  sort_and_check_unique(objects);
  EXPECT_EQ(objects[0].path, "a.yaml");
  objects[1].path = "a.yaml";
  EXPECT_THROW(sort_and_check_unique(objects), std::logic_error);
}

}  // namespace
}  // namespace gpubank::render
