#include "render/consistency.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include <date/date.h>

#include "core/quantity.hpp"
#include "document/decode.hpp"
#include "policy/cohort_quota.hpp"
#include "policy/report.hpp"
#include "policy/schema.hpp"
#include "policy/prewarm.hpp"
#include "policy/tidal_windows.hpp"
#include "render/scaling.hpp"

namespace gpubank::render {
namespace {

using policy::GPUQuotaPolicySpec;
using policy::InferenceScalingPolicySpec;
using policy::Kind;
using policy::PolicyObject;
using policy::Pool;
using policy::PriorityRule;
using policy::TidalPolicySpec;
using policy::TidalWindow;
using policy::WorkloadType;

std::string str(Gpus v) { return std::to_string(v); }

// Sums and products of counts read from workload manifests, which no policy bound
// holds: saturated at the int64 range instead of overflowing.
Gpus saturating_add(Gpus a, Gpus b) {
  Gpus r = 0;
  if (__builtin_add_overflow(a, b, &r)) return a < 0 ? std::numeric_limits<Gpus>::min() : std::numeric_limits<Gpus>::max();
  return r;
}
Gpus saturating_mul(Gpus a, Gpus b) {
  Gpus r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    return (a < 0) != (b < 0) ? std::numeric_limits<Gpus>::min() : std::numeric_limits<Gpus>::max();
  }
  return r;
}

std::string idx(std::string_view base, std::size_t i) { return std::string(base) + "[" + std::to_string(i) + "]"; }

template <class T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string where(const policy::Origin& o, SourcePos pos) {
  if (o.file.empty()) return "";
  return " (" + o.file + (pos.line > 0 ? ":" + str(pos.line) : "") + ")";
}

// Whether a priority class may be used by `group` for workloads of `type`.
bool allows(const PriorityRule& r, WorkloadType type, const std::string& group) {
  return (r.workload_types.empty() || contains(r.workload_types, type)) && (r.groups.empty() || contains(r.groups, group));
}
bool allows_training(const PriorityRule& r, const std::string& group) {
  return allows(r, WorkloadType::Training, group) || allows(r, WorkloadType::Batch, group);
}

// The pool as nodes of free devices; one node when the pool does not say its node size.
std::vector<int> nodes_of(const Pool& pool) {
  if (!pool.gpus_per_node || *pool.gpus_per_node <= 0) return {pool.capacity};
  std::vector<int> nodes(static_cast<std::size_t>(pool.capacity / *pool.gpus_per_node), *pool.gpus_per_node);
  if (pool.capacity % *pool.gpus_per_node != 0) nodes.push_back(pool.capacity % *pool.gpus_per_node);
  return nodes;
}

// A replica's devices on each of its nodes, and how many distinct nodes it spans.
struct Footprint {
  int per_node = 1;
  int nodes = 1;
};

Footprint footprint(const InferenceScalingPolicySpec& p, const Pool& pool) {
  const auto& shape = p.replica_shape;
  if (!pool.gpus_per_node || shape.nodes_per_replica <= 1) return {shape.gpu_per_replica, 1};
  return {shape.gpu_per_replica / shape.nodes_per_replica, shape.nodes_per_replica};
}

// First fit: the replica's share on the first `nodes` nodes that have room. Nodes before
// `from` are known to lack room for this footprint (free space only shrinks), so a run of
// placements of one footprint scans the pool about once, not once per replica: a floor
// of a million replicas on a million nodes is a million steps, not 10^12.
bool place(std::vector<int>& free, Footprint f, std::size_t& from) {
  while (from < free.size() && free[from] < f.per_node) ++from;
  std::vector<std::size_t> chosen;
  for (std::size_t i = from; i < free.size() && chosen.size() < static_cast<std::size_t>(f.nodes); ++i) {
    if (free[i] >= f.per_node) chosen.push_back(i);
  }
  if (chosen.size() < static_cast<std::size_t>(f.nodes)) return false;
  for (std::size_t i : chosen) free[i] -= f.per_node;
  return true;
}

// How many more replicas fit: the most t with sum(min(slots_i, t)) >= t x nodes, since a
// replica takes one slot on each of `nodes` distinct nodes. The left side less the right
// is concave and 0 at t = 0, so the feasible t form a prefix: binary search.
Gpus replicas_that_fit(const std::vector<int>& free, Footprint f) {
  if (f.per_node <= 0 || f.nodes <= 0) return 0;
  long long total = 0;
  std::vector<int> slots;
  slots.reserve(free.size());
  for (int n : free) {
    slots.push_back(n / f.per_node);
    total += slots.back();
  }
  if (f.nodes == 1) return total;
  long long lo = 0;
  long long hi = total / f.nodes;
  while (lo < hi) {
    const long long t = (lo + hi + 1) / 2;
    long long usable = 0;
    for (int s : slots) usable += std::min<long long>(s, t);
    if (usable >= t * f.nodes) {
      lo = t;
    } else {
      hi = t - 1;
    }
  }
  return lo;
}

// GPUs one pod asks for (limits, else requests, summed over containers); nullopt when
// no container names the resource.
std::optional<Gpus> pod_gpus(const std::vector<const doc::Node*>& containers, const std::string& resource) {
  std::optional<Gpus> total;
  for (const doc::Node* c : containers) {
    const doc::Node* resources = c->find("resources");
    if (resources == nullptr) continue;
    for (const char* kind : {"limits", "requests"}) {
      const doc::Node* list = resources->find(kind);
      const doc::Node* q = list != nullptr ? list->find(resource) : nullptr;
      if (q == nullptr) continue;
      long long n = 0;
      if (q->type == doc::NodeType::Int) {
        n = q->integer;
      } else if (q->type == doc::NodeType::String) {
        auto parsed = Quantity::parse(q->text);
        if (!parsed) continue;
        n = parsed->value();
      } else {
        continue;
      }
      total = saturating_add(total.value_or(0), n);
      break;  // limits win over requests, as the device plugin's extended resources require them equal
    }
  }
  return total;
}

void add_containers(const doc::Node* list, std::vector<const doc::Node*>& out) {
  if (list == nullptr || list->type != doc::NodeType::Sequence) return;
  for (const auto& item : list->items) out.push_back(&item);
}

std::string resource_name(const Pool& pool) {
  return pool.partition == "full" ? "nvidia.com/gpu" : "nvidia.com/mig-" + pool.partition;
}

struct Service {
  const PolicyObject* object = nullptr;
  const InferenceScalingPolicySpec* spec = nullptr;
  const Pool* pool = nullptr;
  int peak_floor_replicas = 0;
  std::vector<std::pair<const PolicyObject*, std::size_t>> windows;  // tidal windows that set its floor

