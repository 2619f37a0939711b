// The mutating webhook (POST /mutate): a protected workload without a priority class gets
// its type's default in the kueue.x-k8s.io/priority-class label, as a JSON Patch the test
// applies to the object; everything else passes unchanged; no default means a denial.
#include <openssl/evp.h>

#include <gtest/gtest.h>

#include "api/admission.hpp"
#include "api/review_fixture.hpp"
#include "policy/rules.hpp"

namespace gpubank::api {
namespace {

using nlohmann::json;
using testing::kMei;
using testing::kReplicaSetController;

const PolicySnapshot& snapshot() { return testing::examples_snapshot(); }

// The examples with inference-critical limited to search: customer-service has no class
// for inference workloads, so none of its inference workloads has a default.
const PolicySnapshot& snapshot_without_default() {
  static const PolicySnapshot s = [] {
    policy::PolicySet set = gpubank::testing::examples_plus();
    policy::PolicyObject guardrails = *set.guardrails();
    for (auto& p : std::get<policy::PlatformGuardrailsSpec>(guardrails.spec).priorities) {
      if (p.name == "inference-critical") p.groups = {"search"};
    }
    set.upsert(std::move(guardrails));
    return PolicySnapshot(std::move(set));
  }();
  return s;
}

const Timestamp kNow = testing::kReviewNow;
constexpr const char* kPriorityLabel = "kueue.x-k8s.io/priority-class";

// The Deployment an InferenceScalingPolicy of customer-service targets, without a class.
json embeddings_deployment() {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata",
           {{"name", "embeddings"},
            {"namespace", "customer-service"},
            {"labels",
             {{"kueue.x-k8s.io/queue-name", "customer-service"}, {"platform.gpubank.dev/workload-type", "inference"}}}}},
          {"spec",
           {{"replicas", 2},
            {"template",
             {{"metadata", {{"labels", {{"platform.gpubank.dev/workload-type", "inference"}}}}},
              {"spec",
               {{"containers", {{{"name", "server"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}}}}}};
}

json inference_job(const std::string& ns = "customer-service") {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", "warmup"},
            {"namespace", ns},
            {"labels", {{"kueue.x-k8s.io/queue-name", ns}, {"platform.gpubank.dev/workload-type", "inference"}}}}},
          {"spec", {{"template", {{"spec", {{"restartPolicy", "Never"}, {"containers", {{{"name", "w"}}}}}}}}}}};
}

// A pod of the embeddings Deployment, as its ReplicaSet creates it: no labels of its own
// besides the template's.
json embeddings_pod() {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "embeddings-5f7c9-x2k4q"},
            {"namespace", "customer-service"},
            {"labels", {{"platform.gpubank.dev/workload-type", "inference"}, {"pod-template-hash", "5f7c9"}}}}},
          {"spec", {{"containers", {{{"name", "server"}}}}}}};
}

// On UPDATE the old object is the same one (the tests change what the user sends, not what
// was stored).
json admission_review(const json& object, const json& user, const char* operation = "CREATE") {
  return testing::admission_review(object, user, operation, std::string(operation) == "UPDATE" ? object : json(),
                                   "mutate-1");
}

AdmissionDecision mutate(const json& object, const json& user = kMei, const char* operation = "CREATE",
                         const PolicySnapshot& snap = snapshot()) {
  return review_mutation(snap, admission_review(object, user, operation).dump(), kNow);
}

std::string base64_decode(const std::string& text) {
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  EXPECT_GE(n, 0) << "not base64: " << text;
  if (n < 0) return {};
  out.resize(static_cast<std::size_t>(n));
  // EVP_DecodeBlock counts the padding's zero bytes.
  for (auto it = text.rbegin(); it != text.rend() && *it == '='; ++it) out.pop_back();
  return out;
}

// The JSON Patch as the API server receives it: from the response, base64-decoded.
json patch_in_response(const AdmissionDecision& d) {
  const json response = review_response(d)["response"];
  EXPECT_EQ(response.value("patchType", ""), "JSONPatch") << response.dump();
  return json::parse(base64_decode(response.value("patch", "")));
}

