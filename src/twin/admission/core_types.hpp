// Value types of the admission core (core_impl.hpp): assignments, stored conditions, the
// pending-queue and candidate keys, DRS. Internal to src/twin/admission.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "twin/admission/amount.hpp"
#include "twin/admission/core.hpp"

namespace gpubank::twin::admission {

inline std::size_t at(int i) { return static_cast<std::size_t>(i); }

// flavorassigner.FlavorAssignmentMode, ordered from worst to best.
enum class Mode { NoFit = 0, Preempt = 1, DeferredFit = 2, Fit = 3 };
// flavorassigner.preemptionMode (the granular mode's first half).
enum class PMode { NoFit = 0, NoCandidates = 1, Preempt = 2, Reclaim = 3, Fit = 4 };

struct Granular {
  PMode p = PMode::NoFit;
  int borrow = std::numeric_limits<int>::max();
};

inline Mode to_mode(PMode p) {
  switch (p) {
    case PMode::NoFit: return Mode::NoFit;
    case PMode::Fit: return Mode::Fit;
    default: return Mode::Preempt;
  }
}

// classical.preemptionVariant
enum class Variant { Never, WithinCQ, Hierarchical, ReclaimWithoutBorrowing, ReclaimWhileBorrowing };

// A view of static text with its length known here: a search records one per target.
constexpr std::string_view variant_reason(Variant v) {
  switch (v) {
    case Variant::WithinCQ: return "InClusterQueue";
    case Variant::Hierarchical: return "InCohortReclamation";
    case Variant::ReclaimWhileBorrowing: return "InCohortReclaimWhileBorrowing";
    case Variant::ReclaimWithoutBorrowing: return "InCohortReclamation";
    case Variant::Never: break;
  }
  return "Unknown";
}

inline const char* human_reason(std::string_view reason) {
  if (reason == "InClusterQueue") return "prioritization in the ClusterQueue";
  if (reason == "InCohortReclamation") return "reclamation within the cohort";
  if (reason == "InCohortFairSharing") return "Fair Sharing within the cohort";
  if (reason == "InCohortReclaimWhileBorrowing") return "reclamation within the cohort while borrowing";
  return "UNKNOWN";
}

// flavorassigner reasonSeverity: how a NoFit is reported, least to most severe.
enum class NoFitReason { None = 0, WaitingForQuota = 2, ExceedsMaxQuota = 3, NoMatchingFlavor = 4 };

// One resource group's flavor search, as resolveNoFitReason reads its attempts: the least
// severe reason among the flavors that did not fit (None: none), and whether any flavor
// was attempted (a flavor skipped by the nomination mapping is not).
struct FlavorAttempts {
  NoFitReason least = NoFitReason::None;
  bool any = false;
};

using Usage = std::vector<std::pair<int, Amount>>;  // by flavor-resource index, sorted, merged

inline void add_to(Usage& u, int fr, Amount v) {
  auto it = std::lower_bound(u.begin(), u.end(), fr, [](const auto& p, int f) { return p.first < f; });
  if (it != u.end() && it->first == fr) {
    it->second = usage_add(it->second, v);
  } else {
    u.insert(it, {fr, v});
  }
}

inline Amount usage_of(const Usage& u, int fr) {
  for (const auto& [f, v] : u) {
    if (f == fr) return v;
  }
  return 0;
}

struct ResourceAssign {
  int rid = -1;  // the resource, interned (Core::resource_id)
  int flavor = -1;
  int fr = -1;
  Mode mode = Mode::NoFit;
  int borrow = 0;
};

// A pod set's totals as the flavor assigner sees them (requests times count, plus `pods`
// when the queue manages it), with per request the queue's resource group (-1: none) and
// an interned resource id. A workload's queue is fixed, so this is computed once.
struct PodSetTotals {
  std::vector<std::pair<std::string, Amount>> requests;
  std::vector<int> groups;
  std::vector<int> rids;
  // The requests' indices in the order Kueue's assignFlavors visits them: resources.
  // SliceRequests (VectorizedResourceRequests, on by default) keeps requests sorted by the
  // FNV-1a hash of the name, then the name. The first group that fails in this order is
  // the one its message names.
  std::vector<std::uint32_t> kueue_order;
};

struct PodSetAssign {
  const std::string* name = nullptr;  // the workload's pod set name
  std::int32_t count = 0;             // its pods in this assignment (fewer: partial admission)
  std::vector<ResourceAssign> flavors;                   // empty: NoFit
  std::vector<std::string> reasons;                      // empty: fits
  bool failed = false;
  // Status.err: a flavor check could not be evaluated; the last reason is its text.
  bool error = false;
  // resolveNoFitReason for this pod set: over the resource groups searched, the most
  // severe of each group's least severe NoFit flavor attempt; and whether any flavor was
  // attempted at all (a pod set without attempts is NoMatchingFlavor).
  NoFitReason no_fit = NoFitReason::None;
  bool attempted = false;

