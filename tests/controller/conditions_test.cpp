#include "controller/conditions.hpp"

#include <gtest/gtest.h>

namespace gpubank::controller {
namespace {

using nlohmann::json;

const std::vector<Condition> kAllTrue{{"Accepted", true, "Valid", "ok"},
                                      {"Rendered", true, "Rendered", "3 object(s)"},
                                      {"Applied", true, "Applied", "3 object(s) applied"}};

TEST(Conditions, NewConditionsGetTheTimeOfNow) {
  const json out = merge_conditions(json(), kAllTrue, 4, "2026-01-01T00:00:00Z");
  ASSERT_EQ(out.size(), 3U);
  EXPECT_EQ(out[0]["type"], "Accepted");
  EXPECT_EQ(out[0]["status"], "True");
  EXPECT_EQ(out[0]["observedGeneration"], 4);
  EXPECT_EQ(out[2]["lastTransitionTime"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(out[2]["reason"], "Applied");
}

TEST(Conditions, TransitionTimeMovesOnlyWhenTheStatusFlips) {
  const json before = merge_conditions(json(), kAllTrue, 1, "2026-01-01T00:00:00Z");
  std::vector<Condition> next = kAllTrue;
  next[1].message = "4 object(s)";                       // same status, new message
  next[2] = {"Applied", false, "ApplyFailed", "409"};   // flips
  const json after = merge_conditions(before, next, 2, "2026-01-02T00:00:00Z");
  EXPECT_EQ(after[1]["lastTransitionTime"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(after[1]["message"], "4 object(s)");
  EXPECT_EQ(after[1]["observedGeneration"], 2);
  EXPECT_EQ(after[2]["lastTransitionTime"], "2026-01-02T00:00:00Z");
  EXPECT_EQ(after[2]["status"], "False");
}

TEST(Conditions, OtherControllersConditionsAreKeptInPlace) {
  const json existing = json::array({{{"type", "Approved"}, {"status", "True"}, {"reason", "ByAdmin"}},
                                     {{"type", "Applied"}, {"status", "False"}, {"lastTransitionTime", "t0"}}});
  const json out = merge_conditions(existing, kAllTrue, 1, "t1");
  ASSERT_EQ(out.size(), 4U);
  EXPECT_EQ(out[0], existing[0]);
  EXPECT_EQ(out[1]["type"], "Applied");
  EXPECT_EQ(out[1]["lastTransitionTime"], "t1");  // False -> True
  EXPECT_EQ(out[2]["type"], "Accepted");
  EXPECT_EQ(out[3]["type"], "Rendered");
}

TEST(Conditions, StatusUpdateIsEmptyWhenNothingChanges) {
  json object{{"metadata", {{"name", "a"}, {"generation", 3}}}};
  const auto first = status_update(object, kAllTrue, 3, "t1");
  ASSERT_TRUE(first.has_value());
  object["status"] = *first;
  EXPECT_FALSE(status_update(object, kAllTrue, 3, "t2").has_value());
  // A new generation must be acknowledged even when the conditions read the same.
  const auto next = status_update(object, kAllTrue, 4, "t2");
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ((*next)["observedGeneration"], 4);
  EXPECT_EQ((*next)["conditions"][0]["lastTransitionTime"], "t1");
}

TEST(Conditions, LongMessagesAreCutOnACharacterBoundary) {
  std::string message(10, 'a');
  message += "\xc3\xa9";  // é: bytes 10 and 11
  EXPECT_EQ(cap_message(message, 11), std::string(10, 'a'));
  EXPECT_EQ(cap_message(message, 12), message);
  EXPECT_EQ(cap_message("short", 100), "short");
}

}  // namespace
}  // namespace gpubank::controller
