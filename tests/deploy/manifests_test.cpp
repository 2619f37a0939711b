// deploy/ as files, without kubectl (CI has none): every YAML file reads, every
// kustomization refers to what exists and every manifest is reachable from one, objects
// of kinds with a schema (../shared/crds, deploy/crds, the built-in ones) validate, the
// RBAC is least privilege and grants the controller exactly what it needs, and the
// controller's Deployment runs the command and has the settings the README promises.
// kustomize_test.cpp checks what kustomize makes of it, where kubectl is installed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "deploy_fixture.hpp"
#include "expectations.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

namespace gpubank::deploy::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

const std::vector<Doc>& all_docs() {
  static const std::vector<Doc> docs = read_docs({deploy_dir()});
  return docs;
}

bool is_kustomization(const std::string& file) { return fs::path(file).filename() == "kustomization.yaml"; }

std::string real_path(const fs::path& p) {
  std::error_code ec;
  const auto c = fs::weakly_canonical(p, ec);
  return (ec ? p : c).string();
}

const Json* kustomization_of(const std::string& dir) {
  const std::string file = real_path(fs::path(dir) / "kustomization.yaml");
  for (const auto& d : all_docs()) {
    if (real_path(d.file) == file) return &d.json;
  }
  return nullptr;
}

// The files a kustomization directory uses, transitively: resources (files, or
// directories with their own kustomization), components, patch files.
void reachable(const std::string& dir, std::set<std::string>& files, std::set<std::string>& patches,
               std::set<std::string>& seen) {
  if (!seen.insert(real_path(dir)).second) return;
  const Json* k = kustomization_of(dir);
  if (k == nullptr) return;
  for (const char* field : {"resources", "components"}) {
    for (const auto& entry : k->value(field, Json::array())) {
      const fs::path p = fs::path(dir) / entry.get<std::string>();
      if (fs::is_directory(p)) {
        reachable(p.string(), files, patches, seen);
      } else {
        files.insert(real_path(p));
      }
    }
  }
  for (const auto& patch : k->value("patches", Json::array())) {
    if (patch.contains("path")) patches.insert(real_path(fs::path(dir) / patch["path"].get<std::string>()));
  }
}

TEST(DeployManifests, EveryYamlFileReads) {
  EXPECT_GT(all_docs().size(), 50u);
  for (const auto& d : all_docs()) EXPECT_TRUE(d.json.is_object()) << d.file << " #" << d.index;
}

TEST(DeployManifests, KustomizationsReferOnlyToWhatExists) {
  std::size_t kustomizations = 0;
  for (const auto& d : all_docs()) {
    if (!is_kustomization(d.file)) continue;
    ++kustomizations;
    const fs::path dir = fs::path(d.file).parent_path();
    const bool component = dir.parent_path().filename() == "components";
    EXPECT_EQ(d.json.value("kind", ""), component ? "Component" : "Kustomization") << d.file;
    EXPECT_EQ(d.json.value("apiVersion", ""),
              component ? "kustomize.config.k8s.io/v1alpha1" : "kustomize.config.k8s.io/v1beta1")
        << d.file;
    for (const auto& entry : d.json.value("resources", Json::array())) {
      const fs::path p = dir / entry.get<std::string>();
      EXPECT_TRUE(fs::exists(p)) << d.file << ": resources: " << entry;
      if (fs::is_directory(p)) {
        const Json* k = kustomization_of(p.string());
        ASSERT_NE(k, nullptr) << d.file << ": resources: " << entry << " has no kustomization.yaml";
        EXPECT_EQ(k->value("kind", ""), "Kustomization") << d.file << ": " << entry << " (components go in components:)";
      }
    }
    for (const auto& entry : d.json.value("components", Json::array())) {
      const Json* k = kustomization_of((dir / entry.get<std::string>()).string());
      ASSERT_NE(k, nullptr) << d.file << ": components: " << entry;
      EXPECT_EQ(k->value("kind", ""), "Component") << d.file << ": " << entry;
    }
    for (const auto& patch : d.json.value("patches", Json::array())) {
      EXPECT_TRUE(patch.contains("path") != patch.contains("patch")) << d.file << ": " << patch.dump();
      if (patch.contains("path")) {
        EXPECT_TRUE(fs::exists(dir / patch["path"].get<std::string>())) << d.file << ": " << patch;
      }
    }
  }
  EXPECT_EQ(kustomizations, 14u);  // crds, webhook, base, attribution, serving, 5 components, 4 overlays
  // The overlays: the base, at most one backend component, exactly one store.
  for (const char* overlay : {"kueue-postgres", "kueue-sqlite", "volcano-postgres", "volcano-sqlite"}) {
    const Json* k = kustomization_of(deploy_dir() + "/overlays/" + overlay);
    ASSERT_NE(k, nullptr) << overlay;
    EXPECT_EQ(k->value("resources", Json::array()), Json::array({"../../base"})) << overlay;
    const std::string name = overlay;
    std::vector<std::string> components;
    if (name.starts_with("volcano")) components.push_back("../../components/backend-volcano");
    components.push_back("../../components/store-" + name.substr(name.find('-') + 1));
    EXPECT_THAT(strings(k->value("components", Json::array())), ElementsAreArray(components)) << overlay;
  }
}