  // PodSetAssignment.RepresentativeMode: no reasons is a fit, also for a pod set that got no
  // flavor because it counts nothing the queue checks (no requests, or only undeclared ones
  // under IgnoreUndeclared).
  [[nodiscard]] Mode mode() const {
    if (failed) return Mode::NoFit;
    if (reasons.empty()) return Mode::Fit;
    if (flavors.empty()) return Mode::NoFit;
    Mode m = Mode::Fit;
    for (const auto& f : flavors) m = std::min(m, f.mode);
    return m;
  }
};

struct Assignment {
  std::vector<PodSetAssign> pod_sets;
  int borrowing = 0;
  Usage usage;
  std::optional<Mode> forced;  // DeferredFit set by the scheduler
  Mode assigned = Mode::NoFit;  // the pod sets' mode, set by assign(): read without walking them

  // Assignment.resolveNoFitReason: the most severe pod set reason.
  [[nodiscard]] NoFitReason no_fit_reason() const {
    NoFitReason r = NoFitReason::None;
    for (const auto& ps : pod_sets) {
      if (ps.mode() == Mode::NoFit) r = std::max(r, ps.attempted ? ps.no_fit : NoFitReason::NoMatchingFlavor);
    }
    return r;
  }
  [[nodiscard]] Mode mode() const { return forced ? *forced : assigned; }
  [[nodiscard]] Mode pod_sets_mode() const {
    if (pod_sets.empty()) return Mode::NoFit;
    Mode m = Mode::Fit;
    for (const auto& ps : pod_sets) m = std::min(m, ps.mode());
    return m;
  }
  // Assignment.Message(): per pod set that does not fit, its sorted reasons; a pod set
  // with an error has only that said.
  void message(std::string& out) const {
    out.clear();
    for (const auto& ps : pod_sets) {
      if (ps.error) {
        out.assign("failed to assign flavors to pod set ").append(*ps.name).append(": ").append(ps.reasons.back());
        return;
      }
      if (ps.reasons.empty()) continue;
      if (!out.empty()) out += "; ";
      out.append("couldn't assign flavors to pod set ").append(*ps.name).append(": ");
      if (ps.reasons.size() == 1) {
        out += ps.reasons.front();
        continue;
      }
      // Sorted through pointers: the reasons themselves are not copied.
      std::vector<const std::string*> reasons;
      reasons.reserve(ps.reasons.size());
      for (const auto& r : ps.reasons) reasons.push_back(&r);
      std::sort(reasons.begin(), reasons.end(), [](const std::string* x, const std::string* y) { return *x < *y; });
      for (std::size_t i = 0; i < reasons.size(); ++i) {
        if (i > 0) out += ", ";
        out += *reasons[i];
      }
    }
  }
};

struct Target {
  WorkloadId workload = 0;
  std::string_view reason;  // a static Kueue reason: InClusterQueue, InCohortReclamation, ...
};

// ---- statuses, stored compactly ---------------------------------------------------------------
// A status is written far more often than it is read: each admission, pending head and
// victim updates one, while status() runs when a driver prints or inspects a workload. So
// a condition is kept as a small record (type and message kind as enums, reason interned)
// and an admission as the chosen flavor-resource per pod set; status() renders Kueue's
// strings from them. The rendered text is the same byte for byte (SeededRuns pins it).
enum class CondType : std::uint8_t { QuotaReserved, Admitted, Evicted, Preempted, Requeued, Finished };

inline const char* phase_name(WorkloadPhase p) {
  switch (p) {
    case WorkloadPhase::Pending: return "pending";
    case WorkloadPhase::Admitted: return "admitted";
    case WorkloadPhase::Evicted: return "evicted";
    case WorkloadPhase::Finished: return "finished";
  }
  return "unknown";
}

inline const char* cond_type_name(CondType t) {
  switch (t) {
    case CondType::QuotaReserved: return "QuotaReserved";
    case CondType::Admitted: return "Admitted";
    case CondType::Evicted: return "Evicted";
    case CondType::Preempted: return "Preempted";
    case CondType::Requeued: return "Requeued";
    case CondType::Finished: return "Finished";
  }
  return "";
}

// The fixed messages, and Text for the rest.
enum class MessageKind : std::uint8_t {
  Text,
  QuotaReservedIn,   // "Quota reserved in ClusterQueue <the workload's queue>"
  WorkloadAdmitted,  // "The workload is admitted"
  NoReservation,     // "The workload has no reservation"
  JobFinished,       // "Job finished successfully"
  AsEvicted,         // the Evicted condition's message: a Preempted condition's, stored once
};

struct StoredCondition {
  CondType type = CondType::QuotaReserved;
  bool status = false;
  bool previously = false;  // "Previously: " + the message (an active condition reset)
  MessageKind kind = MessageKind::Text;
  const std::string* reason = nullptr;  // interned: see Core::intern
  VirtualTime last_transition = 0;
  std::string text;  // kind Text only
};

// Where an admitted pod set's resource went: the pod set's index and the flavor-resource.
struct AdmittedFlavor {
  std::uint32_t pod_set = 0;
  int fr = -1;
};

// Dominant resource share (pkg/cache/scheduler/fair_sharing.go DRS).
struct Drs {
  double weight = 1.0;
  double ratio = 0;  // unweighted, per mille of lendable
  int dominant = -1;  // resource index
  bool borrowing = false;  // some flavor-resource above the subtree quota

