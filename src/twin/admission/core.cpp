// The admission core. Each function names the upstream piece it reproduces (Kueue main at
// ff69552); see core.hpp for the model and kueue-semantics.md for the formulas.
#include "twin/admission/core.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "core/fnv1a.hpp"
#include "twin/admission/amount.hpp"
#include "twin/admission/node_match.hpp"
#include "twin/admission/quota_tree.hpp"

namespace gpubank::twin {
namespace {

std::size_t at(int i) { return static_cast<std::size_t>(i); }

// flavorassigner.FlavorAssignmentMode, ordered from worst to best.
enum class Mode { NoFit = 0, Preempt = 1, DeferredFit = 2, Fit = 3 };
// flavorassigner.preemptionMode (the granular mode's first half).
enum class PMode { NoFit = 0, NoCandidates = 1, Preempt = 2, Reclaim = 3, Fit = 4 };

struct Granular {
  PMode p = PMode::NoFit;
  int borrow = std::numeric_limits<int>::max();
};

Mode to_mode(PMode p) {
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

const char* human_reason(std::string_view reason) {
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

void add_to(Usage& u, int fr, Amount v) {
  auto it = std::lower_bound(u.begin(), u.end(), fr, [](const auto& p, int f) { return p.first < f; });
  if (it != u.end() && it->first == fr) {
    it->second = usage_add(it->second, v);
  } else {
    u.insert(it, {fr, v});
  }
}

Amount usage_of(const Usage& u, int fr) {
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

const char* phase_name(WorkloadPhase p) {
  switch (p) {
    case WorkloadPhase::Pending: return "pending";
    case WorkloadPhase::Admitted: return "admitted";
    case WorkloadPhase::Evicted: return "evicted";
    case WorkloadPhase::Finished: return "finished";
  }
  return "unknown";
}

const char* cond_type_name(CondType t) {
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

const Drs kNegativeDrs = Drs::negative();  // below every real share

int compare_drs(const Drs& a, const Drs& b) {
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
std::uint64_t uid_prefix(std::string_view uid) {
  std::uint64_t prefix = 0;
  for (std::size_t i = 0; i < 8; ++i) prefix = (prefix << 8) | (i < uid.size() ? static_cast<unsigned char>(uid[i]) : 0U);
  return prefix;
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

enum class Requeue { Generic, NoFit, NoCandidates, PendingPreemption, FailedAfterNomination };

class Core final : public AdmissionCore {
 public:
  struct Group {
    std::vector<std::string> resources;
    std::vector<int> flavors;
  };
  struct Queue {
    int node = -1;
    ClusterQueueSpec spec;
    std::vector<Group> groups;
    std::map<std::string, int> group_by_resource;
    // Every pending workload, in queue order. Inadmissible ones (Kueue's
    // inadmissibleWorkloads) stay in place, marked with the generation in which they were
    // set aside: requeueing them all is one increment of `generation`.
    std::set<OrderKey> pending;
    std::uint64_t generation = 1;
    // Where the search for a head starts: every pending workload ordered before it is
    // inadmissible in scan_generation (nullopt: all of them are). Only valid while
    // scan_generation == generation. It spares a queue of many inadmissible workloads a
    // walk over all of them for every head, and a requeue (a new generation) costs nothing.
    std::optional<OrderKey> scan_from;
    std::uint64_t scan_generation = 0;
    std::optional<WorkloadId> sticky;
    std::vector<WorkloadId> holding;  // reserving quota: admitted and evicted-not-released
    // The admitted (not evicted) part of `holding` in CandidatesOrdering's order within one
    // queue (priority, newest reservation, UID): preemption walks it lazily instead of
    // sorting every workload of a cohort for every preemptor.
    std::vector<RankEntry> ranked;
    // The evicted part of `holding` (evicted, not released), in no particular order: the
    // preemption search looks at these first, without a walk over every holder.
    std::vector<WorkloadId> evicted;
    std::set<std::string> bulk_moved_shapes;  // hashToBulkMoveReason
    std::string reserved_message;             // "Quota reserved in ClusterQueue <name>"
    std::string path;  // "/<root cohort>/.../<name>", as preemption messages name it
  };
  struct Wl {
    WorkloadSpec spec;
    WorkloadPhase phase = WorkloadPhase::Pending;
    VirtualTime admitted_at = -1;             // last admission, -1 if never
    std::vector<StoredCondition> conditions;  // in the order Kueue first sets them
    // The admission while it lasts (Admitted, Evicted, and Finished after an admission):
    // per pod set in order, its resources' flavor-resources in resource-name order.
    bool has_admission = false;
    std::vector<AdmittedFlavor> admitted;
    std::unique_ptr<Admission> restored;  // restore_admitted's admission, rendered verbatim
    int queue = -1;
    Usage usage;  // while holding quota
    bool in_pending = false;
    std::uint64_t inadmissible_generation = 0;  // == queue's generation: inadmissible
    const std::string* refusal = nullptr;  // interned spec.refusal_reason; next to the head loop's reads
    OrderKey key;
    std::size_t holding_pos = 0;
    std::size_t evicted_pos = 0;  // in its queue's `evicted` while Evicted
    VirtualTime reserved_at = 0;
    const std::uint64_t* uid_label = nullptr;  // UidOrder
    std::uint64_t uid_prefix = 0;              // uid_prefix(spec.uid)
    std::string shape;  // computeSchedulingHash's input, canonical text
    std::vector<PodSetTotals> totals;  // per pod set, from the first assignment on
    bool partial = false;  // some pod set may be admitted with fewer pods (CanBePartiallyAdmitted)
    // The admission's pod counts where partial admission took fewer pods than the spec's,
    // per pod set; empty when the admission has the spec's counts.
    std::vector<std::int32_t> admitted_counts;
  };

  // ---- prefetching ------------------------------------------------------------------------
  // A cycle that admits a thousand heads is bound by memory latency, not by instructions:
  // each head's records (its queue's first pending node, the workload record and the
  // vectors hanging off it) lie scattered over the heap, and their cache misses would come
  // one after another. The loops over heads ask for the records of the heads one or two
  // steps ahead, so those misses overlap with the work on the current head. A prefetch
  // changes no state.
  static void prefetch(const void* p) { __builtin_prefetch(p); }
  void prefetch_record(WorkloadId id) const {
    const char* p = reinterpret_cast<const char*>(workloads_[id].get());
    for (std::size_t offset = 0; offset < sizeof(Wl); offset += 64) prefetch(p + offset);
  }
  // What assign() reads beyond the record, which must have arrived already.
  void prefetch_for_assign(WorkloadId id) const {
    const Wl& w = wl(id);
    prefetch(w.spec.pod_sets.data());
    prefetch(w.totals.data());
    if (!w.totals.empty()) prefetch(w.totals.front().requests.data());
  }
  // What admit() writes beyond the record.
  void prefetch_for_admit(WorkloadId id) const {
    const Wl& w = wl(id);
    prefetch(w.conditions.data());
    prefetch(w.admitted.data());
    prefetch(w.usage.data());
  }

  // The scheduling shape: priority and, per pod set, name, count, requests and the
  // placement constraints the twin models.
  static std::string shape_of(const WorkloadSpec& w) {
    std::string s = std::to_string(w.priority);
    for (const auto& ps : w.pod_sets) {
      s += '|' + ps.name + '#' + std::to_string(ps.count);
      if (ps.min_count) s += '~' + std::to_string(*ps.min_count);  // the hash includes minCount
      for (const auto& [r, v] : ps.requests) s += ';' + r + '=' + std::to_string(v);
      for (const auto& [k, v] : ps.node_selector) s += ";ns:" + k + '=' + v;
      // Length-prefixed: keys, values and messages may hold any separator.
      const auto field = [&s](const std::string& text) { s += std::to_string(text.size()) + ':' + text; };
      for (const auto& term : ps.required_node_affinity) {
        s += ";term";
        for (const auto& r : term.match_expressions) {
          s += ";na" + std::to_string(static_cast<int>(r.op)) + ',' + std::to_string(r.values.size()) + ',' +
               std::to_string(r.errors.size()) + ',';
          field(r.key);
          for (const auto& v : r.values) field(v);
          for (const auto& e : r.errors) field(e);
        }
      }
      for (const auto& t : ps.tolerations) {
        s += ";t:" + t.key + '/' + std::to_string(static_cast<int>(t.op)) + '/' + t.value + '/' +
             (t.effect ? std::to_string(static_cast<int>(*t.effect)) : "*");
      }
    }
    return s;
  }

  Core(const CoreOptions& options, std::vector<ResourceFlavorSpec> flavors) : options_(options) {
    for (auto& f : flavors) {
      flavor_index_.emplace(f.name, static_cast<int>(flavors_.size()));
      flavors_.push_back(std::move(f));
    }
  }

  // ---- construction -------------------------------------------------------------------

  std::optional<std::string> build(std::vector<CohortSpec> cohorts, std::vector<ClusterQueueSpec> queues) {
    // Flavor-resource indices from every quota in the tree, in first-seen order.
    auto collect = [&](const std::vector<ResourceGroup>& groups, const std::string& owner) -> std::optional<std::string> {
      for (const auto& g : groups) {
        for (const auto& fq : g.flavors) {
          if (!flavor_index_.contains(fq.flavor)) {
            // Kueue keeps such a queue inactive; the twin refuses the input instead.
            return owner + ": flavor \"" + fq.flavor + "\" is not a known ResourceFlavor";
          }
          for (const auto& rq : fq.resources) fr_of(flavor_index_.at(fq.flavor), rq.resource, true);
        }
      }
      return std::nullopt;
    };
    for (const auto& c : cohorts) {
      if (auto e = collect(c.resource_groups, "Cohort " + c.name)) return e;
    }
    for (const auto& q : queues) {
      if (auto e = collect(q.resource_groups, "ClusterQueue " + q.name)) return e;
    }
    const std::size_t frs = fr_flavor_.size();
    std::vector<QuotaNode> nodes;
    auto fill_quota = [&](QuotaNode& n, const std::vector<ResourceGroup>& groups) {
      n.nominal.assign(frs, 0);
      n.borrowing_limit.assign(frs, kNoLimit);
      n.lending_limit.assign(frs, kNoLimit);
      for (const auto& g : groups) {
        for (const auto& fq : g.flavors) {
          for (const auto& rq : fq.resources) {
            const int fr = fr_of(flavor_index_.at(fq.flavor), rq.resource, false);
            n.nominal[at(fr)] = rq.nominal;
            if (rq.borrowing_limit) n.borrowing_limit[at(fr)] = *rq.borrowing_limit;
            if (rq.lending_limit) n.lending_limit[at(fr)] = *rq.lending_limit;
          }
        }
      }
    };
    // Cohorts: declared ones, then implicit ones named by a parentName or a cohort field.
    for (const auto& c : cohorts) {
      if (cohort_index_.contains(c.name)) return "Cohort " + c.name + ": declared twice";
      QuotaNode n;
      n.name = c.name;
      n.fair_weight = c.fair_weight;
      fill_quota(n, c.resource_groups);
      auto& covered = cohort_covered_[static_cast<int>(nodes.size())];
      for (const auto& g : c.resource_groups) {
        for (const auto& fq : g.flavors) {
          for (const auto& rq : fq.resources) covered.push_back(fr_of(flavor_index_.at(fq.flavor), rq.resource, false));
        }
      }
      cohort_index_.emplace(c.name, static_cast<int>(nodes.size()));
      nodes.push_back(std::move(n));
    }
    auto ensure_cohort = [&](const std::string& name) {
      auto it = cohort_index_.find(name);
      if (it != cohort_index_.end()) return it->second;
      QuotaNode n;
      n.name = name;
      fill_quota(n, {});
      const int idx = static_cast<int>(nodes.size());
      cohort_index_.emplace(name, idx);
      nodes.push_back(std::move(n));
      return idx;
    };
    for (const auto& c : cohorts) {
      if (c.parent.empty()) continue;
      const int parent = ensure_cohort(c.parent);
      nodes[at(cohort_index_.at(c.name))].parent = parent;
    }
    for (auto& q : queues) {
      if (queue_index_.contains(q.name)) return "ClusterQueue " + q.name + ": declared twice";
      QuotaNode n;
      n.name = q.name;
      n.is_queue = true;
      n.fair_weight = q.fair_weight;
      fill_quota(n, q.resource_groups);
      if (!q.cohort.empty()) n.parent = ensure_cohort(q.cohort);
      Queue queue;
      queue.node = static_cast<int>(nodes.size());
      for (const auto& g : q.resource_groups) {
        Group group{g.covered_resources, {}};
        for (const auto& fq : g.flavors) group.flavors.push_back(flavor_index_.at(fq.flavor));
        for (const auto& r : g.covered_resources) {
          queue.group_by_resource.emplace(r, static_cast<int>(queue.groups.size()));
        }
        queue.groups.push_back(std::move(group));
      }
      queue.spec = std::move(q);
      queue.reserved_message = "Quota reserved in ClusterQueue " + queue.spec.name;
      queue_index_.emplace(queue.spec.name, static_cast<int>(queues_.size()));
      queues_.push_back(std::move(queue));
      nodes.push_back(std::move(n));
    }
    node_queue_.assign(nodes.size(), -1);
    for (std::size_t qi = 0; qi < queues_.size(); ++qi) node_queue_[at(queues_[qi].node)] = static_cast<int>(qi);
    // Cycles in the cohort tree (hierarchy.HasCycle upstream): report each once.
    std::vector<int> state(nodes.size(), 0);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      std::vector<int> path;
      int n = static_cast<int>(i);
      while (n >= 0 && state[at(n)] == 0) {
        state[at(n)] = 1;
        path.push_back(n);
        n = nodes[at(n)].parent;
      }
      if (n >= 0 && state[at(n)] == 1) {
        std::string members;
        auto start = std::find(path.begin(), path.end(), n);
        for (auto it = start; it != path.end(); ++it) members += (members.empty() ? "" : " -> ") + nodes[at(*it)].name;
        return "cohort tree has a cycle: " + members + " -> " + nodes[at(n)].name;
      }
      for (int p : path) state[at(p)] = 2;
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const int parent = nodes[i].parent;
      if (parent < 0) continue;
      (nodes[i].is_queue ? nodes[at(parent)].child_queues : nodes[at(parent)].child_cohorts).push_back(static_cast<int>(i));
    }
    heights_.assign(nodes.size(), 0);
    tree_ = QuotaTree(std::move(nodes), frs);
    for (std::size_t i = 0; i < tree_.size(); ++i) {
      if (!tree_.node(static_cast<int>(i)).is_queue) heights_[i] = height(static_cast<int>(i));
    }
    for (auto& queue : queues_) {
      std::vector<const std::string*> names;
      for (int n = queue.node; n >= 0; n = tree_.node(n).parent) names.push_back(&tree_.node(n).name);
      for (auto it = names.rbegin(); it != names.rend(); ++it) queue.path.append("/").append(**it);
    }
    return std::nullopt;
  }

  // ---- AdmissionCore ------------------------------------------------------------------

  WorkloadId submit(WorkloadSpec spec, VirtualTime now) override {
    const auto id = static_cast<WorkloadId>(workloads_.size());
    Wl w;
    w.spec = std::move(spec);
    w.shape = shape_of(w.spec);
    w.partial = can_be_partially_admitted(w.spec);
    if (!w.spec.refusal_message.empty()) w.refusal = intern(w.spec.refusal_reason);
    auto it = queue_index_.find(w.spec.cluster_queue);
    w.uid_label = uid_order_.insert(w.spec.uid);
    w.uid_prefix = uid_prefix(w.spec.uid);
    workloads_.push_back(std::make_unique<Wl>(std::move(w)));
    Wl& x = *workloads_.back();
    // Storage for the usual lifetime (conditions, one admission's flavors and usage) is
    // taken now rather than during a cycle, and the conditions' lines are written once: a
    // cycle that admits a thousand new workloads otherwise pays for first touches of fresh
    // memory (page faults) inside the cycle.
    x.conditions.resize(4);
    x.conditions.clear();
    x.admitted.reserve(2);
    x.usage.reserve(2);
    if (it == queue_index_.end()) {
      set_pending(id, options_.unadmitted_workloads_observability ? r_misconfigured_ : r_inadmissible_,
                  "ClusterQueue " + x.spec.cluster_queue + " doesn't exist", now, nullptr);
      return id;
    }
    x.queue = it->second;
    // As Kueue's workload.NewInfo computes TotalRequests when a workload enters the queue
    // manager, not in the scheduling cycle.
    totals_of(x);
    push_active(id, true);
    return id;
  }

  Expected<WorkloadId> restore_admitted(WorkloadSpec spec, Admission admission, VirtualTime admitted_at) override {
    auto it = queue_index_.find(admission.cluster_queue);
    if (it == queue_index_.end()) {
      return Unexpected{"admitted to ClusterQueue \"" + admission.cluster_queue + "\", which does not exist"};
    }
    Usage usage;
    for (const auto& ps : admission.pod_sets) {
      for (const auto& [resource, amount] : ps.resource_usage) {
        std::string flavor;
        for (const auto& [r, f] : ps.flavors) {
          if (r == resource) flavor = f;
        }
        if (flavor.empty()) continue;  // not quota-managed
        auto fit = flavor_index_.find(flavor);
        if (fit == flavor_index_.end()) {
          return Unexpected{"pod set " + ps.name + " is assigned flavor \"" + flavor + "\", which does not exist"};
        }
        const int fr = fr_of(fit->second, resource, false);
        if (fr < 0) {
          return Unexpected{"pod set " + ps.name + ": ClusterQueue " + admission.cluster_queue + " has no quota for " +
                            resource + " in flavor " + flavor};
        }
        add_to(usage, fr, amount);
      }
    }
    const auto id = static_cast<WorkloadId>(workloads_.size());
    Wl w;
    w.spec = std::move(spec);
    w.shape = shape_of(w.spec);
    w.queue = it->second;
    w.usage = std::move(usage);
    w.phase = WorkloadPhase::Admitted;
    w.has_admission = true;
    w.restored = std::make_unique<Admission>(std::move(admission));
    w.admitted_at = admitted_at;
    w.reserved_at = admitted_at;
    // The queue is the one named by the admission, so its message is this one's.
    set_condition(w, CondType::QuotaReserved, true, r_quota_reserved_, MessageKind::QuotaReservedIn, {}, admitted_at);
    set_condition(w, CondType::Admitted, true, r_admitted_, MessageKind::WorkloadAdmitted, {}, admitted_at);
    w.uid_label = uid_order_.insert(w.spec.uid);
    w.uid_prefix = uid_prefix(w.spec.uid);
    workloads_.push_back(std::make_unique<Wl>(std::move(w)));
    hold(id);
    return id;
  }

  void finish(WorkloadId id, VirtualTime now) override {
    Wl& w = wl_checked(id);
    if (w.phase == WorkloadPhase::Finished) return;
    const bool held = w.phase == WorkloadPhase::Admitted || w.phase == WorkloadPhase::Evicted;
    if (held) {
      release(id);
    } else {
      unqueue(id);
    }
    w.phase = WorkloadPhase::Finished;
    set_condition(w, CondType::Finished, true, r_succeeded_, MessageKind::JobFinished, {}, now);
    if (held) requeue_inadmissible(w.queue);
  }

  Expected<bool> forget(WorkloadId id) override {
    if (id >= workloads_.size()) return Unexpected{"workload " + std::to_string(id) + " does not exist"};
    if (!workloads_[id]) return Unexpected{"workload " + std::to_string(id) + " was forgotten already"};
    Wl& w = *workloads_[id];
    if (w.phase != WorkloadPhase::Finished) {
      return Unexpected{"workload " + w.spec.ns + "/" + w.spec.name + " is " + phase_name(w.phase) +
                        ": only a finished workload can be forgotten"};
    }
    // A finished workload is in no queue, list or cache of the core (finish() took it out
    // of them). Its queue's head search may still start from its key: that hint is dropped,
    // since the key's UID label may go with it.
    if (w.queue >= 0) {
      Queue& q = queues_[at(w.queue)];
      if (q.scan_from && q.scan_from->id == id) {
        q.scan_from.reset();
        q.scan_generation = 0;  // never a generation: the next search starts at the front
      }
    }
    uid_order_.release(w.spec.uid);
    workloads_[id].reset();
    return true;
  }

  void release_evicted(WorkloadId id, VirtualTime now) override {
    Wl& w = wl_checked(id);
    if (w.phase != WorkloadPhase::Evicted) return;
    release(id);
    std::string message;
    for (const auto& c : w.conditions) {
      if (c.type == CondType::Evicted) message = render_message(w, c);
    }
    // workload.UnsetQuotaReservationWithCondition + SyncAdmittedCondition, then requeue.
    set_condition(w, CondType::QuotaReserved, false, r_preempted_, MessageKind::Text, message, now);
    set_condition(w, CondType::Admitted, false, r_no_reservation_, MessageKind::NoReservation, {}, now);
    set_condition(w, CondType::Requeued, true, r_preempted_, MessageKind::Text, message, now);
    w.has_admission = false;
    w.admitted.clear();
    w.restored.reset();
    w.phase = WorkloadPhase::Pending;
    push_active(id, true);
    requeue_inadmissible(w.queue);
  }

  Expected<bool> set_quota(const std::string& cluster_queue, const std::string& flavor,
                           const ResourceQuota& quota) override {
    auto qit = queue_index_.find(cluster_queue);
    if (qit == queue_index_.end()) return Unexpected{"ClusterQueue \"" + cluster_queue + "\" does not exist"};
    auto fit = flavor_index_.find(flavor);
    if (fit == flavor_index_.end()) return Unexpected{"ResourceFlavor \"" + flavor + "\" does not exist"};
    Queue& q = queues_[at(qit->second)];
    bool covered = false;
    for (auto& g : q.spec.resource_groups) {
      for (auto& fq : g.flavors) {
        if (fq.flavor != flavor) continue;
        for (auto& rq : fq.resources) {
          if (rq.resource != quota.resource) continue;
          rq = quota;
          covered = true;
        }
      }
    }
    const int fr = covered ? fr_of(fit->second, quota.resource, false) : -1;
    if (fr < 0) {
      return Unexpected{"ClusterQueue " + cluster_queue + " has no quota for " + quota.resource + " in flavor " + flavor};
    }
    if (quota.nominal < 0 || (quota.borrowing_limit && *quota.borrowing_limit < 0) ||
        (quota.lending_limit && (*quota.lending_limit < 0 || *quota.lending_limit > quota.nominal))) {
      return Unexpected{"ClusterQueue " + cluster_queue + ": quotas must be >= 0 and lendingLimit <= nominalQuota"};
    }
    tree_.set_quota(q.node, fr, quota.nominal, quota.borrowing_limit.value_or(kNoLimit),
                    quota.lending_limit.value_or(kNoLimit));
    changed();
    requeue_inadmissible(qit->second);
    return true;
  }

  Expected<bool> set_cohort_quota(const std::string& cohort, const std::string& flavor,
                                  const ResourceQuota& quota) override {
    auto cit = cohort_index_.find(cohort);
    if (cit == cohort_index_.end()) return Unexpected{"Cohort \"" + cohort + "\" does not exist"};
    auto fit = flavor_index_.find(flavor);
    if (fit == flavor_index_.end()) return Unexpected{"ResourceFlavor \"" + flavor + "\" does not exist"};
    const int n = cit->second;
    const int fr = fr_of(fit->second, quota.resource, false);
    const auto covered = cohort_covered_.find(n);
    if (fr < 0 || covered == cohort_covered_.end() ||
        std::find(covered->second.begin(), covered->second.end(), fr) == covered->second.end()) {
      return Unexpected{"Cohort " + cohort + " has no quota for " + quota.resource + " in flavor " + flavor};
    }
    if (quota.nominal < 0 || (quota.borrowing_limit && *quota.borrowing_limit < 0) ||
        (quota.lending_limit && *quota.lending_limit < 0)) {
      return Unexpected{"Cohort " + cohort + ": quotas must be >= 0"};
    }
    if (!tree_.has_parent(n) && (quota.borrowing_limit || quota.lending_limit)) {
      return Unexpected{"Cohort " + cohort + ": borrowingLimit and lendingLimit need a parent Cohort"};
    }
    tree_.set_quota(n, fr, quota.nominal, quota.borrowing_limit.value_or(kNoLimit), quota.lending_limit.value_or(kNoLimit));
    changed();
    requeue_tree(n);
    return true;
  }

  Expected<bool> evict(WorkloadId id, const std::string& reason, const std::string& message, VirtualTime now) override {
    if (id >= workloads_.size()) return Unexpected{"no workload with id " + std::to_string(id)};
    if (!workloads_[id]) return Unexpected{"workload " + std::to_string(id) + " was forgotten"};
    Wl& w = wl(id);
    if (w.phase != WorkloadPhase::Admitted) return Unexpected{"workload " + w.spec.ns + "/" + w.spec.name + " is not admitted"};
    set_eviction_conditions(w, intern(reason), message, now);
    mark_evicted(id);
    changed();
    return true;
  }

  Expected<bool> set_priority(WorkloadId id, std::int32_t priority) override {
    if (id >= workloads_.size()) return Unexpected{"no workload with id " + std::to_string(id)};
    if (!workloads_[id]) return Unexpected{"workload " + std::to_string(id) + " was forgotten"};
    Wl& w = wl(id);
    if (w.phase != WorkloadPhase::Admitted) return Unexpected{"workload " + w.spec.ns + "/" + w.spec.name + " is not admitted"};
    if (w.spec.priority == priority) return false;
    // Its place in the queue's candidate ranking moves; every memo keyed by the state's id
    // (targets, shared orders, removal runs) is rebuilt under the new one. Kueue's workload
    // controller requeues the cohort tree's inadmissible workloads when an admitted
    // workload's priority changes (workload.PriorityChanged in its Update handler): one may
    // now preempt it.
    Queue& q = queues_[at(w.queue)];
    unrank(q, id);
    w.spec.priority = priority;
    rank(q, id);
    changed();
    requeue_inadmissible(w.queue);
    return true;
  }

  void do_run_cycle(VirtualTime now, CycleResult& out) override;

  [[nodiscard]] bool has_active_heads() const override {
    // Settling moves bulk-moved class members out of the heap, which the next cycle would
    // do anyway; nothing observable changes.
    auto* self = const_cast<Core*>(this);
    return std::any_of(self->queues_.begin(), self->queues_.end(),
                       [self](Queue& q) { return self->find_head(q).has_value(); });
  }
  [[nodiscard]] std::size_t workload_count() const override { return workloads_.size(); }
  [[nodiscard]] const WorkloadSpec& spec(WorkloadId id) const override { return wl_checked(id).spec; }
  [[nodiscard]] WorkloadStatus status(WorkloadId id) const override { return render_status(wl_checked(id)); }
  [[nodiscard]] WorkloadPhase phase(WorkloadId id) const override { return wl_checked(id).phase; }
  [[nodiscard]] std::vector<std::string> cluster_queue_names() const override {
    std::vector<std::string> out;
    for (const auto& q : queues_) out.push_back(q.spec.name);
    return out;
  }
  [[nodiscard]] std::vector<std::string> cohort_names() const override {
    std::vector<std::pair<int, std::string>> byIndex;
    for (const auto& [name, idx] : cohort_index_) byIndex.emplace_back(idx, name);
    std::sort(byIndex.begin(), byIndex.end());
    std::vector<std::string> out;
    for (auto& p : byIndex) out.push_back(std::move(p.second));
    return out;
  }
  [[nodiscard]] ClusterQueueStatus cluster_queue_status(const std::string& name) const override;
  [[nodiscard]] std::optional<QuotaFigures> figures(const std::string& node, const std::string& flavor,
                                                    const std::string& resource) const override {
    int n = -1;
    if (auto q = queue_index_.find(node); q != queue_index_.end()) n = queues_[at(q->second)].node;
    if (auto c = cohort_index_.find(node); c != cohort_index_.end()) n = c->second;
    auto f = flavor_index_.find(flavor);
    if (n < 0 || f == flavor_index_.end()) return std::nullopt;
    const int fr = fr_of(f->second, resource, false);
    if (fr < 0) return std::nullopt;
    return QuotaFigures{tree_.subtree_quota(n, fr), tree_.usage(n, fr), tree_.available(n, fr),
                        tree_.potential_available(n, fr), tree_.nominal(n, fr)};
  }

 private:
  struct Entry {
    WorkloadId w = 0;
    int queue = -1;
    Assignment a;
    std::vector<Target> targets;
    enum class Status { NotNominated, Skipped, Nominated, Assumed } status = Status::NotNominated;
    Requeue requeue = Requeue::Generic;
    std::string message;
    const std::string* granular_reason = nullptr;  // interned; nullptr: none
    // The head's node in its queue's `pending`: a head stays there during the cycle (see
    // do_run_cycle) and only an admitted one leaves it.
    std::set<OrderKey>::const_iterator pending_at;
  };

  Wl& wl(WorkloadId id) { return *workloads_[id]; }
  [[nodiscard]] const Wl& wl(WorkloadId id) const { return *workloads_[id]; }
  Wl& wl_checked(WorkloadId id) { return const_cast<Wl&>(std::as_const(*this).wl_checked(id)); }
  [[nodiscard]] const Wl& wl_checked(WorkloadId id) const {
    const auto& w = workloads_.at(id);
    if (!w) throw std::out_of_range("admission core: workload " + std::to_string(id) + " was forgotten");
    return *w;
  }

  // ---- indices --------------------------------------------------------------------------

  int fr_of(int flavor, const std::string& resource, bool create) const {
    auto it = fr_index_.find({flavor, resource});
    if (it != fr_index_.end()) return it->second;
    if (!create) return -1;
    const int fr = static_cast<int>(fr_flavor_.size());
    fr_index_.emplace(std::make_pair(flavor, resource), fr);
    fr_flavor_.push_back(flavor);
    fr_resource_.push_back(resource);
    auto r = std::find(resource_names_.begin(), resource_names_.end(), resource);
    if (r == resource_names_.end()) r = resource_names_.insert(resource_names_.end(), resource);
    fr_resource_index_.push_back(static_cast<int>(r - resource_names_.begin()));
    return fr;
  }

  [[nodiscard]] int height(int n) const {  // classical.getNodeHeight
    const auto& x = tree_.node(n);
    int h = std::min<int>(static_cast<int>(x.child_cohorts.size() + x.child_queues.size()), 1);
    for (int c : x.child_cohorts) h = std::max(h, height(c) + 1);
    return h;
  }

  // ---- pending queues (pkg/cache/queue/cluster_queue.go) ----------------------------------

  [[nodiscard]] bool inadmissible(const Wl& w) const {
    return w.inadmissible_generation == queues_[at(w.queue)].generation;
  }

  // Makes a pending workload active. check_shape: a workload added or updated
  // (ClusterQueue.PushOrUpdate) waits with its equivalence class if that class was
  // bulk-moved to inadmissible.
  void push_active(WorkloadId id, bool check_shape = false) {
    Wl& w = wl(id);
    Queue& q = queues_[at(w.queue)];
    const OrderKey key{!(q.sticky && *q.sticky == id), w.spec.priority, w.spec.creation, w.uid_label, id};
    if (w.in_pending && key.not_sticky != w.key.not_sticky) pending_erase(q, w);
    const bool was_pending = w.in_pending;
    if (!w.in_pending) {
      w.key = key;
      pending_insert(q, w);
    }
    if (check_shape && !was_pending && options_.scheduling_equivalence_hashing &&
        q.spec.queueing_strategy == QueueingStrategy::BestEffortFIFO && q.bulk_moved_shapes.contains(w.shape)) {
      set_inadmissible(q, w);
      return;
    }
    set_active(q, w);
  }

  // The only ways `pending` and inadmissible_generation change.
  // Every head leaves its queue at the start of a cycle and most come back at the end:
  // the set's nodes are kept for reuse instead of being freed and allocated again.
  void pending_insert(Queue& q, Wl& w) {
    if (spare_pending_nodes_.empty()) {
      q.pending.insert(w.key);
    } else {
      auto node = std::move(spare_pending_nodes_.back());
      spare_pending_nodes_.pop_back();
      node.value() = w.key;
      q.pending.insert(std::move(node));
    }
    w.in_pending = true;
    if (w.inadmissible_generation != q.generation) scan_from_here(q, w.key);
  }
  void pending_erase(Queue& q, Wl& w) {
    const auto it = q.pending.find(w.key);
    if (it != q.pending.end()) {
      pending_erase(q, w, it);
    } else {
      w.in_pending = false;
    }
  }
  // The same, where the caller holds w's position (a head just found): no second search.
  void pending_erase(Queue& q, Wl& w, std::set<OrderKey>::const_iterator at_w) {
    auto node = q.pending.extract(at_w);
    if (spare_pending_nodes_.size() < kSparePendingNodes) spare_pending_nodes_.push_back(std::move(node));
    w.in_pending = false;
  }
  void set_inadmissible(Queue& q, Wl& w) { w.inadmissible_generation = q.generation; }
  void set_active(Queue& q, Wl& w) {
    w.inadmissible_generation = 0;
    if (w.in_pending) scan_from_here(q, w.key);
  }
  // An active workload at `key`: the head search must not start after it.
  static void scan_from_here(Queue& q, const OrderKey& key) {
    if (q.scan_generation == q.generation && (!q.scan_from || key < *q.scan_from)) q.scan_from = key;
  }

  void push_inadmissible(WorkloadId id) {
    Wl& w = wl(id);
    Queue& q = queues_[at(w.queue)];
    const OrderKey key{!(q.sticky && *q.sticky == id), w.spec.priority, w.spec.creation, w.uid_label, id};
    if (w.in_pending && key.not_sticky != w.key.not_sticky) pending_erase(q, w);
    if (!w.in_pending) {
      w.key = key;
      pending_insert(q, w);
    }
    set_inadmissible(q, w);
  }

  // The first active pending workload; members of a bulk-moved equivalence class are set
  // aside on the way.
  std::optional<WorkloadId> find_head(Queue& q) {
    const auto it = find_head_at(q);
    if (it == q.pending.end()) return std::nullopt;
    return it->id;
  }
  // The same, as the head's position in `pending` (end(): none).
  std::set<OrderKey>::const_iterator find_head_at(Queue& q) {
    const bool known = q.scan_generation == q.generation;
    auto it = !known ? q.pending.begin() : q.scan_from ? q.pending.lower_bound(*q.scan_from) : q.pending.end();
    for (; it != q.pending.end(); ++it) {
      Wl& w = wl(it->id);
      if (w.inadmissible_generation == q.generation) continue;
      if (!q.bulk_moved_shapes.empty() && q.bulk_moved_shapes.contains(w.shape)) {
        set_inadmissible(q, w);
        continue;
      }
      break;
    }
    q.scan_generation = q.generation;
    if (it == q.pending.end()) {
      q.scan_from.reset();
    } else {
      q.scan_from = *it;
    }
    return it;
  }

  void unqueue(WorkloadId id) {
    Wl& w = wl(id);
    if (w.queue < 0) return;
    Queue& q = queues_[at(w.queue)];
    if (w.in_pending) pending_erase(q, w);
    if (q.sticky && *q.sticky == id) q.sticky.reset();
  }

  // QueueInadmissibleWorkloads for the whole cohort tree of a queue: quota was released.
  void requeue_inadmissible(int queue) { requeue_tree(queues_[at(queue)].node); }
  // The same for the tree of any node.
  void requeue_tree(int node) {
    std::vector<int> stack{tree_.root(node)};
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      const auto& x = tree_.node(n);
      if (x.is_queue) {
        Queue& q = queues_[at(node_queue_[at(n)])];
        q.bulk_moved_shapes.clear();
        ++q.generation;
        continue;
      }
      for (int c : x.child_cohorts) stack.push_back(c);
      for (int c : x.child_queues) stack.push_back(c);
    }
  }

  // ---- usage --------------------------------------------------------------------------------

  // Every change of usage or status gives the state a new id; the targets memo is keyed
  // by it. Code that undoes all of its own changes (a preemption search removes and
  // re-adds its candidates; add and remove are exact inverses) puts the id back, so that
  // the unchanged state keeps its id and its memo.
  void changed() { epoch_ = ++last_epoch_; }
  class UndoneChanges {
   public:
    explicit UndoneChanges(Core& core) : core_(core), saved_(core.epoch_) {}
    ~UndoneChanges() { core_.epoch_ = saved_; }
    UndoneChanges(const UndoneChanges&) = delete;
    UndoneChanges& operator=(const UndoneChanges&) = delete;

   private:
    Core& core_;
    std::uint64_t saved_;
  };

  void add_usage(int queue, const Usage& u) {
    changed();
    for (const auto& [fr, v] : u) tree_.add_usage(queues_[at(queue)].node, fr, v);
  }
  void remove_usage(int queue, const Usage& u) {
    changed();
    for (const auto& [fr, v] : u) tree_.remove_usage(queues_[at(queue)].node, fr, v);
  }
  void remove_workload(WorkloadId id) { remove_usage(wl(id).queue, wl(id).usage); }
  void add_workload(WorkloadId id) { add_usage(wl(id).queue, wl(id).usage); }
  template <bool Add, bool Quiet>
  void change_usage(int queue, const Usage& u) {
    if constexpr (!Quiet) {
      Add ? add_usage(queue, u) : remove_usage(queue, u);
    } else {
      const int n = queues_[at(queue)].node;
      for (const auto& [fr, v] : u) Add ? tree_.add_usage_quietly(n, fr, v) : tree_.remove_usage_quietly(n, fr, v);
    }
  }
  template <bool Add, bool Quiet>
  void change_workload(WorkloadId id) {
    change_usage<Add, Quiet>(wl(id).queue, wl(id).usage);
  }

  // CandidatesOrdering within one queue for admitted workloads: lower priority, then the
  // newest reservation, then UID. The key is kept in `ranked` with the id, so a search
  // reads that array only, not the record of every workload it compares with; the UID's
  // first eight bytes decide before its label (see uid_prefix).
  [[nodiscard]] RankEntry rank_entry(WorkloadId id) const {
    const Wl& w = wl(id);
    const bool one = w.usage.size() == 1;
    return RankEntry{w.spec.priority, id, w.reserved_at, w.uid_prefix, w.uid_label, w.spec.creation,
                     one ? w.usage.front().first : -1, one ? w.usage.front().second : Amount{-1}};
  }
  static bool rank_before(const RankEntry& x, const RankEntry& y) {
    if (x.priority != y.priority) return x.priority < y.priority;
    if (x.reserved_at != y.reserved_at) return x.reserved_at > y.reserved_at;
    if (x.uid_prefix != y.uid_prefix) return x.uid_prefix < y.uid_prefix;
    if (*x.uid_label != *y.uid_label) return *x.uid_label < *y.uid_label;
    return x.id < y.id;
  }
  void rank(Queue& q, WorkloadId id) {
    const RankEntry key = rank_entry(id);
    q.ranked.insert(std::lower_bound(q.ranked.begin(), q.ranked.end(), key, rank_before), key);
  }
  void unrank(Queue& q, WorkloadId id) {
    auto it = std::lower_bound(q.ranked.begin(), q.ranked.end(), rank_entry(id), rank_before);
    if (it == q.ranked.end() || it->id != id) throw std::logic_error("admission core: ranked index out of step");
    q.ranked.erase(it);
  }

  void hold(WorkloadId id) {  // the workload is Admitted with its reserved_at set
    Wl& w = wl(id);
    Queue& q = queues_[at(w.queue)];
    w.holding_pos = q.holding.size();
    q.holding.push_back(id);
    rank(q, id);
    add_workload(id);
    if (admissions_.size() != tree_.size()) admissions_.assign(tree_.size(), 0);
    for (int a = tree_.parent(q.node); a >= 0; a = tree_.parent(a)) ++admissions_[at(a)];
  }

  void mark_evicted(WorkloadId id) {
    Wl& w = wl(id);
    Queue& q = queues_[at(w.queue)];
    unrank(q, id);
    w.evicted_pos = q.evicted.size();
    q.evicted.push_back(id);
    w.phase = WorkloadPhase::Evicted;
  }

  void release(WorkloadId id) {
    Wl& w = wl(id);
    Queue& q = queues_[at(w.queue)];
    if (w.phase == WorkloadPhase::Evicted) {
      const WorkloadId last_evicted = q.evicted.back();
      q.evicted[w.evicted_pos] = last_evicted;
      wl(last_evicted).evicted_pos = w.evicted_pos;
      q.evicted.pop_back();
    } else {
      unrank(q, id);
    }
    remove_workload(id);
    const WorkloadId last = q.holding.back();
    q.holding[w.holding_pos] = last;
    wl(last).holding_pos = w.holding_pos;
    q.holding.pop_back();
    w.usage.clear();
  }

  [[nodiscard]] bool fits(int queue, const Usage& u) const {  // ClusterQueueSnapshot.Fits
    const int n = queues_[at(queue)].node;
    return std::all_of(u.begin(), u.end(), [&](const auto& p) { return p.second <= tree_.available(n, p.first); });
  }

  [[nodiscard]] bool within_nominal(int n, const std::vector<int>& frs) const {  // IsWithinNominalInResources
    return std::all_of(frs.begin(), frs.end(), [&](int fr) { return tree_.usage(n, fr) <= tree_.subtree_quota(n, fr); });
  }

  // ---- conditions ---------------------------------------------------------------------------

  // The condition reason of a NoFit, interned; nullptr for None.
  [[nodiscard]] const std::string* no_fit_reason(NoFitReason r) const {
    switch (r) {
      case NoFitReason::WaitingForQuota: return r_waiting_for_quota_;
      case NoFitReason::ExceedsMaxQuota: return r_exceeds_max_quota_;
      case NoFitReason::NoMatchingFlavor: return r_no_matching_flavor_;
      case NoFitReason::None: break;
    }
    return nullptr;
  }

  // Reasons are kept once each; a condition points at its reason. The set only grows by
  // the reasons callers of evict() pass, which are a handful.
  const std::string* intern(std::string_view reason) {
    auto it = reasons_.find(reason);
    if (it == reasons_.end()) it = reasons_.emplace(reason).first;
    return &*it;
  }

  // apimeta.SetStatusCondition: the transition time moves only when the status flips.
  // A Text message is copied only when it changed: most pending heads are told the same
  // thing every cycle. Returns whether the condition now says something else than a Text
  // message it already had (new, another kind, or another text).
  static bool set_condition(Wl& w, CondType type, bool status, const std::string* reason, MessageKind kind,
                            std::string_view text, VirtualTime now) {
    StoredCondition* c = nullptr;
    bool created = false;
    for (auto& x : w.conditions) {
      if (x.type == type) {
        c = &x;
        break;
      }
    }
    if (c == nullptr) {
      // Room for the usual lifetime (QuotaReserved, Admitted, Finished or Evicted) at once.
      if (w.conditions.empty()) w.conditions.reserve(4);
      c = &w.conditions.emplace_back();
      c->type = type;
      c->status = status;
      c->last_transition = now;
      created = true;
    }
    bool changed = created || c->kind != MessageKind::Text || kind != MessageKind::Text;
    if (c->status != status) c->last_transition = now;
    c->status = status;
    c->reason = reason;
    c->previously = false;
    c->kind = kind;
    if (kind != MessageKind::Text) {
      if (!c->text.empty()) std::string().swap(c->text);  // an admitted workload keeps no pending message
    } else if (c->text != text) {
      c->text = text;
      changed = true;
    }
    return changed;
  }

  // Evicted=True and Preempted=True with one message, as Kueue's preemption and the twin's
  // graceful reclaim write them. The Preempted condition renders the Evicted one's text:
  // the two are only ever written together, here and by reset_eviction_conditions.
  void set_eviction_conditions(Wl& w, const std::string* preempted_reason, std::string_view message,
                               VirtualTime now) const {
    set_condition(w, CondType::Evicted, true, r_preempted_, MessageKind::Text, message, now);
    set_condition(w, CondType::Preempted, true, preempted_reason, MessageKind::AsEvicted, {}, now);
  }

  // Active Evicted and Preempted conditions become False with "Previously: " + their
  // message, as a new admission does. An active condition was last written by
  // set_condition, which clears `previously`, so the prefix is never doubled.
  static void reset_eviction_conditions(Wl& w, const std::string* reason, VirtualTime now) {
    for (auto& c : w.conditions) {
      if ((c.type != CondType::Evicted && c.type != CondType::Preempted) || !c.status) continue;
      c.status = false;
      c.last_transition = now;
      c.reason = reason;
      c.previously = true;
    }
  }

  [[nodiscard]] std::string render_message(const Wl& w, const StoredCondition& c) const {
    std::string m = c.previously ? "Previously: " : "";
    switch (c.kind) {
      case MessageKind::Text: m += c.text; break;
      case MessageKind::QuotaReservedIn: m += queues_[at(w.queue)].reserved_message; break;
      case MessageKind::WorkloadAdmitted: m += "The workload is admitted"; break;
      case MessageKind::NoReservation: m += "The workload has no reservation"; break;
      case MessageKind::JobFinished: m += "Job finished successfully"; break;
      case MessageKind::AsEvicted:
        for (const auto& e : w.conditions) {
          if (e.type == CondType::Evicted) m += e.text;
        }
        break;
    }
    return m;
  }

  [[nodiscard]] Admission render_admission(const Wl& w) const {
    if (w.restored) return *w.restored;
    const Queue& q = queues_[at(w.queue)];
    Admission a;
    a.cluster_queue = q.spec.name;
    a.pod_sets.reserve(w.spec.pod_sets.size());
    for (std::size_t p = 0; p < w.spec.pod_sets.size(); ++p) {
      PodSetAssignment& psa = a.pod_sets.emplace_back();
      psa.name = w.spec.pod_sets[p].name;
      psa.count = w.spec.pod_sets[p].count;
      for (const AdmittedFlavor& f : w.admitted) {
        if (f.pod_set == p) psa.flavors.emplace_back(fr_resource_[at(f.fr)], flavors_[at(fr_flavor_[at(f.fr)])].name);
      }
      psa.resource_usage = w.totals.at(p).requests;
      if (p < w.admitted_counts.size()) {
        psa.count = w.admitted_counts[p];
        scale_requests(w.totals.at(p).requests, w.spec.pod_sets[p].count, w.admitted_counts[p], psa.resource_usage);
      }
      // PodSetAssignment.toAPI lists only the resources that got a flavor: not a zero
      // request for a resource the queue lacks, nor (IgnoreUndeclared) any such request.
      std::erase_if(psa.resource_usage, [&](const auto& r) {
        return std::none_of(psa.flavors.begin(), psa.flavors.end(), [&](const auto& f) { return f.first == r.first; });
      });
    }
    return a;
  }

  [[nodiscard]] WorkloadStatus render_status(const Wl& w) const {
    WorkloadStatus s;
    s.phase = w.phase;
    s.admitted_at = w.admitted_at;
    if (w.has_admission) s.admission = render_admission(w);
    s.conditions.reserve(w.conditions.size());
    for (const auto& c : w.conditions) {
      s.conditions.push_back(Condition{cond_type_name(c.type), c.status, *c.reason, render_message(w, c), c.last_transition});
    }
    return s;
  }

  // Returns true when the pending message changed (a Pending decision is due). The
  // QuotaReserved condition's text is the last pending message: a pending workload's
  // condition is a Text one, set here or by release_evicted.
  bool set_pending(WorkloadId id, const std::string* reason, const std::string& message, VirtualTime now,
                   CycleResult* out) {
    Wl& w = wl(id);
    const bool changed = set_condition(w, CondType::QuotaReserved, false, reason, MessageKind::Text, message, now);
    // SyncAdmittedCondition: with UnadmittedWorkloadsObservability a pending Workload
    // says explicitly that it has no reservation.
    if (options_.unadmitted_workloads_observability) {
      set_condition(w, CondType::Admitted, false, r_no_reservation_, MessageKind::NoReservation, {}, now);
    }
    if (!changed) return false;
    if (out != nullptr) {
      next_decision(*out, Decision::Kind::Pending, id,
                    w.queue >= 0 ? queues_[at(w.queue)].spec.name : w.spec.cluster_queue, *reason, message);
    }
    return true;
  }

  // The cycle's next decision in `out`. A slot left there by an earlier cycle is
  // overwritten, so its strings keep their buffers; do_run_cycle trims `out` at its end.
  Decision& next_decision(CycleResult& out, Decision::Kind kind, WorkloadId id, const std::string& cluster_queue,
                          std::string_view reason, std::string_view message) {
    Decision& d = decisions_used_ < out.decisions.size() ? out.decisions[decisions_used_] : out.decisions.emplace_back();
    ++decisions_used_;
    // The next slot's message buffer, which the next decision writes.
    if (decisions_used_ < out.decisions.size()) prefetch(out.decisions[decisions_used_].message.data());
    d.kind = kind;
    d.workload = id;
    d.cluster_queue.assign(cluster_queue);
    d.reason.assign(reason);
    d.message.assign(message);
    d.related.clear();
    return d;
  }

  // ---- flavor assignment (pkg/scheduler/flavorassigner) ---------------------------------------

  // Pod set totals as the assigner sees them: requests times count, plus `pods` when the
  // queue manages it.
  [[nodiscard]] PodSetTotals pod_set_totals(const Queue& q, const PodSetSpec& ps) const {
    PodSetTotals t;
    auto& out = t.requests;
    for (const auto& [r, v] : ps.requests) out.emplace_back(r, request_times(v, ps.count));
    if (q.group_by_resource.contains("pods")) {
      auto it = std::find_if(out.begin(), out.end(), [](const auto& p) { return p.first == "pods"; });
      if (it != out.end()) {
        it->second = ps.count;
      } else {
        out.emplace_back("pods", ps.count);
        std::sort(out.begin(), out.end());
      }
    }
    for (const auto& [r, v] : out) {
      auto g = q.group_by_resource.find(r);
      t.groups.push_back(g == q.group_by_resource.end() ? -1 : g->second);
      t.rids.push_back(resource_id(r));
    }
    std::vector<std::pair<std::uint64_t, std::size_t>> keyed;
    // hashResourceName (pkg/resources/slice_requests.go) is 64-bit FNV-1a.
    for (std::size_t i = 0; i < out.size(); ++i) keyed.emplace_back(fnv1a64(out[i].first), i);
    std::sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
      return x.first != y.first ? x.first < y.first : out[x.second].first < out[y.second].first;
    });
    for (const auto& k : keyed) t.kueue_order.push_back(static_cast<std::uint32_t>(k.second));
    return t;
  }
  // ---- partial admission (PodSetResources.ScaledTo, flavorassigner.PodSetReducer) ------------

  // workload.CanBePartiallyAdmitted: a pod set's spec count is above its minCount.
  static bool can_be_partially_admitted(const WorkloadSpec& w) {
    return std::any_of(w.pod_sets.begin(), w.pod_sets.end(), [](const PodSetSpec& ps) {
      const std::int32_t spec = ps.spec_count >= 0 ? ps.spec_count : ps.count;
      return spec > ps.min_count.value_or(spec);
    });
  }
  // ScaledTo: a pod set of zero pods keeps zero, any other takes the new count.
  static std::int32_t scaled_count(std::int32_t count, std::int32_t new_count) { return count == 0 ? 0 : new_count; }
  // ScaledTo on the totals of `count` pods: each total is divided by the old count and
  // multiplied (saturating) by the new one, as upstream does, so a total that the first
  // multiplication clamped scales from the clamp.
  static void scale_requests(const std::vector<std::pair<std::string, Amount>>& from, std::int32_t count,
                             std::int32_t new_count, std::vector<std::pair<std::string, Amount>>& to) {
    to.resize(from.size());
    for (std::size_t i = 0; i < from.size(); ++i) {
      to[i].first = from[i].first;
      to[i].second = count == 0 || count == new_count ? from[i].second : request_times(from[i].second / count, new_count);
    }
  }

  const std::vector<PodSetTotals>& totals_of(Wl& w) const {
    if (w.totals.size() != w.spec.pod_sets.size()) {
      w.totals.clear();
      for (const auto& ps : w.spec.pod_sets) w.totals.push_back(pod_set_totals(queues_[at(w.queue)], ps));
    }
    return w.totals;
  }
  // Resource names interned for the flavor-resource table: fr_by_rid_[rid][flavor] is
  // fr_of(flavor, name, false). Flavor-resources are all made while building, so the table
  // stays exact.
  int resource_id(const std::string& name) const {
    auto [it, inserted] = rid_index_.try_emplace(name, static_cast<int>(fr_by_rid_.size()));
    if (inserted) {
      rid_names_.push_back(name);
      auto& row = fr_by_rid_.emplace_back(flavors_.size(), -1);
      for (std::size_t f = 0; f < flavors_.size(); ++f) row[f] = fr_of(static_cast<int>(f), name, false);
    }
    return it->second;
  }

  // classical.FindHeightOfLowestSubtreeThatFits
  [[nodiscard]] std::pair<int, bool> lowest_subtree_that_fits(int n, int fr, Amount val) const {
    if (!tree_.borrowing_with(n, fr, val) || !tree_.has_parent(n)) return {0, tree_.has_parent(n)};
    Amount remaining = val - tree_.local_available(n, fr);
    for (int a = tree_.node(n).parent; a >= 0; a = tree_.node(a).parent) {
      if (!tree_.borrowing_with(a, fr, remaining)) return {heights_[at(a)], tree_.has_parent(a)};
      remaining -= tree_.local_available(a, fr);
    }
    return {heights_[at(tree_.root(n))], false};
  }

  [[nodiscard]] bool can_preempt_while_borrowing(const Queue& q) const {
    return q.spec.preemption.borrow_within_cohort != BorrowWithinCohortPolicy::Never ||
           (options_.fair_sharing && q.spec.preemption.reclaim_within_cohort != PreemptionPolicy::Never);
  }

  // FlavorAssigner.fitsResourceQuota
  // Appends why the request does not fit (if it does not) to `reasons`.
  std::pair<PMode, int> fits_resource_quota(WorkloadId id, int queue, int fr, Amount assumed, Amount request,
                                            NoFitReason* no_fit, std::vector<std::string>& reasons) {
    const Queue& q = queues_[at(queue)];
    const int n = q.node;
    const std::string& flavor = flavors_[at(fr_flavor_[at(fr)])].name;
    const std::string& resource = fr_resource_[at(fr)];
    const Amount available = tree_.available(n, fr);
    const Amount max_capacity = tree_.potential_available(n, fr);
    const Amount val = assumed + request;
    if (val > max_capacity) {
      *no_fit = NoFitReason::ExceedsMaxQuota;
      std::string& why = reasons.emplace_back(spare_string());
      why.append("insufficient quota for ");
      why.append(resource).append(" in flavor ").append(flavor).append(", previously considered podsets requests (");
      why.append(format_amount(resource, assumed)).append(") + current podset request (");
      why.append(format_amount(resource, request)).append(") > maximum capacity (");
      why.append(format_amount(resource, max_capacity)).append(")");
      return {PMode::NoFit, 0};
    }
    const auto [borrow, may_reclaim_in_hierarchy] = lowest_subtree_that_fits(n, fr, val);
    if (val <= available) return {PMode::Fit, borrow};
    std::string& why = reasons.emplace_back(spare_string());
    why.append("insufficient unused quota for ");
    why.append(resource).append(" in flavor ").append(flavor).append(", ");
    why.append(format_amount(resource, val - available)).append(" more needed");
    if (tree_.nominal(n, fr) >= val || may_reclaim_in_hierarchy || can_preempt_while_borrowing(q)) {
      return simulate_preemption(id, queue, fr, val);
    }
    *no_fit = NoFitReason::WaitingForQuota;
    return {PMode::NoFit, borrow};
  }

  // PreemptionOracle.SimulatePreemption
  std::pair<PMode, int> simulate_preemption(WorkloadId id, int queue, int fr, Amount quantity) {
    scratch_frs_.assign(1, fr);
    scratch_usage_.assign(1, {fr, quantity});
    const auto& targets = get_targets(id, queue, scratch_frs_, scratch_usage_);
    const int n = queues_[at(queue)].node;
    if (targets.empty()) return {PMode::NoCandidates, lowest_subtree_that_fits(n, fr, quantity).first};
    const int parent = tree_.parent(n);
    if (parent < 0 || !tree_.has_parent(parent)) {
      // Under a root cohort (or none), lowest_subtree_that_fits reads no usage but the
      // queue's own (see there), and a queue's usage is the sum of its workloads': the
      // answer after the removals needs only the usage of the targets in this queue.
      Amount own = 0;
      bool in_queue = false;
      for (const auto& t : targets) {
        const Wl& v = wl(t.workload);
        if (v.queue != queue) continue;
        in_queue = true;
        own = usage_add(own, usage_of(v.usage, fr));
      }
      const bool borrows = parent >= 0 && quota_add(usage_sub(tree_.usage(n, fr), own), quantity) > tree_.subtree_quota(n, fr);
      return {in_queue ? PMode::Preempt : PMode::Reclaim, borrows ? heights_[at(parent)] : 0};
    }
    const UndoneChanges undone(*this);
    for (const auto& t : targets) remove_workload(t.workload);
    const int borrow = lowest_subtree_that_fits(n, fr, quantity).first;
    for (const auto& t : targets) add_workload(t.workload);
    for (const auto& t : targets) {
      if (wl(t.workload).queue == queue) return {PMode::Preempt, borrow};
    }
    return {PMode::Reclaim, borrow};
  }

  // isPreferred: is a better than b under the queue's fungibility preference.
  static bool preferred(const Granular& a, const Granular& b, const FlavorFungibility& f) {
    if (a.p == PMode::NoFit) return false;
    if (b.p == PMode::NoFit) return true;
    const bool a_none = a.p == PMode::NoCandidates, b_none = b.p == PMode::NoCandidates;
    if (a_none != b_none) return !a_none;
    if (f.preference == FungibilityPreference::PreemptionOverBorrowing) {
      if (a.borrow != b.borrow) return a.borrow < b.borrow;
      return a.p > b.p;
    }
    if (a.p != b.p) return a.p > b.p;
    return a.borrow < b.borrow;
  }

  static bool should_try_next_flavor(const Granular& m, const FlavorFungibility& f) {
    if (m.p == PMode::NoFit || m.p == PMode::NoCandidates) return true;
    const bool preempt_mode = m.p == PMode::Preempt || m.p == PMode::Reclaim;
    if (preempt_mode && f.when_can_preempt == FungibilityPolicy::TryNextFlavor) return true;
    if (m.borrow != 0 && f.when_can_borrow == FungibilityPolicy::TryNextFlavor) return true;
    return false;
  }

  // checkFlavorForPodSets (node_match.hpp), in two parts. Most flavors have no taints and
  // most pod sets no selector or affinity; then the flavor is not checked at all.
  [[nodiscard]] bool unconstrained(int flavor, const PodSetSpec& ps) const {
    return flavors_[at(flavor)].node_taints.empty() && ps.node_selector.empty() && ps.required_node_affinity.empty();
  }
  // Whether the flavor refuses the pod set. Why is appended to `reasons`; when the pod
  // set's affinity could not be parsed, that is the error that ends the search
  // (Status.err), and `error` is set. Out of line: the search loop stays small.
  [[gnu::noinline]] bool flavor_refuses(int flavor, const PodSetSpec& ps, std::vector<std::string>& reasons,
                                        bool& error) {
    const auto& f = flavors_[at(flavor)];
    if (const Taint* t = untolerated_taint(f, ps.tolerations)) {
      reasons.push_back("untolerated taint " + taint_text(*t) + " in flavor " + f.name);
      return true;
    }
    AffinityMatch affinity = match_node_affinity(ps, f.node_labels);
    if (!affinity.error.empty()) {
      reasons.push_back(std::move(affinity.error));
      error = true;
      return true;
    }
    if (!affinity.matches) reasons.push_back("flavor " + f.name + " doesn't match node affinity");
    return !affinity.matches;
  }

  // FlavorAssigner.assignFlavors without partial admission or TAS.
  // An empty string that keeps the buffer of a reason given up earlier: pending heads
  // are told why they wait in every cycle, mostly in strings of the same length.
  std::string spare_string() {
    if (spare_strings_.empty()) return {};
    std::string s = std::move(spare_strings_.back());
    spare_strings_.pop_back();
    s.clear();
    return s;
  }

  // Into `a`, whose containers are reused (entries live in a pool across cycles).
  // counts: per pod set, the pods to assign for (partial admission); null: the spec's.
  void assign(WorkloadId id, Assignment& a, const std::vector<std::int32_t>* counts = nullptr) {
    Wl& w = wl(id);
    const int queue = w.queue;
    const std::vector<PodSetTotals>* all_totals = &totals_of(w);
    if (counts != nullptr) {
      std::vector<PodSetTotals>& scaled = scratch_scaled_totals_;
      scaled.resize(all_totals->size());
      for (std::size_t p = 0; p < scaled.size(); ++p) {
        const PodSetTotals& from = (*all_totals)[p];
        scale_requests(from.requests, w.spec.pod_sets[p].count, (*counts)[p], scaled[p].requests);
        scaled[p].groups = from.groups;
        scaled[p].rids = from.rids;
        scaled[p].kueue_order = from.kueue_order;
      }
      all_totals = &scaled;
    }
    const auto& totals = *all_totals;
    a.borrowing = 0;
    a.usage.clear();
    a.forced.reset();
    a.pod_sets.resize(w.spec.pod_sets.size());
    std::size_t used = 0;
    for (std::size_t p = 0; p < w.spec.pod_sets.size(); ++p) {
      const auto& ps = w.spec.pod_sets[p];
      const PodSetTotals& t = totals[p];
      PodSetAssign& psa = a.pod_sets[used++];
      psa.name = &ps.name;
      psa.count = counts != nullptr ? scaled_count(ps.count, (*counts)[p]) : ps.count;
      psa.flavors.clear();
      for (auto& r : psa.reasons) spare_strings_.push_back(std::move(r));
      psa.reasons.clear();
      psa.failed = false;
      psa.error = false;
      psa.no_fit = NoFitReason::None;
      psa.attempted = false;
      std::vector<int>& done_groups = scratch_groups_;  // a pod set touches a few resource groups
      done_groups.clear();
      bool failed = false;
      // A group that fails replaces the reasons of the groups before it (assignFlavors sets
      // groupStatus to the failing search's status).
      const auto forget_reasons_before = [&](std::size_t end) {
        for (std::size_t r = 0; r < end; ++r) spare_strings_.push_back(std::move(psa.reasons[r]));
        psa.reasons.erase(psa.reasons.begin(), psa.reasons.begin() + static_cast<std::ptrdiff_t>(end));
      };
      for (const std::uint32_t i : t.kueue_order) {
        const auto& [resource, quantity] = t.requests[i];
        const int group = t.groups[i];
        if (group < 0) {
          // Zero requests for resources the queue lacks never count (#8079); with
          // IgnoreUndeclared none of them does (flavorassigner.IgnoreUndeclaredResources).
          if (quantity == 0 || (options_.quota_check_strategy && options_.ignore_undeclared_resources)) continue;
          forget_reasons_before(psa.reasons.size());
          psa.reasons.push_back("resource " + resource + " unavailable in ClusterQueue");
          failed = true;
          break;
        }
        if (std::find(done_groups.begin(), done_groups.end(), group) != done_groups.end()) continue;
        done_groups.push_back(group);
        FlavorAttempts attempts;
        const std::size_t reasons_before = psa.reasons.size();
        const auto& flavors =
            find_flavor(id, queue, group, ps, p, t.rids[i], t, a.usage, attempts, psa.reasons, psa.error);
        // Attempts count whether or not the group found a flavor (mergeFlavorAttemptsForResource).
        psa.no_fit = std::max(psa.no_fit, attempts.least);
        psa.attempted = psa.attempted || attempts.any;
        if (flavors.empty()) {
          forget_reasons_before(reasons_before);
          failed = true;
          break;
        }
        psa.flavors.insert(psa.flavors.end(), flavors.begin(), flavors.end());
      }
      if (failed) psa.flavors.clear();
      psa.failed = failed;
      std::sort(psa.flavors.begin(), psa.flavors.end(),
                [this](const ResourceAssign& x, const ResourceAssign& y) { return fr_resource_[at(x.fr)] < fr_resource_[at(y.fr)]; });
      for (const auto& f : psa.flavors) {
        a.borrowing = std::max(a.borrowing, f.borrow);
        Amount amount = 0;
        for (std::size_t i = 0; i < t.requests.size(); ++i) {
          if (t.rids[i] == f.rid) amount = t.requests[i].second;
        }
        add_to(a.usage, f.fr, amount);
      }
      if (failed) break;
    }
    a.pod_sets.resize(used);
    a.assigned = a.pod_sets_mode();
  }

  // NominationMapping: while an assignment is recomputed because its preemption targets
  // overlap, each pod set's resources keep the flavors they were nominated with
  // (shouldSkipBasedOnNominationMapping); pinned_ is the nominated assignment then.
  [[nodiscard]] bool pinned(std::size_t pod_set, int rid, int flavor) const {
    if (pod_set >= pinned_->pod_sets.size()) return false;
    const auto& fl = pinned_->pod_sets[pod_set].flavors;
    return std::any_of(fl.begin(), fl.end(), [&](const ResourceAssign& f) { return f.rid == rid && f.flavor == flavor; });
  }

  // FlavorAssigner.findFlavorForPodSets for one resource group. Why flavors did not fit
  // is appended to `reasons`, unless one fits. A flavor check that fails with an error
  // ends the search with no flavors and `error` set, and `reasons` is then the error's
  // text alone.
  // The result lives in a scratch buffer until the next call.
  // pod_set and rid: the pod set's index and the resource the group is searched for, which
  // the nomination mapping is looked up with.
  const std::vector<ResourceAssign>& find_flavor(WorkloadId id, int queue, int group_index, const PodSetSpec& ps,
                                                 std::size_t pod_set, int rid, const PodSetTotals& totals,
                                                 const Usage& assumed, FlavorAttempts& attempts,
                                                 std::vector<std::string>& reasons, bool& error) {
    const Queue& q = queues_[at(queue)];
    const Group& group = q.groups[at(group_index)];
    const std::size_t reasons_before = reasons.size();
    std::vector<ResourceAssign>& best = scratch_best_;
    std::vector<ResourceAssign>& assignments = scratch_assignments_;
    best.clear();
    Granular best_mode;
    // resolveNoFitReason: the least severe reason among this group's NoFit flavor attempts.
    std::optional<NoFitReason> least;
    auto attempt_failed = [&](NoFitReason r) { least = least ? std::min(*least, r) : r; };
    const auto report = [&] { attempts.least = least.value_or(NoFitReason::None); };
    for (int flavor : group.flavors) {
      if (pinned_ != nullptr && !pinned(pod_set, rid, flavor)) {  // skipped: no attempt
        std::string& why = reasons.emplace_back(spare_string());
        why.append("skipping flavor ").append(flavors_[at(flavor)].name);
        why.append(" as it is not found in the nomination mapping for resource ").append(rid_names_[at(rid)]);
        continue;
      }
      attempts.any = true;
      if (!unconstrained(flavor, ps) && flavor_refuses(flavor, ps, reasons, error)) {
        attempt_failed(NoFitReason::NoMatchingFlavor);
        if (error) {  // the error alone stands for this search
          std::swap(reasons[reasons_before], reasons.back());
          for (std::size_t i = reasons_before + 1; i < reasons.size(); ++i) spare_strings_.push_back(std::move(reasons[i]));
          reasons.resize(reasons_before + 1);
          best.clear();
          report();
          return best;
        }
        continue;
      }
      assignments.clear();
      NoFitReason flavor_no_fit = NoFitReason::None;
      Granular rep{PMode::Fit, 0};
      for (std::size_t i = 0; i < totals.requests.size(); ++i) {
        if (totals.groups[i] != group_index) continue;  // the group covers another resource
        const Amount val = totals.requests[i].second;
        const int fr = fr_by_rid_[at(totals.rids[i])][at(flavor)];
        if (fr < 0) {
          rep = Granular{};
          continue;
        }
        NoFitReason resource_no_fit = NoFitReason::None;
        auto [pmode, borrow] = fits_resource_quota(id, queue, fr, usage_of(assumed, fr), val, &resource_no_fit, reasons);
        if (pmode == PMode::NoFit) flavor_no_fit = std::max(flavor_no_fit, resource_no_fit);
        const Granular mode{pmode, borrow};
        if (preferred(rep, mode, q.spec.flavor_fungibility)) rep = mode;
        if (rep.p == PMode::NoFit) continue;
        assignments.push_back(ResourceAssign{totals.rids[i], flavor, fr, to_mode(pmode), borrow});
      }
      if (rep.p == PMode::NoFit) {
        attempt_failed(flavor_no_fit == NoFitReason::None ? NoFitReason::NoMatchingFlavor : flavor_no_fit);
      }
      if (!should_try_next_flavor(rep, q.spec.flavor_fungibility)) {
        std::swap(best, assignments);
        best_mode = rep;
        break;
      }
      if (preferred(rep, best_mode, q.spec.flavor_fungibility)) {
        std::swap(best, assignments);
        best_mode = rep;
      }
    }
    report();
    if (best_mode.p == PMode::Fit) {
      for (std::size_t i = reasons_before; i < reasons.size(); ++i) spare_strings_.push_back(std::move(reasons[i]));
      reasons.resize(reasons_before);
      return best;
    }
    if (best_mode.p == PMode::NoFit) best.clear();
    return best;
  }

  // ---- preemption (pkg/scheduler/preemption) ---------------------------------------------------

  // A victim chosen earlier in this cycle. Only a re-nomination during processing can meet
  // one: Kueue's updateAssignmentIfNeeded runs it on a snapshot where the victims of the
  // cycle's other preemptions are removed (SimulateWorkloadRemoval), usage and workload
  // alike, so they are no candidates there.
  // A bit per workload id, so that the walks over a cohort's candidates ask without
  // reading the records; cleared when the next cycle starts.
  [[nodiscard]] bool victim_this_cycle(WorkloadId w) const {
    return w / 64 < victim_bits_.size() && ((victim_bits_[w / 64] >> (w % 64)) & 1U) != 0;
  }

  [[nodiscard]] bool uses_resources(WorkloadId id, const std::vector<int>& frs) const {
    // WorkloadUsesResources looks at the assigned flavors, whatever the amount.
    return std::any_of(wl(id).usage.begin(), wl(id).usage.end(), [&](const auto& p) {
      return std::find(frs.begin(), frs.end(), p.first) != frs.end();
    });
  }

  // common.SatisfiesPreemptionPolicy
  [[nodiscard]] static bool satisfies(const Wl& preemptor, const Wl& candidate, PreemptionPolicy policy) {
    return satisfies(preemptor, candidate.spec.priority, candidate.spec.creation, policy);
  }
  [[nodiscard]] static bool satisfies(const Wl& preemptor, std::int32_t cand_priority, VirtualTime cand_creation,
                                      PreemptionPolicy policy) {
    const bool lower = preemptor.spec.priority > cand_priority;
    switch (policy) {
      case PreemptionPolicy::LowerPriority: return lower;
      case PreemptionPolicy::LowerOrNewerEqualPriority:
        return lower || (preemptor.spec.priority == cand_priority && preemptor.spec.creation < cand_creation);
      case PreemptionPolicy::Any: return true;
      case PreemptionPolicy::Never: return false;
    }
    return false;
  }

  // common.CandidatesOrdering
  [[nodiscard]] bool candidate_before(WorkloadId a, WorkloadId b, int preemptor_queue, VirtualTime now) const {
    const Wl& x = wl(a);
    const Wl& y = wl(b);
    if (x.phase == WorkloadPhase::Evicted) {
      if (y.phase != WorkloadPhase::Evicted) return true;
    } else if (y.phase == WorkloadPhase::Evicted) {
      return false;
    }
    const bool x_own = x.queue == preemptor_queue, y_own = y.queue == preemptor_queue;
    if (x_own != y_own) return !x_own;
    if (x.spec.priority != y.spec.priority) return x.spec.priority < y.spec.priority;
    const VirtualTime tx = x.phase == WorkloadPhase::Pending ? now : x.reserved_at;
    const VirtualTime ty = y.phase == WorkloadPhase::Pending ? now : y.reserved_at;
    if (tx != ty) return tx > ty;
    if (*x.uid_label != *y.uid_label) return *x.uid_label < *y.uid_label;
    return a < b;
  }

  struct Candidate {
    WorkloadId w;
    int lca;  // cohort node, -1 for the preemptor's own queue
    Variant variant;
    // CandidatesOrdering's key, copied out so sorting touches no workload.
    bool evicted = false, own = false;
    std::int32_t priority = 0;
    VirtualTime reserved = 0;
    std::uint64_t uid_prefix = 0;  // the UID's first bytes, then its label (see uid_prefix)
    const std::uint64_t* uid_label = nullptr;
    // Its queue, and its usage of the search's flavor-resource when the shared order knows
    // it (-1: read the record), so that a flat search need not read the record at all.
    int queue = -1;
    Amount amount = -1;
  };

  [[nodiscard]] Candidate candidate(WorkloadId w, int lca, Variant v, int preemptor_queue) const {
    const Wl& x = wl(w);
    return Candidate{w, lca, v, x.phase == WorkloadPhase::Evicted, x.queue == preemptor_queue,
                     x.spec.priority, x.reserved_at, x.uid_prefix, x.uid_label, x.queue, -1};
  }

  static bool candidate_key_before(const Candidate& x, const Candidate& y) {
    if (x.evicted != y.evicted) return x.evicted;
    if (x.own != y.own) return !x.own;
    if (x.priority != y.priority) return x.priority < y.priority;
    if (x.reserved != y.reserved) return x.reserved > y.reserved;
    if (x.uid_prefix != y.uid_prefix) return x.uid_prefix < y.uid_prefix;
    if (*x.uid_label != *y.uid_label) return *x.uid_label < *y.uid_label;
    return x.w < y.w;
  }

  struct Ranked {
    int list = 0;  // 0 hierarchy, 1 priority, 2 same queue
    Candidate c;
  };
  static bool ranked_before(const Ranked& x, const Ranked& y) {
    if (x.c.evicted != y.c.evicted) return x.c.evicted;
    if (x.list != y.list) return x.list < y.list;
    return candidate_key_before(x.c, y.c);
  }
  // One queue's admitted workloads as candidates of one preemptor, walked in the queue's
  // ranked order (the order CandidatesOrdering gives within a list).
  struct Source {
    int queue = -1;
    int list = 0;    // 0 hierarchy, 1 priority, 2 same queue
    int lca = -1;    // the cohort the candidates were found under; -1 for the own queue
    bool advantage = false;
    PreemptionPolicy policy = PreemptionPolicy::Never;
    std::size_t pos = 0;
    Candidate current{};
  };
  static bool source_before(const Source& x, const Source& y) {
    if (x.list != y.list) return x.list < y.list;
    return candidate_key_before(x.current, y.current);
  }

  // Moves a source to its next candidate that classify() accepts; false when none is left.
  bool advance(Source& s, const Wl& preemptor, int queue, const std::vector<int>& frs) const {
    const auto& ranked = queues_[at(s.queue)].ranked;
    while (s.pos < ranked.size()) {
      const RankEntry& r = ranked[s.pos++];
      // Ranked by ascending priority: once the policy refuses a priority it refuses the rest.
      if ((s.policy == PreemptionPolicy::LowerPriority && r.priority >= preemptor.spec.priority) ||
          (s.policy == PreemptionPolicy::LowerOrNewerEqualPriority && r.priority > preemptor.spec.priority)) {
        s.pos = ranked.size();
        return false;
      }
      // classify(), from the ranked entry: an admitted candidate, not evicted.
      if (!uses_resources(r, frs)) continue;
      const Variant v = classify(preemptor, queue, s.queue, r.priority, r.creation, s.advantage);
      if (v == Variant::Never) continue;
      s.current = Candidate{r.id, s.lca, v, false, s.queue == queue, r.priority, r.reserved_at, r.uid_prefix,
                            r.uid_label, s.queue, amount_of(r, frs)};
      return true;
    }
    return false;
  }
  [[nodiscard]] bool uses_resources(const RankEntry& r, const std::vector<int>& frs) const {
    return r.fr >= 0 ? std::find(frs.begin(), frs.end(), r.fr) != frs.end() : uses_resources(r.id, frs);
  }
  // The candidate's usage of a search's only flavor-resource when the entry knows it, else -1.
  static Amount amount_of(const RankEntry& r, const std::vector<int>& frs) {
    return frs.size() == 1 && r.fr == frs.front() ? r.amount : Amount{-1};
  }

  // NewCandidateIterator's order, produced lazily: the evicted candidates of all lists
  // first (few, sorted outright), then a merge of the per-queue ranked walks by (list,
  // CandidatesOrdering). The greedy search usually stops after a few candidates, so a
  // preemptor costs a walk over its cohort's queues, not a sort of their workloads. Each
  // attempt of the search restarts the walk; a queue whose candidates stopped being valid
  // for the rest of an attempt can be dropped from it (drop_source).
  class CandidateWalk {
   public:
    CandidateWalk(const Core& core, const Wl& preemptor, int queue, const std::vector<int>& frs,
                  std::vector<Ranked>& evicted, std::vector<Source>& sources, std::vector<Source>& work,
                  std::vector<std::uint32_t>& heap)
        : core_(core), preemptor_(preemptor), queue_(queue), frs_(frs), evicted_(evicted), primed_(sources),
          work_(work), heap_(heap) {
      std::sort(evicted_.begin(), evicted_.end(), ranked_before);
      for (const auto& r : evicted_) counts_[at(r.list)] += 1;
      std::size_t kept = 0;
      for (auto& s : primed_) {
        if (core_.advance(s, preemptor_, queue_, frs_)) {
          counts_[at(s.list)] += 1;
          primed_[kept++] = s;
        }
      }
      primed_.resize(kept);
    }
    // Whether a list (0 hierarchy, 1 priority, 2 same queue) has any candidate.
    [[nodiscard]] bool any_in(int list) const { return counts_[at(list)] > 0; }

    void restart() {
      work_ = primed_;
      heap_.resize(work_.size());
      for (std::uint32_t i = 0; i < heap_.size(); ++i) heap_[i] = i;
      std::make_heap(heap_.begin(), heap_.end(), after());
      next_evicted_ = 0;
      pending_ = kNone;
    }
    // The next candidate, or nullptr at the end. Valid until the next call.
    const Candidate* next() {
      if (pending_ != kNone) {
        if (core_.advance(work_[pending_], preemptor_, queue_, frs_)) {
          heap_.push_back(pending_);
          std::push_heap(heap_.begin(), heap_.end(), after());
        }
        pending_ = kNone;
      }
      if (next_evicted_ < evicted_.size()) return &evicted_[next_evicted_++].c;
      if (heap_.empty()) return nullptr;
      std::pop_heap(heap_.begin(), heap_.end(), after());
      pending_ = heap_.back();
      heap_.pop_back();
      return &work_[pending_].current;
    }
    // The rest of the last candidate's queue is left out of this attempt (no-op after an
    // evicted candidate, which came from no walk).
    void drop_source() { pending_ = kNone; }

   private:
    static constexpr std::uint32_t kNone = ~std::uint32_t{0};
    struct After {
      const std::vector<Source>* work;
      bool operator()(std::uint32_t x, std::uint32_t y) const { return source_before((*work)[y], (*work)[x]); }
    };
    [[nodiscard]] After after() const { return After{&work_}; }
    const Core& core_;
    const Wl& preemptor_;
    int queue_;
    const std::vector<int>& frs_;
    std::vector<Ranked>& evicted_;
    std::size_t next_evicted_ = 0;
    std::vector<Source>& primed_;
    std::vector<Source>& work_;
    std::vector<std::uint32_t>& heap_;
    std::uint32_t pending_ = kNone;
    std::array<std::size_t, 3> counts_{};
  };

  // ---- one candidate order per cohort, shared by the preemptors of a cycle ----------------
  //
  // In a cycle every head is nominated against the same state, and in a contended cohort
  // hundreds of heads search it for victims. Each CandidateWalk merges the same queues'
  // ranked lists again through a heap. Within one state the merge of one cohort's queues
  // does not depend on the preemptor: CandidatesOrdering between workloads of other queues
  // is (priority, newest reservation, UID), and which queues take part (collect_sources)
  // depends on usage only. So the second search under a cohort in one state merges that
  // cohort once, into a sorted array, and every later search walks the array, leaving out
  // per preemptor what collect_sources would not have given it: its own queue or the
  // subtree it came from, candidates that do not use the resources or that the policy
  // refuses, and queues whose rest became invalid (drop_source).

  struct OrderEntry {
    VirtualTime reserved = 0;
    std::uint64_t uid_prefix = 0;
    const std::uint64_t* uid_label = nullptr;
    VirtualTime creation = 0;
    std::int32_t priority = 0;
    WorkloadId w = 0;
    int queue = -1;
    int child = -1;     // the child of the cohort the queue is found under
    bool uses = false;  // uses one of the flavor-resources of the order
    Amount amount = -1;  // its usage of the order's flavor-resource when there is one, else -1
  };
  static bool order_entry_before(const OrderEntry& x, const OrderEntry& y) {
    if (x.priority != y.priority) return x.priority < y.priority;
    if (x.reserved != y.reserved) return x.reserved > y.reserved;
    if (x.uid_prefix != y.uid_prefix) return x.uid_prefix < y.uid_prefix;
    if (*x.uid_label != *y.uid_label) return *x.uid_label < *y.uid_label;
    return x.w < y.w;
  }
  struct CandidateOrder {
    std::uint64_t epoch = 0;  // the state it was built in (epoch_); 0: never built
    std::vector<int> frs;
    std::vector<OrderEntry> entries;                  // sorted by order_entry_before
    std::vector<std::pair<int, int>> evicted_queues;  // (queue, child) of the queues with evicted workloads
    std::uint64_t requests_epoch = 0;
    int requests = 0;  // searches under this cohort in requests_epoch
    // For reuse later in the same cycle (reusable_order): the cycle and the admissions
    // under the cohort when it was built, and the queues it holds, sorted.
    std::uint64_t cycle = 0, admissions = 0;
    std::vector<int> queues;
  };

  // Whether a search under cohort `a` for `frs` should use the shared order: from the
  // second search in the same state on (a lone search, such as a re-nomination after
  // victims were taken, would only pay for the sort).
  bool share_order(int a, const std::vector<int>& frs) {
    if (candidate_orders_.size() != tree_.size()) candidate_orders_.assign(tree_.size(), CandidateOrder{});
    CandidateOrder& o = candidate_orders_[at(a)];
    if (o.epoch == epoch_ && o.frs == frs) return true;
    if (o.requests_epoch != epoch_) {
      o.requests_epoch = epoch_;
      o.requests = 0;
    }
    return ++o.requests >= 2;
  }

  // The order under cohort `a` in the current state, built if needed.
  const CandidateOrder& candidate_order(int a, const std::vector<int>& frs) {
    CandidateOrder& o = candidate_orders_[at(a)];
    if (o.epoch == epoch_ && o.frs == frs) return o;
    o.epoch = epoch_;
    o.frs = frs;
    o.entries.clear();
    o.evicted_queues.clear();
    o.queues.clear();
    o.cycle = cycle_;
    o.admissions = admissions_under(a);
    add_order_queues(o, a, a, -1, frs);
    std::sort(o.entries.begin(), o.entries.end(), order_entry_before);
    std::sort(o.queues.begin(), o.queues.end());
    return o;
  }

  // A search under a flat cohort (a root whose children are all queues) for one
  // flavor-resource, in a state the cohort's order was not built in, may still walk that
  // order if it was built earlier in the same cycle and nothing was admitted under the
  // cohort since: within a cycle nothing else adds candidates. What it holds then differs
  // from what collect_sources would give only by
  //  - the cycle's victims chosen since, which the walk skips (victim_this_cycle), and
  //  - queues no longer above nominal (victims and reservations move usage), which the
  //    search leaves out (excluded_); a queue above nominal that the order lacks makes it
  //    unusable.
  // Re-nominations of heads whose targets overlapped another's are such searches.
  const CandidateOrder* reusable_order(int a, const std::vector<int>& frs) {
    if (frs.size() != 1 || !flat_cohort(a)) return nullptr;
    if (candidate_orders_.size() != tree_.size()) return nullptr;
    const CandidateOrder& o = candidate_orders_[at(a)];
    if (o.epoch == 0 || o.cycle != cycle_ || o.frs != frs || o.admissions != admissions_under(a)) return nullptr;
    if (excluded_.size() != queues_.size()) excluded_.assign(queues_.size(), 0);
    const std::uint64_t above = ++exclude_stamp_;
    for (int child : tree_.queues_above_nominal(a, frs.front())) {
      const int cq = node_queue_[at(child)];
      if (!std::binary_search(o.queues.begin(), o.queues.end(), cq)) return nullptr;
      excluded_[at(cq)] = above;
    }
    // Everything of the order not above nominal now is left out of this search.
    const std::uint64_t stamp = ++exclude_stamp_;
    for (int cq : o.queues) {
      if (excluded_[at(cq)] != above) excluded_[at(cq)] = stamp;
    }
    return &o;
  }
  [[nodiscard]] std::uint64_t admissions_under(int a) const {
    return admissions_.size() == tree_.size() ? admissions_[at(a)] : 0;
  }
  // collect_sources without a preemptor: every queue it could give under `top`.
  void add_order_queues(CandidateOrder& o, int top, int current, int child_of_top, const std::vector<int>& frs) const {
    const auto& node = tree_.node(current);
    for (int child : node.child_cohorts) {
      if (within_nominal(child, frs)) continue;
      add_order_queues(o, top, child, current == top ? child : child_of_top, frs);
    }
    auto add = [&](int child) {
      const int cq = node_queue_[at(child)];
      const int via = current == top ? child : child_of_top;
      const Queue& q = queues_[at(cq)];
      o.queues.push_back(cq);
      for (const RankEntry& r : q.ranked) {
        o.entries.push_back(OrderEntry{r.reserved_at, r.uid_prefix, r.uid_label, r.creation, r.priority, r.id, cq, via,
                                       uses_resources(r, frs), amount_of(r, frs)});
      }
      if (!q.evicted.empty()) o.evicted_queues.emplace_back(cq, via);
    };
    if (frs.size() == 1) {
      for (int child : tree_.queues_above_nominal(current, frs.front())) add(child);
    } else {
      for (int child : node.child_queues) {
        if (!within_nominal(child, frs)) add(child);
      }
    }
  }

  // One level of a preemptor's search: the cohort's shared order, less what is not its.
  struct Level {
    const CandidateOrder* order = nullptr;
    int lca = -1;
    int skip = -1;  // the child of lca the preemptor is under (its own queue at the first level)
    bool advantage = false;
    [[nodiscard]] int list() const { return advantage ? 0 : 1; }  // 0 hierarchy, 1 priority
    std::size_t start = 0, pos = 0;  // first candidate of an attempt; current candidate
    Candidate current{};
    int current_queue = -1;
  };

  // CandidateWalk's order over shared levels: evicted candidates first, then the levels
  // merged by (list, CandidatesOrdering), then the preemptor's own queue.
  class SharedWalk {
   public:
    SharedWalk(Core& core, const Wl& preemptor, int queue, const std::vector<int>& frs, std::vector<Ranked>& evicted,
               std::vector<Level>& levels, std::optional<Source> own)
        : core_(core), preemptor_(preemptor), queue_(queue), frs_(frs), evicted_(evicted), levels_(levels) {
      const auto& spec = core_.queues_[at(queue)].spec.preemption;
      cutoff_ = spec.reclaim_within_cohort;
      std::sort(evicted_.begin(), evicted_.end(), ranked_before);
      for (const auto& r : evicted_) counts_[at(r.list)] += 1;
      if (core_.dropped_.size() != core_.queues_.size()) core_.dropped_.assign(core_.queues_.size(), 0);
      if (core_.excluded_.size() != core_.queues_.size()) core_.excluded_.assign(core_.queues_.size(), 0);
      ++core_.drop_stamp_;
      for (auto& l : levels_) {
        l.pos = 0;
        if (settle(l)) counts_[at(l.list())] += 1;
        l.start = l.pos;
      }
      if (own && core_.advance(*own, preemptor_, queue_, frs_)) {
        counts_[2] += 1;
        own_primed_ = own;
      }
    }
    [[nodiscard]] bool any_in(int list) const { return counts_[at(list)] > 0; }
    [[nodiscard]] const Wl& preemptor() const { return preemptor_; }

    void restart() {
      ++core_.drop_stamp_;
      for (auto& l : levels_) {
        l.pos = l.start;
        settle(l);  // the same candidate as at the start: nothing is dropped yet
      }
      own_ = own_primed_;
      next_evicted_ = 0;
      last_ = Last::None;
    }
    const Candidate* next() {
      if (last_ == Last::Level) {
        Level& l = levels_[last_level_];
        ++l.pos;
        settle(l);
      } else if (last_ == Last::Own) {
        if (!core_.advance(*own_, preemptor_, queue_, frs_)) own_.reset();
      }
      last_ = Last::None;
      if (next_evicted_ < evicted_.size()) return &evicted_[next_evicted_++].c;
      std::size_t best = levels_.size();
      for (std::size_t i = 0; i < levels_.size(); ++i) {
        const Level& l = levels_[i];
        if (l.pos == l.order->entries.size()) continue;
        if (best == levels_.size() || l.list() < levels_[best].list() ||
            (l.list() == levels_[best].list() && candidate_key_before(l.current, levels_[best].current))) {
          best = i;
        }
      }
      if (best < levels_.size()) {
        last_ = Last::Level;
        last_level_ = best;
        return &levels_[best].current;
      }
      if (own_) {
        last_ = Last::Own;
        return &own_->current;
      }
      return nullptr;
    }
    // The level an attempt walks first when it is all the walk has before the preemptor's
    // own queue: no evicted candidates, one level. Else nullptr.
    [[nodiscard]] const Level* lone_level() const {
      if (!evicted_.empty() || levels_.size() != 1) return nullptr;
      return &levels_.front();
    }
    // Whether no level gives the preemptor the advantage of hierarchical reclaim: its
    // candidates from other queues are then all ReclaimWithoutBorrowing where its queue
    // may not borrow while reclaiming (classify).
    [[nodiscard]] bool no_advantage() const {
      return std::none_of(levels_.begin(), levels_.end(), [](const Level& l) { return l.advantage; });
    }
    // Right after restart(): the levels are walked (or would give nothing), the own queue is next.
    void skip_levels() {
      for (auto& l : levels_) l.pos = l.order->entries.size();
      last_ = Last::None;
    }
    // The rest of the last candidate's queue is left out of this attempt.
    void drop_source() {
      if (last_ == Last::Level) {
        core_.dropped_[at(levels_[last_level_].current_queue)] = core_.drop_stamp_;
      } else if (last_ == Last::Own) {
        own_.reset();
        last_ = Last::None;
      }
    }

   private:
    // Moves l.pos to its next candidate (from l.pos on), or to the end.
    bool settle(Level& l) {
      const auto& entries = l.order->entries;
      for (; l.pos < entries.size(); ++l.pos) {
        const OrderEntry& e = entries[l.pos];
        if (past_cutoff(cutoff_, e.priority, preemptor_.spec.priority)) {
          l.pos = entries.size();
          return false;
        }
        if (!e.uses || e.child == l.skip || core_.dropped_[at(e.queue)] == core_.drop_stamp_) continue;
        // A reused order (reusable_order): queues left out, victims chosen since it was built.
        if (core_.excluded_[at(e.queue)] == core_.exclude_stamp_ || core_.victim_this_cycle(e.w)) continue;
        const Variant v = core_.classify(preemptor_, queue_, e.queue, e.priority, e.creation, l.advantage);
        if (v == Variant::Never) continue;
        l.current = Candidate{e.w, l.lca, v, false, false, e.priority, e.reserved, e.uid_prefix, e.uid_label, e.queue, e.amount};
        l.current_queue = e.queue;
        return true;
      }
      return false;
    }
    enum class Last { None, Level, Own };
    Core& core_;
    const Wl& preemptor_;
    int queue_;
    const std::vector<int>& frs_;
    PreemptionPolicy cutoff_;
    std::vector<Ranked>& evicted_;
    std::size_t next_evicted_ = 0;
    std::vector<Level>& levels_;
    std::optional<Source> own_primed_, own_;
    Last last_ = Last::None;
    std::size_t last_level_ = 0;
    std::array<std::size_t, 3> counts_{};
  };

  // A shared order is sorted by ascending priority: once the preemptor's reclaim policy
  // refuses a candidate's priority it refuses the rest of the order.
  [[nodiscard]] static bool past_cutoff(PreemptionPolicy reclaim, std::int32_t cand_priority, std::int32_t preemptor_priority) {
    return (reclaim == PreemptionPolicy::LowerPriority && cand_priority >= preemptor_priority) ||
           (reclaim == PreemptionPolicy::LowerOrNewerEqualPriority && cand_priority > preemptor_priority);
  }

  // classical.classifyPreemptionVariant
  [[nodiscard]] Variant classify(const Wl& preemptor, int queue, WorkloadId cand, bool advantage,
                                 const std::vector<int>& frs) const {
    if (!uses_resources(cand, frs)) return Variant::Never;
    const Wl& c = wl(cand);
    return classify(preemptor, queue, c.queue, c.spec.priority, c.spec.creation, advantage);
  }
  // The same for a candidate known to use the resources, from its queue, priority and creation.
  [[nodiscard]] Variant classify(const Wl& preemptor, int queue, int cand_queue, std::int32_t cand_priority,
                                 VirtualTime cand_creation, bool advantage) const {
    const Queue& q = queues_[at(queue)];
    const auto policy = cand_queue == queue ? q.spec.preemption.within_cluster_queue : q.spec.preemption.reclaim_within_cohort;
    if (!satisfies(preemptor, cand_priority, cand_creation, policy)) return Variant::Never;
    if (cand_queue == queue) return Variant::WithinCQ;
    if (advantage) return Variant::Hierarchical;
    if (q.spec.preemption.borrow_within_cohort == BorrowWithinCohortPolicy::Never) return Variant::ReclaimWithoutBorrowing;
    // isAboveBorrowingThreshold
    const auto& threshold = q.spec.preemption.max_priority_threshold;
    if (cand_priority >= preemptor.spec.priority || (threshold && cand_priority > *threshold)) {
      return Variant::ReclaimWithoutBorrowing;
    }
    return Variant::ReclaimWhileBorrowing;
  }

  // QuantitiesFitInQuota
  // What does not fit in n's local quota goes to `remaining`.
  [[nodiscard]] bool fit_in_quota(int n, const Usage& requests, Usage& remaining) const {
    bool ok = true;
    remaining.clear();
    for (const auto& [fr, v] : requests) {
      if (tree_.subtree_quota(n, fr) < quota_add(tree_.usage(n, fr), v)) ok = false;
      remaining.emplace_back(fr, std::max<Amount>(0, quota_sub(v, tree_.local_available(n, fr))));
    }
    return ok;
  }

  // The queues (and their evicted candidates) under `current`, skipping the subtree the
  // preemptor came from and subtrees within nominal quota.
  void collect_sources(const Wl& preemptor, int queue, int current, int subtree_root, int skip, bool advantage,
                       const std::vector<int>& frs, std::vector<Source>& sources, std::vector<Ranked>& evicted) const {
    const auto& node = tree_.node(current);
    for (int child : node.child_cohorts) {
      if (child == skip || within_nominal(child, frs)) continue;
      collect_sources(preemptor, queue, child, subtree_root, skip, advantage, frs, sources, evicted);
    }
    const PreemptionPolicy policy = queues_[at(queue)].spec.preemption.reclaim_within_cohort;
    auto add = [&](int child) {
      const int cq = node_queue_[at(child)];
      if (cq == queue) return;
      const int list = advantage ? 0 : 1;
      sources.push_back(Source{cq, list, subtree_root, advantage, policy, 0, {}});
      add_evicted(preemptor, queue, cq, list, subtree_root, advantage, frs, evicted);
    };
    // The order of sources does not matter: the walk merges them by candidate order.
    if (frs.size() == 1) {
      for (int child : tree_.queues_above_nominal(current, frs.front())) add(child);
    } else {
      for (int child : node.child_queues) {
        if (!within_nominal(child, frs)) add(child);
      }
    }
  }

  void add_evicted(const Wl& preemptor, int queue, int cq, int list, int lca, bool advantage, const std::vector<int>& frs,
                   std::vector<Ranked>& evicted) const {
    for (WorkloadId w : queues_[at(cq)].evicted) {
      if (victim_this_cycle(w)) continue;
      const Variant v = classify(preemptor, queue, w, advantage, frs);
      if (v != Variant::Never) evicted.push_back(Ranked{list, candidate(w, lca, v, queue)});
    }
  }


  enum class Validity { Valid, RestInvalid };
  // candidateIterator.candidateIsValid. An invalid candidate makes the rest of its queue's
  // walk invalid for the same attempt of the greedy search, so the walk can drop it:
  //  - ReclaimWithoutBorrowing while borrowing: the variant is the same for the whole queue
  //    (borrowWithinCohort Never), or holds from some priority upwards (above the
  //    preemptor's priority or maxPriorityThreshold), and the walk ascends in priority;
  //  - the queue, or a cohort between it and the lca, is within nominal quota: within an
  //    attempt usage only goes down, so it stays within nominal.
  [[nodiscard]] Validity candidate_validity(const Candidate& c, int queue, bool borrow, const std::vector<int>& frs) const {
    if (c.queue == queue) return Validity::Valid;
    if (borrow && c.variant == Variant::ReclaimWithoutBorrowing) return Validity::RestInvalid;
    const int n = queues_[at(c.queue)].node;
    if (within_nominal(n, frs)) return Validity::RestInvalid;
    for (int a = tree_.node(n).parent; a >= 0; a = tree_.node(a).parent) {
      if (a == c.lca) break;
      if (within_nominal(a, frs)) return Validity::RestInvalid;
    }
    return Validity::Valid;
  }

  [[nodiscard]] bool workload_fits(int queue, const Usage& usage, bool allow_borrowing) const {
    const int n = queues_[at(queue)].node;
    for (const auto& [fr, v] : usage) {
      if (!allow_borrowing && tree_.borrowing_with(n, fr, v)) return false;
      if (v > tree_.available(n, fr)) return false;
    }
    return true;
  }

  // Puts back what is not needed, latest first. Quiet: without bumping versions or tracking
  // queues above nominal (see QuotaTree::add_usage_quietly); the caller puts every target
  // back afterwards.
  template <bool Quiet>
  void fill_back(std::vector<Target>& targets, int queue, const Usage& usage, bool allow_borrowing) {
    for (int i = static_cast<int>(targets.size()) - 2; i >= 0; --i) {
      change_workload<true, Quiet>(targets[at(i)].workload);
      if (workload_fits(queue, usage, allow_borrowing)) {
        targets[at(i)] = targets.back();
        targets.pop_back();
      } else {
        change_workload<false, Quiet>(targets[at(i)].workload);
      }
    }
  }

  // Targets are a pure function of the state and the request. Nomination asks twice with the
  // same request for a single-resource workload (the flavor assigner's oracle, then
  // GetTargets), so the last answer is kept until the state changes.
  // The answer stays valid until the next call.
  const std::vector<Target>& get_targets(WorkloadId id, int queue, const std::vector<int>& frs, const Usage& usage) {
    static const std::vector<Target> kNone;
    if (frs.empty()) return kNone;
    if (!options_.fair_sharing && usage.size() == 1 && no_candidate_can_exist(wl(id), queue, usage.front().first, usage.front().second)) {
      return kNone;
    }
    if (targets_cache_valid_ && targets_cache_epoch_ == epoch_ && targets_cache_id_ == id &&
        targets_cache_frs_ == frs && targets_cache_usage_ == usage) {
      return targets_cache_;
    }
    {
      const UndoneChanges undone(*this);  // both searches put back every workload they remove
      if (options_.fair_sharing) {
        targets_cache_ = fair_preemptions(id, queue, frs, usage);
      } else {
        classical_preemptions(id, queue, frs, usage, targets_cache_);
      }
    }
    targets_cache_valid_ = true;
    targets_cache_epoch_ = epoch_;
    targets_cache_id_ = id;
    targets_cache_frs_ = frs;
    targets_cache_usage_ = usage;
    return targets_cache_;
  }

  // Whether the policy can accept some candidate of `min_priority` or above.
  [[nodiscard]] static bool policy_may_take(PreemptionPolicy policy, std::int32_t min_priority, std::int32_t preemptor_priority) {
    switch (policy) {
      case PreemptionPolicy::Never: return false;
      case PreemptionPolicy::LowerPriority: return min_priority < preemptor_priority;
      case PreemptionPolicy::LowerOrNewerEqualPriority: return min_priority <= preemptor_priority;
      case PreemptionPolicy::Any: return true;
    }
    return true;
  }

  // A sound shortcut for classical_preemptions with one flavor-resource: true only when its
  // walk can give no valid candidate, so the search would return no targets. In a busy
  // cohort most heads that do not fit are such (a queue at nominal whose head has nothing of
  // lower priority below it), and the search's set-up (levels, orders, walks, attempts)
  // costs far more than these reads. It mirrors where candidates come from:
  //  - the preemptor's own queue: its evicted workloads, and its ranked admitted workloads
  //    (ascending priority, so the first decides whether withinClusterQueue accepts any);
  //  - the cohorts above (reclaimWithinCohort): queues above nominal, and subtrees not within
  //    nominal, under each ancestor but the subtree the preemptor came from; their evicted
  //    workloads come from the same queues (collect_sources, add_order_queues).
  // With no candidate in its own queue, the other queues' give nothing either when
  // borrowWithinCohort is Never and no level gives the advantage of hierarchical reclaim
  // (the request fits in no subtree below the cohorts searched): they are all
  // ReclaimWithoutBorrowing (classify), invalid in the attempt that allows borrowing
  // (candidate_validity, SharedWalk::skip_levels), and in the attempt that does not, the
  // request keeps the queue borrowing, since only removals from the queue itself lower its
  // usage. Everything else is answered "maybe", which only costs the full search.
  [[nodiscard]] bool no_candidate_can_exist(const Wl& preemptor, int queue, int fr, Amount request) const {
    const Queue& q = queues_[at(queue)];
    const auto& policy = q.spec.preemption;
    if (policy.within_cluster_queue != PreemptionPolicy::Never) {
      if (!q.evicted.empty()) return false;
      if (!q.ranked.empty() && policy_may_take(policy.within_cluster_queue, q.ranked.front().priority, preemptor.spec.priority)) {
        return false;
      }
    }
    const int n = q.node;
    if (!tree_.has_parent(n) || policy.reclaim_within_cohort == PreemptionPolicy::Never) return true;
    if (policy.borrow_within_cohort == BorrowWithinCohortPolicy::Never) {
      // classical_preemptions' levels: level k has the advantage when the request fits
      // below it, in the queue or a cohort under level k.
      bool advantage = quota_add(tree_.usage(n, fr), request) <= tree_.subtree_quota(n, fr);
      Amount remaining = std::max<Amount>(0, quota_sub(request, tree_.local_available(n, fr)));
      for (int a = tree_.node(n).parent; !advantage && tree_.node(a).parent >= 0; a = tree_.node(a).parent) {
        advantage = quota_add(tree_.usage(a, fr), remaining) <= tree_.subtree_quota(a, fr);
        remaining = std::max<Amount>(0, quota_sub(remaining, tree_.local_available(a, fr)));
      }
      if (!advantage) return true;
    }
    int skip = n;
    for (int a = tree_.node(n).parent; a >= 0; skip = a, a = tree_.node(a).parent) {
      for (int child : tree_.node(a).child_cohorts) {
        if (child != skip && tree_.usage(child, fr) > tree_.subtree_quota(child, fr)) return false;
      }
      for (int child : tree_.queues_above_nominal(a, fr)) {
        if (child != n) return false;
      }
    }
    return true;
  }

  // Preemptor.classicalPreemptions
  // The targets go to `out` (empty: none).
  void classical_preemptions(WorkloadId id, int queue, const std::vector<int>& frs, const Usage& usage,
                             std::vector<Target>& out) {
    const Wl& preemptor = wl(id);
    const Queue& q = queues_[at(queue)];
    const int n = q.node;
    std::vector<Ranked>& evicted = scratch_ranked_;
    evicted.clear();
    std::optional<Source> own;
    if (q.spec.preemption.within_cluster_queue != PreemptionPolicy::Never) {
      own = Source{queue, 2, -1, false, q.spec.preemption.within_cluster_queue, 0, {}};
      add_evicted(preemptor, queue, queue, 2, -1, false, frs, evicted);
    }
    // The cohorts above the queue, each with whether the preemptor has the advantage of
    // reclaiming there (hierarchical candidates) and the subtree it came from.
    std::vector<Level>& levels = scratch_levels_;
    levels.clear();
    if (tree_.has_parent(n) && q.spec.preemption.reclaim_within_cohort != PreemptionPolicy::Never) {
      Usage& remaining = scratch_remaining_;
      Usage& rest = scratch_rest_;
      bool advantage = fit_in_quota(n, usage, remaining);
      int previous = n;
      for (int a = tree_.node(n).parent; a >= 0; a = tree_.node(a).parent) {
        Level& l = levels.emplace_back();
        l.lca = a;
        l.skip = previous;
        l.advantage = advantage;
        const bool fits_here = fit_in_quota(a, remaining, rest);
        std::swap(remaining, rest);
        advantage = advantage || fits_here;
        previous = a;
      }
    }
    if (!levels.empty() && share_order(levels.front().lca, frs)) {
      ++exclude_stamp_;  // nothing left out
      for (auto& l : levels) {
        l.order = &candidate_order(l.lca, frs);
        for (const auto& [cq, child] : l.order->evicted_queues) {
          if (child != l.skip) add_evicted(preemptor, queue, cq, l.list(), l.lca, l.advantage, frs, evicted);
        }
      }
      SharedWalk walk(*this, preemptor, queue, frs, evicted, levels, own);
      search_with(walk, queue, frs, usage, out);
      return;
    }
    if (levels.size() == 1) {
      if (const CandidateOrder* o = reusable_order(levels.front().lca, frs)) {
        Level& l = levels.front();
        l.order = o;
        for (const auto& [cq, child] : o->evicted_queues) {
          if (child != l.skip && excluded_[at(cq)] != exclude_stamp_) {
            add_evicted(preemptor, queue, cq, l.list(), l.lca, l.advantage, frs, evicted);
          }
        }
        SharedWalk walk(*this, preemptor, queue, frs, evicted, levels, own);
        search_with(walk, queue, frs, usage, out);
        return;
      }
    }
    std::vector<Source>& sources = scratch_sources_;
    sources.clear();
    if (own) sources.push_back(*own);
    for (const auto& l : levels) {
      // At the first level the preemptor's own queue is left out by collect_sources itself.
      const int skip = l.skip == n ? -1 : l.skip;
      collect_sources(preemptor, queue, l.lca, l.lca, skip, l.advantage, frs, sources, evicted);
    }
    CandidateWalk walk(*this, preemptor, queue, frs, evicted, sources, scratch_work_, scratch_heap_);
    search_with(walk, queue, frs, usage, out);
  }

  // The greedy search on the tree itself: removals and puts-back change it (quietly) and
  // are undone before the search returns.
  class TreeSearch {
   public:
    TreeSearch(Core& core, int queue, const std::vector<int>& frs, const Usage& usage)
        : core_(core), queue_(queue), frs_(frs), usage_(usage) {}
    void start() {}
    [[nodiscard]] Validity validity(const Candidate& c, bool borrow) const {
      return core_.candidate_validity(c, queue_, borrow, frs_);
    }
    void remove(const Candidate& c) { core_.change_workload<false, true>(c.w); }
    [[nodiscard]] bool fits(bool borrow) const { return core_.workload_fits(queue_, usage_, borrow); }
    void fill_back(std::vector<Target>& targets, bool borrow) { core_.fill_back<true>(targets, queue_, usage_, borrow); }
    void undo(const std::vector<Target>& targets) {
      for (const auto& t : targets) core_.change_workload<true, true>(t.workload);
    }

   private:
    Core& core_;
    int queue_;
    const std::vector<int>& frs_;
    const Usage& usage_;
  };
  // QuotaTree::change_usage<false> for a queue under the root: takes `v` off the queue's
  // usage `u`; returns what that takes off the root's (the part the root stored).
  static Amount take_from(Amount& u, Amount local_quota, Amount v) {
    const Amount stored_in_parent = quota_sub(u, local_quota);
    u = usage_sub(u, v);
    return stored_in_parent > 0 ? std::min(v, stored_in_parent) : 0;
  }

  // A preemptor class's walk of a flat cohort's level (removal_run, below).
  struct RemovalRun {
    // What the run depends on besides the state (epoch_, which each cycle renews, and the
    // cycle's victims): the preemptor's priority (and creation, where its policy reads it),
    // its queue's policies and threshold, the level's advantage.
    std::uint64_t epoch = 0;
    std::size_t victims = 0;
    std::uint64_t exclusion = 0;  // a reused order's exclude_stamp_ (reusable_order), else 0
    int lca = -1, fr = -1;
    std::int32_t priority = 0;
    VirtualTime creation = 0;
    PreemptionPolicy reclaim = PreemptionPolicy::Never;
    BorrowWithinCohortPolicy borrow = BorrowWithinCohortPolicy::Never;
    std::optional<std::int32_t> threshold;
    bool advantage = false;
    struct Removal {
      WorkloadId w;
      int queue, node;
      Amount amount;
      std::string_view reason;
    };
    struct QueueRun {
      int queue, node;
      Amount usage;      // after its removals
      Amount root_drop;  // what its removals took out of the root's usage
      bool dropped;      // reached nominal: the rest of it is invalid
    };
    std::vector<Removal> removals;  // in walk order, all queues
    std::vector<QueueRun> queues;   // the queues the run met
    Amount root_drop = 0;           // all queues'
    bool lending = false;           // one of them has a local quota (a lending limit)
  };

  // The same search where the preemptor's queue and every candidate's queue are children of
  // one root cohort and the request is one flavor-resource (a flat cohort, the common
  // shape): QuotaTree's formulas (change_usage, available, borrowing_with) restricted to two
  // levels and one flavor-resource, on copies of the cells the search touches. The tree is
  // neither changed nor restored, and a candidate from the shared order brings its queue
  // and amount along, so its record is not read either. The seeded-run hashes pin it to the
  // tree's answers (mutations of these formulas fail them).
  class FlatSearch {
   public:
    FlatSearch(Core& core, int queue, int fr, Amount request)
        : core_(core), tree_(core.tree_), queue_(queue), node_(core.queues_[at(queue)].node), fr_(fr),
          root_(core.tree_.parent(node_)), request_(request), root_quota_(core.tree_.subtree_quota(root_, fr)),
          removed_(core.scratch_removed_), applied_sum_(core.scratch_applied_sum_) {
      if (core_.flat_stamp_.size() != tree_.size()) {
        core_.flat_stamp_.assign(tree_.size(), 0);
        core_.flat_usage_.assign(tree_.size(), 0);
      }
    }
    // Every attempt starts from the tree as it is.
    void start() {
      stamp_ = ++core_.flat_stamp_counter_;
      root_usage_ = tree_.usage(root_, fr_);
      removed_.clear();
      applied_ = 0;
      applied_whole_ = false;
      own_changed();
    }
    [[nodiscard]] Validity validity(const Candidate& c, bool borrow) {
      // candidate_validity: the cohort between the queue and the lca is the lca itself.
      if (c.queue == queue_) return Validity::Valid;
      if (borrow && c.variant == Variant::ReclaimWithoutBorrowing) return Validity::RestInvalid;
      const int n = core_.queues_[at(c.queue)].node;
      return usage(n) <= tree_.subtree_quota(n, fr_) ? Validity::RestInvalid : Validity::Valid;
    }
    void remove(const Candidate& c) {
      const int n = core_.queues_[at(c.queue)].node;
      const Amount v = c.amount >= 0 ? c.amount : usage_of(core_.wl(c.w).usage, fr_);
      removed_.emplace_back(n, v);
      take(n, v);
    }
    // workload_fits: not borrowing_with, and request <= QuotaTree::available for a queue
    // whose parent is the root, with what depends on the queue's own usage worked out
    // when that usage changes (own_changed), since fill-back mostly changes the root's.
    [[nodiscard]] bool fits(bool borrow) const {
      if (!borrow && borrowing_) return false;
      Amount from_parent = quota_sub(root_quota_, root_usage_);
      if (capped_) from_parent = std::min(from_parent, cap_);
      return request_ <= quota_add(local_, from_parent);
    }
    // Core::fill_back, with the removals kept in step with the targets.
    void fill_back(std::vector<Target>& targets, bool borrow) {
      for (int i = static_cast<int>(targets.size()) - 2; i >= 0; --i) {
        if (i < static_cast<int>(applied_) && applied_whole_) {
          fill_back_applied(targets, i, borrow);
          return;
        }
        const auto [n, v] = removed_[at(i)];
        give(n, v);
        if (fits(borrow)) {
          put_back(targets, i);
        } else {
          take(n, v);
        }
      }
    }
    void undo(const std::vector<Target>&) {}
    // Whether the request would make the preemptor's queue borrow: only removals from its
    // own queue change that.
    [[nodiscard]] bool borrowing() const { return borrowing_; }
    // Right after start(): the removals of `run` but its own queue's, as the walk of the
    // level would have made them one by one.
    void apply(const RemovalRun& run, std::vector<Target>& targets) {
      Amount root_drop = run.root_drop;
      for (const auto& r : run.queues) {
        if (r.queue == queue_) {
          root_drop = usage_sub(root_drop, r.root_drop);
          continue;
        }
        core_.flat_stamp_[at(r.node)] = stamp_;
        core_.flat_usage_[at(r.node)] = r.usage;
      }
      root_usage_ = usage_sub(root_usage_, root_drop);
      applied_whole_ = !run.lending;
      applied_sum_.assign(1, 0);
      for (const auto& x : run.removals) {
        if (x.queue == queue_) continue;
        removed_.emplace_back(x.node, x.amount);
        targets.push_back(Target{x.w, x.reason});
        applied_sum_.push_back(usage_add(applied_sum_.back(), x.amount));
      }
      applied_ = targets.size();
    }

   private:
    // What fill_back does with targets [0, i] when they are all the applied run's and each
    // gives the root its whole amount back (give() with no local quota): put target k back
    // when the preemptor still fits with the root's usage up by its amount. fits() only
    // gets harder as that usage grows, so the targets from i down that go back one after
    // another are the longest stretch whose sum fits, found by bisection on the prefix
    // sums; the target below it stays removed. The moves are fill_back's own.
    void fill_back_applied(std::vector<Target>& targets, int i, bool borrow) {
      while (i >= 0) {
        const Amount top = applied_sum_[at(i + 1)];
        int lo = 0, hi = i + 1;  // the first target of the stretch is in [lo, hi]; hi: none
        while (lo < hi) {
          const int mid = lo + (hi - lo) / 2;
          if (fits_with_root(usage_sub(top, applied_sum_[at(mid)]), borrow)) {
            hi = mid;
          } else {
            lo = mid + 1;
          }
        }
        root_usage_ = usage_add(root_usage_, usage_sub(top, applied_sum_[at(lo)]));
        for (; i >= lo; --i) put_back(targets, i);
        --i;  // target lo - 1 does not fit: it stays removed
      }
    }
    [[nodiscard]] bool fits_with_root(Amount more, bool borrow) {
      const Amount before = root_usage_;
      root_usage_ = usage_add(root_usage_, more);
      const bool ok = fits(borrow);
      root_usage_ = before;
      return ok;
    }
    void put_back(std::vector<Target>& targets, int i) {
      targets[at(i)] = targets.back();
      targets.pop_back();
      removed_[at(i)] = removed_.back();
      removed_.pop_back();
    }
    Amount& usage(int n) {
      if (core_.flat_stamp_[at(n)] != stamp_) {
        core_.flat_stamp_[at(n)] = stamp_;
        core_.flat_usage_[at(n)] = tree_.usage(n, fr_);
      }
      return core_.flat_usage_[at(n)];
    }
    // QuotaTree::change_usage<false>: what the queue stored in the root goes down with it.
    void take(int n, Amount v) {
      root_usage_ = usage_sub(root_usage_, take_from(usage(n), tree_.local_quota(n, fr_), v));
      if (n == node_) own_changed();
    }
    // QuotaTree::change_usage<true>: what the queue's local quota does not hold goes to the root.
    void give(int n, Amount v) {
      Amount& u = usage(n);
      const Amount local = std::max<Amount>(0, quota_sub(tree_.local_quota(n, fr_), u));
      u = usage_add(u, v);
      if (v > local) root_usage_ = usage_add(root_usage_, quota_sub(v, local));
      if (n == node_) own_changed();
    }
    // The parts of fits() that depend on the preemptor's queue's usage only.
    void own_changed() {
      const QuotaCell& x = tree_.cell(node_, fr_);
      const Amount u = usage(node_);
      borrowing_ = quota_add(u, request_) > x.subtree_quota;
      local_ = std::max<Amount>(0, quota_sub(x.local_quota, u));
      capped_ = x.borrowing_limit != kNoLimit;
      if (capped_) {
        const Amount stored_in_parent = quota_sub(x.subtree_quota, x.local_quota);
        const Amount used_in_parent = std::max<Amount>(0, quota_sub(u, x.local_quota));
        cap_ = quota_add(quota_sub(stored_in_parent, used_in_parent), x.borrowing_limit);
      }
    }
    Core& core_;
    const QuotaTree& tree_;
    int queue_, node_, fr_, root_;
    Amount request_, root_quota_;
    std::vector<std::pair<int, Amount>>& removed_;  // per target: its queue's node and amount
    std::uint64_t stamp_ = 0;
    Amount root_usage_ = 0;
    std::size_t applied_ = 0;  // targets [0, applied_) are the applied run's (apply)
    // Whether each of them gives the root its whole amount back (no lending limit in the
    // run, so no queue holds any of it in its local quota), and the sum of the amounts of
    // targets [0, k) at k.
    bool applied_whole_ = false;
    std::vector<Amount>& applied_sum_;
    // own_changed()
    bool borrowing_ = false, capped_ = false;
    Amount local_ = 0, cap_ = 0;
  };

  // Whether FlatSearch applies: one flavor-resource, and the queue's cohort is a root whose
  // children are all queues (every candidate of the search then sits in a child queue).
  [[nodiscard]] bool flat_search(int queue, const std::vector<int>& frs, const Usage& usage) const {
    if (frs.size() != 1 || usage.size() != 1 || usage.front().first != frs.front()) return false;
    const int n = queues_[at(queue)].node;
    return tree_.has_parent(n) && flat_cohort(tree_.parent(n));
  }
  // A root cohort whose children are all ClusterQueues.
  [[nodiscard]] bool flat_cohort(int a) const { return !tree_.has_parent(a) && tree_.node(a).child_cohorts.empty(); }

  // ---- the walk of a flat cohort's order while the preemptor's queue would borrow -----------
  //
  // In an attempt that may not borrow (minimal_preemptions' borrow == false) and a
  // preemptor whose queue would borrow with the request, nothing but a removal from its own
  // queue can make it fit, and that queue comes after the cohort's level in the walk. So the
  // attempt walks the whole level first and removes every valid candidate of it: each other
  // queue's candidates in order while that queue is above nominal (FlatSearch::validity),
  // and fill-back later puts most of them back. In a contended cohort every head of the
  // same priority walks the same level in the same state, and each queue's run depends on
  // that queue's usage only. So the run over all queues is worked out once per state and
  // preemptor class, and each preemptor takes it less its own queue's part. A re-nomination
  // walking a reused order (reusable_order) takes a run of its own: it is still cheaper
  // than the walk, and its fill-back is the bisecting one.
  [[nodiscard]] static VirtualTime run_creation(const Wl& preemptor, const ClusterQueuePreemption& p) {
    return p.reclaim_within_cohort == PreemptionPolicy::LowerOrNewerEqualPriority ? preemptor.spec.creation : 0;
  }

  const RemovalRun& removal_run(const Wl& preemptor, int queue, const Level& l, int fr) {
    const auto& p = queues_[at(queue)].spec.preemption;
    const VirtualTime creation = run_creation(preemptor, p);
    const std::uint64_t exclusion = l.order->epoch == epoch_ ? 0 : exclude_stamp_;
    for (const RemovalRun& r : removal_runs_) {
      if (r.epoch == epoch_ && r.victims == victim_ids_.size() && r.exclusion == exclusion &&
          r.lca == l.lca && r.fr == fr &&
          r.priority == preemptor.spec.priority && r.creation == creation && r.reclaim == p.reclaim_within_cohort &&
          r.borrow == p.borrow_within_cohort && r.threshold == p.max_priority_threshold && r.advantage == l.advantage) {
        return r;
      }
    }
    // Runs of another state are of no use again; their buffers are.
    std::size_t used = 0;
    for (std::size_t i = 0; i < removal_runs_.size(); ++i) {
      const RemovalRun& r = removal_runs_[i];
      if (r.epoch == epoch_ && r.victims == victim_ids_.size()) std::swap(removal_runs_[used++], removal_runs_[i]);
    }
    if (used == removal_runs_.size()) removal_runs_.emplace_back();
    RemovalRun& r = removal_runs_[used];
    r.epoch = epoch_;
    r.victims = victim_ids_.size();
    r.exclusion = exclusion;
    r.lca = l.lca;
    r.fr = fr;
    r.priority = preemptor.spec.priority;
    r.creation = creation;
    r.reclaim = p.reclaim_within_cohort;
    r.borrow = p.borrow_within_cohort;
    r.threshold = p.max_priority_threshold;
    r.advantage = l.advantage;
    r.removals.clear();
    r.queues.clear();
    r.root_drop = 0;
    r.lending = false;
    if (run_slot_.size() != queues_.size()) run_slot_.assign(queues_.size(), {0, 0});
    const std::uint64_t stamp = ++run_stamp_;
    constexpr int kOtherQueue = -2;  // classify as a candidate from another queue than the preemptor's
    for (const OrderEntry& e : l.order->entries) {
      // SharedWalk::settle, for every queue of the level.
      if (past_cutoff(r.reclaim, e.priority, r.priority)) break;
      if (!e.uses || victim_this_cycle(e.w)) continue;
      // As settle leaves a reused order's excluded queues out (they are within nominal, so
      // validity would drop them at their first candidate anyway).
      if (exclusion != 0 && excluded_[at(e.queue)] == exclusion) continue;
      auto& [slot_stamp, slot] = run_slot_[at(e.queue)];
      if (slot_stamp != stamp) {
        slot_stamp = stamp;
        slot = r.queues.size();
        const int n = queues_[at(e.queue)].node;
        r.queues.push_back(RemovalRun::QueueRun{e.queue, n, tree_.usage(n, fr), 0, false});
        if (tree_.local_quota(n, fr) > 0) r.lending = true;
      }
      RemovalRun::QueueRun& q = r.queues[slot];
      if (q.dropped) continue;
      const Variant v = classify(preemptor, queue, kOtherQueue, e.priority, e.creation, l.advantage);
      if (v == Variant::Never) continue;
      // FlatSearch::validity without borrowing, then FlatSearch::take.
      if (q.usage <= tree_.subtree_quota(q.node, fr)) {
        q.dropped = true;
        continue;
      }
      const Amount amount = e.amount >= 0 ? e.amount : usage_of(wl(e.w).usage, fr);
      const Amount drop = take_from(q.usage, tree_.local_quota(q.node, fr), amount);
      q.root_drop = usage_add(q.root_drop, drop);
      r.root_drop = usage_add(r.root_drop, drop);
      r.removals.push_back(RemovalRun::Removal{e.w, e.queue, q.node, amount, variant_reason(v)});
    }
    return r;
  }

  template <class Walk>
  void search_with(Walk& walk, int queue, const std::vector<int>& frs, const Usage& usage, std::vector<Target>& out) {
    if (flat_search(queue, frs, usage)) {
      FlatSearch search(*this, queue, frs.front(), usage.front().second);
      minimal_preemptions(walk, search, queue, frs, out);
    } else {
      TreeSearch search(*this, queue, frs, usage);
      minimal_preemptions(walk, search, queue, frs, out);
    }
  }

  // The attempts of classicalPreemptions over a walk of the candidates (minimalPreemptions).
  template <class Walk, class Search>
  void minimal_preemptions(Walk& all, Search& search, int queue, const std::vector<int>& frs, std::vector<Target>& out) {
    out.clear();
    const int n = queues_[at(queue)].node;
    const Queue& q = queues_[at(queue)];
    const bool has_hierarchy = all.any_in(0);
    const bool has_priority = all.any_in(1);
    const bool no_other = !has_hierarchy && !has_priority;
    const bool borrow_forbidden = q.spec.preemption.borrow_within_cohort == BorrowWithinCohortPolicy::Never;
    auto under_nominal = [&] {
      return std::all_of(frs.begin(), frs.end(), [&](int fr) { return tree_.nominal(n, fr) > tree_.usage(n, fr); });
    };
    std::array<bool, 2> attempts{true, false};
    std::size_t attempt_count = 2;
    if (no_other || (borrow_forbidden && !under_nominal())) {
      attempt_count = 1;
    } else if (borrow_forbidden && !has_hierarchy) {
      attempts = {false, true};
    }
    std::vector<Target>& targets = scratch_targets_;
    for (std::size_t k = 0; k < attempt_count; ++k) {
      const bool borrow = attempts[k];
      targets.clear();
      all.restart();
      search.start();
      if constexpr (std::is_same_v<Walk, SharedWalk>) {
        if (borrow && borrow_forbidden && all.no_advantage()) {
          // Every candidate of the levels is invalid in this attempt (candidate_validity:
          // ReclaimWithoutBorrowing while borrowing) and only drops its queue.
          all.skip_levels();
        } else if constexpr (std::is_same_v<Search, FlatSearch>) {
          if (!borrow && search.borrowing()) {
            if (const Level* l = all.lone_level()) {
              search.apply(removal_run(all.preemptor(), queue, *l, frs.front()), targets);
              all.skip_levels();
            }
          }
        }
      }
      // Every removal is undone before returning, and nothing the quiet changes skip
      // (versions, queues above nominal) is read in between.
      while (const Candidate* next = all.next()) {
        const Candidate& c = *next;
        if (search.validity(c, borrow) == Validity::RestInvalid) {
          all.drop_source();
          continue;
        }
        search.remove(c);
        targets.push_back(Target{c.w, variant_reason(c.variant)});
        if (search.fits(borrow)) {
          search.fill_back(targets, borrow);
          search.undo(targets);
          out.assign(targets.begin(), targets.end());
          return;
        }
      }
      search.undo(targets);
    }
  }

  // ---- fair sharing (pkg/cache/scheduler/fair_sharing.go, pkg/scheduler/preemption/fairsharing) -

  // A node's DRS depends on its usage only (quotas are fixed), so it is cached per usage
  // version.
  [[nodiscard]] const Drs& drs(int n) const {
    if (drs_cache_.size() != tree_.size()) drs_cache_.assign(tree_.size(), {0, Drs{}});
    auto& [version, cached] = drs_cache_[at(n)];
    if (version != tree_.version(n)) {
      cached = compute_drs(n);
      version = tree_.version(n);
    }
    return cached;
  }

  [[nodiscard]] Drs compute_drs(int n) const {
    const auto& x = tree_.node(n);
    Drs d;
    d.weight = x.fair_weight;
    if (x.parent < 0) return d;
    bool any_borrowed = false;
    const std::size_t resources = resource_names_.size();
    std::vector<Amount>& borrowed = drs_borrowed_;  // scratch: DRS is recomputed very often
    borrowed.assign(resources, 0);
    for (std::size_t fr = 0; fr < tree_.fr_count(); ++fr) {
      const QuotaCell& c = tree_.cell(n, static_cast<int>(fr));
      const Amount b = quota_sub(c.usage, c.subtree_quota);
      if (b > 0) {
        borrowed[at(fr_resource_index_[fr])] = quota_add(borrowed[at(fr_resource_index_[fr])], b);
        any_borrowed = true;
      }
    }
    if (!any_borrowed) return d;
    d.borrowing = true;
    std::vector<Amount>& lendable = drs_lendable_;
    lendable.assign(resources, 0);
    for (std::size_t fr = 0; fr < tree_.fr_count(); ++fr) {
      if (borrowed[at(fr_resource_index_[fr])] > 0) {
        lendable[at(fr_resource_index_[fr])] =
            quota_add(lendable[at(fr_resource_index_[fr])], tree_.potential_available(x.parent, static_cast<int>(fr)));
      }
    }
    for (std::size_t r = 0; r < resources; ++r) {
      if (borrowed[r] <= 0 || lendable[r] <= 0) continue;
      const double ratio = static_cast<double>(borrowed[r]) * 1000.0 / static_cast<double>(lendable[r]);
      if (ratio > d.ratio ||
          (ratio == d.ratio && (d.dominant < 0 || resource_names_[r] < resource_names_[at(d.dominant)]))) {
        d.ratio = ratio;
        d.dominant = static_cast<int>(r);
      }
    }
    return d;
  }

  [[nodiscard]] std::vector<int> ancestors(int n) const {
    std::vector<int> out;
    for (int a = tree_.node(n).parent; a >= 0; a = tree_.node(a).parent) out.push_back(a);
    return out;
  }

  // The child of `lca` on the path from node n (getAlmostLCA).
  [[nodiscard]] int almost_lca(int n, int lca) const {
    int child = n;
    for (int a = tree_.node(n).parent; a >= 0; a = tree_.node(a).parent) {
      if (a == lca) return child;
      child = a;
    }
    return child;
  }

  std::vector<Target> fair_preemptions(WorkloadId id, int queue, const std::vector<int>& frs, const Usage& usage) {
    const Wl& preemptor = wl(id);
    const Queue& q = queues_[at(queue)];
    const int pn = q.node;
    // findCandidates
    std::vector<WorkloadId> candidates;
    auto uses = [&](WorkloadId w) { return uses_resources(w, frs); };
    if (q.spec.preemption.within_cluster_queue != PreemptionPolicy::Never) {
      for (WorkloadId w : q.holding) {
        if (victim_this_cycle(w)) continue;
        if (satisfies(preemptor, wl(w), q.spec.preemption.within_cluster_queue) && uses(w)) candidates.push_back(w);
      }
    }
    if (tree_.has_parent(pn) && q.spec.preemption.reclaim_within_cohort != PreemptionPolicy::Never) {
      std::vector<int> stack{tree_.root(pn)};
      std::vector<int> subtree_queues;
      while (!stack.empty()) {
        const int x = stack.back();
        stack.pop_back();
        const auto& node = tree_.node(x);
        if (node.is_queue) {
          subtree_queues.push_back(node_queue_[at(x)]);
          continue;
        }
        for (auto it = node.child_queues.rbegin(); it != node.child_queues.rend(); ++it) stack.push_back(*it);
        for (auto it = node.child_cohorts.rbegin(); it != node.child_cohorts.rend(); ++it) stack.push_back(*it);
      }
      std::sort(subtree_queues.begin(), subtree_queues.end());
      for (int other : subtree_queues) {
        if (other == queue) continue;
        const int on = queues_[at(other)].node;
        const bool borrowing = std::any_of(frs.begin(), frs.end(), [&](int fr) { return tree_.borrowing_with(on, fr, 0); });
        if (!borrowing) continue;
        for (WorkloadId w : queues_[at(other)].holding) {
          if (victim_this_cycle(w)) continue;
          if (satisfies(preemptor, wl(w), q.spec.preemption.reclaim_within_cohort) && uses(w)) candidates.push_back(w);
        }
      }
    }
    if (candidates.empty()) return {};
    const VirtualTime now = now_;
    std::sort(candidates.begin(), candidates.end(),
              [&](WorkloadId a, WorkloadId b) { return candidate_before(a, b, queue, now); });

    add_usage(queue, usage);  // shares include the incoming workload
    const std::vector<int> preemptor_ancestors = ancestors(pn);
    auto fits_fs = [&] {
      remove_usage(queue, usage);
      const bool ok = workload_fits(queue, usage, true);
      add_usage(queue, usage);
      return ok;
    };

    // TargetClusterQueueOrdering over per-queue candidate lists.
    // Per queue: its candidates in order, and how many were taken.
    std::vector<std::vector<WorkloadId>>& per_queue = fs_lists_;
    std::vector<std::size_t>& taken = fs_taken_;
    per_queue.resize(queues_.size());
    for (auto& list : per_queue) list.clear();  // the buffers outlive a call
    taken.assign(queues_.size(), 0);
    std::vector<int> used_queues;
    auto make_lists = [&](const std::vector<WorkloadId>& cands) {
      for (int used : used_queues) {
        per_queue[at(used)].clear();
        taken[at(used)] = 0;
      }
      used_queues.clear();
      for (WorkloadId w : cands) {
        auto& list = per_queue[at(wl(w).queue)];
        if (list.empty()) used_queues.push_back(wl(w).queue);
        list.push_back(w);
      }
    };
    auto has_work = [&](int qi) { return taken[at(qi)] < per_queue[at(qi)].size(); };
    auto front = [&](int qi) { return per_queue[at(qi)][taken[at(qi)]]; };
    auto pop = [&](int qi) { return per_queue[at(qi)][taken[at(qi)]++]; };
    std::vector<char>& pruned_queue_flags = fs_pruned_queues_;
    std::vector<char>& pruned_cohort_flags = fs_pruned_cohorts_;
    pruned_queue_flags.assign(queues_.size(), 0);
    pruned_cohort_flags.assign(tree_.size(), 0);
    struct Flags {
      std::vector<char>& f;
      [[nodiscard]] bool contains(int i) const { return f[static_cast<std::size_t>(i)] != 0; }
      void insert(int i) { f[static_cast<std::size_t>(i)] = 1; }
      void clear() { std::fill(f.begin(), f.end(), 0); }
    } pruned_queues{pruned_queue_flags}, pruned_cohorts{pruned_cohort_flags};
    auto on_path = [&](int cohort) {
      return std::find(preemptor_ancestors.begin(), preemptor_ancestors.end(), cohort) != preemptor_ancestors.end();
    };
    // The queue choice at a cohort is the maximum of a strict order (the larger DRS, then
    // the earlier front candidate), and between two choices only the queue chosen last
    // changes (its usage and its front): so each cohort keeps its eligible child queues in a
    // heap, and the last choice is re-placed before the next, instead of a scan of every
    // child queue per target. Pruning is permanent within a strategy run, as upstream.
    auto eligible = [&](int child) {
      const int qi = node_queue_[at(child)];
      if (pruned_queues.contains(qi)) return false;
      const Drs& d = drs(child);
      if ((!d.borrowing && qi != queue) || !has_work(qi)) {
        pruned_queues.insert(qi);
        return false;
      }
      return true;
    };
    auto ranks_below = [&](int a, int b) {  // heap order: a ranks below b
      const int c = compare_drs(drs(a), drs(b));
      if (c != 0) return c < 0;
      return candidate_before(front(node_queue_[at(b)]), front(node_queue_[at(a)]), queue, now);
    };
    std::vector<std::vector<int>>& heaps = fs_heaps_;  // per cohort node: child queue nodes
    std::vector<char>& heap_built = fs_heap_built_;
    heaps.resize(tree_.size());
    heap_built.assign(tree_.size(), 0);
    int last_choice = -1;  // the queue node chosen last, still at the top of its cohort's heap
    auto reset_heaps = [&] {
      std::fill(heap_built.begin(), heap_built.end(), 0);
      last_choice = -1;
    };
    auto replace_last_choice = [&] {
      if (last_choice < 0) return;
      const int cohort = tree_.node(last_choice).parent;
      auto& heap = heaps[at(cohort)];
      if (heap_built[at(cohort)] != 0) {
        if (!heap.empty() && heap.front() == last_choice) {
          std::pop_heap(heap.begin(), heap.end(), ranks_below);
          heap.pop_back();
          if (eligible(last_choice)) {
            heap.push_back(last_choice);
            std::push_heap(heap.begin(), heap.end(), ranks_below);
          }
        } else {
          heap_built[at(cohort)] = 0;  // not where it was left: rebuild rather than trust it
        }
      }
      last_choice = -1;
    };
    std::function<int(int)> next_target = [&](int cohort) -> int {
      auto& heap = heaps[at(cohort)];
      if (heap_built[at(cohort)] == 0) {
        heap.clear();
        // Only a queue with candidates can be eligible, and lists do not grow within a
        // strategy run: the queues of this cohort among those with candidates, not every
        // child. The heap's top is the maximum of a strict order, whatever the build order.
        for (int qi : used_queues) {
          const int child = queues_[at(qi)].node;
          if (tree_.node(child).parent == cohort && eligible(child)) heap.push_back(child);
        }
        std::make_heap(heap.begin(), heap.end(), ranks_below);
        heap_built[at(cohort)] = 1;
      }
      const int best_node = heap.empty() ? -1 : heap.front();
      const int best_q = best_node < 0 ? -1 : node_queue_[at(best_node)];
      const Drs& best_q_drs = best_node < 0 ? kNegativeDrs : drs(best_node);
      int best_c = -1;
      Drs best_c_drs = Drs::negative();
      for (int child : tree_.node(cohort).child_cohorts) {
        if (pruned_cohorts.contains(child)) continue;
        const Drs& d = drs(child);
        if (!d.borrowing && !on_path(child)) {
          pruned_cohorts.insert(child);
        } else if (compare_drs(d, best_c_drs) >= 0) {
          best_c_drs = d;
          best_c = child;
        }
      }
      if (best_c < 0 && best_q < 0) {
        pruned_cohorts.insert(cohort);
        return -1;
      }
      if (best_c >= 0 && compare_drs(best_c_drs, best_q_drs) >= 0) return next_target(best_c);
      last_choice = best_node;
      return best_q;
    };
    // Yields the next target queue, or -1 when exhausted.
    const int root = tree_.has_parent(pn) ? tree_.root(pn) : -1;
    auto next_queue = [&]() -> int {
      if (root < 0) return (!pruned_queues.contains(queue) && has_work(queue)) ? queue : -1;
      replace_last_choice();
      while (!pruned_cohorts.contains(root)) {
        const int t = next_target(root);
        if (t >= 0) return t;
      }
      return -1;
    };
    auto lca_of = [&](int target_queue) {
      for (int a = tree_.node(queues_[at(target_queue)].node).parent; a >= 0; a = tree_.node(a).parent) {
        if (on_path(a)) return a;
      }
      return -1;
    };
    auto shares = [&](int target_queue) {
      const int lca = lca_of(target_queue);
      return std::make_pair(drs(almost_lca(pn, lca)), drs(almost_lca(queues_[at(target_queue)].node, lca)));
    };
    auto strategy_passes = [&](FairSharingStrategy s, const Drs& preemptor_new, const Drs& target_old,
                               const Drs& target_new) {
      return s == FairSharingStrategy::LessThanOrEqualToFinalShare ? compare_drs(preemptor_new, target_new) <= 0
                                                                   : compare_drs(preemptor_new, target_old) < 0;
    };
    const auto& strategies = options_.fair_sharing_strategies;
    const bool within_nominal_now = std::none_of(frs.begin(), frs.end(), [&](int fr) { return tree_.borrowing_with(pn, fr, 0); });

    std::vector<Target> targets;
    std::vector<WorkloadId> retry;
    bool fits_now = false;
    make_lists(candidates);
    // runFirstFsStrategy
    for (int t = next_queue(); t >= 0 && !fits_now; t = next_queue()) {
      if (t == queue) {
        const WorkloadId w = pop(t);
        remove_workload(w);
        targets.push_back(Target{w, "InClusterQueue"});
        if (fits_fs()) fits_now = true;
        continue;
      }
      if (within_nominal_now) {
        const WorkloadId w = pop(t);
        remove_workload(w);
        targets.push_back(Target{w, "InCohortReclamation"});
        if (fits_fs()) fits_now = true;
        continue;
      }
      const auto [preemptor_new, target_old] = shares(t);
      if (preemptor_new.weighted() == std::numeric_limits<double>::infinity() &&
          target_old.weighted() != std::numeric_limits<double>::infinity()) {
        while (has_work(t)) retry.push_back(pop(t));
        continue;
      }
      while (has_work(t)) {
        const WorkloadId w = pop(t);
        remove_workload(w);
        const Drs target_new = shares(t).second;
        add_workload(w);
        if (strategy_passes(strategies.front(), preemptor_new, target_old, target_new)) {
          remove_workload(w);
          targets.push_back(Target{w, "InCohortFairSharing"});
          if (fits_fs()) fits_now = true;
          break;
        }
        retry.push_back(w);
      }
    }
    // runSecondFsStrategy (rule S2-b)
    if (!fits_now && strategies.size() > 1) {
      make_lists(retry);
      pruned_queues.clear();
      pruned_cohorts.clear();
      reset_heaps();
      for (int t = next_queue(); t >= 0 && !fits_now; t = next_queue()) {
        const auto [preemptor_new, target_old] = shares(t);
        const WorkloadId w = pop(t);
        if (compare_drs(preemptor_new, target_old) < 0) {
          remove_workload(w);
          targets.push_back(Target{w, "InCohortFairSharing"});
          if (fits_fs()) fits_now = true;
        }
        pruned_queues.insert(t);
      }
    }
    remove_usage(queue, usage);
    if (!fits_now) {
      for (const auto& t : targets) add_workload(t.workload);
      return {};
    }
    fill_back<false>(targets, queue, usage, true);
    for (const auto& t : targets) add_workload(t.workload);
    return targets;
  }

  // ---- the cycle ---------------------------------------------------------------------------

  // Scheduler.getInitialAssignments: the full assignment when it fits or finds targets to
  // preempt, else (PartialAdmission) the most pods that do, else the full one without targets.
  void nominate(Entry& e) {
    assign(e.w, e.a);
    e.targets.clear();
    if (e.a.mode() == Mode::Preempt) e.targets = targets_of(e.w, e.queue, e.a);
    if (e.a.mode() != Mode::Fit && e.targets.empty() && options_.partial_admission && wl(e.w).partial) reduce(e);
    e.a.message(e.message);
  }

  // The preemption targets for an assignment in Preempt mode (GetTargets): over the
  // flavor-resources it would preempt in. The result lives in the targets cache.
  const std::vector<Target>& targets_of(WorkloadId id, int queue, const Assignment& a) {
    std::vector<int>& frs = scratch_nominate_frs_;
    frs.clear();
    for (const auto& ps : a.pod_sets) {
      for (const auto& f : ps.flavors) {
        if (f.mode == Mode::Preempt) frs.push_back(f.fr);
      }
    }
    std::sort(frs.begin(), frs.end());
    frs.erase(std::unique(frs.begin(), frs.end()), frs.end());
    return get_targets(id, queue, frs, a.usage);
  }

  // PodSetReducer.Search with getInitialAssignments' test: sort.Search over the indices
  // [0, totalDelta] for the first whose counts fit, or preempt with targets; index i gives
  // each pod set full - delta * i / totalDelta pods (full: the spec's count, delta: full -
  // minCount). The probes are upstream's, in its order, and a test that is not monotone
  // is taken as it answers. Found: the entry takes that assignment and its targets.
  void reduce(Entry& e) {
    const Wl& w = wl(e.w);
    const std::size_t n = w.spec.pod_sets.size();
    std::vector<std::int32_t>& full = scratch_full_counts_;
    std::vector<std::int32_t>& delta = scratch_count_deltas_;
    std::vector<std::int32_t>& counts = scratch_counts_;
    full.resize(n);
    delta.resize(n);
    counts.resize(n);
    std::int64_t total = 0;
    for (std::size_t p = 0; p < n; ++p) {
      const PodSetSpec& ps = w.spec.pod_sets[p];
      full[p] = ps.spec_count >= 0 ? ps.spec_count : ps.count;
      delta[p] = full[p] - ps.min_count.value_or(full[p]);
      total += delta[p];
    }
    if (total <= 0) return;
    Assignment& trial = scratch_trial_assignment_;
    Assignment& found = scratch_found_assignment_;
    std::vector<Target>& found_targets = scratch_found_targets_;
    std::int64_t last_good = 0;
    bool any = false;
    std::int64_t lo = 0, hi = total + 1;
    while (lo < hi) {
      const std::int64_t h = lo + (hi - lo) / 2;
      for (std::size_t p = 0; p < n; ++p) counts[p] = full[p] - static_cast<std::int32_t>(delta[p] * h / total);
      assign(e.w, trial, &counts);
      bool fits = trial.mode() == Mode::Fit;
      if (!fits && trial.mode() == Mode::Preempt) {
        const auto& targets = targets_of(e.w, e.queue, trial);
        fits = !targets.empty();
        if (fits) found_targets.assign(targets.begin(), targets.end());
      } else if (fits) {
        found_targets.clear();
      }
      if (fits) {
        last_good = h;
        any = true;
        std::swap(found, trial);
        hi = h;
      } else {
        lo = h + 1;
      }
    }
    if (!any || lo != last_good) return;
    std::swap(e.a, found);
    e.targets.assign(found_targets.begin(), found_targets.end());
  }

  // The victims chosen so far in a cycle. What fits in a queue depends only on usage under
  // its root cohort, so the victims' usage is also summed per queue under each root:
  // simulating their removal for an entry touches its own tree once per queue that lost a
  // victim, not once per victim of the cycle. (The tree is a function of the queues'
  // usage, see QuotaTree::add_usage_quietly, so removing a sum is removing its parts.)
  //
  // Kept out (classical cycles): the victims' usage is taken out of the tree as they are
  // chosen and put back at the end of the processing, instead of for every entry. What
  // processing reads then wants them out (fits(), a recomputed assignment), except the
  // reservation for a preemptor without targets, which adds the victims of its own queue
  // back (usage_in). Fair sharing compares shares that include them, so it keeps them in.
  class Victims {
   public:
    Victims(Core& core, bool kept_out) : core_(core), kept_out_(kept_out) {}
    Victims(const Victims&) = delete;
    Victims& operator=(const Victims&) = delete;
    ~Victims() { put_back(); }
    [[nodiscard]] bool kept_out() const { return kept_out_; }
    [[nodiscard]] bool contains(WorkloadId w) const { return core_.victim_this_cycle(w); }
    void insert(WorkloadId w) {
      if (core_.victim_this_cycle(w)) return;
      const Wl& x = core_.wl(w);
      auto& bits = core_.victim_bits_;
      if (w / 64 >= bits.size()) bits.resize(w / 64 + 1, 0);
      bits[w / 64] |= std::uint64_t{1} << (w % 64);
      core_.victim_ids_.push_back(w);
      if (kept_out_) core_.remove_workload(w);
      const int root = core_.tree_.root(core_.queues_[at(x.queue)].node);
      if (by_root_.empty()) {
        by_root_.resize(core_.tree_.size());
        slot_.assign(core_.queues_.size(), -1);
      }
      auto& queues = by_root_[at(root)];
      int& slot = slot_[at(x.queue)];
      if (slot < 0) {
        slot = static_cast<int>(queues.size());
        queues.emplace_back(x.queue, Usage{});
      }
      for (const auto& [fr, v] : x.usage) add_to(queues[at(slot)].second, fr, v);
    }
    // The victims' usage under the root cohort of a queue, per queue.
    [[nodiscard]] const std::vector<std::pair<int, Usage>>& under(int queue) const {
      static const std::vector<std::pair<int, Usage>> kNone;
      if (by_root_.empty()) return kNone;
      return by_root_[at(core_.tree_.root(core_.queues_[at(queue)].node))];
    }
    // What a check that wants the victims gone must still take out of the tree: nothing
    // when they are kept out already.
    [[nodiscard]] const std::vector<std::pair<int, Usage>>& in_tree_under(int queue) const {
      static const std::vector<std::pair<int, Usage>> kNone;
      return kept_out_ ? kNone : under(queue);
    }
    // The victims' usage of fr in one queue.
    [[nodiscard]] Amount usage_in(int queue, int fr) const {
      if (slot_.empty() || slot_[at(queue)] < 0) return 0;
      return usage_of(under(queue)[at(slot_[at(queue)])].second, fr);
    }
    // The end of processing: the tree holds the victims again (they keep their quota until
    // released).
    void put_back() {
      if (!kept_out_) return;
      kept_out_ = false;
      for (const auto& queues : by_root_) {
        for (const auto& [queue, usage] : queues) core_.add_usage(queue, usage);
      }
    }

   private:
    Core& core_;
    bool kept_out_;
    std::vector<std::vector<std::pair<int, Usage>>> by_root_;  // by root node, sized on the first victim
    std::vector<int> slot_;                                     // by queue: its index in by_root_
  };

  // fits() in scheduler.go: with the victims of this cycle and the entry's own removed.
  // Quietly: everything is put back, and fits() reads usage only.
  bool fits_after(const Entry& e, const Victims& victims, const std::vector<Target>& targets) {
    const auto& under = victims.in_tree_under(e.queue);
    for (const auto& [queue, usage] : under) change_usage<false, true>(queue, usage);
    for (const auto& t : targets) {
      if (!victims.contains(t.workload)) change_workload<false, true>(t.workload);
    }
    const bool ok = fits(e.queue, e.a.usage);
    for (const auto& t : targets) {
      if (!victims.contains(t.workload)) change_workload<true, true>(t.workload);
    }
    for (const auto& [queue, usage] : under) change_usage<true, true>(queue, usage);
    return ok;
  }

  // quotaResourcesToReserve
  Usage reserve_for(const Entry& e, const Victims& victims) const {
    const int n = queues_[at(e.queue)].node;
    Usage out;
    for (const auto& [fr, v] : e.a.usage) {
      QuotaCell x = tree_.cell(n, fr);
      if (victims.kept_out()) x.usage = usage_add(x.usage, victims.usage_in(e.queue, fr));
      Amount r;
      if (e.a.borrowing > 0) {
        // Upstream can compute a negative amount here when usage is above nominal +
        // borrowingLimit (the limit was lowered under running work). Its snapshot is rebuilt
        // every cycle and a negative addUsage never reaches the parent, so nobody else sees
        // it; the twin's tree persists across cycles, where add and remove of a negative
        // amount would not cancel out. Zero has the same effect on every other queue.
        r = x.borrowing_limit == kNoLimit
                ? v
                : std::max<Amount>(0, std::min(v, quota_sub(quota_add(x.nominal, x.borrowing_limit), x.usage)));
      } else {
        r = std::max<Amount>(0, std::min(v, quota_sub(x.nominal, x.usage)));
      }
      out.emplace_back(fr, r);
    }
    return out;
  }

  void process(Entry& e, Victims& preempted, std::vector<std::pair<int, Usage>>& reserved, CycleResult& out,
               VirtualTime now);
  void admit(Entry& e, VirtualTime now, CycleResult& out);
  [[nodiscard]] std::vector<std::size_t> order_classical(std::span<const Entry> entries) const;
  std::vector<std::size_t> order_fair(std::span<Entry> entries, Victims& preempted,
                                      std::vector<std::pair<int, Usage>>& reserved, CycleResult& out, VirtualTime now);

  CoreOptions options_;
  std::set<std::string, std::less<>> reasons_;  // intern(); node-based, so pointers stay valid
  const std::string* r_pending_ = intern("Pending");
  const std::string* r_inadmissible_ = intern("Inadmissible");
  const std::string* r_misconfigured_ = intern("Misconfigured");
  const std::string* r_quota_reserved_ = intern("QuotaReserved");
  const std::string* r_admitted_ = intern("Admitted");
  const std::string* r_no_reservation_ = intern("NoReservation");
  const std::string* r_preempted_ = intern("Preempted");
  const std::string* r_succeeded_ = intern("Succeeded");
  const std::string* r_waiting_for_quota_ = intern("WaitingForQuota");
  const std::string* r_waiting_for_preempted_ = intern("WaitingForPreemptedWorkloads");
  const std::string* r_exceeds_max_quota_ = intern("ExceedsMaxQuota");
  const std::string* r_no_matching_flavor_ = intern("NoMatchingFlavor");
  const std::string* r_suspended_ = intern("Suspended");
  // A preemption target's reason (variant_reason, InCohortFairSharing), without a lookup.
  const std::array<const std::string*, 4> r_preemption_ = {intern("InClusterQueue"), intern("InCohortReclamation"),
                                                           intern("InCohortReclaimWhileBorrowing"),
                                                           intern("InCohortFairSharing")};
  const std::string* preemption_reason(std::string_view reason) {
    for (const std::string* r : r_preemption_) {
      if (*r == reason) return r;
    }
    return intern(reason);
  }
  std::vector<ResourceFlavorSpec> flavors_;
  std::unordered_map<std::string, int> flavor_index_;
  mutable std::map<std::pair<int, std::string>, int> fr_index_;
  mutable std::vector<int> fr_flavor_;
  mutable std::vector<std::string> fr_resource_;
  mutable std::vector<int> fr_resource_index_;  // per flavor-resource: index in resource_names_
  mutable std::vector<Amount> drs_borrowed_, drs_lendable_;       // compute_drs scratch
  mutable std::vector<std::pair<std::uint64_t, Drs>> drs_cache_;  // per node: usage version, DRS
  mutable std::vector<std::string> resource_names_;  // distinct resources, first-seen order
  mutable std::unordered_map<std::string, int> rid_index_;  // resource_id
  mutable std::vector<std::string> rid_names_;              // by resource id
  mutable std::vector<std::vector<int>> fr_by_rid_;
  QuotaTree tree_;
  std::vector<int> heights_;
  std::vector<Queue> queues_;
  std::vector<int> node_queue_;  // node index -> queue index, -1 for cohorts
  std::unordered_map<std::string, int> queue_index_;
  std::unordered_map<std::string, int> cohort_index_;
  std::unordered_map<int, std::vector<int>> cohort_covered_;  // declared cohort node -> the frs its resource groups cover
  std::vector<std::unique_ptr<Wl>> workloads_;  // stable addresses, no copies on growth
  UidOrder uid_order_;
  static constexpr std::size_t kSparePendingNodes = 4096;
  std::vector<std::set<OrderKey>::node_type> spare_pending_nodes_;
  std::uint64_t cycle_ = 0;
  std::size_t decisions_used_ = 0;  // decisions written into the cycle's result so far
  VirtualTime now_ = 0;
  // get_targets memo, valid while the state keeps its id (epoch_; see changed()).
  std::uint64_t epoch_ = 0, last_epoch_ = 0;
  bool targets_cache_valid_ = false;
  std::uint64_t targets_cache_epoch_ = 0;
  WorkloadId targets_cache_id_ = 0;
  std::vector<int> targets_cache_frs_;
  Usage targets_cache_usage_;
  std::vector<Target> targets_cache_;
  // Scratch buffers of classical_preemptions (not reentrant).
  std::vector<Ranked> scratch_ranked_;
  std::vector<Source> scratch_sources_;
  std::vector<Source> scratch_work_;
  std::vector<Target> scratch_targets_;
  std::vector<std::pair<int, Amount>> scratch_removed_;  // FlatSearch
  std::vector<Amount> scratch_applied_sum_;              // FlatSearch
  std::vector<std::uint64_t> flat_stamp_;                // FlatSearch: per node, the search that copied its usage
  std::vector<Amount> flat_usage_;
  std::uint64_t flat_stamp_counter_ = 0;
  std::vector<std::uint32_t> scratch_heap_;
  std::vector<Level> scratch_levels_;
  const Assignment* pinned_ = nullptr;  // see pinned()
  // Shared candidate orders, per cohort node (see SharedWalk), and the queues a SharedWalk
  // left out of its attempt: dropped_[queue] == drop_stamp_.
  std::vector<CandidateOrder> candidate_orders_;
  std::vector<std::uint64_t> excluded_;  // per queue: == exclude_stamp_ while a search leaves it out
  std::uint64_t exclude_stamp_ = 0;
  std::vector<std::uint64_t> admissions_;  // per cohort node: workloads admitted under it (hold)
  std::vector<std::uint64_t> victim_bits_;  // the current (or last) cycle's victims, by id; see victim_this_cycle
  std::vector<WorkloadId> victim_ids_;
  std::vector<std::uint64_t> dropped_;
  std::uint64_t drop_stamp_ = 0;
  std::vector<RemovalRun> removal_runs_;  // of the current state (removal_run)
  std::vector<std::pair<std::uint64_t, std::size_t>> run_slot_;  // per queue: (run_stamp_, index in RemovalRun::queues)
  std::uint64_t run_stamp_ = 0;
  // Scratch buffers of assign and find_flavor (not reentrant), and the cycle's entries:
  // kept across cycles so that their containers keep their capacity.
  std::vector<int> scratch_groups_;
  std::vector<std::string> spare_strings_;
  // A preemption's messages are built here, one victim at a time, and its victims listed.
  std::string message_buffer_;
  std::vector<WorkloadId> victims_buffer_;
  std::vector<int> scratch_frs_, scratch_nominate_frs_;
  std::vector<PodSetTotals> scratch_scaled_totals_;                          // assign() with counts
  std::vector<std::int32_t> scratch_full_counts_, scratch_count_deltas_, scratch_counts_;  // reduce()
  Assignment scratch_trial_assignment_, scratch_found_assignment_;
  std::vector<Target> scratch_found_targets_;
  Usage scratch_usage_, scratch_remaining_, scratch_rest_;
  std::vector<ResourceAssign> scratch_best_, scratch_assignments_;
  std::vector<Entry> entry_pool_;
  // Scratch buffers of fair_preemptions (not reentrant).
  std::vector<std::vector<WorkloadId>> fs_lists_;
  std::vector<std::vector<int>> fs_heaps_;
  std::vector<char> fs_heap_built_;
  std::vector<std::size_t> fs_taken_;
  std::vector<char> fs_pruned_queues_, fs_pruned_cohorts_;
};

void Core::admit(Entry& e, VirtualTime now, CycleResult& out) {
  Wl& w = wl(e.w);
  Queue& q = queues_[at(e.queue)];
  w.admitted.clear();
  for (std::size_t p = 0; p < e.a.pod_sets.size(); ++p) {
    for (const auto& f : e.a.pod_sets[p].flavors) w.admitted.push_back(AdmittedFlavor{static_cast<std::uint32_t>(p), f.fr});
  }
  w.has_admission = true;
  w.restored.reset();
  w.admitted_counts.clear();
  if (w.partial) {
    bool reduced = false;
    for (std::size_t p = 0; p < e.a.pod_sets.size(); ++p) reduced |= e.a.pod_sets[p].count != w.spec.pod_sets[p].count;
    if (reduced) {
      for (const auto& ps : e.a.pod_sets) w.admitted_counts.push_back(ps.count);
    }
  }
  w.usage.assign(e.a.usage.begin(), e.a.usage.end());  // the pooled entry keeps its buffer
  w.phase = WorkloadPhase::Admitted;
  w.admitted_at = now;
  w.reserved_at = now;
  set_condition(w, CondType::QuotaReserved, true, r_quota_reserved_, MessageKind::QuotaReservedIn, {}, now);
  reset_eviction_conditions(w, r_quota_reserved_, now);
  set_condition(w, CondType::Admitted, true, r_admitted_, MessageKind::WorkloadAdmitted, {}, now);
  if (q.sticky && *q.sticky == e.w) q.sticky.reset();
  pending_erase(q, w, e.pending_at);
  hold(e.w);
  e.status = Entry::Status::Assumed;
  next_decision(out, Decision::Kind::Admitted, e.w, q.spec.name, *r_quota_reserved_, q.reserved_message);
}

void Core::process(Entry& e, Victims& preempted, std::vector<std::pair<int, Usage>>& reserved, CycleResult& out,
                   VirtualTime now) {
  auto any_preempted = [&](const std::vector<Target>& targets) {
    return std::any_of(targets.begin(), targets.end(), [&](const Target& t) { return preempted.contains(t.workload); });
  };
  // updateAssignmentIfNeeded (RecomputeAssignmentUponPreemptionTargetsOverlap, on by
  // default since 0.20): overlapping targets -> recompute with the other victims gone, as
  // usage and as candidates (victim_this_cycle).
  bool ok = fits_after(e, preempted, e.targets);
  if (any_preempted(e.targets)) {
    // The others cannot change this queue's assignment.
    const auto& under = preempted.in_tree_under(e.queue);
    {
      const UndoneChanges undone(*this);
      for (const auto& [queue, usage] : under) remove_usage(queue, usage);
      const Assignment nominated = e.a;
      pinned_ = &nominated;
      nominate(e);
      pinned_ = nullptr;
      for (const auto& [queue, usage] : under) add_usage(queue, usage);
    }
    if (e.a.mode() == Mode::Fit) e.a.forced = Mode::DeferredFit;
    ok = fits_after(e, preempted, e.targets);
  }
  const Mode mode = e.a.mode();
  if (mode == Mode::NoFit) {
    e.requeue = Requeue::NoFit;
    e.granular_reason = no_fit_reason(e.a.no_fit_reason());
    return;
  }
  if (mode == Mode::Preempt && e.targets.empty()) {
    e.requeue = Requeue::NoCandidates;
    e.granular_reason = r_waiting_for_quota_;
    // reserveCapacityForUnreclaimablePreempt: unless the queue can always reclaim.
    if (queues_[at(e.queue)].spec.preemption.reclaim_within_cohort != PreemptionPolicy::Any) {
      Usage r = reserve_for(e, preempted);
      add_usage(e.queue, r);
      reserved.emplace_back(e.queue, std::move(r));
    }
    return;
  }
  if (mode == Mode::DeferredFit) {
    e.message = "Workload has overlapping preemption targets with another workload, but will fit after these preemptions complete";
    e.granular_reason = r_waiting_for_preempted_;
    e.requeue = Requeue::PendingPreemption;
    add_usage(e.queue, e.a.usage);
    reserved.emplace_back(e.queue, e.a.usage);
    return;
  }
  if (any_preempted(e.targets)) {
    e.status = Entry::Status::Skipped;
    e.message = "Workload has overlapping preemption targets with another workload";
    e.granular_reason = r_waiting_for_quota_;
    return;
  }
  if (!ok) {
    e.status = Entry::Status::Skipped;
    e.message = "Workload no longer fits after processing another workload";
    e.granular_reason = r_waiting_for_quota_;
    return;
  }
  for (const auto& t : e.targets) preempted.insert(t.workload);
  if (mode == Mode::Preempt) {
    add_usage(e.queue, e.a.usage);
    reserved.emplace_back(e.queue, e.a.usage);
    // Preemptor.IssuePreemptions
    const Wl& preemptor = wl(e.w);
    std::string& message = message_buffer_;
    message.assign("Preempted to accommodate a workload (UID: ")
        .append(preemptor.spec.uid.empty() ? "UNKNOWN" : preemptor.spec.uid)
        .append(", JobUID: ")
        .append(preemptor.spec.job_uid.empty() ? "UNKNOWN" : preemptor.spec.job_uid)
        .append(") due to ");
    const std::size_t preemptor_part = message.size();  // the same for every victim
    std::vector<WorkloadId>& victims = victims_buffer_;
    victims.clear();
    // The victims' records arrived during the search; their conditions, written below, not.
    for (std::size_t i = 0; i < std::min<std::size_t>(2, e.targets.size()); ++i) {
      prefetch(wl(e.targets[i].workload).conditions.data());
    }
    for (std::size_t i = 0; i < e.targets.size(); ++i) {
      if (i + 2 < e.targets.size()) prefetch(wl(e.targets[i + 2].workload).conditions.data());
      const Target& t = e.targets[i];
      Wl& v = wl(t.workload);
      victims.push_back(t.workload);
      if (v.phase == WorkloadPhase::Evicted) continue;  // preemption ongoing
      message.resize(preemptor_part);
      message.append(human_reason(t.reason))
          .append("; preemptor path: ")
          .append(queues_[at(e.queue)].path)
          .append("; preemptee path: ")
          .append(queues_[at(v.queue)].path);
      set_eviction_conditions(v, preemption_reason(t.reason), message, now);
      mark_evicted(t.workload);
      changed();  // candidate order puts evicted workloads first
      out.evicted.push_back(t.workload);
      next_decision(out, Decision::Kind::Preempted, t.workload, queues_[at(v.queue)].spec.name, t.reason, message)
          .related.push_back(e.w);
    }
    e.message.append(". Pending the preemption of ").append(std::to_string(e.targets.size())).append(" workload(s)");
    e.granular_reason = r_waiting_for_preempted_;
    e.requeue = Requeue::PendingPreemption;
    e.status = Entry::Status::Nominated;
    next_decision(out, Decision::Kind::PreemptionIssued, e.w, queues_[at(e.queue)].spec.name, *r_pending_, e.message)
        .related.assign(victims.begin(), victims.end());
    return;
  }
  admit(e, now, out);
}

// classicalIterator's order; sorts positions, not the (large) entries.
std::vector<std::size_t> Core::order_classical(std::span<const Entry> entries) const {
  // The keys are copied out first, as unsigned words compared in turn: the sort then
  // touches no workload. `order` holds borrowing (>= 0) above the priority, inverted so
  // that a higher priority sorts first; `creation` has its sign bit flipped so that the
  // unsigned order is the signed one.
  struct Key {
    std::uint64_t order;
    std::uint64_t creation;
    std::uint64_t uid;
    WorkloadId w;
    std::uint32_t index;
  };
  std::vector<Key> keys;
  keys.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i + 4 < entries.size()) prefetch(wl(entries[i + 4].w).uid_label);
    const Wl& x = wl(entries[i].w);
    const auto borrowing = static_cast<std::uint64_t>(static_cast<std::uint32_t>(entries[i].a.borrowing));
    const std::uint32_t priority = static_cast<std::uint32_t>(x.spec.priority) ^ 0x80000000U;
    keys.push_back(Key{(borrowing << 32) | static_cast<std::uint32_t>(~priority),
                       static_cast<std::uint64_t>(x.spec.creation) ^ (std::uint64_t{1} << 63), *x.uid_label, entries[i].w,
                       static_cast<std::uint32_t>(i)});
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.order != b.order) return a.order < b.order;
    if (a.creation != b.creation) return a.creation < b.creation;
    if (a.uid != b.uid) return a.uid < b.uid;
    return a.w < b.w;
  });
  std::vector<std::size_t> order;
  order.reserve(keys.size());
  for (const Key& k : keys) order.push_back(k.index);
  return order;
}

