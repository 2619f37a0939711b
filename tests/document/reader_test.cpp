#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "document/reader.hpp"

namespace gpubank::doc {
namespace {

std::vector<Document> yaml(std::string_view text, Diagnostics& d, const ReadLimits& limits = {}) {
  std::vector<Document> out;
  read_yaml(text, "in.yaml", out, d, limits);
  return out;
}

std::vector<Document> json(std::string_view text, Diagnostics& d, const ReadLimits& limits = {}) {
  std::vector<Document> out;
  read_json(text, "in.json", out, d, limits);
  return out;
}

TEST(YamlReader, TypesPlainScalarsByTheCoreSchemaAndQuotedOnesAsStrings) {
  Diagnostics d;
  auto docs = yaml("a: 10\nb: \"10\"\nc: 1.5\nd: true\ne: ~\nf: 10m\ng: 0x1F\nh: -3\ni: .inf\nj: yes\n", d);
  ASSERT_TRUE(d.empty());
  ASSERT_EQ(docs.size(), 1u);
  const Node& r = docs[0].root;
  EXPECT_EQ(r.find("a")->type, NodeType::Int);
  EXPECT_EQ(r.find("a")->integer, 10);
  EXPECT_EQ(r.find("b")->type, NodeType::String);
  EXPECT_EQ(r.find("c")->type, NodeType::Float);
  EXPECT_DOUBLE_EQ(r.find("c")->number, 1.5);
  EXPECT_EQ(r.find("d")->type, NodeType::Bool);
  EXPECT_EQ(r.find("e")->type, NodeType::Null);
  EXPECT_EQ(r.find("f")->type, NodeType::String);
  EXPECT_EQ(r.find("g")->integer, 31);
  EXPECT_EQ(r.find("h")->integer, -3);
  EXPECT_TRUE(std::isinf(r.find("i")->number));
  EXPECT_EQ(r.find("j")->type, NodeType::String);  // YAML 1.2: "yes" is a string
}

TEST(YamlReader, RecordsOneBasedLinesAndColumnsOfKeysAndValues) {
  Diagnostics d;
  auto docs = yaml("spec:\n  guaranteed: 32\n  list:\n  - x\n", d);
  ASSERT_EQ(docs.size(), 1u);
  const Node& spec = *docs[0].root.find("spec");
  EXPECT_EQ(spec.entries[0].key_pos, (SourcePos{2, 3}));
  EXPECT_EQ(spec.find("guaranteed")->pos, (SourcePos{2, 15}));
  EXPECT_EQ(spec.find("list")->items[0].pos, (SourcePos{4, 5}));
}

TEST(YamlReader, ReadsEveryDocumentOfAStreamAndSkipsEmptyOnes) {
  Diagnostics d;
  auto docs = yaml("a: 1\n---\n---\nb: 2\n", d);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0].index, 0);
  EXPECT_EQ(docs[1].index, 2);
}

TEST(YamlReader, KeepsDuplicateKeysForTheDecoderToReport) {
  Diagnostics d;
  auto docs = yaml("a: 1\na: 2\n", d);
  ASSERT_EQ(docs[0].root.entries.size(), 2u);
}

TEST(YamlReader, ReportsSyntaxErrorsWithTheirPosition) {
  Diagnostics d;
  auto docs = yaml("a: [1, 2\nb: 3\n", d);
  EXPECT_TRUE(docs.empty());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rule, kRuleSyntax);
  EXPECT_EQ(d[0].file, "in.yaml");
  EXPECT_GT(d[0].pos.line, 0);
}

TEST(YamlReader, StopsAliasExpansionAtTheNodeLimit) {
  // A "billion laughs" document: each level doubles the previous one.
  std::string text = "a0: &a0 [x, x]\n";
  for (int i = 1; i < 30; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + ", *a" +
            std::to_string(i - 1) + "]\n";
  }
  Diagnostics d;
  ReadLimits limits;
  limits.max_nodes = 10000;
  auto docs = yaml(text, d, limits);
  EXPECT_TRUE(docs.empty());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rule, kRuleTooLarge);
}

TEST(YamlReader, RejectsDeepNestingAndOversizedInput) {
  Diagnostics d;
  ReadLimits limits;
  limits.max_depth = 10;
  yaml("a: " + std::string(20, '[') + std::string(20, ']') + "\n", d, limits);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rule, kRuleTooLarge);
  EXPECT_NE(d[0].message.find("nesting"), std::string::npos);

  d.clear();
  limits.max_bytes = 8;
  yaml("a: 123456789\n", d, limits);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rule, kRuleTooLarge);
}

TEST(YamlReader, RejectsTagsOutsideTheCoreSchemaAndComplexKeys) {
  Diagnostics d;
  yaml("a: !custom 1\n", d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("unsupported YAML tag"), std::string::npos);
  d.clear();
  yaml("? [x]\n: y\n", d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("mapping keys must be strings"), std::string::npos);
  d.clear();
  auto docs = yaml("a: !!str 3\nb: !!int \"7\"\n", d);
  ASSERT_TRUE(d.empty());
  EXPECT_EQ(docs[0].root.find("a")->type, NodeType::String);
  EXPECT_EQ(docs[0].root.find("b")->integer, 7);
}

