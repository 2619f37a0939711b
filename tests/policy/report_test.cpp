#include "policy/report.hpp"

#include <gtest/gtest.h>

#include "support/policy_fixture.hpp"

namespace gpubank::policy {
namespace {

TEST(Report, GivesEveryObjectAVerdictAndAttachesFindings) {
  const PolicySet set = gpubank::testing::from_yaml(R"(
apiVersion: platform.gpubank.dev/v1alpha1
kind: GPUQuotaPolicy
metadata: {name: q}
spec: {businessGroup: a, resourcePool: p, guaranteed: "1"}
---
apiVersion: v1
kind: Service
metadata: {name: s}
)");
  const auto report = build_report(set, gpubank::testing::findings_of(set));
  ASSERT_EQ(report.objects.size(), 2u);
  EXPECT_EQ(report.objects[0].verdict, Verdict::Invalid);
  ASSERT_EQ(report.objects[0].findings.size(), 1u);
  EXPECT_EQ(report.objects[1].verdict, Verdict::Skipped);
  EXPECT_FALSE(report.ok());
  const auto json = to_json(report);
  EXPECT_EQ(json["valid"], false);
  EXPECT_EQ(json["summary"]["invalid"], 1);
  EXPECT_EQ(json["summary"]["skipped"], 1);
  EXPECT_EQ(json["objects"][0]["findings"][0]["rule"], "schema.wrong-type");
  EXPECT_EQ(json["objects"][0]["findings"][0]["line"], 5);
  const std::string text = to_text(report);
  EXPECT_NE(text.find("invalid  GPUQuotaPolicy/q  in.yaml:2"), std::string::npos) << text;
  EXPECT_NE(text.find("2 objects: 0 valid, 1 invalid, 1 skipped; 1 errors, 0 warnings"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpubank::policy
