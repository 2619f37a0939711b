// The generated CRDs (gpubank crds, deploy/crds/) as installation needs them: every list
// says how server-side apply merges it, map lists are keyed by required fields and refuse
// only what gpubank's validator refuses, status is typed for the controller's
// metav1.Conditions (and keeps a lease's approval), the Accepted and Applied columns, and
// the example policies still pass both the schemas and `gpubank validate`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "controller/conditions.hpp"
#include "deploy_fixture.hpp"
#include "policy/crd.hpp"
#include "policy/policy_set.hpp"
#include "policy/validate.hpp"

namespace gpubank::deploy::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const Json& root_schema(const Json& crd) { return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]; }

// Every array node of a schema, with its path (".spec.pools", "[]" for items, "{}" for
// additionalProperties).
void arrays(const Json& s, const std::string& path, std::vector<std::pair<std::string, const Json*>>& out) {
  if (!s.is_object()) return;
  if (s.value("type", "") == "array") out.emplace_back(path, &s);
  if (s.contains("properties")) {
    for (const auto& [k, v] : s["properties"].items()) arrays(v, path + "." + k, out);
  }
  if (s.contains("items")) arrays(s["items"], path + "[]", out);
  if (s.contains("additionalProperties")) arrays(s["additionalProperties"], path + "{}", out);
}

TEST(DeployCrd, EveryListSaysHowServerSideApplyMergesIt) {
  std::set<std::string> maps;
  std::size_t lists = 0;
  for (const Json& crd : policy::custom_resource_definitions()) {
    const std::string kind = crd["spec"]["names"]["kind"];
    std::vector<std::pair<std::string, const Json*>> found;
    arrays(root_schema(crd), "", found);
    for (const auto& [path, s] : found) {
      ++lists;
      const std::string where = kind + path;
      ASSERT_TRUE(s->contains("x-kubernetes-list-type")) << where;
      const std::string type = (*s)["x-kubernetes-list-type"];
      EXPECT_TRUE(type == "atomic" || type == "set" || type == "map") << where << ": " << type;
      if (type != "map") {
        EXPECT_FALSE(s->contains("x-kubernetes-list-map-keys")) << where;
        continue;
      }
      maps.insert(where);
      const Json& items = (*s)["items"];
      ASSERT_TRUE((*s)["x-kubernetes-list-map-keys"].is_array() && !(*s)["x-kubernetes-list-map-keys"].empty()) << where;
      for (const auto& key : (*s)["x-kubernetes-list-map-keys"]) {
        // The API server refuses a key that is neither required nor defaulted.
        const Json required = items.value("required", Json::array());
        EXPECT_TRUE(std::find(required.begin(), required.end(), key) != required.end()) << where << " key " << key;
        const std::string key_type = items["properties"][key.get<std::string>()].value("type", "");
        EXPECT_TRUE(key_type == "string" || key_type == "integer") << where << " key " << key;
      }
    }
  }
  EXPECT_GT(lists, 20u);
  // Maps exactly where the validator already refuses duplicate keys
  // (guardrails.duplicate-name, tidal.duplicate-window), and the conditions.
  EXPECT_EQ(maps, (std::set<std::string>{
                      "PlatformGuardrails.spec.pools", "PlatformGuardrails.spec.groups",
                      "PlatformGuardrails.spec.priorities", "TidalPolicy.spec.windows",
                      "PlatformGuardrails.status.conditions", "GPUQuotaPolicy.status.conditions",
                      "InferenceScalingPolicy.status.conditions", "TidalPolicy.status.conditions",
                      "CapacityLease.status.conditions", "LowUtilizationPolicy.status.conditions"}));
}

// A map list refuses two items with one key; gpubank's validator refuses the same objects
// for the same reason, so the API server refuses nothing gpubank would accept.
TEST(DeployCrd, MapListsRefuseWhatTheValidatorRefuses) {
  const std::string examples = gpubank::testing::examples_dir();
  struct Case {
    std::string file, path, rule;
  };
  for (const Case& c : {Case{"guardrails.duplicate-name.yaml", "spec.pools[1]", "guardrails.duplicate-name"},
                        Case{"tidal.duplicate-window.yaml", "spec.windows[1]", "tidal.duplicate-window"}}) {
    const std::string file = examples + "/invalid/" + c.file;
    const auto docs = read_docs({file});
    ASSERT_EQ(docs.size(), 1u) << c.file;
    const schema::Result r = schemas().validate(docs[0].json);
    bool refused = false;
    for (const auto& v : r.violations) refused = refused || (v.path == c.path && v.rule == "x-kubernetes-list-type");
    EXPECT_TRUE(refused) << c.file << ":\n" << violations(r);
    const policy::PolicySet set = policy::load_policy_set({examples + "/policies", file});
    bool reported = false;
    for (const auto& d : policy::check_all(set)) {
      reported = reported || (d.rule == c.rule && d.name == docs[0].json["metadata"].value("name", ""));
    }
    EXPECT_TRUE(reported) << c.file;
  }
}