// Found by fuzz/policy_decoder_fuzzer: on these streams yaml-cpp 0.7's LoadAll loops
// forever, allocating as it goes. A regression would hang, so each read runs under a
// watchdog that ends the test binary.
TEST(YamlReader, RejectsAStrayFlowEntryInsteadOfLoopingForever) {
  struct Case {
    std::string_view text;
    SourcePos pos;
  };
  for (const Case& c : {Case{",", {1, 1}}, Case{"[a]\n,", {2, 1}}, Case{"- a\n,\n", {2, 1}},
                        Case{"--- ,", {1, 5}}, Case{"&a ,", {1, 4}}, Case{"a: 1\n---\n,\n", {3, 1}}}) {
    std::promise<Diagnostics> done;
    auto result = done.get_future();
    std::thread([done = std::move(done), text = c.text]() mutable {
      Diagnostics d;
      yaml(text, d);
      done.set_value(std::move(d));
    }).detach();
    if (result.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      std::fprintf(stderr, "read_yaml did not return on \"%.*s\"\n", static_cast<int>(c.text.size()), c.text.data());
      std::_Exit(1);
    }
    const Diagnostics d = result.get();
    ASSERT_EQ(d.size(), 1u) << c.text;
    EXPECT_EQ(d[0].rule, kRuleSyntax);
    EXPECT_EQ(d[0].message, "YAML syntax error: unexpected \",\"");
    EXPECT_EQ(d[0].pos, c.pos) << c.text;
  }
}

// Found by fuzz/policy_decoder_fuzzer: yaml-cpp passes invalid UTF-8 through; such a string
// did not survive the YAML writer, and made encode_policy and `gpubank convert -o json`
// throw (nlohmann::json refuses to dump it).
TEST(YamlReader, RejectsStringsThatAreNotUtf8) {
  for (std::string_view text : {"a: b\xA1" "c\n", "a: \xC0\xAF\n", "a: \xF4\x90\x80\x80\n",
                                "a: \xE2\x82\n", "\xFF: 1\n", "- x\n- [\xED\xA0\x80]\n"}) {
    Diagnostics d;
    auto docs = yaml(text, d);
    ASSERT_EQ(d.size(), 1u) << text;
    EXPECT_EQ(d[0].rule, kRuleSyntax);
    EXPECT_NE(d[0].message.find("UTF-8"), std::string::npos) << d[0].message;
    EXPECT_TRUE(docs.empty());
  }
  Diagnostics d;
  auto docs = yaml("caf\xC3\xA9: \"\\u00e9 \xE2\x82\xAC \xF0\x9F\x98\x80\"  # \xC3\xA9 in a comment\n", d);
  ASSERT_TRUE(d.empty());
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0].root.entries[0].key, "caf\xC3\xA9");
  EXPECT_EQ(docs[0].root.entries[0].value.text, "\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  // Issue 28: the whole text must be UTF-8 (YAML 1.2), comments included.
  d.clear();
  yaml("a: b  # \xFF in a comment\n", d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].to_string(), "in.yaml:1:9: error: invalid UTF-8 byte 0xFF: YAML input must be UTF-8 text [schema.syntax]");
}

