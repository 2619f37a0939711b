// Who may read and change what through the platform's HTTP API (the portal's roles,
// issue 32). Pure: the server asks `allowed` before a handler runs and passes what it
// answers through the scoping filters below before it is sent.
//
//   Need          viewer        group-admin   finops   platform-admin
//   Read          own group*    own group*    all      all
//   Costs         -             own group**   all      all
//   Audit         -             -             all      all
//   Metrics       -             -             all      all
//   Operate       -             -             -        all
//
//   *  shared views (pools, groups' positions, queues, services, clock, KPIs, the team
//      leaderboard, group-level showback) are whole; workloads, events, alerts, the ledger
//      and who runs on a GPU are cut to the principal's group, and asking for another
//      group's is 403.
//   ** owner- and workload-level showback, cut to the own group.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <vector>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "auth/tokens.hpp"
#include "policy/authorize.hpp"
#include "policy/types.hpp"

namespace gpubank::api {

enum class Need { Read, Costs, Audit, Metrics, Operate };
[[nodiscard]] std::string_view need_name(Need need);

[[nodiscard]] bool allowed(auth::Role role, Need need);
// The roles that may, for messages ("finops or platform-admin").
[[nodiscard]] std::string roles_allowed(Need need);

// The group a principal's reads are cut to; none for finops and platform-admin.
[[nodiscard]] std::optional<std::string> scope_of(const auth::Principal& who);

using Json = nlohmann::ordered_json;

// GPU list or detail: a workload of another group keeps its group and state, not its name.
void scope_gpus(Json& gpus, const std::string& group);
// GET /api/v1/gpus/<uuid>/history for a scoped principal: samples held by another group
// lose the workload's name, markers of another group's workloads their object and text.
void scope_gpu_history(Json& history, const std::string& group);
// A group's position history (/api/v1/groups/<g>/history) as a caller scoped to `group`
// sees it: another group's workload events keep when, what kind and whose, not which or
// why; policy, lease and reclaim events stay (the policies are open to every role).
void scope_group_history(Json& history, const std::string& group);
// Ledger page: only entries where the group is the borrower/holder or the lender.
void scope_ledger(Json& page, const std::string& group);
// Alerts: only those whose evidence names the group (open and recent lists alike).
void scope_alerts(Json& alerts, const std::string& group);
// Reclaims: those the group started as lender or whose victims include its workloads, at
// most `limit`; other groups' victims lose their workload names.
void scope_reclaims(Json& reclaims, const std::string& group, std::size_t limit);
// Showback rows at owner/workload level: only the group's (totals and loans are per pool
// and group, and stay).
void scope_showback(Json& report, const std::string& group);

// OIDC-style sign-in by a reverse proxy (oauth2-proxy and the like): the proxy
// authenticates the person and passes who they are in headers; only requests from the
// addresses it is configured to come from are believed.
struct ProxyAuth {
  std::string user_header;    // e.g. X-Forwarded-User (or X-Forwarded-Email)
  std::string groups_header;  // e.g. X-Forwarded-Groups: comma-separated; may be empty
  std::set<std::string> trusted_from;  // the proxy's addresses as the server sees them
  std::vector<policy::Subject> finops;  // subjects ("user:x", "group:y") given the finops role
};

// The role of a proxied user from the guardrails' subjects ("user:<name>",
// "group:<group>"): platform-admin when spec.platformAdmins names them; else group-admin of
// the first business group whose admins name them; else finops when `finops` does; else
// viewer of the first group whose members name them; else none. token_id is
// "proxy:<user>" (the rate limit's and the audit's key).
[[nodiscard]] std::optional<auth::Principal> principal_from_proxy(const policy::UserInfo& user,
                                                                  const policy::PlatformGuardrailsSpec& guardrails,
                                                                  const std::vector<policy::Subject>& finops);

}  // namespace gpubank::api