// Every manifest under deploy/ is used by some overlay (or by the opt-in monitoring
// component): nothing was forgotten in a resources list.
TEST(DeployManifests, EveryManifestIsReachableFromAnOverlay) {
  std::set<std::string> files, patches, seen;
  for (const char* overlay : {"kueue-postgres", "kueue-sqlite", "volcano-postgres", "volcano-sqlite"}) {
    reachable(deploy_dir() + "/overlays/" + overlay, files, patches, seen);
  }
  reachable(deploy_dir() + "/components/monitoring", files, patches, seen);
  reachable(deploy_dir() + "/components/portal", files, patches, seen);
  reachable(deploy_dir() + "/attribution", files, patches, seen);
  reachable(deploy_dir() + "/serving", files, patches, seen);
  std::set<std::string> yaml_files;
  for (const auto& d : all_docs()) {
    if (!is_kustomization(d.file)) yaml_files.insert(real_path(d.file));
  }
  for (const auto& f : yaml_files) EXPECT_TRUE(files.contains(f) || patches.contains(f)) << f << " is used by no kustomization";
  for (const auto& f : files) EXPECT_TRUE(yaml_files.contains(f)) << f;
}

// The objects deploy/ ships (not the partial objects of patches).
std::vector<Json> shipped_objects() {
  std::set<std::string> files, patches, seen;
  for (const auto& d : all_docs()) {
    if (is_kustomization(d.file)) reachable(fs::path(d.file).parent_path().string(), files, patches, seen);
  }
  std::vector<Json> out;
  for (const auto& d : all_docs()) {
    if (!is_kustomization(d.file) && !patches.contains(real_path(d.file))) out.push_back(d.json);
  }
  return out;
}

bool cluster_scoped(const std::string& kind) {
  static const std::set<std::string> kinds{"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                                           "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "PriorityClass"};
  return kinds.contains(kind);
}

TEST(DeployManifests, ObjectsValidateAgainstTheirSchemasAndNameTheirNamespace) {
  std::map<std::string, int> validated;
  for (const Json& o : shipped_objects()) {
    const std::string kind = o.value("kind", "");
    ASSERT_TRUE(o.contains("metadata") && o["metadata"].contains("name")) << ref(o);
    // Objects name their namespace themselves (deploy/webhook/kustomization.yaml, why).
    EXPECT_EQ(o["metadata"].contains("namespace"), !cluster_scoped(kind)) << ref(o);
    EXPECT_EQ(o["metadata"].value("labels", Json::object()).value("app.kubernetes.io/part-of", ""), "gpubank") << ref(o);
    if (!schemas().contains(o.value("apiVersion", ""), kind)) continue;
    const schema::Result r = schemas().validate(o);
    EXPECT_TRUE(r.ok()) << ref(o) << ":\n" << violations(r);
    ++validated[kind];
  }
  EXPECT_EQ(validated["ServiceMonitor"], 2);
  EXPECT_EQ(validated["ConfigMap"], 2);
}

