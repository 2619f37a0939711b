// Kueue's validating webhooks (pkg/webhooks upstream) on decoded objects: the checks the
// CRD schema cannot express. Run only on objects that passed the schema, as the API
// server calls webhooks last. Internal to src/kueue.
#pragma once

#include "document/decode.hpp"
#include "kueue/objects.hpp"
#include "kueue/reader.hpp"

namespace gpubank::kueue::detail {

void webhook_resource_flavor(Reader& r, const doc::SourceMap& positions, const ResourceFlavor& rf);
void webhook_cluster_queue(Reader& r, const doc::SourceMap& positions, const ClusterQueue& cq);
void webhook_cohort(Reader& r, const doc::SourceMap& positions, const Cohort& cohort);
void webhook_workload(Reader& r, const doc::SourceMap& positions, const Workload& wl);

// content.IsLabelKey (a qualified name: [prefix/]name): the messages, empty when valid.
std::vector<std::string> label_key_errors(std::string_view key);
// validation.IsValidLabelValue: the messages, empty when valid.
std::vector<std::string> label_value_errors(std::string_view value);

}  // namespace gpubank::kueue::detail
