// Writing JSON values as YAML: block style, keys in the JSON's order, strings quoted
// whenever they would read back as another type.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gpubank::doc {

std::string to_yaml(const nlohmann::ordered_json& value);

}  // namespace gpubank::doc
