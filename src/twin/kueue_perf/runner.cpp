#include "twin/kueue_perf/runner.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpubank::twin::kueue_perf {
namespace {

__extension__ using Wide = __int128;

struct Event {
  enum class Kind : std::uint8_t { Create, Finish };
  VirtualTime time = 0;
  std::uint64_t seq = 0;
  Kind kind = Kind::Create;
  std::uint32_t index = 0;       // Create: stream; Finish: workload record
  std::uint32_t generation = 0;  // Finish: the record's generation when it was scheduled

  // std::priority_queue is a max-heap: "greater" comes out last.
  friend bool operator<(const Event& a, const Event& b) {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

struct WorkloadRecord {
  WorkloadId id = 0;
  std::uint32_t queue = 0;
  std::uint32_t workload_class = 0;
  std::uint32_t evictions = 0;
  std::uint32_t generation = 0;  // bumped on eviction: voids the scheduled finish
  bool holds_quota = false;
  VirtualTime created = 0;
  VirtualTime admitted = -1;  // last admission
  VirtualTime finished = -1;
  std::int64_t runtime_ms = 0;
  Amount usage = 0;  // cpu counted against the queue while admitted
};

struct QueueState {
  Amount usage = 0;
  Amount max_usage = 0;
  VirtualTime last_change = 0;
  VirtualTime last_event = 0;
  Wide used = 0;  // mCPU x ms

  void change(VirtualTime now, Amount delta) {
    used += Wide{usage} * (now - last_change);
    last_change = now;
    usage += delta;
    max_usage = std::max(max_usage, usage);
    last_event = now;
  }
};

std::int64_t saturate(Wide v) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  return v > kMax ? kMax : static_cast<std::int64_t>(v);
}

class Simulation {
 public:
  Simulation(const Scenario& scenario, AdmissionCore& core, const RunOptions& options)
      : scenario_(scenario), core_(core), options_(options), queues_(scenario.queues.size()),
        next_(scenario.streams.size(), 0) {
    std::map<std::string, std::uint32_t> class_index;
    for (const auto& name : scenario.workload_classes) {
      class_index.emplace(name, static_cast<std::uint32_t>(class_index.size()));
    }
    for (const auto& stream : scenario.streams) {
      for (const auto& t : stream.set->workloads) template_class_.emplace(&t, class_index.at(t.class_name));
    }
    records_.reserve(static_cast<std::size_t>(scenario.total_workloads));
    by_id_.reserve(static_cast<std::size_t>(scenario.total_workloads));
  }

  Expected<Summary> run() {
    for (std::uint32_t s = 0; s < scenario_.streams.size(); ++s) {
      push(Event{scenario_.streams[s].creation_time(0), 0, Event::Kind::Create, s, 0});
    }
    std::uint64_t next_report = options_.progress_every;
    while (!events_.empty()) {
      const VirtualTime now = events_.top().time;
      while (!events_.empty() && events_.top().time == now) {
        const Event ev = events_.top();
        events_.pop();
        if (ev.kind == Event::Kind::Create) {
          create(ev.index, now);
        } else if (auto finished = finish(ev, now); !finished) {
          return Unexpected{finished.error()};
        }
      }
      end_ = now;
      if (auto settled = cycles(now); !settled) return Unexpected{settled.error()};
      if (options_.progress && processed_ >= next_report) {
        report_progress(now);
        next_report = processed_ + options_.progress_every;
      }
    }
    if (options_.progress) report_progress(end_);
    return summary();
  }

 private:
  void push(Event ev) {
    ev.seq = seq_++;
    events_.push(ev);
  }

  void create(std::uint32_t stream_index, VirtualTime now) {
    const CreationStream& stream = scenario_.streams[stream_index];
    const std::int64_t n = next_[stream_index]++;
    ++processed_;
    char uid[32];
    std::snprintf(uid, sizeof uid, "kueue-perf-%010zu", records_.size());
    WorkloadSpec spec = make_workload(scenario_, stream, n, now, uid);
    const WorkloadTemplate& t = workload_template(stream, n);

    WorkloadRecord rec;
    rec.queue = stream.queue;
    rec.workload_class = template_class_.at(&t);
    rec.created = now;
    rec.runtime_ms = t.runtime_ms;
    rec.id = core_.submit(std::move(spec), now);
    by_id_.emplace(rec.id, static_cast<std::uint32_t>(records_.size()));
    records_.push_back(rec);
    queues_[stream.queue].last_event = now;

    if (next_[stream_index] < stream.size()) {
      push(Event{stream.creation_time(next_[stream_index]), 0, Event::Kind::Create, stream_index, 0});
    }
  }