// RBAC: no wildcards, no Secrets, nothing bound to the webhook, and the controller gets
// exactly its permissions with either backend.
TEST(DeployManifests, RbacIsLeastPrivilege) {
  std::vector<Json> base, volcano_component;
  for (const auto& d : all_docs()) {
    if (is_kustomization(d.file)) continue;
    const std::string kind = d.json.value("kind", "");
    if (kind == "Role" || kind == "ClusterRole") expect_sane_role(d.json);
    if (kind.ends_with("Binding")) {
      for (const auto& s : d.json.value("subjects", Json::array())) {
        EXPECT_NE(s.value("name", ""), "gpubank-webhook") << ref(d.json) << ": the webhook needs no API access";
      }
    }
    if (d.file.find("/deploy/base/") != std::string::npos) base.push_back(d.json);
    if (d.file.find("/components/backend-volcano/") != std::string::npos) volcano_component.push_back(d.json);
  }
  const Grants kueue = controller_grants(base);
  EXPECT_EQ(kueue, expected_controller_grants("kueue")) << describe(kueue);
  // backend-volcano deletes these four objects of the base (its inline `$patch: delete`s)
  // and adds its own role.
  const Json* component = kustomization_of(deploy_dir() + "/components/backend-volcano");
  ASSERT_NE(component, nullptr);
  std::set<std::string> deleted;
  for (const auto& p : component->value("patches", Json::array())) {
    if (!p.contains("patch")) continue;
    const auto docs = read_stream(p["patch"].get<std::string>(), "patch");
    for (const auto& d : docs) {
      // (The JSON patch of the args is a list, not an object.)
      if (d.json.is_object() && d.json.value("$patch", "") == "delete") deleted.insert(ref(d.json));
    }
  }
  EXPECT_EQ(deleted, (std::set<std::string>{"ClusterRole/gpubank-controller-kueue", "ClusterRoleBinding/gpubank-controller-kueue",
                                            "Role/kueue-system/gpubank-controller-kueue-config",
                                            "RoleBinding/kueue-system/gpubank-controller-kueue-config"}));
  std::vector<Json> volcano;
  for (const auto& o : base) {
    if (!deleted.contains(ref(o))) volcano.push_back(o);
  }
  volcano.insert(volcano.end(), volcano_component.begin(), volcano_component.end());
  const Grants with_volcano = controller_grants(volcano);
  EXPECT_EQ(with_volcano, expected_controller_grants("volcano")) << describe(with_volcano);
}

const Json& find_object(const std::vector<Json>& objects, const std::string& kind, const std::string& name) {
  for (const auto& o : objects) {
    if (o.value("kind", "") == kind && o["metadata"].value("name", "") == name) return o;
  }
  static const Json none;
  ADD_FAILURE() << "no " << kind << "/" << name;
  return none;
}

TEST(DeployManifests, TheControllerRunsLeaderElectedWithProbesAndARestrictedSecurityContext) {
  const auto objects = shipped_objects();
  const Json& deployment = find_object(objects, "Deployment", "gpubank-controller");
  ASSERT_TRUE(deployment.is_object());
  EXPECT_EQ(deployment["spec"]["replicas"], 2);
  const Json& pod = deployment["spec"]["template"]["spec"];
  ASSERT_EQ(pod["containers"].size(), 1u);
  const Json& c = pod["containers"][0];
  EXPECT_THAT(strings(c["args"]), ElementsAreArray(expected_controller_args("kueue", "")));
  EXPECT_EQ(c["image"], "ghcr.io/gpubank/gpubank");  // tagged by the base's `images:`
  std::map<std::string, std::string> env;
  for (const auto& e : c["env"]) env[e["name"]] = e["valueFrom"]["fieldRef"].value("fieldPath", "");
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"POD_NAME", "metadata.name"}, {"POD_NAMESPACE", "metadata.namespace"}}));
  EXPECT_EQ(c["ports"], Json::parse(R"([{"name":"health","containerPort":8081,"protocol":"TCP"}])"));
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"], "/healthz");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"], "/readyz");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["port"], "health");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["port"], "health");
  EXPECT_TRUE(c["resources"].contains("requests") && c["resources"].contains("limits"));
  EXPECT_EQ(pod["serviceAccountName"], kControllerAccount);
  // Restricted, like the webhook's StatefulSet.
  const Json& webhook = find_object(objects, "StatefulSet", "gpubank-webhook")["spec"]["template"]["spec"];
  EXPECT_EQ(c["securityContext"], webhook["containers"][0]["securityContext"]);
  for (const char* key : {"runAsNonRoot", "runAsUser", "runAsGroup", "seccompProfile"}) {
    EXPECT_EQ(pod["securityContext"][key], webhook["securityContext"][key]) << key;
  }
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], Json::array({"ALL"}));
  EXPECT_EQ(pod["topologySpreadConstraints"].size(), 2u);
  // The Service and the PodDisruptionBudget select these pods.
  const Json labels = deployment["spec"]["template"]["metadata"]["labels"];
  for (const Json* selector : {&find_object(objects, "Service", "gpubank-controller")["spec"]["selector"],
                               &find_object(objects, "PodDisruptionBudget", "gpubank-controller")["spec"]["selector"]["matchLabels"],
                               &deployment["spec"]["selector"]["matchLabels"]}) {
    for (const auto& [k, v] : selector->items()) EXPECT_EQ(labels.value(k, ""), v) << k;
  }
  // The image is set in one place.
  const Json* base = kustomization_of(deploy_dir() + "/base");
  ASSERT_NE(base, nullptr);
  ASSERT_EQ((*base)["images"].size(), 1u);
  EXPECT_EQ((*base)["images"][0]["name"], "ghcr.io/gpubank/gpubank");
}

