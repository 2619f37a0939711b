// Shared by the controller tests: a FAKE API server (tests/support/fake_apiserver.hpp, not a
// Kubernetes API server) with the CRDs of the engines gpubank renders for (Kueue's
// ResourceFlavor and WorkloadPriorityClass, KEDA, KServe, the Prometheus operator: the
// upstream files in ../shared/crds with their schemas left out, since the fake does not
// validate), and the example policies put in as the cluster's gpubank resources.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "document/loader.hpp"
#include "document/node.hpp"
#include "k8s/apply.hpp"
#include "k8s/fake_client.hpp"
#include "k8s/fixture.hpp"
#include "policy/decode.hpp"
#include "policy/lease_approval.hpp"
#include "support/fake_apiserver.hpp"
#include "support/kubeconfig.hpp"
#include "support/paths.hpp"

namespace gpubank::controller::testing {

using gpubank::testing::write_kubeconfig;

using gpubank::k8s::testing::config_for;
using gpubank::k8s::testing::make_transport;
using gpubank::k8s::testing::SleepLog;
using gpubank::testing::FakeApiServer;

inline std::vector<nlohmann::json> read_objects(const std::vector<std::string>& paths) {
  std::vector<doc::Document> docs;
  Diagnostics diagnostics;
  doc::load_paths(paths, docs, diagnostics, doc::ReadLimits{std::size_t{64} << 20, 256, 20'000'000});
  for (const Diagnostic& d : diagnostics) ADD_FAILURE() << d.to_string();
  std::vector<nlohmann::json> out;
  for (const doc::Document& d : docs) out.push_back(doc::to_json(d.root));
  return out;
}

// The example policies with ads-holiday-retrain (8 more guaranteed GPUs for ads on
// h100-rdma-training, 2026-12-19 00:00-20:00 UTC) approved, as its approver would write it.
inline std::vector<nlohmann::json> examples_with_approved_lease() {
  std::vector<nlohmann::json> objects = read_objects({gpubank::testing::examples_dir() + "/policies"});
  for (nlohmann::json& o : objects) {
    if (o["kind"] != "CapacityLease" || o["metadata"]["name"] != "ads-holiday-retrain") continue;
    Diagnostics ignored;
    const auto decoded = policy::decode_policy(doc::from_json(o), policy::Origin{}, ignored);
    o["status"] = {{"phase", "Approved"},
                   {"approval",
                    {{"approvedBy", "user:pat"},
                     {"specHash", policy::lease_spec_hash(decoded->as<policy::CapacityLeaseSpec>())},
                     {"approvedAt", "2026-12-18T09:00:00Z"}}}};
  }
  return objects;
}

// The upstream CRDs for the kinds the fake does not serve by itself, without schemas;
// read once per process (the KServe file alone is 2 MB).
inline const std::vector<nlohmann::json>& engine_crds() {
  static const std::vector<nlohmann::json> crds = [] {
    const std::string dir = gpubank::testing::shared_dir() + "/crds/";
    std::vector<nlohmann::json> out = read_objects({dir + "kueue/kueue.x-k8s.io_resourceflavors.yaml",
                                                    dir + "kueue/kueue.x-k8s.io_workloadpriorityclasses.yaml",
                                                    dir + "keda/keda.sh_scaledobjects.yaml",
                                                    dir + "kserve/serving.kserve.io_inferenceservices.yaml",
                                                    dir + "monitoring/monitoring.coreos.com_prometheusrules.yaml"});
    for (nlohmann::json& crd : out) {
      for (nlohmann::json& version : crd["spec"]["versions"]) version.erase("schema");
    }
    return out;
  }();
  return crds;
}

class ClusterFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = std::make_unique<FakeApiServer>(fake_options());
    transport_ = make_transport(config_for(*fake_), sleeps_);
    ASSERT_NE(transport_, nullptr);
    auto bootstrap = k8s::discover(*transport_);
    ASSERT_TRUE(bootstrap.ok()) << bootstrap.error().describe();
    for (const nlohmann::json& crd : engine_crds()) {
      auto target = k8s::apply_request(*bootstrap, crd);
      ASSERT_TRUE(target.ok()) << target.error();
      auto applied = transport_->apply(target->path, target->body);
      ASSERT_TRUE(applied.ok()) << applied.error().describe();
    }
    rediscover();
  }

  // The fake's options (a suite that needs its clock near the wall clock overrides it).
  [[nodiscard]] virtual FakeApiServer::Options fake_options() const { return {}; }

  void rediscover() {
    auto mapper = k8s::discover(*transport_);
    ASSERT_TRUE(mapper.ok()) << mapper.error().describe();
    mapper_ = std::move(*mapper);
  }

  // Puts gpubank resources (from files) into the fake, as `kubectl create` would.
  void put_policies(const std::vector<std::string>& paths) {
    for (nlohmann::json& object : read_objects(paths)) put_object(std::move(object));
  }
  nlohmann::json put_object(nlohmann::json object) {
    auto mapping = mapper_.find(object.value("apiVersion", ""), object.value("kind", ""));
    EXPECT_TRUE(mapping.ok()) << (mapping.ok() ? "" : mapping.error());
    return fake_->put(mapping->resource, std::move(object));
  }
  [[nodiscard]] std::vector<nlohmann::json> objects(const std::string& api_version, const std::string& kind) const {
    auto mapping = mapper_.find(api_version, kind);
    EXPECT_TRUE(mapping.ok());
    return fake_->objects(mapping->resource);
  }

  SleepLog sleeps_;
  std::unique_ptr<FakeApiServer> fake_;
  std::unique_ptr<k8s::Transport> transport_;
  k8s::RestMapper mapper_;
};

}  // namespace gpubank::controller::testing
