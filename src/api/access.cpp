#include "api/access.hpp"

#include <algorithm>

namespace gpubank::api {

namespace {

bool names_group(const Json& j, const char* key, const std::string& group) {
  return j.is_object() && j.contains(key) && j[key].is_string() && j[key].get<std::string>() == group;
}

void keep_if(Json& array, const std::function<bool(const Json&)>& keep) {
  if (!array.is_array()) return;
  Json kept = Json::array();
  for (auto& item : array) {
    if (keep(item)) kept.push_back(std::move(item));
  }
  array = std::move(kept);
}

}  // namespace

std::string_view need_name(Need need) {
  switch (need) {
    case Need::Read: return "read";
    case Need::Costs: return "costs";
    case Need::Audit: return "audit";
    case Need::Metrics: return "metrics";
    case Need::Operate: return "operate";
  }
  return "?";
}

bool allowed(auth::Role role, Need need) {
  using auth::Role;
  switch (need) {
    case Need::Read: return true;
    case Need::Costs: return role != Role::Viewer;
    case Need::Audit:
    case Need::Metrics: return role == Role::FinOps || role == Role::PlatformAdmin;
    case Need::Operate: return role == Role::PlatformAdmin;
  }
  return false;
}

std::string roles_allowed(Need need) {
  std::string out;
  for (auth::Role r : {auth::Role::Viewer, auth::Role::GroupAdmin, auth::Role::FinOps, auth::Role::PlatformAdmin}) {
    if (!allowed(r, need)) continue;
    out += (out.empty() ? "" : ", ") + std::string(auth::role_name(r));
  }
  return out;
}

std::optional<std::string> scope_of(const auth::Principal& who) {
  if (who.role == auth::Role::Viewer || who.role == auth::Role::GroupAdmin) return who.group;
  return std::nullopt;
}

void scope_gpus(Json& gpus, const std::string& group) {
  // Another group's workload is shown by group and state only: its name, pod and model go.
  auto hide = [&](Json& workloads) {
    if (!workloads.is_array()) return;
    for (Json& w : workloads) {
      if (names_group(w, "businessGroup", group) || !w.is_object()) continue;
      w.erase("workload");
      w.erase("pod");
      w.erase("modelName");
    }
  };
  auto one = [&](Json& gpu) {
    if (!gpu.is_object()) return;
    if (gpu.contains("workloads")) hide(gpu["workloads"]);
    if (gpu.contains("migSlices") && gpu["migSlices"].is_array()) {
      for (Json& slice : gpu["migSlices"]) {
        if (slice.is_object() && slice.contains("workloads")) hide(slice["workloads"]);
      }
    }
  };
  if (gpus.is_array()) {
    for (Json& g : gpus) one(g);
  } else {
    one(gpus);
  }
}

void scope_gpu_history(Json& history, const std::string& group) {
  if (!history.is_object()) return;
  if (history.contains("devices") && history["devices"].is_array()) {
    for (Json& d : history["devices"]) {
      if (!d.is_object() || !d.contains("samples") || !d["samples"].is_array()) continue;
      for (Json& x : d["samples"]) {
        if (x.is_object() && !x["workload"].is_null() && !names_group(x, "businessGroup", group)) x["workload"] = nullptr;
      }
    }
  }
  // Another group's workload events say when, what kind and whose; not which or why. The
  // GPU's own (XID) events stay.
  if (history.contains("markers") && history["markers"].is_array()) {
    for (Json& m : history["markers"]) {
      if (!m.is_object() || names_group(m, "businessGroup", group)) continue;
      if (m.contains("object") && m["object"].is_string() && m["object"].get<std::string>().starts_with("GPU/")) continue;
      m["object"] = nullptr;
      m["message"] = "";
      m["reason"] = "";
    }
  }
}

void scope_group_history(Json& history, const std::string& group) {
  if (!history.is_object() || !history.contains("markers") || !history["markers"].is_array()) return;
  for (Json& m : history["markers"]) {
    if (!m.is_object() || names_group(m, "businessGroup", group)) continue;
    if (!m.contains("object") || !m["object"].is_string() || !m["object"].get<std::string>().starts_with("Workload/")) continue;
    m["object"] = nullptr;
    m["message"] = "";
    m["reason"] = "";
  }
}

void scope_ledger(Json& page, const std::string& group) {
  if (!page.is_object() || !page.contains("items")) return;
  keep_if(page["items"], [&](const Json& e) { return names_group(e, "businessGroup", group) || names_group(e, "lender", group); });
}

void scope_alerts(Json& alerts, const std::string& group) {
  if (!alerts.is_object()) return;
  for (const char* list : {"open", "resolved"}) {
    if (!alerts.contains(list)) continue;
    keep_if(alerts[list], [&](const Json& a) { return a.is_object() && a.contains("evidence") && names_group(a["evidence"], "businessGroup", group); });
  }
  // The scan's counts are the whole cluster's: they say how many, never whose.
}

void scope_reclaims(Json& reclaims, const std::string& group, std::size_t limit) {
  keep_if(reclaims, [&](const Json& r) {
    if (names_group(r, "lender", group)) return true;
    if (!r.contains("victims")) return false;
    return std::any_of(r["victims"].begin(), r["victims"].end(), [&](const Json& v) { return names_group(v, "businessGroup", group); });
  });
  if (reclaims.is_array() && reclaims.size() > limit) reclaims.erase(reclaims.begin() + static_cast<std::ptrdiff_t>(limit), reclaims.end());
  for (Json& r : reclaims) {
    if (!r.contains("victims")) continue;
    for (Json& v : r["victims"]) {
      if (!names_group(v, "businessGroup", group)) v.erase("workload");
    }
  }
}

void scope_showback(Json& report, const std::string& group) {
  if (!report.is_object() || !report.contains("rows")) return;
  keep_if(report["rows"], [&](const Json& r) { return names_group(r, "businessGroup", group); });
}

std::optional<auth::Principal> principal_from_proxy(const policy::UserInfo& user,
                                                    const policy::PlatformGuardrailsSpec& guardrails,
                                                    const std::vector<policy::Subject>& finops) {
  if (user.username.empty()) return std::nullopt;
  const std::string id = "proxy:" + user.username;
  if (policy::is_platform_admin(user, guardrails)) return auth::Principal{user.username, auth::Role::PlatformAdmin, "", id};
  for (const policy::Group& g : guardrails.groups) {
    if (policy::is_group_admin(user, g)) return auth::Principal{user.username, auth::Role::GroupAdmin, g.name, id};
  }
  for (const policy::Subject& s : finops) {
    if (policy::matches(s, user)) return auth::Principal{user.username, auth::Role::FinOps, "", id};
  }
  for (const policy::Group& g : guardrails.groups) {
    for (const policy::Subject& s : g.members) {
      if (policy::matches(s, user)) return auth::Principal{user.username, auth::Role::Viewer, g.name, id};
    }
  }
  return std::nullopt;
}

}  // namespace gpubank::api
