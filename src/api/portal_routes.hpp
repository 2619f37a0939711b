// The routes `gpubank up` and `gpubank controller` serve alike (portal_routes.cpp):
// browser sessions, the portal's page and assets, the policies in force and self-service
// changes. What differs between the two is a PolicyHost: where a change in force goes (the
// running day, or the cluster by server-side apply) and what an impact preview replays.
// Internal to src/api.
#pragma once

#include <httplib.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/platform_http.hpp"
#include "proposals/proposals.hpp"
#include "core/expected.hpp"
#include "twin/preview/preview.hpp"

namespace gpubank::api::http {

// Body limits, timeouts and the security headers on every answer.
void harden(httplib::Server& svr);

// POST/GET/DELETE /api/v1/session. `server` goes into each session answer as "server": what
// kind of server this is and which portal pages it serves ({"kind": "twin"} or
// {"kind": "controller", "pages": [...]}).
void install_session_routes(httplib::Server& svr, auth::Gate* gate, const Door* door, Json server);

// GET / and /portal/...: the built-in assets, or the files of `portal_dir` when set.
void install_portal_routes(httplib::Server& svr, std::string portal_dir);

struct PreviewRange {
  std::int64_t default_hours = 24, max_hours = 24;
  std::string what;  // "the day's hours", "the recorded week"
};

struct PolicyHost {
  // Before each read of the desk (the controller rebases it on the cluster's objects).
  std::function<void(proposals::Desk&)> refresh;
  // The version of the set the server runs, when it differs from the desk's ("runningVersion").
  std::function<std::optional<std::string>()> running_version;
  // A change in force: what the server did with it, answered under `effect_field`.
  std::string effect_field = "running";
  std::function<Json(const proposals::Proposal&, const auth::Principal&)> take_effect;
  // How many hours an impact preview may replay; none: the preview is off, and
  // `preview_off` says why.
  std::function<std::optional<PreviewRange>()> preview_range;
  // The work of `hours` both runs replay (the day, or the recorded work), given the set in
  // force; an error says why there is none.
  std::function<Expected<twin::preview::Work>(std::int64_t hours, const policy::PolicySet& in_force)> preview_work;
  std::string preview_off;
  std::shared_ptr<std::atomic<bool>> previewing = std::make_shared<std::atomic<bool>>(false);  // one at a time
};

// GET /api/v1/policies[/<Kind>/<name>], POST /api/v1/proposals/preview,
// GET/POST /api/v1/proposals, GET /api/v1/proposals/<id>, POST .../<id>/approve|reject.
void install_policy_routes(httplib::Server& svr, const Door* door, proposals::Desk* desk, PolicyHost host);

}  // namespace gpubank::api::http