  Expected<bool> finish(const Event& ev, VirtualTime now) {
    WorkloadRecord& rec = records_[ev.index];
    if (rec.generation != ev.generation || !rec.holds_quota) return true;  // evicted since
    ++processed_;
    core_.finish(rec.id, now);
    // Its record holds all the summary needs: the core need not keep it (50,000 finished
    // workloads in large-scale).
    if (auto forgotten = core_.forget(rec.id); !forgotten) {
      return Unexpected{"the admission core cannot forget a finished workload: " + forgotten.error()};
    }
    rec.holds_quota = false;
    rec.finished = now;
    queues_[rec.queue].change(now, -rec.usage);
    ++finished_;
    return true;
  }

  WorkloadRecord* record(WorkloadId id) {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &records_[it->second];
  }

  void admit(WorkloadId id, VirtualTime now) {
    WorkloadRecord* rec = record(id);
    if (rec == nullptr || rec->holds_quota) return;
    Amount usage = 0;
    const WorkloadStatus status = core_.status(id);
    if (const auto& admission = status.admission) {
      for (const auto& ps : admission->pod_sets) {
        for (const auto& [resource, amount] : ps.resource_usage) {
          if (resource == kResource) usage += amount;
        }
      }
    }
    if (rec->admitted < 0) ++admitted_;
    rec->holds_quota = true;
    rec->admitted = now;
    rec->usage = usage;
    queues_[rec->queue].change(now, usage);
    push(Event{now + rec->runtime_ms, 0, Event::Kind::Finish, by_id_.at(id), rec->generation});
  }

  void evict(WorkloadId id, VirtualTime now) {
    WorkloadRecord* rec = record(id);
    if (rec == nullptr || !rec->holds_quota) return;
    rec->holds_quota = false;
    ++rec->generation;
    ++rec->evictions;
    ++evictions_;
    queues_[rec->queue].change(now, -rec->usage);
    core_.release_evicted(id, now);
  }

  Expected<bool> cycles(VirtualTime now) {
    std::uint64_t idle = 0;
    while (core_.has_active_heads()) {
      CycleResult& result = cycle_result_;
      core_.run_cycle(now, result);
      ++cycles_;
      bool progress = false;
      for (const auto& d : result.decisions) {
        if (d.kind == Decision::Kind::Admitted) {
          admit(d.workload, now);
          progress = true;
        }
      }
      for (WorkloadId victim : result.evicted) {
        evict(victim, now);
        progress = true;
      }
      if (result.heads == 0) break;
      if (progress) {
        idle = 0;
        continue;
      }
      const auto pending = static_cast<std::uint64_t>(records_.size()) - static_cast<std::uint64_t>(finished_);
      if (++idle > pending + scenario_.queues.size() + 1) {
        return Unexpected{"the admission core did not settle at virtual time " + std::to_string(now) + " ms: " +
                          std::to_string(idle) + " cycles in a row nominated heads without admitting or evicting"};
      }
    }
    return true;
  }

  void report_progress(VirtualTime now) const {
    options_.progress(Progress{now, static_cast<std::int64_t>(records_.size()), admitted_, finished_,
                               scenario_.total_workloads, cycles_});
  }