// One object of each kind from the examples.
std::map<std::string, Json> example_per_kind() {
  std::map<std::string, Json> out;
  for (const auto& d : read_docs({gpubank::testing::examples_dir() + "/policies"})) {
    out.emplace(d.json.value("kind", ""), d.json);
  }
  return out;
}

Json with_status(Json object, const std::vector<controller::Condition>& conditions) {
  const auto plain = nlohmann::json::parse(object.dump());
  const auto patch = controller::status_update(plain, conditions, 3, "2026-12-01T09:00:00Z");
  EXPECT_TRUE(patch.has_value());
  Json status = object.contains("status") ? object["status"] : Json::object();
  const Json written = Json::parse(patch->dump());
  for (const auto& [k, v] : written.items()) status[k] = v;
  object["status"] = status;
  return object;
}

// What the controller writes (src/controller/conditions.hpp: the status merge patch of
// status_update, written through the status subresource) is valid for every kind, with
// each reason it uses.
TEST(DeployCrd, StatusTakesTheControllersConditions) {
  using controller::Condition;
  const std::vector<std::vector<Condition>> outcomes{
      {{"Accepted", true, "Valid", "valid"}, {"Rendered", true, "Rendered", "7 object(s)"},
       {"Applied", true, "Applied", "7 object(s) applied"}},
      {{"Accepted", true, "Valid", "valid"}, {"Rendered", true, "Rendered", "0 object(s)"},
       {"Applied", true, "NothingToApply", "nothing to apply"}},
      {{"Accepted", false, "Invalid", "spec.guaranteed: ... [quota.sum-exceeds-pool]"},
       {"Rendered", false, "PolicySetInvalid", "2 error(s) in the policy set; the first: ..."},
       {"Applied", false, "NotRendered", "not rendered"}},
      {{"Accepted", true, "Valid", "valid"}, {"Rendered", true, "Rendered", "1 object(s)"},
       {"Applied", false, "ApplyFailed", std::string(40000, 'x') + " \xe2\x82\xac"}},  // capped at 32 KiB
  };
  const auto examples = example_per_kind();
  ASSERT_EQ(examples.size(), 6u);
  for (const auto& [kind, object] : examples) {
    for (const auto& conditions : outcomes) {
      const Json o = with_status(object, conditions);
      const schema::Result r = schemas().validate(o);
      EXPECT_TRUE(r.ok()) << kind << " " << o["status"].dump().substr(0, 300) << ":\n" << violations(r);
    }
  }
}

TEST(DeployCrd, StatusRefusesWhatIsNotACondition) {
  const auto examples = example_per_kind();
  const Json quota = with_status(examples.at("GPUQuotaPolicy"), {{"Applied", true, "Applied", "ok"}});
  auto found = [](const Json& o) {
    std::vector<std::string> out;
    for (const auto& v : schemas().validate(o).violations) out.push_back(v.path + " [" + v.rule + "]");
    return out;
  };
  Json maybe = quota;
  maybe["status"]["conditions"][0]["status"] = "Maybe";
  EXPECT_THAT(found(maybe), ElementsAre("status.conditions[0].status [enum]"));
  Json no_reason = quota;
  no_reason["status"]["conditions"][0].erase("reason");
  EXPECT_THAT(found(no_reason), ElementsAre("status.conditions[0].reason [required]"));
  Json bad_reason = quota;
  bad_reason["status"]["conditions"][0]["reason"] = "apply failed";
  EXPECT_THAT(found(bad_reason), ElementsAre("status.conditions[0].reason [pattern]"));
  Json twice = quota;
  twice["status"]["conditions"].push_back(twice["status"]["conditions"][0]);
  EXPECT_THAT(found(twice), ElementsAre("status.conditions[1] [x-kubernetes-list-type]"));
  Json bad_time = quota;
  bad_time["status"]["conditions"][0]["lastTransitionTime"] = "yesterday";
  EXPECT_THAT(found(bad_time), ElementsAre("status.conditions[0].lastTransitionTime [format]"));
  Json negative = quota;
  negative["status"]["observedGeneration"] = -1;
  EXPECT_THAT(found(negative), ElementsAre("status.observedGeneration [minimum]"));
  // Only a lease's status keeps fields gpubank does not declare.
  Json extra = quota;
  extra["status"]["phase"] = "Active";
  EXPECT_THAT(found(extra), ElementsAre("status.phase [unknown-field]"));
}

