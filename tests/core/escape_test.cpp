#include "core/escape.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gpubank {
namespace {

using namespace std::string_literals;

TEST(EscapeText, WritesControlCharactersAsEscapes) {
  EXPECT_EQ(escape_text("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(escape_text("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(escape_text("nul\0del\x7f"s), "nul\\x00del\\x7f");
  EXPECT_EQ(escape_text("nel\xC2\x85" "csi\xC2\x9B"), "nel\\u0085csi\\u009b");
  // Line separators and bidirectional overrides ("Trojan Source").
  EXPECT_EQ(escape_text("a\xE2\x80\xA8" "b\xE2\x80\xAE" "c\xE2\x81\xA6"), "a\\u2028b\\u202ec\\u2066");
}

TEST(EscapeText, WritesBytesThatAreNotUtf8AsHex) {
  EXPECT_EQ(escape_text("caf\xE9!"), "caf\\xe9!");
  EXPECT_EQ(escape_text("\xED\xA0\x80"), "\\xed\\xa0\\x80");  // a surrogate
}

TEST(EscapeText, KeepsPrintableTextAsItIs) {
  const std::string text = "Workload/team-a: spec.x: \"v\" must match '^[a-z]\\d$', caf\xC3\xA9 \xF0\x9F\x98\x80 \xC2\xA0";
  EXPECT_EQ(escape_text(text), text);
  EXPECT_EQ(escape_text(""), "");
}

TEST(DescribeCodePoint, NamesControlsAndOtherInvisibleCharacters) {
  EXPECT_EQ(describe_code_point(0), "U+0000 (NUL)");
  EXPECT_EQ(describe_code_point(0x1B), "U+001B (ESC)");
  EXPECT_EQ(describe_code_point(0x7F), "U+007F (DEL)");
  EXPECT_EQ(describe_code_point(0x85), "U+0085 (NEL)");
  EXPECT_EQ(describe_code_point(0x9B), "U+009B (C1 control)");
  EXPECT_EQ(describe_code_point(0xFEFF), "U+FEFF (BYTE ORDER MARK)");
  EXPECT_EQ(describe_code_point(0xFFFE), "U+FFFE (noncharacter)");
  EXPECT_EQ(describe_code_point(0x41), "U+0041");
}

}  // namespace
}  // namespace gpubank
