// Fuzzes the arithmetic of validation and rendering (issue 28): a YAML stream of policies
// that validates without errors must render, for Kueue and for Volcano, only quota numbers
// that are whole, non-negative and within bounds:
//   * every nominalQuota, borrowingLimit, lendingLimit (ClusterQueue) and deserved,
//     guarantee, capability (Volcano Queue) is in 0..capacity of the object's pool;
//   * a ClusterQueue's nominalQuota + borrowingLimit and a group Queue's capability are
//     at most the group's guardrail maxCapacity on the pool;
//   * the capacity check's rows are in 0..capacity of their pool.
// A violation traps with the object and the number. UBSan (the build's) catches any
// signed overflow on the way there.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "policy_input.hpp"

#include "core/diagnostic.hpp"
#include "core/timestamp.hpp"
#include "document/reader.hpp"
#include "policy/policy_set.hpp"
#include "policy/validate.hpp"
#include "render/consistency.hpp"
#include "render/kueue.hpp"
#include "render/render.hpp"
#include "render/scheduling.hpp"
#include "render/volcano.hpp"

namespace {

using namespace gpubank;
using render::Json;

[[noreturn]] void violation(const std::string& where, std::int64_t value, const std::string& bound) {
  std::fprintf(stderr, "\nquota invariant broken: %s = %lld, %s\n", where.c_str(), static_cast<long long>(value),
               bound.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

class Invariants {
 public:
  explicit Invariants(const policy::PlatformGuardrailsSpec& g) {
    for (const auto& p : g.pools) capacity_.emplace(p.name, p.capacity);
    for (const auto& group : g.groups) {
      for (const auto& [pool, limit] : group.limits) cap_[{group.name, pool}] = limit.max_capacity;
    }
  }

  void check(const render::RenderedObject& o) const {
    const Json& meta = o.manifest.value("metadata", Json::object());
    const Json& labels = meta.value("labels", Json::object());
    const std::string pool = labels.value(std::string(render::kLabelResourcePool), "");
    const std::string group = labels.value(std::string(policy::kLabelBusinessGroup), "");
    auto pool_it = capacity_.find(pool);
    if (pool_it == capacity_.end()) return;  // not a queue of a pool
    const std::int64_t capacity = pool_it->second;
    walk(o.manifest, o.path, capacity);
    const auto cap = cap_.find({group, pool});
    if (cap == cap_.end()) return;
    const std::string kind = o.manifest.value("kind", "");
    if (kind == "ClusterQueue") {
      for (const auto& rg : o.manifest["spec"]["resourceGroups"]) {
        for (const auto& flavor : rg["flavors"]) {
          for (const auto& r : flavor["resources"]) {
            const std::int64_t reach = number(r, "nominalQuota", o.path) + number(r, "borrowingLimit", o.path);
            if (reach > cap->second) violation(o.path + " nominalQuota + borrowingLimit", reach, "guardrail maxCapacity " + std::to_string(cap->second));
          }
        }
      }
    } else if (kind == "Queue" && o.manifest["spec"].contains("capability")) {
      for (const auto& [_, v] : o.manifest["spec"]["capability"].items()) {
        if (v.get<std::int64_t>() > cap->second) violation(o.path + " capability", v.get<std::int64_t>(), "guardrail maxCapacity " + std::to_string(cap->second));
      }
    }
  }

  void check(const render::ConsistencyReport& r) const {
    for (const auto& row : r.groups) {
      const std::int64_t capacity = capacity_.at(row.pool);
      for (const auto& [what, v] : {std::pair{"guaranteed", row.guaranteed}, std::pair{"borrow_cap", row.borrow_cap},
                                    std::pair{"max_capacity", row.max_capacity}, std::pair{"queue_reach", row.queue_reach},
                                    std::pair{"lendable", row.lendable}, std::pair{"lending_floor", row.lending_floor}}) {
        in_range(v, capacity, "capacity check row " + row.queue + " " + what);
      }
    }
    for (const auto& row : r.pools) {
      in_range(row.guaranteed, row.capacity, "capacity check pool " + row.pool + " guaranteed");
      in_range(row.cohort_quota, row.capacity, "capacity check pool " + row.pool + " cohort_quota");
      if (row.guaranteed + row.cohort_quota != row.capacity) {
        violation("capacity check pool " + row.pool + " guaranteed + cohort_quota", row.guaranteed + row.cohort_quota,
                  "not the pool's capacity");
      }
      in_range(row.non_preemptible_borrow, row.capacity, "capacity check pool " + row.pool + " non_preemptible_borrow");
    }
  }

 private:
  static void in_range(std::int64_t v, std::int64_t capacity, const std::string& where) {
    if (v < 0) violation(where, v, "negative");
    if (v > capacity) violation(where, v, "above the pool's capacity " + std::to_string(capacity));
  }
  static std::int64_t number(const Json& parent, const char* key, const std::string& path) {
    if (!parent.contains(key)) return 0;
    const Json& v = parent[key];
    if (!v.is_number_integer()) {
      std::fprintf(stderr, "\n%s: %s is not a whole number: %s\n", path.c_str(), key, v.dump().c_str());
      __builtin_trap();
    }
    return v.get<std::int64_t>();
  }
  // Every number under a quota-like key, anywhere in the object.
  void walk(const Json& v, const std::string& path, std::int64_t capacity) const {
    static const std::set<std::string> keys{"nominalQuota", "borrowingLimit", "lendingLimit",
                                            "capability",   "deserved",       "guarantee"};
    if (v.is_object()) {
      for (const auto& [k, item] : v.items()) {
        if (keys.contains(k)) numbers(item, path + "." + k, capacity);
        walk(item, path + "." + k, capacity);
      }
    } else if (v.is_array()) {
      for (const auto& item : v) walk(item, path + "[]", capacity);
    }
  }
  static void numbers(const Json& v, const std::string& path, std::int64_t capacity) {
    if (v.is_number()) {
      if (!v.is_number_integer()) violation(path + " (not whole)", 0, v.dump());
      in_range(v.get<std::int64_t>(), capacity, path);
    } else if (v.is_object()) {
      for (const auto& [k, item] : v.items()) numbers(item, path + "." + k, capacity);
    }
  }

  std::map<std::string, std::int64_t> capacity_;
  std::map<std::pair<std::string, std::string>, std::int64_t> cap_;  // (group, pool)
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  policy::PolicySet set = fuzz::read_policies(text);
  const policy::ValidationOptions options = fuzz::validation_options();
  if (has_errors(policy::check_all(set, options)) || set.guardrails_spec() == nullptr) return 0;

  const Invariants invariants(*set.guardrails_spec());
  // The capacity check runs on every valid set, the render refuses none of them because
  // of it: what is checked here is its arithmetic, not its verdict.
  invariants.check(render::check_consistency(set));
  // Only the queue renderers: the others emit no quota numbers and cost most of the time.
  for (const auto& renderer : {render::render_kueue, render::render_volcano}) {
    for (const auto& o : renderer(set)) invariants.check(o);
  }
  return 0;
}
