// The portal and its API as `gpubank controller --api-port` serves them on a real cluster:
// the same routes, roles, sessions, CSRF checks, rate limits and audit as `gpubank up`
// (platform_server.hpp), over what a controller has.
//   GET  /, /portal/...                the portal (its session answer says "server":
//                                      {"kind": "controller", "pages": [...]}: the pages
//                                      that have data here: overview, groups, bank,
//                                      governance, policies, changes)
//   POST/GET/DELETE /api/v1/session
//   GET  /api/v1/pools, /api/v1/groups the guardrails' pools and groups with the bank's
//                                      positions, folded from the store's ledger (the one
//                                      the controller writes from Kueue's Workloads)
//   GET  /api/v1/queues                the ClusterQueues gpubank renders, spec and status
//   GET  /api/v1/workloads?businessGroup=&pool=&state=   /api/v1/workloads/<ns>/<name>
//                                      Kueue's Workloads of those queues
//   GET  /api/v1/ledger?after=&limit=  the store's ledger entries (after: a seq)
//   GET  /api/v1/reclaims?limit=       the graceful reclaims the controller carried out
//   GET  /api/v1/governance/alerts     the open low-utilisation alerts `gpubank scan --store`
//                                      recorded in the same store (governance/alert_store.hpp)
//   POST /api/v1/governance/alerts/<uid>/decision {"decision", "reason", "downgradeTo"}
//                                      a platform-admin's or the group's admin's decision on a
//                                      ReclaimCandidate, recorded as `gpubank scan approve`
//                                      records it; the controller stops or downgrades the
//                                      workload (reclaim.hpp)
//   GET  /api/v1/clock                 the wall clock: {"time", "start": the Unix epoch (the
//                                      ledger's times are Unix ms), "clock": "wall"}
//   (controller/cluster_view.hpp: the same shapes as `gpubank up`'s answers)
//   GET  /api/v1/policies[/<Kind>/<name>]   the gpubank objects on the cluster, decoded
//   GET/POST /api/v1/proposals, GET /api/v1/proposals/<id>,
//   POST /api/v1/proposals/<id>/approve|reject
//        self-service changes (proposals/proposals.hpp, Truth::Cluster): a change in force
//        is server-side applied by the controller (controller/desk_enactor.hpp); the answer
//        says {"cluster": {"state": "queued"}} and the proposal shows "enacted" once the
//        cluster took it.
//   POST /api/v1/proposals/preview {"document", "hours"}   the impact preview: the work the
//                                      cluster did in the last `hours` (1..168, default 24),
//                                      recorded by the controller, and the Workloads not
//                                      finished yet, replayed on `preview_inventory` under
//                                      both sets (twin/preview/recorded_work.hpp); 404
//                                      preview.off without an inventory
// The twin's other views (GPUs, events, histories, governance reports) are not served
// here. Scoped roles (viewer, group-admin) see their group's workloads and ledger
// entries only, as on `gpubank up`.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "api/access.hpp"
#include "auth/gate.hpp"
#include "bank/ledger.hpp"
#include "controller/cluster_view.hpp"
#include "governance/alert_store.hpp"
#include "core/expected.hpp"
#include "policy/policy_set.hpp"
#include "proposals/proposals.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/preview/recorded_work.hpp"

namespace httplib {
class Server;
}

namespace gpubank::api::http {
struct Door;
}

namespace gpubank::store {
class Store;
}

namespace gpubank::api {

struct ClusterServerOptions {
  std::string address = "0.0.0.0";
  int port = 8080;  // 0: any free port
  std::shared_ptr<auth::Gate> gate;            // required: every route but the portal's assets needs it
  std::shared_ptr<proposals::Desk> desk;       // Truth::Cluster; null: no policy routes (404 proposals.off)
  std::string portal_dir;                      // development: serve the portal's files from here
  // Sign-in by a trusted reverse proxy's headers (api/access.hpp); roles from the cluster's
  // PlatformGuardrails as they are at each request. Unset: tokens and sessions only.
  std::optional<ProxyAuth> proxy;
  // The gpubank objects on the cluster now (the controller's informers), decoded.
  std::function<policy::PolicySet()> cluster_policies;
  // A change went into force in the desk: the controller should apply it soon.
  std::function<void()> changed;
  // The informers' state (Controller::snapshot); unset: pools, groups, queues and
  // workloads answer empty.
  std::function<controller::ClusterSnapshot()> snapshot;
  // The store the controller writes its ledger to (SQLite path or PostgreSQL URL); empty:
  // no ledger (positions are empty).
  std::string store;
  // The cluster as the twin models it, for the impact preview; null: no preview.
  std::shared_ptr<const twin::cluster::Inventory> preview_inventory;
  // The wall clock (Unix ms): the end of the replayed window. Empty: the system clock.
  std::function<std::int64_t()> now_ms;
};

class ClusterServer {
 public:
  explicit ClusterServer(ClusterServerOptions options);
  ~ClusterServer();
  ClusterServer(const ClusterServer&) = delete;
  ClusterServer& operator=(const ClusterServer&) = delete;

  // Opens the ledger's store (when set); the error names it.
  Expected<bool> open();
  Expected<int> bind();  // the port
  // Serves on a thread of its own until stop() (or destruction).
  void start();
  void stop();

 private:
  // The store's ledger folded so far (positions), read on from `ledger_seq_` at each ask.
  Expected<std::vector<bank::Position>> positions();
  // What the audit log holds for the views (the recorded work, the reclaims' steps), read on
  // from `audit_seq_` at each ask; under ledger_mu_.
  Expected<bool> refresh_audit_locked();
  Expected<std::vector<twin::preview::WorkloadRecord>> records();
  Expected<std::vector<bank::AuditEntry>> reclaim_steps();

  ClusterServerOptions options_;
  std::mutex ledger_mu_;
  std::unique_ptr<store::Store> store_;
  bank::LedgerBook book_;
  std::int64_t ledger_seq_ = 0;
  std::vector<twin::preview::WorkloadRecord> records_;
  std::vector<bank::AuditEntry> reclaim_steps_;
  governance::AlertBook alerts_;  // read on at each ask, under ledger_mu_
  std::int64_t audit_seq_ = 0;
  std::unique_ptr<httplib::Server> server_;
  std::unique_ptr<http::Door> door_;
  std::thread thread_;
};

}  // namespace gpubank::api