// The object after the API server applied the response's patch.
json patched(const json& object, const AdmissionDecision& d) {
  EXPECT_TRUE(d.allowed) << d.message;
  return object.patch(patch_in_response(d));
}

void expect_unchanged(const AdmissionDecision& d) {
  EXPECT_TRUE(d.allowed) << d.message;
  EXPECT_TRUE(d.patch.empty()) << d.patch.dump();
  const json response = review_response(d)["response"];
  EXPECT_FALSE(response.contains("patch")) << response.dump();
  EXPECT_FALSE(response.contains("patchType")) << response.dump();
}

TEST(Mutate, AnInferenceDeploymentWithoutAClassGetsTheDefaultLabel) {
  const json object = embeddings_deployment();
  const auto d = mutate(object);
  EXPECT_EQ(d.uid, "mutate-1");
  EXPECT_TRUE(d.mutating);
  EXPECT_EQ(d.rules, std::vector<std::string>{"priority.protected-needs-class"});
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("set to \"inference-critical\", the default for inference workloads of "
                               "customer-service"),
            std::string::npos)
      << d.warnings[0];
  EXPECT_EQ(patch_in_response(d),
            json::parse(R"([{"op":"add","path":"/metadata/labels/kueue.x-k8s.io~1priority-class",)"
                        R"("value":"inference-critical"}])"));
  json expected = object;
  expected["metadata"]["labels"][kPriorityLabel] = "inference-critical";
  EXPECT_EQ(patched(object, d), expected);  // nothing else changes
}

TEST(Mutate, JobsAndPodsGetItTooAndControllersWritesAreDefaulted) {
  const json job = inference_job();
  EXPECT_EQ(patched(job, mutate(job))["metadata"]["labels"][kPriorityLabel], "inference-critical");
  // The ReplicaSet controller creating the Deployment's pods: Kueue's pod integration
  // reads the class from each pod.
  const json pod = embeddings_pod();
  const json after = patched(pod, mutate(pod, kReplicaSetController));
  EXPECT_EQ(after["metadata"]["labels"][kPriorityLabel], "inference-critical");
  EXPECT_EQ(after["metadata"]["labels"]["pod-template-hash"], "5f7c9");
  // On UPDATE too (an object created before the webhook was installed).
  EXPECT_EQ(patched(job, mutate(job, kMei, "UPDATE"))["metadata"]["labels"][kPriorityLabel], "inference-critical");
}

TEST(Mutate, ObjectsWithoutLabelsGetTheLabelsMap) {
  // The type comes from a pod template here; the object itself has no labels at all.
  json job = inference_job();
  job["spec"]["template"]["metadata"]["labels"] = job["metadata"]["labels"];
  job["metadata"].erase("labels");
  auto d = mutate(job);
  EXPECT_EQ(patch_in_response(d),
            json::parse(R"([{"op":"add","path":"/metadata/labels","value":{"kueue.x-k8s.io/priority-class":)"
                        R"("inference-critical"}}])"));
  json after = patched(job, d);
  EXPECT_EQ(after["metadata"]["labels"], json({{kPriorityLabel, "inference-critical"}}));
  EXPECT_EQ(after["spec"]["template"]["metadata"]["labels"].count(kPriorityLabel), 0u);
  // labels: null is replaced, not added into.
  job["metadata"]["labels"] = nullptr;
  EXPECT_EQ(patched(job, mutate(job))["metadata"]["labels"], json({{kPriorityLabel, "inference-critical"}}));
  // No metadata at all (the API server always sends some; the patch still applies).
  job.erase("metadata");
  d = mutate(job);
  EXPECT_EQ(patch_in_response(d), json::parse(R"([{"op":"add","path":"/metadata","value":{"labels":)"
                                              R"({"kueue.x-k8s.io/priority-class":"inference-critical"}}}])"));
  EXPECT_EQ(patched(job, d)["metadata"], json({{"labels", {{kPriorityLabel, "inference-critical"}}}}));
}

