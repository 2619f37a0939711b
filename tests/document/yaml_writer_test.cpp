#include "document/yaml_writer.hpp"

#include <gtest/gtest.h>

#include "document/reader.hpp"

namespace gpubank::doc {
namespace {

TEST(YamlWriter, QuotesStringsThatWouldReadBackAsAnotherType) {
  nlohmann::ordered_json v = {{"a", "10"}, {"b", "true"}, {"c", "yes"}, {"d", "10m"}, {"e", ""}, {"f", 3}, {"g", 1.5},
                              {"h", nullptr}, {"i", nlohmann::ordered_json::array()}, {"j", "on"}};
  const std::string text = to_yaml(v);
  EXPECT_EQ(text,
            "a: \"10\"\nb: \"true\"\nc: \"yes\"\nd: 10m\ne: \"\"\nf: 3\ng: 1.5\nh: ~\ni: []\nj: \"on\"\n");
  std::vector<Document> docs;
  Diagnostics d;
  read_yaml(text, "x", docs, d);
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0].root.find("a")->type, NodeType::String);
  EXPECT_EQ(docs[0].root.find("e")->type, NodeType::String);
  EXPECT_EQ(docs[0].root.find("g")->type, NodeType::Float);
}

TEST(YamlWriter, WritesNestedBlocksInKeyOrder) {
  nlohmann::ordered_json v = {{"z", {{"b", 1}, {"a", {1, 2}}}}, {"m", "s"}, {"y", 1}};
  // "y" is a boolean to YAML 1.1 readers, so even as a key it is quoted.
  EXPECT_EQ(to_yaml(v), "z:\n  b: 1\n  a:\n    - 1\n    - 2\nm: s\n\"y\": 1\n");
}

}  // namespace
}  // namespace gpubank::doc