// A lease's approval (policy/lease_approval.hpp) is typed as gpubank reads it: what
// gpubank takes as a well-formed approval passes, what it reports as malformed does not.
TEST(DeployCrd, LeaseStatusKeepsTheApprovalAndTheConditions) {
  const std::string invalid = gpubank::testing::examples_dir() + "/invalid/lease.approval-mismatch.yaml";
  const auto docs = read_docs({invalid});
  ASSERT_EQ(docs.size(), 1u);
  Json lease = with_status(docs[0].json, {{"Accepted", false, "Invalid", "approval mismatch"}});
  ASSERT_TRUE(lease["status"].contains("approval"));
  lease["status"]["expiresAt"] = "informational, kept";  // x-kubernetes-preserve-unknown-fields
  const schema::Result r = schemas().validate(lease);
  EXPECT_TRUE(r.ok()) << violations(r);
  Json unsigned_approval = lease;
  unsigned_approval["status"]["approval"].erase("specHash");
  std::vector<std::string> paths;
  for (const auto& v : schemas().validate(unsigned_approval).violations) paths.push_back(v.path + " [" + v.rule + "]");
  EXPECT_THAT(paths, ElementsAre("status.approval.specHash [required]"));
  Json bad_time = lease;
  bad_time["status"]["approval"]["approvedAt"] = "noon";
  paths.clear();
  for (const auto& v : schemas().validate(bad_time).violations) paths.push_back(v.path + " [" + v.rule + "]");
  EXPECT_THAT(paths, ElementsAre("status.approval.approvedAt [format]"));
}

TEST(DeployCrd, EveryKindShowsAcceptedAndAppliedAndKeepsItsColumns) {
  for (const Json& crd : policy::custom_resource_definitions()) {
    const std::string kind = crd["spec"]["names"]["kind"];
    std::vector<std::string> columns;
    for (const auto& c : crd["spec"]["versions"][0]["additionalPrinterColumns"]) {
      columns.push_back(c["name"].get<std::string>() + "=" + c["jsonPath"].get<std::string>());
    }
    ASSERT_GE(columns.size(), 3u) << kind;
    EXPECT_EQ(columns[columns.size() - 3], R"(Accepted=.status.conditions[?(@.type=="Accepted")].status)") << kind;
    EXPECT_EQ(columns[columns.size() - 2], R"(Applied=.status.conditions[?(@.type=="Applied")].status)") << kind;
    EXPECT_EQ(columns.back(), "Age=.metadata.creationTimestamp") << kind;
    if (kind == "GPUQuotaPolicy") {
      EXPECT_THAT(columns, ::testing::IsSupersetOf({"Group=.spec.businessGroup", "Pool=.spec.resourcePool",
                                                    "Guaranteed=.spec.guaranteed", "Borrow=.spec.borrowLimit"}));
    }
    if (kind == "CapacityLease") {
      EXPECT_THAT(columns, ::testing::Contains("Phase=.status.phase"));
    }
  }
}

// The shipped examples pass the CRDs' schemas and gpubank's own validator (the binary,
// as a user runs it).
TEST(DeployCrd, TheExamplesValidateAgainstTheCrdsAndWithGpubankValidate) {
  std::size_t checked = 0;
  for (const auto& d : read_docs({gpubank::testing::examples_dir() + "/policies"})) {
    const schema::Result r = schemas().validate(d.json);
    EXPECT_TRUE(r.ok()) << d.file << " " << ref(d.json) << ":\n" << violations(r);
    ++checked;
  }
  EXPECT_GT(checked, 15u);
  const auto run = gpubank::testing::run_process(
      {gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "validate", gpubank::testing::examples_dir() + "/policies"});
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  const std::string n = std::to_string(checked);
  EXPECT_THAT(run.out, HasSubstr(n + " objects: " + n + " valid, 0 invalid, 0 skipped; 0 errors")) << run.out;
}

}  // namespace
}  // namespace gpubank::deploy::testing
