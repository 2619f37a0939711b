// The admission core's state and the declarations of its parts. Internal to
// src/twin/admission: everything outside uses core.hpp.
//
// One class, as in the first version, so that the parts keep reading and changing the same
// state without accessors; its member functions are defined in one file per Kueue package
// (docs/twin-admission.md maps them):
//   core.cpp                     construction and the AdmissionCore events
//   cluster_queue.cpp            pending queues            pkg/cache/queue/cluster_queue.go
//   snapshot.cpp                 usage and admitted lists  pkg/cache/scheduler/clusterqueue.go
//   status.cpp                   conditions and statuses   pkg/workload, clusterqueue_controller.go
//   flavor_assigner.cpp          flavor assignment         pkg/scheduler/flavorassigner
//   preemption_common.cpp        candidate ordering        pkg/scheduler/preemption/common
//   preemption_classical.cpp     classical preemption      pkg/scheduler/preemption{,/classical}
//   preemption_fair_sharing.cpp  fair-sharing preemption   pkg/scheduler/preemption/fairsharing
//   scheduler.cpp                the cycle                 pkg/scheduler/scheduler.go
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "twin/admission/core.hpp"
#include "twin/admission/core_types.hpp"
#include "twin/admission/quota_tree.hpp"

namespace gpubank::twin::admission {

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
    // A cache that a read-only head search (has_head) may update as well: mutable.
    mutable std::optional<OrderKey> scan_from;
    mutable std::uint64_t scan_generation = 0;
    std::optional<WorkloadId> sticky;
    std::vector<WorkloadId> holding;  // reserving quota: admitted and evicted-not-released
    // The admitted (not evicted) part of `holding` in CandidatesOrdering's order within one
    // queue (priority, newest reservation, UID): preemption walks it lazily instead of
    // sorting every workload of a cohort for every preemptor.
    std::vector<RankEntry> ranked;
    // The evicted part of `holding` (evicted, not released), in no particular order: the
    // preemption search looks at these first, without a walk over every holder.
    std::vector<WorkloadId> evicted;
    std::set<std::uint32_t> bulk_moved_shapes;  // hashToBulkMoveReason, as shape ids
    // Pending workloads neither set aside in this generation nor of a bulk-moved shape:
    // has_head answers "none" from it without walking a backed-up queue whose workloads a
    // bulk move set aside in one step. Per shape: pending workloads, and how many are set
    // aside (counted in `parked_generation`; another generation has none).
    struct ShapeCount {
      std::int64_t pending = 0, parked = 0;
      std::uint64_t parked_generation = 0;
    };
    mutable std::int64_t active_pending = 0;
    mutable std::unordered_map<std::uint32_t, ShapeCount> shape_counts;
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
    // == queue's generation: inadmissible. Mutable: a head search sets aside the members of a
    // bulk-moved class as it meets them, which only applies what the queue already says.
    mutable std::uint64_t inadmissible_generation = 0;
    const std::string* refusal = nullptr;  // interned spec.refusal_reason; next to the head loop's reads
    OrderKey key;
    std::size_t holding_pos = 0;
    std::size_t evicted_pos = 0;  // in its queue's `evicted` while Evicted
    VirtualTime reserved_at = 0;  // the last reservation, in whole seconds (whole_second)
    VirtualTime queued_at = 0;    // spec.creation in whole seconds: the queue-order timestamp
    const std::uint64_t* uid_label = nullptr;  // UidOrder
    std::uint64_t uid_prefix = 0;              // uid_prefix(spec.uid)
    std::uint32_t shape = 0;  // shape_id(shape_of(spec)): computeSchedulingHash's input, interned
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

  static std::string shape_of(const WorkloadSpec& w);
  // The same shape text, the same id: the queue's scan compares ids, not long texts.
  std::uint32_t shape_id(const WorkloadSpec& w);
  Core(const CoreOptions& options, std::vector<ResourceFlavorSpec> flavors) : options_(options) {
    for (auto& f : flavors) {
      flavor_index_.emplace(f.name, static_cast<int>(flavors_.size()));
      flavors_.push_back(std::move(f));
    }
  }

  // ---- construction (core.cpp) ------------------------------------------------------------------

  std::optional<std::string> build(std::vector<CohortSpec> cohorts, std::vector<ClusterQueueSpec> queues);

  // ---- AdmissionCore (core.cpp; cluster_queue_status: status.cpp) -------------------------------

