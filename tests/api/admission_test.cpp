// The webhook's decisions on AdmissionReview payloads as the API server sends them.
#include "api/admission.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "document/reader.hpp"
#include "policy/decode.hpp"
#include "policy/lease_approval.hpp"
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

// ---- CapacityLease: requester, approval bound to its spec, and the time of updates -----

// customer-service (admin: user:mei.chen) asks for 4 more MIG slices; pat is a platform
// administrator, and so is mei.chen in the self-approval cases.
json lease_object(const std::string& end, const json& status = nullptr,
                  const std::optional<std::string>& requester = std::string("user:mei.chen")) {
  json o = {{"apiVersion", "platform.gpubank.dev/v1alpha1"},
            {"kind", "CapacityLease"},
            {"metadata", {{"name", "cs-eval"}}},
            {"spec",
             {{"businessGroup", "customer-service"},
              {"resourcePool", "mig-or-shared-development"},
              {"type", "TemporaryQuota"},
              {"extraGuaranteed", 4},
              {"end", end},
              {"reason", "evaluation"}}}};
  if (requester) o["metadata"]["annotations"] = {{std::string(policy::kAnnotationRequestedBy), *requester}};
  if (!status.is_null()) o["status"] = status;
  return o;
}

std::string lease_review(const std::string& operation, const json& object, const json& old_object,
                         const std::string& user, const std::vector<std::string>& groups, bool status = false) {
  json r = {{"uid", "lease-1"},
            {"kind", {{"group", "platform.gpubank.dev"}, {"version", "v1alpha1"}, {"kind", "CapacityLease"}}},
            {"name", "cs-eval"},
            {"operation", operation},
            {"userInfo", {{"username", user}, {"groups", groups}}},
            {"object", object},
            {"oldObject", old_object}};
  if (status) r["subResource"] = "status";
  return json{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", r}}.dump();
}

const std::vector<std::string> kCsAdmin{"customer-service-admins"};
const std::vector<std::string> kPlatformAdmin{"gpubank-platform-admins"};

std::string spec_hash_of(const json& object) {
  auto node = doc::parse_json(object.dump());
  Diagnostics ignored;
  auto decoded = policy::decode_policy(*node, policy::Origin{}, ignored);
  return policy::lease_spec_hash(decoded->as<policy::CapacityLeaseSpec>());
}

json approval_by(const std::string& subject, const json& object) {
  return {{"phase", "Approved"},
          {"approval", {{"approvedBy", subject}, {"specHash", spec_hash_of(object)}, {"approvedAt", "2026-11-30T09:00:00Z"}}}};
}

TEST(AdmissionLease, TheCreatorRecordsThemselvesAsRequester) {
  EXPECT_TRUE(decide(lease_review("CREATE", lease_object("2026-12-01T05:00:00Z"), nullptr, "mei.chen", kCsAdmin)).allowed);
  for (const auto& requester : {std::optional<std::string>(), std::optional<std::string>("user:omar")}) {
    const auto d = decide(
        lease_review("CREATE", lease_object("2026-12-01T05:00:00Z", nullptr, requester), nullptr, "mei.chen", kCsAdmin));
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.code, 403);
    EXPECT_EQ(d.rules, std::vector<std::string>{"lease.requester-mismatch"});
    EXPECT_NE(d.message.find("must name the user who writes the lease's spec, \"user:mei.chen\""), std::string::npos)
        << d.message;
  }
}

TEST(AdmissionLease, AnUpdateCannotStretchALeaseWithoutStartPastTheMaximum) {
  // Created 20h long (kNow is 2026-11-30T09:12:44Z; maxLeaseDuration is 24h) ...
  const json short_lease = lease_object("2026-12-01T05:00:00Z");
  EXPECT_TRUE(decide(lease_review("CREATE", short_lease, nullptr, "mei.chen", kCsAdmin)).allowed);
  // ... then stretched to 40h by an update: measured from the request's time as on CREATE.
  const auto d = decide(lease_review("UPDATE", lease_object("2026-12-02T01:00:00Z"), short_lease, "mei.chen", kCsAdmin));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rules, std::vector<std::string>{"lease.too-long"});
  EXPECT_NE(d.message.find("from now, above the platform's maxLeaseDuration 24h"), std::string::npos) << d.message;
  // Within the maximum an update is fine.
  EXPECT_TRUE(
      decide(lease_review("UPDATE", lease_object("2026-12-01T09:00:00Z"), short_lease, "mei.chen", kCsAdmin)).allowed);
}

