// RE2 patterns on std::regex (code points, RE2's ASCII classes and '.', the syntax RE2
// rejects or std::regex cannot run), and Kubernetes' name syntaxes.
#include "schema/pattern.hpp"

#include <gtest/gtest.h>

#include "schema/object_meta.hpp"

namespace gpubank::schema::detail {
namespace {

bool matches(const std::string& pattern, std::string_view text) {
  const Pattern p = Pattern::compile(pattern);
  EXPECT_EQ(p.status(), Pattern::Status::Ok) << pattern << ": " << p.problem();
  if (p.status() != Pattern::Status::Ok) return false;
  const std::optional<bool> match = p.search(text);
  EXPECT_TRUE(match.has_value()) << pattern;
  return match.value_or(false);
}

TEST(Pattern, SearchesLikeGoMatchString) {
  EXPECT_TRUE(matches("b", "abc"));  // unanchored
  EXPECT_FALSE(matches("^b", "abc"));
  EXPECT_TRUE(matches("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "h100-rdma"));
  EXPECT_FALSE(matches("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "h100-"));
  EXPECT_FALSE(matches("^a$", "a\n"));  // $ is the end of the text, not of a line
}

TEST(Pattern, MatchesCodePointsNotBytes) {
  EXPECT_TRUE(matches("^.{3}$", "äöü"));
  EXPECT_TRUE(matches("^[^a]$", "ß"));
  EXPECT_TRUE(matches("^\\x{e9}$", "é"));
}

TEST(Pattern, KeepsRe2sAsciiClassesAndDot) {
  EXPECT_FALSE(matches("^\\d$", "\u0663"));  // ARABIC-INDIC DIGIT THREE is not \d in RE2
  EXPECT_FALSE(matches("^\\w$", "é"));
  EXPECT_FALSE(matches("^\\s$", "\u00a0"));
  EXPECT_TRUE(matches("^[\\d_]+$", "1_2"));
  EXPECT_TRUE(matches("^a.b$", "a\rb"));  // ECMAScript's '.' would stop at \r
  EXPECT_FALSE(matches("^a.b$", "a\nb"));
}

TEST(Pattern, TranslatesRe2OnlySyntax) {
  EXPECT_TRUE(matches("^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$", "GPU-Pool"));  // the CRDs' leading (?i)
  EXPECT_TRUE(matches("(?i)^(abort|warn)?$", "WARN"));
  EXPECT_TRUE(matches("\\Qa.b*\\E$", "xa.b*"));
  EXPECT_FALSE(matches("\\Qa.b\\E", "axb"));
  EXPECT_TRUE(matches("^(?P<unit>Gi|Mi)$", "Gi"));
  EXPECT_TRUE(matches("^[]a]+$", "]a"));  // ']' first in a class is a literal
  EXPECT_TRUE(matches("\\Afoo\\z", "foo"));
  EXPECT_TRUE(matches("^\\.\\+$", ".+"));
}

TEST(Pattern, RejectsWhatRe2RejectsAndFlagsWhatItCannotRun) {
  EXPECT_EQ(Pattern::compile("(a)\\1").status(), Pattern::Status::Invalid);
  EXPECT_EQ(Pattern::compile("a(?=b)").status(), Pattern::Status::Invalid);
  EXPECT_EQ(Pattern::compile("\\u0041").status(), Pattern::Status::Invalid);
  EXPECT_EQ(Pattern::compile("[a-z").status(), Pattern::Status::Invalid);
  EXPECT_EQ(Pattern::compile("\\pL").status(), Pattern::Status::Unsupported);
  EXPECT_EQ(Pattern::compile("(?s)a.b").status(), Pattern::Status::Unsupported);
  EXPECT_EQ(Pattern::compile("a{2,1}").status(), Pattern::Status::Unsupported);  // std::regex's own refusal
}

TEST(Pattern, LongTextDoesNotExhaustTheStack) {
  // libstdc++'s default depth-first executor recurses per character: on 300,000 characters
  // it overflows an 8 MiB stack (checked when this test was written).
  const std::string text(300'000, 'a');
  EXPECT_TRUE(matches("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", text));
  EXPECT_FALSE(matches("^(a|b)*c$", text));
}

TEST(Pattern, CountsCodePointsAsGo) {
  EXPECT_EQ(code_points("abc"), 3u);
  EXPECT_EQ(code_points("äöü"), 3u);
  EXPECT_EQ(code_points("\xF0\x9F\x9A\x80"), 1u);  // one emoji, four bytes
  EXPECT_EQ(code_points("a\xC3"), 2u);            // a truncated sequence counts as one
}

TEST(Names, Dns1123SubdomainAndLabels) {
  EXPECT_FALSE(check_dns1123_subdomain("gpubank.platform-a"));
  EXPECT_TRUE(check_dns1123_subdomain("gpubank..a"));
  EXPECT_TRUE(check_dns1123_subdomain("-a"));
  EXPECT_TRUE(check_dns1123_subdomain("A"));
  EXPECT_FALSE(check_dns1123_subdomain(std::string(253, 'a')));
  EXPECT_EQ(check_dns1123_subdomain(std::string(254, 'a')), "must be no more than 253 characters");
  EXPECT_FALSE(check_dns1123_label("team-a"));
  EXPECT_TRUE(check_dns1123_label("team.a"));
  EXPECT_TRUE(check_dns1123_label(std::string(64, 'a')));
  EXPECT_FALSE(check_dns1035_label("llama-70b"));
  EXPECT_TRUE(check_dns1035_label("70b-llama"));
  EXPECT_FALSE(check_path_segment_name("a.b"));
  EXPECT_TRUE(check_path_segment_name(".."));
  EXPECT_TRUE(check_path_segment_name("a%b"));
}

TEST(Names, QualifiedNamesAndLabelValues) {
  EXPECT_FALSE(check_qualified_name("app.kubernetes.io/managed-by"));
  EXPECT_FALSE(check_qualified_name("Team_A.b"));
  EXPECT_EQ(check_qualified_name("/x"), "prefix part must be non-empty");
  EXPECT_EQ(check_qualified_name("example.com/"), "name part must be non-empty");
  EXPECT_TRUE(check_qualified_name("Example.com/x"));  // the prefix is a lowercase subdomain
  EXPECT_TRUE(check_qualified_name("a/b/c"));
  EXPECT_TRUE(check_qualified_name("x" + std::string(63, 'y')));
  EXPECT_FALSE(check_label_value(""));
  EXPECT_FALSE(check_label_value("NVIDIA-H100-80GB-HBM3"));
  EXPECT_TRUE(check_label_value("-x"));
  EXPECT_TRUE(check_label_value(std::string(64, 'a')));
}

}  // namespace
}  // namespace gpubank::schema::detail
