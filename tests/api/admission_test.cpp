// The webhook's decisions on AdmissionReview payloads as the API server sends them.
#include "api/admission.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "policy/rules.hpp"
#include "support/policy_fixture.hpp"

namespace gpubank::api {
namespace {

using nlohmann::json;

const PolicySnapshot& snapshot() {
  static const PolicySnapshot s(gpubank::testing::examples_plus());
  return s;
}

std::string fixture(const std::string& name) {
  std::ifstream in(gpubank::testing::source_dir() + "/tests/api/data/" + name);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

const Timestamp kNow = *parse_rfc3339("2026-11-30T09:12:44Z");

AdmissionDecision decide(const std::string& body) { return review(snapshot(), body, kNow); }

// A payload from a fixture with a JSON edit applied.
std::string edited(const std::string& name, const std::function<void(json&)>& edit) {
  json j = json::parse(fixture(name));
  edit(j);
  return j.dump();
}

TEST(Admission, GroupAdminCreatingAValidQuotaIsAllowed) {
  const auto d = decide(fixture("create-quota-by-group-admin.json"));
  EXPECT_TRUE(d.allowed) << d.message;
  EXPECT_EQ(d.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(d.operation, "CREATE");
  EXPECT_EQ(d.kind, "platform.gpubank.dev/GPUQuotaPolicy");
  EXPECT_EQ(d.user.username, "mei.chen");
  const json r = review_response(d);
  EXPECT_EQ(r["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(r["kind"], "AdmissionReview");
  EXPECT_EQ(r["response"]["uid"], d.uid);
  EXPECT_EQ(r["response"]["allowed"], true);
  EXPECT_FALSE(r["response"].contains("status"));
}

TEST(Admission, AnotherGroupsAdminIsForbidden) {
  const auto d = decide(edited("create-quota-by-group-admin.json", [](json& j) {
    j["request"]["userInfo"] = {{"username", "sam"}, {"groups", {"search-admins"}}};
  }));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.code, 403);
  EXPECT_EQ(d.reason, "Forbidden");
  EXPECT_EQ(d.rules, std::vector<std::string>{"auth.not-group-admin"});
  EXPECT_NE(d.message.find("user \"sam\" is not an admin of business group customer-service"), std::string::npos)
      << d.message;
  EXPECT_TRUE(d.message.ends_with("[auth.not-group-admin]")) << d.message;
}

TEST(Admission, AChangeThatBreaksThePoolIsInvalidAndNamesEveryRuleItBreaks) {
  const auto d = decide(fixture("update-quota-over-pool.json"));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.code, 422);
  EXPECT_EQ(d.reason, "Invalid");
  // Its own sum rule, and the lease it pushes over the pool (an object it did not touch).
  EXPECT_EQ(d.rules, (std::vector<std::string>{"quota.sum-exceeds-pool", "lease.exceeds-pool"}));
  EXPECT_NE(d.message.find("GPUQuotaPolicy/research-training-h100 is rejected: spec.guaranteed: guarantees on pool "
                           "h100-rdma-training add up to 72"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("CapacityLease/ads-holiday-retrain: spec.extraGuaranteed"), std::string::npos) << d.message;
  const json r = review_response(d);
  EXPECT_EQ(r["response"]["status"]["code"], 422);
  EXPECT_EQ(r["response"]["status"]["message"], d.message);
}

TEST(Admission, SchemaErrorsAreReportedWithFieldPaths) {
  const auto d = decide(edited("create-quota-by-group-admin.json", [](json& j) {
    j["request"]["object"]["spec"]["guaranteed"] = "4";
    j["request"]["object"]["spec"]["guaranted"] = 4;
  }));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.code, 422);
  EXPECT_EQ(d.rules, (std::vector<std::string>{"schema.wrong-type", "schema.unknown-field"}));
  EXPECT_NE(d.message.find("spec.guaranteed: expected an integer, got a string \"4\" [schema.wrong-type]"),
            std::string::npos)
      << d.message;
}

TEST(Admission, OnlyPlatformAdminsTouchGuardrails) {
  const auto d = decide(fixture("delete-guardrails.json"));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rules, std::vector<std::string>{"auth.platform-admin-only"});
  // A platform admin may, but not while policies depend on the guardrails.
  const auto admin = decide(edited("delete-guardrails.json", [](json& j) {
    j["request"]["userInfo"]["groups"] = {"gpubank-platform-admins"};
  }));
  EXPECT_FALSE(admin.allowed);
  EXPECT_EQ(admin.rules, std::vector<std::string>{"guardrails.missing"});
}

TEST(Admission, ForgedWorkloadLabelsAreForbidden) {
  const auto d = decide(fixture("create-pod-with-forged-labels.json"));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.code, 403);
  EXPECT_EQ(d.rules, std::vector<std::string>{"labels.reserved"});
  EXPECT_NE(d.message.find("namespace search-training belongs to search"), std::string::npos) << d.message;
  // generateName: the decision names the pod by what the API server sent.
  const auto fixed = decide(edited("create-pod-with-forged-labels.json", [](json& j) {
    j["request"]["object"]["metadata"]["labels"]["platform.gpubank.dev/business-group"] = "search";
  }));
  EXPECT_TRUE(fixed.allowed) << fixed.message;
}

TEST(Admission, PriorityClassesNotAllowedForTheGroupAreForbidden) {
  const auto d = decide(edited("create-pod-with-forged-labels.json", [](json& j) {
    j["request"]["namespace"] = "research";
    j["request"]["object"]["metadata"]["namespace"] = "research";
    j["request"]["object"]["metadata"]["labels"].erase("platform.gpubank.dev/business-group");
  }));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rules, std::vector<std::string>{"priority.forbidden"});
}

TEST(Admission, WorkloadKindsWithoutPodTemplatesAreStillChecked) {
  // A KServe InferenceService in its usual form: a model, no containers. (The one an
  // InferenceScalingPolicy targets, so that it may be of type inference.)
  auto isvc = [](const json& labels, const char* priority) {
    json object = {{"apiVersion", "serving.kserve.io/v1beta1"},
                   {"kind", "InferenceService"},
                   {"metadata", {{"name", "customer-service-llm"}, {"namespace", "customer-service"}, {"labels", labels}}},
                   {"spec", {{"predictor", {{"model", {{"modelFormat", {{"name", "huggingface"}}}}}}}}}};
    if (priority != nullptr) object["spec"]["predictor"]["priorityClassName"] = priority;
    json review = {{"apiVersion", "admission.k8s.io/v1"},
                   {"kind", "AdmissionReview"},
                   {"request",
                    {{"uid", "isvc-1"},
                     {"kind", {{"group", "serving.kserve.io"}, {"version", "v1beta1"}, {"kind", "InferenceService"}}},
                     {"namespace", "customer-service"},
                     {"name", "customer-service-llm"},
                     {"operation", "CREATE"},
                     {"userInfo", {{"username", "mei.chen"}}},
                     {"object", object}}}};
    return review.dump();
  };
  const json inference = {{"platform.gpubank.dev/workload-type", "inference"}};
  EXPECT_TRUE(decide(isvc(inference, "inference-critical")).allowed);
  const auto forged = decide(isvc({{"platform.gpubank.dev/cost-center", "CC-1001"}}, nullptr));
  EXPECT_FALSE(forged.allowed);
  EXPECT_EQ(forged.rules, std::vector<std::string>{"labels.reserved"});
  const auto wrong_priority = decide(isvc(inference, "training-high"));
  EXPECT_FALSE(wrong_priority.allowed);
  EXPECT_EQ(wrong_priority.rules, std::vector<std::string>{"priority.forbidden"});
}

TEST(Admission, StatusUpdatesNeedAPlatformAdmin) {
  const std::string body = edited("create-quota-by-group-admin.json", [](json& j) {
    auto& r = j["request"];
    r["operation"] = "UPDATE";
    r["subResource"] = "status";
    r["kind"]["kind"] = "CapacityLease";
    r["name"] = "ads-holiday-retrain";
    r["userInfo"] = {{"username", "a"}, {"groups", {"ads-admins"}}};
    r["object"] = {{"apiVersion", "platform.gpubank.dev/v1alpha1"},
                   {"kind", "CapacityLease"},
                   {"metadata", {{"name", "ads-holiday-retrain"}}},
                   {"spec",
                    {{"businessGroup", "ads"},
                     {"resourcePool", "h100-rdma-training"},
                     {"type", "TemporaryQuota"},
                     {"extraGuaranteed", 8},
                     {"start", "2026-12-19T00:00:00Z"},
                     {"end", "2026-12-19T20:00:00Z"},
                     {"reason", "r"}}},
                   {"status", {{"phase", "Approved"}}}};
    r["oldObject"] = r["object"];
  });
  const auto d = decide(body);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rules, std::vector<std::string>{"auth.platform-admin-only"});
}