// Found by fuzz/policy_decoder_fuzzer and fuzz/admission_review_fuzzer: parser messages
// quote the bytes they stopped at, which made diagnostics (and so `validate -o json` and
// the webhook's response) invalid UTF-8.
TEST(Readers, MessagesAreUtf8WhateverTheInput) {
  Diagnostics d;
  yaml("A\xFF\xFF_0\0\xD2" "5\xE2", d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rule, kRuleSyntax);
  EXPECT_TRUE(is_utf8(d[0].message)) << d[0].message;
  EXPECT_NO_THROW((void)nlohmann::json(d[0].to_string()).dump());

  d.clear();
  json("{\"a\": \"\xDF\x83i\xEE\xDF", d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(is_utf8(d[0].message)) << d[0].message;
  const auto parsed = parse_json("\"\xDF\x83i{\xEE\xDF");
  ASSERT_FALSE(parsed.ok());
  EXPECT_TRUE(is_utf8(parsed.error())) << parsed.error();
}

TEST(Utf8, ChecksAndRepairsText) {
  EXPECT_TRUE(is_utf8(""));
  EXPECT_TRUE(is_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  for (std::string_view bad : {"\x80", "\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xF5", "\xE2\x82"}) {
    EXPECT_FALSE(is_utf8(bad)) << bad;
    EXPECT_TRUE(is_utf8(to_utf8(bad))) << bad;
  }
  EXPECT_EQ(to_utf8("a\xFF" "b\xC3\xA9"), "a\xEF\xBF\xBD" "b\xC3\xA9");
}

// Found by fuzz/policy_decoder_fuzzer: previews were cut after 40 bytes, inside a UTF-8
// character, and the message then broke `gpubank validate -o json`.
TEST(Preview, ShortensLongValuesOnACharacterBoundary) {
  Node n;
  n.type = NodeType::String;
  n.text = "x";
  for (int i = 0; i < 30; ++i) n.text += "\xC3\xA9";  // é
  const std::string p = preview(n);
  EXPECT_EQ(p, "\"x" + n.text.substr(1, 38) + "...\"");
  EXPECT_NO_THROW((void)nlohmann::json(p).dump());
  n.text = "short";
  EXPECT_EQ(preview(n), "\"short\"");
}

TEST(YamlReader, FlagsIntegersOutsideInt64) {
  Diagnostics d;
  auto docs = yaml("a: 99999999999999999999\nb: -9223372036854775808\n", d);
  EXPECT_FALSE(docs[0].root.find("a")->integer_fits);
  EXPECT_TRUE(docs[0].root.find("b")->integer_fits);
  EXPECT_EQ(docs[0].root.find("b")->integer, INT64_MIN);
}

TEST(JsonReader, ReadsValuesWithPositions) {
  Diagnostics d;
  auto docs = json("{\n\t\"a\": 1,\n  \"b\": {\"c\": \"x\\u00e9\\ud83d\\ude00\", \"d\": [1.5, true, null]}\n}\n", d);
  ASSERT_TRUE(d.empty()) << d[0].to_string();
  const Node& r = docs[0].root;
  EXPECT_EQ(r.find("a")->integer, 1);
  EXPECT_EQ(r.entries[0].key_pos, (SourcePos{2, 2}));
  EXPECT_EQ(r.find("a")->pos, (SourcePos{2, 7}));
  const Node& b = *r.find("b");
  EXPECT_EQ(b.find("c")->text, "x\xc3\xa9\xf0\x9f\x98\x80");  // surrogate pair decoded
  EXPECT_EQ(b.find("c")->pos, (SourcePos{3, 14}));
  EXPECT_EQ(b.find("d")->items[1].type, NodeType::Bool);
  EXPECT_EQ(b.find("d")->items[2].pos, (SourcePos{3, 54}));
}

// Found by fuzz/json_reader_fuzzer: the parser skips comments and a leading byte order
// mark, the position scanner did not, so every position after one was another token's.
TEST(JsonReader, PositionsSkipCommentsAndAByteOrderMark) {
  Diagnostics d;
  auto docs = json("\xEF\xBB\xBF{\n  // the quota\n  \"a\": 1, /* b: */ \"b\": [true, 2// x, y\n, null]\n}", d);
  ASSERT_TRUE(d.empty());
  ASSERT_EQ(docs.size(), 1u);
  const Node& r = docs[0].root;
  EXPECT_EQ(r.pos, (SourcePos{1, 1}));
  EXPECT_EQ(r.entries[0].key_pos, (SourcePos{3, 3}));
  EXPECT_EQ(r.find("a")->pos, (SourcePos{3, 8}));
  EXPECT_EQ(r.entries[1].key_pos, (SourcePos{3, 20}));
  const Node& b = *r.find("b");
  EXPECT_EQ(b.pos, (SourcePos{3, 25}));
  ASSERT_EQ(b.items.size(), 3u);
  EXPECT_EQ(b.items[0].pos, (SourcePos{3, 26}));
  EXPECT_EQ(b.items[1].pos, (SourcePos{3, 32}));
  EXPECT_EQ(b.items[2].pos, (SourcePos{4, 3}));
}

TEST(JsonReader, ReportsSyntaxErrorsWithLineAndColumn) {
  Diagnostics d;
  json("{\"a\": 1,\n \"b\": }", d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rule, kRuleSyntax);
  EXPECT_EQ(d[0].pos.line, 2);
  EXPECT_GT(d[0].pos.column, 0);
}

TEST(JsonReader, RejectsTrailingGarbageAndDeepNesting) {
  Diagnostics d;
  json("{} x", d);
  EXPECT_EQ(d.size(), 1u);
  d.clear();
  ReadLimits limits;
  limits.max_depth = 5;
  json(std::string(10, '[') + std::string(10, ']'), d, limits);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rule, kRuleTooLarge);
}

TEST(ParseJson, ReturnsTheTreeOrAnError) {
  auto ok = parse_json(R"({"request": {"uid": "u1", "n": 18446744073709551615}})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->find("request")->string_at("uid"), "u1");
  EXPECT_FALSE(ok->find("request")->find("n")->integer_fits);
  auto bad = parse_json("{\"a\": ");
  ASSERT_FALSE(bad);
  EXPECT_FALSE(bad.error().empty());
}

TEST(ParseJson, EnforcesTheNodeLimit) {
  ReadLimits limits;
  limits.max_nodes = 5;
  auto r = parse_json("[1,2,3,4,5,6,7]", limits);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("more than 5"), std::string::npos);
}

}  // namespace
}  // namespace gpubank::doc
