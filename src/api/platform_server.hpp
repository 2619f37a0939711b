// The HTTP shell of `gpubank up`: serves the embedded platform on loopback and drives its
// clock.
//   GET  /metrics                      Prometheus text format 0.0.4
//   GET  /healthz, /readyz
//   GET  /api/v1/clock                 POST /api/v1/clock {"action": "pause"|"resume"|"step",
//                                      "step": "10m", "speed": 60 | "max"}
//   GET  /api/v1/pools, /groups, /queues
//   GET  /api/v1/workloads?businessGroup=&pool=&state=    /api/v1/workloads/<ns>/<name>
//   GET  /api/v1/events?kind=&businessGroup=&pool=&object=&after=&limit=
//   GET  /api/v1/ledger?after=&limit=  /api/v1/audit?after=&limit=  /api/v1/reclaims?limit=
//   GET  /api/v1/gpus?pool=            /api/v1/gpus/<uuid>
//   POST /api/v1/gpus/<uuid>/health {"healthy": false, "xid": 79}   (fault injection)
//   GET  /api/v1/services              inference services, replicas, TTFT p95
//   GET  /api/v1/summary               per group and cluster figures so far (twin run's summary)
//   GET  /api/v1/governance/alerts     the low-utilisation alerts, scanned every 15 virtual minutes
//   GET  /api/v1/governance/showback?from=&to=&level=group|owner|workload
//   GET  /api/v1/governance/kpis?from=&to=    /api/v1/governance/leaderboard?from=&to=&minGpuHours=
//   GET  /api/v1/governance/review?from=&to=  the quota review's findings
//        (the reports of `gpubank report` over virtual time; from/to RFC 3339, by default the
//        run so far; twin/live/governance.hpp)
//   POST/GET/DELETE /api/v1/session    a browser session for a token (src/auth/gate.hpp)
//   GET  /, /portal/...                the portal's page and assets (src/portal)
//   GET  /api/v1/policies[/<Kind>/<name>]   the policies in force (JSON and YAML)
//   POST /api/v1/proposals/preview {"document": YAML, "hours": n}   impact preview (twin/preview)
//   GET/POST /api/v1/proposals {"document", "comment"}   self-service changes (proposals/)
//   POST /api/v1/proposals/<id>/approve|reject {"comment"}   a platform administrator's decision
// Every path but /healthz, /readyz, the portal's assets and POST /api/v1/session needs a
// bearer token or a session (with X-CSRF-Token on writes); what each role may read and
// change is api/access.hpp's. Every write is audited in the gate's store before it runs.
// Errors are JSON {"error": sentence, "field": name, "rule": id} with 400 (bad input), 401
// (no valid credentials), 403 (the role may not, or no CSRF token), 404 (unknown path or
// object), 405, 429 (over the token's rate, with Retry-After) or 503 (the audit store
// refused the write's record). The clock: at speed s, one wall second advances s
// virtual seconds; "max" advances as fast as the run allows, in slices short enough to keep
// requests answered. All access to the platform is under one mutex.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <initializer_list>
#include <map>
#include <optional>
#include <string_view>
#include <thread>
#include <variant>

#include "api/access.hpp"
#include "auth/gate.hpp"
#include "proposals/proposals.hpp"
#include "core/expected.hpp"
#include "twin/live/platform.hpp"

namespace httplib {
class Server;
}

namespace gpubank::api::http {
struct Door;
}

namespace gpubank::api {

struct PlatformServerOptions {
  std::string address = "127.0.0.1";
  int port = 8080;       // 0: any free port
  double speed = 60;     // virtual seconds per wall second; 0: as fast as possible ("max")
  bool paused = false;
  // Checks every request but the public paths; without one, every such request is 401.
  std::shared_ptr<auth::Gate> gate;
  // Self-service policy changes (/api/v1/policies, /api/v1/proposals); without one those
  // paths answer 404 governance.off-like errors (proposals.off).
  std::shared_ptr<proposals::Desk> desk;
  // Sign-in by a trusted reverse proxy's headers (api/access.hpp); unset: none believed.
  std::optional<ProxyAuth> proxy;
  // Development: serve the portal's files from this directory at each request instead of
  // the ones built in (gpubank up --portal-dir).
  std::string portal_dir;
  // The cluster an impact preview runs on (the platform's own inventory).
  std::shared_ptr<const twin::cluster::Inventory> inventory;
};

// Query parameters to typed filters; the error names the parameter and the rule.
struct QueryError {
  std::string field, rule, message;
};
template <class T>
using QueryResult = std::variant<T, QueryError>;

using Params = std::multimap<std::string, std::string>;
[[nodiscard]] QueryResult<twin::live::Page> parse_page(const Params& params);
[[nodiscard]] QueryResult<twin::live::EventFilter> parse_event_filter(const Params& params);
[[nodiscard]] QueryResult<twin::live::WorkloadFilter> parse_workload_filter(const Params& params);

// The governance reports' parameters: from/to (RFC 3339, Unix ms here; unset: the run so
// far), level (group, owner, workload) and minGpuHours (0..1e6), each only where `known`
// lists it.
struct GovernanceQuery {
  std::optional<std::int64_t> from_ms, to_ms;
  governance::ShowbackLevel level = governance::ShowbackLevel::Group;
  double min_gpu_hours = 10;
};
[[nodiscard]] QueryResult<GovernanceQuery> parse_governance_query(const Params& params,
                                                                  std::initializer_list<std::string_view> known);

class PlatformServer {
 public:
  // `timeline` receives one readable line per notable event, in order (stderr in `up`);
  // `after_advance` runs under the lock after each advance (persisting the clock).
  PlatformServer(std::unique_ptr<twin::live::Platform> platform, PlatformServerOptions options,
                 std::function<void(const std::string&)> timeline = {},
                 std::function<void(const twin::live::Platform&)> after_advance = {});
  ~PlatformServer();
  PlatformServer(const PlatformServer&) = delete;
  PlatformServer& operator=(const PlatformServer&) = delete;

  // Binds the socket; the port (useful with port 0).
  Expected<int> bind();
  // Starts the clock and serves until stop(); false when serving failed.
  bool serve();
  void stop();

  // Runs `f` on the platform under the lock (tests, shutdown).
  void with_platform(const std::function<void(twin::live::Platform&)>& f);

 private:
  void install_routes();
  void install_policy_routes();
  void clock_loop();
  void advance_locked(twin::VirtualTime target);

  std::unique_ptr<twin::live::Platform> platform_;
  PlatformServerOptions options_;
  std::function<void(const std::string&)> timeline_;
  std::function<void(const twin::live::Platform&)> after_advance_;
  std::unique_ptr<httplib::Server> server_;
  std::unique_ptr<http::Door> door_;
  std::optional<policy::PlatformGuardrailsSpec> guardrails_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool paused_ = false;
  double speed_ = 60;
  bool stopping_ = false;
  std::size_t timeline_seen_ = 0;
  std::thread clock_;
  std::atomic<bool> ready_{false};
};

}  // namespace gpubank::api