  [[nodiscard]] int gpr() const { return spec->replica_shape.gpu_per_replica; }
  [[nodiscard]] Gpus required() const { return Gpus{spec->max_replicas} * gpr(); }
  [[nodiscard]] Gpus min_gpus() const { return Gpus{spec->min_replicas} * gpr(); }
};

class Checker {
 public:
  explicit Checker(const policy::PolicySet& set) : set_(set), g_(set.guardrails_spec()) {}

  ConsistencyReport run() {
    if (g_ == nullptr) return std::move(out_);
    index();
    group_rows();
    for (auto& s : services_) service_row(s);
    for (const auto& row : out_.groups) {
      check_group_sum(row);
      check_burst_headroom(row);
    }
    for (const auto& pool : g_->pools) pool_row(pool);
    std::sort(out_.pools.begin(), out_.pools.end(), [](const auto& a, const auto& b) { return a.pool < b.pool; });
    for (const auto& o : set_.policies()) {
      if (o.kind == Kind::TidalPolicy) check_tidal(o);
    }
    return std::move(out_);
  }

 private:
  void report(const PolicyObject& o, std::string_view rule, const std::string& path, std::string message,
              Severity severity = Severity::Error) {
    out_.diagnostics.push_back(Diagnostic{severity, std::string(rule), o.origin.file, o.position_of(path),
                                          std::string(policy::kind_name(o.kind)), o.name(), path, std::move(message)});
  }

  const GPUQuotaPolicySpec* quota(const std::string& group, const std::string& pool) const {
    auto it = quotas_.find({group, pool});
    return it == quotas_.end() ? nullptr : &it->second->as<GPUQuotaPolicySpec>();
  }
  static Gpus lending_floor(const GPUQuotaPolicySpec& q) {
    return q.lending_limit ? Gpus{q.guaranteed} - *q.lending_limit : 0;
  }
  static Gpus lendable(const GPUQuotaPolicySpec& q) { return q.guaranteed - lending_floor(q); }
  static Gpus at(const std::map<std::string, Gpus>& by_pool, const std::string& pool) {
    auto it = by_pool.find(pool);
    return it == by_pool.end() ? 0 : it->second;
  }
  // What the pool's Cohort holds itself with no lease active (render_kueue_cohort): the
  // check judges the static render, as the objects it writes are.
  Gpus cohort_own(const Pool& pool) const {
    return policy::unguaranteed_gpus(pool.capacity, at(guaranteed_, pool.name), 0);
  }
  // What the rest of a pool's cohort can lend one group's queue (Kueue: the cohort's
  // subtree quota less the queue's own lendable part; lendingLimit keeps the rest private).
  Gpus others_lendable(const std::string& group, const Pool& pool) const {
    const GPUQuotaPolicySpec* q = quota(group, pool.name);
    return cohort_own(pool) + at(lendable_sum_, pool.name) - (q != nullptr ? lendable(*q) : 0);
  }

  void index() {
    for (const auto& o : set_.policies()) {
      if (o.kind != Kind::GPUQuotaPolicy) continue;
      const auto& q = o.as<GPUQuotaPolicySpec>();
      if (!quotas_.emplace(std::pair{q.business_group, q.resource_pool}, &o).second) continue;
      guaranteed_[q.resource_pool] += q.guaranteed;
      lendable_sum_[q.resource_pool] += lendable(q);
    }
    for (const auto& o : set_.policies()) {
      if (o.kind != Kind::InferenceScalingPolicy) continue;
      const auto& p = o.as<InferenceScalingPolicySpec>();
      const Pool* pool = g_->find_pool(p.resource_pool);
      if (pool == nullptr || quota(p.business_group, p.resource_pool) == nullptr || p.replica_shape.gpu_per_replica < 1) {
        continue;  // validation reports these
      }
      services_.push_back(Service{&o, &p, pool, p.min_replicas, {}});
    }
    std::sort(services_.begin(), services_.end(), [](const Service& a, const Service& b) {
      return std::tie(a.spec->resource_pool, a.spec->business_group, a.object->name()) <
             std::tie(b.spec->resource_pool, b.spec->business_group, b.object->name());
    });
    for (const auto& o : set_.policies()) {
      if (o.kind != Kind::TidalPolicy) continue;
      const auto& t = o.as<TidalPolicySpec>();
      for (auto& s : services_) {
        if (!contains(t.targets.inference_policies, s.object->name())) continue;
        for (std::size_t i = 0; i < t.windows.size(); ++i) {
          const auto& floor = t.windows[i].inference_replica_floor;
          const auto value = floor ? floor->for_policy(s.object->name()) : std::nullopt;
          if (!value) continue;
          s.windows.emplace_back(&o, i);
          s.peak_floor_replicas = std::max(s.peak_floor_replicas, *value);
        }
      }
    }
    for (auto& s : services_) by_pool_[s.spec->resource_pool].push_back(&s);
  }

