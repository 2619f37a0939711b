// Checks on the text fields of ledger and audit entries, shared by their validators.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpubank::bank::detail {

// nullopt when `text` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF)
// without control characters (except tab, newline and carriage return when
// allow_line_breaks), else the rule it breaks. NUL is always refused: PostgreSQL cannot
// store it, and both backends must accept the same entries.
[[nodiscard]] std::optional<std::string> check_text(std::string_view text, bool allow_line_breaks);

// "<field>: <rule>" for a required or optional text field, or nullopt.
[[nodiscard]] std::optional<std::string> check_field(std::string_view field, std::string_view value, bool required,
                                                     std::size_t max_length, bool allow_line_breaks = false);

}  // namespace gpubank::bank::detail
