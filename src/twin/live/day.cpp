#include "twin/live/day.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <date/tz.h>

#include "core/fnv1a.hpp"

namespace gpubank::twin::live {

std::uint64_t SeededRandom::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double SeededRandom::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::int64_t SeededRandom::between(std::int64_t lo, std::int64_t hi) {
  if (hi <= lo) return lo;
  const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
  return lo + static_cast<std::int64_t>(next() % span);
}

double SeededRandom::exponential(double mean) { return -mean * std::log1p(-uniform()); }


namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::sys_seconds;
constexpr std::int64_t kMinute = 60'000;
constexpr std::int64_t kHour = 60 * kMinute;

// The priority class for a workload type and group: the highest or the lowest value the
// guardrails allow; empty when none does (the workload then has none).

std::string namespace_for(const policy::Group& group, bool training) {
  const auto namespaces = group.effective_namespaces();
  if (training) {
    for (const auto& ns : namespaces) {
      if (ns.find("training") != std::string::npos) return ns;
    }
  }
  return namespaces.front();
}

// Milliseconds after `start` of the local wall time `hour`:00 on the start's local day.
std::int64_t local_hour(const Timestamp& start, const date::time_zone& zone, int hour) {
  const auto start_s = std::chrono::floor<std::chrono::seconds>(start);
  const auto local = zone.to_local(start_s);
  const auto midnight = std::chrono::floor<date::days>(local);
  const auto at = zone.to_sys(midnight + std::chrono::hours(hour), date::choose::earliest);
  return duration_cast<milliseconds>(at - start).count();
}

struct Builder {
  const policy::PlatformGuardrailsSpec& guardrails;
  const DayOptions& options;
  std::int64_t horizon = 0;
  run::Scenario scenario;
  std::map<std::string, int> counters;

  std::string name(const std::string& prefix) { return prefix + "-" + std::to_string(++counters[prefix]); }

  run::ScenarioWorkload base(const policy::Group& group, const std::string& pool, policy::WorkloadType type) {
    run::ScenarioWorkload w;
    w.business_group = group.name;
    w.resource_pool = pool;
    w.workload_type = type;
    w.namespace_ = namespace_for(group, type == policy::WorkloadType::Training || type == policy::WorkloadType::Batch);
    return w;
  }

  void training(SeededRandom& rng, const policy::Group& group, const std::string& pool, std::int64_t from,
                std::int64_t to, double gpus_on_average, int gpus_per_pod) {
    // Little's law: arrivals per ms = demand / (GPUs per job x hours per job).
    const double mean_gpus = 1.5 * gpus_per_pod;  // 1 or 2 pods, equally likely
    const double mean_hours = 3.5;                // uniform over 1-6 h
    const double per_ms = gpus_on_average / (mean_gpus * mean_hours * static_cast<double>(kHour));
    if (per_ms <= 0) return;
    for (double t = static_cast<double>(from) + rng.exponential(1.0 / per_ms); t < static_cast<double>(to);
         t += rng.exponential(1.0 / per_ms)) {
      auto w = base(group, pool, policy::WorkloadType::Training);
      w.name = name(group.name + "-train");
      w.gpus = gpus_per_pod;
      w.pods = rng.uniform() < 0.5 ? 1 : 2;
      w.checkpointable = true;
      w.checkpoint_interval = Duration(std::chrono::minutes(30));
      w.checkpoint_duration = Duration(std::chrono::minutes(rng.between(1, 3)));
      w.arrival_time = Duration(milliseconds(static_cast<std::int64_t>(t)));
      w.run_time = Duration(milliseconds(rng.between(1 * kHour, 6 * kHour)));
      w.startup_time = Duration(std::chrono::minutes(1));
      w.priority_class = pick_priority(guardrails, w.workload_type, group.name, rng.uniform() < 0.3);
      w.labels = {{"app", w.name}, {"gpubank.dev/generator", "day"}};
      scenario.workloads.push_back(std::move(w));
    }
  }