  void group_rows() {
    for (const auto& [key, o] : quotas_) {
      const auto& q = o->as<GPUQuotaPolicySpec>();
      const Pool* pool = g_->find_pool(q.resource_pool);
      if (pool == nullptr) continue;
      GroupPoolCapacity row;
      row.group = q.business_group;
      row.pool = q.resource_pool;
      row.queue = q.business_group + "-" + q.resource_pool;
      row.guaranteed = q.guaranteed;
      row.max_capacity = q.effective_max_capacity();
      row.borrow_cap = row.max_capacity - q.guaranteed;
      row.lending_floor = lending_floor(q);
      row.lendable = lendable(q);
      // Kueue's potentialAvailable for the queue: nominal plus what its cohort can lend
      // it, at most its borrowingLimit (docs/render-scaling.md).
      row.queue_reach =
          q.guaranteed + std::min(std::max<Gpus>(0, others_lendable(row.group, *pool)), std::max<Gpus>(0, row.borrow_cap));
      for (const Service* s : by_pool_[row.pool]) {
        if (s->spec->business_group != row.group) continue;
        ++row.services;
        row.services_required += s->required();
        row.services_floor += Gpus{s->peak_floor_replicas} * s->gpr();
      }
      out_.groups.push_back(std::move(row));
    }
    std::sort(out_.groups.begin(), out_.groups.end(),
              [](const auto& a, const auto& b) { return std::tie(a.pool, a.group) < std::tie(b.pool, b.group); });
  }

  const GroupPoolCapacity& group_row(const std::string& group, const std::string& pool) const {
    return *std::find_if(out_.groups.begin(), out_.groups.end(),
                         [&](const auto& r) { return r.group == group && r.pool == pool; });
  }

  // The pool's nodes after every service's floor (minReplicas) is placed, biggest
  // replicas first; records how many of each service's floor replicas found room.
  const std::vector<int>& floors_placed(const Pool& pool) {
    auto [it, fresh] = free_after_floors_.try_emplace(pool.name, nodes_of(pool));
    if (!fresh) return it->second;
    std::vector<Service*> order = by_pool_[pool.name];
    std::stable_sort(order.begin(), order.end(), [&](const Service* a, const Service* b) {
      return footprint(*a->spec, pool).per_node > footprint(*b->spec, pool).per_node;
    });
    for (Service* s : order) {
      int placed = 0;
      std::size_t from = 0;
      for (int r = 0; r < s->spec->min_replicas && place(it->second, footprint(*s->spec, pool), from); ++r) ++placed;
      floors_placed_[s] = placed;
    }
    return it->second;
  }

  void service_row(Service& s) {
    const auto& p = *s.spec;
    const PolicyObject& o = *s.object;
    const Pool& pool = *s.pool;
    const GPUQuotaPolicySpec& q = *quota(p.business_group, p.resource_pool);
    const int gpr = s.gpr();
    const GroupPoolCapacity& gp = group_row(p.business_group, p.resource_pool);

    ServiceCapacity row;
    row.policy = o.name();
    row.workload = std::string(doc::enum_name(p.workload_ref.kind)) + " " + p.workload_ref.namespace_ + "/" +
                   p.workload_ref.name;
    row.group = p.business_group;
    row.pool = p.resource_pool;
    row.tensor_parallel = p.replica_shape.tensor_parallel_size;
    row.gpu_per_replica = gpr;
    row.nodes_per_replica = p.replica_shape.nodes_per_replica;
    row.min_replicas = p.min_replicas;
    row.max_replicas = p.max_replicas;
    row.required = s.required();
    row.peak_floor = Gpus{s.peak_floor_replicas} * gpr;
    row.quota_max_capacity = q.effective_max_capacity();
    if (const auto* group = g_->find_group(p.business_group); group != nullptr) {
      if (auto it = group->limits.find(p.resource_pool); it != group->limits.end()) {
        row.guardrail_max_capacity = it->second.max_capacity;
      }
    }
    row.burst_headroom = p.effective_burst_headroom();
    const std::string need = "maxReplicas " + str(p.max_replicas) + " x gpuPerReplica " + str(gpr) + " = " +
                             str(row.required) + " GPUs";

    // Queue: the group's other services on the pool keep their floors in the same queue.
    Gpus others_floor = 0;
    std::string others;
    for (const Service* t : by_pool_[p.resource_pool]) {
      if (t == &s || t->spec->business_group != p.business_group || t->min_gpus() == 0) continue;
      others_floor += t->min_gpus();
      others += (others.empty() ? "" : ", ") + t->object->name() + " " + str(t->min_gpus());
    }
    row.queue_allows = std::max<Gpus>(0, gp.queue_reach - others_floor) / gpr * gpr;
    if (row.queue_allows < row.required) {
      const Gpus lent = gp.queue_reach - gp.guaranteed;
      report(o, rule::kQueueBelowMaxReplicas, "spec.maxReplicas",
             need + ", but ClusterQueue " + gp.queue + " reaches at most " + str(gp.queue_reach) + ": nominalQuota " +
                 str(gp.guaranteed) + " + " + str(lent) + " borrowed (borrowingLimit " + str(gp.borrow_cap) +
                 ", the rest of pool " + pool.name + "'s cohort lends " +
                 str(std::max<Gpus>(0, others_lendable(p.business_group, pool))) + ")" +
                 (others.empty() ? "" : ", less the floors of the group's other services there (" + others + ")") +
                 ", so " + str(row.queue_allows / gpr) + " replicas (" + str(row.queue_allows) + " GPUs)");
    }

    // Pool: the nodes, the replica shape and every other service's floor.
    const Footprint fp = footprint(p, pool);
    const auto& free = floors_placed(pool);
    row.pool_allows = (floors_placed_[&s] + replicas_that_fit(free, fp)) * gpr;  // Gpus: no overflow
    if (row.pool_allows < row.required) {
      const std::string nodes = pool.gpus_per_node ? str(static_cast<int>(nodes_of(pool).size())) + " nodes of up to " +
                                                         str(*pool.gpus_per_node) + " GPUs"
                                                   : str(pool.capacity) + " GPUs";
      Gpus floors = 0;
      for (const Service* t : by_pool_[p.resource_pool]) floors += t == &s ? 0 : t->min_gpus();
      report(o, rule::kPoolBelowMaxReplicas, "spec.maxReplicas",
             need + ", but pool " + pool.name + " (" + nodes + ") holds only " + str(row.pool_allows / gpr) +
                 " replicas of " + str(fp.per_node) + " GPUs on each of " + str(fp.nodes) + " node(s) (" +
                 str(row.pool_allows) + " GPUs)" +
                 (floors > 0 ? " beside the other services' floors (" + str(floors) + " GPUs)" : ""));
    }

    // Autoscaler.
    const auto target = scale_target_of(p);
    if (!target) {
      report(o, rule::kAutoscalerUnsupported, "spec.workloadRef.kind",
             "KEDA cannot scale a " + std::string(doc::enum_name(p.workload_ref.kind)) +
                 " (Ray Serve's autoscaler owns its replicas), so no ScaledObject is rendered; set its serve "
                 "deployments' autoscaling_config max_replicas to " + str(p.max_replicas) + " yourself",
             Severity::Warning);
    } else {
      row.autoscaler_allows = Gpus{std::max(1, p.max_replicas)} * gpr;
      check_workload(s, row);
    }
    check_behavior(s);
    check_priority(s);
    out_.services.push_back(std::move(row));
  }

