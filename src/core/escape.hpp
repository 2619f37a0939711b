// Echoing input back to a terminal or a log: text that came from a file, a request or a
// command line must not be able to start a new line (and so forge a diagnostic or a log
// entry), move the cursor, recolour the screen or reorder what is shown around it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpubank {

// Whether U+cp is shown escaped by escape_text: C0 controls, DEL, C1 controls, the line and
// paragraph separators U+2028/U+2029, and the bidirectional overrides and isolates
// (U+202A..U+202E, U+2066..U+2069) that reorder the text after them ("Trojan Source").
[[nodiscard]] bool escaped_when_echoed(std::uint32_t cp);

// `text` with every code point above written as an escape: \n, \r and \t, \xNN for the
// other C0 controls and DEL, \uNNNN for the rest; bytes that are not well-formed UTF-8 are
// written \xNN as well. Everything else, backslashes included, is copied unchanged, so
// ordinary messages read as before.
[[nodiscard]] std::string escape_text(std::string_view text);

// The name of a control or other invisible code point for messages ("NUL", "ESC", "DEL",
// "NEL", "BYTE ORDER MARK"); empty when it has none.
[[nodiscard]] std::string_view code_point_name(std::uint32_t cp);

// "U+0000 (NUL)", "U+0085 (NEL)", "U+FFFE".
[[nodiscard]] std::string describe_code_point(std::uint32_t cp);

}  // namespace gpubank
