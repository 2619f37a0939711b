// Kueue's quota tree per (flavor, resource): ClusterQueues are leaves, Cohorts inner nodes.
// Formulas: ../shared/spec/kueue-semantics.md; upstream pkg/cache/scheduler/resource_node.go
// (localQuota, available, potentialAvailable, addUsage/removeUsage, accumulateFromChild).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "twin/admission/model.hpp"

namespace gpubank::twin {

inline constexpr Amount kNoLimit = -1;  // borrowingLimit / lendingLimit unset

struct QuotaNode {
  std::string name;
  bool is_queue = false;
  int parent = -1;  // node index, -1 for a root (or a queue without cohort)
  std::vector<int> child_cohorts, child_queues;
  double fair_weight = 1.0;
  // Construction input, dense over flavor-resource indices (unset limits: kNoLimit). The
  // tree moves them into its cells; read them back through the tree's accessors.
  std::vector<Amount> nominal, borrowing_limit, lending_limit;
};

// One node's figures for one flavor-resource, side by side: Available() walks a queue's
// ancestors and reads all of them at each level, and with 1,000 queues one line per node
// instead of five separate arrays is what keeps that walk in cache.
struct QuotaCell {
  Amount nominal = 0, borrowing_limit = kNoLimit, lending_limit = kNoLimit;
  Amount subtree_quota = 0, usage = 0;
  Amount local_quota = 0;  // max(0, subtreeQuota - lendingLimit) with a lending limit, else 0
};

class QuotaTree {
 public:
  QuotaTree() = default;
  QuotaTree(std::vector<QuotaNode> nodes, std::size_t fr_count);

  [[nodiscard]] std::size_t fr_count() const { return fr_count_; }
  [[nodiscard]] const QuotaNode& node(int n) const { return nodes_[static_cast<std::size_t>(n)]; }
  [[nodiscard]] std::size_t size() const { return nodes_.size(); }
  [[nodiscard]] bool has_parent(int n) const { return node(n).parent >= 0; }
  [[nodiscard]] int root(int n) const { return root_[static_cast<std::size_t>(n)]; }
  [[nodiscard]] int parent(int n) const { return parent_[static_cast<std::size_t>(n)]; }

  [[nodiscard]] const QuotaCell& cell(int n, int fr) const {
    return cells_[static_cast<std::size_t>(n) * fr_count_ + static_cast<std::size_t>(fr)];
  }
  [[nodiscard]] Amount nominal(int n, int fr) const { return cell(n, fr).nominal; }
  [[nodiscard]] Amount borrowing_limit(int n, int fr) const { return cell(n, fr).borrowing_limit; }
  // max(0, subtreeQuota - lendingLimit) when a lending limit is set, else 0.
  [[nodiscard]] Amount local_quota(int n, int fr) const { return cell(n, fr).local_quota; }
  [[nodiscard]] Amount local_available(int n, int fr) const;
  [[nodiscard]] Amount available(int n, int fr) const;
  [[nodiscard]] Amount potential_available(int n, int fr) const;
  [[nodiscard]] bool borrowing_with(int n, int fr, Amount val) const {
    const QuotaCell& c = cell(n, fr);
    return quota_add(c.usage, val) > c.subtree_quota;
  }
  [[nodiscard]] Amount usage(int n, int fr) const { return cell(n, fr).usage; }
  [[nodiscard]] Amount subtree_quota(int n, int fr) const { return cell(n, fr).subtree_quota; }

  // A node's own quota changed (Kueue: the ClusterQueue or Cohort was updated): subtree
  // quotas are recomputed and the usage of every queue is spread over the tree again,
  // since what spills over to a parent depends on the quotas below it.
  void set_quota(int n, int fr, Amount nominal, Amount borrowing_limit, Amount lending_limit);

