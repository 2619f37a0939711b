#include "twin/live/governance.hpp"

#include <algorithm>
#include <set>

#include "core/timestamp.hpp"
#include "governance/reclaim_approval.hpp"
#include "document/decode.hpp"
#include "metrics/number.hpp"
#include "policy/schema.hpp"
#include "twin/telemetry/kueue_metrics.hpp"

namespace gpubank::twin::live {
namespace {

using Json = nlohmann::ordered_json;
using serving::PromSample;

constexpr std::int64_t kMinuteMs = 60'000;

void add_minute(std::vector<TwinGovernance::MinuteValue>& into, std::int64_t t_ms, double value) {
  if (!into.empty() && into.back().t_ms == t_ms) {
    into.back().value += value;
  } else {
    into.push_back({t_ms, value});
  }
}

double sum_in(const std::vector<TwinGovernance::MinuteValue>& values, std::int64_t from_ms, std::int64_t to_ms) {
  const auto first = std::lower_bound(values.begin(), values.end(), from_ms,
                                      [](const TwinGovernance::MinuteValue& v, std::int64_t t) { return v.t_ms < t; });
  double sum = 0;
  for (auto it = first; it != values.end() && it->t_ms < to_ms; ++it) sum += it->value;
  return sum;
}

// kueue_admission_wait_time_seconds's bucket bounds, as Kueue (and the twin's KueueMetrics) sets them.
const std::vector<double>& admission_wait_bounds() {
  static const std::vector<double> bounds = telemetry::kueue_exponential_buckets(16);
  return bounds;
}

bool any_in(const std::vector<TwinGovernance::MinuteValue>& values, std::int64_t from_ms, std::int64_t to_ms) {
  const auto first = std::lower_bound(values.begin(), values.end(), from_ms,
                                      [](const TwinGovernance::MinuteValue& v, std::int64_t t) { return v.t_ms < t; });
  return first != values.end() && first->t_ms < to_ms;
}

bool has_workload(const DeviceMinute& d) { return !d.workload.empty() || !d.workload_uid.empty(); }

std::string key_of(const DeviceMinute& d) {
  return governance::workload_key(d.workload_uid, d.workload_kind, d.namespace_name, d.workload);
}

}  // namespace

TwinGovernance::TwinGovernance(const policy::PolicySet& policies, std::int64_t scan_every_ms)
    : policies_(policies),
      scan_policies_(governance::scan_policies(policies)),
      scan_every_ms_(std::max<std::int64_t>(kMinuteMs, scan_every_ms / kMinuteMs * kMinuteMs)) {
  for (const governance::ScanPolicy& p : scan_policies_) {
    longest_window_ms_ = std::max(longest_window_ms_, p.spec.window.milliseconds());
    if (p.spec.thresholds.average_gpu_utilization) busy_thresholds_.insert(*p.spec.thresholds.average_gpu_utilization);
  }
  slos_ = governance::serving_slos(policies);
  for (const governance::ServingSlo& slo : slos_) slo_targets_.insert(slo.ttft_p95_seconds);
}

std::optional<std::int64_t> TwinGovernance::last_minute_ms() const { return last_ms_; }

void TwinGovernance::observe(MinuteObservation minute) {
  if (last_ms_ && minute.t_ms <= *last_ms_) return;
  const std::int64_t t = minute.t_ms;
  // The query names, once per minute rather than once per device.
  std::vector<std::pair<governance::LowQueryKind, std::string>> kinds;
  for (const governance::LowQueryKind& k : governance::low_query_kinds(scan_policies_)) {
    kinds.emplace_back(k, governance::low_query_name(k));
  }
  std::vector<std::pair<double, std::string>> busy;
  for (const double threshold : busy_thresholds_) busy.emplace_back(threshold, governance::busy_query_name(threshold));
  std::set<std::string> devices_seen;
  std::map<WorkloadLabels, double> workload_share;  // the SLO minutes' `sum by (workload) (share)`
  for (const DeviceMinute& d : minute.devices) {
    if (devices_seen.insert(d.device).second) add_minute(capacity_[{d.pool, d.gpu_model}], t, 1.0);
    if (d.share <= 0) continue;  // a free device: no allocation series
    add_minute(allocated_[RowKey{d.business_group, d.owner_id, d.namespace_name, d.workload_kind, d.workload,
                                 d.workload_uid, d.workload_type, d.pool, d.gpu_model, d.partition, d.capacity_role}],
               t, d.share);
    if (!has_workload(d)) continue;  // unattributed: no DCGM series of a workload
    workload_share[WorkloadLabels{d.namespace_name, d.workload_kind, d.workload, d.workload_uid}] += d.share;
    Series& s = series_[{key_of(d), d.device}];
    s.last = d;
    s.samples.push_back({t, d.gpu_utilization, d.memory_utilization, d.power_fraction});
    // The low queries: `util < bool threshold` shared among the device's holders, unless the
    // pod is younger than the grace (time() - start <= grace).
    // The checkpoint window: the bank's last notice or completion for the workload
    // (gpubank_last_checkpoint_timestamp_seconds), as the controller exports it.
    const auto checkpoint = minute.last_checkpoint_ms.find(d.namespace_name + "/" + d.workload);
    for (const auto& [k, name] : kinds) {
      if (!(d.gpu_utilization < k.threshold)) continue;
      if (static_cast<double>(t) / 1000.0 - d.pod_started_s <= static_cast<double>(k.startup_grace_s)) continue;
      if (k.checkpoint_grace_s > 0 && checkpoint != minute.last_checkpoint_ms.end() &&
          t - checkpoint->second <= k.checkpoint_grace_s * 1000) {
        continue;
      }
      add_minute(low_[name][WorkloadLabels{d.namespace_name, d.workload_kind, d.workload, d.workload_uid}], t, d.share);
    }
    // The busy queries (effective hours): `util >= bool threshold`, shared the same way.
    for (const auto& [threshold, name] : busy) {
      if (!(d.gpu_utilization >= threshold)) continue;
      add_minute(busy_[name][WorkloadLabels{d.namespace_name, d.workload_kind, d.workload, d.workload_uid}], t,
                 d.share);
    }
  }
  for (const QuotaMinute& q : minute.quotas) {
    add_minute(quota_[{q.business_group, q.pool, "guaranteed"}], t, q.guaranteed);
    add_minute(quota_[{q.business_group, q.pool, "borrowable"}], t, q.borrowable);
  }
  for (const LoanMinute& l : minute.loans) add_minute(loans_[{l.lender, l.borrower, l.pool}], t, l.gpus);
  for (const LossMinute& l : minute.recompute_loss) {
    if (l.gpu_hours > 0) add_minute(recompute_loss_[{l.business_group, l.pool}], t, l.gpu_hours);
  }
  // Kueue's admission waits: the histogram's increase at this minute.
  const std::vector<double>& bounds = admission_wait_bounds();
  for (const AdmissionMinute& a : minute.admissions) {
    QueueWait& q = queue_wait_[a.cluster_queue];
    q.buckets.resize(bounds.size() + 1);
    add_minute(q.count, t, 1);
    add_minute(q.sum, t, a.wait_seconds);
    for (std::size_t i = 0; i <= bounds.size(); ++i) {
      if (i == bounds.size() || a.wait_seconds <= bounds[i]) add_minute(q.buckets[i], t, 1);
    }
  }
  // Tokens, and the minutes and tokens within each SLO target (`p95 <= bool target`).
  for (const ServingMinute& x : minute.serving) {
    if (x.pods > 0) {
      auto& r = replicas_[{x.namespace_name, x.workload}];
      if (!r.empty() && r.back().t_ms == t) {
        r.back().pods += x.pods;
        r.back().idle += x.idle_pods;
      } else {
        r.push_back({t, x.pods, x.idle_pods});
      }
    }
    if (!x.rated) continue;
    const WorkloadLabels w{x.namespace_name, x.workload_kind, x.workload, x.workload_uid};
    // Recorded at 0 too: a workload whose pods have vLLM series answers the tokens query.
    add_minute(serving_[governance::kTokensQuery][w], t, x.tokens_per_minute);
    if (!x.ttft_p95_s) continue;
    for (const double target : slo_targets_) {
      if (!(*x.ttft_p95_s <= target)) continue;
      if (const auto share = workload_share.find(w); share != workload_share.end()) {
        add_minute(serving_[governance::slo_minutes_query_name(target)][w], t, share->second);
      }
      if (x.tokens_per_minute > 0) {
        add_minute(serving_[governance::slo_tokens_query_name(target)][w], t, x.tokens_per_minute);
      }
    }
  }
  for (const PendingMinute& p : minute.pending) {
    add_minute(queues_seen_[p.cluster_queue], t, 1);
    if (p.workloads > 0) add_minute(pending_[p.cluster_queue], t, 1);
  }
  // Only the longest window is ever read back.
  for (auto it = series_.begin(); it != series_.end();) {
    auto& samples = it->second.samples;
    while (!samples.empty() && samples.front().t_ms <= t - longest_window_ms_) samples.pop_front();
    it = samples.empty() ? series_.erase(it) : std::next(it);
  }
  last_ = std::move(minute);
  last_ms_ = t;
  if (t % scan_every_ms_ == 0) scan(t);
}

governance::Answers TwinGovernance::scan_answers() const {
  governance::Answers out;
  auto& allocations = out["allocations"];
  auto& starts = out["starts"];
  auto& borrowing = out["borrowing"];
  std::map<std::map<std::string, std::string>, double> sums, earliest, borrowed;
  for (const DeviceMinute& d : last_.devices) {
    if (!has_workload(d)) continue;  // allocation_info{workload!=""}
    sums[{{"workload_uid", d.workload_uid},     {"business_group", d.business_group},
          {"owner_id", d.owner_id},             {"namespace", d.namespace_name},
          {"workload_kind", d.workload_kind},   {"workload", d.workload},
          {"workload_type", d.workload_type},   {"pool", d.pool},
          {"gpu_model", d.gpu_model},           {"partition", d.partition},
          {"capacity_role", d.capacity_role},   {"checkpointable", d.checkpointable},
          {"keep_running_until", d.keep_running_until}}] += d.share;
    std::map<std::string, std::string> w{{"namespace", d.namespace_name},
                                         {"workload_kind", d.workload_kind},
                                         {"workload", d.workload},
                                         {"workload_uid", d.workload_uid}};
    const auto [it, first] = earliest.try_emplace(std::move(w), d.pod_started_s);
    if (!first) it->second = std::min(it->second, d.pod_started_s);
  }
  // Prometheus drops empty labels from a series: so do the answers.
  auto sample = [](std::map<std::string, std::string> labels, double value) {
    std::erase_if(labels, [](const auto& kv) { return kv.second.empty(); });
    return PromSample{std::move(labels), value, 0};
  };
  for (auto& [labels, v] : sums) allocations.push_back(sample(labels, v));
  for (auto& [labels, v] : earliest) starts.push_back(sample(labels, v));
  for (const LoanMinute& l : last_.loans) borrowed[{{"borrower", l.borrower}, {"pool", l.pool}}] += l.gpus;
  for (auto& [labels, v] : borrowed) borrowing.push_back(sample(labels, v));
  if (scan_policies_.empty() || !last_ms_) return out;

  // Per window: the per-series average over (t - window, t], averaged by workload, for the
  // workload types the window's policies govern (plan_queries' selector).
  std::map<std::int64_t, std::pair<Duration, std::set<std::string>>> windows;
  bool power = false;
  for (const governance::ScanPolicy& p : scan_policies_) {
    auto& [window, types] = windows[p.spec.window.milliseconds()];
    window = p.spec.window;
    types.insert(std::string(doc::enum_name(p.spec.match.workload_type)));
    power = power || p.spec.thresholds.average_power_fraction.has_value();
  }
  const std::int64_t t = *last_ms_;
  for (const auto& [ms, entry] : windows) {
    const std::string window = governance::promql_duration(entry.first);
    struct Sums {
      double gpu = 0, memory = 0, power = 0;
      int series = 0;
    };
    std::map<std::map<std::string, std::string>, Sums> by_workload;
    for (const auto& [key, s] : series_) {
      if (!entry.second.contains(s.last.workload_type)) continue;
      double gpu = 0, memory = 0, pw = 0;
      int n = 0;
      for (const Sample& x : s.samples) {
        if (x.t_ms <= t - ms || x.t_ms > t) continue;
        gpu += x.gpu;
        memory += x.memory;
        pw += x.power;
        ++n;
      }
      if (n == 0) continue;
      Sums& w = by_workload[{{"namespace", s.last.namespace_name},
                             {"workload_kind", s.last.workload_kind},
                             {"workload", s.last.workload},
                             {"workload_uid", s.last.workload_uid},
                             {"window", window}}];
      w.gpu += gpu / n;
      w.memory += memory / n;
      w.power += pw / n;
      ++w.series;
    }
    for (const auto& [labels, w] : by_workload) {
      out["gpu_utilization"].push_back(sample(labels, w.gpu / w.series));
      out["memory_utilization"].push_back(sample(labels, w.memory / w.series));
      if (power) out["power_fraction"].push_back(sample(labels, w.power / w.series));
    }
    // Token throughput (inference policies' windows): the recorded tokens per minute over the
    // minutes of the window the workload's vLLM series existed, per second, as rate() reads them.
    if (!entry.second.contains("inference")) continue;
    const auto tokens = serving_.find(governance::kTokensQuery);
    if (tokens == serving_.end()) continue;
    for (const auto& [w, minutes] : tokens->second) {
      double sum = 0;
      int n = 0;
      for (const MinuteValue& m : minutes) {
        if (m.t_ms <= t - ms || m.t_ms > t) continue;
        sum += m.value;
        ++n;
      }
      if (n == 0) continue;
      out["token_throughput"].push_back(sample({{"namespace", w[0]}, {"workload_kind", w[1]}, {"workload", w[2]},
                                                {"workload_uid", w[3]}, {"window", window}},
                                               sum / (60.0 * n)));
    }
  }
  return out;
}

governance::Answers TwinGovernance::showback_answers(const governance::ShowbackPeriod& period) const {
  governance::Answers out;
  auto sample = [](std::map<std::string, std::string> labels, double value) {
    std::erase_if(labels, [](const auto& kv) { return kv.second.empty(); });
    return PromSample{std::move(labels), value, 0};
  };
  const std::int64_t from = period.from_ms;
  const std::int64_t to = period.to_ms;
  auto& allocated = out["allocated"];
  for (const auto& [k, values] : allocated_) {
    const double v = sum_in(values, from, to);
    if (v <= 0) continue;
    allocated.push_back(sample({{"business_group", k[0]}, {"owner_id", k[1]}, {"namespace", k[2]},
                                {"workload_kind", k[3]}, {"workload", k[4]}, {"workload_uid", k[5]},
                                {"workload_type", k[6]}, {"pool", k[7]}, {"gpu_model", k[8]}, {"partition", k[9]},
                                {"capacity_role", k[10]}},
                               v));
  }
  // keep_zero: a series with samples in the period answers even when they sum to 0.
  auto per_workload = [&](const std::string& name, const auto& recorded, bool keep_zero = false) {
    auto& answer = out[name];
    const auto q = recorded.find(name);
    if (q == recorded.end()) return;
    for (const auto& [w, values] : q->second) {
      const double v = sum_in(values, from, to);
      if (v <= 0 && !(keep_zero && any_in(values, from, to))) continue;
      answer.push_back(
          sample({{"namespace", w[0]}, {"workload_kind", w[1]}, {"workload", w[2]}, {"workload_uid", w[3]}}, v));
    }
  };
  for (const governance::LowQueryKind& k : governance::low_query_kinds(scan_policies_)) {
    per_workload(governance::low_query_name(k), low_);
  }
  for (const double threshold : busy_thresholds_) per_workload(governance::busy_query_name(threshold), busy_);
  if (!slo_targets_.empty()) per_workload(governance::kTokensQuery, serving_, true);
  for (const double target : slo_targets_) {
    per_workload(governance::slo_minutes_query_name(target), serving_);
    per_workload(governance::slo_tokens_query_name(target), serving_);
  }
  const std::vector<double>& bounds = admission_wait_bounds();
  auto& wait_buckets = out["queue_wait_buckets"];
  auto& wait_sum = out["queue_wait_sum"];
  auto& wait_count = out["queue_wait_count"];
  for (const auto& [queue, q] : queue_wait_) {
    const double count = sum_in(q.count, from, to);
    if (count <= 0) continue;
    wait_count.push_back(sample({{"cluster_queue", queue}}, count));
    wait_sum.push_back(sample({{"cluster_queue", queue}}, sum_in(q.sum, from, to)));
    for (std::size_t i = 0; i < q.buckets.size(); ++i) {
      const std::string le = i < bounds.size() ? metrics::format_value(bounds[i]) : std::string("+Inf");
      wait_buckets.push_back(sample({{"cluster_queue", queue}, {"le", le}}, sum_in(q.buckets[i], from, to)));
    }
  }
  auto& loans = out["loans"];
  for (const auto& [k, values] : loans_) {
    const double v = sum_in(values, from, to);
    if (v > 0) {
      loans.push_back(sample({{"lender", std::get<0>(k)}, {"borrower", std::get<1>(k)}, {"pool", std::get<2>(k)}}, v));
    }
  }
  auto& loss = out["recompute_loss"];
  for (const auto& [k, values] : recompute_loss_) {
    const double v = sum_in(values, from, to);
    if (v > 0) loss.push_back(sample({{"business_group", k.first}, {"pool", k.second}}, v));
  }
  auto& capacity = out["capacity"];
  for (const auto& [k, values] : capacity_) {
    const double v = sum_in(values, from, to);
    if (v > 0) capacity.push_back(sample({{"pool", k.first}, {"gpu_model", k.second}}, v));
  }
  auto& quota = out["quota"];
  for (const auto& [k, values] : quota_) {
    const double v = sum_in(values, from, to);
    if (v > 0) {
      quota.push_back(
          sample({{"business_group", std::get<0>(k)}, {"pool", std::get<1>(k)}, {"kind", std::get<2>(k)}}, v));
    }
  }
  return out;
}

Expected<governance::Showback> TwinGovernance::showback(const governance::ShowbackPeriod& period) const {
  static const policy::PlatformGuardrailsSpec kNoGuardrails{};
  const policy::PlatformGuardrailsSpec* g = policies_.guardrails_spec();
  return governance::showback_from(showback_answers(period), period, scan_policies_, g != nullptr ? *g : kNoGuardrails,
                                   slos_);
}

governance::Answers TwinGovernance::review_answers(const governance::ShowbackPeriod& period) const {
  governance::Answers out = showback_answers(period);
  auto sample = [](std::map<std::string, std::string> labels, double value) {
    std::erase_if(labels, [](const auto& kv) { return kv.second.empty(); });
    return PromSample{std::move(labels), value, 0};
  };
  const std::int64_t from = period.from_ms;
  const std::int64_t to = period.to_ms;
  auto in_period = [&](std::int64_t t) { return t >= from && t < to; };
  // borrowing_minutes: minutes a group borrowed anything on a pool (summed over lenders).
  std::map<std::pair<std::string, std::string>, std::set<std::int64_t>> borrowing;
  for (const auto& [k, values] : loans_) {
    for (const MinuteValue& v : values) {
      if (v.value > 0 && in_period(v.t_ms)) borrowing[{std::get<1>(k), std::get<2>(k)}].insert(v.t_ms);
    }
  }
  auto& borrowing_minutes = out["borrowing_minutes"];
  for (const auto& [k, minutes] : borrowing) {
    borrowing_minutes.push_back(sample({{"borrower", k.first}, {"pool", k.second}}, static_cast<double>(minutes.size())));
  }
  auto& pending = out["pending_minutes"];
  for (const auto& [queue, values] : pending_) {
    const double v = sum_in(values, from, to);
    if (v > 0) pending.push_back(sample({{"cluster_queue", queue}}, v));
  }
  auto& queues = out["cluster_queues"];
  for (const auto& [queue, values] : queues_seen_) {
    if (any_in(values, from, to)) queues.push_back(sample({{"cluster_queue", queue}}, 1));
  }
  // peak_used: the most GPUs a group held on a pool in any minute.
  std::map<std::pair<std::string, std::string>, std::map<std::int64_t, double>> used;
  for (const auto& [k, values] : allocated_) {
    for (const MinuteValue& v : values) {
      if (in_period(v.t_ms)) used[{k[0], k[7]}][v.t_ms] += v.value;
    }
  }
  auto& peak = out["peak_used"];
  for (const auto& [k, minutes] : used) {
    double most = 0;
    for (const auto& [t, v] : minutes) most = std::max(most, v);
    peak.push_back(sample({{"business_group", k.first}, {"pool", k.second}}, most));
  }
  // idle_above_floor_<n>: minutes with more pods than n and one of them idle.
  std::set<int> floors;
  for (const policy::PolicyObject& p : policies_.policies()) {
    if (p.kind == policy::Kind::InferenceScalingPolicy) floors.insert(p.as<policy::InferenceScalingPolicySpec>().min_replicas);
  }
  for (const int floor : floors) {
    auto& idle = out[governance::idle_above_floor_query_name(floor)];
    for (const auto& [w, minutes] : replicas_) {
      double n = 0;
      for (const ReplicasMinute& m : minutes) {
        if (in_period(m.t_ms) && m.pods > floor && m.idle >= 1) n += 1;
      }
      if (n > 0) idle.push_back(sample({{"namespace", w.first}, {"workload", w.second}}, n));
    }
  }
  return out;
}

Expected<std::vector<governance::Finding>> TwinGovernance::review(const governance::ShowbackPeriod& period,
                                                                  const governance::ReviewOptions& options) const {
  auto s = showback(period);
  if (!s) return Unexpected{s.error()};
  // The alert record as the scanner's store would fold it: each alert id is one opening.
  governance::AlertBook book;
  book.open = open_;
  book.last_ids = last_ids_;
  for (const auto& [uid, id] : last_ids_) book.reopened[uid] = id;
  return governance::review(*s, review_answers(period), policies_, &book, options);
}

Expected<std::vector<governance::Kpi>> TwinGovernance::kpis(const governance::ShowbackPeriod& period) const {
  auto s = showback(period);
  if (!s) return Unexpected{s.error()};
  return governance::kpis(*s, showback_answers(period));
}

Expected<std::vector<governance::LeaderboardEntry>> TwinGovernance::leaderboard(const governance::ShowbackPeriod& period,
                                                                               double min_gpu_hours) const {
  static const policy::PlatformGuardrailsSpec kNoGuardrails{};
  auto s = showback(period);
  if (!s) return Unexpected{s.error()};
  const policy::PlatformGuardrailsSpec* g = policies_.guardrails_spec();
  return governance::leaderboard(*s, g != nullptr ? *g : kNoGuardrails, min_gpu_hours);
}

void TwinGovernance::scan(std::int64_t now_ms) {
  auto facts = governance::facts_from(scan_answers(), scan_policies_);
  if (!facts) {
    scan_error_ = facts.error();
    return;
  }
  scan_error_.clear();
  std::vector<governance::Observed> observed;
  observed.reserve(facts->size());
  for (governance::WorkloadFacts& w : *facts) {
    const auto cp = last_.last_checkpoint_ms.find(w.namespace_name + "/" + w.workload);
    if (cp != last_.last_checkpoint_ms.end()) w.last_checkpoint_ms = cp->second;
    governance::Verdict v = governance::assess(w, scan_policies_, now_ms);
    observed.push_back({std::move(w), v});
  }
  governance::ScanResult result = governance::step(open_, last_ids_, observed, now_ms);
  // No notifier on the twin: every notice the scan asks for is taken.
  for (const governance::Transition& tr : result.transitions) {
    const governance::Alert& a = tr.alert;
    auto& id = last_ids_[a.workload_uid];
    id = std::max(id, a.id);
    if (a.state == governance::AlertState::Resolved) {
      open_.erase(a.workload_uid);
      resolved_.push_back(a);
      if (resolved_.size() > kResolvedKept) resolved_.pop_front();
    } else {
      open_[a.workload_uid] = a;
    }
  }
  last_verdicts_ = std::move(result.verdicts);
  last_excluded_ = std::move(result.excluded);
  last_scan_ms_ = now_ms;
  ++scans_;
}

Expected<governance::Alert> TwinGovernance::check_decision(const std::string& workload_uid, bool approve,
                                                           const std::string& by, const std::string& reason,
                                                           std::int64_t now_ms, const std::string& downgrade_to) const {
  governance::DecisionRequest request;
  request.workload_uid = workload_uid;
  request.approve = approve;
  request.user.username = by;
  request.reason = reason;
  request.downgrade_to = downgrade_to;
  auto t = governance::decide_with_authority(open_, request, policies_, now_ms);
  if (!t) return Unexpected{t.error()};
  return t->alert;
}

Expected<governance::Alert> TwinGovernance::decide(const std::string& workload_uid, bool approve, const std::string& by,
                                                   const std::string& reason, std::int64_t now_ms,
                                                   const std::string& downgrade_to) {
  auto alert = check_decision(workload_uid, approve, by, reason, now_ms, downgrade_to);
  if (!alert) return alert;
  open_[workload_uid] = *alert;
  return alert;
}

std::optional<std::string> TwinGovernance::twin_workload(const std::string& workload_uid) const {
  for (const DeviceMinute& d : last_.devices) {
    if (d.workload_uid == workload_uid && !d.twin_workload.empty()) return d.twin_workload;
  }
  return std::nullopt;
}

Json TwinGovernance::alerts_json() const {
  Json open = Json::array();
  for (const auto& [uid, a] : open_) {
    Json j = governance::to_json(a);
    // What a decision form may offer instead of a reclaim (governance/reclaim_approval.hpp).
    if (a.state == governance::AlertState::ReclaimCandidate && !a.decision) {
      j["downgradeOptions"] = governance::downgrade_options(a, policies_);
    }
    open.push_back(std::move(j));
  }
  Json resolved = Json::array();
  for (const governance::Alert& a : resolved_) resolved.push_back(governance::to_json(a));
  Json out = Json::object();
  out["scannedAt"] =
      last_scan_ms_ ? Json(format_rfc3339(Timestamp(std::chrono::milliseconds(*last_scan_ms_)))) : Json(nullptr);
  out["scanEverySeconds"] = scan_every_ms_ / 1000;
  out["scans"] = scans_;
  out["verdicts"] = last_verdicts_;
  out["excluded"] = last_excluded_;
  if (!scan_error_.empty()) out["error"] = scan_error_;
  out["open"] = std::move(open);
  out["resolved"] = std::move(resolved);
  return out;
}

}  // namespace gpubank::twin::live
