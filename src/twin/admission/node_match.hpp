// Whether a pod set may use a ResourceFlavor's nodes, as Kueue's
// FlavorAssigner.checkFlavorForPodSets decides it (pkg/scheduler/flavorassigner): first the
// flavor's NoSchedule and NoExecute taints against the pod set's tolerations and the
// flavor's own, then the pod set's nodeSelector and required node affinity against the
// flavor's nodeLabels, reduced to the label keys that flavor has (flavorSelector).
// Pure functions of their arguments.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "twin/admission/model.hpp"

namespace gpubank::twin {

// strconv.ParseInt(s, 10, 64): an optional sign and decimal digits (leading zeros allowed),
// within int64. How label values are compared by Gt and Lt.
[[nodiscard]] std::optional<std::int64_t> parse_int_base10(std::string_view s);

// Toleration.ToleratesTaint (k8s.io/api core/v1), with the comparison operators enabled as
// Kueue enables them: Lt and Gt compare decimal integers and tolerate nothing when either
// value is not one.
[[nodiscard]] bool tolerates(const Toleration& toleration, const Taint& taint);

// FindMatchingUntoleratedTaint (k8s.io/component-helpers) over the flavor's NoSchedule and
// NoExecute taints: the first one that neither `pod_tolerations` nor the flavor's own
// tolerations tolerate; null when all are tolerated.
[[nodiscard]] const Taint* untolerated_taint(const ResourceFlavorSpec& flavor,
                                             const std::vector<Toleration>& pod_tolerations);

// The taint as Kueue's "untolerated taint %s" prints a core/v1 Taint value (Go's %s of the
// struct): "{key value NoSchedule <nil>}", with timeAdded as Go's time.Time.String() in UTC
// (Kueue's manager runs with TZ unset) in place of <nil> when it is set.
[[nodiscard]] std::string taint_text(const Taint& taint);

// flavorSelector, then nodeaffinity.RequiredNodeAffinity.Match on a node carrying the
// flavor's labels. Only the flavor's own label keys take part: nodeSelector entries and
// requirements on other keys are dropped, and a term left without requirements drops the
// whole required affinity (terms are ORed). When no term matches and some kept term
// failed to parse, `error` holds the parse errors as Kueue words them, which Kueue reports
// instead of the "doesn't match node affinity" reason.
struct AffinityMatch {
  bool matches = true;
  std::string error;  // non-empty only when !matches
};
[[nodiscard]] AffinityMatch match_node_affinity(const PodSetSpec& pod_set,
                                                const std::map<std::string, std::string>& flavor_labels);

}  // namespace gpubank::twin