  // The workload manifest, when the set carries it: a cap or a GPU request of its own
  // that disagrees with the policy.
  void check_workload(const Service& s, ServiceCapacity& row) {
    const auto& p = *s.spec;
    const bool isvc = p.workload_ref.kind == policy::WorkloadRefKind::InferenceService;
    const bool deployment = p.workload_ref.kind == policy::WorkloadRefKind::Deployment;
    if (!isvc && !deployment) return;
    const policy::WorkloadManifest* m = nullptr;
    for (const auto& w : set_.workloads()) {
      const bool kind_ok = isvc ? w->api_version.starts_with("serving.kserve.io/") && w->kind == "InferenceService"
                                : w->api_version == "apps/v1" && w->kind == "Deployment";
      if (kind_ok && w->name == p.workload_ref.name && w->namespace_ == p.workload_ref.namespace_) m = w.get();
    }
    if (m == nullptr) return;
    const std::string what = m->kind + " " + m->namespace_ + "/" + m->name;
    std::vector<const doc::Node*> containers;
    const doc::Node* spec = m->root.find("spec");
    if (isvc) {
      const doc::Node* predictor = spec != nullptr ? spec->find("predictor") : nullptr;
      if (predictor == nullptr) return;
      // KServe runs its own autoscaler unless the class is "external"; then it caps the
      // predictor at spec.predictor.maxReplicas.
      const doc::Node* meta = m->root.find("metadata");
      const doc::Node* annotations = meta != nullptr ? meta->find("annotations") : nullptr;
      const std::string_view klass = annotations != nullptr ? annotations->string_at("serving.kserve.io/autoscalerClass") : "";
      const doc::Node* max = predictor->find("maxReplicas");
      if (klass != "external" && max != nullptr && max->type == doc::NodeType::Int && max->integer < p.max_replicas) {
        // KServe refuses a negative maxReplicas; one read here counts as no replicas.
        const Gpus cap = std::max<Gpus>(0, max->integer);
        row.autoscaler_allows = cap * s.gpr();
        report(*s.object, rule::kAutoscalerBelowMaxReplicas, "spec.maxReplicas",
               "maxReplicas " + str(p.max_replicas) + " x gpuPerReplica " + str(s.gpr()) + " = " + str(s.required()) +
                   " GPUs, but " + what + where(m->origin, max->pos) + " sets spec.predictor.maxReplicas " + str(cap) +
                   " with autoscalerClass " + (klass.empty() ? "hpa (KServe's default)" : std::string(klass)) +
                   ", so KServe's own autoscaler stops at " + str(cap) + " replicas (" + str(cap * s.gpr()) +
                   " GPUs); raise it to " + str(p.max_replicas) + " or hand the predictor to KEDA (autoscalerClass external)");
      }
      add_containers(predictor->find("containers"), containers);
      for (const auto& e : predictor->entries) {
        if (e.value.type == doc::NodeType::Mapping && e.value.find("resources") != nullptr) containers.push_back(&e.value);
      }
    } else {
      const doc::Node* tmpl = spec != nullptr ? spec->find("template") : nullptr;
      const doc::Node* pod = tmpl != nullptr ? tmpl->find("spec") : nullptr;
      if (pod != nullptr) add_containers(pod->find("containers"), containers);
    }
    if (p.replica_shape.nodes_per_replica != 1) return;  // one pod per node: the shape is split
    const std::string resource = resource_name(*s.pool);
    const auto gpus = pod_gpus(containers, resource);
    if (gpus && *gpus != s.gpr()) {
      report(*s.object, rule::kWorkloadShapeMismatch, "spec.replicaShape.gpuPerReplica",
             "gpuPerReplica is " + str(s.gpr()) + ", but each pod of " + what + where(m->origin, m->root.pos) +
                 " asks for " + str(*gpus) + " " + resource + "; Kueue and the scheduler count the pod's request, so " +
                 "maxReplicas " + str(p.max_replicas) + " needs " + str(saturating_mul(*gpus, p.max_replicas)) + " GPUs, not " +
                 str(s.required()));
    }
  }

