// What kustomize makes of deploy/ (`kubectl kustomize`, kustomize v5 inside kubectl 1.27+):
// every kustomization builds, every object of the overlays validates against the CRD
// schemas, the CRDs it ships load as the API server would take them, the controller runs
// with each overlay's backend, store and replica count, and its permissions are exactly the
// expected ones. Skipped without kubectl (CI has none); manifests_test.cpp checks the files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "deploy_fixture.hpp"
#include "expectations.hpp"

namespace gpubank::deploy::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAreArray;

struct Overlay {
  std::string name, backend, store;
  int replicas;
};
const std::vector<Overlay> kOverlays{{"kueue-postgres", "kueue", "postgres", 2},
                                     {"kueue-sqlite", "kueue", "sqlite", 1},
                                     {"volcano-postgres", "volcano", "postgres", 2},
                                     {"volcano-sqlite", "volcano", "sqlite", 1}};

std::vector<Json> build(const std::string& dir) {
  const auto k = kustomize(dir);
  if (!k) return {};
  EXPECT_TRUE(k->ok) << dir << ":\n" << k->err;
  std::vector<Json> out;
  for (auto& d : read_stream(k->out, dir)) out.push_back(std::move(d.json));
  EXPECT_FALSE(out.empty()) << dir;
  return out;
}

std::vector<const Json*> of_kind(const std::vector<Json>& objects, const std::string& kind) {
  std::vector<const Json*> out;
  for (const auto& o : objects) {
    if (o.value("kind", "") == kind) out.push_back(&o);
  }
  return out;
}

TEST(DeployKustomize, EveryKustomizationBuilds) {
  if (!kustomize(deploy_dir() + "/crds")) GTEST_SKIP() << kNoKubectl;
  EXPECT_EQ(build(deploy_dir() + "/crds").size(), 6u);
  EXPECT_FALSE(build(deploy_dir() + "/webhook").empty());
  EXPECT_FALSE(build(deploy_dir() + "/base").empty());
  EXPECT_EQ(build(deploy_dir() + "/attribution").size(), 7u);
  EXPECT_EQ(build(deploy_dir() + "/serving").size(), 7u);  // ServiceAccount, 2 roles, 2 bindings, Deployment, Service
  for (const auto& o : kOverlays) EXPECT_FALSE(build(deploy_dir() + "/overlays/" + o.name).empty()) << o.name;
}

TEST(DeployKustomize, OverlayObjectsValidateAndTheirCrdsLoad) {
  if (!kustomize(deploy_dir() + "/crds")) GTEST_SKIP() << kNoKubectl;
  for (const auto& overlay : kOverlays) {
    const auto objects = build(deploy_dir() + "/overlays/" + overlay.name);
    std::map<std::string, int> validated;
    schema::SchemaSet own;
    Diagnostics diagnostics;
    for (const auto& o : objects) {
      const std::string kind = o.value("kind", "");
      if (kind == "CustomResourceDefinition") {
        EXPECT_EQ(own.add_crd(o, overlay.name, diagnostics), 1u) << ref(o);
      }
      if (schemas().contains(o.value("apiVersion", ""), kind)) {
        const schema::Result r = schemas().validate(o);
        EXPECT_TRUE(r.ok()) << overlay.name << " " << ref(o) << ":\n" << violations(r);
        ++validated[kind];
      }
      EXPECT_NE(kind, "Secret") << overlay.name << ": no Secret is shipped (" << ref(o) << ")";
    }
    EXPECT_TRUE(diagnostics.empty()) << describe(diagnostics);
    EXPECT_EQ(own.kinds().size() - schema::SchemaSet().kinds().size(), 6u) << overlay.name;
    EXPECT_EQ(validated["ConfigMap"], 2) << overlay.name;
  }
}

