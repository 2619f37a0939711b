#include "twin/live/platform.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "attribution/labels.hpp"
#include "bank/position_views.hpp"
#include "core/fnv1a.hpp"
#include "metrics/exposition.hpp"
#include "metrics/registry.hpp"
#include "policy/schema.hpp"
#include "twin/run/metrics.hpp"
#include "twin/run/summary.hpp"
#include "twin/telemetry/dcgm.hpp"
#include "twin/telemetry/profile.hpp"
#include "twin/trace/azure_llm.hpp"

namespace gpubank::twin::live {

namespace {

template <class E>
std::string enum_name(E value) {
  for (const auto& [v, name] : doc::EnumNames<E>::values) {
    if (v == value) return std::string(name);
  }
  return {};
}

std::string rfc3339(const Timestamp& start, VirtualTime t) {
  return format_rfc3339(start + std::chrono::milliseconds(t));
}

// A page of an append-only log whose entry i has seq i + 1.
template <class T, class Keep, class ToJson>
Json page_of(std::span<const T> items, const Page& page, Keep keep, ToJson to_json) {
  Json list = Json::array();
  std::int64_t last = page.after;
  std::int64_t matched = 0;
  bool more = false;
  for (std::size_t i = static_cast<std::size_t>(std::max<std::int64_t>(0, page.after)); i < items.size(); ++i) {
    if (!keep(items[i])) continue;
    if (matched == page.limit) {
      more = true;
      break;
    }
    Json j = to_json(items[i]);
    j["seq"] = static_cast<std::int64_t>(i) + 1;
    list.push_back(std::move(j));
    last = static_cast<std::int64_t>(i) + 1;
    ++matched;
  }
  Json out = Json::object();
  out["items"] = std::move(list);
  out["next"] = last;  // pass as `after` for the next page
  out["more"] = more;
  return out;
}

}  // namespace

Platform::Platform(policy::PolicySet policies, DayOptions day, run::Scenario scenario, run::RunOptions options)
    : policies_(std::move(policies)),
      day_(day),
      scenario_(std::move(scenario)),
      simulation_(policies_, scenario_, [&] {
        options.until = day.hours * 3'600'000;
        options.retain = true;  // the views page through the whole run
        // The engine hands an instant's events over (on_event) only after on_instant has
        // persisted its entries (run::RunOptions::on_event), so every event handed over is
        // committed; an instant whose entries could not be persisted hands over none. (The
        // count used to wait for an event of a later instant, which hid the last events of
        // a persisted instant, e.g. a serving controller's record, when the next persist
        // failed.)
        options.on_event = [this](const run::Event&) {
          if (persist_failed_) return;
          committed_events_ = ++handed_events_;
        };
        options.on_instant = [this, persist = std::move(options.on_instant)](
                                 std::span<const bank::LedgerEntry> ledger,
                                 std::span<const bank::AuditEntry> audit) -> Expected<bool> {
          if (persist_failed_) return Unexpected{persist_error_};
          if (persist) {
            if (auto done = persist(ledger, audit); !done) {
              persist_failed_ = true;
              persist_error_ = "the run stopped: its entries could not be persisted: " + done.error();
              return done;
            }
          }
          committed_ledger_ = simulation_.result().ledger.size();
          committed_audit_ = simulation_.result().audit.size();
          return true;
        };
        // The platform runs Kueue as gpubank renders it: an admitted gang that cannot be
        // placed gives its quota back (run/pods_ready.hpp).
        if (!options.wait_for_pods_ready) options.wait_for_pods_ready = run::rendered_wait_for_pods_ready(policies_);
        return options;
      }()),
      end_(day.hours * 3'600'000) {}

Expected<std::unique_ptr<Platform>> Platform::create(policy::PolicySet policies, const DayOptions& day,
                                                     run::RunOptions options) {
  if (options.on_event) {
    return Unexpected{std::string("RunOptions::on_event is the platform's own: read Platform::events()")};
  }
  if (!(day.serving_load > 0 && day.serving_load <= 10)) {
    return Unexpected{"serving load must be in (0, 10], got " + std::to_string(day.serving_load)};
  }
  Diagnostics diagnostics;
  run::Scenario scenario = make_day(day.work_from ? *day.work_from : policies, day, diagnostics);
  if (has_errors(diagnostics)) return Unexpected{diagnostics.front().to_string()};
  std::optional<std::vector<trace::AzureRequest>> llm_trace;
  if (!day.llm_trace.empty()) {
    std::ifstream in(day.llm_trace, std::ios::binary);
    if (!in) return Unexpected{"cannot read the LLM trace " + day.llm_trace};
    std::stringstream text;
    text << in.rdbuf();
    llm_trace = trace::read_azure_llm(text.str(), day.llm_trace, diagnostics);
    if (!llm_trace || has_errors(diagnostics)) {
      return Unexpected{diagnostics.empty() ? "cannot read the LLM trace " + day.llm_trace
                                            : diagnostics.front().to_string()};
    }
  }
  const bool placement = options.inventory != nullptr;
  std::unique_ptr<Platform> p(new Platform(std::move(policies), day, std::move(scenario), std::move(options)));
  if (!p->simulation_.start()) return Unexpected{p->error()};
  auto serving = Serving::create(p->policies_, p->scenario_, p->day_, llm_trace ? &*llm_trace : nullptr, placement);
  if (!serving) return Unexpected{serving.error()};
  p->serving_ = std::move(*serving);
  auto control = ElasticControl::create(p->policies_, p->day_, *p->serving_, p->simulation_);
  if (!control) return Unexpected{control.error()};
  p->control_ = std::move(*control);
  const auto queues = p->simulation_.queues();
  auto queue_metrics = QueueMetrics::create(p->scenario_, queues);
  if (!queue_metrics) return Unexpected{queue_metrics.error()};
  p->queue_metrics_ = std::move(*queue_metrics);
  if (day.governance) p->governance_ = std::make_unique<TwinGovernance>(p->policies_);
  if (!p->follow_run()) return Unexpected{p->error()};
  if (!p->control_step()) return Unexpected{p->error()};
  p->observe_governance();
  return p;
}

std::span<const run::Event> Platform::events() const {
  const std::span<const run::Event> all = simulation_.result().events;
  return persist_failed_ ? all.first(std::min(committed_events_, all.size())) : all;
}

std::span<const bank::LedgerEntry> Platform::ledger() const {
  const std::span<const bank::LedgerEntry> all = simulation_.result().ledger;
  return persist_failed_ ? all.first(std::min(committed_ledger_, all.size())) : all;
}

std::span<const bank::AuditEntry> Platform::audit() const {
  const std::span<const bank::AuditEntry> all = simulation_.result().audit;
  return persist_failed_ ? all.first(std::min(committed_audit_, all.size())) : all;
}

bool Platform::follow_run() {
  // Only what was persisted: the services and Kueue's counters never run ahead of the store.
  const auto events = this->events();
  if (!serving_->advance_to(events, now())) {
    serving_error_ = "the inference services could not follow the run to " + std::to_string(now()) + " ms";
    return false;
  }
  if (auto s = queue_metrics_->follow(events); !s) {
    serving_error_ = s.error();
    return false;
  }
  return true;
}

bool Platform::control_step() {
  if (auto stepped = control_->step(now()); !stepped) {
    serving_error_ = "the serving controllers stopped at " + std::to_string(now()) + " ms: " + stepped.error();
    return false;
  }
  return follow_run();  // the services see the replicas the step removed or drained
}

bool Platform::advance_to(VirtualTime t) {
  if (!serving_error_.empty() || persist_failed_) return false;
  t = std::min(t, end_);
  // Interventions an earlier start journalled, each at its virtual time as the live run
  // applied it: after the run (and the controllers) reached that time.
  while (next_scheduled_ < scheduled_.size() && scheduled_[next_scheduled_].t <= t) {
    const Intervention& i = scheduled_[next_scheduled_++];
    if (i.t > now() && !advance_plain(i.t)) return false;
    if (auto done = apply(i); !done) {
      if (persist_failed_ || !serving_error_.empty()) return false;
      ++scheduled_refused_;  // refused now as it was then: it changed nothing
    }
  }
  return advance_plain(t);
}

bool Platform::advance_plain(VirtualTime t) {
  if (!serving_error_.empty() || persist_failed_) return false;
  // The controllers act every sync period, and governance records every whole minute: the
  // run and the services go to each of those instants, whatever steps the clock's owner
  // takes (a second at 60x, a minute at max, one jump on a replay), so what is decided and
  // recorded there is the same however the run is paced.
  for (;;) {
    const VirtualTime step = control_->next_step();
    if (const auto minute = governance_minute_due(); minute && *minute < std::min(step, t)) {
      if (!simulation_.advance_to(*minute) || !follow_run()) return false;
      observe_governance();
      if (governance_minute_due() == minute) break;  // the run could not reach it: no loop
      continue;
    }
    if (step > t) break;
    if (!simulation_.advance_to(step) || !follow_run()) return false;
    if (!control_step()) return false;
    observe_governance();
  }
  const bool ran = simulation_.advance_to(t);
  if (!follow_run() || !ran) return false;
  observe_governance();
  return true;
}

std::optional<VirtualTime> Platform::governance_minute_due() {
  constexpr std::int64_t kMinuteMs = 60'000;
  if (!governance_ || persist_failed_) return std::nullopt;
  const std::int64_t start_ms = unix_ms(0);
  if (!governance_next_ms_) governance_next_ms_ = (start_ms + kMinuteMs - 1) / kMinuteMs * kMinuteMs;
  return *governance_next_ms_ - start_ms;
}

std::int64_t Platform::unix_ms(VirtualTime t) const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(day_.start.time_since_epoch()).count() + t;
}