  void batch(SeededRandom& rng, const policy::Group& group, const std::string& pool, double gpus_on_average) {
    const double per_ms = gpus_on_average / (2.5 * (50.0 / 60.0) * static_cast<double>(kHour));
    if (per_ms <= 0) return;
    for (double t = rng.exponential(1.0 / per_ms); t < static_cast<double>(horizon); t += rng.exponential(1.0 / per_ms)) {
      auto w = base(group, pool, policy::WorkloadType::Batch);
      w.name = name(group.name + "-batch");
      w.gpus = rng.between(1, 4);
      w.arrival_time = Duration(milliseconds(static_cast<std::int64_t>(t)));
      w.run_time = Duration(milliseconds(rng.between(10 * kMinute, 90 * kMinute)));
      w.priority_class = pick_priority(guardrails, w.workload_type, group.name, false);
      w.labels = {{"app", w.name}, {"gpubank.dev/generator", "day"}};
      scenario.workloads.push_back(std::move(w));
    }
  }
};

// The windows of a tidal policy that overlap [0, horizon), as [start, end) in ms from start.
struct WindowSpan {
  const policy::TidalWindow* window = nullptr;
  std::int64_t start = 0, end = 0;
};

std::vector<WindowSpan> window_spans(const policy::TidalPolicySpec& tidal, const Timestamp& start, std::int64_t horizon) {
  std::vector<WindowSpan> out;
  if (tidal.timezone.zone == nullptr) return out;
  const auto t0 = std::chrono::floor<std::chrono::seconds>(start);
  const auto to_ms = [&](sys_seconds s) { return duration_cast<milliseconds>(s - start).count(); };
  for (const auto& w : tidal.windows) {
    // From a week back, so a window already open at virtual time 0 is found too.
    auto from = t0 - std::chrono::hours(24 * 7);
    for (int guard = 0; guard < 1000; ++guard) {
      const auto s = w.start.next(from, *tidal.timezone.zone);
      if (!s || to_ms(*s) >= horizon) break;
      const auto e = w.end.next(*s, *tidal.timezone.zone);
      const std::int64_t end = e ? to_ms(*e) : horizon;
      if (end > 0) out.push_back(WindowSpan{&w, to_ms(*s), end});
      from = *s;
    }
  }
  std::sort(out.begin(), out.end(), [](const WindowSpan& a, const WindowSpan& b) { return a.start < b.start; });
  return out;
}

}  // namespace

run::Scenario make_day(const policy::PolicySet& policies, const DayOptions& options, Diagnostics& diagnostics) {
  const policy::PlatformGuardrailsSpec* guardrails = policies.guardrails_spec();
  if (guardrails == nullptr) {
    diagnostics.push_back(Diagnostic{Severity::Error, "up.policies", {}, {}, {}, {}, "",
                                     "the policies hold no PlatformGuardrails: pools and groups are unknown"});
    return {};
  }
  Builder b{*guardrails, options, options.hours * kHour, {}, {}};
  b.scenario.start = options.start;
  SeededRandom rng(options.seed);

  const policy::TidalPolicySpec* tidal = nullptr;
  for (const auto& p : policies.policies()) {
    if (p.kind == policy::Kind::TidalPolicy) tidal = &p.as<policy::TidalPolicySpec>();
  }
  const date::time_zone* zone = tidal != nullptr && tidal->timezone.zone != nullptr ? tidal->timezone.zone
                                                                                     : date::locate_zone("Etc/UTC");
  const auto spans = tidal != nullptr ? window_spans(*tidal, options.start, b.horizon) : std::vector<WindowSpan>{};

  for (const auto& p : policies.policies()) {
    if (p.kind != policy::Kind::GPUQuotaPolicy) continue;
    const auto& q = p.as<policy::GPUQuotaPolicySpec>();
    const policy::Pool* pool = guardrails->find_pool(q.resource_pool);
    const policy::Group* group = guardrails->find_group(q.business_group);
    if (pool == nullptr || group == nullptr) continue;
    // Each queue draws from its own stream, so adding a policy does not reshuffle the others.
    SeededRandom own(rng.next() ^ fnv1a64(p.name()));
    const int per_node = pool->gpus_per_node.value_or(8);
    if (pool->role == policy::PoolRole::Training || pool->role == policy::PoolRole::Batch) {
      const double demand = options.load * std::max(q.guaranteed, 8);
      b.training(own, *group, pool->name, 0, b.horizon, demand, std::min(per_node, 8));
      b.batch(own, *group, pool->name, demand / 4);
    } else if (pool->role == policy::PoolRole::Development) {
      for (int i = 0; i < q.guaranteed / 2; ++i) {
        auto w = b.base(*group, pool->name, policy::WorkloadType::Notebook);
        w.name = b.name(group->name + "-notebook");
        w.gpus = 1;
        w.arrival_time = Duration(milliseconds(std::max<std::int64_t>(
            0, local_hour(options.start, *zone, 9) + own.between(0, 2 * kHour))));
        w.run_time = Duration(milliseconds(own.between(4 * kHour, 8 * kHour)));
        w.priority_class = pick_priority(*guardrails, w.workload_type, group->name, false);
        w.labels = {{"app", w.name}, {"gpubank.dev/generator", "day"}};
        if (w.arrival_time.milliseconds() < b.horizon) b.scenario.workloads.push_back(std::move(w));
      }
    } else if (tidal != nullptr && q.guaranteed == 0 && pool->name == tidal->targets.resource_pool &&
               std::find(tidal->targets.training_groups.begin(), tidal->targets.training_groups.end(), group->name) !=
                   tidal->targets.training_groups.end()) {
      // Night training on the serving pool, inside the windows that lend it most.
      int most = 0;
      for (const auto& s : spans) most = std::max(most, s.window->training_borrow_limit.value_or(0));
      for (const auto& s : spans) {
        if (s.window->training_borrow_limit.value_or(0) != most || most < per_node) continue;
        // Arrivals until an hour before the window ends: jobs run into the morning and
        // are the borrowers the next window's reclaim notifies.
        const std::int64_t until = std::min(b.horizon, s.end - kHour);
        b.training(own, *group, pool->name, std::max<std::int64_t>(0, s.start), until,
                   static_cast<double>(*s.window->training_borrow_limit) / 3.0, std::min(per_node, 8));
      }
    }
  }

  for (const auto& p : policies.policies()) {
    if (options.serving_control != DayOptions::ServingControl::Planned) break;
    if (p.kind != policy::Kind::InferenceScalingPolicy) continue;
    const auto& inf = p.as<policy::InferenceScalingPolicySpec>();
    const policy::Group* group = guardrails->find_group(inf.business_group);
    if (group == nullptr) continue;
    auto replica = [&](int index, std::int64_t from, std::optional<std::int64_t> to) {
      auto w = b.base(*group, inf.resource_pool, policy::WorkloadType::Inference);
      w.name = p.name() + "-r" + std::to_string(index) + "-" + std::to_string(++b.counters[p.name() + std::to_string(index)]);
      w.namespace_ = inf.workload_ref.namespace_.empty() ? w.namespace_ : inf.workload_ref.namespace_;
      w.gpus = inf.replica_shape.gpu_per_replica;
      w.arrival_time = Duration(milliseconds(std::max<std::int64_t>(0, from)));
      w.run_time = Duration(milliseconds(b.horizon));
      w.startup_time = inf.model_load_time;
      if (to && *to < b.horizon) w.delete_time = Duration(milliseconds(*to));
      w.priority_class = pick_priority(*guardrails, w.workload_type, group->name, true);
      w.labels = {{"app", inf.workload_ref.name}, {"gpubank.dev/replica", std::to_string(index)},
                  {"gpubank.dev/generator", "day"}};
      b.scenario.workloads.push_back(std::move(w));
    };
    for (int i = 1; i <= inf.min_replicas; ++i) replica(i, 0, std::nullopt);
    const bool targeted = tidal != nullptr && std::find(tidal->targets.inference_policies.begin(),
                                                        tidal->targets.inference_policies.end(),
                                                        p.name()) != tidal->targets.inference_policies.end();
    if (!targeted) continue;
    for (const auto& s : spans) {
      if (!s.window->inference_replica_floor) continue;
      const auto floor = s.window->inference_replica_floor->for_policy(p.name());
      if (!floor) continue;
      const std::int64_t prewarm = s.window->prewarm_before ? s.window->prewarm_before->milliseconds() : 0;
      for (int i = inf.min_replicas + 1; i <= std::min(*floor, inf.max_replicas); ++i) replica(i, s.start - prewarm, s.end);
    }
  }
  std::stable_sort(b.scenario.workloads.begin(), b.scenario.workloads.end(),
                   [](const run::ScenarioWorkload& x, const run::ScenarioWorkload& y) {
                     if (x.arrival_time != y.arrival_time) return x.arrival_time < y.arrival_time;
                     return x.name < y.name;
                   });
  return std::move(b.scenario);
}

