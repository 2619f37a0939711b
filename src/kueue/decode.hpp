// Decoding kueue.x-k8s.io/v1beta2 objects from positioned documents, with the errors the
// API server would return for them.
//
// What is checked, in the API server's order:
//  1. the CRD's OpenAPI schema: types, required fields, enums, patterns (names of referenced
//     objects are DNS-1123 subdomains, pod set names DNS-1123 labels), lengths, list sizes,
//     list-map keys, and unknown fields (like `kubectl --validate=strict`); inside a pod
//     template only the fields admission reads are checked, the rest is ignored;
//  2. the CRD's CEL rules (x-kubernetes-validations);
//  3. only when 1 and 2 pass, as the API server calls webhooks last: Kueue's validating
//     webhooks (lendingLimit <= nominalQuota, limits only with a cohort or parent,
//     resource names, duplicates, totals, reserved "pods" requests, admissions).
// Every error is collected; an object with errors is left out of the set. Then, over the
// whole set: names defined twice, and cycles in the cohort tree.
//
// Accepted as `kubectl get -o yaml` prints objects: `kind: List` (and `<Kind>List`) with
// items, server-written metadata (uid, resourceVersion, managedFields, ...) and status.
// Other kinds are skipped with a warning.
//
// Not errors here, because Kueue reports them as the admission result of the Workloads
// concerned: a Workload whose LocalQueue or ClusterQueue does not exist, a ClusterQueue
// naming a ResourceFlavor that does not exist (see bridge.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "document/reader.hpp"
#include "kueue/objects.hpp"

namespace gpubank::kueue {

// Rule ids of the findings (besides the schema.* ids of document/decode.hpp).
inline constexpr std::string_view kRuleValidationRule = "schema.validation-rule";  // a CRD's CEL rule
inline constexpr std::string_view kRuleDuplicateValue = "schema.duplicate-value";  // list-map key twice
inline constexpr std::string_view kRuleWebhook = "kueue.webhook";                  // Kueue's webhooks
inline constexpr std::string_view kRuleApiVersion = "kueue.unsupported-version";
inline constexpr std::string_view kRuleIgnoredKind = "kueue.ignored-kind";        // warning
// A field Kueue acts on that the twin does not model (warning, naming the field).
inline constexpr std::string_view kRuleFieldNotModelled = "kueue.field-not-modelled";
// The manager Configuration: a part that changes admission but is not modelled (warning),
// and a second Configuration in the input.
inline constexpr std::string_view kRuleConfigNotModelled = "kueue.configuration-not-modelled";
inline constexpr std::string_view kRuleConfigTwice = "kueue.configuration-twice";
inline constexpr std::string_view kRuleAlreadyExists = "kueue.already-exists";
inline constexpr std::string_view kRuleCohortCycle = "kueue.cohort-cycle";

// Decodes the objects of one document (an object, or a List of them) into `out`.
void decode_document(const doc::Document& document, ObjectSet& out, Diagnostics& diagnostics);

// Decodes one object; false (with the errors in `diagnostics`) when it has errors or is
// not an object the twin reads.
bool decode_object(const doc::Node& root, Source source, ObjectSet& out, Diagnostics& diagnostics);

// Checks across objects: a name defined twice for one kind (the API server's
// AlreadyExists), and cycles in the cohort tree (reported once per cycle, with its
// members; Kueue would leave every ClusterQueue below it inactive).
void check_object_set(const ObjectSet& set, Diagnostics& diagnostics);

// Reads files and directories (YAML streams and JSON), decodes and checks them.
ObjectSet load_objects(const std::vector<std::string>& paths, Diagnostics& diagnostics);
// The same for documents already read.
ObjectSet decode_documents(const std::vector<doc::Document>& documents, Diagnostics& diagnostics);

}  // namespace gpubank::kueue