std::string Platform::error() const {
  std::string out = serving_error_;
  for (const auto& d : simulation_.result().diagnostics) out += (out.empty() ? "" : "; ") + d.to_string();
  if (persist_failed_ && out.find(persist_error_) == std::string::npos) out += (out.empty() ? "" : "; ") + persist_error_;
  return out;
}

Json Platform::services_json() const {
  Json list = serving_->json();
  const Json control = control_->json();
  for (auto& service : list) {
    for (const auto& c : control) {
      if (c["policy"] == service["policy"]) service["autoscaling"] = c;
    }
  }
  return list;
}

std::optional<Json> Platform::service_capacity_json(const std::string& policy) const {
  auto c = control_->capacity(policy);
  if (!c) return std::nullopt;
  Json j = serving::to_json(*c);
  j["time"] = rfc3339(day_.start, now());
  return j;
}

Json Platform::summary_json() const { return run::summary_json(run::summarize(simulation_.stats())); }
run::RunResult Platform::stats() const { return simulation_.stats(); }

Json Platform::clock_json() const {
  Json j = Json::object();
  j["virtualTimeMs"] = now();
  j["time"] = rfc3339(day_.start, now());
  j["start"] = format_rfc3339(day_.start);
  j["endMs"] = end_;
  j["seed"] = day_.seed;
  j["finished"] = now() >= end_;
  return j;
}

Json Platform::pools_json() const {
  return gpubank::bank::pools_json(policies_.guardrails_spec(), simulation_.positions());
}

Json Platform::groups_json() const {
  return gpubank::bank::groups_json(policies_.guardrails_spec(), simulation_.positions());
}

Json Platform::queues_json() const {
  Json list = Json::array();
  for (const auto& q : simulation_.queues()) {
    Json j = Json::object();
    j["clusterQueue"] = q.cluster_queue;
    j["businessGroup"] = q.business_group;
    j["pool"] = q.pool;
    j["flavor"] = q.flavor;
    j["resource"] = q.resource;
    j["nominalQuota"] = q.nominal;
    j["borrowingLimit"] = q.borrowing_limit ? Json(*q.borrowing_limit) : Json(nullptr);
    j["lendingLimit"] = q.lending_limit ? Json(*q.lending_limit) : Json(nullptr);
    j["used"] = q.used;
    j["pendingWorkloads"] = q.pending;
    j["admittedWorkloads"] = q.admitted;
    list.push_back(std::move(j));
  }
  return list;
}

namespace {
Json workload_view(const run::WorkloadOutcome& w, const run::ScenarioWorkload* spec, const Timestamp& start) {
  Json j = Json::object();
  j["workload"] = w.workload;
  j["businessGroup"] = w.business_group;
  j["pool"] = w.pool;
  j["state"] = w.state;
  j["gpus"] = w.gpus;
  if (spec != nullptr) {
    j["workloadType"] = enum_name(spec->workload_type);
    j["priorityClass"] = spec->priority_class;
    j["arrival"] = rfc3339(start, spec->arrival_time.milliseconds());
  }
  j["firstAdmitted"] = w.first_admitted ? Json(rfc3339(start, *w.first_admitted)) : Json(nullptr);
  j["finished"] = w.finished ? Json(rfc3339(start, *w.finished)) : Json(nullptr);
  j["admissions"] = w.admissions;
  j["stops"] = w.stops;
  j["recomputeLossGpuHours"] = static_cast<double>(w.loss_gpu_ms) / 3.6e6;
  return j;
}
}  // namespace