TEST(AdmissionLease, AnApprovalIsVoidedByAnyChangeOfTheSpec) {
  const json lease = lease_object("2026-12-01T05:00:00Z");
  const json approved = lease_object("2026-12-01T05:00:00Z", approval_by("user:pat", lease));
  // pat approves the spec as it is.
  const auto approve = decide(lease_review("UPDATE", approved, lease, "pat", kPlatformAdmin, true));
  EXPECT_TRUE(approve.allowed) << approve.message;
  // The requester then changes the spec; the API server keeps the approved status.
  json longer = lease_object("2026-12-01T08:00:00Z", approved["status"]);
  const auto change = decide(lease_review("UPDATE", longer, approved, "mei.chen", kCsAdmin));
  EXPECT_FALSE(change.allowed);
  EXPECT_EQ(change.rules, std::vector<std::string>{"lease.approval-mismatch"});
  EXPECT_NE(change.message.find("the approval by user:pat was for another spec"), std::string::npos) << change.message;
  // A change that leaves the spec alone keeps the approval.
  json labelled = approved;
  labelled["metadata"]["labels"] = {{"team", "eval"}};
  EXPECT_TRUE(decide(lease_review("UPDATE", labelled, approved, "mei.chen", kCsAdmin)).allowed);
  // Once the approval is cleared (a status write), the spec may change and be approved anew.
  const json cleared = lease_object("2026-12-01T05:00:00Z", json{{"phase", "Pending"}});
  EXPECT_TRUE(decide(lease_review("UPDATE", cleared, approved, "pat", kPlatformAdmin, true)).allowed);
  EXPECT_TRUE(decide(lease_review("UPDATE", lease_object("2026-12-01T08:00:00Z", cleared["status"]), cleared, "mei.chen",
                                  kCsAdmin))
                  .allowed);
  // An approval of another spec is refused when written.
  const json stale = lease_object("2026-12-01T05:00:00Z", approval_by("user:pat", longer));
  const auto wrong = decide(lease_review("UPDATE", stale, lease, "pat", kPlatformAdmin, true));
  EXPECT_FALSE(wrong.allowed);
  EXPECT_EQ(wrong.rules, std::vector<std::string>{"lease.approval-mismatch"});
}

TEST(AdmissionLease, AnApprovalRecordsItsOwnApproverAndTime) {
  const json lease = lease_object("2026-12-01T05:00:00Z");
  auto d = decide(
      lease_review("UPDATE", lease_object("2026-12-01T05:00:00Z", approval_by("user:omar", lease)), lease, "pat",
                   kPlatformAdmin, true));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rules, std::vector<std::string>{"lease.approval-invalid"});
  json ahead = approval_by("user:pat", lease);
  ahead["approval"]["approvedAt"] = "2026-12-01T04:00:00Z";  // would make the lease look 1h long
  d = decide(lease_review("UPDATE", lease_object("2026-12-01T05:00:00Z", ahead), lease, "pat", kPlatformAdmin, true));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rules, std::vector<std::string>{"lease.approval-invalid"});
}

TEST(AdmissionLease, TheRequesterMayNotApproveTheirOwnLeaseUnlessTheGuardrailsAllowIt) {
  const std::vector<std::string> both{"customer-service-admins", "gpubank-platform-admins"};
  const json lease = lease_object("2026-12-01T05:00:00Z");
  const std::string self =
      lease_review("UPDATE", lease_object("2026-12-01T05:00:00Z", approval_by("user:mei.chen", lease)), lease, "mei.chen",
                   both, true);
  const auto d = decide(self);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.code, 403);
  EXPECT_EQ(d.rules, std::vector<std::string>{"lease.self-approval"});
  EXPECT_NE(d.message.find("user:mei.chen requested CapacityLease/cs-eval"), std::string::npos) << d.message;
  // A lease that does not say who asked cannot be told apart either.
  const json anonymous = lease_object("2026-12-01T05:00:00Z", nullptr, std::nullopt);
  const auto unknown = decide(lease_review(
      "UPDATE", lease_object("2026-12-01T05:00:00Z", approval_by("user:pat", anonymous), std::nullopt), anonymous, "pat",
      kPlatformAdmin, true));
  EXPECT_EQ(unknown.rules, std::vector<std::string>{"lease.self-approval"});

  // Guardrails that allow it.
  policy::PolicySet set = gpubank::testing::examples_plus();
  policy::PolicyObject guardrails = *set.guardrails();
  std::get<policy::PlatformGuardrailsSpec>(guardrails.spec).lease_approval = policy::LeaseApprovalRules{true};
  set.upsert(std::move(guardrails));
  const PolicySnapshot lenient(std::move(set));
  const auto allowed = review(lenient, self, kNow);
  EXPECT_TRUE(allowed.allowed) << allowed.message;
}

// gpubank's controller reports on leases too: a listed controller may write
// status.conditions and status.observedGeneration, and nothing else of a status.
TEST(AdmissionLease, AControllerMayReportConditionsButNotApprove) {
  const json before = lease_object("2026-12-01T05:00:00Z");
  json reported = before;
  reported["status"] = {{"observedGeneration", 1},
                        {"conditions", {{{"type", "Applied"}, {"status", "True"}, {"reason", "Applied"},
                                         {"message", "1 object(s) applied"}, {"lastTransitionTime", "2026-11-30T09:00:00Z"},
                                         {"observedGeneration", 1}}}}};
  // kube-system service accounts are controllers by default (kDefaultControllers).
  const std::vector<std::string> controller{"system:serviceaccounts", "system:serviceaccounts:kube-system"};
  const std::string sa = "system:serviceaccount:kube-system:gpubank-controller";
  EXPECT_TRUE(decide(lease_review("UPDATE", reported, before, sa, controller, /*status=*/true)).allowed);
  // The same controller approving the lease is not reporting.
  json approving = reported;
  approving["status"]["phase"] = "Approved";
  approving["status"]["approval"] = approval_by("user:" + sa, before)["approval"];
  const AdmissionDecision d = decide(lease_review("UPDATE", approving, before, sa, controller, /*status=*/true));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.code, 403);
  // Someone who is not a controller may not report either.
  EXPECT_FALSE(decide(lease_review("UPDATE", reported, before, "mei.chen", kCsAdmin, /*status=*/true)).allowed);
}

}  // namespace
}  // namespace gpubank::api

