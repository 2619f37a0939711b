// The workloads webhook on the labels that grant something (owner-id, capacity-role,
// workload-type inference, checkpointable) and on GPU workloads that skip Kueue: a denial
// naming the rule for each forgery, and the legitimate uses allowed.
#include <gtest/gtest.h>

#include "api/admission.hpp"
#include "api/review_fixture.hpp"
#include "policy/rules.hpp"

namespace gpubank::api {
namespace {

using nlohmann::json;
using testing::admission_review;
using testing::kMei;
using testing::kReplicaSetController;

// The example training Job (examples/workloads), as search engineer u-40213 submits it.
json training_job() {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", "ranking-finetune"},
            {"namespace", "search-training"},
            {"labels",
             {{"kueue.x-k8s.io/queue-name", "search"},
              {"kueue.x-k8s.io/priority-class", "training-high"},
              {"platform.gpubank.dev/workload-type", "training"},
              {"platform.gpubank.dev/checkpointable", "true"},
              {"platform.gpubank.dev/owner-id", "u-40213"}}}}},
          {"spec",
           {{"template",
             {{"spec",
               {{"priorityClassName", "training-high"},
                {"containers",
                 {{{"name", "trainer"}, {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}}}}}}};
}

json embeddings_deployment() {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata",
           {{"name", "embeddings"},
            {"namespace", "customer-service"},
            {"labels",
             {{"kueue.x-k8s.io/queue-name", "customer-service"}, {"platform.gpubank.dev/workload-type", "inference"}}}}},
          {"spec",
           {{"template",
             {{"metadata", {{"labels", {{"platform.gpubank.dev/workload-type", "inference"}}}}},
              {"spec",
               {{"priorityClassName", "inference-critical"},
                {"containers",
                 {{{"name", "server"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}}}}}};
}

AdmissionDecision review_of(const json& object, const json& user, const char* operation = "CREATE",
                            const json& old_object = nullptr) {
  return review(testing::examples_snapshot(), admission_review(object, user, operation, old_object, "trust-1").dump(),
                testing::kReviewNow);
}

void expect_denied(const AdmissionDecision& d, std::string_view rule, std::string_view words) {
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.code, 403);
  EXPECT_EQ(d.rules, std::vector<std::string>{std::string(rule)}) << d.message;
  EXPECT_NE(d.message.find("[" + std::string(rule) + "]"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find(words), std::string::npos) << d.message;
}

const json kU40213 = {{"username", "u-40213"}, {"groups", {"system:authenticated"}}};

TEST(WorkloadTrust, TheExampleJobByItsOwnerIsAllowed) {
  const auto d = review_of(training_job(), kU40213);
  EXPECT_TRUE(d.allowed) << d.message;
}

TEST(WorkloadTrust, OwnerIdOfSomeoneElseIsForbidden) {
  expect_denied(review_of(training_job(), kMei), policy::rule::kLabelsOwnerIdNotRequester,
                "metadata.labels[platform.gpubank.dev/owner-id]: label platform.gpubank.dev/owner-id must be the id "
                "of the user who creates the workload, \"mei.chen\", not \"u-40213\"");
  // An update by someone else that keeps the owner is fine; one that changes it is not.
  EXPECT_TRUE(review_of(training_job(), kMei, "UPDATE", training_job()).allowed);
  json taken = training_job();
  taken["metadata"]["labels"]["platform.gpubank.dev/owner-id"] = "mei.chen";
  expect_denied(review_of(taken, kMei, "UPDATE", training_job()), policy::rule::kLabelsOwnerIdNotRequester,
                "may not be changed on update");
}

TEST(WorkloadTrust, CapacityRoleFromAUserIsForbiddenAndFromAControllerAllowed) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", "embeddings-5f7c9-x2k4q"},
                {"namespace", "customer-service"},
                {"labels",
                 {{"platform.gpubank.dev/workload-type", "inference"},
                  {"platform.gpubank.dev/capacity-role", "serving-floor"}}}}},
              {"spec", {{"containers", {{{"name", "server"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}};
  const auto by_user = review_of(pod, kMei);
  EXPECT_FALSE(by_user.allowed);
  // A bare pod also may not call itself inference nor skip the queue (nor, being of a
  // protected type, go without a priority class).
  EXPECT_EQ(by_user.rules,
            (std::vector<std::string>{"labels.capacity-role-controller-only", "labels.inference-not-targeted",
                                      "workload.missing-queue-name", "priority.protected-needs-class"}))
      << by_user.message;
  // The ReplicaSet controller creating the pods of the checked Deployment.
  EXPECT_TRUE(review_of(pod, kReplicaSetController).allowed);
}

TEST(WorkloadTrust, InferenceOnlyOnAWorkloadAnInferenceScalingPolicyTargets) {
  EXPECT_TRUE(review_of(embeddings_deployment(), kMei).allowed);
  json other = embeddings_deployment();
  other["metadata"]["name"] = "chat";
  expect_denied(review_of(other, kMei), policy::rule::kLabelsInferenceNotTargeted,
                "no policy targets Deployment \"chat\" in customer-service");
}

TEST(WorkloadTrust, CheckpointableOnAProtectedWorkloadIsForbidden) {
  json d = embeddings_deployment();
  d["metadata"]["labels"]["platform.gpubank.dev/checkpointable"] = "true";
  expect_denied(review_of(d, kMei), policy::rule::kLabelsCheckpointableNotAllowed, "protected from preemption");
}

TEST(WorkloadTrust, AGpuJobWithoutAQueueIsForbidden) {
  json job = training_job();
  job["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  expect_denied(review_of(job, kU40213), policy::rule::kWorkloadMissingQueueName,
                "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]");
  // Removing the queue on update is the same bypass.
  expect_denied(review_of(job, kU40213, "UPDATE", training_job()), policy::rule::kWorkloadMissingQueueName,
                "kueue.x-k8s.io/queue-name");
}

}  // namespace
}  // namespace gpubank::api