Json Platform::workloads_json(const WorkloadFilter& filter) const {
  Json list = Json::array();
  const auto all = simulation_.workloads();
  const auto specs = simulation_.workload_specs();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& w = all[i];
    if (w.state == "Waiting") continue;  // not arrived yet: the platform does not know it
    if (!filter.business_group.empty() && w.business_group != filter.business_group) continue;
    if (!filter.pool.empty() && w.pool != filter.pool) continue;
    if (!filter.state.empty() && w.state != filter.state) continue;
    list.push_back(workload_view(w, i < specs.size() ? specs[i] : nullptr, day_.start));
  }
  return list;
}

std::optional<Json> Platform::workload_json(const std::string& key) const {
  const auto all = simulation_.workloads();
  const auto specs = simulation_.workload_specs();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].workload == key && all[i].state != "Waiting") {
      return workload_view(all[i], i < specs.size() ? specs[i] : nullptr, day_.start);
    }
  }
  return std::nullopt;
}

Json Platform::events_json(const EventFilter& f) const {
  return page_of(
      events(), f.page,
      [&](const run::Event& e) {
        return (f.kind.empty() || e.kind == f.kind) && (f.business_group.empty() || e.business_group == f.business_group) &&
               (f.pool.empty() || e.pool == f.pool) && (f.object.empty() || e.object == f.object);
      },
      [&](const run::Event& e) { return run::event_json(e, day_.start); });
}

Json Platform::ledger_json(const Page& page) const {
  return page_of(
      ledger(), page, [](const bank::LedgerEntry&) { return true; },
      [](const bank::LedgerEntry& e) { return Json(bank::to_json(e)); });
}

Json Platform::reclaims_json(std::size_t limit) const {
  std::map<std::string, std::string> group_of;
  for (const run::WorkloadOutcome& w : simulation_.workloads()) group_of[w.workload] = w.business_group;
  auto when = [&](const std::optional<VirtualTime>& t) { return t ? Json(rfc3339(day_.start, *t)) : Json(nullptr); };
  Json out = Json::array();
  const auto& all = simulation_.result().reclaims;
  for (auto it = all.rbegin(); it != all.rend() && out.size() < limit; ++it) {
    const run::ReclaimTimeline& r = *it;
    Json j = Json::object();
    j["id"] = r.id;
    j["lender"] = r.lender;
    j["pool"] = r.pool;
    j["demandGpus"] = r.demand;
    j["started"] = rfc3339(day_.start, r.started);
    j["ended"] = when(r.ended);
    j["result"] = r.result;
    Json victims = Json::array();
    for (const run::VictimTimeline& v : r.victims) {
      Json x = Json::object();
      x["workload"] = v.workload;
      const auto g = group_of.find(v.workload);
      x["businessGroup"] = g == group_of.end() ? std::string() : g->second;
      x["gpus"] = v.gpus;
      x["class"] = v.victim_class;
      x["notice"] = rfc3339(day_.start, v.notice);
      x["checkpointRequested"] = when(v.checkpoint_requested);
      x["checkpointCompleted"] = when(v.checkpoint_completed);
      x["checkpointFailed"] = when(v.checkpoint_failed);
      x["stopped"] = when(v.stopped);
      x["finished"] = when(v.finished);
      x["released"] = when(v.released);
      x["recomputeLossGpuHours"] = static_cast<double>(v.loss_gpu_ms) / 3'600'000.0;
      victims.push_back(std::move(x));
    }
    j["victims"] = std::move(victims);
    out.push_back(std::move(j));
  }
  return out;
}

Json Platform::audit_json(const Page& page) const {
  return page_of(
      audit(), page, [](const bank::AuditEntry&) { return true; },
      [](const bank::AuditEntry& e) { return Json(bank::to_json(e)); });
}

namespace {

// What the platform knows of a workload holding a device.
struct Holder {
  const run::WorkloadOutcome* outcome = nullptr;
  const run::ScenarioWorkload* spec = nullptr;
};

std::map<std::string, Holder> holders(const std::vector<run::WorkloadOutcome>& all,
                                      const std::vector<const run::ScenarioWorkload*>& specs) {
  std::map<std::string, Holder> out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].state == "Starting" || all[i].state == "Running" || all[i].state == "Checkpointing") {
      out[all[i].workload] = Holder{&all[i], i < specs.size() ? specs[i] : nullptr};
    }
  }
  return out;
}

telemetry::Profile profile_of(const Holder& h) {
  if (h.outcome->state == "Starting") return telemetry::Profile::loading;
  if (h.outcome->state == "Checkpointing") return telemetry::Profile::checkpointing;
  if (h.spec == nullptr) return telemetry::Profile::training;
  switch (h.spec->workload_type) {
    case policy::WorkloadType::Training: return telemetry::Profile::training;
    case policy::WorkloadType::Batch: return telemetry::Profile::batch;
    case policy::WorkloadType::Notebook: return telemetry::Profile::notebook;
    case policy::WorkloadType::Inference: return telemetry::Profile::inference;
  }
  return telemetry::Profile::training;
}

// NVML's spelling of the product ("NVIDIA-H100-80GB-HBM3" -> "NVIDIA H100 80GB HBM3").
std::string nvml_name(const cluster::NodeSpec& node) {
  std::string name = node.product.empty() ? "NVIDIA " + node.gpu_model : node.product;
  std::replace(name.begin(), name.end(), '-', ' ');
  return name;
}

