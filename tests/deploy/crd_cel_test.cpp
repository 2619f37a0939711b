// The CRDs' CEL rules (x-kubernetes-validations), evaluated. No API server is available to
// compile them, so a CEL implementation (@bufbuild/cel under node, see cel_eval.mjs) runs
// them on values typed as the API server types them. Checked: every rule parses, passes
// and fails where it should (a table of cases, each rule passing and failing at least
// once), and no rule refuses an object that gpubank's own validator accepts: every rule
// runs on every policy in examples/policies and examples/invalid, and wherever it says
// false the validator must report the very rule the CEL message names. Where a file of
// examples/invalid is named after a CEL rule's validator rule, the CEL rule must refuse it
// too (they agree both ways).
//
// Needs node and @bufbuild/cel; without them the tests skip and say how to get them:
//   npm install --prefix build/cel @bufbuild/cel@0.6.1
// (or GPUBANK_CEL_NODE_MODULES=<a node_modules directory holding @bufbuild/cel>).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "deploy_fixture.hpp"
#include "document/reader.hpp"
#include "policy/crd.hpp"
#include "policy/policy_set.hpp"
#include "policy/validate.hpp"

namespace gpubank::deploy::testing {
namespace {

// One rule where it sits: kind, the path of the schema node ("spec", "spec.replicaShape"),
// that node, its index there, and the validator rule its message names ("[quota....]").
struct Rule {
  std::string kind;
  std::string location;
  const Json* schema = nullptr;
  std::string rule;
  std::string id;
  [[nodiscard]] std::string where() const { return kind + " " + location + ": " + rule; }
};

const std::vector<Json>& crds() {
  static const std::vector<Json> all = [] {
    std::vector<Json> out;
    for (const auto& c : policy::custom_resource_definitions()) out.emplace_back(c);
    return out;
  }();
  return all;
}

void collect(const Json& s, const std::string& kind, const std::string& path, std::vector<Rule>& out) {
  if (!s.is_object()) return;
  if (s.contains("x-kubernetes-validations")) {
    for (const auto& v : s["x-kubernetes-validations"]) {
      const std::string message = v["message"];
      const auto open = message.rfind('[');
      const std::string id = open == std::string::npos ? "" : message.substr(open + 1, message.size() - open - 2);
      out.push_back({kind, path, &s, v["rule"], id});
    }
  }
  if (s.contains("properties")) {
    for (const auto& [k, v] : s["properties"].items()) collect(v, kind, path.empty() ? k : path + "." + k, out);
  }
  if (s.contains("items")) collect(s["items"], kind, path + "[]", out);
  if (s.contains("additionalProperties")) collect(s["additionalProperties"], kind, path + "{}", out);
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> all = [] {
    std::vector<Rule> out;
    for (const Json& crd : crds()) {
      collect(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"], crd["spec"]["names"]["kind"], "", out);
    }
    return out;
  }();
  return all;
}

// Static facts, no evaluator needed: each rule names the validator rule it mirrors, has a
// message, and sits where it runs once per object. A rule under a list or map would run
// once per item, and the API server multiplies its cost by the largest number of items it
// can imagine (unbounded lists: what fits in 3 MiB), refusing CRDs over its budget.
TEST(DeployCel, RulesNameTheirValidatorRuleAndRunOncePerObject) {
  ASSERT_GE(rules().size(), 10u);
  const std::set<std::string> known_ids = [] {
    std::set<std::string> ids;
    for (const auto& file : std::filesystem::directory_iterator(gpubank::testing::examples_dir() + "/invalid")) {
      ids.insert(file.path().stem().string());
    }
    return ids;
  }();
  for (const Rule& r : rules()) {
    EXPECT_FALSE(r.id.empty()) << r.where();
    // Every mirrored validator rule has its example of an invalid policy.
    EXPECT_TRUE(known_ids.contains(r.id)) << r.where() << " names " << r.id;
    EXPECT_EQ(r.location.find('['), std::string::npos) << r.where();
    EXPECT_EQ(r.location.find('{'), std::string::npos) << r.where();
    EXPECT_NE(r.rule.find("self"), std::string::npos) << r.where();
    EXPECT_EQ(r.rule.find("oldSelf"), std::string::npos) << r.where() << ": no transition rules (nothing is immutable)";
  }
}

// ---- the evaluator -------------------------------------------------------------------

struct Outcome {
  std::optional<bool> value;
  std::string error;
};

class Cel {
 public:
  // The evaluator, or why there is none.
  static std::optional<Cel> find(std::string& why) {
    const auto node = gpubank::testing::find_on_path("node");
    if (!node) {
      why = "node is not on PATH";
      return std::nullopt;
    }
    const std::string modules =
        gpubank::testing::env_or("GPUBANK_CEL_NODE_MODULES", (gpubank::testing::source_dir() + "/build/cel/node_modules").c_str());
    if (!std::filesystem::exists(modules + "/@bufbuild/cel/package.json")) {
      why = "@bufbuild/cel is not in " + modules;
      return std::nullopt;
    }
    return Cel(node->string(), modules);
  }

  // Evaluates each {rule, schema, self}, all in one node process.
  std::vector<Outcome> run(const Json& cases) const {
    const std::string input = dir_->write("cases.json", cases.dump());
    const auto r = gpubank::testing::run_process(
        {node_, gpubank::testing::source_dir() + "/tests/deploy/cel_eval.mjs", modules_, input});
    EXPECT_EQ(r.status, 0) << r.err;
    std::vector<Outcome> out;
    const auto results = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_TRUE(results.is_array() && results.size() == cases.size()) << r.out.substr(0, 500) << r.err;
    if (!results.is_array()) return out;
    for (const auto& x : results) {
      Outcome o;
      if (x["value"].is_boolean()) o.value = x["value"].get<bool>();
      if (x["error"].is_string()) o.error = x["error"];
      out.push_back(std::move(o));
    }
    return out;
  }

 private:
  Cel(std::string node, std::string modules)
      : node_(std::move(node)), modules_(std::move(modules)), dir_(std::make_shared<ScratchDir>()) {}
  std::string node_;
  std::string modules_;
  std::shared_ptr<ScratchDir> dir_;
};

#define REQUIRE_CEL(cel)                                                                                       \
  std::string why_no_cel;                                                                                      \
  const auto cel = Cel::find(why_no_cel);                                                                      \
  if (!cel) {                                                                                                  \
    GTEST_SKIP() << "no CEL evaluator (" << why_no_cel                                                         \
                 << "): `npm install --prefix build/cel @bufbuild/cel@0.6.1` enables these tests; the rules " \
                    "are not evaluated";                                                                       \
  }

Json yaml(const std::string& text) {
  const auto docs = read_stream(text, "case.yaml");
  EXPECT_EQ(docs.size(), 1u) << text;
  return docs.empty() ? Json() : docs[0].json;
}

// ---- each rule on hand-written cases ---------------------------------------------------

struct Case {
  std::string kind;
  std::string location;
  std::string self;               // YAML
  std::set<std::string> refused;  // validator rule ids whose CEL rules must say false; the others true
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all{
      // GPUQuotaPolicy: lendingLimit <= guaranteed; guaranteed <= maxCapacity <= guaranteed + borrowLimit.
      {"GPUQuotaPolicy", "spec", "{businessGroup: a, resourcePool: p, guaranteed: 8}", {}},
      {"GPUQuotaPolicy", "spec", "{businessGroup: a, resourcePool: p, guaranteed: 8, lendingLimit: 8, maxCapacity: 8}", {}},
      {"GPUQuotaPolicy", "spec", "{businessGroup: a, resourcePool: p, guaranteed: 8, lendingLimit: 9}",
       {"quota.lending-limit-range"}},
      {"GPUQuotaPolicy", "spec", "{businessGroup: a, resourcePool: p, guaranteed: 8, borrowLimit: 4, maxCapacity: 12}", {}},
      {"GPUQuotaPolicy", "spec", "{businessGroup: a, resourcePool: p, guaranteed: 8, borrowLimit: 4, maxCapacity: 13}",
       {"quota.max-capacity-range"}},
      {"GPUQuotaPolicy", "spec", "{businessGroup: a, resourcePool: p, guaranteed: 8, borrowLimit: 4, maxCapacity: 7}",
       {"quota.max-capacity-range"}},
      {"GPUQuotaPolicy", "spec", "{businessGroup: a, resourcePool: p, guaranteed: 8, maxCapacity: 9}",
       {"quota.max-capacity-range"}},
      {"GPUQuotaPolicy", "spec", "{businessGroup: a, resourcePool: p, guaranteed: 0, lendingLimit: 0, maxCapacity: 0}", {}},
      // InferenceScalingPolicy: minReplicas <= maxReplicas; scale-down depth below scale-up depth.
      {"InferenceScalingPolicy", "spec", "{minReplicas: 1, maxReplicas: 4, scaleUp: {queueDepthPerReplica: 8}}", {}},
      {"InferenceScalingPolicy", "spec", "{minReplicas: 4, maxReplicas: 4, scaleUp: {ttftP95: 2s}, scaleDown: {}}", {}},
      {"InferenceScalingPolicy", "spec", "{minReplicas: 5, maxReplicas: 4, scaleUp: {queueDepthPerReplica: 8}}",
       {"inference.replica-range"}},
      {"InferenceScalingPolicy", "spec",
       "{minReplicas: 1, maxReplicas: 4, scaleUp: {queueDepthPerReplica: 8}, scaleDown: {queueDepthPerReplica: 7}}", {}},
      {"InferenceScalingPolicy", "spec",
       "{minReplicas: 1, maxReplicas: 4, scaleUp: {queueDepthPerReplica: 8}, scaleDown: {queueDepthPerReplica: 8}}",
       {"inference.scale-down-above-scale-up"}},
      {"InferenceScalingPolicy", "spec",
       "{minReplicas: 1, maxReplicas: 4, scaleUp: {ttftP95: 2s}, scaleDown: {queueDepthPerReplica: 9}}", {}},
      {"InferenceScalingPolicy", "spec.replicaShape", "{tensorParallelSize: 2, gpuPerReplica: 4}", {}},
      {"InferenceScalingPolicy", "spec.replicaShape", "{tensorParallelSize: 1, gpuPerReplica: 3, nodesPerReplica: 3}", {}},
      {"InferenceScalingPolicy", "spec.replicaShape", "{tensorParallelSize: 4, gpuPerReplica: 2}",
       {"inference.shape-tp-multiple"}},
      {"InferenceScalingPolicy", "spec.scaleUp", "{ttftP95: 1500ms}", {}},
      {"InferenceScalingPolicy", "spec.scaleUp", "{kvCacheHighWatermark: 0}", {}},  // present, if odd
      {"InferenceScalingPolicy", "spec.scaleUp", "{stabilizationWindow: 0s}", {"inference.no-scale-up-signal"}},
      {"InferenceScalingPolicy", "spec.scaleUp", "{}", {"inference.no-scale-up-signal"}},
      // CapacityLease: an end, after the start (as instants: offsets differ below), fields by type.
      {"CapacityLease", "spec",
       "{businessGroup: a, resourcePool: p, type: TemporaryQuota, extraGuaranteed: 4, reason: r, "
       "start: '2026-12-02T08:00:00Z', end: '2026-12-02T20:00:00Z'}",
       {}},
      {"CapacityLease", "spec",
       "{businessGroup: a, resourcePool: p, type: TemporaryQuota, extraGuaranteed: 4, reason: r, "
       "start: '2026-12-02T08:00:00+08:00', end: '2026-12-02T01:00:00Z'}",  // 00:00Z .. 01:00Z; as text, end < start
       {}},
      {"CapacityLease", "spec",
       "{businessGroup: a, resourcePool: p, type: TemporaryQuota, extraGuaranteed: 4, reason: r, "
       "start: '2026-12-02T01:00:00Z', end: '2026-12-02T08:00:00+08:00'}",  // 01:00Z .. 00:00Z; as text, end > start
       {"lease.end-before-start"}},
      {"CapacityLease", "spec",
       "{businessGroup: a, resourcePool: p, type: TemporaryQuota, extraGuaranteed: 4, reason: r, "
       "start: '2026-12-02T08:00:00Z', end: '2026-12-02T08:00:00Z'}",
       {"lease.end-before-start"}},
      {"CapacityLease", "spec",
       "{businessGroup: a, resourcePool: p, type: TemporaryQuota, extraGuaranteed: 4, reason: r, "
       "end: '2026-12-02T20:00:00.5Z'}",
       {}},
      {"CapacityLease", "spec",
       "{businessGroup: a, resourcePool: p, type: TemporaryQuota, extraGuaranteed: 4, reason: r, "
       "start: '2026-12-02T08:00:00Z'}",
       {"lease.end-required"}},
      {"CapacityLease", "spec",
       "{businessGroup: a, resourcePool: p, type: TemporaryQuota, reason: r, end: '2026-12-02T20:00:00Z'}",
       {"lease.type-fields"}},
      {"CapacityLease", "spec",
       "{businessGroup: a, resourcePool: p, type: TemporaryQuota, extraGuaranteed: 4, selector: {matchLabels: {a: b}}, "
       "reason: r, end: '2026-12-02T20:00:00Z'}",
       {"lease.type-fields"}},
      {"CapacityLease", "spec",
       "{businessGroup: a, resourcePool: p, type: Protection, selector: {matchLabels: {a: b}}, reason: r, "
       "end: '2026-12-02T20:00:00Z'}",
       {}},
      {"CapacityLease", "spec",
       "{businessGroup: a, resourcePool: p, type: Protection, selector: {matchLabels: {a: b}}, extraGuaranteed: 4, "
       "reason: r, end: '2026-12-02T20:00:00Z'}",
       {"lease.type-fields"}},
      {"CapacityLease", "spec", "{businessGroup: a, resourcePool: p, type: Protection, reason: r}",
       {"lease.type-fields", "lease.end-required"}},
      // LowUtilizationPolicy: at least one threshold.
      {"LowUtilizationPolicy", "spec.thresholds", "{averageGpuUtilization: 10}", {}},
      {"LowUtilizationPolicy", "spec.thresholds", "{averagePowerFraction: 0, averageMemoryUtilization: 12.5}", {}},
      {"LowUtilizationPolicy", "spec.thresholds", "{}", {"lowutil.no-threshold"}},
  };
  return all;
}

TEST(DeployCel, EachRuleParsesPassesAndFailsAsWritten) {
  REQUIRE_CEL(cel);
  Json input = Json::array();
  struct Ran {
    const Case* c;
    const Rule* r;
  };
  std::vector<Ran> ran;
  for (const Case& c : cases()) {
    const Json self = yaml(c.self);
    bool any = false;
    for (const Rule& r : rules()) {
      if (r.kind != c.kind || r.location != c.location) continue;
      input.push_back({{"rule", r.rule}, {"schema", *r.schema}, {"self", self}});
      ran.push_back({&c, &r});
      any = true;
    }
    EXPECT_TRUE(any) << "no rule at " << c.kind << " " << c.location;
    for (const auto& id : c.refused) {
      EXPECT_TRUE(std::any_of(rules().begin(), rules().end(), [&](const Rule& r) { return r.id == id; })) << id;
    }
  }
  const auto outcomes = cel->run(input);
  ASSERT_EQ(outcomes.size(), ran.size());
  std::map<const Rule*, std::pair<int, int>> passed_failed;
  std::map<const Case*, std::set<std::string>> refused;
  for (std::size_t i = 0; i < ran.size(); ++i) {
    const auto& o = outcomes[i];
    // An evaluation error refuses the object too, but a rule here must answer, not fail.
    EXPECT_TRUE(o.value.has_value()) << ran[i].r->where() << " on " << ran[i].c->self << ": " << o.error;
    if (!o.value) continue;
    if (*o.value) {
      ++passed_failed[ran[i].r].first;
    } else {
      ++passed_failed[ran[i].r].second;
      refused[ran[i].c].insert(ran[i].r->id);
    }
  }
  for (const Case& c : cases()) EXPECT_EQ(refused[&c], c.refused) << c.kind << " " << c.location << " " << c.self;
  for (const Rule& r : rules()) {
    EXPECT_GT(passed_failed[&r].first, 0) << "never passed: " << r.where();
    EXPECT_GT(passed_failed[&r].second, 0) << "never failed: " << r.where();
  }
}

// ---- against gpubank's validator, on every example -------------------------------------

// The value at a dotted path of plain field names, or nullptr.
const Json* at(const Json& object, const std::string& path) {
  const Json* v = &object;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!v->is_object() || !v->contains(key)) return nullptr;
    v = &(*v)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return v;
}

TEST(DeployCel, RulesRefuseOnlyWhatTheValidatorRefusesForTheSameReason) {
  REQUIRE_CEL(cel);
  const std::string examples = gpubank::testing::examples_dir();
  // Sets as `gpubank validate` would load them: the examples alone, and each invalid
  // example together with them (as its "Try:" line says).
  std::vector<std::vector<std::string>> sets{{examples + "/policies"}};
  std::vector<std::string> invalid_files;
  for (const auto& f : std::filesystem::directory_iterator(examples + "/invalid")) invalid_files.push_back(f.path().string());
  std::sort(invalid_files.begin(), invalid_files.end());
  for (const auto& f : invalid_files) sets.push_back({examples + "/policies", f});

  struct Subject {
    std::string file;
    Json object;
    std::set<std::string> errors;  // the validator's error rules on this object
    bool decoded = true;           // false: gpubank could not even decode it (schema.*)
  };
  std::vector<Subject> subjects;
  for (const auto& paths : sets) {
    std::map<std::string, std::set<std::string>> errors;  // "Kind/name" -> rules
    const policy::PolicySet set = policy::load_policy_set(paths);
    for (const auto& d : policy::check_all(set)) {
      if (d.severity == Severity::Error) errors[d.kind + "/" + d.name].insert(d.rule);
    }
    // The objects of the last path only (examples/policies' own once, with the first set).
    std::vector<doc::Document> docs;
    Diagnostics ignored;  // unreadable or malformed files are the validator's findings too
    doc::load_paths({paths.back()}, docs, ignored);
    for (const auto& d : docs) {
      const Json o = doc::to_ordered_json(d.root);
      if (!o.is_object() || o.value("apiVersion", "") != "platform.gpubank.dev/v1alpha1") continue;
      Subject s{d.file, o, {}, true};
      const std::string key =
          o.value("kind", "") + "/" + (o.contains("metadata") && o["metadata"].is_object() ? o["metadata"].value("name", "") : "");
      if (auto it = errors.find(key); it != errors.end()) s.errors = it->second;
      for (const auto& e : s.errors) s.decoded = s.decoded && !e.starts_with("schema.");
      subjects.push_back(std::move(s));
    }
  }
  ASSERT_GT(subjects.size(), 60u);

  Json input = Json::array();
  std::vector<std::pair<const Subject*, const Rule*>> ran;
  for (const Subject& s : subjects) {
    for (const Rule& r : rules()) {
      if (s.object.value("kind", "") != r.kind) continue;
      const Json* self = at(s.object, r.location);
      if (self == nullptr) continue;  // the API server runs no rule on an absent value
      input.push_back({{"rule", r.rule}, {"schema", *r.schema}, {"self", *self}});
      ran.emplace_back(&s, &r);
    }
  }
  const auto outcomes = cel->run(input);
  ASSERT_EQ(outcomes.size(), ran.size());
  std::map<std::string, std::set<std::string>> refused_in_file;  // file stem -> CEL ids that said false
  std::size_t refusals = 0;
  for (std::size_t i = 0; i < ran.size(); ++i) {
    const Subject& s = *ran[i].first;
    const Rule& r = *ran[i].second;
    const bool refused = !outcomes[i].value.value_or(false);
    if (!refused) continue;
    ++refusals;
    refused_in_file[std::filesystem::path(s.file).stem().string()].insert(r.id);
    if (s.file.find("/policies/") != std::string::npos) {
      ADD_FAILURE() << r.where() << " refuses " << ref(s.object) << " of the shipped examples (" << s.file << ")"
                    << outcomes[i].error;
      continue;
    }
    if (!s.decoded) continue;  // gpubank refused it before any of its rules could run
    EXPECT_TRUE(s.errors.contains(r.id))
        << r.where() << " refuses " << ref(s.object) << " in " << s.file << outcomes[i].error
        << ", which gpubank's validator "
        << (s.errors.empty() ? std::string("accepts") : "refuses only for other reasons");
  }
  EXPECT_GT(refusals, 0u);
  // Both ways: each CEL rule refuses the example written for its validator rule.
  for (const Rule& r : rules()) {
    EXPECT_TRUE(refused_in_file[r.id].contains(r.id)) << r.where() << " does not refuse examples/invalid/" << r.id << ".yaml";
  }
}

}  // namespace
}  // namespace gpubank::deploy::testing
