#include "support/fake_apply.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace gpubank::testing::ssa {

std::string path_text(const Path& path) {
  std::string out;
  for (const auto& p : path) out += "." + p;
  return out;
}

std::set<Path> leaves(const Json& value, const Path& prefix) {
  std::set<Path> out;
  if (value.is_object() && !value.empty()) {
    for (const auto& [key, child] : value.items()) {
      Path p = prefix;
      p.push_back(key);
      out.merge(leaves(child, p));
    }
  } else if (!prefix.empty()) {
    out.insert(prefix);
  }
  return out;
}

Json scoped(const Json& object, const std::string& subresource) {
  Json out = Json::object();
  if (!object.is_object()) return out;
  if (subresource == "status") {
    if (object.contains("status")) out["status"] = object["status"];
    return out;
  }
  for (const auto& [key, value] : object.items()) {
    if (key == "status" || key == "apiVersion" || key == "kind") continue;
    if (key == "metadata") {
      for (const char* owned : {"labels", "annotations"}) {
        if (value.is_object() && value.contains(owned)) out["metadata"][owned] = value[owned];
      }
      continue;
    }
    out[key] = value;
  }
  return out;
}

Json fields_v1(const std::set<Path>& paths) {
  Json out = Json::object();
  for (const auto& path : paths) {
    Json* node = &out;
    for (const auto& p : path) node = &(*node)["f:" + p];
    if (node->is_null()) *node = Json::object();
  }
  return out;
}

std::set<Path> paths_of(const Json& fields, const Path& prefix) {
  std::set<Path> out;
  if (!fields.is_object()) return out;
  bool children = false;
  for (const auto& [key, child] : fields.items()) {
    if (key.rfind("f:", 0) != 0) continue;
    children = true;
    Path p = prefix;
    p.push_back(key.substr(2));
    out.merge(paths_of(child, p));
  }
  if (!children && !prefix.empty()) out.insert(prefix);
  return out;
}

std::set<Path> paths_of(const Json& fields) { return paths_of(fields, Path{}); }

namespace {

const Json* at(const Json& object, const Path& path) {
  const Json* node = &object;
  for (const auto& p : path) {
    if (!node->is_object()) return nullptr;
    const auto it = node->find(p);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

void set_at(Json& object, const Path& path, const Json& value) {
  Json* node = &object;
  for (const auto& p : path) {
    if (!node->is_object()) *node = Json::object();
    node = &(*node)[p];
  }
  *node = value;
}

// Removes the leaf, then parents it leaves empty (below the top level: "spec" stays).
void erase_at(Json& object, const Path& path) {
  for (std::size_t n = path.size(); n > 0; --n) {
    const Path parent(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(n - 1));
    Json* node = &object;
    for (const auto& p : parent) {
      if (!node->is_object() || !node->contains(p)) return;
      node = &(*node)[p];
    }
    if (!node->is_object()) return;
    if (n == path.size()) {
      node->erase(path[n - 1]);
    } else if ((*node)[path[n - 1]].is_object() && (*node)[path[n - 1]].empty() && n > 1) {
      node->erase(path[n - 1]);
    } else {
      return;
    }
  }
}

bool related(const Path& a, const Path& b) {
  const std::size_t n = std::min(a.size(), b.size());
  return std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin());
}

struct Entry {
  std::string manager;
  std::string operation;
  std::string subresource;
  std::string api_version;
  std::string time;
  std::set<Path> paths;
  [[nodiscard]] auto id() const { return std::tie(manager, operation, subresource); }
};

std::vector<Entry> entries_of(const Json& object) {
  std::vector<Entry> out;
  const Json* mf = object.is_object() ? at(object, {"metadata", "managedFields"}) : nullptr;
  if (mf == nullptr || !mf->is_array()) return out;
  for (const auto& e : *mf) {
    if (!e.is_object()) continue;
    out.push_back({e.value("manager", ""), e.value("operation", ""), e.value("subresource", ""),
                   e.value("apiVersion", ""), e.value("time", ""), paths_of(e.value("fieldsV1", Json::object()))});
  }
  return out;
}

void store_entries(Json& object, const std::vector<Entry>& entries) {
  Json mf = Json::array();
  for (const auto& e : entries) {
    if (e.paths.empty()) continue;
    Json j{{"manager", e.manager}, {"operation", e.operation}, {"apiVersion", e.api_version}, {"time", e.time},
           {"fieldsType", "FieldsV1"}, {"fieldsV1", fields_v1(e.paths)}};
    if (!e.subresource.empty()) j["subresource"] = e.subresource;
    mf.push_back(std::move(j));
  }
  if (mf.empty()) {
    object["metadata"].erase("managedFields");
  } else {
    object["metadata"]["managedFields"] = std::move(mf);
  }
}

// Sets `actor`'s entry for `operation` to `paths`; its time changes only with its fields.
void put_entry(std::vector<Entry>& entries, const Actor& actor, const std::string& operation, std::set<Path> paths) {
  const Entry key{actor.manager, operation, actor.subresource, "", "", {}};
  const auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.id() == key.id(); });
  if (it == entries.end()) {
    entries.push_back({actor.manager, operation, actor.subresource, actor.api_version, actor.time, std::move(paths)});
  } else if (it->paths != paths || it->api_version != actor.api_version) {
    it->paths = std::move(paths);
    it->api_version = actor.api_version;
    it->time = actor.time;
  }
}

}  // namespace

