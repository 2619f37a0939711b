// What a start of `gpubank up` does about proposals the policy desk holds in force that the
// running day never took. Applying an approved change writes the desk's record first and
// then journals it into the run (twin/live/interventions.hpp); a stop between the two, or a
// new --data-dir beside an old --auth-store, leaves the desk ahead of the run. The start
// applies each such proposal now, journalled like any other change, so the portal's policy
// view and the day it shows agree again.
#pragma once

#include <string>
#include <vector>

#include "proposals/proposals.hpp"
#include "twin/live/interventions.hpp"
#include "twin/live/platform.hpp"

namespace gpubank::api {

struct ReconciledProposal {
  std::string id;
  std::string object;  // Kind/name
  bool applied = false;
  std::string reason;  // why the run refused it (it applies at the next start), when not applied
};

// Applies, in the order the desk applied them, the Applied proposals that are neither in
// `journalled` (a PolicyChange of that id, taken or refused by the run) nor among the run's
// applied_proposals(); audited with `actor`. Returns one entry per proposal it tried.
[[nodiscard]] std::vector<ReconciledProposal> reconcile_desk(twin::live::Platform& platform,
                                                             const std::vector<proposals::Proposal>& proposals,
                                                             const std::vector<twin::live::Intervention>& journalled,
                                                             const std::string& actor);

}  // namespace gpubank::api