  // The HPA API bounds behavior; render_scaling clamps, so say where it did.
  void check_behavior(const Service& s) {
    const auto& p = *s.spec;
    const auto over = [](Duration d, std::int64_t limit) {
      return std::chrono::duration_cast<std::chrono::seconds>(d.nanoseconds()).count() > limit;
    };
    const std::pair<const char*, Duration> windows[] = {{"spec.scaleUp.stabilizationWindow", p.scale_up.stabilization_window},
                                                        {"spec.scaleDown.stabilizationWindow", p.scale_down.stabilization_window}};
    for (const auto& [path, d] : windows) {
      if (over(d, 3600)) {
        report(*s.object, rule::kBehaviorClamped, path,
               d.to_string() + " is above the HPA's longest stabilization window (1h); the ScaledObject uses 1h",
               Severity::Warning);
      }
    }
    if (over(p.model_load_time, 1800)) {
      report(*s.object, rule::kBehaviorClamped, "spec.modelLoadTime",
             p.model_load_time.to_string() + " is above the HPA's longest scaling-policy period (30m); scale-up is " +
                 "rate-limited per 30m instead",
             Severity::Warning);
    }
  }

  struct Ranked {
    const PriorityRule* rule = nullptr;
    std::string group;
  };
  // The two highest training priorities on a pool that different groups may use there,
  // so every group finds the highest among the others.
  const std::pair<Ranked, Ranked>& training_top(const std::string& pool) {
    auto [it, fresh] = training_top_.try_emplace(pool);
    if (!fresh) return it->second;
    auto& [first, second] = it->second;
    for (const auto& [key, o] : quotas_) {
      if (key.second != pool || o->as<GPUQuotaPolicySpec>().effective_max_capacity() == 0) continue;
      const PriorityRule* best = nullptr;
      for (const auto& r : g_->priorities) {
        if (allows_training(r, key.first) && (best == nullptr || r.value > best->value)) best = &r;
      }
      if (best == nullptr) continue;
      if (first.rule == nullptr || best->value > first.rule->value) {
        second = std::move(first);
        first = Ranked{best, key.first};
      } else if (second.rule == nullptr || best->value > second.rule->value) {
        second = Ranked{best, key.first};
      }
    }
    return it->second;
  }

  // Scheduler priority: serving must rank above the training that borrows its pool.
  void check_priority(const Service& s) {
    const auto& p = *s.spec;
    const PriorityRule* serving = nullptr;
    for (const auto& r : g_->priorities) {
      if (allows(r, WorkloadType::Inference, p.business_group) && (serving == nullptr || r.value > serving->value)) {
        serving = &r;
      }
    }
    const auto& [first, second] = training_top(p.resource_pool);
    const Ranked& top = first.group != p.business_group ? first : second;
    const PriorityRule* training = top.rule;
    const std::string& training_group = top.group;
    const int serving_value = serving != nullptr ? serving->value : 0;
    if (training == nullptr || training->value < serving_value) return;
    report(*s.object, rule::kInferencePriorityNotAboveTraining, "spec.businessGroup",
           "the highest priority group " + p.business_group + " may give inference is " +
               (serving != nullptr ? serving->name + " (" + str(serving->value) + ")"
                                   : std::string("none (its pods run at priority 0)")) +
               ", not above " + training->name + " (" + str(training->value) + "), which group " + training_group +
               " may give training on pool " + p.resource_pool +
               ": the scheduler would not preempt that training for a scale-out and could preempt serving replicas for it");
  }

  void check_group_sum(const GroupPoolCapacity& row) {
    if (row.services < 2 || row.services_required <= row.queue_reach) return;
    std::string parts;
    for (const Service* s : by_pool_[row.pool]) {
      if (s->spec->business_group != row.group) continue;
      parts += (parts.empty() ? "" : " + ") + s->object->name() + " " + str(s->required());
    }
    report(*quotas_.at({row.group, row.pool}), rule::kServicesExceedQueue, "spec.maxCapacity",
           "the group's " + str(row.services) + " services on pool " + row.pool + " need " + str(row.services_required) +
               " GPUs at maxReplicas (" + parts + "), but ClusterQueue " + row.queue + " reaches at most " +
               str(row.queue_reach) + ", so they cannot all scale out at once");
  }

  // burstHeadroom is "GPUs kept free or prewarmed for fast scale-out" (the policy API): free
  // GPUs of the group's guarantee that its lendingLimit lets borrowers take are not kept:
  // when the burst comes they are held, and reclaim gives the borrower its grace first.
  // The part never lent (guaranteed - lendingLimit; 0 without a lendingLimit) must hold
  // every service's minReplicas floor and headroom.
  void check_burst_headroom(const GroupPoolCapacity& row) {
    Gpus kept = 0;
    std::string parts;
    for (const Service* s : by_pool_[row.pool]) {
      if (s->spec->business_group != row.group) continue;
      const Gpus headroom = s->spec->effective_burst_headroom();
      if (headroom == 0) continue;
      kept += s->min_gpus() + headroom;
      parts += (parts.empty() ? "" : ", ") + s->object->name() + " " + str(s->min_gpus()) + " + " + str(headroom);
    }
    if (kept == 0 || kept <= row.lending_floor) return;
    const auto& q = quotas_.at({row.group, row.pool})->as<GPUQuotaPolicySpec>();
    const std::string lends = q.lending_limit ? "lends up to " + str(*q.lending_limit) + " of its " + str(row.guaranteed) +
                                                    " guaranteed GPUs (lendingLimit), keeping " + str(row.lending_floor)
                                              : "lends all " + str(row.guaranteed) + " of its guaranteed GPUs (no lendingLimit)";
    report(*quotas_.at({row.group, row.pool}), rule::kBurstHeadroomLendable, "spec.lendingLimit",
           "the group's services on pool " + row.pool + " keep " + str(kept) + " GPUs for their floors and burst headroom (" +
               parts + ", minReplicas x gpuPerReplica + burstHeadroom), but the quota " + lends +
               ": a borrower may hold the headroom when a burst comes, and reclaim gives it the grace period first; set "
               "lendingLimit to at most " + str(std::max<Gpus>(0, row.guaranteed - kept)),
           Severity::Warning);
  }