// deploy/docker/Dockerfile builds with packages scripts/bootstrap.sh installs (the
// developers' and CI's list), from the release preset, and runs as 65532.
// Attribution (issue 30): metasync may only read Pods; the exporter holds no Kubernetes
// credentials (no token mounted) and reads the kubelet's socket read-only.
TEST(DeployManifests, MetasyncOnlyReadsPodsAndTheExporterHoldsNoCredentials) {
  const auto objects = shipped_objects();
  const Json& role = find_object(objects, "ClusterRole", "gpubank-metasync");
  ASSERT_TRUE(role.is_object());
  EXPECT_EQ(role["rules"], Json::parse(R"([{"apiGroups":[""],"resources":["pods"],"verbs":["get","list","watch"]}])"));
  const Json& daemonset = find_object(objects, "DaemonSet", "gpubank-exporter");
  ASSERT_TRUE(daemonset.is_object());
  const Json& pod = daemonset["spec"]["template"]["spec"];
  EXPECT_EQ(pod["automountServiceAccountToken"], false);
  EXPECT_FALSE(pod.contains("serviceAccountName"));
  const Json& c = pod["containers"][0];
  EXPECT_EQ(c["args"][0], "exporter");
  for (const auto& m : c["volumeMounts"]) EXPECT_EQ(m.value("readOnly", false), true) << m.dump();
  for (const auto& v : pod["volumes"]) EXPECT_FALSE(v.contains("projected")) << v.dump();
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], Json::parse(R"(["ALL"])"));
}

