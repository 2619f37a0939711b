// Regressions found by fuzz/admission_review_fuzzer.
#include "api/admission.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "document/reader.hpp"
#include "support/paths.hpp"

namespace gpubank::api {
namespace {

PolicySnapshot examples_snapshot() {
  return PolicySnapshot(policy::load_policy_set({testing::examples_dir() + "/policies"}));
}

nlohmann::json guardrails_example() {
  std::ifstream in(testing::examples_dir() + "/policies/00-guardrails.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::vector<doc::Document> docs;
  Diagnostics d;
  doc::read_yaml(text.str(), "00-guardrails.yaml", docs, d);
  EXPECT_TRUE(d.empty());
  return docs.empty() ? nlohmann::json() : doc::to_json(docs[0].root);
}

std::string create_review(const std::string& kind, const std::string& name, const nlohmann::json& object,
                          const std::string& group) {
  return nlohmann::json{
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", "4d3c2b1a-0000-4000-8000-000000000001"},
        {"kind", {{"group", "platform.gpubank.dev"}, {"version", "v1alpha1"}, {"kind", kind}}},
        {"name", name},
        {"operation", "CREATE"},
        {"userInfo", {{"username", "someone"}, {"groups", {group}}}},
        {"object", object}}}}
      .dump();
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

const Timestamp kNow = *parse_rfc3339("2026-12-01T08:00:00Z");

// Found with fuzz/admission_review_fuzzer: warnings were cut after 253 bytes, inside a
// UTF-8 character, and review_response(...).dump() then threw, so the webhook answered
// 500 without the request's uid.
TEST(Admission, ShortensLongWarningsOnACharacterBoundary) {
  const PolicySnapshot snapshot = examples_snapshot();
  nlohmann::json guardrails = guardrails_example();
  // A price for a model no pool has: a warning that quotes the (long, non-ASCII) model.
  guardrails["spec"]["gpuHourPrice"]["xx" + repeat("\xC3\xA9", 150)] = 1.0;
  const AdmissionDecision d = review(
      snapshot, create_review("PlatformGuardrails", "platform", guardrails, "gpubank-platform-admins"), kNow);
  EXPECT_TRUE(d.allowed) << d.message;
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_LE(d.warnings[0].size(), 256u);
  EXPECT_TRUE(d.warnings[0].ends_with("\xC3\xA9..."));
  EXPECT_NO_THROW((void)review_response(d).dump());
}

// Found with fuzz/admission_review_fuzzer: the preview of a wrong-typed value in a
// denial's message was cut inside a UTF-8 character (same failure as above).
TEST(Admission, DenialsQuotingLongNonAsciiValuesAreValidJson) {
  const PolicySnapshot snapshot = examples_snapshot();
  const nlohmann::json quota = {
      {"apiVersion", "platform.gpubank.dev/v1alpha1"},
      {"kind", "GPUQuotaPolicy"},
      {"metadata", {{"name", "search-dev-mig"}}},
      {"spec",
       {{"businessGroup", "search"}, {"resourcePool", "mig-or-shared-development"}, {"guaranteed", "x" + repeat("\xC3\xA9", 30)}}}};
  const AdmissionDecision d =
      review(snapshot, create_review("GPUQuotaPolicy", "search-dev-mig", quota, "search-admins"), kNow);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.code, 422);
  EXPECT_EQ(d.uid, "4d3c2b1a-0000-4000-8000-000000000001");
  EXPECT_NO_THROW((void)review_response(d).dump());
}

// Found by fuzz/admission_review_fuzzer: the parser's message quoted the body's bytes,
// so a body that is not UTF-8 made review_response(...).dump() throw (a 500 instead of
// a 400 with the uid).
TEST(Admission, BodiesThatAreNotUtf8AreBadRequests) {
  const PolicySnapshot snapshot = examples_snapshot();
  const AdmissionDecision d = review(
      snapshot, "{\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{\"uid\":\"u-1\",\"x\":\"\xDF\x83i{\xEE\xDF", kNow);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.code, 400);
  EXPECT_EQ(d.uid, "u-1");
  EXPECT_NO_THROW((void)review_response(d).dump());
}

// Found with fuzz/admission_review_fuzzer: a body nested deeper than the reader allows
// is refused, and the uid was then looked for by a scan that gave up at depth 64, so a
// uid after the deep part was lost and the API server would reject the response.
TEST(Admission, FindsTheUidAfterTooDeepNesting) {
  const PolicySnapshot snapshot = examples_snapshot();
  const std::string body = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"x\":" +
                           std::string(100, '[') + std::string(100, ']') + ",\"request\":{\"uid\":\"u-deep\"}}";
  const AdmissionDecision d = review(snapshot, body, kNow);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.code, 400);
  EXPECT_EQ(d.uid, "u-deep");
}

}  // namespace
}  // namespace gpubank::api