  void pool_row(const Pool& pool) {
    PoolCapacity row;
    row.pool = pool.name;
    row.capacity = pool.capacity;
    row.guaranteed = guaranteed_[pool.name];
    row.cohort_quota = cohort_own(pool);
    std::map<std::string, Gpus> claims;  // by group: what its guarantee or its services take back
    for (const auto& [key, o] : quotas_) {
      if (key.second == pool.name) claims[key.first] = o->as<GPUQuotaPolicySpec>().guaranteed;
    }
    std::map<std::string, Gpus> services_required;
    for (const Service* s : by_pool_[pool.name]) {
      row.inference_required += s->required();
      services_required[s->spec->business_group] += s->required();
    }
    Gpus claimed = 0;
    for (auto& [group, claim] : claims) {
      claim = std::max(claim, services_required[group]);
      claimed += claim;
    }
    row.lendable_to_non_preemptible = std::max<Gpus>(0, row.guaranteed + cohort_own(pool) - claimed);

    // Groups that may run training no one can preempt, and what they may borrow here.
    const PriorityRule* rule_used = nullptr;
    std::size_t rule_index = 0;
    std::string borrowers;
    for (const auto& [key, o] : quotas_) {
      if (key.second != pool.name) continue;
      for (std::size_t k = 0; k < g_->priorities.size(); ++k) {
        const PriorityRule& r = g_->priorities[k];
        if (r.preemptible || !allows_training(r, key.first)) continue;
        const auto& q = o->as<GPUQuotaPolicySpec>();
        const Gpus borrow = std::min(std::max<Gpus>(0, others_lendable(key.first, pool)),
                                     std::max<Gpus>(0, q.effective_max_capacity() - q.guaranteed));
        row.non_preemptible_borrow += borrow;
        borrowers += (borrowers.empty() ? "" : ", ") + key.first + " " + str(borrow);
        if (rule_used == nullptr) {
          rule_used = &r;
          rule_index = k;
        }
        break;
      }
    }
    row.non_preemptible_borrow = std::min<Gpus>(row.non_preemptible_borrow, pool.capacity);
    for (auto& s : out_.services) {
      if (s.pool == pool.name) s.lendable_to_non_preemptible = row.lendable_to_non_preemptible;
    }
    if (rule_used != nullptr && row.non_preemptible_borrow > row.lendable_to_non_preemptible) {
      std::string claim_text;
      for (const auto& [group, claim] : claims) {
        if (claim > 0) claim_text += (claim_text.empty() ? "" : ", ") + group + " " + str(claim);
      }
      report(*set_.guardrails(), rule::kNonPreemptibleBorrowExceedsSpare, idx("spec.priorities", rule_index) + ".preemptible",
             "priority class " + rule_used->name + " cannot be preempted, and groups allowed it for training may borrow " +
                 str(row.non_preemptible_borrow) + " GPUs on pool " + pool.name + " (" + borrowers +
                 ") that reclaim could never take back, but only " + str(row.lendable_to_non_preemptible) +
                 " of the pool's queued GPUs are claimed by no guarantee or inference service at maxReplicas (claims: " +
                 claim_text + ")");
    }
    out_.pools.push_back(std::move(row));
  }

  // ---- tidal windows ----------------------------------------------------------------

  // A window's floor span, the start moved by prewarmBefore, as a schedule id: windows
  // with one time zone and the same two expressions share one interval search.
  int schedule_id(const PolicyObject& t, std::size_t i) {
    auto [it, fresh] = window_ids_.try_emplace({&t, i}, 0);
    if (!fresh) return it->second;
    const auto& spec = t.as<TidalPolicySpec>();
    const TidalWindow& w = spec.windows[i];
    const auto start_text = prewarm_start(w, policy::effective_prewarm_before(set_, spec, w));
    const std::string start = start_text ? *start_text : w.start.text();
    auto [id, added] = schedule_ids_.try_emplace(spec.timezone.name + "|" + start + "|" + w.end.text(),
                                                 static_cast<int>(intervals_.size()));
    it->second = id->second;
    if (!added) return it->second;
    // When the floor is in force: from its prewarm start to its end, over the validation
    // horizon (KEDA's cron scaler semantics, policy/tidal_windows.hpp).
    auto& intervals = intervals_.emplace_back();
    const auto schedule = CronSchedule::parse(start);
    if (!schedule || spec.timezone.zone == nullptr) return it->second;
    using namespace date;  // NOLINT(google-build-using-namespace): calendar literals
    const auto from = sys_seconds{sys_days{year{policy::kHorizonStartYear} / January / 1}};
    const auto to = sys_seconds{sys_days{year{policy::kHorizonStartYear + policy::kHorizonYears} / January / 1}};
    intervals = policy::active_intervals(policy::WindowSchedule{&*schedule, &w.end}, *spec.timezone.zone, from, to);
    return it->second;
  }

  // Whether two windows' floors are ever in force together (cached: every service of a
  // pool asks about the same pairs).
  bool overlap(const PolicyObject& t, std::size_t i, const PolicyObject& u, std::size_t k) {
    const int a = schedule_id(t, i);
    const int b = schedule_id(u, k);
    auto [it, fresh] = overlaps_.try_emplace(std::minmax(a, b), false);
    if (fresh) it->second = overlap(intervals_[static_cast<std::size_t>(a)], intervals_[static_cast<std::size_t>(b)]);
    return it->second;
  }

