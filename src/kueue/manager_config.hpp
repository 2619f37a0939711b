// Kueue's manager Configuration (config.kueue.x-k8s.io v1beta1 and v1beta2), read from the
// input of `twin admit` as an object or from the ConfigMap the Kueue deployment mounts it
// from (key controller_manager_config.yaml). Only what changes admission is kept: fair
// sharing and its strategies, feature gates, and the resources section
// (excludeResourcePrefixes, transformations, quotaCheckStrategy). Those parts are validated as the manager's
// pkg/config validation does; the rest of the Configuration (webhook, metrics, leader
// election, integrations, ...) is accepted unread, and an unknown field is an error, as the
// manager decodes strictly. Parts that change admission but are not
// modelled (waitForPodsReady, admissionFairSharing, deviceClassMappings) are warnings. Internal to src/kueue.
#pragma once

#include <optional>

#include "core/diagnostic.hpp"
#include "document/node.hpp"
#include "kueue/objects.hpp"

namespace gpubank::kueue::detail {

// nullopt: the object is not a manager Configuration (another Configuration kind, or a
// ConfigMap without controller_manager_config.yaml), for the caller to skip. Else whether
// it was read without errors; only then is it added to out.configurations.
std::optional<bool> decode_manager_configuration(const doc::Node& root, const Source& source, ObjectSet& out,
                                                 Diagnostics& diagnostics);

}  // namespace gpubank::kueue::detail