// fairSharingIterator: repeatedly run a tournament in the root cohort of the first
// remaining entry (upstream picks an arbitrary one; the twin picks the lowest queue index).
std::vector<std::size_t> Core::order_fair(std::span<Entry> entries, Victims& preempted,
                                          std::vector<std::pair<int, Usage>>& reserved, CycleResult& out,
                                          VirtualTime now) {
  std::vector<std::size_t> order;
  std::map<int, std::size_t> by_queue;  // queue -> entry
  for (std::size_t i = 0; i < entries.size(); ++i) by_queue.emplace(entries[i].queue, i);
  // computeDRS: per entry, its share at each ancestor cohort with its usage added. Upstream
  // recomputes every remaining entry's after each pick; the values depend only on the usage
  // of the nodes on the entry's path below the root, so they are kept while those nodes'
  // usage versions are unchanged (the pick's admission or preemptions change few of them).
  struct Shares {
    std::vector<std::pair<int, std::uint64_t>> path_versions;  // the queue up to the root's child
    // Per ancestor cohort: the DRS of the node below it on the path, and whether that node
    // borrows a flavor-resource the entry asks for (upstream checks the DRS's borrowed
    // resources against the workload's usage; the answer is fixed with the DRS).
    struct AtCohort {
      int cohort;
      Drs drs;
      bool borrows_what_entry_uses;
    };
    std::vector<AtCohort> at_cohort;
    [[nodiscard]] bool current(const QuotaTree& tree) const {
      return !path_versions.empty() && std::all_of(path_versions.begin(), path_versions.end(), [&](const auto& nv) {
               return tree.version(nv.first) == nv.second;
             });
    }
  };
  std::vector<Shares> shares(entries.size());
  std::vector<std::vector<std::size_t>> by_root(tree_.size());  // root cohort -> its entries
  for (std::size_t i = 0; i < entries.size(); ++i) by_root[at(tree_.root(queues_[at(entries[i].queue)].node))].push_back(i);
  std::vector<char> ordered(entries.size(), 0);
  while (!by_queue.empty()) {
    const int first = by_queue.begin()->first;
    const int n = queues_[at(first)].node;
    std::size_t chosen;
    if (!tree_.has_parent(n)) {
      chosen = by_queue.begin()->second;
    } else {
      const int root = tree_.root(n);
      for (const std::size_t idx : by_root[at(root)]) {
        if (ordered[idx] != 0) continue;
        const int qi = entries[idx].queue;
        const int qn = queues_[at(qi)].node;
        Shares& s = shares[idx];
        if (s.current(tree_)) continue;
        s.at_cohort.clear();
        s.path_versions.clear();
        const Usage& usage = entries[idx].a.usage;
        add_usage(qi, usage);
        auto borrows_what_entry_uses = [&](int x) {
          return std::any_of(usage.begin(), usage.end(), [&](const auto& fv) {
            return fv.second > 0 && quota_sub(tree_.usage(x, fv.first), tree_.subtree_quota(x, fv.first)) > 0;
          });
        };
        int below = qn;
        Drs d = drs(qn);
        for (int a = tree_.node(qn).parent; a >= 0; a = tree_.node(a).parent) {
          s.at_cohort.push_back(Shares::AtCohort{a, d, borrows_what_entry_uses(below)});
          if (tree_.has_parent(a)) {
            below = a;
            d = drs(a);
          }
        }
        remove_usage(qi, entries[idx].a.usage);
        for (int x = qn; tree_.has_parent(x); x = tree_.node(x).parent) s.path_versions.emplace_back(x, tree_.version(x));
      }
      auto value = [&](std::size_t entry, int cohort) -> const Shares::AtCohort& {
        for (const auto& v : shares[entry].at_cohort) {
          if (v.cohort == cohort) return v;
        }
        throw std::logic_error("admission core: no fair-sharing value of an entry at its cohort");
      };
      auto less = [&](std::size_t a, std::size_t b, int cohort) {
        const auto& va = value(a, cohort);
        const auto& vb = value(b, cohort);
        if (va.borrows_what_entry_uses != vb.borrows_what_entry_uses) return !va.borrows_what_entry_uses;
        if (const int c = compare_drs(va.drs, vb.drs); c != 0) return c < 0;
        const auto& x = wl(entries[a].w).spec;
        const auto& y = wl(entries[b].w).spec;
        if (x.priority != y.priority) return x.priority > y.priority;
        if (x.creation != y.creation) return x.creation < y.creation;
        return *wl(entries[a].w).uid_label < *wl(entries[b].w).uid_label;
      };
      std::function<std::optional<std::size_t>(int)> tournament = [&](int cohort) -> std::optional<std::size_t> {
        std::vector<std::size_t> cands;
        for (int c : tree_.node(cohort).child_cohorts) {
          if (auto w = tournament(c)) cands.push_back(*w);
        }
        for (int c : tree_.node(cohort).child_queues) {
          auto it = by_queue.find(node_queue_[at(c)]);
          if (it != by_queue.end()) cands.push_back(it->second);
        }
        if (cands.empty()) return std::nullopt;
        std::size_t best = cands.front();
        for (std::size_t i = 1; i < cands.size(); ++i) {
          if (less(cands[i], best, cohort)) best = cands[i];
        }
        return best;
      };
      chosen = *tournament(root);
    }
    by_queue.erase(entries[chosen].queue);
    ordered[chosen] = 1;
    order.push_back(chosen);
    process(entries[chosen], preempted, reserved, out, now);
  }
  return order;
}

