#include "governance/showback.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <tuple>

#include "core/timestamp.hpp"
#include "governance/text.hpp"
#include "metrics/job_phase.hpp"

namespace gpubank::governance {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::int64_t kMinuteMs = 60'000;
constexpr std::int64_t kMaxMinutes = 400LL * 24 * 60;
constexpr const char* kUnknown = "unknown";

// A device held by n containers counts 1/n for each (docs/metrics-contract.md).
constexpr const char* kShare =
    "gpubank_gpu_allocation_info / on (cluster, node, gpu_uuid, gpu_instance) group_left count by (cluster, node, "
    "gpu_uuid, gpu_instance) (gpubank_gpu_allocation_info)";
constexpr const char* kUtilization =
    "(100 * DCGM_FI_PROF_GR_ENGINE_ACTIVE{mapping_status=\"mapped\"} or DCGM_FI_DEV_GPU_UTIL{mapping_status=\"mapped\"})";

// The pod's workload, one series per pod, to join vLLM's per-pod series to.
constexpr const char* kPodWorkload =
    "max by (cluster, namespace, pod, workload_kind, workload, workload_uid) (gpubank_gpu_allocation_info)";
constexpr const char* kByWorkload = "(cluster, namespace, workload_kind, workload, workload_uid)";

// Per workload, tokens per minute (prompt and generated) and TTFT p95 at each point. A
// two-minute rate: at least two samples at any scrape interval up to a minute, whether the
// range is closed (Prometheus 2) or open on the left (3).
std::string tokens_per_minute() {
  return std::string("sum by ") + kByWorkload +
         " ((sum by (cluster, namespace, pod) (rate(vllm:prompt_tokens_total[2m])) + sum by (cluster, namespace, pod) "
         "(rate(vllm:generation_tokens_total[2m]))) * 60 * on (cluster, namespace, pod) group_left (workload_kind, "
         "workload, workload_uid) " + kPodWorkload + ")";
}
std::string ttft_p95() {
  return std::string("histogram_quantile(0.95, sum by (cluster, namespace, workload_kind, workload, workload_uid, le) "
                     "(rate(vllm:time_to_first_token_seconds_bucket[2m]) * on (cluster, namespace, pod) group_left "
                     "(workload_kind, workload, workload_uid) ") + kPodWorkload + "))";
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// Per device and minute, 1 or 0. A pod that reports training steps (gpubank_training_steps_total,
// docs/metrics-contract.md) is busy in a minute in which its steps advanced and low in one in
// which they did not, whatever its utilisation: a job hung in a collective spins its GPUs
// without progress, an input-bound one progresses at low utilisation. Any other device is
// busy at or above the threshold and low below it. Two minutes of increase: at least two
// samples at any scrape interval up to a minute.
std::string device_minute(double threshold, bool busy) {
  const std::string steps = "max by (cluster, namespace, pod) (increase(" + std::string(kTrainingStepsSeries) + "[2m]))";
  return std::string("((") + kUtilization + (busy ? " >= bool " : " < bool ") + number(threshold) +
         ") unless on (cluster, namespace, pod) " + steps + ") or ((" + kUtilization +
         " >= bool -1) * on (cluster, namespace, pod) group_left () (" + steps + (busy ? " > bool 0" : " == bool 0") +
         "))";
}

auto key_of(const ShowbackRow& r) {
  return std::tie(r.pool, r.business_group, r.owner_id, r.namespace_name, r.workload_kind, r.workload, r.workload_uid,
                  r.gpu_model, r.partition);
}

void add(ShowbackRow& into, const ShowbackRow& r) {
  into.allocated_gpu_hours += r.allocated_gpu_hours;
  into.low_utilization_gpu_hours += r.low_utilization_gpu_hours;
  into.serving_floor_gpu_hours += r.serving_floor_gpu_hours;
  into.cost += r.cost;
  into.low_utilization_cost += r.low_utilization_cost;
  into.effective_gpu_hours += r.effective_gpu_hours;
  into.measured_gpu_hours += r.measured_gpu_hours;
  into.tokens += r.tokens;
  into.effective_tokens += r.effective_tokens;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The LowUtilizationPolicy governing a row's workload, if it sets a utilisation threshold.
const ScanPolicy* threshold_policy(const ShowbackRow& r, const std::vector<ScanPolicy>& policies) {
  WorkloadFacts w;
  w.workload_type = r.workload_type;
  w.business_group = r.business_group;
  w.pool = r.pool;
  const ScanPolicy* p = governing_policy(w, policies);
  return p != nullptr && p->spec.thresholds.average_gpu_utilization ? p : nullptr;
}

std::string level_name(ShowbackLevel level) {
  return level == ShowbackLevel::Group ? "group" : level == ShowbackLevel::Owner ? "owner" : "workload";
}

}  // namespace

std::optional<LowQueryKind> low_query_kind(const ScanPolicy& p) {
  if (!p.spec.thresholds.average_gpu_utilization) return std::nullopt;
  return LowQueryKind{*p.spec.thresholds.average_gpu_utilization, p.spec.startup_grace_period.milliseconds() / 1000,
                      p.spec.checkpoint_grace_period.milliseconds() / 1000, p.spec.window.milliseconds() / 1000};
}

std::set<LowQueryKind> low_query_kinds(const std::vector<ScanPolicy>& policies) {
  std::set<LowQueryKind> kinds;
  for (const ScanPolicy& p : policies) {
    if (auto k = low_query_kind(p)) kinds.insert(*k);
  }
  return kinds;
}

std::string low_query_name(const LowQueryKind& k) {
  return "low_below_" + number(k.threshold) + "_after_" + std::to_string(k.startup_grace_s) + "s_ckpt_" +
         std::to_string(k.checkpoint_grace_s) + "s_window_" + std::to_string(k.window_s) + "s";
}

std::string busy_query_name(double threshold) { return "busy_at_" + number(threshold); }
std::string slo_minutes_query_name(double seconds) { return "slo_gpu_minutes_ttft_" + number(seconds) + "s"; }
std::string slo_tokens_query_name(double seconds) { return "slo_tokens_ttft_" + number(seconds) + "s"; }

std::vector<ServingSlo> serving_slos(const policy::PolicySet& set) {
  std::vector<ServingSlo> out;
  for (const policy::PolicyObject& p : set.policies()) {
    if (p.kind != policy::Kind::InferenceScalingPolicy) continue;
    const auto& spec = p.as<policy::InferenceScalingPolicySpec>();
    if (!spec.scale_up.ttft_p95) continue;
    out.push_back({p.metadata.name, spec.workload_ref.namespace_, spec.workload_ref.name,
                   static_cast<double>(spec.scale_up.ttft_p95->milliseconds()) / 1000.0});
  }
  return out;
}

std::optional<ShowbackLevel> showback_level(std::string_view name) {
  if (name == "group") return ShowbackLevel::Group;
  if (name == "owner") return ShowbackLevel::Owner;
  if (name == "workload") return ShowbackLevel::Workload;
  return std::nullopt;
}

Expected<ShowbackPeriod> showback_period(std::int64_t from_ms, std::int64_t to_ms) {
  ShowbackPeriod p;
  if (from_ms < 0 || to_ms < 0) return Unexpected{std::string("--from/--to: must not be before 1970")};
  p.from_ms = (from_ms + kMinuteMs - 1) / kMinuteMs * kMinuteMs;  // up to a whole minute
  p.to_ms = to_ms / kMinuteMs * kMinuteMs;                         // down to one
  if (p.to_ms <= p.from_ms) return Unexpected{std::string("--from/--to: the period holds no whole minute")};
  if (p.minutes() > kMaxMinutes) return Unexpected{std::string("--from/--to: the period is longer than 400 days")};
  return p;
}

std::vector<Query> plan_showback(const ShowbackPeriod& period, const std::vector<ScanPolicy>& policies,
                                 const std::vector<ServingSlo>& slos) {
  const std::string range = "[" + std::to_string(period.minutes()) + "m:1m]";
  std::vector<Query> out;
  out.push_back({"allocated", "sum by (cluster, business_group, owner_id, namespace, workload_kind, workload, "
                              "workload_uid, workload_type, pool, gpu_model, partition, capacity_role) (sum_over_time((" +
                                  std::string(kShare) + ")" + range + "))"});
  const std::set<LowQueryKind> kinds = low_query_kinds(policies);
  for (const LowQueryKind& k : kinds) {
    // Minutes under the startup grace (loading, compiling) are not waste: pods known to be
    // younger than the grace at that minute are left out. Nor is a checkpoint's dip: the
    // job's last checkpoint notice or completion less than the checkpoint grace before. Nor
    // a minute in which the job itself says it is loading, compiling, evaluating,
    // checkpointing or recovering, unless it has said so for the policy's whole window.
    std::string expr = "sum by (cluster, namespace, workload_kind, workload, workload_uid) (sum_over_time(((" +
                       device_minute(k.threshold, false) +
                       " / on (cluster, Hostname, UUID, GPU_I_ID) group_left count by (cluster, Hostname, UUID, "
                       "GPU_I_ID) " + kUtilization + ") unless on (cluster, namespace, pod) (time() - "
                       "gpubank_pod_start_time_seconds <= " + std::to_string(k.startup_grace_s) + ")";
    if (k.checkpoint_grace_s > 0) {
      expr += " unless on (cluster, namespace, workload_kind, workload) (time() - "
              "gpubank_last_checkpoint_timestamp_seconds <= " + std::to_string(k.checkpoint_grace_s) + ")";
    }
    expr += " unless on (cluster, namespace, pod) " +
            metrics::job_phase::excused_pods("", std::to_string(k.window_s) + "s");
    out.push_back({low_query_name(k), expr + ")" + range + "))"});
  }
  std::set<double> thresholds;
  for (const LowQueryKind& k : kinds) thresholds.insert(k.threshold);
  for (const double t : thresholds) {
    // Effective where no SLO says otherwise: busy (or progressing) device-minutes, shared
    // among the holders.
    out.push_back({busy_query_name(t),
                   std::string("sum by ") + kByWorkload + " (sum_over_time((" + device_minute(t, true) +
                       " / on (cluster, Hostname, UUID, GPU_I_ID) group_left count by (cluster, Hostname, UUID, "
                       "GPU_I_ID) " + kUtilization + ")" + range + "))"});
  }
  std::set<double> targets;
  for (const ServingSlo& slo : slos) targets.insert(slo.ttft_p95_seconds);
  if (!targets.empty()) {
    out.push_back({kTokensQuery, std::string("sum by ") + kByWorkload + " (sum_over_time(" + tokens_per_minute() + range + "))"});
  }
  for (const double t : targets) {
    const std::string met = " * on " + std::string(kByWorkload) + " (" + ttft_p95() + " <= bool " + number(t) + ")";
    out.push_back({slo_minutes_query_name(t), std::string("sum by ") + kByWorkload + " (sum_over_time((sum by " +
                                                  kByWorkload + " (" + kShare + ")" + met + ")" + range + "))"});
    out.push_back({slo_tokens_query_name(t), std::string("sum by ") + kByWorkload + " (sum_over_time((" +
                                                 tokens_per_minute() + met + ")" + range + "))"});
  }
  // Kueue's admission wait (per ClusterQueue, `<group>-<pool>` as rendered) over the period:
  // what the buckets, the sum and the count grew by (rankings.hpp: queue wait).
  const std::string window = "[" + std::to_string(period.minutes()) + "m]";
  const std::string leaders = "{replica_role!=\"follower\"}";
  out.push_back({"queue_wait_buckets", "sum by (cluster, cluster_queue, le) (increase(kueue_admission_wait_time_seconds_bucket" +
                                           leaders + window + "))"});
  out.push_back({"queue_wait_sum", "sum by (cluster, cluster_queue) (increase(kueue_admission_wait_time_seconds_sum" +
                                       leaders + window + "))"});
  out.push_back({"queue_wait_count", "sum by (cluster, cluster_queue) (increase(kueue_admission_wait_time_seconds_count" +
                                         leaders + window + "))"});
  out.push_back({"loans", "sum by (cluster, lender, borrower, pool) (sum_over_time(gpubank_bank_loan_gpus" + range + "))"});
  out.push_back({"recompute_loss", "sum by (cluster, business_group, pool) (increase(gpubank_recompute_loss_gpu_hours_"
                                   "total" + window + "))"});
  out.push_back({"capacity", "sum by (cluster, pool, gpu_model) (sum_over_time(gpubank_gpu_info" + range + "))"});
  out.push_back({"quota", "sum by (cluster, business_group, pool, kind) (sum_over_time(gpubank_quota_gpus{kind=~"
                          "\"guaranteed|borrowable\"}" + range + "))"});
  return out;
}

Expected<Showback> showback_from(const Answers& answers, const ShowbackPeriod& period,
                                 const std::vector<ScanPolicy>& policies,
                                 const policy::PlatformGuardrailsSpec& guardrails,
                                 const std::vector<ServingSlo>& slos) {
  auto answer = [&](const std::string& name) -> const std::vector<serving::PromSample>* {
    const auto it = answers.find(name);
    return it == answers.end() ? nullptr : &it->second;
  };
  Showback out;
  out.period = period;
  out.currency = guardrails.currency;
  std::set<std::string> unpriced;

  // Device-minutes -> GPU-hours, per workload and pool.
  std::map<std::string, double> allocated_by_uid;
  std::vector<std::pair<ShowbackRow, std::string>> rows;  // with capacity_role
  if (const auto* a = answer("allocated")) {
    for (const serving::PromSample& s : *a) {
      if (!std::isfinite(s.value) || s.value < 0) {
        return Unexpected{std::string("allocated: a GPU-minute count that is not a non-negative number")};
      }
      ShowbackRow r;
      r.business_group = label(s, "business_group");
      if (r.business_group.empty()) r.business_group = kUnknown;
      r.owner_id = label(s, "owner_id");
      r.namespace_name = label(s, "namespace");
      r.workload_kind = label(s, "workload_kind");
      r.workload = label(s, "workload");
      r.workload_uid = label(s, "workload_uid");
      r.workload_type = label(s, "workload_type");
      r.pool = label(s, "pool");
      r.gpu_model = label(s, "gpu_model");
      r.partition = label(s, "partition");
      r.allocated_gpu_hours = s.value / 60.0;
      const std::string role = label(s, "capacity_role");
      if (role == "serving-floor") r.serving_floor_gpu_hours = r.allocated_gpu_hours;
      const std::string key = workload_key(r.workload_uid, r.workload_kind, r.namespace_name, r.workload);
      if (!key.empty()) allocated_by_uid[key] += r.allocated_gpu_hours;
      rows.emplace_back(std::move(r), role);
    }
  }

  // Low device-minutes under each workload's own threshold, shared among its rows; the
  // same for busy minutes, SLO minutes and tokens.
  std::map<std::string, std::map<std::string, double>> per_workload_minutes;  // query -> workload -> value
  for (const auto& [name, samples] : answers) {
    if (!name.starts_with("low_below_") && !name.starts_with("busy_at_") && !name.starts_with("slo_") &&
        name != kTokensQuery) {
      continue;
    }
    for (const serving::PromSample& s : samples) {
      const std::string uid = workload_key(label(s, "workload_uid"), label(s, "workload_kind"), label(s, "namespace"),
                                           label(s, "workload"));
      if (uid.empty() || !std::isfinite(s.value) || s.value < 0) continue;  // unattributed: no policy governs it
      per_workload_minutes[name][uid] += s.value;
    }
  }
  for (auto& [r, role] : rows) {
    const std::string key = workload_key(r.workload_uid, r.workload_kind, r.namespace_name, r.workload);
    if (key.empty() || role == "serving-floor") continue;
    const ScanPolicy* p = threshold_policy(r, policies);
    if (p == nullptr) continue;
    const auto q = per_workload_minutes.find(low_query_name(*low_query_kind(*p)));
    if (q == per_workload_minutes.end()) continue;
    const auto m = q->second.find(key);
    if (m == q->second.end()) continue;
    const double total = allocated_by_uid[key];
    const double share = total > 0 ? r.allocated_gpu_hours / total : 0;
    // Never more low hours than held: a device sampled while its allocation was not.
    r.low_utilization_gpu_hours = std::min(r.allocated_gpu_hours, m->second / 60.0 * share);
  }

  // Effective hours and tokens, where a signal judges them.
  auto per_workload = [&](const std::string& query, const std::string& key) -> std::optional<double> {
    const auto q = per_workload_minutes.find(query);
    if (q == per_workload_minutes.end()) return std::nullopt;
    const auto m = q->second.find(key);
    if (m == q->second.end()) return std::nullopt;
    return m->second;
  };
  for (auto& [r, role] : rows) {
    const std::string key = workload_key(r.workload_uid, r.workload_kind, r.namespace_name, r.workload);
    if (key.empty()) continue;
    const double total = allocated_by_uid[key];
    const double share = total > 0 ? r.allocated_gpu_hours / total : 0;
    const ServingSlo* slo = nullptr;
    if (r.workload_type == "inference") {
      for (const ServingSlo& x : slos) {
        if (x.namespace_name == r.namespace_name && x.workload == r.workload) slo = &x;
      }
    }
    const auto tokens = per_workload(kTokensQuery, key);  // none: no vLLM series of its pods
    if (tokens) r.tokens = *tokens * share;
    if (slo != nullptr && tokens) {
      r.measured_gpu_hours = r.allocated_gpu_hours;
      const double minutes = per_workload(slo_minutes_query_name(slo->ttft_p95_seconds), key).value_or(0);
      r.effective_gpu_hours = std::min(r.allocated_gpu_hours, minutes / 60.0 * share);
      r.effective_tokens = per_workload(slo_tokens_query_name(slo->ttft_p95_seconds), key).value_or(0) * share;
      continue;
    }
    const ScanPolicy* p = threshold_policy(r, policies);
    if (p == nullptr) continue;
    r.measured_gpu_hours = r.allocated_gpu_hours;
    const double minutes = per_workload(busy_query_name(*p->spec.thresholds.average_gpu_utilization), key).value_or(0);
    r.effective_gpu_hours = std::min(r.allocated_gpu_hours, minutes / 60.0 * share);
  }

  for (auto& [r, role] : rows) {
    const auto price = guardrails.gpu_hour_price.find(r.gpu_model);
    if (price == guardrails.gpu_hour_price.end()) {
      if (!r.gpu_model.empty()) unpriced.insert(r.gpu_model);
    } else {
      r.cost = r.allocated_gpu_hours * price->second;
      r.low_utilization_cost = r.low_utilization_gpu_hours * price->second;
    }
    out.rows.push_back(std::move(r));
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const ShowbackRow& a, const ShowbackRow& b) {
    return key_of(a) < key_of(b);
  });

  if (const auto* loans = answer("loans")) {
    for (const serving::PromSample& s : *loans) {
      if (!std::isfinite(s.value) || s.value < 0) continue;
      const std::string pool = label(s, "pool");
      out.loans[{label(s, "borrower"), pool}].borrowed_gpu_hours += s.value / 60.0;
      out.loans[{label(s, "lender"), pool}].lent_gpu_hours += s.value / 60.0;
    }
  }
  if (const auto* loss = answer("recompute_loss")) {
    for (const serving::PromSample& s : *loss) {
      if (!std::isfinite(s.value) || s.value <= 0) continue;  // a reset counter reads 0, never less
      std::string group = label(s, "business_group");
      out.loans[{group.empty() ? kUnknown : std::move(group), label(s, "pool")}].recompute_loss_gpu_hours += s.value;
    }
  }
  out.unpriced_models.assign(unpriced.begin(), unpriced.end());
  return out;
}

std::vector<ShowbackRow> roll_up(const std::vector<ShowbackRow>& rows, ShowbackLevel level) {
  if (level == ShowbackLevel::Workload) return rows;
  std::map<std::tuple<std::string, std::string, std::string, std::string, std::string>, ShowbackRow> sums;
  for (const ShowbackRow& r : rows) {
    const std::string owner = level == ShowbackLevel::Owner ? r.owner_id : std::string();
    ShowbackRow& s = sums[{r.pool, r.business_group, owner, r.gpu_model, r.partition}];
    if (s.pool.empty() && s.business_group.empty()) {
      s.pool = r.pool;
      s.business_group = r.business_group;
      s.owner_id = owner;
      s.gpu_model = r.gpu_model;
      s.partition = r.partition;
    }
    add(s, r);
  }
  std::vector<ShowbackRow> out;
  out.reserve(sums.size());
  for (auto& [key, r] : sums) out.push_back(std::move(r));
  return out;
}

std::vector<ShowbackRow> showback_totals(const std::vector<ShowbackRow>& rows) {
  std::map<std::string, ShowbackRow> pools;
  ShowbackRow all;
  for (const ShowbackRow& r : rows) {
    ShowbackRow& p = pools[r.pool];
    p.pool = r.pool;
    p.gpu_model = r.gpu_model;
    add(p, r);
    add(all, r);
  }
  std::vector<ShowbackRow> out;
  for (auto& [pool, r] : pools) out.push_back(std::move(r));
  out.push_back(std::move(all));
  return out;
}

Json to_json(const Showback& s, ShowbackLevel level) {
  auto row_json = [](const ShowbackRow& r) {
    Json j;
    if (!r.pool.empty()) j["pool"] = r.pool;
    if (!r.business_group.empty()) j["businessGroup"] = r.business_group;
    if (!r.owner_id.empty()) j["ownerId"] = r.owner_id;
    if (!r.workload.empty()) {
      j["namespace"] = r.namespace_name;
      j["workloadKind"] = r.workload_kind;
      j["workload"] = r.workload;
      if (!r.workload_uid.empty()) j["workloadUid"] = r.workload_uid;
      j["workloadType"] = r.workload_type;
    }
    if (!r.gpu_model.empty()) j["gpuModel"] = r.gpu_model;
    if (!r.partition.empty()) j["partition"] = r.partition;
    j["allocatedGpuHours"] = r.allocated_gpu_hours;
    j["lowUtilizationGpuHours"] = r.low_utilization_gpu_hours;
    j["servingFloorGpuHours"] = r.serving_floor_gpu_hours;
    j["cost"] = r.cost;
    j["lowUtilizationCost"] = r.low_utilization_cost;
    j["effectiveGpuHours"] = r.effective_gpu_hours;
    j["measuredGpuHours"] = r.measured_gpu_hours;
    if (r.tokens > 0 || r.effective_tokens > 0) {
      j["tokens"] = r.tokens;
      j["effectiveTokens"] = r.effective_tokens;
    }
    return j;
  };
  Json rows = Json::array();
  for (const ShowbackRow& r : roll_up(s.rows, level)) rows.push_back(row_json(r));
  Json totals = Json::array();
  for (const ShowbackRow& r : showback_totals(s.rows)) totals.push_back(row_json(r));
  Json loans = Json::array();
  for (const auto& [key, l] : s.loans) {
    loans.push_back(Json{{"businessGroup", key.first}, {"pool", key.second},
                         {"borrowedGpuHours", l.borrowed_gpu_hours}, {"lentGpuHours", l.lent_gpu_hours},
                         {"recomputeLossGpuHours", l.recompute_loss_gpu_hours}});
  }
  Json out{{"from", format_rfc3339(Timestamp(std::chrono::milliseconds(s.period.from_ms)))},
           {"to", format_rfc3339(Timestamp(std::chrono::milliseconds(s.period.to_ms)))},
           {"level", level_name(level)},
           {"currency", s.currency},
           {"rows", std::move(rows)},
           {"totals", std::move(totals)},
           {"loans", std::move(loans)}};
  if (!s.unpriced_models.empty()) out["unpricedGpuModels"] = s.unpriced_models;
  return out;
}

std::string to_csv(const Showback& s, ShowbackLevel level) {
  std::ostringstream out;
  out << "pool,business_group,owner_id,namespace,workload_kind,workload,workload_uid,gpu_model,partition,"
         "allocated_gpu_hours,low_utilization_gpu_hours,serving_floor_gpu_hours,cost,low_utilization_cost,currency,"
         "effective_gpu_hours,measured_gpu_hours,tokens,effective_tokens\n";
  for (const ShowbackRow& r : roll_up(s.rows, level)) {
    for (const std::string* f : {&r.pool, &r.business_group, &r.owner_id, &r.namespace_name, &r.workload_kind,
                                 &r.workload, &r.workload_uid, &r.gpu_model, &r.partition}) {
      out << csv_field(*f) << ',';
    }
    out << fixed(r.allocated_gpu_hours, 4) << ',' << fixed(r.low_utilization_gpu_hours, 4) << ','
        << fixed(r.serving_floor_gpu_hours, 4) << ',' << fixed(r.cost, 2) << ',' << fixed(r.low_utilization_cost, 2)
        << ',' << csv_field(s.currency) << ',' << fixed(r.effective_gpu_hours, 4) << ','
        << fixed(r.measured_gpu_hours, 4) << ',' << fixed(r.tokens, 0) << ',' << fixed(r.effective_tokens, 0) << '\n';
  }
  return out.str();
}

std::string to_table(const Showback& s, ShowbackLevel level) {
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"POOL", "GROUP", level == ShowbackLevel::Group ? "" : "OWNER",
                   level == ShowbackLevel::Workload ? "WORKLOAD" : "", "GPU", "GPU-HOURS", "LOW-UTIL", "FLOOR",
                   "EFFECTIVE", "COST " + s.currency, "LOW-UTIL COST"});
  auto push = [&](const ShowbackRow& r, const std::string& group) {
    const std::string workload =
        r.workload.empty() ? std::string() : r.workload_kind + " " + r.namespace_name + "/" + r.workload;
    cells.push_back({r.pool, group, r.owner_id, workload,
                     r.gpu_model + (r.partition.empty() || r.partition == "full" ? "" : " " + r.partition),
                     fixed(r.allocated_gpu_hours, 2), fixed(r.low_utilization_gpu_hours, 2),
                     fixed(r.serving_floor_gpu_hours, 2),
                     r.measured_gpu_hours > 0 ? fixed(r.effective_gpu_hours, 2) : std::string("-"), fixed(r.cost, 2),
                     fixed(r.low_utilization_cost, 2)});
  };
  for (const ShowbackRow& r : roll_up(s.rows, level)) push(r, r.business_group);
  for (const ShowbackRow& r : showback_totals(s.rows)) push(r, r.pool.empty() ? "TOTAL" : "(pool total)");
  return render_columns(cells, 5);
}

}  // namespace gpubank::governance