Outcome apply(const Json& live, const Json& config, const Actor& actor, bool force) {
  const Json mine = scoped(config, actor.subresource);
  const std::set<Path> applied = leaves(mine);
  std::vector<Entry> entries = entries_of(live);
  const Json current = live.is_null() ? Json::object() : live;

  std::vector<Conflict> conflicts;
  for (auto& e : entries) {
    if (e.manager == actor.manager && e.operation == "Apply" && e.subresource == actor.subresource) continue;
    for (const auto& owned : e.paths) {
      for (const auto& leaf : applied) {
        if (!related(owned, leaf)) continue;
        const Json* have = at(current, leaf);
        if (have != nullptr && *have == *at(mine, leaf)) continue;  // same value: shared
        conflicts.push_back({e.manager, e.api_version, leaf});
      }
    }
  }
  if (!conflicts.empty() && !force) return {live, std::move(conflicts)};

  Json object = current;
  // Leaves this manager applied before and omits now go, unless another entry owns them.
  const Entry self{actor.manager, "Apply", actor.subresource, "", "", {}};
  const auto own = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.id() == self.id(); });
  if (own != entries.end()) {
    for (const auto& dropped : own->paths) {
      if (applied.contains(dropped)) continue;
      const bool shared = std::any_of(entries.begin(), entries.end(), [&](const Entry& e) {
        return e.id() != self.id() && e.paths.contains(dropped);
      });
      if (!shared) erase_at(object, dropped);
    }
  }
  for (const auto& leaf : applied) set_at(object, leaf, *at(mine, leaf));
  // Forced: the conflicting leaves leave their former owners.
  for (const auto& c : conflicts) {
    for (auto& e : entries) {
      if (e.manager == c.manager && e.id() != self.id()) {
        std::erase_if(e.paths, [&](const Path& p) { return related(p, c.path); });
      }
    }
  }
  put_entry(entries, actor, "Apply", applied);
  if (!object.contains("metadata")) object["metadata"] = Json::object();
  store_entries(object, entries);
  return {std::move(object), {}};
}

Json record_update(const Json& old, Json updated, const Actor& actor) {
  std::vector<Entry> entries = entries_of(old);
  const Json before = old.is_null() ? Json::object() : scoped(old, actor.subresource);
  const Json after = scoped(updated, actor.subresource);
  const std::set<Path> was = leaves(before);
  const std::set<Path> now = leaves(after);
  std::set<Path> changed;
  for (const auto& leaf : now) {
    const Json* b = at(before, leaf);
    if (b == nullptr || *b != *at(after, leaf)) changed.insert(leaf);
  }
  for (auto& e : entries) {
    if (e.subresource != actor.subresource) continue;
    std::erase_if(e.paths, [&](const Path& p) {
      return std::any_of(changed.begin(), changed.end(), [&](const Path& c) { return related(p, c); }) ||
             (was.contains(p) && !now.contains(p));
    });
  }
  if (!changed.empty()) {
    const Entry self{actor.manager, "Update", actor.subresource, "", "", {}};
    const auto own = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.id() == self.id(); });
    std::set<Path> paths = changed;
    if (own != entries.end()) paths.insert(own->paths.begin(), own->paths.end());
    put_entry(entries, actor, "Update", std::move(paths));
  }
  store_entries(updated, entries);
  return updated;
}

Json merge_patch(Json target, const Json& patch) {
  if (!patch.is_object()) return patch;
  if (!target.is_object()) target = Json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else {
      target[key] = merge_patch(target.contains(key) ? target[key] : Json(), value);
    }
  }
  return target;
}

Json conflict_status(const std::vector<Conflict>& conflicts, const std::string& group, const std::string& kind,
                     const std::string& name) {
  // The real server: `Apply failed with 1 conflict: conflict with "kubectl" using v1: .spec.replicas`;
  // several are grouped by manager, one per line.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> by_manager;
  Json causes = Json::array();
  for (const auto& c : conflicts) {
    const std::string text = "conflict with \"" + c.manager + "\" using " + c.api_version;
    by_manager[{c.manager, c.api_version}].push_back(path_text(c.path));
    causes.push_back({{"type", "FieldManagerConflict"}, {"message", text}, {"field", path_text(c.path)}});
  }
  std::string message = "Apply failed with " + std::to_string(conflicts.size()) +
                        (conflicts.size() == 1 ? " conflict: " : " conflicts: ");
  bool first = true;
  for (const auto& [who, fields] : by_manager) {
    if (!first) message += "\n";
    first = false;
    if (fields.size() == 1) {
      message += "conflict with \"" + who.first + "\" using " + who.second + ": " + fields[0];
    } else {
      message += "conflicts with \"" + who.first + "\" using " + who.second + ":";
      for (const auto& f : fields) message += "\n- " + f;
    }
  }
  return {{"kind", "Status"},
          {"apiVersion", "v1"},
          {"metadata", Json::object()},
          {"status", "Failure"},
          {"message", message},
          {"reason", "Conflict"},
          {"details", {{"name", name}, {"group", group}, {"kind", kind}, {"causes", causes}}},
          {"code", 409}};
}

}  // namespace gpubank::testing::ssa
