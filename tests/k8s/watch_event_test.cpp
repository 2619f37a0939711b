// The pure half of list/watch: watch lines, list pages and the store's bookkeeping.
#include <gtest/gtest.h>

#include "k8s/watch_event.hpp"

namespace gpubank::k8s {
namespace {

TEST(WatchEvent, ParsesEveryType) {
  auto added = parse_watch_event(
      R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"}}})");
  ASSERT_TRUE(added.ok()) << added.error();
  EXPECT_EQ(added->type, EventType::Added);
  EXPECT_EQ(added->key, "ns/a");
  EXPECT_EQ(added->resource_version, "7");
  auto bookmark = parse_watch_event(R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12"}}})");
  ASSERT_TRUE(bookmark.ok());
  EXPECT_EQ(bookmark->key, "");
  auto error = parse_watch_event(
      R"({"type":"ERROR","object":{"kind":"Status","status":"Failure","reason":"Expired","code":410}})");
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error_code(*error), 410);
  auto node = parse_watch_event(R"({"type":"DELETED","object":{"metadata":{"name":"n1","resourceVersion":"3"}}})");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(node->key, "n1");
}

TEST(WatchEvent, RefusalsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"{", "not valid JSON"},
      {"[1]", "not a JSON object"},
      {R"({"object":{}})", "type: missing"},
      {R"({"type":"UPSERTED","object":{}})", "type: unknown type \"UPSERTED\""},
      {R"({"type":"ADDED","object":3})", "object: missing or not an object"},
      {R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})", "object.metadata.resourceVersion: missing or empty in a ADDED event"},
      {R"({"type":"MODIFIED","object":{"metadata":{"name":"","resourceVersion":"1"}}})", "object.metadata.name: missing or empty"},
  };
  for (const auto& [line, why] : cases) {
    auto e = parse_watch_event(line);
    ASSERT_FALSE(e.ok()) << line;
    EXPECT_NE(e.error().find(why), std::string::npos) << line << " -> " << e.error();
  }
}

TEST(ListPage, ReadsItemsResourceVersionAndContinue) {
  auto page = parse_list_page(
      R"({"kind":"PodList","metadata":{"resourceVersion":"40","continue":"40|ns/b"},"items":[{"metadata":{"name":"a"}}]})");
  ASSERT_TRUE(page.ok()) << page.error();
  EXPECT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->resource_version, "40");
  EXPECT_EQ(page->continue_token, "40|ns/b");
  EXPECT_TRUE(parse_list_page(R"({"metadata":{"resourceVersion":"1"},"items":null})").ok());
  EXPECT_EQ(parse_list_page(R"({"metadata":{},"items":[]})").error(),
            "list response: metadata.resourceVersion: missing or empty");
  EXPECT_EQ(parse_list_page(R"({"metadata":{"resourceVersion":"1"},"items":[1]})").error(),
            "list response: items[0]: not an object");
}

TEST(ObjectStore, ReplaceReportsTheDifferenceAndApplyTracksTheResourceVersion) {
  std::vector<std::string> log;
  ObjectStore store([&](EventType type, const Json* before, const Json* after) {
    log.push_back(std::string(to_string(type)) + " " + object_key(after ? *after : *before));
  });
  auto obj = [](const char* name, const char* rv) {
    return Json{{"metadata", {{"name", name}, {"resourceVersion", rv}}}};
  };
  store.replace({obj("a", "1"), obj("b", "2")}, "2");
  store.replace({obj("b", "3"), obj("c", "3")}, "3");
  EXPECT_EQ(log, (std::vector<std::string>{"ADDED a", "ADDED b", "DELETED a", "MODIFIED b", "ADDED c"}));
  EXPECT_EQ(store.resource_version(), "3");
  log.clear();
  store.apply(*parse_watch_event(R"({"type":"DELETED","object":{"metadata":{"name":"c","resourceVersion":"4"}}})"));
  store.apply(*parse_watch_event(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})"));
  EXPECT_EQ(log, (std::vector<std::string>{"DELETED c"}));
  EXPECT_EQ(store.resource_version(), "9");
  EXPECT_EQ(store.objects().size(), 1u);
  // The handler hears what the store did: ADDED of a cached key is a modification.
  log.clear();
  store.apply(*parse_watch_event(R"({"type":"ADDED","object":{"metadata":{"name":"b","resourceVersion":"10"}}})"));
  store.apply(*parse_watch_event(R"({"type":"MODIFIED","object":{"metadata":{"name":"d","resourceVersion":"11"}}})"));
  store.apply(*parse_watch_event(R"({"type":"DELETED","object":{"metadata":{"name":"zz","resourceVersion":"12"}}})"));
  EXPECT_EQ(log, (std::vector<std::string>{"MODIFIED b", "ADDED d"}));
  EXPECT_EQ(store.resource_version(), "12");
}

}  // namespace
}  // namespace gpubank::k8s
