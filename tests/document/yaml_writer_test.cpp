#include "document/yaml_writer.hpp"

#include <gtest/gtest.h>

#include "core/escape.hpp"
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

// Found by policy_decoder_fuzzer: a cron field ending in CR was written as a plain scalar
// (yaml-cpp's emitter allows it) and read back without the CR, since a CR ends a plain
// line. Control characters now go in double quotes, escaped, in values and in keys.
TEST(YamlWriter, ControlCharactersSurviveTheRoundTrip) {
  // And (issue 28) DEL, C1 controls, NEL, the line separators, bidirectional overrides and a
  // byte order mark, which yaml-cpp wrote raw, in plain scalars or even in double quotes.
  const std::vector<std::string> texts{"0 20 * * *\r", "a\rb", "line\nbreak", "tab\there", "bell\x07", "del\x7f",
                                       "\x01leading", "nel\xC2\x85", "csi\xC2\x9B", "ls\xE2\x80\xA8",
                                       "rlo\xE2\x80\xAE" "caf\xC3\xA9", "bom\xEF\xBB\xBF"};
  for (const auto& t : texts) {
    const nlohmann::ordered_json v = {{"value", t}, {t, 1}};
    const std::string text = to_yaml(v);
    std::string lines = text;  // every character visible, line breaks only between entries
    std::erase(lines, '\n');
    EXPECT_EQ(escape_text(lines), lines) << "written raw: " << text;
    std::vector<Document> docs;
    Diagnostics d;
    read_yaml(text, "x", docs, d);
    ASSERT_EQ(docs.size(), 1u) << text;
    ASSERT_FALSE(has_errors(d)) << text << (d.empty() ? "" : d.front().to_string());
    const Node* value = docs[0].root.find("value");
    ASSERT_NE(value, nullptr) << text;
    EXPECT_EQ(value->text, t) << text;
    EXPECT_NE(docs[0].root.find(t), nullptr) << "the key did not survive: " << text;
  }
}

TEST(YamlWriter, WritesNestedBlocksInKeyOrder) {
  nlohmann::ordered_json v = {{"z", {{"b", 1}, {"a", {1, 2}}}}, {"m", "s"}, {"y", 1}};
  // "y" is a boolean to YAML 1.1 readers, so even as a key it is quoted.
  EXPECT_EQ(to_yaml(v), "z:\n  b: 1\n  a:\n    - 1\n    - 2\nm: s\n\"y\": 1\n");
}

}  // namespace
}  // namespace gpubank::doc
