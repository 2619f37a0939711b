// What people do to the running twin through its API: fault injection, tidal freezes,
// decisions on low-utilisation reclaims. Each is an input of the run as much as its
// policies and seed, so `gpubank up --data-dir` journals it, durably and before it takes
// effect, and a restart applies it again at the same virtual time: the run stays a pure
// function of (policies, seed, interventions), and its replay regenerates the audit entries
// the interventions caused instead of finding a store that "holds another run".
//
// The journal is a store of its own (<data-dir>/interventions.db, store/store.hpp): one
// audit entry per intervention, hash-chained like the bank's, so `gpubank audit verify`
// checks it and an edited entry is a broken chain. Its actor is who intervened; its numbers
// hold the virtual time and the arguments. An intervention applies in the order of (virtual
// time, journal seq): a live one is journalled at the clock's now, after any the clock has
// passed.
//
// A journalled intervention that the run refuses (an unknown GPU, a decision on an alert no
// longer open) is refused again, identically, on replay: it changes nothing either time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "bank/audit.hpp"
#include "core/expected.hpp"
#include "store/store.hpp"
#include "twin/admission/model.hpp"

namespace gpubank::twin::live {

// POST /api/v1/gpus/<uuid>/health: the GPU reports an XID error (and double-bit ECC errors
// counted), or is healthy again.
struct GpuHealthChange {
  std::string uuid;
  bool healthy = false;
  int xid = 0;  // 1..1000 when unhealthy, 0 when healthy
  std::int64_t ecc_double_bit = 0;
  friend bool operator==(const GpuHealthChange&, const GpuHealthChange&) = default;
};

// POST /api/v1/tidal/<policy>/freeze|unfreeze.
struct TidalFreeze {
  std::string policy;
  bool freeze = true;
  std::string reason;
  friend bool operator==(const TidalFreeze&, const TidalFreeze&) = default;
};

// POST /api/v1/services/<policy>/faults: the next `count` replicas fail to load their model.
struct ModelLoadFaults {
  std::string policy;
  int count = 0;
  friend bool operator==(const ModelLoadFaults&, const ModelLoadFaults&) = default;
};

// POST /api/v1/governance/alerts/<workload-uid>/decision: a platform or group admin approves
// (the workload is stopped gracefully and deactivated) or rejects the reclaim of a
// ReclaimCandidate.
struct ReclaimDecisionRequest {
  std::string workload_uid;
  bool approve = false;
  std::string reason;
  // An approved downgrade to this WorkloadPriorityClass instead of a reclaim; empty: a
  // reclaim (or a rejection). Journalled only when set, so earlier entries read the same.
  std::string downgrade_to;
  friend bool operator==(const ReclaimDecisionRequest&, const ReclaimDecisionRequest&) = default;
};

// A self-service policy change that took effect (proposals/proposals.hpp: applied at once,
// or approved): the proposed object's document, put in force in the running twin
// (Platform::apply_policy_change).
struct PolicyChange {
  std::string proposal_id;
  std::string document;  // the object, YAML or JSON, as proposed
  friend bool operator==(const PolicyChange&, const PolicyChange&) = default;
};

using InterventionAction =
    std::variant<GpuHealthChange, TidalFreeze, ModelLoadFaults, ReclaimDecisionRequest, PolicyChange>;

struct Intervention {
  std::int64_t seq = 0;  // the journal's (0 before it is journalled)
  VirtualTime t = 0;     // the virtual time it applies at
  std::string actor;     // "api:<subject>"
  InterventionAction action;
  friend bool operator==(const Intervention&, const Intervention&) = default;
};

// Bounds shared with the API that accepts them.
inline constexpr std::size_t kMaxInterventionName = 253;     // uuid, policy name, workload uid
inline constexpr std::size_t kMaxInterventionReason = 1024;
inline constexpr int kMaxXid = 1000;
inline constexpr std::int64_t kMaxEccDoubleBit = 1'000'000;
inline constexpr int kMaxModelLoadFaults = 1000;
// A proposal's document, escaped into the entry's numbers, within bank::kMaxAuditNumbersLength.
inline constexpr std::size_t kMaxInterventionDocument = 48 * 1024;

// The audit entry that journals it (time_ms: when it was journalled, wall clock) and back.
// intervention_from_entry refuses anything this code would not have written, naming the
// field and the rule ("numbers.xid: an integer from 1 to 1000 when unhealthy").
[[nodiscard]] bank::AuditEntry intervention_entry(const Intervention& i, std::int64_t time_ms);
[[nodiscard]] Expected<Intervention> intervention_from_entry(const bank::AuditEntry& e);
// A name for messages: "GpuHealth", "TidalFreeze", "ModelLoadFaults", "ReclaimDecision",
// "PolicyChange".
[[nodiscard]] std::string_view intervention_kind(const Intervention& i);
// The arguments' checks (the same as the decoder's): an error names the field and the rule.
[[nodiscard]] Expected<bool> check_intervention(const Intervention& i);

class InterventionJournal {
 public:
  // Opens (or creates) the journal's store and reads what it holds. Errors: a store that
  // cannot be opened or read, a broken chain, an entry this code would not have written.
  static Expected<std::unique_ptr<InterventionJournal>> open(const std::string& location);

  // What it held when opened and what was journalled since, in the order they apply
  // (virtual time, then seq).
  [[nodiscard]] std::vector<Intervention> recorded() const;
  // Journals one (its own transaction, durable when this returns); sets its seq.
  Expected<bool> append(Intervention& i, std::int64_t now_ms);

 private:
  explicit InterventionJournal(std::unique_ptr<store::Store> store) : store_(std::move(store)) {}
  std::unique_ptr<store::Store> store_;
  std::vector<Intervention> recorded_;
};

}  // namespace gpubank::twin::live