  static bool overlap(const std::vector<policy::Interval>& a, const std::vector<policy::Interval>& b) {
    std::size_t i = 0;
    std::size_t j = 0;
    while (i < a.size() && j < b.size()) {
      if (std::max(a[i].begin, b[j].begin) < std::min(a[i].end, b[j].end)) return true;
      (a[i].end <= b[j].end ? i : j)++;
    }
    return false;
  }

  // The floor another tidal policy keeps for `s` at some moment `t`'s window i is in force.
  int floor_during(const Service& s, const PolicyObject& t, std::size_t i) {
    int floor = s.spec->min_replicas;
    for (const auto& [other, k] : s.windows) {
      if (other == &t) continue;
      if (overlap(t, i, *other, k)) {
        const auto& w = other->as<TidalPolicySpec>().windows[k];
        floor = std::max(floor, w.inference_replica_floor->for_policy(s.object->name()).value_or(0));
      }
    }
    return floor;
  }

  void check_tidal(const PolicyObject& o) {
    const auto& t = o.as<TidalPolicySpec>();
    for (std::size_t i = 0; i < t.windows.size(); ++i) {
      if (auto start = prewarm_start(t.windows[i], policy::effective_prewarm_before(set_, t, t.windows[i])); !start) {
        report(o, rule::kPrewarmNotExpressible, idx("spec.windows", i) + ".prewarmBefore",
               start.error() + "; the cron trigger starts at the window's start instead, so the floor's replicas " +
                   "are still loading then",
               Severity::Warning);
      }
    }
    const Pool* pool = g_->find_pool(t.targets.resource_pool);
    if (pool == nullptr) return;
    // Training's side: what its groups hold of their own and may borrow.
    Gpus held = 0;
    Gpus caps = 0;
    for (const auto& group : t.targets.training_groups) {
      if (const auto* q = quota(group, pool->name); q != nullptr) {
        held += q->guaranteed;
        caps += q->effective_max_capacity() - q->guaranteed;
      }
    }
    Gpus queues_lend = cohort_own(*pool);
    for (const auto& [key, q] : quotas_) {
      if (key.second == pool->name && !contains(t.targets.training_groups, key.first)) {
        queues_lend += lendable(q->as<GPUQuotaPolicySpec>());
      }
    }
    for (std::size_t i = 0; i < t.windows.size(); ++i) {
      const TidalWindow& w = t.windows[i];
      if (!w.inference_replica_floor && !w.training_borrow_limit) continue;
      const Gpus no_limit = std::numeric_limits<Gpus>::max();
      const Gpus lent =
          std::max<Gpus>(0, std::min({w.training_borrow_limit ? Gpus{*w.training_borrow_limit} : no_limit, caps, queues_lend}));
      const Gpus unlent = pool->capacity - held - lent;
      Gpus needed = 0;
      std::string parts;
      for (const Service* s : by_pool_[pool->name]) {
        int floor = s->spec->min_replicas;
        if (contains(t.targets.inference_policies, s->object->name())) {
          const auto f = w.inference_replica_floor ? w.inference_replica_floor->for_policy(s->object->name()) : std::nullopt;
          floor = std::max(floor, f.value_or(0));
        } else {
          floor = floor_during(*s, o, i);
        }
        if (floor == 0) continue;
        needed += Gpus{floor} * s->gpr();
        parts += (parts.empty() ? "" : ", ") + s->object->name() + " " + str(floor) + " x " + str(s->gpr());
      }
      if (needed <= unlent) continue;
      const std::string base = idx("spec.windows", i);
      report(o, rule::kTidalFloorExceedsUnlent,
             base + (w.inference_replica_floor ? ".inferenceReplicaFloor" : ".trainingBorrowLimit"),
             "window \"" + w.name + "\" (\"" + w.start.text() + "\" to \"" + w.end.text() + "\", " + t.timezone.name +
                 ") keeps " + str(needed) + " GPUs serving on pool " + pool->name + " (" + parts +
                 "), but training may hold " + str(held + lent) + " of its " + str(pool->capacity) + " GPUs then (" +
                 str(held) + " guaranteed to the training groups, " + str(lent) + " borrowed: the least of " +
                 (w.training_borrow_limit ? "trainingBorrowLimit " + str(*w.training_borrow_limit) + ", " : "") +
                 "their borrowing caps " + str(caps) + " and what the other queues lend " + str(queues_lend) +
                 "), leaving " + str(unlent) + " not lent out");
    }
  }

  const policy::PolicySet& set_;
  const policy::PlatformGuardrailsSpec* g_;
  ConsistencyReport out_;
  std::map<std::pair<std::string, std::string>, const PolicyObject*> quotas_;  // (group, pool)
  std::map<std::string, Gpus> guaranteed_;    // by pool
  std::map<std::string, Gpus> lendable_sum_;  // by pool
  std::vector<Service> services_;
  std::map<std::string, std::vector<Service*>> by_pool_;
  std::map<std::string, std::vector<int>> free_after_floors_;
  std::map<const Service*, Gpus> floors_placed_;
  std::map<std::pair<const PolicyObject*, std::size_t>, int> window_ids_;
  std::map<std::string, int> schedule_ids_;                   // "zone|start|end"
  std::deque<std::vector<policy::Interval>> intervals_;       // by schedule id
  std::map<std::pair<int, int>, bool> overlaps_;
  std::map<std::string, std::pair<Ranked, Ranked>> training_top_;  // by pool
};

// ---- output -------------------------------------------------------------------------

std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.size()));
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string shape_text(const ServiceCapacity& s) {
  return "TP" + str(s.tensor_parallel) + " " + str(s.gpu_per_replica) + "/replica" +
         (s.nodes_per_replica > 1 ? " on " + str(s.nodes_per_replica) + " nodes" : "");
}

}  // namespace

