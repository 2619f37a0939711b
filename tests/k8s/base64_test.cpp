#include "k8s/base64.hpp"

#include <gtest/gtest.h>

namespace gpubank::k8s {
namespace {

std::string decoded(std::string_view text) {
  auto r = decode_base64(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error());
  return r.ok() ? *r : std::string();
}

std::string error_of(std::string_view text) {
  auto r = decode_base64(text);
  EXPECT_FALSE(r.ok()) << text << " decoded to " << (r.ok() ? *r : "");
  return r.ok() ? std::string() : r.error();
}

TEST(Base64, DecodesEveryPaddingLength) {
  EXPECT_EQ(decoded(""), "");
  EXPECT_EQ(decoded("Zg=="), "f");
  EXPECT_EQ(decoded("Zm8="), "fo");
  EXPECT_EQ(decoded("Zm9v"), "foo");
  EXPECT_EQ(decoded("Zm9vYmFy"), "foobar");
  EXPECT_EQ(decoded("AP8+/w=="), std::string("\x00\xff\x3e\xff", 4));
}

TEST(Base64, SkipsLineBreaksAsGoDoes) {
  EXPECT_EQ(decoded("Zm9v\nYmFy\r\n"), "foobar");
  EXPECT_EQ(decoded("Zm\n9v"), "foo");
  EXPECT_EQ(decoded("Zg=\n="), "f");
}

TEST(Base64, RefusesWhatGoRefuses) {
  EXPECT_EQ(error_of("Zm9v YmFy"), "invalid base64 character ' ' at offset 4");
  EXPECT_EQ(error_of("Zm9v\tYmFy"), "invalid base64 character \\t at offset 4");
  EXPECT_EQ(error_of("Zm9-"), "invalid base64 character '-' at offset 3");  // URL-safe alphabet
  EXPECT_EQ(error_of("Zm9_"), "invalid base64 character '_' at offset 3");
  EXPECT_EQ(error_of(std::string_view("Zm\0v", 4)), "invalid base64 character \\x00 at offset 2");
  EXPECT_EQ(error_of("Zg"), "truncated base64: the data ends inside a group of four characters (missing '=' padding?)");
  EXPECT_EQ(error_of("Zm9"), error_of("Zg"));
  EXPECT_EQ(error_of("Zg="), error_of("Zg"));
  EXPECT_EQ(error_of("Z==="), "misplaced padding '=' at offset 1");
  EXPECT_EQ(error_of("===="), "misplaced padding '=' at offset 0");
  EXPECT_EQ(error_of("Zg=a"), "data after padding '=' at offset 3");
  EXPECT_EQ(error_of("Zg==Zm9v"), "unexpected 'Z' after the final padding at offset 4");
}

}  // namespace
}  // namespace gpubank::k8s
