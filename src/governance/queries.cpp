#include "governance/queries.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <set>
#include <tuple>

#include "document/decode.hpp"
#include "governance/text.hpp"
#include "metrics/job_phase.hpp"
#include "policy/schema.hpp"

namespace gpubank::governance {
namespace {

// The labels a workload's identity is summed by (docs/metrics-contract.md).
// A workload: its UID, or kind, namespace and name where the pods do not carry the UID
// (Deployments, InferenceServices, LeaderWorkerSets: docs/attribution.md).
constexpr const char* kWorkload = "cluster, namespace, workload_kind, workload, workload_uid";
constexpr const char* kIdentity =
    "cluster, workload_uid, business_group, owner_id, namespace, workload_kind, workload, workload_type, pool, "
    "gpu_model, partition, capacity_role, checkpointable, keep_running_until";

// The workload's key (workload_key()) from a sample's labels.
std::string key_of(const serving::PromSample& s) {
  return workload_key(label(s, "workload_uid"), label(s, "workload_kind"), label(s, "namespace"), label(s, "workload"));
}

// Each distinct window with the workload types its policies govern, in window order.
std::map<std::int64_t, std::pair<Duration, std::set<std::string>>> windows_of(const std::vector<ScanPolicy>& policies) {
  std::map<std::int64_t, std::pair<Duration, std::set<std::string>>> out;
  for (const ScanPolicy& p : policies) {
    auto& [window, types] = out[p.spec.window.milliseconds()];
    window = p.spec.window;
    types.insert(std::string(doc::enum_name(p.spec.match.workload_type)));
  }
  return out;
}

std::string selector(const std::set<std::string>& types) {
  std::string alternatives;
  for (const std::string& t : types) alternatives += (alternatives.empty() ? "" : "|") + t;
  return "{mapping_status=\"mapped\", workload!=\"\", workload_type=~\"" + alternatives + "\"}";
}

// One expression per window, each tagged with its window, joined by `or`.
template <class PerWindow>
std::string over_windows(const std::vector<ScanPolicy>& policies, PerWindow per_window) {
  std::string out;
  for (const auto& [ms, entry] : windows_of(policies)) {
    const std::string w = promql_duration(entry.first);
    out += (out.empty() ? "" : "\nor ") + std::string("label_replace(") + per_window(w, selector(entry.second)) +
           ", \"window\", \"" + w + "\", \"\", \"\")";
  }
  return out;
}

// The lookback of the phase exception: the checkpoint grace, at least two minutes (a scrape
// interval up to a minute leaves two samples), so a phase that just ended still excuses.
Duration phase_lookback(const ScanPolicy& p) {
  return std::max(p.spec.checkpoint_grace_period, Duration(std::chrono::minutes(2)));
}

// The workload of a pod's samples: `* on (pod) group_left (...) kPodWorkload`.
constexpr const char* kPodWorkload =
    "max by (cluster, namespace, pod, workload_kind, workload, workload_uid) (gpubank_gpu_allocation_info{workload!=\"\"})";

bool sets_power(const std::vector<ScanPolicy>& policies) {
  return std::any_of(policies.begin(), policies.end(),
                     [](const ScanPolicy& p) { return p.spec.thresholds.average_power_fraction.has_value(); });
}

Expected<std::optional<std::int64_t>> integer_label(const serving::PromSample& s, const std::string& name,
                                                    std::string_view query) {
  const std::string text = label(s, name);
  if (text.empty()) return std::optional<std::int64_t>{};
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) {
    return Unexpected{std::string(query) + ": label " + name + " must be Unix seconds (digits), got \"" + text + "\""};
  }
  return std::optional<std::int64_t>(v);
}

// The training_phase answer into each training or batch workload governed by a policy with
// the sample's window and lookback.
std::optional<std::string> add_phases(const std::vector<serving::PromSample>& samples, const std::vector<ScanPolicy>& policies,
                          std::vector<WorkloadFacts>& workloads) {
  struct Phase {
    std::set<std::string> states;
    std::optional<double> fraction;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Phase> by;  // (key, window, lookback)
  for (const serving::PromSample& s : samples) {
    const std::string uid = key_of(s);
    const std::string window = label(s, "window");
    const std::string lookback = label(s, "lookback");
    const std::string measure = label(s, "measure");
    if (uid.empty() || window.empty() || lookback.empty()) {
      return std::string("training_phase: a sample without a workload, window or lookback");
    }
    Phase& p = by[{uid, window, lookback}];
    if (measure == "recent") {
      const std::string state = label(s, std::string(metrics::job_phase::kStateLabel));
      if (!metrics::job_phase::is_overhead(state)) {
        return "training_phase: workload " + uid + ": label " + std::string(metrics::job_phase::kStateLabel) +
               " must be an overhead state, got \"" + state + "\"";
      }
      p.states.insert(state);
    } else if (measure == "fraction") {
      if (std::isfinite(s.value) && s.value >= 0) p.fraction = std::min(1.0, s.value);
    } else {
      return "training_phase: label measure must be recent or fraction, got \"" + measure + "\"";
    }
  }
  for (WorkloadFacts& w : workloads) {
    const ScanPolicy* p = governing_policy(w, policies);
    if (p == nullptr) continue;
    const auto it = by.find({w.workload_uid, promql_duration(p->spec.window), promql_duration(phase_lookback(*p))});
    if (it == by.end()) continue;
    for (const std::string_view state : metrics::job_phase::kOverhead) {
      if (it->second.states.contains(std::string(state))) w.overhead_phases.emplace_back(state);
    }
    w.overhead_fraction = it->second.fraction;
  }
  return std::nullopt;  // no error
}

}  // namespace

std::string promql_duration(const Duration& d) { return d.to_string(); }

std::string workload_key(std::string_view uid, std::string_view kind, std::string_view namespace_name,
                         std::string_view name) {
  if (!uid.empty()) return std::string(uid);
  if (name.empty()) return {};
  return std::string(kind) + "/" + std::string(namespace_name) + "/" + std::string(name);
}

std::vector<Query> plan_queries(const std::vector<ScanPolicy>& policies) {
  std::vector<Query> out;
  out.push_back({"allocations", std::string("sum by (") + kIdentity +
                                    ") (gpubank_gpu_allocation_info{workload!=\"\"} / on (cluster, node, gpu_uuid, "
                                    "gpu_instance) group_left count by (cluster, node, gpu_uuid, gpu_instance) "
                                    "(gpubank_gpu_allocation_info))"});
  out.push_back({"starts", "min by (" + std::string(kWorkload) + ") (gpubank_pod_start_time_seconds{workload!=\"\"})"});
  out.push_back({"borrowing", "sum by (cluster, borrower, pool) (gpubank_bank_loan_gpus)"});
  if (policies.empty()) return out;
  out.push_back({"gpu_utilization", over_windows(policies, [](const std::string& w, const std::string& sel) {
                   return "avg by (" + std::string(kWorkload) + ") (100 * avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE" + sel +
                          "[" + w + "])) or avg by (" + std::string(kWorkload) + ") (avg_over_time(DCGM_FI_DEV_GPU_UTIL" + sel +
                          "[" + w + "]))";
                 })});
  out.push_back({"memory_utilization", over_windows(policies, [](const std::string& w, const std::string& sel) {
                   return "avg by (" + std::string(kWorkload) + ") (100 * avg_over_time(DCGM_FI_DEV_FB_USED" + sel + "[" + w +
                          "]) / (avg_over_time(DCGM_FI_DEV_FB_USED" + sel + "[" + w +
                          "]) + avg_over_time(DCGM_FI_DEV_FB_FREE" + sel + "[" + w + "])))";
                 })});
  // Token throughput of the serving workloads the policies govern: vLLM's prompt and
  // generated tokens per second over the window, its pods joined to their workload.
  std::vector<ScanPolicy> serving;
  std::copy_if(policies.begin(), policies.end(), std::back_inserter(serving),
               [](const ScanPolicy& p) { return p.spec.match.workload_type == policy::WorkloadType::Inference; });
  if (!serving.empty()) {
    out.push_back({"token_throughput", over_windows(serving, [](const std::string& w, const std::string&) {
                     return "sum by (" + std::string(kWorkload) + ") ((sum by (cluster, namespace, pod) "
                            "(rate(vllm:prompt_tokens_total[" + w + "])) + sum by (cluster, namespace, pod) "
                            "(rate(vllm:generation_tokens_total[" + w + "]))) * on (cluster, namespace, pod) "
                            "group_left (workload_kind, workload, workload_uid) max by (cluster, namespace, pod, "
                            "workload_kind, workload, workload_uid) (gpubank_gpu_allocation_info{workload!=\"\"}))";
                   })});
  }
  // Training progress of the training and batch work the policies govern: steps over the
  // window, the largest of a workload's pods (data-parallel ranks all count every step).
  std::vector<ScanPolicy> stepping;
  std::copy_if(policies.begin(), policies.end(), std::back_inserter(stepping), [](const ScanPolicy& p) {
    return p.spec.match.workload_type == policy::WorkloadType::Training ||
           p.spec.match.workload_type == policy::WorkloadType::Batch;
  });
  if (!stepping.empty()) {
    out.push_back({"training_progress", over_windows(stepping, [](const std::string& w, const std::string&) {
                     return "max by (" + std::string(kWorkload) + ") (increase(" + std::string(kTrainingStepsSeries) +
                            "[" + w + "]) * on (cluster, namespace, pod) group_left (workload_kind, workload, "
                            "workload_uid) max by (cluster, namespace, pod, workload_kind, workload, workload_uid) "
                            "(gpubank_gpu_allocation_info{workload!=\"\"}))";
                   })});
  }
  if (!stepping.empty()) {
    // The job's own phase (metrics/job_phase.hpp): which overhead states its pods were in
    // over the lookback ("recent", one sample per state) and the largest fraction of the
    // window any of its pods spent in them ("fraction"). One expression per distinct
    // (window, lookback), tagged with both.
    std::set<std::pair<std::string, std::string>> pairs;
    for (const ScanPolicy& p : stepping) pairs.insert({promql_duration(p.spec.window), promql_duration(phase_lookback(p))});
    std::string expr;
    const std::string join = " * on (cluster, namespace, pod) group_left (workload_kind, workload, workload_uid) " +
                             std::string(kPodWorkload);
    for (const auto& [window, lookback] : pairs) {
      const std::string recent = "label_replace(max by (" + std::string(kWorkload) + ", " +
                                 std::string(metrics::job_phase::kStateLabel) + ") (max_over_time(" +
                                 metrics::job_phase::overhead_series() + "[" + lookback + "])" + join +
                                 ") == 1, \"measure\", \"recent\", \"\", \"\")";
      const std::string fraction = "label_replace(max by (" + std::string(kWorkload) + ") (" +
                                   metrics::job_phase::overhead_fraction(window) + join +
                                   "), \"measure\", \"fraction\", \"\", \"\")";
      expr += (expr.empty() ? "" : "\nor ") + std::string("label_replace(label_replace(") + recent + " or " + fraction +
              ", \"window\", \"" + window + "\", \"\", \"\"), \"lookback\", \"" + lookback + "\", \"\", \"\")";
    }
    out.push_back({"training_phase", expr});
  }
  if (sets_power(policies)) {
    out.push_back({"power_fraction", over_windows(policies, [](const std::string& w, const std::string& sel) {
                     return "avg by (" + std::string(kWorkload) + ") (100 * avg_over_time(DCGM_FI_DEV_POWER_USAGE" + sel + "[" +
                            w + "]) / avg_over_time(DCGM_FI_DEV_ENFORCED_POWER_LIMIT" + sel + "[" + w + "]))";
                   })});
  }
  return out;
}

Expected<std::vector<WorkloadFacts>> facts_from(const Answers& answers, const std::vector<ScanPolicy>& policies) {
  auto answer = [&](std::string_view name) -> const std::vector<serving::PromSample>& {
    static const std::vector<serving::PromSample> none;
    const auto it = answers.find(name);
    return it == answers.end() ? none : it->second;
  };

  // Identity: the largest part of each workload names it; the GPUs of every part add up.
  std::map<std::string, WorkloadFacts> by_uid;
  std::map<std::string, double> largest;
  for (const serving::PromSample& s : answer("allocations")) {
    const std::string uid = key_of(s);
    if (uid.empty()) return Unexpected{std::string("allocations: a sample without workload_uid or workload")};
    if (!std::isfinite(s.value) || s.value < 0) {
      return Unexpected{"allocations: workload " + uid + " holds a GPU count that is not a non-negative number"};
    }
    auto until = integer_label(s, "keep_running_until", "allocations");
    if (!until) return Unexpected{until.error()};
    WorkloadFacts& w = by_uid[uid];
    const double gpus = w.gpus + s.value;
    const auto seen = largest.find(uid);
    if (seen == largest.end() || s.value > seen->second) {
      largest[uid] = s.value;
      w.workload_uid = uid;
      w.cluster = label(s, "cluster");
      w.business_group = label(s, "business_group");
      w.owner_id = label(s, "owner_id");
      w.namespace_name = label(s, "namespace");
      w.workload_kind = label(s, "workload_kind");
      w.workload = label(s, "workload");
      w.workload_type = label(s, "workload_type");
      w.pool = label(s, "pool");
      w.gpu_model = label(s, "gpu_model");
      w.partition = label(s, "partition");
      w.capacity_role = label(s, "capacity_role");
      w.checkpointable = label(s, "checkpointable");
      w.keep_running_until_s = *until;
    }
    w.gpus = gpus;
  }
  for (const serving::PromSample& s : answer("starts")) {
    const auto it = by_uid.find(key_of(s));
    if (it != by_uid.end() && std::isfinite(s.value)) it->second.started_s = s.value;
  }
  std::map<std::pair<std::string, std::string>, double> borrowed;  // (group, pool)
  for (const serving::PromSample& s : answer("borrowing")) {
    if (std::isfinite(s.value)) borrowed[{label(s, "borrower"), label(s, "pool")}] += s.value;
  }

  // The averages over each workload's own window.
  constexpr int kMeasures = 5;
  std::map<std::pair<std::string, std::string>, double> averages[kMeasures];  // (uid, window)
  const char* names[kMeasures] = {"gpu_utilization", "memory_utilization", "power_fraction", "token_throughput",
                                  "training_progress"};
  for (int m = 0; m < kMeasures; ++m) {
    for (const serving::PromSample& s : answer(names[m])) {
      const std::string uid = key_of(s);
      const std::string window = label(s, "window");
      if (uid.empty() || window.empty()) {
        return Unexpected{std::string(names[m]) + ": a sample without a workload or window"};
      }
      averages[m][{uid, window}] = s.value;
    }
  }
  std::vector<WorkloadFacts> out;
  out.reserve(by_uid.size());
  for (auto& [uid, w] : by_uid) {
    const auto b = borrowed.find({w.business_group, w.pool});
    if (b != borrowed.end()) w.group_borrowed_gpus = b->second;
    if (const ScanPolicy* p = governing_policy(w, policies)) {
      const std::string window = promql_duration(p->spec.window);
      std::optional<double>* into[kMeasures] = {&w.gpu_utilization, &w.memory_utilization, &w.power_fraction,
                                                &w.tokens_per_second, &w.training_steps};
      for (int m = 0; m < kMeasures; ++m) {
        const auto it = averages[m].find({uid, window});
        if (it != averages[m].end() && std::isfinite(it->second) && it->second >= 0) *into[m] = it->second;
      }
    }
    out.push_back(std::move(w));
  }
  if (auto refused = add_phases(answer("training_phase"), policies, out)) return Unexpected{*refused};
  return out;
}

}  // namespace gpubank::governance
