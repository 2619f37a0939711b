// Policies -> engines, in the cluster: the policy set read from the cluster's gpubank
// resources is validated and rendered exactly as `gpubank render` does, its objects
// applied with server-side apply (field manager "gpubank"), what an earlier render made
// and this one no longer does pruned, and each gpubank resource's status set:
//
//   Accepted  the resource decodes and validates (False: the first error, naming the field)
//   Rendered  the whole set validated and rendered (False: PolicySetInvalid; nothing is
//             applied or pruned then, and what was applied before stays as it was)
//   Applied   every object rendered from this resource was applied (False: the first
//             failure, e.g. a 409 conflict or a kind whose CRD is not installed)
//
// with status.observedGeneration = metadata.generation. A status is written only when it
// changes, so the controller's own status writes do not wake it up forever.
//
// dry_run computes the same outcome and a diff per object and writes nothing.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bank/ledger.hpp"
#include "controller/conditions.hpp"
#include "controller/plan.hpp"
#include "controller/policy_source.hpp"
#include "core/diagnostic.hpp"
#include "core/timestamp.hpp"
#include "k8s/apply.hpp"
#include "k8s/transport.hpp"
#include "render/render.hpp"

namespace gpubank::controller {

struct ReconcileOptions {
  render::Backend backend = render::Backend::Kueue;
  PlanOptions plan{};
  bool force_conflicts = false;  // --force-conflicts: take over fields another manager owns
  bool dry_run = false;
  std::string default_namespace = "gpubank-system";
  // Adjust the render to what holds at this time (time_controls.hpp: leases in force,
  // tidal borrow limits); unset: the render as `gpubank render` writes it.
  std::optional<Timestamp> at{};
  // The cluster's ledger, for time controls that depend on recorded positions (the tidal
  // admission hold); nullptr: none kept.
  const bank::LedgerBook* ledger = nullptr;
  // Pools with a graceful reclaim under way and their lenders (ReclaimPlan::reclaiming):
  // the other groups' ClusterQueues borrow nothing there meanwhile.
  std::map<std::string, std::set<std::string>> reclaiming{};
};

struct ObjectResult {
  enum class Action { Created, Configured, Unchanged, Pruned, Released, Skipped, Failed };
  Action action = Action::Failed;
  std::string object;  // ObjectKey::to_string(), or the render path for skipped objects
  std::string path;    // the render's path
  std::vector<std::string> sources;
  std::string message;  // why it failed or was skipped
  std::string diff;     // dry run: the unified diff (empty for Unchanged)
};
[[nodiscard]] std::string_view action_name(ObjectResult::Action action, bool dry_run);

struct PolicyResult {
  std::string resource;  // "GPUQuotaPolicy/a"
  std::vector<Condition> conditions;
  bool status_written = false;  // false: unchanged, dry run, or the write failed (then `error`)
  std::string error;
};

struct ReconcileReport {
  bool rendered = false;  // the set validated and rendered
  Diagnostics diagnostics;
  std::vector<ObjectResult> objects;
  std::vector<PolicyResult> policies;
  // With ReconcileOptions::at: the next lease or tidal boundary (a pass is due then), the
  // leases in force and what was adjusted.
  std::optional<Timestamp> next_change;
  std::vector<std::string> active_leases;
  std::vector<std::string> adjustments;

  [[nodiscard]] std::size_t count(ObjectResult::Action action) const;
  // Objects that failed plus status writes that failed.
  [[nodiscard]] std::size_t failures() const;
};

// The cluster's objects of every managed kind (plan.hpp) that is installed; kinds
// discovery does not list are left out (an apply of one fails and says so). Lists carry
// labelSelector=app.kubernetes.io/managed-by=gpubank: only such objects can be pruned.
[[nodiscard]] k8s::ApiResult<std::vector<nlohmann::json>> list_managed(k8s::Transport& transport,
                                                                      const k8s::RestMapper& mapper);

// The gpubank resources of all six kinds (those whose CRD is installed).
[[nodiscard]] k8s::ApiResult<std::vector<nlohmann::json>> list_policies(k8s::Transport& transport,
                                                                       const k8s::RestMapper& mapper);

// One reconciliation. `policies`: the gpubank resources; `live`: list_managed's objects;
// `now`: RFC 3339, for lastTransitionTime.
[[nodiscard]] ReconcileReport reconcile_policies(k8s::Transport& transport, const k8s::RestMapper& mapper,
                                                 const std::vector<nlohmann::json>& policies,
                                                 const std::vector<nlohmann::json>& live, const ReconcileOptions& options,
                                                 std::string_view now);
// The same with the policies decoded already (read_cluster_policies).
[[nodiscard]] ReconcileReport reconcile_policies(k8s::Transport& transport, const k8s::RestMapper& mapper,
                                                 const ClusterPolicies& cluster,
                                                 const std::vector<nlohmann::json>& live, const ReconcileOptions& options,
                                                 std::string_view now);

}  // namespace gpubank::controller