// The serving autoscaler (issue 33): two leader-elected replicas whose flags the command
// takes, that may write only the scale subresource, pods (the deletion cost) and Events,
// and hold their Lease in their own namespace only.
TEST(DeployManifests, TheServingAutoscalerIsLeaderElectedAndMayOnlyScale) {
  const auto objects = shipped_objects();
  const Json& deployment = find_object(objects, "Deployment", "gpubank-serving-customer-service-llm");
  ASSERT_TRUE(deployment.is_object());
  EXPECT_EQ(deployment["spec"]["replicas"], 2);
  const Json& pod = deployment["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"], "gpubank-serving");
  const Json& c = pod["containers"][0];
  const auto args = strings(c["args"]);
  ASSERT_GE(args.size(), 2u);
  EXPECT_EQ(args[0], "serving");
  EXPECT_EQ(args[1], "autoscale");
  EXPECT_THAT(args, ::testing::Contains("--leader-elect"));
  EXPECT_THAT(args, ::testing::Contains("--listen=0.0.0.0:8080"));
  // Every flag is one the command takes (its --help names it).
  const auto help = gpubank::testing::run_process({gpubank::testing::binary_dir() + "/cmd/gpubank/gpubank", "serving", "autoscale", "--help"});
  ASSERT_EQ(help.status, 0);
  for (std::size_t i = 2; i < args.size(); ++i) {
    const std::string flag = args[i].substr(0, args[i].find('='));
    EXPECT_NE(help.out.find(flag == "--output" ? "--output" : flag), std::string::npos) << flag;
  }
  EXPECT_EQ(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name");  // POD_NAME: the identity
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"], "/healthz");
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true);

  const Json& role = find_object(objects, "ClusterRole", "gpubank-serving");
  std::set<std::string> grants;
  for (const auto& rule : role["rules"]) {
    for (const auto& g : rule["apiGroups"]) {
      for (const auto& r : rule["resources"]) {
        for (const auto& v : rule["verbs"]) {
          grants.insert(g.get<std::string>() + "/" + r.get<std::string>() + ":" + v.get<std::string>());
        }
      }
    }
  }
  const std::set<std::string> expected{
      "apps/deployments:get", "apps/deployments/scale:get", "apps/deployments/scale:update",
      "leaderworkerset.x-k8s.io/leaderworkersets:get", "leaderworkerset.x-k8s.io/leaderworkersets/scale:get",
      "leaderworkerset.x-k8s.io/leaderworkersets/scale:update", "autoscaling/horizontalpodautoscalers:list",
      "/nodes:get", "/nodes:list", "/nodes:watch", "/pods:get", "/pods:list", "/pods:watch", "/pods:patch",
      "events.k8s.io/events:create", "events.k8s.io/events:patch"};
  EXPECT_EQ(grants, expected);
  const Json& lease_role = find_object(objects, "Role", "gpubank-serving-leader-election");
  EXPECT_EQ(lease_role["metadata"]["namespace"], "gpubank-system");
  EXPECT_EQ(lease_role["rules"], Json::parse(R"([{"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["get","create","update"]}])"));
  // The Service selects these pods.
  const Json labels = deployment["spec"]["template"]["metadata"]["labels"];
  for (const auto& [k, v] : find_object(objects, "Service", "gpubank-serving-customer-service-llm")["spec"]["selector"].items()) {
    EXPECT_EQ(labels.value(k, ""), v) << k;
  }
}

TEST(DeployManifests, TheDockerfileBuildsWhatTheRepositoryBuilds) {
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string dockerfile = read(deploy_dir() + "/docker/Dockerfile");
  const std::string bootstrap = read(gpubank::testing::source_dir() + "/scripts/bootstrap.sh");
  ASSERT_FALSE(dockerfile.empty());
  ASSERT_FALSE(bootstrap.empty());
  // The package names of the builder's apt-get install (up to the runtime stage).
  const std::string builder = dockerfile.substr(0, dockerfile.find("FROM debian:12-slim"));
  const auto install = builder.find("--no-install-recommends");
  ASSERT_NE(install, std::string::npos);
  std::stringstream words(builder.substr(install, builder.find("&&", install) - install));
  std::string word;
  std::size_t packages = 0;
  while (words >> word) {
    if (word == "--no-install-recommends" || word == "\\") continue;
    ++packages;
    EXPECT_NE(bootstrap.find(" " + word), std::string::npos) << word << " is not in scripts/bootstrap.sh";
  }
  EXPECT_GT(packages, 10u);
  EXPECT_THAT(dockerfile, HasSubstr("FROM debian:12 AS build"));
  EXPECT_THAT(dockerfile, HasSubstr("cmake --preset release"));
  EXPECT_THAT(dockerfile, HasSubstr("--target gpubank"));
  EXPECT_THAT(dockerfile, HasSubstr("USER 65532:65532"));
  EXPECT_THAT(dockerfile, HasSubstr(R"(ENTRYPOINT ["/usr/local/bin/gpubank"])"));
  const std::string ignore = read(gpubank::testing::source_dir() + "/.dockerignore");
  for (const char* kept : {"!CMakeLists.txt", "!CMakePresets.json", "!cmake/", "!cmd/", "!proto/", "!src/"}) {
    EXPECT_THAT(ignore, HasSubstr(kept));
  }
}

}  // namespace
}  // namespace gpubank::deploy::testing