Json gpu_view(const cluster::Cluster& c, cluster::GpuId id, const std::map<std::string, Holder>& held) {
  const cluster::Gpu& g = c.gpu(id);
  const cluster::NodeSpec& node = c.node(g.node);
  Json j = Json::object();
  j["uuid"] = g.uuid;
  j["node"] = node.name;
  j["index"] = g.index;
  j["pool"] = std::string(node.pool());
  j["gpuModel"] = node.gpu_model;
  j["product"] = node.product;
  j["healthy"] = g.healthy;
  j["xidErrors"] = g.xid_errors;
  j["lastXid"] = g.last_xid;
  j["eccDoubleBit"] = g.ecc_dbe;
  Json units = Json::array();
  for (int u = 0; u < g.units; ++u) {
    const cluster::Unit& unit = c.unit(g.first_unit + static_cast<cluster::UnitId>(u));
    Json w = Json::array();
    for (const auto& key : c.workloads_on_unit(g.first_unit + static_cast<cluster::UnitId>(u))) {
      const auto it = held.find(key);
      Json x = Json::object();
      x["workload"] = key;
      if (it != held.end()) {
        x["businessGroup"] = it->second.outcome->business_group;
        x["state"] = it->second.outcome->state;
      }
      w.push_back(std::move(x));
    }
    if (node.mig) {
      units.push_back({{"uuid", unit.uuid}, {"slice", unit.slice}, {"profile", node.mig->profile}, {"workloads", w}});
    } else {
      j["usedMilli"] = unit.used_milli;
      j["workloads"] = std::move(w);
    }
  }
  if (node.mig) j["migSlices"] = std::move(units);
  return j;
}

// What every twin node's driver reports (dcgm-exporter's DCGM_FI_DRIVER_VERSION label).
constexpr const char* kDriverVersion = "580.159.04";
// The twin's pods have one container.
constexpr std::string_view kContainer = "main";

// The twin's pods. The engine places workloads on units, not pods: a workload's units, in
// unit order, are cut into pods of its GPUs per pod, never across a node, and named
// <workload>-<index> as a Job's or a replica's pods would be.
struct PodLayout {
  struct Pod {
    std::string workload;  // namespace/name
    std::string name;
    cluster::NodeId node = 0;
    std::vector<cluster::UnitId> units;
  };
  std::vector<Pod> pods;
  std::map<std::pair<std::string, cluster::UnitId>, std::string> pod_of;  // (workload, unit) -> pod
};

PodLayout pod_layout(const cluster::Cluster& c, const std::map<std::string, Holder>& held) {
  struct Cursor {
    std::size_t pod = 0;     // in out.pods
    int next_index = 0;      // of the workload's next pod
    std::int64_t units = 0;  // in the open pod
  };
  PodLayout out;
  std::map<std::string, Cursor> open;
  for (cluster::UnitId u = 0; u < c.unit_count(); ++u) {
    const cluster::NodeId node = c.unit(u).node;
    for (const auto& key : c.workloads_on_unit(u)) {
      const auto it = held.find(key);
      if (it == held.end()) continue;
      const run::ScenarioWorkload* spec = it->second.spec;
      const std::int64_t per_pod =
          spec != nullptr ? std::max<std::int64_t>(1, spec->gpus) : std::numeric_limits<std::int64_t>::max();
      auto [cursor, first] = open.try_emplace(key);
      Cursor& k = cursor->second;
      if (first || out.pods[k.pod].node != node || k.units >= per_pod) {
        const std::string name = key.substr(key.find('/') + 1) + "-" + std::to_string(k.next_index++);
        out.pods.push_back(PodLayout::Pod{key, name, node, {}});
        k.pod = out.pods.size() - 1;
        k.units = 0;
      }
      ++k.units;
      out.pods[k.pod].units.push_back(u);
      out.pod_of[{key, u}] = out.pods[k.pod].name;
    }
  }
  return out;
}

attribution::NodeInfo node_info(const cluster::NodeSpec& node) {
  return attribution::NodeInfo{node.name, std::string(node.pool()), node.gpu_model,
                               node.mig ? node.mig->profile : std::string("full")};
}

