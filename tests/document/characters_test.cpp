// The characters YAML and JSON input may hold (issue 28): bytes that yaml-cpp would read
// as something other than what a reviewer or another parser sees are rejected, with the
// place and the character named.
#include <gtest/gtest.h>

#include <string>

#include "document/characters.hpp"
#include "document/reader.hpp"

namespace gpubank::doc {
namespace {

using namespace std::string_literals;

Diagnostics read_yaml_text(std::string_view text, std::vector<Document>* docs = nullptr) {
  Diagnostics d;
  std::vector<Document> out;
  read_yaml(text, "in.yaml", out, d);
  if (docs != nullptr) *docs = std::move(out);
  return d;
}

Diagnostics read_json_text(std::string_view text) {
  Diagnostics d;
  std::vector<Document> out;
  read_json(text, "in.json", out, d);
  return d;
}

// yaml-cpp read "re<NUL>x73earch" as "research" and "w<NUL>x2d1" as "w-1".
TEST(YamlCharacters, RejectsARawNulThatYamlCppReadAsAnEscape) {
  std::vector<Document> docs;
  const auto d = read_yaml_text("spec:\n  businessGroup: re\0x73earch\n"s, &docs);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].to_string(),
            "in.yaml:2:20: error: invalid character U+0000 (NUL): YAML does not allow control characters "
            "[schema.syntax]");
  EXPECT_TRUE(docs.empty());
  EXPECT_EQ(read_yaml_text("workloads:\n- name: w\0x2d1\n"s).at(0).pos, (SourcePos{2, 10}));
}

TEST(YamlCharacters, RejectsEveryCharacterOutsideCPrintable) {
  const std::pair<std::string, std::string> cases[] = {
      {"\x01", "U+0001 (SOH): YAML does not allow control characters"},
      {"\x1b[31m", "U+001B (ESC): YAML does not allow control characters"},
      {"\x0b", "U+000B (VT): YAML does not allow control characters"},
      {"\x7f", "U+007F (DEL): YAML does not allow control characters"},
      {"\xC2\x80", "U+0080 (C1 control): YAML does not allow control characters"},
      {"\xC2\x9F", "U+009F (C1 control): YAML does not allow control characters"},
      {"\xEF\xBF\xBE", "U+FFFE (noncharacter): YAML does not allow this character"},
      {"\xEF\xBF\xBF", "U+FFFF (noncharacter): YAML does not allow this character"},
      {"\xEF\xBB\xBF", "U+FEFF (BYTE ORDER MARK): a byte order mark is allowed only at the start of the input"},
  };
  for (const auto& [bad, message] : cases) {
    for (const std::string& text : {"a: x" + bad + "y\n", "a: \"x" + bad + "y\"\n", "a: x # c" + bad + "\n"}) {
      const auto d = read_yaml_text(text);
      ASSERT_EQ(d.size(), 1u) << text;
      EXPECT_EQ(d[0].rule, kRuleSyntax);
      EXPECT_EQ(d[0].message, "invalid character " + message) << text;
      EXPECT_EQ(d[0].pos.line, 1);
    }
  }
}

TEST(YamlCharacters, RejectsBytesThatAreNotUtf8AndOtherEncodings) {
  auto d = read_yaml_text("a: b # caf\xE9\n");  // Latin-1 in a comment
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].message, "invalid UTF-8 byte 0xE9: YAML input must be UTF-8 text");
  EXPECT_EQ(d[0].pos, (SourcePos{1, 11}));
  d = read_yaml_text("\xFF\xFE" "a\0:\0 \0b\0\n\0"s);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].message,
            "the input is UTF-16LE (it starts with that byte order mark); gpubank reads YAML and JSON as UTF-8");
}

TEST(YamlCharacters, AcceptsEveryCPrintableCharacter) {
  // TAB, CR LF, NEL, NBSP, the last BMP characters before the surrogates and before U+FFFE,
  // the private use area, an emoji and U+10FFFF, after a leading byte order mark.
  std::vector<Document> docs;
  const auto d = read_yaml_text(
      "\xEF\xBB\xBF" "a: \"x\ty\"\r\nb: \"\xC2\x85\xC2\xA0\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBD\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF\"\n",
      &docs);
  ASSERT_TRUE(d.empty()) << d[0].to_string();
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0].root.string_at("a"), "x\ty");
  EXPECT_EQ(docs[0].root.find("b")->text.size(), 21u);
}

TEST(YamlCharacters, EscapesInQuotedScalarsStillWork) {
  // Written as escapes, control characters are visible in the text; what they mean is up
  // to the field's own rules.
  std::vector<Document> docs;
  ASSERT_TRUE(read_yaml_text("a: \"x\\0y\\e\"\n", &docs).empty());
  EXPECT_EQ(docs[0].root.string_at("a"), "x\0y\x1b"s);
}

TEST(YamlCharacters, CountsLinesAcrossEveryLineBreak) {
  EXPECT_EQ(check_yaml_characters("a\r\nb\rc\nd\x01")->pos, (SourcePos{4, 2}));
  EXPECT_EQ(check_yaml_characters("\xEF\xBB\xBF\x01")->pos, (SourcePos{1, 1}));
  EXPECT_EQ(check_yaml_characters("\xC3\xA9\xC3\xA9\x7F")->pos, (SourcePos{1, 3}));  // code points, not bytes
  EXPECT_FALSE(check_yaml_characters(""));
}

TEST(JsonCharacters, RejectsRawControlCharactersAnywhere) {
  for (const std::string& text : {"{\"a\": \"re\0x73earch\"}"s, "{\"a\":\0 1}"s, "{\"a\": 1}\0"s}) {
    const auto d = read_json_text(text);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].rule, kRuleSyntax);
    EXPECT_EQ(d[0].message,
              "invalid character U+0000 (NUL): JSON does not allow control characters (inside strings, write "
              "them as \\u escapes)");
    EXPECT_EQ(d[0].pos.line, 1);
  }
  EXPECT_EQ(read_json_text("{\n \"a\": \"\x1b[2J\"}").at(0).pos, (SourcePos{2, 8}));
  const auto parsed = parse_json("{\"a\":\n\"b\0\"}"s);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error(),
            "parse error at line 2, column 3: invalid character U+0000 (NUL): JSON does not allow control "
            "characters (inside strings, write them as \\u escapes)");
}

TEST(JsonCharacters, KeepsWhatJsonAllows) {
  // Whitespace between tokens, a leading byte order mark, DEL and C1 characters in strings
  // (JSON allows them raw), and escapes of control characters.
  Diagnostics d;
  std::vector<Document> docs;
  read_json("\xEF\xBB\xBF{\r\n\t\"a\": \"x\x7f\xC2\x85\\u0000\"}", "in.json", docs, d);
  ASSERT_TRUE(d.empty()) << d[0].to_string();
  EXPECT_EQ(docs[0].root.string_at("a"), "x\x7f\xC2\x85\0"s);
  EXPECT_TRUE(parse_json("{\"a\": \"\\u001b\"}"));
}

}  // namespace
}  // namespace gpubank::doc
