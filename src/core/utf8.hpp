// Well-formed UTF-8, as Go's utf8.Valid, nlohmann::json, Kubernetes and Prometheus read it:
// no overlong forms, no surrogates, nothing above U+10FFFF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpubank {

// The length of the well-formed UTF-8 sequence at text[i] (1 to 4), or 0 if there is none.
[[nodiscard]] std::size_t utf8_sequence_length(std::string_view text, std::size_t i);

// The code point of the well-formed sequence of `length` bytes at text[i].
[[nodiscard]] std::uint32_t utf8_code_point(std::string_view text, std::size_t i, std::size_t length);

[[nodiscard]] bool is_utf8(std::string_view text);

}  // namespace gpubank