std::string pick_priority(const policy::PlatformGuardrailsSpec& g, policy::WorkloadType type, const std::string& group,
                          bool highest) {
  const policy::PriorityRule* best = nullptr;
  for (const auto& p : g.priorities) {
    const bool type_ok = p.workload_types.empty() ||
                         std::find(p.workload_types.begin(), p.workload_types.end(), type) != p.workload_types.end();
    const bool group_ok = p.groups.empty() || std::find(p.groups.begin(), p.groups.end(), group) != p.groups.end();
    if (!type_ok || !group_ok) continue;
    if (best == nullptr || (highest ? p.value > best->value : p.value < best->value)) best = &p;
  }
  return best != nullptr ? best->name : std::string();
}

std::string_view to_string(DayOptions::ServingControl control) {
  switch (control) {
    case DayOptions::ServingControl::Autoscaler: return "autoscaler";
    case DayOptions::ServingControl::Planned: return "planned";
    case DayOptions::ServingControl::Static: return "static";
    case DayOptions::ServingControl::HpaGpuUtilization: return "hpa-gpu-utilization";
    case DayOptions::ServingControl::Keda: return "keda";
  }
  return "autoscaler";
}

std::optional<DayOptions::ServingControl> serving_control_from(std::string_view name) {
  for (auto c : {DayOptions::ServingControl::Autoscaler, DayOptions::ServingControl::Planned,
                 DayOptions::ServingControl::Static, DayOptions::ServingControl::HpaGpuUtilization,
                 DayOptions::ServingControl::Keda}) {
    if (to_string(c) == name) return c;
  }
  return std::nullopt;
}

}  // namespace gpubank::twin::live
