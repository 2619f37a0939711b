#include "twin/admission/quota_tree.hpp"

#include <algorithm>

namespace gpubank::twin {

namespace {
std::size_t at(int i) { return static_cast<std::size_t>(i); }
}  // namespace

QuotaTree::QuotaTree(std::vector<QuotaNode> nodes, std::size_t fr_count)
    : nodes_(std::move(nodes)), version_(nodes_.size(), 1), fr_count_(fr_count) {
  for (auto& n : nodes_) {
    n.subtree_quota.assign(fr_count_, 0);
    n.usage.assign(fr_count_, 0);
  }
  // Subtree quota bottom-up from every root (the tree is acyclic: create() checked).
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].parent < 0) accumulate(static_cast<int>(i));
  }
  // The shape never changes after construction; fair sharing asks for roots in its inner loops.
  root_.resize(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    int n = static_cast<int>(i);
    while (nodes_[at(n)].parent >= 0) n = nodes_[at(n)].parent;
    root_[i] = n;
  }
  rebuild_above_nominal();
}

void QuotaTree::rebuild_above_nominal() {
  above_.assign(nodes_.size() * fr_count_, {});
  above_pos_.assign(nodes_.size() * fr_count_, -1);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    for (std::size_t fr = 0; fr < fr_count_; ++fr) track_above_nominal(static_cast<int>(i), static_cast<int>(fr));
  }
}

void QuotaTree::track_above_nominal(int n, int fr) {
  const auto& x = nodes_[at(n)];
  if (!x.is_queue || x.parent < 0) return;
  const std::size_t slot = at(n) * fr_count_ + at(fr);
  auto& list = above_[at(x.parent) * fr_count_ + at(fr)];
  const bool above = x.usage[at(fr)] > x.subtree_quota[at(fr)];
  int& pos = above_pos_[slot];
  if (above && pos < 0) {
    pos = static_cast<int>(list.size());
    list.push_back(n);
  } else if (!above && pos >= 0) {
    const int last = list.back();
    list[at(pos)] = last;
    above_pos_[at(last) * fr_count_ + at(fr)] = pos;
    list.pop_back();
    pos = -1;
  }
}

void QuotaTree::accumulate(int n) {
  auto& x = nodes_[at(n)];
  for (std::size_t fr = 0; fr < fr_count_; ++fr) x.subtree_quota[fr] = x.nominal[fr];
  auto add_child = [&](int c) {
    accumulate(c);
    for (std::size_t fr = 0; fr < fr_count_; ++fr) {
      nodes_[at(n)].subtree_quota[fr] =
          quota_add(nodes_[at(n)].subtree_quota[fr], quota_sub(node(c).subtree_quota[fr], local_quota(c, static_cast<int>(fr))));
    }
  };
  for (int c : x.child_cohorts) add_child(c);
  for (int c : nodes_[at(n)].child_queues) add_child(c);
}

Amount QuotaTree::local_quota(int n, int fr) const {
  const auto& x = node(n);
  const Amount lending = x.lending_limit[at(fr)];
  if (lending == kNoLimit) return 0;
  return std::max<Amount>(0, quota_sub(x.subtree_quota[at(fr)], lending));
}

Amount QuotaTree::local_available(int n, int fr) const {
  return std::max<Amount>(0, quota_sub(local_quota(n, fr), node(n).usage[at(fr)]));
}

Amount QuotaTree::available(int n, int fr) const {
  const auto& x = node(n);
  if (x.parent < 0) return quota_sub(x.subtree_quota[at(fr)], x.usage[at(fr)]);
  Amount from_parent = available(x.parent, fr);
  const Amount borrowing = x.borrowing_limit[at(fr)];
  if (borrowing != kNoLimit) {
    const Amount lq = local_quota(n, fr);
    const Amount stored_in_parent = quota_sub(x.subtree_quota[at(fr)], lq);
    const Amount used_in_parent = std::max<Amount>(0, quota_sub(x.usage[at(fr)], lq));
    from_parent = std::min(from_parent, quota_add(quota_sub(stored_in_parent, used_in_parent), borrowing));
  }
  return quota_add(local_available(n, fr), from_parent);
}

Amount QuotaTree::potential_available(int n, int fr) const {
  const auto& x = node(n);
  if (x.parent < 0) return x.subtree_quota[at(fr)];
  Amount a = quota_add(local_quota(n, fr), potential_available(x.parent, fr));
  const Amount borrowing = x.borrowing_limit[at(fr)];
  if (borrowing != kNoLimit) a = std::min(a, quota_add(x.subtree_quota[at(fr)], borrowing));
  return a;
}

void QuotaTree::set_quota(int n, int fr, Amount nominal, Amount borrowing_limit, Amount lending_limit) {
  auto& x = nodes_[at(n)];
  x.nominal[at(fr)] = nominal;
  x.borrowing_limit[at(fr)] = borrowing_limit;
  x.lending_limit[at(fr)] = lending_limit;
  // Queue usage is what the queues hold; cohort usage is only spill-over: rebuild it.
  std::vector<std::pair<int, Amount>> held;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].is_queue && nodes_[i].usage[at(fr)] != 0) held.emplace_back(static_cast<int>(i), nodes_[i].usage[at(fr)]);
    nodes_[i].usage[at(fr)] = 0;
    ++version_[i];
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].parent < 0) accumulate(static_cast<int>(i));
  }
  for (const auto& [q, v] : held) add_usage(q, fr, v);
  rebuild_above_nominal();  // subtree quotas changed too
}

void QuotaTree::add_usage(int n, int fr, Amount val) {
  while (true) {
    auto& x = nodes_[at(n)];
    const Amount local = local_available(n, fr);
    x.usage[at(fr)] = usage_add(x.usage[at(fr)], val);
    ++version_[at(n)];
    track_above_nominal(n, fr);
    if (x.parent < 0 || val <= local) return;
    val = quota_sub(val, local);
    n = x.parent;
  }
}

void QuotaTree::remove_usage(int n, int fr, Amount val) {
  while (true) {
    auto& x = nodes_[at(n)];
    const Amount stored_in_parent = quota_sub(x.usage[at(fr)], local_quota(n, fr));
    x.usage[at(fr)] = usage_sub(x.usage[at(fr)], val);
    ++version_[at(n)];
    track_above_nominal(n, fr);
    if (stored_in_parent <= 0 || x.parent < 0) return;
    val = std::min(val, stored_in_parent);
    n = x.parent;
  }
}

}  // namespace gpubank::twin
