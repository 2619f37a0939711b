#include "render/prometheus_rules.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "metrics/job_phase.hpp"
#include "policy/low_utilization.hpp"
#include "policy/schema.hpp"

namespace gpubank::render {

namespace promql {

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string alternation(const std::vector<std::string>& values) {
  static constexpr std::string_view kMeta = "\\.+*?()|[]{}^$";
  std::string out;
  for (const std::string& v : values) {
    if (!out.empty()) out += '|';
    for (char c : v) {
      if (kMeta.find(c) != std::string_view::npos) out += '\\';
      out += c;
    }
  }
  return out;
}

std::string number(double value) {
  if (std::abs(value) < 1e15 && value == std::floor(value)) return std::to_string(static_cast<std::int64_t>(value));
  return Json(value).dump();
}

std::string duration(const Duration& d) {
  auto ms = d.milliseconds();
  if (ms <= 0) return "0s";
  std::string out;
  auto part = [&](std::int64_t unit, std::string_view suffix) {
    if (ms >= unit) {
      out += std::to_string(ms / unit) + std::string(suffix);
      ms %= unit;
    }
  };
  part(3'600'000, "h");
  part(60'000, "m");
  part(1'000, "s");
  part(1, "ms");
  return out;
}

}  // namespace promql

namespace {

using policy::Kind;
using policy::PolicyObject;
using namespace promql;

// ---- documented defaults (docs/render-monitoring.md, "Defaults") --------------------------

// Error budget of a p95 latency target: 5% of requests may be slower than the target.
constexpr std::string_view kTtftErrorBudget = "0.05";
// Multi-window burn-rate alerts, the Google SRE workbook's table (chapter "Alerting on
// SLOs"): a 30-day budget burnt 14.4x (2% in 1h) or 6x (5% in 6h) pages; 3x over a day
// or 1x over three days opens a ticket. Each long window is confirmed by a short one so
// the alert stops soon after the burn does.
struct BurnWindow {
  std::string_view long_window;
  std::string_view short_window;
  std::string_view factor;
};
constexpr BurnWindow kFastBurn[] = {{"1h", "5m", "14.4"}, {"6h", "30m", "6"}};
constexpr BurnWindow kSlowBurn[] = {{"1d", "2h", "3"}, {"3d", "6h", "1"}};
// Every window the burn-rate alerts read, shortest first.
constexpr std::string_view kBurnWindows[] = {"5m", "30m", "1h", "2h", "6h", "1d", "3d"};

constexpr std::string_view kQuotaExhaustedFor = "15m";
constexpr std::string_view kPendingTooLong = "1h";
constexpr int kPendingTooLongSeconds = 3600;
constexpr std::string_view kHeadroomLostFor = "10m";
constexpr std::string_view kAttributionMissingFor = "15m";

// vLLM's TTFT histogram buckets (vllm/v1/metrics/loggers.py, histogram
// "vllm:time_to_first_token_seconds"), spelled as prometheus_client writes the le label
// (Python float repr; Prometheus 3 normalises other spellings to the same form).
struct Bucket {
  std::string_view le;
  double seconds;
};
constexpr Bucket kTtftBuckets[] = {
    {"0.001", 0.001}, {"0.005", 0.005}, {"0.01", 0.01}, {"0.02", 0.02}, {"0.04", 0.04}, {"0.06", 0.06},
    {"0.08", 0.08},   {"0.1", 0.1},     {"0.25", 0.25}, {"0.5", 0.5},   {"0.75", 0.75}, {"1.0", 1.0},
    {"2.5", 2.5},     {"5.0", 5.0},     {"7.5", 7.5},   {"10.0", 10.0}, {"20.0", 20.0}, {"40.0", 40.0},
    {"80.0", 80.0},   {"160.0", 160.0}, {"640.0", 640.0}, {"2560.0", 2560.0},
};

// XIDs by what they mean for the device (NVIDIA's XID catalogue; the texts dcgm-exporter
// attaches as err_msg in internal/pkg/collector/xid_errors.go). Critical: the GPU needs a
// reset or replacement. Degraded: recorded or contained memory errors that need a reset
// at the next drain. Others are application faults (13, 31, 43, ...) for the owner.
constexpr int kCriticalXids[] = {48, 62, 64, 74, 79, 95, 119, 120, 140};
constexpr int kDegradedXids[] = {63, 92, 94};

constexpr std::string_view kRunbookBase = "https://github.com/gpubank/gpubank/blob/main/docs/render-monitoring.md#";

// ---- helpers ------------------------------------------------------------------------------

[[noreturn]] void fail(const PolicyObject* object, std::string_view field, std::string_view message,
                       std::string_view rule) {
  const std::string who = object != nullptr ? object->ref() : std::string("PlatformGuardrails");
  throw std::invalid_argument(who + ": " + std::string(field) + ": " + std::string(message) + " [" +
                              std::string(rule) + "]");
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

struct Alert {
  std::string name;
  std::string expr;
  std::string for_;  // empty: fires on the first evaluation
  std::string severity;
  std::string owner;
  Json labels = Json::object();
  std::string summary;
  std::string description;
};

Json record(std::string_view name, const std::string& expr, Json labels = Json::object()) {
  Json r = Json::object();
  r["record"] = std::string(name);
  r["expr"] = expr;
  if (!labels.empty()) r["labels"] = std::move(labels);
  return r;
}

Json alert(const Alert& a) {
  Json r = Json::object();
  r["alert"] = a.name;
  r["expr"] = a.expr;
  if (!a.for_.empty()) r["for"] = a.for_;
  Json labels = Json::object();
  labels["severity"] = a.severity;
  labels["owner"] = a.owner;
  for (const auto& [k, v] : a.labels.items()) labels[k] = v;
  r["labels"] = std::move(labels);
  r["annotations"] = Json{{"summary", a.summary},
                          {"description", a.description},
                          {"runbook_url", std::string(kRunbookBase) + lower(a.name)}};
  return r;
}

Json group(std::string name, Json rules) {
  return Json{{"name", std::move(name)}, {"interval", std::string(kRuleInterval)}, {"rules", std::move(rules)}};
}

RenderedObject rule_object(const std::string& name, std::string_view scope, Json groups,
                           std::vector<const PolicyObject*> sources) {
  RenderedObject o;
  o.manifest = Json::object();
  o.manifest["apiVersion"] = "monitoring.coreos.com/v1";
  o.manifest["kind"] = "PrometheusRule";
  o.manifest["metadata"] = Json{{"name", name},
                                {"namespace", std::string(kMonitoringNamespace)},
                                {"labels", Json{{"app.kubernetes.io/part-of", "gpubank"},
                                                {"app.kubernetes.io/component", "monitoring"},
                                                {"platform.gpubank.dev/rule-scope", std::string(scope)}}}};
  o.manifest["spec"] = Json{{"groups", std::move(groups)}};
  o.path = "monitoring/prometheusrule-" + name + ".yaml";
  o.sources = std::move(sources);
  return o;  // stamped with the others by render_prometheus_rules
}

// The extended resource a pool's devices are requested as: whole GPUs as nvidia.com/gpu,
// MIG slices as nvidia.com/mig-<profile> (the device plugin's "mixed" strategy) or as
// nvidia.com/gpu ("single" strategy).
std::vector<std::string> gpu_resources(const policy::PlatformGuardrailsSpec& g) {
  std::set<std::string> out{"nvidia.com/gpu"};
  for (const auto& pool : g.pools) {
    if (pool.partition != "full") out.insert("nvidia.com/mig-" + pool.partition);
  }
  return {out.begin(), out.end()};
}

std::vector<std::string> pool_names(const policy::PlatformGuardrailsSpec& g) {
  std::vector<std::string> out;
  for (const auto& pool : g.pools) out.push_back(pool.name);
  return out;
}

// A ClusterQueue series with business_group and pool taken from its name, which the Kueue
// backend writes as "<group>-<pool>" (policy-api.md, "Kueue mapping").
std::string with_group_and_pool(const std::string& expr, const std::vector<std::string>& pools) {
  const std::string regex = "(.+)-(" + alternation(pools) + ")";
  return "label_replace(label_replace(" + expr + ", \"business_group\", \"$1\", \"cluster_queue\", " +
         quote(regex) + "), \"pool\", \"$2\", \"cluster_queue\", " + quote(regex) + ")";
}

// dcgm-exporter's per-device series in the contract's join labels: UUID -> gpu_uuid and
// GPU_I_ID -> gpu_instance (empty for whole GPUs), one value per device. "max" collapses
// duplicate scrapes; Hostname/hostname (renamed in dcgm-exporter #655) is dropped, the node
// comes from gpubank_gpu_info.
std::string dcgm_device(std::string_view metric) {
  return "max by (cluster, gpu_uuid, gpu_instance) (label_replace(label_replace(" + std::string(metric) +
         ", \"gpu_uuid\", \"$1\", \"UUID\", \"(.+)\"), \"gpu_instance\", \"$1\", \"GPU_I_ID\", \"(.+)\"))";
}
std::string dcgm_gpu(std::string_view metric) {
  return "max by (cluster, gpu_uuid) (label_replace(" + std::string(metric) +
         ", \"gpu_uuid\", \"$1\", \"UUID\", \"(.+)\"))";
}

constexpr std::string_view kDeviceInfoJoin =
    " * on (cluster, gpu_uuid, gpu_instance) group_left (node, pool, gpu_model, partition) gpubank_gpu_info";
constexpr std::string_view kAllocationKey = "cluster, gpu_uuid, gpu_instance, namespace, pod, container";

std::string hours_from(std::string_view allocated) {
  // Rules run every minute: the sum of one hour of samples of "GPUs now" over 60 is the
  // GPU-hours of that hour, and hours without any allocation count as zero (avg_over_time
  // would skip them and overstate).
  return "sum_over_time(" + std::string(allocated) + "[1h]) / " + std::to_string(kRuleSamplesPerHour);
}

// Tokens of the last hour from a per-second rate recorded every minute: each sample stands
// for 60 seconds.
std::string tokens_from(std::string_view rate, std::string_view by) {
  return "sum by (" + std::string(by) + ") (sum_over_time(" + std::string(rate) + "[1h])) * " +
         std::to_string(3600 / kRuleSamplesPerHour);
}

std::string xid_match(std::span<const int> xids) {
  std::string out;
  for (int x : xids) {
    if (!out.empty()) out += " or ";
    out += "DCGM_FI_DEV_XID_ERRORS == " + std::to_string(x);
  }
  return out;
}

std::string join_ints(std::span<const int> xs) {
  std::string out;
  for (int x : xs) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

// ---- gpubank-platform ---------------------------------------------------------------------

Json device_rules() {
  Json rules = Json::array();
  // MIG instances have no *_UTIL fields; the profiling field covers both.
  rules.push_back(record(series::kGpuUtilization,
                         "(100 * " + dcgm_device("DCGM_FI_PROF_GR_ENGINE_ACTIVE") + " or " +
                             dcgm_device("DCGM_FI_DEV_GPU_UTIL") + ")" + std::string(kDeviceInfoJoin)));
  rules.push_back(record(series::kGpuMemoryUsed, "100 * " + dcgm_device("DCGM_FI_DEV_FB_USED") + " / (" +
                                                      dcgm_device("DCGM_FI_DEV_FB_USED") + " + " +
                                                      dcgm_device("DCGM_FI_DEV_FB_FREE") + ")" +
                                                      std::string(kDeviceInfoJoin)));
  // Power is a property of the physical GPU: MIG instances share their parent's figure.
  rules.push_back(record(series::kGpuPower,
                         "100 * " + dcgm_gpu("DCGM_FI_DEV_POWER_USAGE") + " / " +
                             dcgm_gpu("DCGM_FI_DEV_ENFORCED_POWER_LIMIT") +
                             " * on (cluster, gpu_uuid) group_left (node, pool, gpu_model) group by (cluster, "
                             "gpu_uuid, node, pool, gpu_model) (gpubank_gpu_info)"));
  return rules;
}

Json attribution_rules() {
  Json rules = Json::array();
  // Time-sliced devices are shared by several containers: each gets an equal share, so
  // sums over allocations count every device once.
  rules.push_back(record(series::kAllocationShare,
                         "gpubank_gpu_allocation_info / on (cluster, gpu_uuid, gpu_instance) group_left () count by "
                         "(cluster, gpu_uuid, gpu_instance) (gpubank_gpu_allocation_info)"));
  rules.push_back(record(series::kAllocationUtilization,
                         std::string(series::kGpuUtilization) +
                             " * on (cluster, gpu_uuid, gpu_instance) group_right () gpubank_gpu_allocation_info"));
  rules.push_back(record(series::kAllocationMemoryUsed,
                         std::string(series::kGpuMemoryUsed) +
                             " * on (cluster, gpu_uuid, gpu_instance) group_right () gpubank_gpu_allocation_info"));
  rules.push_back(record(series::kAllocationPower,
                         std::string(series::kGpuPower) +
                             " * on (cluster, gpu_uuid) group_right () gpubank_gpu_allocation_info"));
  // vLLM serves on the pods that hold the GPUs: the allocation tells which workload a
  // pod belongs to (vLLM's own labels are model_name and engine only).
  const std::string pod_workload =
      " * on (cluster, namespace, pod) group_left (workload_kind, workload) group by (cluster, namespace, pod, "
      "workload_kind, workload) (gpubank_gpu_allocation_info)";
  rules.push_back(record(series::kTtftBucketRate,
                         "sum by (cluster, namespace, workload_kind, workload, le) (rate(vllm:time_to_first_token_"
                         "seconds_bucket[5m])" +
                             pod_workload + ")"));
  rules.push_back(record(series::kTtftCountRate,
                         "sum by (cluster, namespace, workload_kind, workload) (rate(vllm:time_to_first_token_"
                         "seconds_count[5m])" +
                             pod_workload + ")"));
  // Per pod first: vLLM's two counters need not carry the same labels.
  rules.push_back(record(series::kTokensRate,
                         "sum by (cluster, business_group, namespace, workload_kind, workload) ((sum by (cluster, "
                         "namespace, pod) (rate(vllm:prompt_tokens_total[5m])) + sum by (cluster, namespace, pod) "
                         "(rate(vllm:generation_tokens_total[5m]))) * on (cluster, namespace, pod) group_left "
                         "(business_group, workload_kind, workload) group by (cluster, namespace, pod, business_group, "
                         "workload_kind, workload) (gpubank_gpu_allocation_info))"));
  return rules;
}

Json capacity_rules() {
  Json rules = Json::array();
  rules.push_back(record(series::kNodeFree,
                         "sum by (cluster, pool, node) (gpubank_gpu_info) - (sum by (cluster, pool, node) (" +
                             std::string(series::kAllocationShare) +
                             ") or 0 * sum by (cluster, pool, node) (gpubank_gpu_info))"));
  rules.push_back(record(series::kPoolCapacity, "sum by (cluster, pool, gpu_model) (gpubank_gpu_info)"));
  rules.push_back(record(series::kPoolAllocated,
                         "sum by (cluster, pool, gpu_model) (" + std::string(series::kAllocationShare) + ")"));
  // The biggest replica that still fits one node: what fragmentation leaves.
  rules.push_back(record(series::kPoolLargestFree, "max by (cluster, pool) (" + std::string(series::kNodeFree) + ")"));
  // The allocation-rate KPI: allocated over available devices.
  rules.push_back(record(series::kPoolAllocationRate, "sum by (cluster, pool) (" + std::string(series::kPoolAllocated) +
                                                          ") / sum by (cluster, pool) (" +
                                                          std::string(series::kPoolCapacity) + ")"));
  return rules;
}

Json finops_rules(const policy::PlatformGuardrailsSpec& g) {
  Json rules = Json::array();
  const std::string share(series::kAllocationShare);
  rules.push_back(record(series::kGroupAllocated, "sum by (cluster, business_group, cost_center) (" + share + ")"));
  rules.push_back(record(series::kGroupPoolAllocated,
                         "sum by (cluster, business_group, cost_center, pool, gpu_model) (" + share + ")"));
  rules.push_back(record(series::kQueueAllocated, "sum by (cluster, business_group, namespace, queue) (" + share + ")"));
  // vLLM names the model it serves; its pods are joined to their GPUs by namespace/pod.
  rules.push_back(record(series::kModelAllocated,
                         "sum by (cluster, business_group, namespace, model_name) (" + share +
                             " * on (cluster, namespace, pod) group_left (model_name) group by (cluster, namespace, "
                             "pod, model_name) (vllm:num_requests_running))"));
  rules.push_back(record(series::kGpuModelAllocated, "sum by (cluster, gpu_model) (" + share + ")"));
  rules.push_back(record(series::kWorkloadAllocated,
                         "sum by (cluster, business_group, pool, namespace, queue, workload_type, workload_kind, "
                         "workload, owner_id) (" +
                             share + ")"));
  rules.push_back(record(series::kGroupHours, hours_from(series::kGroupAllocated)));
  rules.push_back(record(series::kGroupPoolHours, hours_from(series::kGroupPoolAllocated)));
  rules.push_back(record(series::kQueueHours, hours_from(series::kQueueAllocated)));
  rules.push_back(record(series::kModelHours, hours_from(series::kModelAllocated)));
  rules.push_back(record(series::kGpuModelHours, hours_from(series::kGpuModelAllocated)));
  rules.push_back(record(series::kWorkloadHours, hours_from(series::kWorkloadAllocated)));
  // gpuHourPrice as series, so cost is a join on gpu_model (std::map: sorted by model).
  for (const auto& [model, price] : g.gpu_hour_price) {
    rules.push_back(record(series::kPrice, "vector(" + number(price) + ")",
                           Json{{"gpu_model", model}, {"currency", g.currency}}));
  }
  const std::string price_join = " * on (gpu_model) group_left (currency) " + std::string(series::kPrice);
  rules.push_back(record(series::kGroupPoolCostRate, std::string(series::kGroupPoolAllocated) + price_join));
  rules.push_back(record(series::kGroupPoolCost, std::string(series::kGroupPoolHours) + price_join));
  rules.push_back(record(series::kGroupPoolLowUtil,
                         "sum by (cluster, business_group, cost_center, pool, gpu_model) (" +
                             std::string(series::kAllocationLowUtilization) + ")"));
  rules.push_back(record(series::kGroupPoolLowUtilHours, hours_from(series::kGroupPoolLowUtil)));
  rules.push_back(record(series::kGroupPoolLowUtilCost, std::string(series::kGroupPoolLowUtilHours) + price_join));

  // Effective and measured devices: a serving workload is judged by its TTFT SLO while vLLM
  // reports, anything else a LowUtilizationPolicy governs by its utilisation threshold. The
  // per-policy objects record both parts (other groups: at most a minute late).
  const std::string by_group_pool = "sum by (cluster, business_group, cost_center, pool, gpu_model) (";
  const std::string busy = "(" + std::string(series::kAllocationBusy) +
                           " unless on (cluster, namespace, workload_kind, workload) " +
                           std::string(series::kSloJudged) + ")";
  rules.push_back(record(series::kGroupPoolEffective, by_group_pool + busy + " or " + std::string(series::kWithinSlo) + ")"));
  rules.push_back(record(series::kGroupPoolMeasured, by_group_pool + "(" + share + " and on (" +
                                                         std::string(kAllocationKey) + ") " + busy + ") or " +
                                                         std::string(series::kSloJudged) + ")"));
  rules.push_back(record(series::kGroupPoolEffectiveHours, hours_from(series::kGroupPoolEffective)));
  rules.push_back(record(series::kGroupPoolMeasuredHours, hours_from(series::kGroupPoolMeasured)));
  // Serving-floor retention: devices kept warm for the floor, whatever their utilisation.
  rules.push_back(record(series::kGroupPoolServingFloor, by_group_pool + share + "{capacity_role=\"serving-floor\"})"));
  rules.push_back(record(series::kGroupPoolServingFloorHours, hours_from(series::kGroupPoolServingFloor)));
  rules.push_back(record(series::kGroupPoolServingFloorCost, std::string(series::kGroupPoolServingFloorHours) + price_join));
  // The inference unit cost: inference GPU cost over the effective tokens, per million.
  rules.push_back(record(series::kGroupPoolInference, by_group_pool + share + "{workload_type=\"inference\"})"));
  rules.push_back(record(series::kGroupPoolInferenceHours, hours_from(series::kGroupPoolInference)));
  rules.push_back(record(series::kGroupPoolInferenceCost, std::string(series::kGroupPoolInferenceHours) + price_join));
  rules.push_back(record(series::kGroupTokens, tokens_from(series::kTokensRate, "cluster, business_group")));
  rules.push_back(record(series::kGroupPoolEffectiveTokens,
                         tokens_from(series::kEffectiveTokensRate, "cluster, business_group, pool")));
  rules.push_back(record(series::kGroupPoolUnitCost,
                         "sum by (cluster, business_group, pool, currency) (" +
                             std::string(series::kGroupPoolInferenceCost) +
                             ") / on (cluster, business_group, pool) group_left () (" +
                             std::string(series::kGroupPoolEffectiveTokens) + " / 1000000 > 0)"));
  return rules;
}

Json bank_rules(const policy::PlatformGuardrailsSpec& g) {
  Json rules = Json::array();
  const auto pools = pool_names(g);
  rules.push_back(record(series::kGroupPoolBorrowed,
                         "sum by (cluster, business_group, pool) (label_replace(gpubank_bank_loan_gpus, "
                         "\"business_group\", \"$1\", \"borrower\", \"(.+)\"))"));
  rules.push_back(record(series::kGroupPoolLent,
                         "sum by (cluster, business_group, pool) (label_replace(gpubank_bank_loan_gpus, "
                         "\"business_group\", \"$1\", \"lender\", \"(.+)\"))"));
  // Kueue's gauges (pkg/metrics/metrics.go): per flavor and resource; followers of an HA
  // pair report them too (replica_role), only leaders and single replicas count.
  const std::string gpus = "resource=~" + quote(alternation(gpu_resources(g))) + ", replica_role!=\"follower\"";
  auto cq_sum = [&](std::string_view metric) {
    return "sum by (cluster, cohort, cluster_queue) (" + std::string(metric) + "{" + gpus + "})";
  };
  // Kueue may omit usage of an idle queue: count it as zero where a quota exists.
  rules.push_back(record(series::kQueueUsed,
                         with_group_and_pool(cq_sum("kueue_cluster_queue_resource_usage") + " or 0 * " +
                                                 cq_sum("kueue_cluster_queue_nominal_quota"),
                                             pools)));
  rules.push_back(record(series::kQueueNominal, with_group_and_pool(cq_sum("kueue_cluster_queue_nominal_quota"), pools)));
  // +Inf where the ClusterQueue sets no borrowingLimit.
  rules.push_back(
      record(series::kQueueBorrowingLimit, with_group_and_pool(cq_sum("kueue_cluster_queue_borrowing_limit"), pools)));
  rules.push_back(record(series::kQueuePendingGpus,
                         with_group_and_pool("sum by (cluster, cluster_queue) (kueue_cluster_queue_resource_pending{" +
                                                 gpus + "}) or 0 * sum by (cluster, cluster_queue) "
                                                 "(kueue_cluster_queue_nominal_quota{" + gpus + "})",
                                             pools)));
  rules.push_back(record(series::kQueuePendingWorkloads,
                         with_group_and_pool("sum by (cluster, cluster_queue) (kueue_pending_workloads{replica_role!="
                                             "\"follower\"})",
                                             pools)));
  rules.push_back(record(series::kQueueBorrowed, "clamp_min(" + std::string(series::kQueueUsed) + " - " +
                                                     std::string(series::kQueueNominal) + ", 0)"));
  rules.push_back(record(series::kGroupPoolBorrowedHours, hours_from(series::kGroupPoolBorrowed)));
  rules.push_back(record(series::kGroupPoolLentHours, hours_from(series::kGroupPoolLent)));
  // Work lost by stopped or preempted workloads (the controller's counter, per victim group).
  rules.push_back(record(series::kGroupPoolRecomputeLoss, "sum by (cluster, business_group, pool) "
                                                          "(increase(gpubank_recompute_loss_gpu_hours_total[1h]))"));
  // Queue wait: Kueue's kueue_admission_wait_time_seconds histogram (creation or requeue to
  // admission) over the last hour; hours without an admission have no figure.
  auto admitted = [](std::string_view part, std::string_view by) {
    return "sum by (cluster, cluster_queue" + std::string(by) + ") (increase(kueue_admission_wait_time_seconds_" +
           std::string(part) + "{replica_role!=\"follower\"}[1h]))";
  };
  const std::string any = " and " + admitted("count", "") + " > 0";
  rules.push_back(record(series::kQueueAdmissions, with_group_and_pool(admitted("count", ""), pools)));
  rules.push_back(record(series::kQueueWaitMean,
                         with_group_and_pool(admitted("sum", "") + " / (" + admitted("count", "") + " > 0)", pools)));
  rules.push_back(record(series::kQueueWaitP90, with_group_and_pool("histogram_quantile(0.9, " +
                                                                        admitted("bucket", ", le") + ")" + any,
                                                                    pools)));
  return rules;
}

Json gpu_health_alerts() {
  Json rules = Json::array();
  const std::string where = "GPU {{ $labels.UUID }} on {{ $labels.Hostname }}{{ $labels.hostname }}";
  rules.push_back(alert({.name = "GPUXidHardwareError",
                         .expr = xid_match(kCriticalXids),
                         .for_ = {},
 .severity = "critical",
                         .owner = "platform",
                         .labels = Json::object(),
 .summary = where + " reported XID {{ $value }}{{ with $labels.err_msg }} ({{ . }}){{ end }}",
                         .description = "XIDs " + join_ints(kCriticalXids) +
                                        " mean the device needs a reset or replacement. Cordon the node, drain "
                                        "its GPU workloads (checkpointable ones first) and reset the GPU."}));
  rules.push_back(alert({.name = "GPUXidDegraded",
                         .expr = xid_match(kDegradedXids),
                         .for_ = {},
 .severity = "warning",
                         .owner = "platform",
                         .labels = Json::object(),
 .summary = where + " reported XID {{ $value }}{{ with $labels.err_msg }} ({{ . }}){{ end }}",
                         .description = "XIDs " + join_ints(kDegradedXids) +
                                        " record memory errors the device contained or remapped; it keeps "
                                        "working but needs a reset at the next drain."}));
  rules.push_back(alert({.name = "GPUEccDoubleBitError",
                         .expr = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL > 0",
                         .for_ = {},
 .severity = "critical",
                         .owner = "platform",
                         .labels = Json::object(),
 .summary = where + " has {{ $value }} uncorrectable (double-bit) ECC errors since the last "
                                            "driver load",
                         .description = "Data on this GPU may be corrupt. Drain the node and reset the GPU; replace it "
                                        "if the errors return."}));
  rules.push_back(alert({.name = "GPURowRemapFailure",
                         .expr = "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
                         .for_ = {},
 .severity = "critical",
                         .owner = "platform",
                         .labels = Json::object(),
 .summary = where + " failed to remap a memory row",
                         .description = "The GPU has no spare rows left for uncorrectable errors. Take it out of "
                                        "service and open an RMA."}));
  // The join key of every attribution rule: a GPU dcgm-exporter sees but gpubank's exporter
  // does not is invisible to quotas, FinOps and the dashboards.
  rules.push_back(alert({.name = "GPUAttributionMissing",
                         .expr = "group by (cluster, gpu_uuid) (label_replace(DCGM_FI_DEV_FB_USED, \"gpu_uuid\", "
                                 "\"$1\", \"UUID\", \"(.+)\")) unless on (cluster, gpu_uuid) gpubank_gpu_info",
                         .for_ = std::string(kAttributionMissingFor),
                         .severity = "warning",
                         .owner = "platform",
                         .labels = Json::object(),
 .summary = "GPU {{ $labels.gpu_uuid }} has metrics but no gpubank_gpu_info",
                         .description = "gpubank's attribution exporter does not report this GPU, so its use is "
                                        "attributed to nobody. Check the exporter on its node."}));
  return rules;
}

RenderedObject platform_object(const PolicyObject& guardrails) {
  const auto& g = guardrails.as<policy::PlatformGuardrailsSpec>();
  // Rules that read each other share one group: Prometheus evaluates a group's rules in
  // order at one timestamp, while separate groups run on their own timers, so a reader
  // in another group could miss a minute of GPU-hours.
  Json chained = Json::array();
  for (Json part : {device_rules(), attribution_rules(), capacity_rules(), finops_rules(g)}) {
    for (auto& rule : part) chained.push_back(std::move(rule));
  }
  Json groups = Json::array();
  groups.push_back(group("gpubank.attribution", std::move(chained)));
  groups.push_back(group("gpubank.bank", bank_rules(g)));
  groups.push_back(group("gpubank.gpu-health", gpu_health_alerts()));
  return rule_object("gpubank-platform", "platform", std::move(groups), {&guardrails});
}

// ---- gpubank-group-<group> -----------------------------------------------------------------

RenderedObject group_object(const PolicyObject& guardrails, const policy::Group& grp,
                            const std::vector<const PolicyObject*>& quotas) {
  const auto& g = guardrails.as<policy::PlatformGuardrailsSpec>();
  Json rules = Json::array();
  std::vector<std::string> queues;
  for (const PolicyObject* q : quotas) {
    queues.push_back(grp.name + "-" + q->as<policy::GPUQuotaPolicySpec>().resource_pool);
  }
  const std::string cqs = "{cluster_queue=~" + quote(alternation(queues)) + "}";
  const Json group_label{{"business_group", grp.name}};
  if (!queues.empty()) {
    rules.push_back(alert(
        {.name = "GPUQuotaExhausted",
         .expr = std::string(series::kQueueUsed) + cqs + " >= (" + std::string(series::kQueueNominal) + cqs + " + " +
                 std::string(series::kQueueBorrowingLimit) + cqs + ") and on (cluster, cluster_queue) " +
                 std::string(series::kQueuePendingWorkloads) + cqs + " > 0",
         .for_ = std::string(kQuotaExhaustedFor),
         .severity = "warning",
         .owner = grp.name,
         .labels = group_label,
         .summary = "ClusterQueue {{ $labels.cluster_queue }} uses all {{ $value }} GPUs it may hold and has "
                    "workloads waiting",
         .description = "Usage has reached nominal quota plus borrowing limit. The waiting workloads start when "
                        "running ones finish; a CapacityLease (TemporaryQuota) can raise the limit for a while."}));
    // One rule per quota: the bound is that quota's reclaim grace period.
    for (const PolicyObject* q : quotas) {
      const auto& spec = q->as<policy::GPUQuotaPolicySpec>();
      if (spec.guaranteed <= 0) continue;
      const std::string cq = "{cluster_queue=" + quote(grp.name + "-" + spec.resource_pool) + "}";
      const Duration grace = spec.reclaim_policy && spec.reclaim_policy->grace_period
                                 ? *spec.reclaim_policy->grace_period
                                 : g.max_grace_period;
      rules.push_back(alert(
          {.name = "GPUGuaranteeNotHonoured",
           // group_left keeps the ClusterQueue's cohort, which the pending figure lacks.
           .expr = std::string(series::kQueueUsed) + cq + " + on (cluster, cluster_queue) group_left () " +
                   std::string(series::kQueuePendingGpus) + cq + " <= " + std::string(series::kQueueNominal) + cq +
                   " and on (cluster, cluster_queue) " +
                   std::string(series::kQueuePendingWorkloads) + cq + " > 0",
           .for_ = duration(grace),
           .severity = "critical",
           .owner = "platform",
           .labels = group_label,
           .summary = "Workloads of " + grp.name + " wait although they fit its guarantee on " +
                      spec.resource_pool,
           .description = "Usage plus pending requests stay within the guaranteed " +
                          std::to_string(spec.guaranteed) + " GPUs for longer than the reclaim grace period (" +
                          duration(grace) + " from " + q->ref() +
                          "): borrowers were not reclaimed. Check gpubank's reclaim events and Kueue's "
                          "preemption for this ClusterQueue."}));
    }
    rules.push_back(alert(
        {.name = "KueueWorkloadsPendingTooLong",
         .expr = std::string(series::kQueuePendingWorkloads) + cqs +
                 " > 0 unless on (cluster, cluster_queue) sum by (cluster, cluster_queue) "
                 "(increase(kueue_admitted_workloads_total{cluster_queue=~" +
                 quote(alternation(queues)) + ", replica_role!=\"follower\"}[" + std::string(kPendingTooLong) +
                 "])) > 0",
         .for_ = std::string(kPendingTooLong),
         .severity = "warning",
         .owner = grp.name,
         .labels = group_label,
         .summary = "ClusterQueue {{ $labels.cluster_queue }} admitted nothing for " + std::string(kPendingTooLong) +
                    " while {{ $value }} workloads wait",
         .description = "Kueue has had pending workloads and no admission in this queue for " +
                        std::string(kPendingTooLong) +
                        ". `kubectl get workloads -n <namespace>` shows each one's QuotaReserved condition "
                        "message."}));
  }
  // Volcano: the scheduler sets e2e_job_scheduling_start_time when it first sees a
  // PodGroup and e2e_job_scheduling_last_time when it places a task of it
  // (pkg/scheduler/metrics/metrics.go): start without last is a PodGroup never placed.
  const auto namespaces = grp.effective_namespaces();
  rules.push_back(alert(
      {.name = "VolcanoPodGroupPendingTooLong",
       .expr = "time() - volcano_e2e_job_scheduling_start_time{job_namespace=~" + quote(alternation(namespaces)) +
               "} > " + std::to_string(kPendingTooLongSeconds) +
               " unless on (cluster, job_namespace, job_name) volcano_e2e_job_scheduling_last_time",
       .for_ = {},
       .severity = "warning",
       .owner = grp.name,
       .labels = group_label,
       .summary = "PodGroup {{ $labels.job_namespace }}/{{ $labels.job_name }} in queue {{ $labels.queue }} has "
                  "waited {{ $value | humanizeDuration }} without a placed task",
       .description = "Volcano has not placed any task of this PodGroup for more than " +
                      std::string(kPendingTooLong) +
                      ". `kubectl describe podgroup` shows the scheduler's last reason (queue capability, gang "
                      "minMember, node fit)."}));
  std::vector<const PolicyObject*> sources{&guardrails};
  sources.insert(sources.end(), quotas.begin(), quotas.end());
  return rule_object("gpubank-group-" + grp.name, "business-group",
                     Json::array({group("gpubank.group." + grp.name, std::move(rules))}), std::move(sources));
}

// ---- gpubank-inference-<policy> ---------------------------------------------------------------

// The fraction of requests slower than the target over a window, from the TTFT histogram.
// A target between two buckets is interpolated linearly, as histogram_quantile does.
std::string ttft_error_ratio(const std::string& sel, double target, std::string_view window) {
  const std::string by = "sum by (cluster, namespace, workload_kind, workload) ";
  auto over = [&](std::string_view rec, std::string_view extra) {
    std::string s = std::string(rec) + "{" + sel + std::string(extra) + "}";
    if (window != "5m") s = "sum_over_time(" + s + "[" + std::string(window) + "])";
    return by + "(" + s + ")";
  };
  auto bucket = [&](const Bucket& b) { return over(series::kTtftBucketRate, ", le=\"" + std::string(b.le) + "\""); };
  const Bucket* hi = nullptr;
  const Bucket* lo = nullptr;
  for (const Bucket& b : kTtftBuckets) {
    if (b.seconds >= target) {
      hi = &b;
      break;
    }
    lo = &b;
  }
  const std::string t = number(target);
  std::string fast;  // requests within the target
  if (hi == nullptr) {
    fast = bucket(*lo);  // beyond the last finite bucket: all that bucket holds is fast
  } else if (hi->seconds == target) {
    fast = bucket(*hi);
  } else if (lo == nullptr) {
    fast = bucket(*hi) + " * " + t + " / " + std::string(hi->le);  // from 0 to the first bucket
  } else {
    const std::string width = " / (" + std::string(hi->le) + " - " + std::string(lo->le) + ")";
    fast = bucket(*lo) + " * (" + std::string(hi->le) + " - " + t + ")" + width + " + " + bucket(*hi) + " * (" + t +
           " - " + std::string(lo->le) + ")" + width;
  }
  return "1 - (" + fast + ") / " + over(series::kTtftCountRate, "");
}

std::string ratio_name(std::string_view window) {
  return "namespace_workload:gpubank_ttft_slo_errors:ratio_rate" + std::string(window);
}

RenderedObject inference_object(const PolicyObject& isp, const PolicyObject& guardrails,
                                const PolicyObject* quota) {
  const auto& s = isp.as<policy::InferenceScalingPolicySpec>();
  const auto& g = guardrails.as<policy::PlatformGuardrailsSpec>();
  if (g.find_pool(s.resource_pool) == nullptr) {
    fail(&isp, "spec.resourcePool", "pool " + s.resource_pool + " is not in the guardrails", "pool.unknown");
  }
  const std::string kind(doc::enum_name(s.workload_ref.kind));
  const std::string& ns = s.workload_ref.namespace_;
  const std::string& name = s.workload_ref.name;
  const std::string sel = "namespace=" + quote(ns) + ", workload_kind=" + quote(kind) + ", workload=" + quote(name);
  const Json labels{{"business_group", s.business_group}, {"namespace", ns}, {"workload_kind", kind}, {"workload", name}};
  const std::string svc = ns + "/" + name;
  std::vector<const PolicyObject*> sources{&isp};
  Json rules = Json::array();

  if (s.scale_up.ttft_p95) {
    const double target = static_cast<double>(s.scale_up.ttft_p95->milliseconds()) / 1000.0;
    rules.push_back(record(series::kTtftTarget, "vector(" + number(target) + ")", labels));
    for (std::string_view w : kBurnWindows) {
      rules.push_back(record(ratio_name(w), ttft_error_ratio(sel, target, w), Json{{"business_group", s.business_group}}));
    }
    // Effective hours and tokens (governance/showback.hpp): a minute is within the SLO when
    // at most the error budget of the last five minutes' requests were slow, which is the
    // p95 meeting the target; a minute without requests has no ratio below it.
    const std::string on_workload = " on (cluster, namespace, workload_kind, workload) ";
    const std::string ratio = ratio_name("5m") + "{" + sel + "}";
    const std::string met = " *" + on_workload + "group_left () (" + ratio + " <= bool " +
                            std::string(kTtftErrorBudget) + ")";
    rules.push_back(record(series::kSloJudged,
                           "sum by (cluster, business_group, cost_center, pool, gpu_model, namespace, workload_kind, "
                           "workload) (" + std::string(series::kAllocationShare) + "{" + sel + "}) and" +
                               on_workload + ratio));
    rules.push_back(record(series::kWithinSlo, std::string(series::kSloJudged) + "{" + sel + "}" + met));
    rules.push_back(record(series::kEffectiveTokensRate, std::string(series::kTokensRate) + "{" + sel + "}" + met,
                           Json{{"business_group", s.business_group}, {"pool", s.resource_pool}}));
    auto burn = [&](std::span<const BurnWindow> windows) {
      std::string out;
      for (const BurnWindow& b : windows) {
        if (!out.empty()) out += " or ";
        const std::string threshold = " > (" + std::string(b.factor) + " * " + std::string(kTtftErrorBudget) + ")";
        out += "(" + ratio_name(b.long_window) + "{" + sel + "}" + threshold + " and " + ratio_name(b.short_window) +
               "{" + sel + "}" + threshold + ")";
      }
      return out;
    };
    const std::string target_text = number(target) + "s";
    rules.push_back(alert({.name = "InferenceTTFTBudgetBurnFast",
                           .expr = burn(kFastBurn),
                           .for_ = {},
 .severity = "critical",
                           .owner = s.business_group,
                           .labels = labels,
                           .summary = svc + " burns its TTFT error budget fast: {{ $value | humanizePercentage }} of "
                                            "requests wait longer than " + target_text + " for the first token",
                           .description = isp.ref() + " targets TTFT p95 <= " + target_text +
                                          " (5% error budget). At this rate the 30-day budget is gone within "
                                          "two days. Check replicas against maxReplicas, queue depth and KV cache "
                                          "usage on the inference SLO dashboard."}));
    rules.push_back(alert({.name = "InferenceTTFTBudgetBurnSlow",
                           .expr = burn(kSlowBurn),
                           .for_ = {},
 .severity = "warning",
                           .owner = s.business_group,
                           .labels = labels,
                           .summary = svc + " burns its TTFT error budget: {{ $value | humanizePercentage }} of "
                                            "requests wait longer than " + target_text,
                           .description = isp.ref() + " targets TTFT p95 <= " + target_text +
                                          ". The budget lasts less than the 30-day window at this rate: raise "
                                          "minReplicas, scale up earlier (scaleUp.queueDepthPerReplica) or add "
                                          "capacity."}));
  }

  // Scale-out that cannot be placed: capacity may come back by reclaiming lent GPUs, which
  // borrowers may delay by the reclaim grace period of the service's own quota.
  Duration grace = g.max_grace_period;
  if (quota != nullptr) {
    sources.push_back(quota);
    const auto& q = quota->as<policy::GPUQuotaPolicySpec>();
    if (q.reclaim_policy && q.reclaim_policy->grace_period) grace = *q.reclaim_policy->grace_period;
  }
  const bool grace_from_guardrails =
      quota == nullptr || !quota->as<policy::GPUQuotaPolicySpec>().reclaim_policy ||
      !quota->as<policy::GPUQuotaPolicySpec>().reclaim_policy->grace_period;
  if (grace_from_guardrails) sources.push_back(&guardrails);
  const std::string blocked = "max by (cluster, namespace, workload_kind, workload, pool, reason) "
                              "(gpubank_autoscaler_scale_out_blocked{" + sel;
  rules.push_back(alert({.name = "InferenceScaleOutNoCapacity",
                         .expr = blocked + ", reason=~\"pool-capacity|placement\"}) > 0",
                         .for_ = duration(grace),
                         .severity = "critical",
                         .owner = "platform",
                         .labels = labels,
                         .summary = svc + " cannot add a replica of " +
                                    std::to_string(s.replica_shape.gpu_per_replica) + " GPUs on " + s.resource_pool +
                                    " ({{ $labels.reason }})",
                         .description = "The autoscaler asked for more replicas and no placement for the replica "
                                        "shape (TP " + std::to_string(s.replica_shape.tensor_parallel_size) + ", " +
                                        std::to_string(s.replica_shape.gpu_per_replica) + " GPUs on " +
                                        std::to_string(s.replica_shape.nodes_per_replica) +
                                        " node(s)) appeared within the reclaim grace period (" + duration(grace) +
                                        "). pool-capacity: the pool has too few free GPUs; placement: enough GPUs "
                                        "but no node with room for the shape (fragmentation)."}));
  rules.push_back(alert({.name = "InferenceScaleOutQuotaLimited",
                         .expr = blocked + ", reason=\"quota\"}) > 0",
                         .for_ = duration(grace),
                         .severity = "warning",
                         .owner = s.business_group,
                         .labels = labels,
                         .summary = svc + " cannot scale out: " + s.business_group + " is at its quota on " +
                                    s.resource_pool,
                         .description = "Other workloads of " + s.business_group + " use the GPUs that " + isp.ref() +
                                        " needs to reach maxReplicas " + std::to_string(s.max_replicas) +
                                        ". Move them or raise the quota."}));

  // Whole replicas of this shape the free GPUs form right now: a replica spread over n
  // nodes needs gpuPerReplica/n free GPUs on each of n nodes. Recorded per service so the
  // capacity dashboard charts every shape without reading the policies.
  const int nodes = std::max(1, s.replica_shape.nodes_per_replica);
  const int per_node = s.replica_shape.gpu_per_replica / nodes;
  rules.push_back(record(series::kPlaceableReplicas,
                         "floor(sum by (cluster, pool) (floor(" + std::string(series::kNodeFree) +
                             "{pool=" + quote(s.resource_pool) + "} / " + std::to_string(per_node) + ")) / " +
                             std::to_string(nodes) + ")",
                         labels));
  const int headroom = s.effective_burst_headroom();
  const std::int64_t max_gpus = std::int64_t{s.max_replicas} * s.replica_shape.gpu_per_replica;
  rules.push_back(alert(
      {.name = "InferenceBurstHeadroomLost",
       .expr = std::string(series::kPlaceableReplicas) + "{" + sel + "} * " +
               std::to_string(s.replica_shape.gpu_per_replica) + " < " + std::to_string(headroom) +
               " unless on (cluster) sum by (cluster) (" + std::string(series::kAllocationShare) + "{" + sel +
               "}) >= " + std::to_string(max_gpus),
       .for_ = std::string(kHeadroomLostFor),
       .severity = "warning",
       .owner = "platform",
       .labels = labels,
       .summary = s.resource_pool + " has room for only {{ $value }} GPUs in whole replicas of " + svc +
                  ", below its burst headroom of " + std::to_string(headroom),
       .description = isp.ref() + " keeps " + std::to_string(headroom) +
                      " GPUs ready for fast scale-out (burstHeadroom). Below maxReplicas, a traffic burst now "
                      "waits for reclaim or defragmentation instead of starting a replica in " +
                      duration(s.model_load_time) + "."}));

  return rule_object("gpubank-inference-" + isp.name(), "inference",
                     Json::array({group("gpubank.inference." + isp.name(), std::move(rules))}), std::move(sources));
}

// ---- gpubank-lowutil-<policy> -------------------------------------------------------------

struct LowUtilMatch {
  const PolicyObject* object;
  const policy::LowUtilizationMatch* match;
  [[nodiscard]] int specificity() const {
    return (match->business_group ? 2 : 0) + (match->resource_pool ? 1 : 0);
  }
  [[nodiscard]] std::string matchers() const {
    std::string out = "workload_type=" + quote(doc::enum_name(match->workload_type));
    if (match->business_group) out += ", business_group=" + quote(*match->business_group);
    if (match->resource_pool) out += ", pool=" + quote(*match->resource_pool);
    return out;
  }
  // Whether a workload may match both.
  [[nodiscard]] bool overlaps(const LowUtilMatch& other) const {
    auto agree = [](const std::optional<std::string>& a, const std::optional<std::string>& b) {
      return !a || !b || *a == *b;
    };
    return match->workload_type == other.match->workload_type &&
           agree(match->business_group, other.match->business_group) &&
           agree(match->resource_pool, other.match->resource_pool);
  }
};

// Kubernetes label and annotation keys as kube-state-metrics names them in kube_pod_labels
// and kube_pod_annotations: every character outside [a-zA-Z0-9_] becomes "_".
std::string ksm_name(std::string_view prefix, std::string_view key) {
  std::string out(prefix);
  for (char c : key) out += std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' ? c : '_';
  return out;
}

RenderedObject lowutil_object(const LowUtilMatch& self, const std::vector<LowUtilMatch>& all,
                              const policy::PolicySet& set) {
  const PolicyObject& o = *self.object;
  // A group's policy as it takes effect: never weaker than the platform's it overrides.
  const policy::LowUtilizationPolicySpec s = policy::effective_low_utilization(o, set);
  const std::string window = duration(s.window);
  const std::string sel = self.matchers();
  const std::string key(kAllocationKey);
  std::string expr = std::string(series::kAllocationShare) + "{" + sel + "}";
  auto below = [&](std::string_view rec, double threshold) {
    expr += " and on (" + key + ") avg_over_time(" + std::string(rec) + "{" + sel + "}[" + window + "]) < " +
            number(threshold);
  };
  std::string thresholds;
  auto note = [&](std::string_view what, double v) {
    thresholds += (thresholds.empty() ? "" : ", ") + std::string(what) + " below " + number(v) + "%";
  };
  if (s.thresholds.average_gpu_utilization) {
    below(series::kAllocationUtilization, *s.thresholds.average_gpu_utilization);
    note("GPU utilisation", *s.thresholds.average_gpu_utilization);
  }
  if (s.thresholds.average_memory_utilization) {
    below(series::kAllocationMemoryUsed, *s.thresholds.average_memory_utilization);
    note("memory use", *s.thresholds.average_memory_utilization);
  }
  if (s.thresholds.average_power_fraction) {
    below(series::kAllocationPower, *s.thresholds.average_power_fraction);
    note("power draw", *s.thresholds.average_power_fraction);
  }
  // Training and batch pods that report their steps are judged by them, as the scanner
  // judges them (governance/lowutil.hpp): no step over the window is low whatever the
  // utilisation, a step is not.
  const bool by_steps =
      s.match.workload_type == policy::WorkloadType::Training || s.match.workload_type == policy::WorkloadType::Batch;
  auto steps_over = [](const std::string& range) {
    return "max by (cluster, namespace, pod) (increase(" + std::string(series::kTrainingSteps) + "[" + range + "]))";
  };
  if (by_steps) {
    expr = "((" + expr + ") unless on (cluster, namespace, pod) " + steps_over(window) + ") or (" +
           std::string(series::kAllocationShare) + "{" + sel + "} and on (cluster, namespace, pod) " + steps_over(window) +
           " < 1)";
    thresholds += " (or no training step)";
  }
  expr = "(" + expr + ")";
  if (s.startup_grace_period.nanoseconds().count() > 0) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(s.startup_grace_period.nanoseconds()).count();
    expr += " and on (cluster, namespace, pod) time() - kube_pod_start_time > " + std::to_string(seconds);
  }
  if (s.checkpoint_grace_period.nanoseconds().count() > 0) {
    // A checkpoint's dip is not idleness: the controller's last notice or completion.
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(s.checkpoint_grace_period.nanoseconds()).count();
    expr += " unless on (cluster, namespace, workload_kind, workload) time() - "
            "gpubank_last_checkpoint_timestamp_seconds <= " + std::to_string(seconds);
  }
  if (by_steps) {
    // The job's own overhead states (loading, compiling, evaluating, checkpointing,
    // recovering) within the checkpoint grace, at least two minutes, excuse it, unless they
    // filled the whole window: what the scanner excludes as job-phase.
    const Duration lookback = std::max(s.checkpoint_grace_period, Duration(std::chrono::minutes(2)));
    expr += " unless on (cluster, namespace, pod) " + metrics::job_phase::excused_pods(duration(lookback), window);
  }
  for (const policy::Exclusion& e : s.exclude_when) {
    if (e.label) {
      expr += " unless on (cluster, namespace, pod) kube_pod_labels{" + ksm_name("label_", *e.label) + "=" +
              quote(e.value.value_or("")) + "}";
    } else if (e.annotation) {
      expr += " unless on (cluster, namespace, pod) kube_pod_annotations{" + ksm_name("annotation_", *e.annotation) +
              "!=\"\"}";
    }
  }
  // The most specific policy decides for a workload (group beats pool beats neither).
  std::vector<const PolicyObject*> sources{&o};
  for (const PolicyObject* platform : policy::overridden_platform_policies(o, set)) sources.push_back(platform);
  std::string not_more_specific;
  for (const LowUtilMatch& other : all) {
    if (other.object == self.object || other.specificity() <= self.specificity() || !self.overlaps(other)) continue;
    not_more_specific += " unless on (" + key + ") gpubank_gpu_allocation_info{" + other.matchers() + "}";
    sources.push_back(other.object);
  }
  expr += not_more_specific;

  Json rules = Json::array();
  rules.push_back(record(series::kAllocationLowUtilization, expr, Json{{"lowutil_policy", o.name()}}));
  if (s.thresholds.average_gpu_utilization) {
    // Busy device-minutes count as effective, or, where a training pod reports its steps,
    // minutes in which they advanced (two minutes of increase, as the report reads them).
    std::string busy = std::string(series::kAllocationShare) + "{" + sel + "} * on (" + key + ") group_left () (" +
                       std::string(series::kAllocationUtilization) + "{" + sel + "} >= bool " +
                       number(*s.thresholds.average_gpu_utilization) + ")";
    if (by_steps) {
      busy = "(" + busy + " unless on (cluster, namespace, pod) " + steps_over("2m") + ") or (" +
             std::string(series::kAllocationShare) + "{" + sel + "} * on (cluster, namespace, pod) group_left () (" +
             steps_over("2m") + " > bool 0))";
    }
    rules.push_back(record(series::kAllocationBusy, "(" + busy + ")" + not_more_specific, Json{{"lowutil_policy", o.name()}}));
  }
  const std::string flagged = "sum by (cluster, business_group, namespace, pod, owner_id, workload_kind, workload, "
                              "lowutil_policy) (" + std::string(series::kAllocationLowUtilization) +
                              "{lowutil_policy=" + quote(o.name()) + "})";
  const std::string what = "Pod {{ $labels.namespace }}/{{ $labels.pod }} ({{ $labels.workload_kind }} "
                           "{{ $labels.workload }}) holds {{ $value }} GPUs with " + thresholds + " over " + window;
  std::string then = o.ref() + " marks it as low utilisation.";
  if (by_steps) {
    then += " Where its pods report " + std::string(series::kTrainingSteps) +
            ", the steps decide instead (none over the window is low, any is not); where they report " +
            std::string(metrics::job_phase::kSeries) +
            ", loading, compiling, evaluating, checkpointing and recovering are not idleness unless they last the "
            "whole window.";
  }
  if (s.checkpoint_grace_period.nanoseconds().count() > 0) {
    then += " The owner has " + duration(s.checkpoint_grace_period) + " to checkpoint before it may be reclaimed.";
  }
  const auto notify = s.notify.value_or(policy::NotifyPolicy{});
  Json first_labels{{"notify", std::string(doc::enum_name(notify.first))}, {"lowutil_policy", o.name()}};
  rules.push_back(alert({.name = "GPULowUtilization",
                         .expr = flagged,
                         .for_ = {},
 .severity = "info",
                         .owner = "{{ $labels.business_group }}",
                         .labels = first_labels,
                         .summary = what,
                         .description = then + (notify.repeat_interval
                                                    ? " Repeat the notice every " + duration(*notify.repeat_interval) + "."
                                                    : std::string())}));
  if (notify.escalate_to && notify.after) {
    rules.push_back(alert({.name = "GPULowUtilizationEscalated",
                           .expr = flagged,
                           .for_ = duration(*notify.after),
                           .severity = "warning",
                           .owner = "{{ $labels.business_group }}",
                           .labels = Json{{"notify", std::string(doc::enum_name(*notify.escalate_to))},
                                          {"lowutil_policy", o.name()}},
                           .summary = what + ", still after " + duration(*notify.after),
                           .description = then + " Notified " + std::string(doc::enum_name(notify.first)) + " " +
                                          duration(*notify.after) + " ago; now escalated to " +
                                          std::string(doc::enum_name(*notify.escalate_to)) + "."}));
  }
  return rule_object("gpubank-lowutil-" + o.name(), "low-utilization",
                     Json::array({group("gpubank.lowutil." + o.name(), std::move(rules))}), std::move(sources));
}

}  // namespace

std::vector<RenderedObject> render_prometheus_rules(const policy::PolicySet& set) {
  const PolicyObject* guardrails = set.guardrails();
  if (guardrails == nullptr) {
    fail(nullptr, "(object)", "a policy set without PlatformGuardrails has no pools or groups to monitor",
         "render.guardrails-missing");
  }
  const auto& g = guardrails->as<policy::PlatformGuardrailsSpec>();
  std::vector<RenderedObject> out;
  out.push_back(platform_object(*guardrails));

  // Quotas by group, in pool order of the guardrails so the object does not depend on
  // file order.
  std::map<std::string, std::vector<const PolicyObject*>> quotas;
  std::vector<const PolicyObject*> inference;
  std::vector<LowUtilMatch> lowutil;
  for (const PolicyObject& p : set.policies()) {
    switch (p.kind) {
      case Kind::GPUQuotaPolicy: quotas[p.as<policy::GPUQuotaPolicySpec>().business_group].push_back(&p); break;
      case Kind::InferenceScalingPolicy: inference.push_back(&p); break;
      case Kind::LowUtilizationPolicy:
        lowutil.push_back({&p, &p.as<policy::LowUtilizationPolicySpec>().match});
        break;
      default: break;
    }
  }
  for (auto& [group_name, list] : quotas) {
    std::sort(list.begin(), list.end(), [](const PolicyObject* a, const PolicyObject* b) {
      const auto& pa = a->as<policy::GPUQuotaPolicySpec>().resource_pool;
      const auto& pb = b->as<policy::GPUQuotaPolicySpec>().resource_pool;
      return pa != pb ? pa < pb : a->name() < b->name();
    });
  }
  std::sort(lowutil.begin(), lowutil.end(),
            [](const LowUtilMatch& a, const LowUtilMatch& b) { return a.object->name() < b.object->name(); });

  for (const policy::Group& grp : g.groups) {
    auto it = quotas.find(grp.name);
    out.push_back(group_object(*guardrails, grp, it == quotas.end() ? std::vector<const PolicyObject*>{} : it->second));
  }
  for (const PolicyObject* isp : inference) {
    const auto& s = isp->as<policy::InferenceScalingPolicySpec>();
    const PolicyObject* quota = nullptr;
    if (auto it = quotas.find(s.business_group); it != quotas.end()) {
      for (const PolicyObject* q : it->second) {
        if (q->as<policy::GPUQuotaPolicySpec>().resource_pool == s.resource_pool) quota = q;
      }
    }
    out.push_back(inference_object(*isp, *guardrails, quota));
  }
  for (const LowUtilMatch& m : lowutil) out.push_back(lowutil_object(m, lowutil, set));
  stamp_all(out);
  sort_and_check_unique(out);
  return out;
}

}  // namespace gpubank::render