  WorkloadId submit(WorkloadSpec spec, VirtualTime now) override;
  Expected<WorkloadId> restore_admitted(WorkloadSpec spec, Admission admission, VirtualTime admitted_at) override;
  void finish(WorkloadId id, VirtualTime now) override;
  Expected<bool> forget(WorkloadId id) override;
  void release_evicted(WorkloadId id, VirtualTime now) override;
  Expected<bool> set_quota(const std::string& cluster_queue, const std::string& flavor,
                           const ResourceQuota& quota) override;
  Expected<bool> set_cohort_quota(const std::string& cohort, const std::string& flavor,
                                  const ResourceQuota& quota) override;
  Expected<bool> evict(WorkloadId id, const std::string& reason, const std::string& message, VirtualTime now) override;
  Expected<bool> evict_stopped(WorkloadId id, const std::string& reason, const std::string& message,
                               VirtualTime now) override;
  Expected<bool> set_priority(WorkloadId id, std::int32_t priority) override;
  void do_run_cycle(VirtualTime now, CycleResult& out) override;
  [[nodiscard]] bool has_active_heads() const override;
  [[nodiscard]] std::size_t workload_count() const override { return workloads_.size(); }
  [[nodiscard]] const WorkloadSpec& spec(WorkloadId id) const override { return wl_checked(id).spec; }
  [[nodiscard]] WorkloadStatus status(WorkloadId id) const override { return render_status(wl_checked(id)); }
  [[nodiscard]] WorkloadPhase phase(WorkloadId id) const override { return wl_checked(id).phase; }
  [[nodiscard]] std::vector<std::string> cluster_queue_names() const override;
  [[nodiscard]] std::vector<std::string> cohort_names() const override;
  [[nodiscard]] ClusterQueueStatus cluster_queue_status(const std::string& name) const override;
  [[nodiscard]] std::optional<QuotaFigures> figures(const std::string& node, const std::string& flavor,
                                                    const std::string& resource) const override;
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

  // ---- indices (snapshot.cpp) -------------------------------------------------------------------

  int fr_of(int flavor, const std::string& resource, bool create) const;
  [[nodiscard]] int height(int n) const;

  // ---- pending queues (cluster_queue.cpp: pkg/cache/queue/cluster_queue.go) ---------------------

  [[nodiscard]] bool inadmissible(const Wl& w) const {
    return w.inadmissible_generation == queues_[at(w.queue)].generation;
  }

  void push_active(WorkloadId id, bool check_shape = false);
  void pending_insert(Queue& q, Wl& w);
  void pending_erase(Queue& q, Wl& w);
  void pending_erase(Queue& q, Wl& w, std::set<OrderKey>::const_iterator at_w);
  static void set_inadmissible(const Queue& q, const Wl& w);
  void set_active(Queue& q, Wl& w);
  // The counts of Queue::active_pending, as a pending workload is set aside, inserted,
  // erased or its shape bulk-moved (cluster_queue.cpp).
  static Queue::ShapeCount& shape_count(const Queue& q, std::uint32_t shape);
  void bulk_move(Queue& q, std::uint32_t shape);
  // An active workload at `key`: the head search must not start after it.
  static void scan_from_here(Queue& q, const OrderKey& key) {
    if (q.scan_generation == q.generation && (!q.scan_from || key < *q.scan_from)) q.scan_from = key;
  }

  void push_inadmissible(WorkloadId id);
  std::optional<WorkloadId> find_head(Queue& q);
  std::set<OrderKey>::const_iterator find_head_at(Queue& q) { return scan_for_head(q); }
  [[nodiscard]] bool has_head(const Queue& q) const { return scan_for_head(q) != q.pending.end(); }
  std::set<OrderKey>::const_iterator scan_for_head(const Queue& q) const;
  void make_sticky(Queue& q, WorkloadId id);
  void unqueue(WorkloadId id);

  // QueueInadmissibleWorkloads for the whole cohort tree of a queue: quota was released.
  void requeue_inadmissible(int queue) { requeue_tree(queues_[at(queue)].node); }
  void requeue_tree(int node);

  // ---- usage (snapshot.cpp: pkg/cache/scheduler/clusterqueue.go) --------------------------------

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

  void add_usage(int queue, const Usage& u);
  void remove_usage(int queue, const Usage& u);
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

