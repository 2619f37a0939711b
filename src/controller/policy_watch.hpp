// The cluster's gpubank resources, watched: informers on the six kinds and a callback with
// the decoded set after every change (coalesced). What the webhook judges against when it
// takes its policies from the cluster (`gpubank webhook --policies-from-cluster`), so that
// cross-object rules (the guarantees within a pool add up to at most its capacity) hold for
// objects created with kubectl, GitOps or anything else that reaches the API server.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/policy_source.hpp"
#include "core/expected.hpp"
#include "k8s/apply.hpp"
#include "k8s/client_config.hpp"
#include "k8s/informer.hpp"

namespace gpubank::controller {

// The six platform.gpubank.dev/v1alpha1 kinds, in API order.
[[nodiscard]] std::vector<k8s::InformedKind> policy_kinds();
// Every object in the informers' current snapshots, with apiVersion and kind filled in.
[[nodiscard]] std::vector<nlohmann::json> snapshot_objects(const k8s::InformerSet& informers);

class PolicyWatch {
 public:
  using OnChange = std::function<void(ClusterPolicies)>;

  // Discovery, then informers for the six kinds; fails naming a kind whose CRD is missing.
  [[nodiscard]] static Expected<std::unique_ptr<PolicyWatch>> create(const k8s::ClientConfig& config, OnChange on_change,
                                                                     std::chrono::milliseconds debounce = std::chrono::milliseconds(100));
  ~PolicyWatch();  // stop()
  PolicyWatch(const PolicyWatch&) = delete;
  PolicyWatch& operator=(const PolicyWatch&) = delete;

  // Starts the informers, waits until they synced (or `timeout`), delivers the first set on
  // this thread, then delivers each change on a thread of its own.
  [[nodiscard]] Expected<bool> start(std::chrono::milliseconds timeout);
  void stop();
  // Informers that died (RBAC, repeated failures): their errors, one line each; empty while healthy.
  [[nodiscard]] std::vector<std::string> errors() const;

 private:
  struct Impl;
  explicit PolicyWatch(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpubank::controller
