// The characters a YAML or JSON text may hold, checked on the raw bytes before a parser
// sees them. yaml-cpp reads some bytes YAML forbids as if they were something else (a raw
// NUL followed by "x73" becomes the escape "\x73", so "re<NUL>x73earch" read as
// "research"), while other tools and a reviewer's diff see different text. Rejecting such
// bytes outright keeps what gpubank reads equal to what everyone else reads.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/diagnostic.hpp"

namespace gpubank::doc {

struct CharacterError {
  SourcePos pos;        // line and column (in code points) of the offending character
  std::string message;  // "invalid character U+0000 (NUL): YAML does not allow control characters"
};

// YAML 1.2's c-printable set, in UTF-8: TAB, LF, CR, U+0020..U+007E, U+0085,
// U+00A0..U+D7FF, U+E000..U+FFFD and U+10000..U+10FFFF; a byte order mark only as the
// first character. The first character outside it, or the first byte that is not
// well-formed UTF-8 (UTF-16 and UTF-32 input included), is the error.
[[nodiscard]] std::optional<CharacterError> check_yaml_characters(std::string_view text);

// JSON's rule for raw characters (RFC 8259): no control characters U+0000..U+001F other
// than the whitespace TAB, LF and CR, which are themselves allowed only between tokens
// (the parser reports those inside strings). Invalid UTF-8 is left to the parser.
[[nodiscard]] std::optional<CharacterError> check_json_characters(std::string_view text);

}  // namespace gpubank::doc