TEST(DeployKustomize, EachOverlayRunsTheControllerWithItsBackendAndStore) {
  if (!kustomize(deploy_dir() + "/crds")) GTEST_SKIP() << kNoKubectl;
  for (const auto& overlay : kOverlays) {
    SCOPED_TRACE(overlay.name);
    const auto objects = build(deploy_dir() + "/overlays/" + overlay.name);
    const auto deployments = of_kind(objects, "Deployment");
    ASSERT_EQ(deployments.size(), 1u);
    const Json& d = *deployments[0];
    EXPECT_EQ(d["spec"]["replicas"], overlay.replicas);
    const Json& pod = d["spec"]["template"]["spec"];
    const Json& c = pod["containers"][0];
    EXPECT_THAT(strings(c["args"]), ElementsAreArray(expected_controller_args(overlay.backend, overlay.store)));
    // One image, set once, for the controller and the webhook alike.
    for (const auto* workload : {&d, of_kind(objects, "StatefulSet").at(0)}) {
      for (const auto& container : (*workload)["spec"]["template"]["spec"]["containers"]) {
        EXPECT_EQ(container["image"], "ghcr.io/gpubank/gpubank:0.1.0") << ref(*workload);
      }
    }
    const auto claims = of_kind(objects, "PersistentVolumeClaim");
    std::map<std::string, Json> env;
    for (const auto& e : c["env"]) env[e["name"]] = e;
    if (overlay.store == "sqlite") {
      EXPECT_EQ(d["spec"]["strategy"], Json::parse(R"({"type":"Recreate"})"));
      ASSERT_EQ(claims.size(), 1u);
      EXPECT_EQ((*claims[0])["spec"]["accessModes"], Json::array({"ReadWriteOnce"}));
      bool mounted = false;
      for (const auto& m : c["volumeMounts"]) mounted = mounted || m["mountPath"] == "/var/lib/gpubank";
      EXPECT_TRUE(mounted);
      EXPECT_FALSE(env.contains("GPUBANK_STORE_URL"));
    } else {
      EXPECT_EQ(d["spec"]["strategy"]["type"], "RollingUpdate");
      EXPECT_TRUE(claims.empty());
      ASSERT_TRUE(env.contains("GPUBANK_STORE_URL"));
      const Json& secret = env["GPUBANK_STORE_URL"]["valueFrom"]["secretKeyRef"];
      EXPECT_EQ(secret.value("name", ""), "gpubank-postgres");
      EXPECT_EQ(secret.value("key", ""), "url");
      bool egress = false;
      for (const auto* p : of_kind(objects, "NetworkPolicy")) {
        egress = egress || (*p)["metadata"]["name"] == "gpubank-controller-postgres";
      }
      EXPECT_TRUE(egress) << "the controller may reach PostgreSQL";
    }
  }
}

TEST(DeployKustomize, EachOverlayGrantsTheControllerExactlyItsPermissions) {
  if (!kustomize(deploy_dir() + "/crds")) GTEST_SKIP() << kNoKubectl;
  for (const auto& overlay : kOverlays) {
    SCOPED_TRACE(overlay.name);
    const auto objects = build(deploy_dir() + "/overlays/" + overlay.name);
    for (const char* kind : {"Role", "ClusterRole"}) {
      for (const auto* role : of_kind(objects, kind)) expect_sane_role(*role);
    }
    const Grants g = controller_grants(objects);
    EXPECT_EQ(g, expected_controller_grants(overlay.backend)) << describe(g);
    // Nothing left bound to roles a backend does not use.
    for (const auto* b : of_kind(objects, "ClusterRoleBinding")) {
      const std::string role = (*b)["roleRef"]["name"];
      EXPECT_EQ(role.find(overlay.backend == "kueue" ? "volcano" : "kueue"), std::string::npos) << role;
    }
  }
}

