// YAML 1.2 core-schema resolution of plain (unquoted) scalars, shared by the reader
// (to type values) and the writer (to quote strings that would otherwise read back as
// another type).
#pragma once

#include <string_view>

namespace gpubank::doc {

// ~, null, Null, NULL or empty
bool is_null_literal(std::string_view s);
// true/True/TRUE/false/False/FALSE; sets value
bool bool_literal(std::string_view s, bool& value);
// [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+
bool is_int_literal(std::string_view s);
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? | [-+]?.inf | .nan (three spellings each)
bool is_float_literal(std::string_view s);
// Whether a plain scalar with this text reads back as the same string in YAML 1.2 and in
// the YAML 1.1 readers Kubernetes tools use (so "yes" and "on" are not, and neither is
// text with control characters such as CR).
bool plain_reads_as_string(std::string_view s);

}  // namespace gpubank::doc