void Core::do_run_cycle(VirtualTime now, CycleResult& out) {
  now_ = now;
  changed();
  out.cycle = ++cycle_;
  for (const WorkloadId v : victim_ids_) victim_bits_[v / 64] = 0;  // the last cycle's victims
  victim_ids_.clear();
  out.time = now;
  out.evicted.clear();
  decisions_used_ = 0;
  // 1. One head per ClusterQueue.
  // Active heads take entries from the pool; every field is reset here or by nominate().
  std::size_t live = 0;
  std::vector<Entry> inactive;
  for (std::size_t qi = 0; qi < queues_.size(); ++qi) {
    Queue& q = queues_[qi];
    // The first pending node two queues ahead, its workload one queue ahead (the node has
    // arrived by then): find_head_at reads both.
    if (qi + 3 < queues_.size() && !queues_[qi + 3].pending.empty()) prefetch(&*queues_[qi + 3].pending.begin());
    if (qi + 2 < queues_.size() && !queues_[qi + 2].pending.empty()) {
      prefetch(&workloads_[queues_[qi + 2].pending.begin()->id]);
    }
    if (qi + 1 < queues_.size() && !queues_[qi + 1].pending.empty()) {
      prefetch(&wl(queues_[qi + 1].pending.begin()->id).inadmissible_generation);
    }
    // Kueue pops the head and pushes it back at the end of the cycle unless admitted. The
    // twin leaves it in place: requeueing with the same key would put it back where it
    // was, and push_active/push_inadmissible move it if its key changed (stickiness).
    const auto head = find_head_at(q);
    if (head == q.pending.end()) continue;
    const WorkloadId id = head->id;
    if (!q.spec.active) {
      Entry& e = inactive.emplace_back();
      e.w = id;
      e.queue = static_cast<int>(qi);
      e.message = "ClusterQueue " + q.spec.name + " is inactive";
      e.granular_reason = r_suspended_;
      continue;
    }
    if (const Wl& h = wl(id); h.refusal != nullptr) {
      // Refused before nomination (ValidateAdmissibility): requeued like the inactive
      // queue's heads, so StrictFIFO keeps it at the front and BestEffortFIFO sets it aside.
      Entry& e = inactive.emplace_back();
      e.w = id;
      e.queue = static_cast<int>(qi);
      e.message = h.spec.refusal_message;
      e.granular_reason = h.refusal;
      continue;
    }
    if (live == entry_pool_.size()) entry_pool_.emplace_back();
    Entry& e = entry_pool_[live++];
    e.w = id;
    e.queue = static_cast<int>(qi);
    e.pending_at = head;
    e.targets.clear();
    e.status = Entry::Status::NotNominated;
    e.requeue = Requeue::Generic;
    e.message.clear();
    e.granular_reason = nullptr;
  }
  const std::span<Entry> entries(entry_pool_.data(), live);
  out.heads = entries.size() + inactive.size();
  out.decisions.reserve(out.heads);
  // 2-3. Nominate against the state at the start of the cycle.
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i + 4 < entries.size()) prefetch(&workloads_[entries[i + 4].w]);
    if (i + 2 < entries.size()) prefetch_record(entries[i + 2].w);
    if (i + 1 < entries.size()) prefetch_for_assign(entries[i + 1].w);
    nominate(entries[i]);
  }
  // 4-5. Order and process.
  Victims preempted(*this, !options_.fair_sharing);
  std::vector<std::pair<int, Usage>> reserved;
  if (options_.fair_sharing) {
    order_fair(entries, preempted, reserved, out, now);
  } else {
    const auto order = order_classical(entries);
    for (std::size_t k = 0; k < order.size(); ++k) {
      if (k + 4 < order.size()) prefetch(&workloads_[entries[order[k + 4]].w]);
      if (k + 2 < order.size()) prefetch_record(entries[order[k + 2]].w);
      if (k + 1 < order.size()) prefetch_for_admit(entries[order[k + 1]].w);
      process(entries[order[k]], preempted, reserved, out, now);
    }
  }
  preempted.put_back();
  // Capacity held for preemptors only lives within the cycle's snapshot.
  for (auto it = reserved.rbegin(); it != reserved.rend(); ++it) remove_usage(it->first, it->second);
  // 6. Requeue what was not admitted (ClusterQueue.RequeueIfNotPresent).
  auto requeue = [&](Entry& e) {
    if (e.status == Entry::Status::Assumed) return;
    Queue& q = queues_[at(e.queue)];
    Requeue reason = e.requeue;
    if (e.status != Entry::Status::NotNominated && reason == Requeue::Generic) reason = Requeue::FailedAfterNomination;
    const bool immediate = q.spec.queueing_strategy == QueueingStrategy::StrictFIFO ||
                           reason == Requeue::FailedAfterNomination || reason == Requeue::PendingPreemption;
    if (reason == Requeue::PendingPreemption && q.spec.queueing_strategy == QueueingStrategy::BestEffortFIFO) {
      q.sticky = e.w;
    } else if (q.sticky && *q.sticky == e.w) {
      q.sticky.reset();
    }
    if (immediate || !q.spec.active) {
      if (q.spec.active) {
        push_active(e.w);
      } else {
        push_inadmissible(e.w);
      }
    } else {
      push_inadmissible(e.w);
      // SchedulingEquivalenceHashing: the same shape cannot fit either; its class waits
      // too. Applied lazily: members of the class are moved when they reach the head.
      if (options_.scheduling_equivalence_hashing && q.spec.queueing_strategy == QueueingStrategy::BestEffortFIFO &&
          (reason == Requeue::NoFit || reason == Requeue::NoCandidates)) {
        q.bulk_moved_shapes.insert(wl(e.w).shape);
      }
    }
    const std::string* condition_reason =
        options_.unadmitted_workloads_observability && e.granular_reason != nullptr ? e.granular_reason : r_pending_;
    set_pending(e.w, condition_reason, e.message, now, &out);
  };
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i + 2 < entries.size() && entries[i + 2].status != Entry::Status::Assumed) {
      const Wl& n = wl(entries[i + 2].w);
      prefetch(&n.in_pending);
      prefetch(n.conditions.data());
    }
    if (i + 1 < entries.size() && entries[i + 1].status != Entry::Status::Assumed) {
      // The pending message that set_pending compares with.
      for (const auto& c : wl(entries[i + 1].w).conditions) {
        if (c.type == CondType::QuotaReserved) prefetch(c.text.data());
      }
    }
    requeue(entries[i]);
  }
  for (auto& e : inactive) requeue(e);
  out.decisions.resize(decisions_used_);
}

