#include "document/decode.hpp"

#include <gtest/gtest.h>

#include "document/reader.hpp"

namespace gpubank::doc {

struct Inner {
  int count = 0;
  std::optional<Duration> wait;
};
template <>
struct Schema<Inner> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("count", s.count, AtLeast{1});
    v.optional("wait", s.wait, Positive{});
  }
};

enum class Color { Red, Green };
template <>
struct EnumNames<Color> {
  static constexpr std::array<std::pair<Color, std::string_view>, 2> values{{{Color::Red, "red"}, {Color::Green, "green"}}};
};

struct Outer {
  std::string name;
  double weight = 1.0;
  Color color = Color::Red;
  std::vector<Inner> items;
  std::map<std::string, int> limits;
};
template <>
struct Schema<Outer> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("name", s.name, DnsLabel{});
    v.optional("weight", s.weight, Positive{});
    v.optional("color", s.color);
    v.optional("items", s.items);
    v.optional("limits", s.limits);
  }
};

namespace {

struct Decoded {
  Outer value;
  bool ok;
  Diagnostics findings;
  SourceMap map;
};

Decoded decode(std::string_view yaml) {
  Decoded d{};
  std::vector<Document> docs;
  read_yaml(yaml, "f.yaml", docs, d.findings);
  EXPECT_EQ(docs.size(), 1u);
  DecodeContext ctx("f.yaml", "Outer", "o", d.findings, &d.map);
  d.ok = decode_value(Field{ctx, docs[0].root, "spec"}, d.value);
  return d;
}

TEST(Decode, ReadsEveryFieldAndRecordsPositions) {
  auto d = decode("name: abc\nweight: 2\ncolor: green\nitems:\n- {count: 3, wait: 90s}\nlimits: {a: 1}\n");
  ASSERT_TRUE(d.ok);
  EXPECT_TRUE(d.findings.empty());
  EXPECT_EQ(d.value.name, "abc");
  EXPECT_DOUBLE_EQ(d.value.weight, 2.0);
  EXPECT_EQ(d.value.color, Color::Green);
  ASSERT_EQ(d.value.items.size(), 1u);
  EXPECT_EQ(d.value.items[0].count, 3);
  EXPECT_EQ(d.value.items[0].wait, Duration(std::chrono::seconds(90)));
  EXPECT_EQ(d.value.limits.at("a"), 1);
  EXPECT_EQ(d.map.find("spec.items[0].wait"), (SourcePos{5, 20}));
  EXPECT_EQ(d.map.find("spec.items[0].nothing.here"), (SourcePos{5, 3}));
}

TEST(Decode, CollectsEveryErrorWithPathAndPosition) {
  auto d = decode("name: Not_A_Label\nweight: -1\ncolor: blue\nitems:\n- {count: \"3\"}\n- {count: 0, wiat: 1s}\nextra: 1\n");
  EXPECT_FALSE(d.ok);
  std::vector<std::string> got;
  for (const auto& f : d.findings) got.push_back(f.rule + " " + f.path + " " + std::to_string(f.pos.line) + ":" +
                                                  std::to_string(f.pos.column));
  EXPECT_EQ(got, (std::vector<std::string>{
                     "schema.invalid-format spec.name 1:7",
                     "schema.out-of-range spec.weight 2:9",
                     "schema.invalid-enum spec.color 3:8",
                     "schema.wrong-type spec.items[0].count 5:11",
                     "schema.out-of-range spec.items[1].count 6:11",
                     "schema.unknown-field spec.items[1].wiat 6:14",
                     "schema.unknown-field spec.extra 7:1",
                 }));
  for (const auto& f : d.findings) {
    EXPECT_EQ(f.file, "f.yaml");
    EXPECT_EQ(f.kind, "Outer");
    EXPECT_EQ(f.name, "o");
  }
  EXPECT_NE(d.findings[2].message.find("\"red\" or \"green\""), std::string::npos);
  EXPECT_NE(d.findings[3].message.find("expected an integer, got a string \"3\""), std::string::npos);
  EXPECT_NE(d.findings[5].message.find("did you mean \"wait\"?"), std::string::npos);
}

TEST(Decode, ReportsMissingRequiredFieldsAndDuplicates) {
  auto d = decode("weight: 1\nweight: 2\nitems: [{}]\nlimits: {a: 1, a: 2}\n");
  EXPECT_FALSE(d.ok);
  std::vector<std::string> got;
  for (const auto& f : d.findings) got.push_back(f.rule + " " + f.path);
  EXPECT_EQ(got, (std::vector<std::string>{"schema.duplicate-field spec.weight", "schema.required spec.name",
                                           "schema.required spec.items[0].count",
                                           "schema.duplicate-field spec.limits.a"}));
}

TEST(Decode, RejectsWrongContainerTypes) {
  auto d = decode("name: a\nitems: {count: 1}\nlimits: [1]\n");
  EXPECT_FALSE(d.ok);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].message, "expected a list, got an object");
  EXPECT_EQ(d.findings[1].message, "expected an object, got a list");
}

TEST(Decode, RejectsFractionsAndOverflowInIntegers) {
  auto d = decode("name: a\nitems: [{count: 2.5}, {count: 4294967296}]\n");
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].rule, kRuleWrongType);
  EXPECT_EQ(d.findings[1].rule, kRuleOutOfRange);
}

TEST(Encode, WritesFieldsInSchemaOrderAndLeavesOutEmptyOptionalOnes) {
  Outer o;
  o.name = "x";
  o.items.push_back(Inner{2, std::nullopt});
  EXPECT_EQ(encode_value(o).dump(), R"({"name":"x","weight":1.0,"color":"red","items":[{"count":2}]})");
}

}  // namespace
}  // namespace gpubank::doc