  [[nodiscard]] RankEntry rank_entry(WorkloadId id) const;
  static bool rank_before(const RankEntry& x, const RankEntry& y);
  void rank(Queue& q, WorkloadId id);
  void unrank(Queue& q, WorkloadId id);
  void hold(WorkloadId id);
  void mark_evicted(WorkloadId id);
  void release(WorkloadId id);
  [[nodiscard]] bool fits(int queue, const Usage& u) const;
  [[nodiscard]] bool within_nominal(int n, const std::vector<int>& frs) const {  // IsWithinNominalInResources
    return std::all_of(frs.begin(), frs.end(), [&](int fr) { return tree_.usage(n, fr) <= tree_.subtree_quota(n, fr); });
  }

  // ---- conditions (status.cpp) ------------------------------------------------------------------

  [[nodiscard]] const std::string* no_fit_reason(NoFitReason r) const;
  const std::string* intern(std::string_view reason);
  static bool set_condition(Wl& w, CondType type, bool status, const std::string* reason, MessageKind kind,
                            std::string_view text, VirtualTime now);
  void set_eviction_conditions(Wl& w, const std::string* preempted_reason, std::string_view message,
                               VirtualTime now) const;
  static void reset_eviction_conditions(Wl& w, const std::string* reason, VirtualTime now);
  [[nodiscard]] std::string render_message(const Wl& w, const StoredCondition& c) const;
  [[nodiscard]] Admission render_admission(const Wl& w) const;
  [[nodiscard]] WorkloadStatus render_status(const Wl& w) const;
  bool set_pending(WorkloadId id, const std::string* reason, const std::string& message, VirtualTime now,
                   CycleResult* out);
  Decision& next_decision(CycleResult& out, Decision::Kind kind, WorkloadId id, const std::string& cluster_queue,
                          std::string_view reason, std::string_view message);

  // ---- flavor assignment (flavor_assigner.cpp: pkg/scheduler/flavorassigner) --------------------

  [[nodiscard]] PodSetTotals pod_set_totals(const Queue& q, const PodSetSpec& ps) const;
  // ---- partial admission (flavor_assigner.cpp: PodSetResources.ScaledTo, PodSetReducer) ---------

  static bool can_be_partially_admitted(const WorkloadSpec& w);
  // ScaledTo: a pod set of zero pods keeps zero, any other takes the new count.
  static std::int32_t scaled_count(std::int32_t count, std::int32_t new_count) { return count == 0 ? 0 : new_count; }
  static void scale_requests(const std::vector<std::pair<std::string, Amount>>& from, std::int32_t count,
                             std::int32_t new_count, std::vector<std::pair<std::string, Amount>>& to);
  const std::vector<PodSetTotals>& totals_of(Wl& w) const;
  int resource_id(const std::string& name) const;
  [[nodiscard]] std::pair<int, bool> lowest_subtree_that_fits(int n, int fr, Amount val) const;
  [[nodiscard]] bool can_preempt_while_borrowing(const Queue& q) const;
  std::pair<PMode, int> fits_resource_quota(WorkloadId id, int queue, int fr, Amount assumed, Amount request,
                                            NoFitReason* no_fit, std::vector<std::string>& reasons);
  std::pair<PMode, int> simulate_preemption(WorkloadId id, int queue, int fr, Amount quantity);
  static bool preferred(const Granular& a, const Granular& b, const FlavorFungibility& f);
  static bool should_try_next_flavor(const Granular& m, const FlavorFungibility& f);

  // checkFlavorForPodSets (node_match.hpp), in two parts. Most flavors have no taints and
  // most pod sets no selector or affinity; then the flavor is not checked at all.
  [[nodiscard]] bool unconstrained(int flavor, const PodSetSpec& ps) const {
    return flavors_[at(flavor)].node_taints.empty() && ps.node_selector.empty() && ps.required_node_affinity.empty();
  }
  [[gnu::noinline]] bool flavor_refuses(int flavor, const PodSetSpec& ps, std::vector<std::string>& reasons,
                                        bool& error);
  std::string spare_string();
  void assign(WorkloadId id, Assignment& a, const std::vector<std::int32_t>* counts = nullptr);
  [[nodiscard]] bool pinned(std::size_t pod_set, int rid, int flavor) const;
  const std::vector<ResourceAssign>& find_flavor(WorkloadId id, int queue, int group_index, const PodSetSpec& ps,
                                                 std::size_t pod_set, int rid, const PodSetTotals& totals,
                                                 const Usage& assumed, FlavorAttempts& attempts,
                                                 std::vector<std::string>& reasons, bool& error);

  // ---- preemption, common (preemption_common.cpp: pkg/scheduler/preemption/common) --------------