  [[nodiscard]] bool is_zero() const { return ratio == 0; }
  [[nodiscard]] bool zero_weight_borrows() const { return weight == 0 && !is_zero(); }
  [[nodiscard]] double weighted() const {
    if (is_zero()) return 0;
    if (weight == 0) return std::numeric_limits<double>::infinity();
    return ratio / weight;
  }
  [[nodiscard]] std::int64_t rounded() const {
    if (zero_weight_borrows()) return std::numeric_limits<std::int64_t>::max();
    return static_cast<std::int64_t>(std::ceil(weighted()));
  }
  static Drs negative() {
    Drs d;
    d.ratio = -1;
    return d;
  }
};

inline const Drs kNegativeDrs = Drs::negative();  // below every real share

inline int compare_drs(const Drs& a, const Drs& b) {
  auto cmp = [](double x, double y) { return x < y ? -1 : (x > y ? 1 : 0); };
  if (a.zero_weight_borrows() && b.zero_weight_borrows()) return cmp(a.ratio, b.ratio);
  if (a.zero_weight_borrows()) return 1;
  if (b.zero_weight_borrows()) return -1;
  return cmp(a.weighted(), b.weighted());
}

// Kueue breaks ties between workloads by comparing UIDs as strings (queue order,
// candidate order, the cycle's entry order). Labels that follow the UIDs' string order turn
// each of those comparisons into one integer comparison: equal UIDs share a label, a new
// UID takes a label between its neighbours', and when no gap is left every label is
// renumbered in place (order kept, so sorted containers stay sorted).
class UidOrder {
 public:
  // The label of `uid`, alive (and updated on renumbering) until every workload that
  // inserted it has released it.
  const std::uint64_t* insert(std::string_view uid) {
    auto [it, inserted] = labels_.try_emplace(std::string(uid));
    ++it->second.users;
    if (!inserted) return &it->second.label;
    const std::uint64_t low = it == labels_.begin() ? 0 : std::prev(it)->second.label;
    const auto next = std::next(it);
    const std::uint64_t high = next == labels_.end() ? kTop : next->second.label;
    if (high - low < 2) {
      renumber();
    } else {
      it->second.label =
          low + (next == labels_.end() ? std::min<std::uint64_t>(kGap, (high - low) / 2) : (high - low) / 2);
    }
    return &it->second.label;
  }
  // One workload with `uid` is gone; the last one takes the label with it (the others'
  // labels stay as they are, and still follow the string order).
  void release(std::string_view uid) {
    auto it = labels_.find(uid);
    if (it != labels_.end() && --it->second.users == 0) labels_.erase(it);
  }
  [[nodiscard]] std::size_t size() const { return labels_.size(); }