ClusterQueueStatus Core::cluster_queue_status(const std::string& name) const {
  ClusterQueueStatus s;
  s.name = name;
  auto it = queue_index_.find(name);
  if (it == queue_index_.end()) return s;
  const Queue& q = queues_[at(it->second)];
  const int n = q.node;
  s.pending_workloads = static_cast<std::int64_t>(q.pending.size());
  std::vector<Amount> admitted_usage(tree_.fr_count(), 0);
  for (WorkloadId w : q.holding) {
    ++s.reserving_workloads;
    if (wl(w).phase == WorkloadPhase::Admitted) {
      ++s.admitted_workloads;
    }
    for (const auto& [fr, v] : wl(w).usage) admitted_usage[at(fr)] += v;
  }
  for (const auto& g : q.groups) {
    for (int flavor : g.flavors) {
      for (const auto& resource : g.resources) {
        const int fr = fr_of(flavor, resource, false);
        if (fr < 0) continue;
        const Amount nominal = tree_.nominal(n, fr);
        const Amount used = tree_.usage(n, fr);
        s.flavors_reservation.push_back(
            FlavorResourceAmount{flavors_[at(flavor)].name, resource, used, std::max<Amount>(0, used - nominal)});
        const Amount adm = admitted_usage[at(fr)];
        s.flavors_usage.push_back(
            FlavorResourceAmount{flavors_[at(flavor)].name, resource, adm, std::max<Amount>(0, adm - nominal)});
      }
    }
  }
  if (options_.fair_sharing) {
    const Drs d = drs(n);
    s.weighted_share = d.rounded();
    if (d.dominant >= 0) s.dominant_resource = resource_names_[at(d.dominant)];
  }
  return s;
}

}  // namespace

Expected<std::unique_ptr<AdmissionCore>> AdmissionCore::create(const CoreOptions& options,
                                                               std::vector<ResourceFlavorSpec> flavors,
                                                               std::vector<CohortSpec> cohorts,
                                                               std::vector<ClusterQueueSpec> queues) {
  auto core = std::make_unique<Core>(options, std::move(flavors));
  if (auto error = core->build(std::move(cohorts), std::move(queues))) return Unexpected{*error};
  return std::unique_ptr<AdmissionCore>(std::move(core));
}

}  // namespace gpubank::twin