TEST(Mutate, AnObjectThatNamesAClassAnywhereIsLeftAlone) {
  json labelled = embeddings_deployment();
  labelled["metadata"]["labels"][kPriorityLabel] = "inference-critical";
  expect_unchanged(mutate(labelled));
  json in_template = embeddings_deployment();
  in_template["spec"]["template"]["spec"]["priorityClassName"] = "inference-critical";
  expect_unchanged(mutate(in_template));
  json template_label = embeddings_deployment();
  template_label["spec"]["template"]["metadata"]["labels"][kPriorityLabel] = "inference-critical";
  expect_unchanged(mutate(template_label));
  json pod = embeddings_pod();
  pod["spec"]["priorityClassName"] = "inference-critical";
  expect_unchanged(mutate(pod, kReplicaSetController));
  // Even a class the guardrails refuse: the validating webhook denies it by name.
  json wrong = embeddings_deployment();
  wrong["metadata"]["labels"][kPriorityLabel] = "training-high";
  expect_unchanged(mutate(wrong));
  // What /mutate added: a reinvocation changes nothing more.
  const json once = patched(embeddings_deployment(), mutate(embeddings_deployment()));
  expect_unchanged(mutate(once));
}

TEST(Mutate, UnprotectedTypesOtherNamespacesAndOtherRequestsAreLeftAlone) {
  json training = inference_job("search-training");
  training["metadata"]["labels"]["platform.gpubank.dev/workload-type"] = "training";
  expect_unchanged(mutate(training));
  json untyped = inference_job("search-training");
  untyped["metadata"]["labels"].erase("platform.gpubank.dev/workload-type");
  expect_unchanged(mutate(untyped));
  json invalid_type = inference_job();
  invalid_type["metadata"]["labels"]["platform.gpubank.dev/workload-type"] = "serving";
  expect_unchanged(mutate(invalid_type));
  expect_unchanged(mutate(inference_job("default")));  // a namespace of no group
  expect_unchanged(mutate(inference_job("kube-system")));
  // Deletes, subresources, policies, and kinds the webhook does not judge.
  expect_unchanged(mutate(inference_job(), kMei, "DELETE"));
  json status = admission_review(inference_job(), kMei, "UPDATE");
  status["request"]["subResource"] = "status";
  expect_unchanged(review_mutation(snapshot(), status.dump(), kNow));
  const json quota = {{"apiVersion", "platform.gpubank.dev/v1alpha1"},
                      {"kind", "GPUQuotaPolicy"},
                      {"metadata", {{"name", "customer-service-mig"}}},
                      {"spec", {{"businessGroup", "customer-service"}, {"resourcePool", "l40s-inference"}, {"guaranteed", 2}}}};
  expect_unchanged(mutate(quota));
  const json config_map = {{"apiVersion", "v1"},
                           {"kind", "ConfigMap"},
                           {"metadata",
                            {{"name", "c"},
                             {"namespace", "customer-service"},
                             {"labels", {{"platform.gpubank.dev/workload-type", "inference"}}}}},
                           {"data", {{"a", "b"}}}};
  expect_unchanged(mutate(config_map));
}

TEST(Mutate, WithoutADefaultAUsersWorkloadIsDeniedAndAControllersPasses) {
  const auto d = mutate(embeddings_deployment(), kMei, "CREATE", snapshot_without_default());
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.code, 403);
  EXPECT_EQ(d.reason, "Forbidden");
  EXPECT_EQ(d.rules, std::vector<std::string>{"priority.protected-needs-class"});
  EXPECT_TRUE(d.patch.empty());
  EXPECT_NE(d.message.find("Deployment/customer-service/embeddings is rejected: "
                           "metadata.labels[kueue.x-k8s.io/priority-class]: "
                           "inference workloads are protected"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("no priority class names inference in its workloadTypes and allows business group "
                           "customer-service"),
            std::string::npos)
      << d.message;
  EXPECT_TRUE(d.message.ends_with("[priority.protected-needs-class]")) << d.message;
  const json response = review_response(d)["response"];
  EXPECT_FALSE(response.contains("patch"));
  EXPECT_EQ(response["status"]["code"], 403);
  expect_unchanged(mutate(embeddings_pod(), kReplicaSetController, "CREATE", snapshot_without_default()));
  // search keeps its default.
  const json search_job = inference_job("search");
  EXPECT_EQ(patched(search_job, mutate(search_job, kMei, "CREATE", snapshot_without_default()))["metadata"]["labels"]
                                                                                                [kPriorityLabel],
            "inference-critical");
}

