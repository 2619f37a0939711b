#include "attribution/builder.hpp"

#include <algorithm>

namespace gpubank::attribution {

namespace {

const nlohmann::json* find_path(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &j;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    const auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::string string_at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* v = find_path(j, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace

SnapshotBuilder::SnapshotBuilder(BuilderOptions options) : options_(options) {}

void SnapshotBuilder::bump(const std::string& node, std::int64_t now_ms, std::vector<std::string>& changed) {
  NodeState& state = nodes_[node];
  state.generation = std::max(state.generation + 1, now_ms);
  state.produced_ms = now_ms;
  if (std::find(changed.begin(), changed.end(), node) == changed.end()) changed.push_back(node);
}

// The pod ended (deleted or finished): a tombstone in its node's snapshot.
void SnapshotBuilder::end(Entry& entry, std::int64_t now_ms, std::vector<std::string>& changed) {
  entry.meta.deleted_ms = now_ms;
  expiry_.emplace(now_ms, entry.meta.uid);
  bump(entry.meta.node, now_ms, changed);
}

std::vector<std::string> SnapshotBuilder::upsert(const nlohmann::json& pod, std::int64_t now_ms) {
  const std::string uid = string_at(pod, {"metadata", "uid"});
  if (const auto it = pods_.find(uid); !uid.empty() && it != pods_.end()) {
    // Known: only the node, the end and keep-running-until may change, so the rest is not
    // parsed again. (A refused annotation was counted when the pod was first seen.)
    PodMeta now = it->second.meta;
    now.node = string_at(pod, {"spec", "nodeName"});
    if (check_value("node", now.node)) now.node.clear();
    now.keep_running_until = keep_running_until_of(pod);
    return upsert(now, pod_finished(pod), now_ms);
  }
  auto meta = pod_meta_from_json(pod, &stats_);
  if (!meta) {
    ++rejected_;
    last_rejection_ = meta.error();
    return {};
  }
  return upsert(*meta, pod_finished(pod), now_ms);
}

std::vector<std::string> SnapshotBuilder::upsert(const PodMeta& pod, bool finished, std::int64_t now_ms) {
  std::vector<std::string> changed;
  auto it = pods_.find(pod.uid);
  if (it == pods_.end()) {
    Entry entry{pod, false, false};
    entry.meta.deleted_ms.reset();
    it = pods_.emplace(pod.uid, std::move(entry)).first;
    Entry& e = it->second;
    if (e.meta.node.empty()) return changed;  // pending: in no snapshot yet
    nodes_[e.meta.node].uids.insert(e.meta.uid);
    if (finished) {
      end(e, now_ms, changed);
    } else {
      bump(e.meta.node, now_ms, changed);
    }
    return changed;
  }
  Entry& e = it->second;
  if (e.retired || e.gone) return changed;
  const bool exception_changed = !e.meta.deleted_ms && e.meta.keep_running_until != pod.keep_running_until;
  if (exception_changed) e.meta.keep_running_until = pod.keep_running_until;
  if (e.meta.node.empty()) {
    if (pod.node.empty()) return changed;
    // Scheduled: the one change of node there is (spec.nodeName is immutable once set).
    e.meta.node = pod.node;
    nodes_[e.meta.node].uids.insert(e.meta.uid);
    if (finished) {
      end(e, now_ms, changed);
    } else {
      bump(e.meta.node, now_ms, changed);
    }
    return changed;
  }
  if (finished && !e.meta.deleted_ms) {
    end(e, now_ms, changed);
  } else if (exception_changed) {
    bump(e.meta.node, now_ms, changed);
  }
  return changed;
}

std::vector<std::string> SnapshotBuilder::remove(std::string_view uid, std::int64_t now_ms) {
  std::vector<std::string> changed;
  const auto it = pods_.find(uid);
  if (it == pods_.end()) return changed;
  Entry& e = it->second;
  if (e.retired || e.meta.node.empty()) {
    pods_.erase(it);  // in no snapshot: nothing to keep
    return changed;
  }
  if (e.gone) return changed;
  e.gone = true;
  if (!e.meta.deleted_ms) end(e, now_ms, changed);  // a finished pod keeps its end time
  return changed;
}

std::vector<std::string> SnapshotBuilder::apply(const nlohmann::json* before, const nlohmann::json* after,
                                                std::int64_t now_ms) {
  std::vector<std::string> changed;
  const auto merge = [&](const std::vector<std::string>& nodes) {
    for (const std::string& n : nodes) {
      if (std::find(changed.begin(), changed.end(), n) == changed.end()) changed.push_back(n);
    }
  };
  if (before != nullptr) {
    const std::string old_uid = string_at(*before, {"metadata", "uid"});
    if (after == nullptr || old_uid != string_at(*after, {"metadata", "uid"})) merge(remove(old_uid, now_ms));
  }
  if (after != nullptr) merge(upsert(*after, now_ms));
  return changed;
}

std::vector<std::string> SnapshotBuilder::expire(std::int64_t now_ms) {
  std::vector<std::string> changed;
  const std::int64_t period = options_.tombstone.count();
  while (!expiry_.empty() && expiry_.begin()->first + period <= now_ms) {
    const std::string uid = expiry_.begin()->second;
    expiry_.erase(expiry_.begin());
    const auto it = pods_.find(uid);
    if (it == pods_.end()) continue;
    Entry& e = it->second;
    const std::string node = e.meta.node;
    nodes_[node].uids.erase(uid);
    bump(node, now_ms, changed);
    if (e.gone) {
      pods_.erase(it);
    } else {
      // Finished but still listed: keep the UID only, so that its events are ignored.
      e.retired = true;
      e.meta = PodMeta{.uid = uid};
    }
  }
  return changed;
}

std::optional<NodeSnapshot> SnapshotBuilder::snapshot(std::string_view node) const {
  const auto it = nodes_.find(node);
  if (it == nodes_.end()) return std::nullopt;
  NodeSnapshot s;
  s.node = it->first;
  s.generation = it->second.generation;
  s.produced_ms = it->second.produced_ms;
  s.pods.reserve(it->second.uids.size());
  for (const std::string& uid : it->second.uids) s.pods.push_back(pods_.find(uid)->second.meta);
  return s;
}

std::int64_t SnapshotBuilder::generation(std::string_view node) const {
  const auto it = nodes_.find(node);
  return it == nodes_.end() ? 0 : it->second.generation;
}

std::vector<std::string> SnapshotBuilder::nodes() const {
  std::vector<std::string> out;
  out.reserve(nodes_.size());
  for (const auto& [name, state] : nodes_) out.push_back(name);
  return out;
}

SnapshotBuilder::Counts SnapshotBuilder::counts() const {
  Counts c;
  c.nodes = nodes_.size();
  for (const auto& [uid, e] : pods_) {
    if (e.retired) {
      ++c.retired;
    } else if (e.meta.node.empty()) {
      ++c.pending;
    } else if (e.meta.deleted_ms) {
      ++c.tombstones;
    } else {
      ++c.live;
    }
  }
  return c;
}

}  // namespace gpubank::attribution
