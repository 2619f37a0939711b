// `gpubank controller` without --once: the policy reconciler kept running.
//
//   - Informers (src/k8s/informer.hpp) watch the six gpubank kinds; any change marks the
//     controller dirty. A pass reads the informers' snapshots (level-triggered: the state,
//     not the events) and runs reconcile_policies. Bursts coalesce: a pass starts
//     `debounce` after the first change it covers. Every `resync_period` a pass runs
//     anyway, re-asserting the rendered objects (someone may have edited a ClusterQueue by
//     hand: the objects gpubank applies are listed at each pass, not watched).
//   - With leader election (coordination.k8s.io Lease, src/k8s/leader_election.hpp) only
//     the leader runs passes; a standby keeps its informers synced, so a takeover starts
//     with a pass at once. A pass checks leadership before it starts, not between its
//     writes: renew_deadline < lease_duration leaves the old leader time to finish one.
//   - Each pass that changed something records it: an Event on each gpubank resource
//     whose status changed, and one audit entry per created, configured, pruned, released
//     or failed object in the store (--store), appended in one transaction after the pass.
//   - Graceful reclaim (reclaim.hpp) runs after each policy pass with the Kueue backend:
//     informers on Workloads, ClusterQueues and LocalQueues wake it, and a pass is due at
//     the earliest deadline of a notice under way.
//   - Low-utilisation reclaims approved with `gpubank scan approve` (the store's record,
//     governance/reclaim_approval.hpp) are read every approval_poll; a new one starts its
//     notice at once (reclaim.hpp).
//   - Self-service changes (desk_enactor.hpp): with a policy desk (the portal's, on the
//     same store), the leader server-side applies each proposal the desk applied and has
//     not yet seen on the cluster, at each pass and every approval_poll; wake() after an
//     approval makes that immediate.
//   - /healthz answers 200 while the loop runs, /readyz once the informers synced (a
//     standby is ready: it can take over).
//   - An informer that dies (403: RBAC wrong; repeated failures) ends run() with its error,
//     so the process exits and Kubernetes restarts it with fresh discovery and credentials.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include "controller/cluster_view.hpp"
#include "controller/policy_reconciler.hpp"
#include "core/expected.hpp"
#include "k8s/client_config.hpp"
#include "k8s/leader_election.hpp"
#include "policy/policy_set.hpp"

namespace gpubank::proposals {
class Desk;
}

namespace gpubank::controller {

struct ControllerOptions {
  ReconcileOptions reconcile;
  std::string identity;  // this replica (the pod name): Events' reportingInstance, the Lease holder
  bool leader_elect = false;
  k8s::LeaderElectionOptions election;  // name, namespace and timings; identity is set from `identity`
  std::chrono::milliseconds resync_period{std::chrono::minutes(10)};
  std::chrono::milliseconds debounce{200};
  std::string store;         // SQLite path or PostgreSQL URL for the audit entries; empty: none
  // Graceful reclaim (reclaim.hpp) with the Kueue backend, when Kueue's kinds are installed
  // (the ledger, with a store, needs only the kinds).
  bool graceful_reclaim = true;
  // How often the store is read for low-utilisation reclaims people approved (gpubank scan
  // approve) between passes.
  std::chrono::milliseconds approval_poll{std::chrono::seconds(15)};
  // The portal's policy desk (proposals::Truth::Cluster) whose applied changes this
  // controller server-side applies as `desk_field_manager`; null: none.
  std::shared_ptr<proposals::Desk> desk;
  std::string desk_field_manager = "gpubank-portal";
  int health_port = 8081;    // -1: no health listener; 0: any free port (tests)
  std::string health_address = "0.0.0.0";
  // One line per pass and per state change (leadership, sync), for the log.
  std::function<void(const std::string&)> log;
};

class Controller {
 public:
  // Connects (discovery), checks the gpubank CRDs are installed, opens the store and binds
  // the health listener; the error names what failed.
  [[nodiscard]] static Expected<std::unique_ptr<Controller>> create(k8s::ClientConfig config, ControllerOptions options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Runs until stop is requested (success) or an informer dies (its error).
  [[nodiscard]] Expected<bool> run(std::stop_token stop);

  [[nodiscard]] int health_port() const;
  [[nodiscard]] std::size_t passes() const;  // passes completed (thread-safe)
  [[nodiscard]] bool leading() const;        // this replica runs passes now
  // The gpubank objects the informers hold now, decoded (thread-safe; empty before sync).
  [[nodiscard]] policy::PolicySet cluster_policies() const;
  // The policies, Kueue's Workloads (read as the reclaim reads them, without the owners'
  // checkpoint times) and the ClusterQueues, as the informers hold them (thread-safe).
  [[nodiscard]] ClusterSnapshot snapshot() const;
  // Asks for a pass soon (a desk change to apply); thread-safe.
  void wake();

 private:
  struct Impl;
  explicit Controller(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpubank::controller