// The opt-in monitoring component builds on an overlay, and its ServiceMonitors are valid
// monitoring.coreos.com/v1 objects that select a Service with a `health` port.
TEST(DeployKustomize, TheMonitoringComponentBuildsOnAnOverlay) {
  if (!kustomize(deploy_dir() + "/crds")) GTEST_SKIP() << kNoKubectl;
  const ScratchDir dir;
  const auto rel = [&](const std::string& p) { return fs::relative(p, dir.path() / "overlay").string(); };
  fs::create_directories(dir.path() / "overlay");
  dir.write("overlay/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [" +
                                              rel(deploy_dir() + "/overlays/kueue-postgres") + "]\ncomponents: [" +
                                              rel(deploy_dir() + "/components/monitoring") + "]\n");
  const auto objects = build((dir.path() / "overlay").string());
  const auto monitors = of_kind(objects, "ServiceMonitor");
  ASSERT_EQ(monitors.size(), 2u);
  for (const auto* m : monitors) {
    const schema::Result r = schemas().validate(*m);
    EXPECT_TRUE(r.ok()) << ref(*m) << ":\n" << violations(r);
    const Json& selector = (*m)["spec"]["selector"]["matchLabels"];
    int services = 0;
    for (const auto* s : of_kind(objects, "Service")) {
      bool match = true;
      for (const auto& [k, v] : selector.items()) match = match && (*s)["metadata"]["labels"].value(k, "") == v;
      bool health = false;
      for (const auto& p : (*s)["spec"]["ports"]) health = health || (p["name"] == "health" && p["port"] == 8081);
      if (match && health) ++services;
    }
    EXPECT_EQ(services, 1) << ref(*m);
  }
}

// The opt-in portal component builds on an overlay: the controller serves the portal on
// the port its Service and its NetworkPolicy name, and nothing else changes.
TEST(DeployKustomize, ThePortalComponentBuildsOnAnOverlay) {
  if (!kustomize(deploy_dir() + "/crds")) GTEST_SKIP() << kNoKubectl;
  const ScratchDir dir;
  const auto rel = [&](const std::string& p) { return fs::relative(p, dir.path() / "overlay").string(); };
  fs::create_directories(dir.path() / "overlay");
  dir.write("overlay/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [" +
                                              rel(deploy_dir() + "/overlays/kueue-sqlite") + "]\ncomponents: [" +
                                              rel(deploy_dir() + "/components/portal") + "]\n");
  const auto objects = build((dir.path() / "overlay").string());
  const Json* deployment = nullptr;
  for (const auto* d : of_kind(objects, "Deployment")) {
    if ((*d)["metadata"]["name"] == "gpubank-controller") deployment = d;
  }
  ASSERT_NE(deployment, nullptr);
  const Json& container = (*deployment)["spec"]["template"]["spec"]["containers"][0];
  std::vector<std::string> args;
  for (const auto& a : container["args"]) args.push_back(a.get<std::string>());
  std::vector<std::string> expected = expected_controller_args("kueue", "sqlite");
  expected.push_back("--api-port=8080");
  EXPECT_EQ(args, expected);
  bool container_port = false;
  for (const auto& p : container["ports"]) container_port |= p["name"] == "portal" && p["containerPort"] == 8080;
  EXPECT_TRUE(container_port) << container["ports"].dump();
  bool service_port = false;
  for (const auto* s : of_kind(objects, "Service")) {
    if ((*s)["metadata"]["name"] != "gpubank-controller") continue;
    for (const auto& p : (*s)["spec"]["ports"]) service_port |= p["name"] == "portal" && p["targetPort"] == "portal";
  }
  EXPECT_TRUE(service_port);
  bool policy = false;
  for (const auto* n : of_kind(objects, "NetworkPolicy")) {
    if ((*n)["metadata"]["name"] != "gpubank-portal") continue;
    policy = (*n)["spec"]["ingress"][0]["ports"][0]["port"] == 8080 &&
             (*n)["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "gpubank-controller";
  }
  EXPECT_TRUE(policy);
}

}  // namespace
}  // namespace gpubank::deploy::testing