  void add_usage(int n, int fr, Amount val) { change_usage<true, false>(n, fr, val); }
  void remove_usage(int n, int fr, Amount val) { change_usage<false, false>(n, fr, val); }
  // The same without bumping versions or tracking queues above nominal, for a search that
  // puts back every change it makes before anything reads those (the tree's usage is a
  // function of the queues' usage, so what it puts back leaves both as they were).
  void add_usage_quietly(int n, int fr, Amount val) { change_usage<true, true>(n, fr, val); }
  void remove_usage_quietly(int n, int fr, Amount val) { change_usage<false, true>(n, fr, val); }
  // Bumped whenever the node's usage changes: what depends only on a node's usage (its
  // dominant resource share) can be cached against it.
  [[nodiscard]] std::uint64_t version(int n) const { return version_[static_cast<std::size_t>(n)]; }

  // The child ClusterQueues of cohort n whose usage of fr is above their subtree quota
  // (not IsWithinNominalInResources), in no particular order. Kept up to date on every
  // usage change: preemption looks for candidates only there, and in a large cohort most
  // queues are within nominal.
  [[nodiscard]] const std::vector<int>& queues_above_nominal(int n, int fr) const {
    return above_[static_cast<std::size_t>(n) * fr_count_ + static_cast<std::size_t>(fr)];
  }

 private:
  template <bool Add, bool Quiet>
  void change_usage(int n, int fr, Amount val);
  void accumulate(int n);
  void track_above_nominal(int n, int fr);  // after node n's usage of fr changed
  void rebuild_above_nominal();
  QuotaCell& cell(int n, int fr) { return cells_[static_cast<std::size_t>(n) * fr_count_ + static_cast<std::size_t>(fr)]; }
  std::vector<QuotaNode> nodes_;
  std::vector<QuotaCell> cells_;  // [node * fr_count + fr]
  std::vector<int> parent_;
  std::vector<std::uint64_t> version_;
  std::vector<int> root_;
  std::size_t fr_count_ = 0;
  // Per (cohort, fr): queues_above_nominal. Per (queue, fr): its position there, or -1.
  std::vector<std::vector<int>> above_;
  std::vector<int> above_pos_;
};

// Defined here so that the admission core's preemption loops can inline them.
template <bool Add, bool Quiet>
inline void QuotaTree::change_usage(int n, int fr, Amount val) {
  while (true) {
    QuotaCell& x = cell(n, fr);
    const int parent = parent_[static_cast<std::size_t>(n)];
    if constexpr (Add) {
      const Amount local = std::max<Amount>(0, quota_sub(x.local_quota, x.usage));
      x.usage = usage_add(x.usage, val);
      if constexpr (!Quiet) {
        ++version_[static_cast<std::size_t>(n)];
        track_above_nominal(n, fr);
      }
      if (parent < 0 || val <= local) return;
      val = quota_sub(val, local);
    } else {
      const Amount stored_in_parent = quota_sub(x.usage, x.local_quota);
      x.usage = usage_sub(x.usage, val);
      if constexpr (!Quiet) {
        ++version_[static_cast<std::size_t>(n)];
        track_above_nominal(n, fr);
      }
      if (stored_in_parent <= 0 || parent < 0) return;
      val = std::min(val, stored_in_parent);
    }
    n = parent;
  }
}

inline Amount QuotaTree::available(int n, int fr) const {
  const QuotaCell& x = cell(n, fr);
  const int parent = parent_[static_cast<std::size_t>(n)];
  if (parent < 0) return quota_sub(x.subtree_quota, x.usage);
  Amount from_parent = available(parent, fr);
  if (x.borrowing_limit != kNoLimit) {
    const Amount stored_in_parent = quota_sub(x.subtree_quota, x.local_quota);
    const Amount used_in_parent = std::max<Amount>(0, quota_sub(x.usage, x.local_quota));
    from_parent = std::min(from_parent, quota_add(quota_sub(stored_in_parent, used_in_parent), x.borrowing_limit));
  }
  return quota_add(std::max<Amount>(0, quota_sub(x.local_quota, x.usage)), from_parent);
}

}  // namespace gpubank::twin
