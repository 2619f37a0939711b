// A policy set: every object of the given files, decoded, in load order. Policies are
// typed; workloads (pods, jobs, deployments, ...) are kept as documents for the workload
// rules; everything else is listed as skipped.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
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
  // The policies in load order, as const references. Policies are shared, immutable
  // objects, so copying a set (the webhook's candidate for each change) copies pointers.
  class Policies {
   public:
    using Items = std::vector<std::shared_ptr<const PolicyObject>>;
    class iterator {
     public:
      using iterator_category = std::forward_iterator_tag;
      using value_type = PolicyObject;
      using difference_type = std::ptrdiff_t;
      using pointer = const PolicyObject*;
      using reference = const PolicyObject&;
      iterator() = default;
      explicit iterator(Items::const_iterator it) : it_(it) {}
      reference operator*() const { return **it_; }
      pointer operator->() const { return it_->get(); }
      iterator& operator++() {
        ++it_;
        return *this;
      }
      iterator operator++(int) {
        iterator old = *this;
        ++it_;
        return old;
      }
      friend bool operator==(const iterator&, const iterator&) = default;

     private:
      Items::const_iterator it_;
    };
    explicit Policies(const Items& items) : items_(&items) {}
    [[nodiscard]] iterator begin() const { return iterator(items_->begin()); }
    [[nodiscard]] iterator end() const { return iterator(items_->end()); }
    [[nodiscard]] std::size_t size() const { return items_->size(); }
    [[nodiscard]] bool empty() const { return items_->empty(); }
    const PolicyObject& operator[](std::size_t i) const { return *(*items_)[i]; }

   private:
    const Items* items_;
  };

  // Adds one document; a Kubernetes List adds each of its items.
  void add(const doc::Node& root, const std::string& file, int document);
  // Adds an already decoded policy (the webhook's object under review).
  void add(PolicyObject object);

  [[nodiscard]] Policies policies() const { return Policies(policies_); }
  [[nodiscard]] const std::vector<std::shared_ptr<const WorkloadManifest>>& workloads() const { return workloads_; }
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
  // The same policies and workloads without the per-file bookkeeping (entries, reading
  // findings): what validation needs, at the cost of copying pointers.
  [[nodiscard]] PolicySet policies_only() const;

 private:
  void add_item(const doc::Node& root, const std::string& file, int document, bool inside_list);

  Policies::Items policies_;
  std::vector<std::shared_ptr<const WorkloadManifest>> workloads_;
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
