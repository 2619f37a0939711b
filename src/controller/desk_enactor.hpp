// Self-service changes on a real cluster: a proposal the policy desk applied
// (proposals/proposals.hpp, Truth::Cluster) becomes the cluster's object by server-side
// apply, and the desk's record says so (PolicyChangeEnacted). The policy reconciler then
// renders it like any other edit of the object.
//
//   - Order: the desk's, so two changes of one object land in the order they were applied.
//   - Field manager: its own ("gpubank-portal" by default), forced: the approval is the
//     authority over the spec fields the document names, even those kubectl last set.
//   - A CapacityLease's status.approval (the approver and the spec hash it approved) is
//     written to the status subresource after the apply, as `gpubank bank approve` does.
//   - Crash safety: the apply is idempotent, and the record is written only after it; a
//     crash between the two applies the same document again at the next pass.
//   - Only proposals applied in the desk are enacted; a pending or rejected one never is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "k8s/apply.hpp"
#include "k8s/transport.hpp"
#include "proposals/proposals.hpp"

namespace gpubank::controller {

struct Enactment {
  std::string id;      // the proposal
  std::string object;  // Kind/name
  bool ok = false;
  std::string resource_version;  // after the apply
  std::string error;             // why not, naming the request
};

// The applied, not yet enacted proposals of `proposals`, in the desk's order.
[[nodiscard]] std::vector<const proposals::Proposal*> to_enact(const std::vector<proposals::Proposal>& proposals);

// Server-side applies one applied proposal's document (and a lease's status.approval).
[[nodiscard]] Enactment enact(k8s::Transport& transport, const k8s::RestMapper& mapper, const proposals::Proposal& p);

}  // namespace gpubank::controller
