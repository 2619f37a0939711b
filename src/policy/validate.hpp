// Validation of a decoded policy set: per-object rules, then every object against the
// PlatformGuardrails and the other objects. Each finding carries a stable rule id (see
// rules.hpp) and the position of the field it is about. Pure: a function of the set and
// the options.
#pragma once

#include <optional>

#include "core/diagnostic.hpp"
#include "core/timestamp.hpp"
#include "policy/policy_set.hpp"

namespace gpubank::policy {

struct ValidationOptions {
  // Leases without a start are measured from this time (the admission request's time in
  // the webhook); when unset their length is not checked.
  std::optional<Timestamp> now;
};

// The semantic findings of the set, in object order. Decoding findings are in
// set.diagnostics() and are not repeated.
Diagnostics validate(const PolicySet& set, const ValidationOptions& options = {});

// Every finding of a set: decoding, then validation.
Diagnostics check_all(const PolicySet& set, const ValidationOptions& options = {});

}  // namespace gpubank::policy
