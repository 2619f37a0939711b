#include "policy/workload.hpp"

#include <gtest/gtest.h>

#include "document/reader.hpp"
#include "policy/rules.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::policy {
namespace {

struct Finding {
  std::string rule, path, message;
};

std::vector<Finding> check(const std::string& yaml, const std::string& ns, const char* old_yaml = nullptr) {
  static const PolicySet examples = gpubank::testing::examples_plus();
  std::vector<doc::Document> docs;
  Diagnostics d;
  doc::read_yaml(yaml, "w.yaml", docs, d);
  EXPECT_EQ(docs.size(), 1u);
  std::vector<doc::Document> old_docs;
  if (old_yaml != nullptr) doc::read_yaml(old_yaml, "old.yaml", old_docs, d);
  std::vector<Finding> out;
  check_workload(docs[0].root, ns, *examples.guardrails_spec(), old_docs.empty() ? nullptr : &old_docs[0].root,
                 [&](std::string_view rule, std::string path, std::string message, SourcePos) {
                   out.push_back({std::string(rule), std::move(path), std::move(message)});
                 });
  return out;
}

TEST(Workload, AllowedPriorityAndTypeOnAPodTemplatePass) {
  auto f = check(R"(
kind: Deployment
metadata: {name: chat, labels: {platform.gpubank.dev/workload-type: inference}}
spec:
  template:
    metadata: {labels: {platform.gpubank.dev/workload-type: inference}}
    spec: {priorityClassName: inference-critical, containers: [{name: c}]}
)",
                 "customer-service");
  EXPECT_TRUE(f.empty()) << f[0].message;
}

TEST(Workload, PriorityForAnotherWorkloadTypeIsForbidden) {
  auto f = check(R"(
kind: Pod
metadata: {name: p, labels: {platform.gpubank.dev/workload-type: training}}
spec: {priorityClassName: inference-critical, containers: [{name: c}]}
)",
                 "search");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kPriorityForbidden);
  EXPECT_EQ(f[0].path, "spec.priorityClassName");
  EXPECT_NE(f[0].message.find("not allowed for training workloads"), std::string::npos);
  EXPECT_NE(f[0].message.find("training-high, training-standard, batch-low"), std::string::npos);
}

TEST(Workload, TypeRestrictedPriorityNeedsAWorkloadTypeLabel) {
  auto f = check(R"(
kind: Pod
metadata: {name: p}
spec: {priorityClassName: training-standard, containers: [{name: c}]}
)",
                 "ads");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kPriorityForbidden);
  EXPECT_NE(f[0].message.find("has no platform.gpubank.dev/workload-type label"), std::string::npos);
}

TEST(Workload, ReservedLabelsInANamespaceOfNoGroupAreForged) {
  auto f = check(R"(
kind: Pod
metadata: {name: p, labels: {platform.gpubank.dev/cost-center: CC-1001}}
spec: {containers: [{name: c}]}
)",
                 "kube-system");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kLabelsReserved);
  EXPECT_NE(f[0].message.find("belongs to no business group"), std::string::npos);
}

TEST(Workload, ForgedLabelsInsidePodTemplatesAreFoundToo) {
  auto f = check(R"(
kind: Job
metadata: {name: j}
spec:
  template:
    metadata: {labels: {platform.gpubank.dev/cost-center: CC-1002}}
    spec: {containers: [{name: c}]}
)",
                 "search");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].path, "spec.template.metadata.labels[platform.gpubank.dev/cost-center]");
}

TEST(Workload, AnUnchangedLabelOnUpdateIsNotTheUsersDoing) {
  // The namespace moved to another group after the label was written: an update that
  // leaves the label alone is not a forgery.
  const char* old_pod = R"(
kind: Pod
metadata: {name: p, labels: {platform.gpubank.dev/business-group: ads}}
spec: {containers: [{name: c}]}
)";
  EXPECT_TRUE(check(old_pod, "search", old_pod).empty());
  EXPECT_EQ(check(old_pod, "search").size(), 1u);
}

TEST(Workload, KueuePriorityLabelIsChecked) {
  auto f = check(R"(
kind: JobSet
metadata: {name: js, labels: {kueue.x-k8s.io/priority-class: made-up, platform.gpubank.dev/workload-type: batch}}
spec: {replicatedJobs: [{name: w, template: {spec: {template: {spec: {containers: [{name: c}]}}}}}]}
)",
                 "ads");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, rule::kPriorityUnknown);
  EXPECT_EQ(f[0].path, "metadata.labels[kueue.x-k8s.io/priority-class]");
}

}  // namespace
}  // namespace gpubank::policy
