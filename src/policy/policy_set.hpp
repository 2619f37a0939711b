// A policy set: every object of the given files, decoded, in load order. Policies are
// typed; workloads (pods, jobs, deployments, ...) are kept as documents for the workload
// rules; everything else is listed as skipped.
#pragma once

#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "document/node.hpp"
#include "document/reader.hpp"
#include "policy/types.hpp"

namespace gpubank::policy {

struct WorkloadManifest {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string namespace_;
  doc::Node root;
  Origin origin;
};

struct ObjectEntry {
  enum class Category {
    Policy,    // decoded into policies[index]
    Workload,  // kept as workloads[index]
    Skipped,   // not gpubank's: listed only
    Rejected,  // could not be decoded (its errors are in diagnostics)
  };
  Category category = Category::Rejected;
  std::string api_version;
  std::string kind;
  std::string name;
  std::string namespace_;
  Origin origin;
  int index = -1;
};

class PolicySet {
 public:
  // Adds one document; a Kubernetes List adds each of its items.
  void add(const doc::Node& root, const std::string& file, int document);
  // Adds an already decoded policy (the webhook's object under review).
  void add(PolicyObject object);

  [[nodiscard]] const std::vector<PolicyObject>& policies() const { return policies_; }
  [[nodiscard]] const std::vector<WorkloadManifest>& workloads() const { return workloads_; }
  [[nodiscard]] const std::vector<ObjectEntry>& entries() const { return entries_; }
  // Findings of reading and decoding (semantic validation is validate()'s).
  [[nodiscard]] const Diagnostics& diagnostics() const { return diagnostics_; }
  Diagnostics& diagnostics() { return diagnostics_; }

  // The first PlatformGuardrails, if any.
  [[nodiscard]] const PolicyObject* guardrails() const;
  [[nodiscard]] const PlatformGuardrailsSpec* guardrails_spec() const;
  [[nodiscard]] const PolicyObject* find(Kind kind, std::string_view name) const;

  // Replaces the policy of the same kind and name, or adds it. Returns whether one was
  // replaced. (The webhook checks a change against the set it would produce.)
  bool upsert(PolicyObject object);
  // Removes the policy of that kind and name; returns whether there was one.
  bool remove(Kind kind, std::string_view name);

 private:
  void add_item(const doc::Node& root, const std::string& file, int document, bool inside_list);

  std::vector<PolicyObject> policies_;
  std::vector<WorkloadManifest> workloads_;
  std::vector<ObjectEntry> entries_;
  Diagnostics diagnostics_;
};

// Reads every path (files and directories) into one set.
PolicySet load_policy_set(const std::vector<std::string>& paths, const doc::ReadLimits& limits = {});

// Whether a document describes a workload: it contains a pod spec (a "containers" list)
// under spec, as Pods, Jobs, Deployments, JobSets and PyTorchJobs do, or it is one of the
// workload kinds that need not carry one (KServe InferenceService and
// LLMInferenceService, Ray's RayJob, RayService and RayCluster, LeaderWorkerSet).
bool is_workload(const doc::Node& root);
bool is_workload_kind(std::string_view group, std::string_view kind);

}  // namespace gpubank::policy
