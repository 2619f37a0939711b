#include "twin/admission/quota_tree.hpp"

#include <algorithm>

namespace gpubank::twin {

namespace {
std::size_t at(int i) { return static_cast<std::size_t>(i); }
}  // namespace

QuotaTree::QuotaTree(std::vector<QuotaNode> nodes, std::size_t fr_count)
    : nodes_(std::move(nodes)), version_(nodes_.size(), 1), fr_count_(fr_count) {
  cells_.resize(nodes_.size() * fr_count_);
  parent_.resize(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    auto& n = nodes_[i];
    parent_[i] = n.parent;
    for (std::size_t fr = 0; fr < fr_count_; ++fr) {
      QuotaCell& c = cells_[i * fr_count_ + fr];
      if (fr < n.nominal.size()) c.nominal = n.nominal[fr];
      if (fr < n.borrowing_limit.size()) c.borrowing_limit = n.borrowing_limit[fr];
      if (fr < n.lending_limit.size()) c.lending_limit = n.lending_limit[fr];
    }
    // The cells are the only copy from here on: set_quota changes them.
    n.nominal = {};
    n.borrowing_limit = {};
    n.lending_limit = {};
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
  const QuotaCell& c = cells_[slot];
  const bool above = c.usage > c.subtree_quota;
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

// Subtree quota and local quota of n and everything below it.
void QuotaTree::accumulate(int n) {
  for (std::size_t fr = 0; fr < fr_count_; ++fr) cell(n, static_cast<int>(fr)).subtree_quota = cell(n, static_cast<int>(fr)).nominal;
  auto add_child = [&](int c) {
    accumulate(c);
    for (std::size_t fr = 0; fr < fr_count_; ++fr) {
      QuotaCell& mine = cell(n, static_cast<int>(fr));
      const QuotaCell& child = cell(c, static_cast<int>(fr));
      mine.subtree_quota = quota_add(mine.subtree_quota, quota_sub(child.subtree_quota, child.local_quota));
    }
  };
  for (int c : nodes_[at(n)].child_cohorts) add_child(c);
  for (int c : nodes_[at(n)].child_queues) add_child(c);
  for (std::size_t fr = 0; fr < fr_count_; ++fr) {
    QuotaCell& x = cell(n, static_cast<int>(fr));
    x.local_quota = x.lending_limit == kNoLimit ? 0 : std::max<Amount>(0, quota_sub(x.subtree_quota, x.lending_limit));
  }
}

Amount QuotaTree::local_available(int n, int fr) const {
  const QuotaCell& x = cell(n, fr);
  return std::max<Amount>(0, quota_sub(x.local_quota, x.usage));
}

Amount QuotaTree::potential_available(int n, int fr) const {
  const QuotaCell& x = cell(n, fr);
  const int parent = parent_[at(n)];
  if (parent < 0) return x.subtree_quota;
  Amount a = quota_add(x.local_quota, potential_available(parent, fr));
  if (x.borrowing_limit != kNoLimit) a = std::min(a, quota_add(x.subtree_quota, x.borrowing_limit));
  return a;
}

void QuotaTree::set_quota(int n, int fr, Amount nominal, Amount borrowing_limit, Amount lending_limit) {
  QuotaCell& x = cell(n, fr);
  x.nominal = nominal;
  x.borrowing_limit = borrowing_limit;
  x.lending_limit = lending_limit;
  // Queue usage is what the queues hold; cohort usage is only spill-over: rebuild it.
  std::vector<std::pair<int, Amount>> held;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    QuotaCell& c = cell(static_cast<int>(i), fr);
    if (nodes_[i].is_queue && c.usage != 0) held.emplace_back(static_cast<int>(i), c.usage);
    c.usage = 0;
    ++version_[i];
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].parent < 0) accumulate(static_cast<int>(i));
  }
  for (const auto& [q, v] : held) add_usage(q, fr, v);
  rebuild_above_nominal();  // subtree quotas changed too
}

}  // namespace gpubank::twin
