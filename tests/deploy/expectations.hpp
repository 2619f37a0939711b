// What the manifests must say, in one place for the file checks (manifests_test.cpp) and
// the checks of kustomize's output (kustomize_test.cpp): the controller's permissions per
// backend and its command line per overlay.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "deploy_fixture.hpp"

namespace gpubank::deploy::testing {

inline constexpr const char* kControllerAccount = "gpubank-controller";
inline constexpr const char* kSystemNamespace = "gpubank-system";

// One permission: "<namespace or *>|<apiGroup>|<resource>|<verb>".
using Grants = std::set<std::string>;

inline void grant(Grants& g, const std::string& ns, const std::string& group, const std::vector<std::string>& resources,
                  const std::vector<std::string>& verbs) {
  for (const auto& r : resources) {
    for (const auto& v : verbs) g.insert(ns + "|" + group + "|" + r + "|" + v);
  }
}

// Exactly what `gpubank controller` may do (deploy/README.md, "RBAC").
inline Grants expected_controller_grants(const std::string& backend) {
  const std::vector<std::string> rendered{"get", "list", "watch", "create", "patch", "delete"};
  const std::vector<std::string> kinds{"platformguardrails", "gpuquotapolicies", "inferencescalingpolicies",
                                       "tidalpolicies",      "capacityleases",   "lowutilizationpolicies"};
  std::vector<std::string> statuses;
  for (const auto& k : kinds) statuses.push_back(k + "/status");
  Grants g;
  grant(g, "*", "platform.gpubank.dev", kinds, {"get", "list", "watch"});
  grant(g, "*", "platform.gpubank.dev", statuses, {"update", "patch"});
  grant(g, "*", "scheduling.k8s.io", {"priorityclasses"}, rendered);
  grant(g, "*", "keda.sh", {"scaledobjects"}, rendered);
  grant(g, "*", "monitoring.coreos.com", {"prometheusrules"}, rendered);
  grant(g, "*", "serving.kserve.io", {"inferenceservices"}, {"get", "list", "watch", "patch"});
  grant(g, "*", "", {"nodes", "pods"}, {"get", "list", "watch"});
  grant(g, "*", "batch", {"jobs"}, {"patch"});
  grant(g, "*", "jobset.x-k8s.io", {"jobsets"}, {"patch"});
  grant(g, "*", "kubeflow.org", {"pytorchjobs"}, {"patch"});
  grant(g, "*", "ray.io", {"rayjobs"}, {"patch"});
  grant(g, "*", "events.k8s.io", {"events"}, {"create", "patch"});
  grant(g, kSystemNamespace, "", {"configmaps"}, rendered);
  grant(g, kSystemNamespace, "coordination.k8s.io", {"leases"}, {"get", "create", "update"});
  if (backend == "kueue") {
    grant(g, "*", "kueue.x-k8s.io", {"clusterqueues", "cohorts", "localqueues", "resourceflavors", "workloadpriorityclasses"},
          rendered);
    grant(g, "*", "kueue.x-k8s.io", {"workloads"}, {"get", "list", "watch", "patch"});
    grant(g, "kueue-system", "", {"configmaps"}, rendered);
  } else {
    grant(g, "*", "scheduling.volcano.sh", {"queues", "podgroups"}, rendered);
  }
  return g;
}

inline bool binds_controller(const Json& binding) {
  for (const auto& s : binding.value("subjects", Json::array())) {
    if (s.value("kind", "") == "ServiceAccount" && s.value("name", "") == kControllerAccount &&
        s.value("namespace", "") == kSystemNamespace) {
      return true;
    }
  }
  return false;
}

// What the bindings among `objects` give the controller's ServiceAccount. A binding to a
// role that is not among the objects is a failure.
inline Grants controller_grants(const std::vector<Json>& objects) {
  auto find_role = [&](const std::string& kind, const std::string& name, const std::string& ns) -> const Json* {
    for (const auto& o : objects) {
      if (o.value("kind", "") == kind && o["metadata"].value("name", "") == name &&
          (kind == "ClusterRole" || o["metadata"].value("namespace", "") == ns)) {
        return &o;
      }
    }
    return nullptr;
  };
  Grants g;
  for (const auto& b : objects) {
    const std::string kind = b.value("kind", "");
    if (kind != "RoleBinding" && kind != "ClusterRoleBinding") continue;
    if (!binds_controller(b)) continue;
    const std::string ns = kind == "RoleBinding" ? b["metadata"].value("namespace", "") : "*";
    const Json* role = find_role(b["roleRef"].value("kind", ""), b["roleRef"].value("name", ""), ns);
    if (role == nullptr) {
      ADD_FAILURE() << ref(b) << " binds " << b["roleRef"].dump() << ", which is not there";
      continue;
    }
    for (const auto& rule : role->value("rules", Json::array())) {
      for (const auto& group : rule.value("apiGroups", Json::array())) {
        for (const auto& resource : rule.value("resources", Json::array())) {
          for (const auto& verb : rule.value("verbs", Json::array())) {
            g.insert(ns + "|" + group.get<std::string>() + "|" + resource.get<std::string>() + "|" + verb.get<std::string>());
          }
        }
      }
    }
  }
  return g;
}

// Sanity for any Role or ClusterRole: no wildcards, nothing about Secrets, none of the
// verbs that hand out more rights.
inline void expect_sane_role(const Json& role) {
  const std::string who = ref(role);
  for (const auto& rule : role.value("rules", Json::array())) {
    EXPECT_FALSE(rule.contains("nonResourceURLs")) << who;
    for (const char* field : {"apiGroups", "resources", "verbs", "resourceNames"}) {
      for (const auto& v : rule.value(field, Json::array())) {
        const std::string s = v.get<std::string>();
        EXPECT_EQ(s.find('*'), std::string::npos) << who << " " << field << ": " << s;
        if (std::string(field) == "resources") {
          EXPECT_FALSE(s == "secrets" || s.starts_with("secrets/")) << who;
        }
        if (std::string(field) == "verbs") {
          EXPECT_TRUE(s != "escalate" && s != "bind" && s != "impersonate" && s != "deletecollection") << who << ": " << s;
        }
      }
    }
  }
}

inline std::string describe(const Grants& g) {
  std::string out;
  for (const auto& x : g) out += "  " + x + "\n";
  return out;
}

// The controller's command line (the base's; the backend-volcano component replaces the
// backend flag, the store components add --store).
inline std::vector<std::string> expected_controller_args(const std::string& backend, const std::string& store) {
  std::vector<std::string> args{"controller",
                                "--leader-elect",
                                "--leader-election-namespace=$(POD_NAMESPACE)",
                                "--identity=$(POD_NAME)",
                                "--backend=" + backend,
                                "--health-port=8081",
                                // takeover within 15 s of the leader dying: at most 10 s + 2.4 s
                                "--lease-duration=10",
                                "--renew-deadline=7",
                                "--retry-period=2"};
  if (store == "sqlite") args.push_back("--store=/var/lib/gpubank/gpubank.db");
  if (store == "postgres") args.push_back("--store=$(GPUBANK_STORE_URL)");
  return args;
}

inline std::vector<std::string> strings(const Json& list) {
  std::vector<std::string> out;
  for (const auto& v : list) out.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

}  // namespace gpubank::deploy::testing