 private:
  static constexpr std::uint64_t kGap = std::uint64_t{1} << 24;
  static constexpr std::uint64_t kTop = ~std::uint64_t{0};
  void renumber() {
    // Spread evenly over the label space (at least 2^24 apart while there are fewer than
    // 2^40 UIDs).
    const std::uint64_t step = kTop / (labels_.size() + 1);
    std::uint64_t label = 0;
    for (auto& [uid, l] : labels_) l.label = (label += step);
  }
  struct Label {
    std::uint64_t label = 0;
    std::uint64_t users = 0;  // workloads with this UID
  };
  std::map<std::string, Label, std::less<>> labels_;
};

// A UID's first eight bytes, big-endian and zero-padded: where two prefixes differ they
// order the UIDs as their strings do (a zero pad sorts first, as a shorter string does),
// so only equal prefixes need the UidOrder label, which lives in a map node elsewhere.
inline std::uint64_t uid_prefix(std::string_view uid) {
  std::uint64_t prefix = 0;
  for (std::size_t i = 0; i < 8; ++i) prefix = (prefix << 8) | (i < uid.size() ? static_cast<unsigned char>(uid[i]) : 0U);
  return prefix;
}

// Kubernetes keeps timestamps in whole seconds (metav1.Time is RFC 3339 without a fraction):
// the creationTimestamp that orders a queue and the QuotaReserved condition's
// lastTransitionTime that orders candidates. So two workloads within the same second tie,
// and Kueue breaks the tie by UID. The core runs on milliseconds and orders by this.
inline VirtualTime whole_second(VirtualTime t) {
  const VirtualTime s = t / 1000;
  return (t % 1000 < 0 ? s - 1 : s) * 1000;
}

// common.CandidatesOrdering past its first two rules: lower priority first, then the most
// recent reservation, then UID (its first eight bytes, then its UidOrder label), then the
// id (equal UIDs). The one spelling of that order: the queues' ranked lists, the
// candidates of a search and the cohorts' shared orders all compare through it.
struct CandidateRank {
  std::int32_t priority = 0;
  VirtualTime reserved = 0;
  std::uint64_t uid_prefix = 0;
  const std::uint64_t* uid_label = nullptr;
  WorkloadId id = 0;
  bool operator<(const CandidateRank& o) const {
    if (priority != o.priority) return priority < o.priority;
    if (reserved != o.reserved) return reserved > o.reserved;
    if (uid_prefix != o.uid_prefix) return uid_prefix < o.uid_prefix;
    if (*uid_label != *o.uid_label) return *uid_label < *o.uid_label;
    return id < o.id;
  }
};

// common.CandidatesOrdering in full: evicted workloads first, then those of other queues
// before the preemptor's own, then CandidateRank.
inline bool candidates_ordering(bool x_evicted, bool x_own, const CandidateRank& x, bool y_evicted, bool y_own,
                                const CandidateRank& y) {
  if (x_evicted != y_evicted) return x_evicted;
  if (x_own != y_own) return !x_own;
  return x < y;
}

// An admitted workload in its queue's `ranked` list, with its CandidatesOrdering key.
struct RankEntry {
  std::int32_t priority = 0;
  WorkloadId id = 0;
  VirtualTime reserved_at = 0;
  std::uint64_t uid_prefix = 0;
  const std::uint64_t* uid_label = nullptr;
  // What a preemption search asks of a candidate besides its key, so that walking a queue
  // reads this array, not the records: its creation (the policy's tie-break) and, when it
  // uses one flavor-resource, which and how much (fr -1: several, read the record).
  VirtualTime creation = 0;
  int fr = -1;
  Amount amount = -1;
  [[nodiscard]] CandidateRank rank() const { return {priority, reserved_at, uid_prefix, uid_label, id}; }
};

// Pending-queue order (pkg/cache/queue baseCompareFunc): the sticky preemptor first, then
// higher priority, earlier queue-order timestamp, then UID.
struct OrderKey {
  bool not_sticky = true;
  std::int32_t priority = 0;
  VirtualTime creation = 0;
  const std::uint64_t* uid = nullptr;  // the workload's UID label (UidOrder)
  WorkloadId id = 0;
  bool operator<(const OrderKey& o) const {
    if (not_sticky != o.not_sticky) return !not_sticky;
    if (priority != o.priority) return priority > o.priority;
    if (creation != o.creation) return creation < o.creation;
    if (*uid != *o.uid) return *uid < *o.uid;
    return id < o.id;
  }
};

// ClusterQueue.RequeueIfNotPresent's reasons, as far as the twin meets them.
enum class Requeue { Generic, NoFit, NoCandidates, PendingPreemption, FailedAfterNomination, NamespaceMismatch };

}  // namespace gpubank::twin::admission
