// OpenAPI `pattern`s as the API server runs them (Go's regexp, RE2 syntax), on
// std::regex's ECMAScript engine. A pattern is translated once:
//   - matching is over Unicode code points (the text is decoded to UTF-32 and matched
//     with std::wregex), as RE2 matches, not over UTF-8 bytes;
//   - RE2's ASCII classes are spelled out (\d [0-9], \w [0-9A-Za-z_], \s [\t\n\f\r ]),
//     so no locale can widen them; `.` is [^\n] (ECMAScript's `.` also stops at \r,
//     U+2028 and U+2029); \A and \z become ^ and $ (both anchor at the text's ends, as
//     neither engine runs in multi-line mode); \Q...\E is quoted; \x{HHHH} becomes the
//     code point; named groups (?P<n>...) and (?<n>...) become plain groups;
//   - a leading (?i) makes the whole pattern case-insensitive (ASCII case folding only;
//     RE2 folds Unicode case).
// Syntax RE2 rejects (backreferences, look-around, unknown escapes) makes the pattern
// invalid, as the API server rejects such a CRD. RE2 syntax without an ECMAScript
// translation (\pL and other Unicode classes, flags other than a leading (?i), octal
// escapes) leaves the pattern unsupported: it is reported as not checked, never passed.
// Matching uses libstdc++'s breadth-first executor (regex_constants::__polynomial), whose
// time is linear in the text and whose recursion does not grow with it; the default
// depth-first executor recurses once per character and overflows the stack on long input.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gpubank::schema::detail {

class Pattern {
 public:
  enum class Status { Ok, Invalid, Unsupported };

  // Never throws; see status() and problem().
  static Pattern compile(std::string source);

  [[nodiscard]] Status status() const { return status_; }
  // Why the pattern is invalid or unsupported.
  [[nodiscard]] const std::string& problem() const { return problem_; }
  [[nodiscard]] const std::string& source() const { return source_; }
  // Whether the pattern matches somewhere in `text` (UTF-8), as Go's MatchString; nullopt
  // when std::regex gave up. Only for status() == Ok.
  [[nodiscard]] std::optional<bool> search(std::string_view text) const;

 private:
  struct Compiled;  // the std::wregex, kept out of this header (and out of every other TU)
  std::string source_;
  Status status_ = Status::Ok;
  std::string problem_;
  std::shared_ptr<const Compiled> regex_;
};

// UTF-8 to UTF-32; each byte that is not part of well-formed UTF-8 becomes U+FFFD.
std::wstring to_utf32(std::string_view text);
// The number of Unicode code points in UTF-8 text (an ill-formed byte counts as one), as
// Go's utf8.RuneCountInString, which the API server's minLength/maxLength use.
std::size_t code_points(std::string_view text);

}  // namespace gpubank::schema::detail