// What NVML would list on node `n`: its GPUs, and on a MIG node their GPU instances (the
// exporter learns MIG device UUIDs from it).
std::vector<node::GpuDevice> inventory_of(const cluster::Cluster& c, cluster::NodeId n) {
  constexpr std::uint64_t kMiB = 1024 * 1024;
  const cluster::NodeSpec& spec = c.node(n);
  std::vector<node::GpuDevice> out;
  for (cluster::GpuId id = 0; id < c.gpu_count(); ++id) {
    const cluster::Gpu& g = c.gpu(id);
    if (g.node != n) continue;
    node::GpuDevice d;
    d.index = static_cast<unsigned>(g.index);
    d.uuid = g.uuid;
    d.name = nvml_name(spec);
    d.pci_bus_id = g.pci_bus_id;
    d.minor = static_cast<unsigned>(g.index);
    d.memory_total = static_cast<std::uint64_t>(spec.gpu_memory_mib) * kMiB;
    d.mig_enabled = spec.mig.has_value();
    if (spec.mig) {
      for (int s = 0; s < g.units; ++s) {
        const cluster::Unit& unit = c.unit(g.first_unit + static_cast<cluster::UnitId>(s));
        d.mig.push_back(node::MigDevice{unit.uuid, static_cast<unsigned>(unit.slice + 1), 0, spec.mig->profile,
                                        static_cast<std::uint64_t>(spec.mig->slice_memory_mib) * kMiB});
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

// The person a twin workload belongs to: its owner label, else one of the synthetic people of
// the generated day (a service's on-call, or one of four engineers of the group).
std::string owner_of(const Holder& h) {
  if (h.spec != nullptr) {
    if (const auto it = h.spec->labels.find(std::string(attribution::keys::kOwnerId)); it != h.spec->labels.end()) {
      return it->second;
    }
    if (h.spec->workload_type == policy::WorkloadType::Inference) return h.outcome->business_group + "-oncall";
  }
  return h.outcome->business_group + "-user-" + std::to_string(fnv1a64(h.outcome->workload) % 4 + 1);
}

// The kubelet's device ID and resource name for a unit a pod holds.
node::DeviceAllocation device_of(const cluster::Cluster& c, cluster::UnitId u, const std::string& workload) {
  const cluster::Unit& unit = c.unit(u);
  const cluster::NodeSpec& node = c.node(unit.node);
  node::DeviceAllocation a;
  if (node.mig) {
    a.resource_name = "nvidia.com/mig-" + node.mig->profile;
    a.device_id = unit.uuid;
  } else if (!unit.whole) {
    // A fraction of a time-sliced GPU: the device plugin's replica <uuid>::<n>.
    const auto holders_of = c.workloads_on_unit(u);
    const auto at = std::find(holders_of.begin(), holders_of.end(), workload);
    a.resource_name = "nvidia.com/gpu.shared";
    a.device_id = c.gpu(unit.gpu).uuid + "::" + std::to_string(at - holders_of.begin());
  } else {
    a.resource_name = "nvidia.com/gpu";
    a.device_id = c.gpu(unit.gpu).uuid;
  }
  return a;
}

std::vector<TwinPod> twin_pods(const cluster::Cluster& c, const std::map<std::string, Holder>& held,
                               const PodLayout& layout, const policy::PolicySet& policies, const DayOptions& day) {
  const policy::PlatformGuardrailsSpec* guardrails = policies.guardrails_spec();
  std::vector<TwinPod> out;
  out.reserve(layout.pods.size());
  for (const PodLayout::Pod& pod : layout.pods) {
    const Holder& h = held.at(pod.workload);
    const auto slash = pod.workload.find('/');
    TwinPodSpec s;
    s.namespace_name = pod.workload.substr(0, slash);
    s.name = pod.name;
    s.node = c.node(pod.node).name;
    // A new admission starts new pods (Kueue suspends and resumes the Job): a new UID.
    s.uid = twin_uid("pod", s.namespace_name, pod.name, h.outcome->admissions);
    // A new admission starts new pods: they were created at the last one.
    s.created = rfc3339(day.start, h.outcome->last_admitted.value_or(h.outcome->first_admitted.value_or(0)));
    s.business_group = h.outcome->business_group;
    if (guardrails != nullptr) {
      for (const policy::Group& g : guardrails->groups) {
        if (g.name == s.business_group) s.cost_center = g.cost_center;
      }
    }
    s.owner_id = owner_of(h);
    s.queue = h.outcome->pool;  // the LocalQueue the render names after the pool
    const std::string workload = pod.workload.substr(slash + 1);
    s.workload = workload;
    if (h.spec != nullptr) {
      s.workload_type = enum_name(h.spec->workload_type);
      s.labels = h.spec->labels;
      s.deployment = h.spec->workload_type == policy::WorkloadType::Inference;
      // A replica's Deployment is the service's workloadRef (its `app` label).
      if (const auto app = h.spec->labels.find("app"); s.deployment && app != h.spec->labels.end()) {
        s.workload = app->second;
      }
      s.checkpointable = h.spec->checkpointable;
      // The serving controller labels each replica it creates (elastic.cpp: within the tidal
      // floor when created, or headroom); planned replicas are the floor in force by
      // construction (day.hpp: replica i runs while the floor is at least i).
      if (const auto role = h.spec->labels.find(std::string(attribution::keys::kCapacityRole));
          role != h.spec->labels.end()) {
        s.capacity_role = role->second;
      } else if (s.deployment && day.serving_control == DayOptions::ServingControl::Planned) {
        s.capacity_role = "serving-floor";
      }
    }
    s.workload_uid = twin_uid("job", s.namespace_name, workload, 0);
    TwinPod p{std::move(s), {}};
    for (const cluster::UnitId u : pod.units) {
      node::DeviceAllocation a = device_of(c, u, pod.workload);
      a.namespace_name = p.spec.namespace_name;
      a.pod = pod.name;
      a.container = std::string(kContainer);
      p.devices.push_back(std::move(a));
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

Json Platform::gpus_json(const std::string& pool) const {
  Json list = Json::array();
  const cluster::Cluster* c = simulation_.cluster();
  if (c == nullptr) return list;
  const auto all = simulation_.workloads();
  const auto held = holders(all, simulation_.workload_specs());
  for (cluster::GpuId id = 0; id < c->gpu_count(); ++id) {
    if (!pool.empty() && c->node(c->gpu(id).node).pool() != pool) continue;
    list.push_back(gpu_view(*c, id, held));
  }
  return list;
}

std::optional<Json> Platform::gpu_json(const std::string& uuid) const {
  const cluster::Cluster* c = simulation_.cluster();
  if (c == nullptr) return std::nullopt;
  const auto id = c->find_gpu(uuid);
  if (!id) return std::nullopt;
  const auto all = simulation_.workloads();
  const auto held = holders(all, simulation_.workload_specs());
  Json j = gpu_view(*c, *id, held);
  // The drill-down's last steps: each holder's pod on this GPU (its unit) and, for an
  // inference replica, the model its vLLM serves.
  const PodLayout layout = pod_layout(*c, held);
  const cluster::Gpu& g = c->gpu(*id);
  auto annotate = [&](Json& workloads, cluster::UnitId unit) {
    for (Json& w : workloads) {
      const std::string key = w.value("workload", "");
      if (const auto pod = layout.pod_of.find({key, unit}); pod != layout.pod_of.end()) w["pod"] = pod->second;
      if (const auto model = serving_->model_of(key)) w["modelName"] = *model;
    }
  };
  if (j.contains("migSlices")) {
    for (std::size_t u = 0; u < j["migSlices"].size(); ++u) {
      annotate(j["migSlices"][u]["workloads"], g.first_unit + static_cast<cluster::UnitId>(u));
    }
  } else if (j.contains("workloads")) {
    annotate(j["workloads"], g.first_unit);
  }
  std::vector<Json> health;
  for (const run::Event& e : events()) {
    if (e.object == "GPU/" + g.uuid) {
      health.push_back(Json{{"t", format_rfc3339(Timestamp(std::chrono::milliseconds(unix_ms(e.t))))},
                            {"kind", e.kind},
                            {"xid", e.numbers.value("xid", 0)},
                            {"message", e.message}});
    }
  }
  j["healthEvents"] = health;
  return j;
}

void Platform::observe_governance() {
  constexpr std::int64_t kMinuteMs = 60'000;
  if (!governance_ || persist_failed_) return;
  const std::int64_t start_ms = unix_ms(0);
  if (!governance_next_ms_) governance_next_ms_ = (start_ms + kMinuteMs - 1) / kMinuteMs * kMinuteMs;
  const std::int64_t now_ms = unix_ms(now());
  if (*governance_next_ms_ > now_ms) return;

  // The bank's checkpoint notices and completions (the scanner reads them from the audit).
  const auto all_events = events();
  for (; governance_events_ < all_events.size(); ++governance_events_) {
    const run::Event& e = all_events[governance_events_];
    constexpr std::string_view kPrefix = "Workload/";
    if ((e.kind == "ReclaimNoticeSent" || e.kind == "CheckpointCompleted") && e.object.starts_with(kPrefix)) {
      last_checkpoint_ms_[e.object.substr(kPrefix.size())] = unix_ms(e.t);
    }
  }

  // Who holds each device now, attributed as the exporter attributes it (metasync's reading
  // of the pod object), and the activity input its utilisation comes from.
  struct Held {
    DeviceMinute labels;
    telemetry::GpuModelSpec spec;
    telemetry::ActivityInput in;
  };
  std::vector<Held> held_devices;
  MinuteObservation minute;
  // Each inference replica's workload labels, as its devices carry them.
  std::map<std::string, std::array<std::string, 4>> replica_labels;
  if (const cluster::Cluster* c = simulation_.cluster(); c != nullptr) {
    const auto all = simulation_.workloads();
    const auto held = holders(all, simulation_.workload_specs());
    const PodLayout layout = pod_layout(*c, held);
    const std::vector<TwinPod> pods = twin_pods(*c, held, layout, policies_, day_);
    std::map<std::pair<std::string, std::string>, const attribution::PodMeta*> meta_of;  // (namespace, pod)
    std::map<std::string, attribution::PodMeta, std::less<>> seen;
    for (const TwinPod& pod : pods) {
      auto it = pod_meta_.find(pod.spec.uid);
      if (it == pod_meta_.end()) {
        auto meta = attribution::pod_meta_from_json(pod_object(pod.spec));
        if (!meta) continue;  // metasync would not attribute it either
        it = pod_meta_.emplace(pod.spec.uid, std::move(*meta)).first;
      }
      seen.insert(*it);
    }
    pod_meta_ = std::move(seen);
    for (const TwinPod& pod : pods) {
      const auto it = pod_meta_.find(pod.spec.uid);
      if (it != pod_meta_.end()) meta_of[{pod.spec.namespace_name, pod.spec.name}] = &it->second;
    }
    governance_since_.resize(c->unit_count());
    minute.devices.reserve(c->unit_count());
    held_devices.reserve(c->unit_count());
    for (cluster::UnitId u = 0; u < c->unit_count(); ++u) {
      const cluster::Unit& unit = c->unit(u);
      const cluster::Gpu& g = c->gpu(unit.gpu);
      const cluster::NodeSpec& node = c->node(unit.node);
      const attribution::NodeInfo info = node_info(node);
      DeviceMinute base;
      base.device = g.uuid + (node.mig ? "/" + std::to_string(unit.slice + 1) : std::string());
      base.pool = info.pool;
      base.gpu_model = info.gpu_model;
      base.partition = info.partition;
      std::vector<std::string> keys;
      for (const auto& key : c->workloads_on_unit(u)) {
        if (held.contains(key)) keys.push_back(key);
      }
      if (keys.empty()) {
        governance_since_[u] = {};
        minute.devices.push_back(base);
        continue;
      }
      const auto model = telemetry::gpu_model_spec(node.gpu_model);
      Held h{base, node.mig ? telemetry::mig_instance_spec(model, node.mig->slice_memory_mib) : model, {}};
      h.in.seed = day_.seed;
      h.in.device_key = telemetry::device_key(node.name, g.index, unit.slice);
      const Holder& first = held.at(keys.front());
      h.in.profile = profile_of(first);
      h.in.workload_key = telemetry::workload_key(keys.front());
      if (h.in.profile == telemetry::Profile::inference) {
        const auto load = serving_->load_of(keys.front());
        h.in.load = load ? load->load : 0.0;
        h.in.weights_mib = load ? load->weights_mib : 0.0;
        h.in.kv_cache_mib = load ? load->kv_cache_mib : 0.0;
      }
      const std::string signature =
          std::string(telemetry::to_string(h.in.profile)) + "/" + std::to_string(h.in.workload_key);
      if (governance_since_[u].first != signature) governance_since_[u] = {signature, now()};
      h.in.start_ms = governance_since_[u].second;
      for (const std::string& key : keys) {
        DeviceMinute d = base;
        d.twin_workload = key;
        d.share = 1.0 / static_cast<double>(keys.size());
        const auto pod = layout.pod_of.find({key, u});
        const auto meta = pod == layout.pod_of.end()
                              ? meta_of.end()
                              : meta_of.find({key.substr(0, key.find('/')), pod->second});
        if (meta != meta_of.end()) {
          const attribution::PodMeta& m = *meta->second;
          d.business_group = m.business_group;
          d.owner_id = m.owner_id;
          d.namespace_name = m.namespace_name;
          d.workload_kind = m.workload_kind;
          d.workload = m.workload;
          d.workload_uid = m.workload_uid;
          d.workload_type = m.workload_type;
          d.capacity_role = m.capacity_role;
          d.checkpointable = m.checkpointable;
          d.keep_running_until = m.keep_running_until;
          d.pod_started_s = static_cast<double>(m.created_ms) / 1000.0;
          replica_labels[key] = {d.namespace_name, d.workload_kind, d.workload, d.workload_uid};
        }
        held_devices.push_back(Held{std::move(d), h.spec, h.in});
      }
    }
  }
  for (const run::QueueView& q : simulation_.queues()) minute.pending.push_back({q.cluster_queue, q.pending});
  for (const run::Position& p : simulation_.positions()) {
    minute.quotas.push_back(QuotaMinute{p.business_group, p.pool, static_cast<double>(p.guaranteed),
                                        static_cast<double>(p.borrowable)});
  }
  const auto entries = ledger();
  for (; governance_ledger_ < entries.size(); ++governance_ledger_) {
    const bank::LedgerEntry& e = entries[governance_ledger_];
    if (e.kind == bank::LedgerKind::BorrowOpened) {
      open_loans_[e.record] = LoanMinute{e.lender, e.business_group, e.pool, static_cast<double>(e.gpus)};
    } else if (e.kind == bank::LedgerKind::BorrowClosed) {
      open_loans_.erase(e.record);
    }
  }
  std::map<std::tuple<std::string, std::string, std::string>, double> loans;
  for (const auto& [id, l] : open_loans_) loans[{l.lender, l.borrower, l.pool}] += l.gpus;
  for (const auto& [k, gpus] : loans) {
    minute.loans.push_back(LoanMinute{std::get<0>(k), std::get<1>(k), std::get<2>(k), gpus});
  }
  minute.last_checkpoint_ms = last_checkpoint_ms_;

  // Each whole minute since the last one recorded, with the devices' activity at that minute.
  const std::size_t free_devices = minute.devices.size();
  const std::vector<Serving::ReplicaCounters> counters = serving_->counters();
  std::erase_if(serving_history_, [&](const auto& h) {
    return std::none_of(counters.begin(), counters.end(), [&](const auto& c) { return c.workload == h.first; });
  });
  // Recompute loss since the last call, counted at the first minute recorded now.
  std::vector<LossMinute> loss;
  if (*governance_next_ms_ <= now_ms) {
    for (const run::GroupStats& g : simulation_.stats().groups) {
      std::int64_t& seen = governance_loss_ms_[{g.business_group, g.pool}];
      if (g.loss_gpu_ms > seen) loss.push_back({g.business_group, g.pool, static_cast<double>(g.loss_gpu_ms - seen) / 3.6e6});
      seen = std::max(seen, g.loss_gpu_ms);
    }
  }
  for (; *governance_next_ms_ <= now_ms; *governance_next_ms_ += kMinuteMs) {
    MinuteObservation m;
    m.recompute_loss = std::exchange(loss, {});  // the first minute only
    m.t_ms = *governance_next_ms_;
    m.devices.reserve(free_devices + held_devices.size());
    m.devices.assign(minute.devices.begin(), minute.devices.begin() + static_cast<std::ptrdiff_t>(free_devices));
    const VirtualTime at = *governance_next_ms_ - start_ms;
    for (const Held& h : held_devices) {
      const telemetry::GpuSample x = telemetry::sample(h.spec, h.in, std::max(at, h.in.start_ms));
      DeviceMinute d = h.labels;
      d.gpu_utilization = 100.0 * x.gr_engine_active;
      const double fb = static_cast<double>(x.fb_used_mib + x.fb_free_mib);
      d.memory_utilization = fb > 0 ? 100.0 * static_cast<double>(x.fb_used_mib) / fb : 0.0;
      d.power_fraction = x.power_limit_w > 0 ? 100.0 * x.power_w / x.power_limit_w : 0.0;
      m.devices.push_back(std::move(d));
    }
    m.quotas = minute.quotas;
    m.loans = minute.loans;
    m.last_checkpoint_ms = minute.last_checkpoint_ms;
    m.serving = serving_minutes(counters, replica_labels, m.t_ms);
    m.pending = minute.pending;
    // Admissions since the minute before, counted at the first minute at or after them.
    const auto& admitted = queue_metrics_->admissions();
    for (; governance_admissions_ < admitted.size() && unix_ms(admitted[governance_admissions_].t) <= m.t_ms;
         ++governance_admissions_) {
      const QueueMetrics::Admission& a = admitted[governance_admissions_];
      m.admissions.push_back({a.cluster_queue, a.wait_seconds});
    }
    gpu_history_.record(m);
    position_history_.record(m);
    service_history_.record(m);
    governance_->observe(std::move(m));
  }
}

std::vector<ServingMinute> Platform::serving_minutes(const std::vector<Serving::ReplicaCounters>& counters,
                                                     const std::map<std::string, std::array<std::string, 4>>& labels,
                                                     std::int64_t t_ms) {
  // Per workload: tokens per minute and the TTFT buckets' increase over the last two minutes
  // of its replicas, as rate(...[2m]) summed by workload reads them.
  struct Sum {
    double tokens_per_minute = 0;
    std::vector<std::int64_t> buckets;
  };
  std::map<std::array<std::string, 4>, Sum> by_workload;
  std::map<std::array<std::string, 4>, std::pair<int, int>> pods;  // pods, idle ones
  for (const Serving::ReplicaCounters& c : counters) {
    auto& history = serving_history_[c.workload];
    history.emplace_back(t_ms, c);
    while (history.front().first < t_ms - 2 * 60'000) history.pop_front();
    const auto l = labels.find(c.workload);
    if (l == labels.end()) continue;
    auto& [n, idle] = pods[l->second];
    ++n;
    if (c.in_flight == 0) ++idle;
    if (history.size() < 2) continue;  // a rate needs two samples
    const auto& [first_ms, first] = history.front();
    Sum& sum = by_workload[l->second];
    const double minutes = static_cast<double>(t_ms - first_ms) / 60'000.0;
    sum.tokens_per_minute += static_cast<double>(std::max<std::int64_t>(0, c.tokens - first.tokens)) / minutes;
    sum.buckets.resize(std::max(sum.buckets.size(), c.ttft_buckets.size()), 0);
    for (std::size_t i = 0; i < c.ttft_buckets.size() && i < first.ttft_buckets.size(); ++i) {
      sum.buckets[i] += std::max<std::int64_t>(0, c.ttft_buckets[i] - first.ttft_buckets[i]);
    }
  }
  std::vector<ServingMinute> out;
  for (const auto& [l, count] : pods) {
    const auto sum = by_workload.find(l);
    ServingMinute m;
    m.namespace_name = l[0];
    m.workload_kind = l[1];
    m.workload = l[2];
    m.workload_uid = l[3];
    m.pods = count.first;
    m.idle_pods = count.second;
    m.rated = sum != by_workload.end();
    if (m.rated) {
      m.tokens_per_minute = sum->second.tokens_per_minute;
      m.ttft_p95_s = ttft_quantile(0.95, sum->second.buckets);
    }
    out.push_back(std::move(m));
  }
  return out;
}

Expected<bool> Platform::export_capacity(metrics::Registry& registry) const {
  std::vector<serving::Capacity> all;
  for (const auto& policy : control_->policies()) {
    if (auto c = control_->capacity(policy)) all.push_back(std::move(*c));
  }
  return serving::export_capacity(registry, all);
}

Expected<std::string> Platform::metrics_text() {
  // The engine's state and counters include the instant that could not be persisted.
  if (persist_failed_) return Unexpected{error()};
  metrics::Registry registry;
  const auto positions = simulation_.positions();
  if (auto done = run::export_metrics(simulation_.result(), positions, now(), registry); !done) {
    return Unexpected{done.error()};
  }
  metrics::Exposition attributed;
  // Each vLLM replica's pod, labelled as a PodMonitor scrape labels a pod's series.
  std::map<std::string, std::pair<std::string, std::string>> replica_pod;  // replica -> (namespace, pod)
  if (const cluster::Cluster* c = simulation_.cluster(); c != nullptr) {
    const auto all = simulation_.workloads();
    const auto held = holders(all, simulation_.workload_specs());
    const PodLayout layout = pod_layout(*c, held);
    energy_.resize(c->unit_count());
    std::vector<std::vector<telemetry::GpuState>> devices(c->node_count());
    for (cluster::UnitId u = 0; u < c->unit_count(); ++u) {
      const cluster::Unit& unit = c->unit(u);
      const cluster::Gpu& g = c->gpu(unit.gpu);
      const cluster::NodeSpec& node = c->node(unit.node);
      telemetry::GpuState d;
      d.gpu_index = g.index;
      d.uuid = g.uuid;
      d.pci_bus_id = g.pci_bus_id;
      d.device = g.device;
      d.model_name = nvml_name(node);
      d.hostname = node.name;
      d.driver_version = kDriverVersion;
      d.xid = g.last_xid;
      d.ecc_dbe_volatile = g.ecc_dbe;
      if (node.mig) d.mig = telemetry::MigInstance{node.mig->profile, unit.slice + 1};
      telemetry::ActivityInput in;
      in.seed = day_.seed;
      in.device_key = telemetry::device_key(node.name, g.index, unit.slice);
      for (const auto& key : c->workloads_on_unit(u)) {
        const auto it = held.find(key);
        if (it == held.end()) continue;
        const Holder& h = it->second;
        // dcgm-exporter's own pod mapping (the PodResources triple): the node's exporter
        // replaces it with the join's.
        telemetry::Allocation a;
        a.pod_namespace = key.substr(0, key.find('/'));
        a.pod = layout.pod_of.at({key, u});
        a.container = std::string(kContainer);
        d.allocations.push_back(std::move(a));
        if (in.profile == telemetry::Profile::idle) {
          in.profile = profile_of(h);
          in.workload_key = telemetry::workload_key(key);
          if (in.profile == telemetry::Profile::inference) {
            // The replica's share of its capacity since the last advance and its KV cache
            // (serving.hpp); a replica the services do not know (none yet) reads as idle.
            const auto load = serving_->load_of(key);
            in.load = load ? load->load : 0.0;
            in.weights_mib = load ? load->weights_mib : 0.0;
            in.kv_cache_mib = load ? load->kv_cache_mib : 0.0;
          }
        }
      }
      // The energy counter continues across changes of the device's work: a new activity
      // starts a new base at this scrape from the value last exposed (what it used between
      // the last scrape and the change is not counted: the counter never goes back). A new
      // inference load on the same replica carries the integral over: the interval up to
      // this scrape counts at the load it had before.
      DeviceEnergy& e = energy_[u];
      const std::string signature =
          std::string(telemetry::to_string(in.profile)) + "/" + std::to_string(in.workload_key);
      const auto model = telemetry::gpu_model_spec(node.gpu_model);
      const auto spec = node.mig ? telemetry::mig_instance_spec(model, node.mig->slice_memory_mib) : model;
      if (e.signature != signature) {
        e.signature = signature;
        e.profile_since_ms = now();
        e.since_ms = now();
        e.mj = e.last_mj;
      } else if (in.load != e.input.load || in.weights_mib != e.input.weights_mib ||
                 in.kv_cache_mib != e.input.kv_cache_mib) {
        e.mj = std::max(e.last_mj,
                        telemetry::sample(spec, e.input, now(), telemetry::EnergyBase{e.since_ms, e.mj}).energy_mj);
        e.since_ms = now();
      }
      in.start_ms = e.profile_since_ms;
      e.input = in;
      d.sample = telemetry::sample(spec, in, now(), telemetry::EnergyBase{e.since_ms, e.mj});
      e.last_mj = std::max(e.last_mj, d.sample.energy_mj);
      devices[unit.node].push_back(std::move(d));
    }
    // Each node's dcgm-exporter page, then metasync and the exporters (node_agents.hpp).
    std::vector<TwinNode> nodes;
    nodes.reserve(c->node_count());
    for (cluster::NodeId n = 0; n < c->node_count(); ++n) {
      metrics::Registry page;
      auto dcgm = telemetry::register_dcgm(page);
      if (!dcgm) return Unexpected{dcgm.error()};
      if (auto s = telemetry::update_dcgm(*dcgm, devices[n]); !s) return Unexpected{s.error()};
      nodes.push_back(TwinNode{node_info(c->node(n)), page.collect(), inventory_of(*c, n)});
    }
    const std::vector<TwinPod> pods = twin_pods(*c, held, layout, policies_, day_);
    attributed = agents_.scrape(pods, nodes, now());
    std::map<std::string, const TwinPod*> first_pod;  // by workload key; twin_pods keeps layout's order
    for (std::size_t i = 0; i < pods.size() && i < layout.pods.size(); ++i) {
      first_pod.try_emplace(layout.pods[i].workload, &pods[i]);
    }
    for (const auto& [replica, key] : serving_->replica_workloads()) {
      if (const auto p = first_pod.find(key); p != first_pod.end()) {
        replica_pod[replica] = {p->second->spec.namespace_name, p->second->spec.name};
      }
    }
  }
  // The gateway's capacity signals (serving/gateway_capacity.hpp), one series per service.
  if (auto exported = export_capacity(registry); !exported) return Unexpected{exported.error()};
  auto clock = registry.gauge("gpubank_twin_virtual_time_seconds",
                              "The twin's clock: virtual seconds since the start of the embedded day.");
  if (!clock) return Unexpected{clock.error()};
  if (auto s = (*clock)->set({}, static_cast<double>(now()) / 1000.0); !s) return Unexpected{s.error()};
  metrics::Exposition all = registry.collect();
  for (auto& f : attributed.families) all.families.push_back(std::move(f));
  const auto all_workloads = simulation_.workloads();
  auto kueue = queue_metrics_->families(simulation_.queues(), all_workloads);
  if (!kueue) return Unexpected{kueue.error()};
  for (auto& f : *kueue) all.families.push_back(std::move(f));
  for (auto& f : serving_->families()) {
    if (f.name.starts_with("vllm:")) {
      for (metrics::Sample& x : f.samples) {
        const auto r = std::find_if(x.labels.begin(), x.labels.end(),
                                    [](const metrics::Label& l) { return l.name == "replica"; });
        if (r == x.labels.end()) continue;
        const auto pod = replica_pod.find(r->value);
        if (pod == replica_pod.end()) continue;
        x.labels.push_back({"namespace", pod->second.first});
        x.labels.push_back({"pod", pod->second.second});
      }
    }
    all.families.push_back(std::move(f));
  }
  // One order for the whole text, as a registry writes it (names are unique: write_text
  // refuses a family named twice).
  std::stable_sort(all.families.begin(), all.families.end(),
                   [](const metrics::Family& a, const metrics::Family& b) { return a.name < b.name; });
  return metrics::write_text(all);
}

}  // namespace gpubank::twin::live