  Summary summary() const {
    Summary s;
    s.fair_sharing = options_.core.fair_sharing;
    s.queues = static_cast<std::int64_t>(scenario_.queues.size());
    s.workloads = static_cast<std::int64_t>(records_.size());
    s.admitted = admitted_;
    s.finished = finished_;
    s.pending = s.workloads - finished_;
    s.evictions = evictions_;
    s.cycles = cycles_;
    s.events = processed_;
    s.end_ms = end_;

    struct ClassTimes {
      std::vector<std::int64_t> to_admission;
      Wide total_to_finish = 0;
    };
    std::vector<ClassTimes> times(scenario_.workload_classes.size());
    for (const auto& name : scenario_.workload_classes) {
      s.workload_classes.emplace_back();
      s.workload_classes.back().name = name;
    }
    for (const auto& rec : records_) {
      WorkloadClassSummary& c = s.workload_classes[rec.workload_class];
      ClassTimes& t = times[rec.workload_class];
      ++c.count;
      c.total_evictions += rec.evictions;
      if (rec.admitted >= 0) t.to_admission.push_back(rec.admitted - rec.created);
      if (rec.finished >= 0) {
        ++c.finished;
        t.total_to_finish += rec.finished - rec.created;
      }
    }
    for (std::size_t i = 0; i < times.size(); ++i) {
      WorkloadClassSummary& c = s.workload_classes[i];
      auto& v = times[i].to_admission;
      c.admitted = static_cast<std::int64_t>(v.size());
      if (!v.empty()) {
        Wide total = 0;
        for (auto x : v) total += x;
        std::sort(v.begin(), v.end());
        const auto rank = [&](std::size_t p) { return v[(p * v.size() + 99) / 100 - 1]; };
        c.average_time_to_admission_ms = saturate(total / static_cast<Wide>(v.size()));
        c.p50_time_to_admission_ms = rank(50);
        c.p90_time_to_admission_ms = rank(90);
        c.max_time_to_admission_ms = v.back();
      }
      if (c.finished > 0) c.average_time_to_finish_ms = saturate(times[i].total_to_finish / c.finished);
    }

    std::map<std::string, std::size_t> class_index;
    for (const auto& name : scenario_.queue_classes) {
      class_index.emplace(name, s.cluster_queue_classes.size());
      s.cluster_queue_classes.emplace_back();
      s.cluster_queue_classes.back().name = name;
    }
    std::vector<Wide> used(s.cluster_queue_classes.size(), 0);
    for (std::size_t q = 0; q < queues_.size(); ++q) {
      const std::size_t i = class_index.at(scenario_.queues[q].class_name);
      ClusterQueueClassSummary& c = s.cluster_queue_classes[i];
      const QueueState& state = queues_[q];
      // Usage is back to 0 at the end (every admitted workload finishes), so `used` is
      // complete; a queue still holding quota would be integrated up to its last event.
      ++c.queues;
      c.nominal_quota += scenario_.queues[q].nominal_quota;
      used[i] += state.used;
      c.cpu_max_usage = std::max(c.cpu_max_usage, state.max_usage);
      c.last_event_ms = std::max(c.last_event_ms, state.last_event);
    }
    for (std::size_t i = 0; i < used.size(); ++i) {
      ClusterQueueClassSummary& c = s.cluster_queue_classes[i];
      c.cpu_used = saturate(used[i]);
      const VirtualTime observed = c.last_event_ms - c.first_event_ms;
      if (observed > 0) {
        c.cpu_average_usage = saturate(used[i] / observed);
        if (c.nominal_quota > 0) {
          c.usage_percent = static_cast<double>(used[i]) * 100.0 /
                            (static_cast<double>(c.nominal_quota) * static_cast<double>(observed));
        }
      }
    }
    return s;
  }

  const Scenario& scenario_;
  AdmissionCore& core_;
  const RunOptions& options_;
  std::priority_queue<Event> events_;
  std::uint64_t seq_ = 0;
  std::vector<WorkloadRecord> records_;
  std::unordered_map<WorkloadId, std::uint32_t> by_id_;
  std::unordered_map<const WorkloadTemplate*, std::uint32_t> template_class_;
  std::vector<QueueState> queues_;
  CycleResult cycle_result_;  // every cycle's, its buffers reused
  std::vector<std::int64_t> next_;  // per stream: index of the next workload to create
  std::int64_t admitted_ = 0, finished_ = 0, evictions_ = 0;
  std::uint64_t cycles_ = 0, processed_ = 0;
  VirtualTime end_ = 0;
};

}  // namespace

Expected<Summary> simulate(const Scenario& scenario, AdmissionCore& core, const RunOptions& options) {
  return Simulation(scenario, core, options).run();
}

}  // namespace gpubank::twin::kueue_perf