TEST(Mutate, MalformedReviewsAreDeniedAsTheValidatingPathDeniesThem) {
  const std::string valid = admission_review(embeddings_deployment(), kMei).dump();
  std::vector<std::string> bodies = {
      "{\"apiVersion\": ",
      "[]",
      R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"old"}})",
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})",
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"kind":"Pod"},)"
      R"("operation":"CREATE"}})",
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"kind":"Pod"},)"
      R"("operation":"PATCH","userInfo":{"username":"a"}}})",
  };
  // (A kind the webhook knows without looking at the object: both endpoints find it malformed.)
  json no_object = json::parse(valid);
  no_object["request"]["kind"] = {{"group", "ray.io"}, {"version", "v1"}, {"kind", "RayCluster"}};
  no_object["request"].erase("object");
  bodies.push_back(no_object.dump());
  std::string big = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"big","x":")";
  big += std::string(kMaxReviewBytes, 'a') + "\"}}";
  bodies.push_back(big);
  for (const auto& body : bodies) {
    const auto validated = review(snapshot(), body, kNow);
    const auto mutated = review_mutation(snapshot(), body, kNow);
    EXPECT_FALSE(mutated.allowed) << body.substr(0, 200);
    EXPECT_EQ(mutated.code, validated.code) << body.substr(0, 200);
    EXPECT_EQ(mutated.reason, validated.reason) << body.substr(0, 200);
    EXPECT_EQ(mutated.rules, validated.rules) << body.substr(0, 200);
    EXPECT_EQ(mutated.message, validated.message) << body.substr(0, 200);
    EXPECT_EQ(mutated.uid, validated.uid) << body.substr(0, 200);
    EXPECT_TRUE(mutated.patch.empty());
  }
  // Whatever the kind, a write without its object is malformed (/validate cannot tell a
  // Deployment without its pod template from a kind it does not judge).
  json deployment_without_object = json::parse(valid);
  deployment_without_object["request"].erase("object");
  const auto missing = review_mutation(snapshot(), deployment_without_object.dump(), kNow);
  EXPECT_FALSE(missing.allowed);
  EXPECT_EQ(missing.code, 400);
  EXPECT_EQ(missing.rules, std::vector<std::string>{"request.malformed"});
  EXPECT_EQ(missing.message, "request.object is required for CREATE [request.malformed]");
  // Labels that are not a map cannot be added to.
  json odd = embeddings_deployment();
  odd["metadata"]["labels"] = "inference";
  const auto d = mutate(odd);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rules, std::vector<std::string>{"request.malformed"});
  EXPECT_NE(d.message.find("request.object.metadata.labels must be a map"), std::string::npos) << d.message;
}

// In a cluster the API server calls /mutate first and /validate on the result: the
// validating rule fires only where /mutate is not installed.
TEST(Mutate, ValidationDeniesWhatMutationWouldHaveDefaultedAndPassesTheResult) {
  const json object = embeddings_deployment();
  const auto unmutated = review(snapshot(), admission_review(object, kMei).dump(), kNow);
  EXPECT_FALSE(unmutated.allowed);
  EXPECT_EQ(unmutated.rules, std::vector<std::string>{"priority.protected-needs-class"}) << unmutated.message;
  EXPECT_NE(unmutated.message.find("Its default is \"inference-critical\", which gpubank's mutating webhook (POST "
                                   "/mutate) writes into that label"),
            std::string::npos)
      << unmutated.message;
  const json after = patched(object, mutate(object));
  const auto validated = review(snapshot(), admission_review(after, kMei).dump(), kNow);
  EXPECT_TRUE(validated.allowed) << validated.message;
  // Controllers are not held to it: the pods of a Job get their priority from its Workload.
  const auto pod = review(snapshot(), admission_review(embeddings_pod(), kReplicaSetController).dump(), kNow);
  EXPECT_TRUE(pod.allowed) << pod.message;
}

}  // namespace
}  // namespace gpubank::api