TEST(Admission, MalformedRequestsAreDeniedWithAClearMessage) {
  struct Case {
    std::string body;
    std::string rule;
    std::string says;
    std::string uid;
  };
  const std::vector<Case> cases = {
      {"{not json", "request.malformed", "not a JSON AdmissionReview", ""},
      {"[]", "request.malformed", "must be an admission.k8s.io/v1 AdmissionReview", ""},
      {R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u1"}})",
       "request.malformed", "got apiVersion \"admission.k8s.io/v1beta1\"", "u1"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})", "request.malformed", "no request", ""},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u2"}})", "request.malformed",
       "no request.kind.kind", "u2"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u3","kind":{"group":"","kind":"ConfigMap"},"operation":"CREATE","userInfo":{"username":"x"},"object":{"kind":"ConfigMap","data":{}}}})",
       "request.unsupported-kind", "not /ConfigMap", "u3"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u4","kind":{"group":"platform.gpubank.dev","kind":"GPUQuotaPolicy"},"operation":"PATCH","userInfo":{"username":"x"}}})",
       "request.malformed", "unknown operation \"PATCH\"", "u4"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u5","kind":{"group":"platform.gpubank.dev","kind":"GPUQuotaPolicy"},"operation":"CREATE","userInfo":{"username":"x"}}})",
       "request.malformed", "request.object is required", "u5"},
  };
  for (const auto& c : cases) {
    const auto d = decide(c.body);
    EXPECT_FALSE(d.allowed) << c.body;
    EXPECT_EQ(d.rules, std::vector<std::string>{c.rule}) << c.body;
    EXPECT_NE(d.message.find(c.says), std::string::npos) << d.message;
    EXPECT_EQ(d.uid, c.uid) << c.body;
    EXPECT_EQ(review_response(d)["response"]["uid"], c.uid);
  }
}