  // A victim chosen earlier in this cycle. Only a re-nomination during processing can meet
  // one: Kueue's updateAssignmentIfNeeded runs it on a snapshot where the victims of the
  // cycle's other preemptions are removed (SimulateWorkloadRemoval), usage and workload
  // alike, so they are no candidates there.
  // A bit per workload id, so that the walks over a cohort's candidates ask without
  // reading the records; cleared when the next cycle starts.
  [[nodiscard]] bool victim_this_cycle(WorkloadId w) const {
    return w / 64 < victim_bits_.size() && ((victim_bits_[w / 64] >> (w % 64)) & 1U) != 0;
  }

  [[nodiscard]] bool uses_resources(WorkloadId id, const std::vector<int>& frs) const;

  // common.SatisfiesPreemptionPolicy
  [[nodiscard]] static bool satisfies(const Wl& preemptor, const Wl& candidate, PreemptionPolicy policy) {
    return satisfies(preemptor, candidate.spec.priority, candidate.queued_at, policy);
  }
  [[nodiscard]] static bool satisfies(const Wl& preemptor, std::int32_t cand_priority, VirtualTime cand_creation,
                                      PreemptionPolicy policy);
  [[nodiscard]] bool candidate_before(WorkloadId a, WorkloadId b, int preemptor_queue, VirtualTime now) const;

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
    [[nodiscard]] CandidateRank rank() const { return {priority, reserved, uid_prefix, uid_label, w}; }
  };

  [[nodiscard]] Candidate candidate(WorkloadId w, int lca, Variant v, int preemptor_queue) const;
  static bool candidate_key_before(const Candidate& x, const Candidate& y);

  struct Ranked {
    int list = 0;  // 0 hierarchy, 1 priority, 2 same queue
    Candidate c;
  };
  static bool ranked_before(const Ranked& x, const Ranked& y);
  // ---- classical preemption (preemption_classical.cpp: pkg/scheduler/preemption, classical) ----

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
  static bool source_before(const Source& x, const Source& y);
  bool advance(Source& s, const Wl& preemptor, int queue, const std::vector<int>& frs) const;
  [[nodiscard]] bool uses_resources(const RankEntry& r, const std::vector<int>& frs) const {
    return r.fr >= 0 ? std::find(frs.begin(), frs.end(), r.fr) != frs.end() : uses_resources(r.id, frs);
  }
  // The candidate's usage of a search's only flavor-resource when the entry knows it, else -1.
  static Amount amount_of(const RankEntry& r, const std::vector<int>& frs) {
    return frs.size() == 1 && r.fr == frs.front() ? r.amount : Amount{-1};
  }

  class CandidateWalk;
  class ReferenceWalk;

  // ---- one candidate order per cohort, shared by the preemptors of a cycle (preemption_classical.cpp) ---
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
    [[nodiscard]] CandidateRank rank() const { return {priority, reserved, uid_prefix, uid_label, w}; }
  };
  static bool order_entry_before(const OrderEntry& x, const OrderEntry& y);
  struct CandidateOrder {
    std::uint64_t epoch = 0;  // the state it was built in (epoch_); 0: never built
    std::vector<int> frs;
    std::vector<OrderEntry> entries;                  // sorted by order_entry_before
    std::vector<std::size_t> runs;  // while building: where each queue's (sorted) entries start
    std::vector<std::pair<int, int>> evicted_queues;  // (queue, child) of the queues with evicted workloads
    std::uint64_t requests_epoch = 0;
    int requests = 0;  // searches under this cohort in requests_epoch
    // For reuse later in the same cycle (reusable_order): the cycle and the admissions
    // under the cohort when it was built, and the queues it holds, sorted.
    std::uint64_t cycle = 0, admissions = 0;
    std::vector<int> queues;
  };

  bool share_order(int a, const std::vector<int>& frs);
  const CandidateOrder& candidate_order(int a, const std::vector<int>& frs);
  const CandidateOrder* reusable_order(int a, const std::vector<int>& frs);
  [[nodiscard]] std::uint64_t admissions_under(int a) const {
    return admissions_.size() == tree_.size() ? admissions_[at(a)] : 0;
  }
  void add_order_queues(CandidateOrder& o, int top, int current, int child_of_top, const std::vector<int>& frs) const;

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

  class SharedWalk;
  [[nodiscard]] static bool past_cutoff(PreemptionPolicy reclaim, std::int32_t cand_priority, std::int32_t preemptor_priority);
  [[nodiscard]] Variant classify(const Wl& preemptor, int queue, WorkloadId cand, bool advantage,
                                 const std::vector<int>& frs) const;
  [[nodiscard]] Variant classify(const Wl& preemptor, int queue, int cand_queue, std::int32_t cand_priority,
                                 VirtualTime cand_creation, bool advantage) const;
  [[nodiscard]] bool fit_in_quota(int n, const Usage& requests, Usage& remaining) const;
  void collect_sources(const Wl& preemptor, int queue, int current, int subtree_root, int skip, bool advantage,
                       const std::vector<int>& frs, std::vector<Source>& sources, std::vector<Ranked>& evicted) const;
  void add_evicted(const Wl& preemptor, int queue, int cq, int list, int lca, bool advantage, const std::vector<int>& frs,
                   std::vector<Ranked>& evicted) const;


  enum class Validity { Valid, RestInvalid };
  [[nodiscard]] Validity candidate_validity(const Candidate& c, int queue, bool borrow, const std::vector<int>& frs) const;
  [[nodiscard]] bool workload_fits(int queue, const Usage& usage, bool allow_borrowing) const;

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

  const std::vector<Target>& get_targets(WorkloadId id, int queue, const std::vector<int>& frs, const Usage& usage);
  [[nodiscard]] static bool policy_may_take(PreemptionPolicy policy, std::int32_t min_priority, std::int32_t preemptor_priority);
  [[nodiscard]] bool no_candidate_can_exist(const Wl& preemptor, int queue, int fr, Amount request) const;
  void classical_preemptions(WorkloadId id, int queue, const std::vector<int>& frs, const Usage& usage,
                             std::vector<Target>& out);

  class TreeSearch;
  static Amount take_from(Amount& u, Amount local_quota, Amount v);

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

  class FlatSearch;
  [[nodiscard]] bool flat_search(int queue, const std::vector<int>& frs, const Usage& usage) const;
  // A root cohort whose children are all ClusterQueues.
  [[nodiscard]] bool flat_cohort(int a) const { return !tree_.has_parent(a) && tree_.node(a).child_cohorts.empty(); }

  // ---- the walk of a flat cohort's order while the preemptor's queue would borrow ---------------
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
    return p.reclaim_within_cohort == PreemptionPolicy::LowerOrNewerEqualPriority ? preemptor.queued_at : 0;
  }

  const RemovalRun& removal_run(const Wl& preemptor, int queue, const Level& l, int fr);
  template <class Walk>
  void search_with(Walk& walk, int queue, const std::vector<int>& frs, const Usage& usage, std::vector<Target>& out);
  template <class Walk, class Search>
  void minimal_preemptions(Walk& all, Search& search, int queue, const std::vector<int>& frs, std::vector<Target>& out);

  // ---- fair sharing (preemption_fair_sharing.cpp: pkg/cache/scheduler/fair_sharing.go, preemption/fairsharing) ---

  [[nodiscard]] const Drs& drs(int n) const;
  [[nodiscard]] Drs compute_drs(int n) const;
  [[nodiscard]] std::vector<int> ancestors(int n) const;
  [[nodiscard]] int almost_lca(int n, int lca) const;
  std::vector<Target> fair_preemptions(WorkloadId id, int queue, const std::vector<int>& frs, const Usage& usage);

  // ---- the cycle (scheduler.cpp: pkg/scheduler/scheduler.go) ------------------------------------

  void nominate(Entry& e);
  const std::vector<Target>& targets_of(WorkloadId id, int queue, const Assignment& a);
  void reduce(Entry& e);

  class Victims;
  bool fits_after(const Entry& e, const Victims& victims, const std::vector<Target>& targets);
  Usage reserve_for(const Entry& e, const Victims& victims) const;
  void process(Entry& e, Victims& preempted, std::vector<std::pair<int, Usage>>& reserved, CycleResult& out,
               VirtualTime now);
  void admit(Entry& e, VirtualTime now, CycleResult& out);
  [[nodiscard]] std::vector<std::size_t> order_classical(std::span<const Entry> entries) const;
  std::vector<std::size_t> order_fair(std::span<Entry> entries, Victims& preempted,
                                      std::vector<std::pair<int, Usage>>& reserved, CycleResult& out, VirtualTime now);
  CoreOptions options_;
  std::set<std::string, std::less<>> reasons_;  // intern(); node-based, so pointers stay valid
  std::unordered_map<std::string, std::uint32_t> shape_ids_;  // shape_id()
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
  const std::string* preemption_reason(std::string_view reason);
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

}  // namespace gpubank::twin::admission