Json ConsistencyReport::to_json() const {
  Json out = Json::object();
  Json& svc = out["services"] = Json::array();
  for (const auto& s : services) {
    Json j = Json::object();
    j["policy"] = s.policy;
    j["workload"] = s.workload;
    j["businessGroup"] = s.group;
    j["resourcePool"] = s.pool;
    j["replicaShape"] = Json{{"tensorParallelSize", s.tensor_parallel},
                             {"gpuPerReplica", s.gpu_per_replica},
                             {"nodesPerReplica", s.nodes_per_replica}};
    j["minReplicas"] = s.min_replicas;
    j["maxReplicas"] = s.max_replicas;
    j["requiredGPUs"] = s.required;
    j["peakFloorGPUs"] = s.peak_floor;
    j["quotaMaxCapacity"] = s.quota_max_capacity;
    j["guardrailMaxCapacity"] = s.guardrail_max_capacity;
    j["queueAllows"] = s.queue_allows;
    j["poolAllows"] = s.pool_allows;
    j["autoscalerAllows"] = s.autoscaler_allows ? Json(*s.autoscaler_allows) : Json();
    j["burstHeadroom"] = s.burst_headroom;
    j["lendableToNonPreemptible"] = s.lendable_to_non_preemptible;
    svc.push_back(std::move(j));
  }
  Json& grp = out["groups"] = Json::array();
  for (const auto& g : groups) {
    grp.push_back(Json{{"businessGroup", g.group},
                       {"resourcePool", g.pool},
                       {"clusterQueue", g.queue},
                       {"guaranteed", g.guaranteed},
                       {"borrowCap", g.borrow_cap},
                       {"maxCapacity", g.max_capacity},
                       {"lendingFloor", g.lending_floor},
                       {"lendable", g.lendable},
                       {"queueReach", g.queue_reach},
                       {"services", g.services},
                       {"servicesRequiredGPUs", g.services_required},
                       {"servicesFloorGPUs", g.services_floor}});
  }
  Json& pls = out["pools"] = Json::array();
  for (const auto& p : pools) {
    pls.push_back(Json{{"resourcePool", p.pool},
                       {"capacity", p.capacity},
                       {"guaranteed", p.guaranteed},
                       {"cohortQuota", p.cohort_quota},
                       {"inferenceRequiredGPUs", p.inference_required},
                       {"lendableToNonPreemptible", p.lendable_to_non_preemptible},
                       {"nonPreemptibleBorrow", p.non_preemptible_borrow}});
  }
  Json& diags = out["diagnostics"] = Json::array();
  int errors = 0;
  for (const auto& d : diagnostics) {
    errors += d.severity == Severity::Error ? 1 : 0;
    diags.push_back(policy::finding_json(d));
  }
  out["errors"] = errors;
  out["warnings"] = static_cast<int>(diagnostics.size()) - errors;
  return out;
}

std::string ConsistencyReport::to_text() const {
  std::vector<std::vector<std::string>> s{{"SERVICE", "POLICY", "GROUP", "POOL", "SHAPE", "REPLICAS", "NEEDS", "QUOTA-MAX",
                                           "QUEUE", "POOL-FITS", "AUTOSCALER", "PEAK-FLOOR", "HEADROOM", "LENDABLE-NP"}};
  for (const auto& r : services) {
    s.push_back({r.workload, r.policy, r.group, r.pool, shape_text(r), str(r.min_replicas) + ".." + str(r.max_replicas),
                 str(r.required), str(r.quota_max_capacity), str(r.queue_allows), str(r.pool_allows),
                 r.autoscaler_allows ? str(*r.autoscaler_allows) : "-", str(r.peak_floor), str(r.burst_headroom),
                 str(r.lendable_to_non_preemptible)});
  }
  std::vector<std::vector<std::string>> g{{"QUEUE", "GUARANTEED", "BORROW-CAP", "MAX", "LENDING-FLOOR", "LENDABLE",
                                           "REACH", "SERVICES", "SERVICES-NEED", "SERVICES-FLOOR"}};
  for (const auto& r : groups) {
    g.push_back({r.queue, str(r.guaranteed), str(r.borrow_cap), str(r.max_capacity), str(r.lending_floor),
                 str(r.lendable), str(r.queue_reach), str(r.services), str(r.services_required), str(r.services_floor)});
  }
  std::vector<std::vector<std::string>> p{{"POOL", "CAPACITY", "GUARANTEED", "COHORT", "INFERENCE-NEED",
                                           "LENDABLE-NP", "NON-PREEMPTIBLE-BORROW"}};
  for (const auto& r : pools) {
    p.push_back({r.pool, str(r.capacity), str(r.guaranteed), str(r.cohort_quota), str(r.inference_required),
                 str(r.lendable_to_non_preemptible), str(r.non_preemptible_borrow)});
  }
  std::string out = "Inference services (GPUs)\n" + table(s) + "\nQueues: group x pool (GPUs)\n" + table(g) +
                    "\nPools (GPUs)\n" + table(p);
  int errors = 0;
  if (!diagnostics.empty()) out += "\n";
  for (const auto& d : diagnostics) {
    errors += d.severity == Severity::Error ? 1 : 0;
    out += d.to_string() + "\n";
  }
  out += "\n" + str(errors) + " conflicts, " + str(static_cast<int>(diagnostics.size()) - errors) + " warnings\n";
  return out;
}

ConsistencyReport check_consistency(const policy::PolicySet& set) {
  return Checker(set).run();
}

}  // namespace gpubank::render
