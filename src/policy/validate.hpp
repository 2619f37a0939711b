// Validation of a decoded policy set: per-object rules, then every object against the
// PlatformGuardrails and the other objects. Each finding carries a stable rule id (see
// rules.hpp) and the position of the field it is about. Pure: a function of the set and
// the options.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/diagnostic.hpp"
#include "core/timestamp.hpp"
#include "policy/policy_set.hpp"
#include "policy/tidal_windows.hpp"

namespace gpubank::policy {

// The results of the one expensive check, the tidal window overlap search, by what it
// depends on (time zone and schedules). A webhook builds it once for its snapshot so that
// validating a change against the whole set does not repeat the search for tidal policies
// the change did not touch. Read-only while validating.
class OverlapCache {
 public:
  static std::string key_of(const TidalPolicySpec& spec);
  // The cached result, or nullptr when the windows were never searched.
  [[nodiscard]] const std::optional<WindowOverlap>* find(const std::string& key) const;
  void put(std::string key, std::optional<WindowOverlap> result) { results_.emplace(std::move(key), result); }
  // Searches every tidal policy of the set.
  static OverlapCache of(const PolicySet& set);

 private:
  std::map<std::string, std::optional<WindowOverlap>> results_;
};

struct ValidationOptions {
  // Leases without a start are measured from this time (the admission request's time in
  // the webhook); when unset their length is not checked.
  std::optional<Timestamp> now;
  // Overlap results to reuse (may be null).
  const OverlapCache* overlaps = nullptr;
};

// The overlap search of one tidal policy (what tidal.windows-overlap reports).
std::optional<WindowOverlap> find_window_overlap(const TidalPolicySpec& spec);

// The semantic findings of the set, in object order. Decoding findings are in
// set.diagnostics() and are not repeated.
Diagnostics validate(const PolicySet& set, const ValidationOptions& options = {});

// Every finding of a set: decoding, then validation.
Diagnostics check_all(const PolicySet& set, const ValidationOptions& options = {});

}  // namespace gpubank::policy
