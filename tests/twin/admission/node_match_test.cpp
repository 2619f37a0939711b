// node_match: taints, tolerations and required node affinity against a flavor, as Kueue's
// checkFlavorForPodSets decides (cases after flavorassigner_test.go and k8s.io/api's
// toleration tests).
#include "twin/admission/node_match.hpp"

#include <gtest/gtest.h>

namespace gpubank::twin {
namespace {

using Op = NodeSelectorOperator;

NodeSelectorRequirement req(std::string key, Op op, std::vector<std::string> values = {}) {
  NodeSelectorRequirement r{std::move(key), op, std::move(values), 0, {}};
  if ((op == Op::Gt || op == Op::Lt) && !r.values.empty()) r.bound = parse_int_base10(r.values[0]).value_or(0);
  return r;
}

PodSetSpec pod_set(std::vector<NodeSelectorTerm> terms, std::map<std::string, std::string> selector = {}) {
  PodSetSpec ps;
  ps.name = "main";
  ps.node_selector = std::move(selector);
  ps.required_node_affinity = std::move(terms);
  return ps;
}

const std::map<std::string, std::string> kOne{{"type", "one"}};
const std::map<std::string, std::string> kTwo{{"type", "two"}};

TEST(NodeAffinity, NodeSelectorAndRequirementsOnOtherKeysAreIgnored) {
  // "multiple flavors, fits a node selector": ignored1 and ignored2 are no flavor's keys.
  const auto ps = pod_set({{{req("ignored2", Op::In, {"bar"})}}}, {{"type", "two"}, {"ignored1", "foo"}});
  EXPECT_FALSE(match_node_affinity(ps, kOne).matches);
  EXPECT_TRUE(match_node_affinity(ps, kTwo).matches);
}

TEST(NodeAffinity, InSelectsTheFlavorWithTheValue) {
  // "multiple flavors, fits with node affinity" and "doesn't fit node affinity".
  const auto two = pod_set({{{req("type", Op::In, {"two"})}}});
  EXPECT_FALSE(match_node_affinity(two, kOne).matches);
  EXPECT_TRUE(match_node_affinity(two, kTwo).matches);
  const auto three = pod_set({{{req("type", Op::In, {"three"})}}});
  EXPECT_FALSE(match_node_affinity(three, kOne).matches);
  EXPECT_FALSE(match_node_affinity(three, kTwo).matches);
  EXPECT_EQ(match_node_affinity(three, kTwo).error, "");
}

TEST(NodeAffinity, ATermLeftWithoutRequirementsMakesEveryFlavorMatch) {
  // "node affinity fits any flavor": the first term only names a key no flavor has.
  const auto ps = pod_set({{{req("ignored2", Op::In, {"bar"})}}, {{req("type", Op::In, {"two"})}}});
  EXPECT_TRUE(match_node_affinity(ps, kOne).matches);
  // The same with a term that had only matchFields (dropped by the bridge): no
  // requirements at all.
  const auto fields_only = pod_set({{{req("type", Op::In, {"two"})}}, NodeSelectorTerm{}});
  EXPECT_TRUE(match_node_affinity(fields_only, kOne).matches);
}

TEST(NodeAffinity, AFlavorWithoutLabelsMatchesAnySelector) {
  // "labelless flavor in group with labeled flavor, workload uses labeled selector".
  const auto ps = pod_set({{{req("type", Op::In, {"two"})}}}, {{"type", "two"}});
  EXPECT_TRUE(match_node_affinity(ps, {}).matches);
}

TEST(NodeAffinity, OperatorsOnTheFlavorsLabels) {
  const std::map<std::string, std::string> labels{{"memory-gb", "80"}, {"product", "H100"}};
  EXPECT_TRUE(match_node_affinity(pod_set({{{req("product", Op::NotIn, {"A100"})}}}), labels).matches);
  EXPECT_FALSE(match_node_affinity(pod_set({{{req("product", Op::NotIn, {"H100"})}}}), labels).matches);
  EXPECT_TRUE(match_node_affinity(pod_set({{{req("product", Op::Exists)}}}), labels).matches);
  // The key is the flavor's, so DoesNotExist never holds.
  EXPECT_FALSE(match_node_affinity(pod_set({{{req("product", Op::DoesNotExist)}}}), labels).matches);
  EXPECT_TRUE(match_node_affinity(pod_set({{{req("memory-gb", Op::Gt, {"45"})}}}), labels).matches);
  EXPECT_FALSE(match_node_affinity(pod_set({{{req("memory-gb", Op::Gt, {"80"})}}}), labels).matches);
  EXPECT_TRUE(match_node_affinity(pod_set({{{req("memory-gb", Op::Lt, {"81"})}}}), labels).matches);
  // A label value that is not an integer never satisfies Gt or Lt.
  EXPECT_FALSE(match_node_affinity(pod_set({{{req("product", Op::Gt, {"0"})}}}), labels).matches);
  // Requirements of a term are ANDed, terms ORed.
  EXPECT_FALSE(match_node_affinity(pod_set({{{req("product", Op::In, {"H100"}), req("memory-gb", Op::Lt, {"50"})}}}),
                                   labels)
                   .matches);
  EXPECT_TRUE(match_node_affinity(pod_set({{{req("product", Op::In, {"A100"})}}, {{req("memory-gb", Op::Gt, {"50"})}}}),
                                  labels)
                  .matches);
}

TEST(NodeAffinity, ParseErrorsAreReportedOnlyWhenNoTermMatches) {
  auto broken = req("type", Op::In);
  broken.errors = {".values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"};
  // Another term matches: no error.
  EXPECT_TRUE(match_node_affinity(pod_set({{{broken}}, {{req("type", Op::In, {"one"})}}}), kOne).matches);
  // None does: the error, under indices that count only the kept requirements (the
  // first requirement, on another key, is dropped).
  const auto ps = pod_set({{{req("zone", Op::In, {"a"}), broken}}, {{req("type", Op::In, {"two"})}}});
  const AffinityMatch m = match_node_affinity(ps, kOne);
  EXPECT_FALSE(m.matches);
  EXPECT_EQ(m.error,
            "nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: null: for 'in', 'notin' operators, values "
            "set can't be empty");
}

TEST(NodeAffinity, SeveralErrorsAreAggregatedOnceEach) {
  auto a = req("type", Op::In);
  a.errors = {".operator: Unsupported value: \"in\": supported values: \"In\""};
  auto b = req("type", Op::In);
  b.errors = {".values: x", ".values[0]: y"};
  const AffinityMatch m = match_node_affinity(pod_set({{{a, b}}, {{a}}}), kOne);
  EXPECT_FALSE(m.matches);
  EXPECT_EQ(m.error,
            "[nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: \"in\": supported values: \"In\", "
            "nodeSelectorTerms[0].matchExpressions[1].values: x, nodeSelectorTerms[0].matchExpressions[1].values[0]: y, "
            "nodeSelectorTerms[1].matchExpressions[0].operator: Unsupported value: \"in\": supported values: \"In\"]");
  // One distinct message, twice: said once, without brackets.
  auto c = req("type", Op::In);
  c.errors = {".values: x", ".values: x"};
  EXPECT_EQ(match_node_affinity(pod_set({{{c}}}), kOne).error, "nodeSelectorTerms[0].matchExpressions[0].values: x");
}

TEST(NodeAffinity, ANodeSelectorMismatchIsNoErrorEvenWithBrokenTerms) {
  auto broken = req("type", Op::In);
  broken.errors = {".values: x"};
  // RequiredNodeAffinity.Match checks the nodeSelector first.
  const AffinityMatch m = match_node_affinity(pod_set({{{broken}}}, {{"type", "two"}}), kOne);
  EXPECT_FALSE(m.matches);
  EXPECT_EQ(m.error, "");
}

Toleration toleration(std::string key, TolerationOperator op, std::string value = {},
                      std::optional<TaintEffect> effect = std::nullopt) {
  return Toleration{std::move(key), op, std::move(value), effect};
}

TEST(Tolerations, EqualExistsAndEffects) {
  const Taint t{"dedicated", "training", TaintEffect::NoSchedule, std::nullopt};
  EXPECT_TRUE(tolerates(toleration("dedicated", TolerationOperator::Equal, "training"), t));
  EXPECT_FALSE(tolerates(toleration("dedicated", TolerationOperator::Equal, "serving"), t));
  EXPECT_TRUE(tolerates(toleration("dedicated", TolerationOperator::Exists), t));
  EXPECT_TRUE(tolerates(toleration("", TolerationOperator::Exists), t));
  EXPECT_FALSE(tolerates(toleration("dedicated", TolerationOperator::Exists, {}, TaintEffect::NoExecute), t));
  // An empty key with Equal matches any key with the same value (ToleratesTaint).
  EXPECT_TRUE(tolerates(toleration("", TolerationOperator::Equal, "training"), t));
  EXPECT_FALSE(tolerates(toleration("dedicated", TolerationOperator::Unsupported, "training"), t));
}

TEST(Tolerations, LtAndGtCompareDecimalIntegers) {
  const Taint tier{"tier", "2", TaintEffect::NoSchedule, std::nullopt};
  EXPECT_TRUE(tolerates(toleration("tier", TolerationOperator::Gt, "1"), tier));   // 2 > 1
  EXPECT_FALSE(tolerates(toleration("tier", TolerationOperator::Gt, "2"), tier));
  EXPECT_TRUE(tolerates(toleration("tier", TolerationOperator::Lt, "3"), tier));   // 2 < 3
  EXPECT_FALSE(tolerates(toleration("tier", TolerationOperator::Lt, "1"), tier));
  EXPECT_TRUE(tolerates(toleration("tier", TolerationOperator::Gt, "-5"), tier));
  // content.IsDecimalInteger: no sign '+', no leading zeros, "-0" is not one.
  EXPECT_FALSE(tolerates(toleration("tier", TolerationOperator::Gt, "+1"), tier));
  EXPECT_FALSE(tolerates(toleration("tier", TolerationOperator::Gt, "01"), tier));
  EXPECT_FALSE(tolerates(toleration("tier", TolerationOperator::Gt, "-0"), tier));
  EXPECT_FALSE(tolerates(toleration("tier", TolerationOperator::Lt, "9223372036854775808"), tier));
  const Taint text{"tier", "gold", TaintEffect::NoSchedule, std::nullopt};
  EXPECT_FALSE(tolerates(toleration("tier", TolerationOperator::Gt, "1"), text));
  const Taint zero{"tier", "0", TaintEffect::NoSchedule, std::nullopt};
  EXPECT_TRUE(tolerates(toleration("tier", TolerationOperator::Lt, "1"), zero));
}

TEST(Taints, OnlyNoScheduleAndNoExecuteNeedAToleration) {
  ResourceFlavorSpec flavor;
  flavor.name = "spot";
  flavor.node_taints = {Taint{"soft", "", TaintEffect::PreferNoSchedule, std::nullopt},
                        Taint{"spot", "true", TaintEffect::NoSchedule, std::nullopt},
                        Taint{"maintenance", "", TaintEffect::NoExecute, std::nullopt}};
  const Taint* first = untolerated_taint(flavor, {});
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->key, "spot");
  const std::vector<Toleration> spot{toleration("spot", TolerationOperator::Equal, "true")};
  ASSERT_NE(untolerated_taint(flavor, spot), nullptr);
  EXPECT_EQ(untolerated_taint(flavor, spot)->key, "maintenance");
  // The flavor's own tolerations count as the pod's.
  flavor.tolerations = {toleration("maintenance", TolerationOperator::Exists)};
  EXPECT_EQ(untolerated_taint(flavor, spot), nullptr);
}

TEST(Taints, TextIsGoFormattingOfTheTaintValue) {
  EXPECT_EQ(taint_text(Taint{"instance", "spot", TaintEffect::NoSchedule, std::nullopt}), "{instance spot NoSchedule <nil>}");
  EXPECT_EQ(taint_text(Taint{"maintenance", "", TaintEffect::NoExecute, std::nullopt}), "{maintenance  NoExecute <nil>}");
  const Timestamp added = parse_rfc3339("2026-11-30T10:00:00+02:00").value();
  EXPECT_EQ(taint_text(Taint{"m", "v", TaintEffect::NoExecute, added}), "{m v NoExecute 2026-11-30 08:00:00 +0000 UTC}");
  const Timestamp fraction = parse_rfc3339("2026-11-30T08:00:00.25Z").value();
  EXPECT_EQ(taint_text(Taint{"m", "v", TaintEffect::NoSchedule, fraction}),
            "{m v NoSchedule 2026-11-30 08:00:00.25 +0000 UTC}");
}

TEST(ParseInt, AsStrconvParseIntBase10) {
  EXPECT_EQ(parse_int_base10("42"), 42);
  EXPECT_EQ(parse_int_base10("+42"), 42);
  EXPECT_EQ(parse_int_base10("-42"), -42);
  EXPECT_EQ(parse_int_base10("007"), 7);
  EXPECT_EQ(parse_int_base10("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(parse_int_base10("9223372036854775807"), INT64_MAX);
  for (const char* bad : {"", "+", "-", "+-1", "--1", "1_000", "0x10", "1.5", " 1", "9223372036854775808"}) {
    EXPECT_FALSE(parse_int_base10(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace gpubank::twin
