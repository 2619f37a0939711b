// CustomResourceDefinitions (apiextensions.k8s.io/v1) for the policy API, generated from
// the same field descriptions the decoder uses (schema.hpp), so the cluster's structural
// schema and gpubank's decoder cannot drift apart. The API server's schema catches shape
// errors early (types, required fields, enums, ranges, formats); everything that needs
// other objects is the admission webhook's.
#pragma once

#include <vector>

#include "document/decode.hpp"

namespace gpubank::policy {

// One CustomResourceDefinition per kind, in the order of the Kind enum.
std::vector<doc::Json> custom_resource_definitions();

}  // namespace gpubank::policy