TEST(Admission, OversizedBodiesAreDeniedUnreadButStillEchoTheUid) {
  std::string body = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"big-1","object":{"data":")";
  body += std::string(kMaxReviewBytes, 'x');
  body += R"("}}})";
  const auto d = decide(body);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.code, 413);
  EXPECT_EQ(d.rules, std::vector<std::string>{"request.too-large"});
  EXPECT_EQ(d.uid, "big-1");
}

TEST(Admission, DeeplyNestedBodiesAreRejectedNotRecursedInto) {
  std::string body = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"deep","object":)";
  body += std::string(100000, '[') + std::string(100000, ']') + "}}";
  const auto d = decide(body);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rules, std::vector<std::string>{"request.malformed"});
  EXPECT_NE(d.message.find("nesting deeper than"), std::string::npos) << d.message;
}

TEST(Admission, WarningsTravelWithAnAllowedDecision) {
  const auto d = decide(edited("create-quota-by-group-admin.json", [](json& j) {
    j["request"]["kind"]["kind"] = "InferenceScalingPolicy";
    j["request"]["name"] = "cs-chat";
    j["request"]["object"] = json::parse(R"({
      "apiVersion": "platform.gpubank.dev/v1alpha1", "kind": "InferenceScalingPolicy", "metadata": {"name": "cs-chat"},
      "spec": {"workloadRef": {"kind": "Deployment", "name": "chat", "namespace": "customer-service"},
               "businessGroup": "customer-service", "resourcePool": "h100-inference",
               "replicaShape": {"tensorParallelSize": 4, "gpuPerReplica": 4},
               "minReplicas": 9, "maxReplicas": 10, "scaleUp": {"queueDepthPerReplica": 8}}})");
  }));
  EXPECT_TRUE(d.allowed) << d.message;
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("[inference.floor-above-guarantee]"), std::string::npos);
  EXPECT_EQ(review_response(d)["response"]["warnings"][0], d.warnings[0]);
}

TEST(Admission, DecisionsArePureFunctionsOfTheirInputs) {
  const std::string body = fixture("update-quota-over-pool.json");
  const auto a = review_response(decide(body)).dump();
  const auto b = review_response(decide(body)).dump();
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace gpubank::api
