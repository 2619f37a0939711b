#include "render/grafana.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "render/prometheus_rules.hpp"

namespace gpubank::render {
namespace {

using policy::PolicyObject;
using promql::quote;

// Grafana 10.x/11.x dashboard JSON (schemaVersion 39 loads unchanged in both).
constexpr int kSchemaVersion = 39;
const Json kDatasource = Json{{"type", "prometheus"}, {"uid", "${datasource}"}};

// A panel filter: the template variables that apply to a series with these labels. A
// workload is narrowed by both "service" (inference workloads) and "workload".
std::string filter(std::initializer_list<std::string_view> labels) {
  std::string out;
  auto add = [&](std::string_view label, std::string_view variable) {
    if (!out.empty()) out += ", ";
    out += std::string(label) + "=~\"$" + std::string(variable) + "\"";
  };
  for (std::string_view l : labels) {
    if (l == "workload") {
      add("workload", "service");
      add("workload", "workload");
    } else if (l == "gpu_uuid") {
      add("gpu_uuid", "gpu");
    } else {
      add(l, l);
    }
  }
  return out;
}

// Filters by the labels each level of series carries.
const std::string kDevice = filter({"cluster", "pool", "gpu_uuid"});
const std::string kAllocation = filter({"cluster", "pool", "business_group", "queue", "workload", "pod", "gpu_uuid"});
const std::string kGroupPool = filter({"cluster", "pool", "business_group"});
const std::string kQueue = filter({"cluster", "business_group", "queue"});
const std::string kWorkload = filter({"cluster", "pool", "business_group", "queue", "workload"});
const std::string kPool = filter({"cluster", "pool"});
const std::string kService = filter({"cluster", "workload"});
// Raw Kueue series: the ClusterQueue is "<group>-<pool>".
const std::string kRawQueue = "cluster=~\"$cluster\", cluster_queue=~\"($business_group)-($pool)\", "
                              "replica_role!=\"follower\"";

std::string sel(std::string_view metric, const std::string& matchers, std::string_view extra = {}) {
  std::string m = matchers;
  if (!extra.empty()) m += ", " + std::string(extra);
  return std::string(metric) + "{" + m + "}";
}

struct Target {
  std::string expr;
  std::string legend;
};

struct Panel {
  std::string type;  // timeseries, stat, table, bargauge
  std::string title;
  std::string description;
  std::vector<Target> targets;
  std::string unit = "short";
  int w = 12;
  int h = 8;
  bool instant = false;  // tables and bar gauges show the value at the end of the range
};

class Dashboard {
 public:
  Dashboard(std::string slug, std::string title, std::string description)
      : slug_(std::move(slug)), title_(std::move(title)), description_(std::move(description)) {}

  // Places panels left to right in rows 24 units wide.
  void add(const Panel& p) {
    if (x_ + p.w > 24) {
      x_ = 0;
      y_ += row_h_;
      row_h_ = 0;
    }
    Json panel = Json::object();
    panel["id"] = next_id_++;
    panel["type"] = p.type;
    panel["title"] = p.title;
    panel["description"] = p.description;
    panel["gridPos"] = Json{{"h", p.h}, {"w", p.w}, {"x", x_}, {"y", y_}};
    panel["datasource"] = kDatasource;
    Json targets = Json::array();
    char ref = 'A';
    for (const Target& t : p.targets) {
      Json target = Json::object();
      target["refId"] = std::string(1, ref++);
      target["datasource"] = kDatasource;
      target["expr"] = t.expr;
      target["legendFormat"] = t.legend.empty() ? "__auto" : t.legend;
      target["range"] = !p.instant;
      target["instant"] = p.instant;
      if (p.type == "table") target["format"] = "table";
      targets.push_back(std::move(target));
    }
    panel["targets"] = std::move(targets);
    panel["fieldConfig"] = Json{{"defaults", Json{{"unit", p.unit}}}, {"overrides", Json::array()}};
    if (p.type == "timeseries") {
      panel["options"] = Json{{"legend", Json{{"displayMode", "table"}, {"placement", "bottom"}, {"showLegend", true},
                                              {"calcs", Json::array({"lastNotNull", "max"})}}},
                              {"tooltip", Json{{"mode", "multi"}, {"sort", "desc"}}}};
    } else if (p.type == "stat") {
      panel["options"] = Json{{"reduceOptions", Json{{"calcs", Json::array({"lastNotNull"})}, {"values", false}}},
                              {"colorMode", "value"}, {"graphMode", "area"}};
    } else if (p.type == "bargauge") {
      panel["options"] = Json{{"reduceOptions", Json{{"calcs", Json::array({"lastNotNull"})}, {"values", false}}},
                              {"displayMode", "gradient"}, {"orientation", "horizontal"}};
    } else if (p.type == "table") {
      panel["options"] = Json{{"showHeader", true}};
      panel["transformations"] = Json::array({Json{{"id", "merge"}, {"options", Json::object()}}});
    }
    panels_.push_back(std::move(panel));
    x_ += p.w;
    row_h_ = std::max(row_h_, p.h);
  }

  [[nodiscard]] Json model() const {
    Json d = Json::object();
    d["uid"] = "gpubank-" + slug_;
    d["title"] = title_;
    d["description"] = description_;
    d["tags"] = Json::array({"gpubank"});
    d["editable"] = true;
    d["graphTooltip"] = 1;
    d["timezone"] = "browser";
    d["refresh"] = "1m";
    d["schemaVersion"] = kSchemaVersion;
    d["version"] = 1;
    d["time"] = Json{{"from", "now-6h"}, {"to", "now"}};
    d["annotations"] = Json{{"list", Json::array()}};
    // The dashboards link to each other and carry the variables along: drill-down
    // continues across categories.
    d["links"] = Json::array({Json{{"type", "dashboards"},
                                   {"title", "gpubank"},
                                   {"tags", Json::array({"gpubank"})},
                                   {"asDropdown", true},
                                   {"includeVars", true},
                                   {"keepTime", true}}});
    d["templating"] = Json{{"list", variables()}};
    d["panels"] = panels_;
    return d;
  }

  [[nodiscard]] const std::string& slug() const { return slug_; }

 private:
  static Json query_variable(std::string_view name, std::string_view label, std::string_view metric,
                             const std::string& matchers, std::string_view source_label) {
    const std::string query = "label_values(" + std::string(metric) + (matchers.empty() ? "" : "{" + matchers + "}") +
                              ", " + std::string(source_label) + ")";
    return Json{{"name", std::string(name)},
                {"label", std::string(label)},
                {"type", "query"},
                {"datasource", kDatasource},
                {"query", Json{{"query", query}, {"refId", "PrometheusVariableQueryEditor-VariableQuery"}}},
                {"definition", query},
                {"refresh", 2},  // on time range change: pods and GPUs come and go
                {"includeAll", true},
                {"multi", true},
                {"allValue", ".*"},
                {"current", Json{{"selected", true}, {"text", Json::array({"All"})}, {"value", Json::array({"$__all"})}}},
                {"sort", 1},
                {"hide", 0}};
  }

  static Json variables() {
    Json list = Json::array();
    list.push_back(Json{{"name", "datasource"},
                        {"label", "Data source"},
                        {"type", "datasource"},
                        {"query", "prometheus"},
                        {"refresh", 1},
                        {"regex", ""},
                        {"hide", 0}});
    const std::string alloc = "gpubank_gpu_allocation_info";
    list.push_back(query_variable("cluster", "Cluster", "gpubank_gpu_info", "", "cluster"));
    list.push_back(query_variable("pool", "Pool", "gpubank_gpu_info", filter({"cluster"}), "pool"));
    list.push_back(query_variable("business_group", "Business group", alloc, filter({"cluster", "pool"}),
                                  "business_group"));
    list.push_back(query_variable("queue", "Queue", alloc, filter({"cluster", "pool", "business_group"}), "queue"));
    list.push_back(query_variable("service", "Inference service", alloc,
                                  filter({"cluster", "pool", "business_group", "queue"}) +
                                      ", workload_type=\"inference\"",
                                  "workload"));
    list.push_back(query_variable("workload", "Workload", alloc,
                                  filter({"cluster", "pool", "business_group", "queue"}) + ", workload=~\"$service\"",
                                  "workload"));
    list.push_back(query_variable("pod", "Pod", alloc, filter({"cluster", "pool", "business_group", "queue", "workload"}),
                                  "pod"));
    list.push_back(query_variable("gpu", "GPU (UUID)", alloc,
                                  filter({"cluster", "pool", "business_group", "queue", "workload"}) +
                                      ", pod=~\"$pod\"",
                                  "gpu_uuid"));
    return list;
  }

  std::string slug_;
  std::string title_;
  std::string description_;
  Json panels_ = Json::array();
  int next_id_ = 1;
  int x_ = 0;
  int y_ = 0;
  int row_h_ = 0;
};

// Alerts of these names currently firing, or 0.
std::string firing(std::string_view alertnames, const std::string& matchers) {
  return "count(ALERTS{alertname=~" + quote(alertnames) + ", alertstate=\"firing\", " + matchers + "}) or vector(0)";
}

// ---- the six dashboards --------------------------------------------------------------------

Dashboard gpu_noc() {
  Dashboard d("gpu-noc", "gpubank / GPU NOC",
              "Device health and use per GPU: utilisation, memory, power, temperature, XID and ECC errors, and "
              "who holds each GPU.");
  const std::string pools = filter({"cluster", "pool"});
  d.add({"stat", "GPUs", "Devices gpubank's exporter reports (whole GPUs and MIG instances).",
         {{"sum(" + sel(series::kPoolCapacity, pools) + ")", ""}}, "short", 4, 4});
  d.add({"stat", "Allocated", "Devices held by a container.",
         {{"sum(" + sel(series::kPoolAllocated, pools) + ")", ""}}, "short", 4, 4});
  d.add({"stat", "Hardware alerts", "GPUs with a critical XID, double-bit ECC errors or a failed row remap.",
         {{firing("GPUXidHardwareError|GPUEccDoubleBitError|GPURowRemapFailure", filter({"cluster"})), ""}},
         "short", 4, 4});
  d.add({"stat", "Degraded", "GPUs with contained or remapped memory errors: reset at the next drain.",
         {{firing("GPUXidDegraded", filter({"cluster"})), ""}}, "short", 4, 4});
  d.add({"stat", "Unattributed GPUs", "GPUs dcgm-exporter sees and gpubank's exporter does not.",
         {{firing("GPUAttributionMissing", filter({"cluster"})), ""}}, "short", 8, 4});
  d.add({"timeseries", "GPU utilisation", "Graphics engine active (DCGM_FI_PROF_GR_ENGINE_ACTIVE, else GPU_UTIL).",
         {{sel(series::kGpuUtilization, kDevice), "{{node}} {{gpu_uuid}} {{gpu_instance}}"}}, "percent"});
  d.add({"timeseries", "Framebuffer used", "FB_USED / (FB_USED + FB_FREE).",
         {{sel(series::kGpuMemoryUsed, kDevice), "{{node}} {{gpu_uuid}} {{gpu_instance}}"}}, "percent"});
  d.add({"timeseries", "Power draw", "Share of the enforced power limit.",
         {{sel(series::kGpuPower, filter({"cluster", "pool", "gpu_uuid"})), "{{node}} {{gpu_uuid}}"}}, "percent"});
  d.add({"timeseries", "Temperature", "DCGM_FI_DEV_GPU_TEMP.",
         {{"max by (cluster, node, gpu_uuid) (label_replace(DCGM_FI_DEV_GPU_TEMP{cluster=~\"$cluster\", "
           "UUID=~\"$gpu\"}, \"gpu_uuid\", \"$1\", \"UUID\", \"(.+)\") * on (cluster, gpu_uuid) group_left (node) "
           "group by (cluster, gpu_uuid, node) (" +
               sel("gpubank_gpu_info", pools) + "))",
           "{{node}} {{gpu_uuid}}"}},
         "celsius"});
  d.add({"table", "Last XID per GPU", "The last XID each GPU reported (0: none since the driver loaded).",
         {{"DCGM_FI_DEV_XID_ERRORS{cluster=~\"$cluster\", UUID=~\"$gpu\"} > 0", ""}}, "short", 12, 8, true});
  d.add({"table", "Uncorrectable ECC errors", "Volatile double-bit ECC errors since the driver loaded.",
         {{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{cluster=~\"$cluster\", UUID=~\"$gpu\"} > 0", ""}}, "short", 12, 8, true});
  d.add({"table", "Who holds each GPU", "gpubank_gpu_allocation_info: device, pod, group, owner and queue.",
         {{sel("gpubank_gpu_allocation_info", kAllocation), ""}}, "short", 24, 10, true});
  return d;
}

Dashboard capacity(const policy::PlatformGuardrailsSpec& g) {
  Dashboard d("capacity", "gpubank / Capacity and fragmentation",
              "What each pool has, what is free, and whether the free GPUs still form the replica shapes the "
              "inference policies need.");
  d.add({"bargauge", "Allocated share of each pool", "Allocated devices over devices reported, per pool.",
         {{sel(series::kPoolAllocated, kPool) + " / on (cluster, pool, gpu_model) " + sel(series::kPoolCapacity, kPool),
           "{{pool}}"}},
         "percentunit", 12, 8, true});
  // Guardrails say what a pool should have; a pool with fewer healthy devices cannot honour
  // the guarantees sold on it.
  std::vector<Target> drift;
  for (const auto& pool : g.pools) {
    drift.push_back({"sum by (cluster, pool) (" + sel(series::kPoolCapacity, kPool, "pool=" + quote(pool.name)) +
                         ") - " + std::to_string(pool.capacity),
                     pool.name});
  }
  d.add({"bargauge", "Reported minus guardrail capacity",
         "Devices the exporter reports minus PlatformGuardrails pools[].capacity: below zero, guarantees on the pool "
         "exceed what exists.",
         drift, "short", 12, 8, true});
  d.add({"timeseries", "Free GPUs per pool", "Devices no container holds.",
         {{"sum by (cluster, pool) (" + sel(series::kNodeFree, kPool) + ")", "{{pool}}"}}});
  d.add({"timeseries", "Largest free block on one node", "The biggest replica that still fits a single node.",
         {{sel(series::kPoolLargestFree, kPool), "{{pool}}"}}});
  d.add({"timeseries", "Placeable inference replicas",
         "Whole replicas of each inference service's shape the free GPUs form now (recorded per "
         "InferenceScalingPolicy).",
         {{sel(series::kPlaceableReplicas, filter({"cluster", "pool", "business_group", "workload"})),
           "{{pool}}: {{namespace}}/{{workload}}"}},
         "short", 24, 8});
  d.add({"table", "Free GPUs per node", "Where the free devices are: scattered singles cannot host a TP=4 replica.",
         {{sel(series::kNodeFree, kPool) + " > 0", ""}}, "short", 12, 10, true});
  d.add({"timeseries", "Pending GPU requests per ClusterQueue", "kueue_cluster_queue_resource_pending.",
         {{sel(series::kQueuePendingGpus, kGroupPool), "{{cluster_queue}}"}}, "short", 12, 10});
  return d;
}

Dashboard bank() {
  Dashboard d("bank", "gpubank / Business-group bank",
              "Guarantees, use, borrowing and lending per business group: who lent what to whom.");
  d.add({"timeseries", "Used vs guaranteed per ClusterQueue", "Kueue usage against nominal quota.",
         {{sel(series::kQueueUsed, kGroupPool), "{{cluster_queue}} used"},
          {sel(series::kQueueNominal, kGroupPool), "{{cluster_queue}} guaranteed"}}});
  d.add({"timeseries", "Borrowing headroom", "Borrowing limit minus what is borrowed (Kueue).",
         {{sel(series::kQueueBorrowingLimit, kGroupPool) + " - " + sel(series::kQueueBorrowed, kGroupPool),
           "{{cluster_queue}}"}}});
  d.add({"timeseries", "Borrowed", "GPUs used above the guarantee, from gpubank's ledger.",
         {{sel(series::kGroupPoolBorrowed, kGroupPool), "{{business_group}} on {{pool}}"}}});
  d.add({"timeseries", "Lent", "GPUs of the guarantee other groups use, from gpubank's ledger.",
         {{sel(series::kGroupPoolLent, kGroupPool), "{{business_group}} on {{pool}}"}}});
  d.add({"table", "Open loans", "gpubank_bank_loan_gpus: lender, borrower and pool.",
         {{"gpubank_bank_loan_gpus{cluster=~\"$cluster\", pool=~\"$pool\", lender=~\"$business_group\"} or "
           "gpubank_bank_loan_gpus{cluster=~\"$cluster\", pool=~\"$pool\", borrower=~\"$business_group\"}",
           ""}},
         "short", 12, 8, true});
  d.add({"timeseries", "Allocated GPUs per group", "Devices held by each group's containers.",
         {{"sum by (cluster, business_group) (" + sel(series::kGroupPoolAllocated, kGroupPool) + ")",
           "{{business_group}}"}}});
  d.add({"stat", "Quotas exhausted", "GPUQuotaExhausted alerts firing.",
         {{firing("GPUQuotaExhausted", kGroupPool), ""}}, "short", 12, 4});
  d.add({"stat", "Guarantees not honoured", "GPUGuaranteeNotHonoured alerts firing: reclaim did not happen in time.",
         {{firing("GPUGuaranteeNotHonoured", kGroupPool), ""}}, "short", 12, 4});
  return d;
}

Dashboard training() {
  Dashboard d("training", "gpubank / Training jobs",
              "Training and batch workloads: GPUs, utilisation, low-utilisation findings, queueing and evictions.");
  const std::string training = "workload_type=~\"training|batch\"";
  d.add({"timeseries", "GPUs per workload", "Devices each training or batch workload holds.",
         {{sel(series::kWorkloadAllocated, kWorkload, training), "{{namespace}}/{{workload}}"}}});
  d.add({"timeseries", "GPU utilisation per workload", "Average over the workload's devices.",
         {{"avg by (cluster, namespace, workload) (" + sel(series::kAllocationUtilization, kAllocation, training) + ")",
           "{{namespace}}/{{workload}}"}},
         "percent"});
  d.add({"table", "Low utilisation now", "Allocations a LowUtilizationPolicy flags, with the policy.",
         {{sel(series::kAllocationLowUtilization, kAllocation), ""}}, "short", 24, 8, true});
  d.add({"timeseries", "Pending workloads per ClusterQueue", "Kueue workloads waiting for quota.",
         {{sel(series::kQueuePendingWorkloads, kGroupPool), "{{cluster_queue}}"}}});
  d.add({"timeseries", "Admission wait p90", "kueue_admission_wait_time_seconds, per ClusterQueue.",
         {{"histogram_quantile(0.9, sum by (cluster, cluster_queue, le) (rate(kueue_admission_wait_time_seconds_bucket{" +
               kRawQueue + "}[$__rate_interval])))",
           "{{cluster_queue}}"}},
         "s"});
  d.add({"timeseries", "Evictions", "kueue_evicted_workloads_total by reason (Preempted, InactiveWorkload, ...).",
         {{"sum by (cluster, cluster_queue, reason) (rate(kueue_evicted_workloads_total{" + kRawQueue +
               "}[$__rate_interval]))",
           "{{cluster_queue}} {{reason}}"}},
         "ops"});
  d.add({"table", "Volcano PodGroups never placed", "Seconds since creation of PodGroups without a placed task.",
         {{"time() - volcano_e2e_job_scheduling_start_time{cluster=~\"$cluster\"} unless on (cluster, job_namespace, "
           "job_name) volcano_e2e_job_scheduling_last_time",
           ""}},
         "s", 12, 8, true});
  d.add({"table", "GPU-hours in range", "Top 20 workloads by GPU-hours over the dashboard's time range.",
         {{"topk(20, sum_over_time(" + sel(series::kWorkloadAllocated, kWorkload, training) + "[$__range]) / " +
               std::to_string(kRuleSamplesPerHour) + ")",
           ""}},
         "short", 24, 8, true});
  return d;
}

Dashboard inference_slo() {
  Dashboard d("inference-slo", "gpubank / Inference SLO",
              "Time to first token against each InferenceScalingPolicy's target, error budget burn, queue depth, KV "
              "cache and replicas.");
  const std::string pods = "group by (cluster, namespace, pod, workload_kind, workload) (" +
                           sel("gpubank_gpu_allocation_info", kAllocation) + ")";
  auto by_workload = [&](std::string_view metric) {
    return std::string(metric) + "{cluster=~\"$cluster\"} * on (cluster, namespace, pod) group_left (workload_kind, "
                                 "workload) " + pods;
  };
  d.add({"timeseries", "TTFT p95 vs target", "histogram_quantile over vLLM's TTFT histogram; dashed: the target.",
         {{"histogram_quantile(0.95, sum by (cluster, namespace, workload, le) (" + sel(series::kTtftBucketRate, kService) +
               "))",
           "{{namespace}}/{{workload}} p95"},
          {sel(series::kTtftTarget, kService), "{{namespace}}/{{workload}} target"}},
         "s", 24, 9});
  d.add({"timeseries", "Error budget burn rate",
         "Slow-request ratio over the 5% budget: 1 spends the budget in exactly 30 days; the page fires at 14.4 (1h) "
         "and 6 (6h).",
         {{sel("namespace_workload:gpubank_ttft_slo_errors:ratio_rate1h", kService) + " / 0.05", "{{workload}} 1h"},
          {sel("namespace_workload:gpubank_ttft_slo_errors:ratio_rate6h", kService) + " / 0.05", "{{workload}} 6h"},
          {sel("namespace_workload:gpubank_ttft_slo_errors:ratio_rate3d", kService) + " / 0.05", "{{workload}} 3d"}}});
  d.add({"stat", "Burn alerts", "InferenceTTFTBudgetBurnFast/Slow alerts firing.",
         {{firing("InferenceTTFTBudgetBurnFast|InferenceTTFTBudgetBurnSlow", kService), ""}},
         "short", 6, 8});
  d.add({"table", "Scale-out blocked", "gpubank's autoscaler could not place a replica: reason quota, pool-capacity "
                                       "or placement.",
         {{sel("gpubank_autoscaler_scale_out_blocked", kService) + " > 0", ""}}, "short", 6, 8, true});
  d.add({"timeseries", "Queue depth per replica", "vllm:num_requests_waiting averaged over the serving pods.",
         {{"avg by (cluster, namespace, workload) (" + by_workload("vllm:num_requests_waiting") + ")",
           "{{namespace}}/{{workload}}"}}});
  d.add({"timeseries", "KV cache usage", "vllm:kv_cache_usage_perc (vllm:gpu_cache_usage_perc before vLLM 0.10).",
         {{"100 * max by (cluster, namespace, workload, pod) (" + by_workload("vllm:kv_cache_usage_perc") + " or " +
               by_workload("vllm:gpu_cache_usage_perc") + ")",
           "{{namespace}}/{{pod}}"}},
         "percent"});
  d.add({"timeseries", "GPUs held per service", "Devices of each inference workload: replicas x replica shape.",
         {{sel(series::kWorkloadAllocated, kWorkload, "workload_type=\"inference\""), "{{namespace}}/{{workload}}"}}});
  return d;
}

Dashboard finops(const policy::PlatformGuardrailsSpec& g) {
  Dashboard d("finops", "gpubank / FinOps",
              "GPU-hours and cost per business group, queue, model and GPU model, with what low utilisation wastes. "
              "Prices: PlatformGuardrails gpuHourPrice.");
  // Grafana knows a few currencies by name; others get the code as suffix.
  static const std::map<std::string, std::string> kUnits{
      {"USD", "currencyUSD"}, {"EUR", "currencyEUR"}, {"GBP", "currencyGBP"}, {"JPY", "currencyJPY"}};
  const auto known = kUnits.find(g.currency);
  const std::string money = known != kUnits.end() ? known->second : "suffix: " + g.currency;
  // Rules run every minute: a range's sum of "per hour" samples over 60 is its total.
  auto in_range = [](const std::string& selector) {
    return "sum_over_time(" + selector + "[$__range]) / " + std::to_string(kRuleSamplesPerHour);
  };
  d.add({"stat", "Cost per hour now", "Allocated devices times gpuHourPrice.",
         {{"sum(" + sel(series::kGroupPoolCostRate, kGroupPool) + ")", ""}}, money, 6, 4});
  d.add({"stat", "Cost in range", "Over the dashboard's time range.",
         {{"sum(" + in_range(sel(series::kGroupPoolCostRate, kGroupPool)) + ")", ""}}, money, 6, 4, true});
  d.add({"stat", "GPU-hours in range", "Over the dashboard's time range.",
         {{"sum(" + in_range(sel(series::kGroupPoolAllocated, kGroupPool)) + ")", ""}}, "short", 6, 4, true});
  d.add({"stat", "Low-utilisation GPU-hours in range", "Devices a LowUtilizationPolicy flags.",
         {{"sum(" + in_range(sel(series::kGroupPoolLowUtil, kGroupPool)) + ")", ""}}, "short", 6, 4, true});
  d.add({"timeseries", "GPU-hours per hour by business group", "Rolling one-hour GPU-hours.",
         {{"sum by (cluster, business_group) (" + sel(series::kGroupPoolHours, kGroupPool) + ")", "{{business_group}}"}}});
  d.add({"timeseries", "Cost per hour by business group", "Rolling one-hour cost.",
         {{"sum by (cluster, business_group, currency) (" + sel(series::kGroupPoolCost, kGroupPool) + ")",
           "{{business_group}}"}},
         money});
  d.add({"bargauge", "Low-utilisation cost in range by business group", "What flagged allocations cost.",
         {{"sum by (business_group) (" + in_range(sel(series::kGroupPoolLowUtilCost, kGroupPool)) + ")",
           "{{business_group}}"}},
         money, 12, 8, true});
  d.add({"timeseries", "GPU-hours per hour by GPU model", "Rolling one-hour GPU-hours per model.",
         {{sel(series::kGpuModelHours, filter({"cluster"})), "{{gpu_model}}"}}});
  d.add({"table", "GPU-hours in range by queue", "Per Kueue LocalQueue (or Volcano queue).",
         {{in_range(sel(series::kQueueAllocated, kQueue)), ""}}, "short", 12, 8, true});
  d.add({"table", "GPU-hours in range by served model", "Per vLLM model_name.",
         {{in_range(sel(series::kModelAllocated, filter({"cluster", "business_group"}))), ""}}, "short", 12, 8, true});
  return d;
}

RenderedObject dashboard_object(const Dashboard& d, const std::vector<const PolicyObject*>& sources) {
  RenderedObject o;
  o.manifest = d.model();
  o.path = "grafana/" + d.slug() + ".json";
  o.sources = sources;
  return o;
}

RenderedObject configmap_object(const Dashboard& d, const Json& model, const std::vector<const PolicyObject*>& sources) {
  RenderedObject o;
  o.manifest = Json::object();
  o.manifest["apiVersion"] = "v1";
  o.manifest["kind"] = "ConfigMap";
  // The Grafana helm chart's sidecar loads ConfigMaps labelled grafana_dashboard: "1"
  // (sidecar.dashboards.label/labelValue); grafana_folder is its folderAnnotation.
  o.manifest["metadata"] = Json{{"name", "gpubank-dashboard-" + d.slug()},
                                {"namespace", std::string(kMonitoringNamespace)},
                                {"labels", Json{{"grafana_dashboard", "1"},
                                                {"app.kubernetes.io/part-of", "gpubank"},
                                                {"app.kubernetes.io/component", "monitoring"}}},
                                {"annotations", Json{{"grafana_folder", "gpubank"}}}};
  // Compact: the readable copy is grafana/<slug>.json; kubectl apply keeps the whole
  // object in an annotation limited to 256 KiB.
  o.manifest["data"] = Json{{d.slug() + ".json", model.dump()}};
  o.path = "grafana/configmap-" + d.slug() + ".yaml";
  o.sources = sources;
  stamp(o);
  return o;
}

}  // namespace

std::vector<RenderedObject> render_grafana_dashboards(const policy::PolicySet& set) {
  const PolicyObject* guardrails = set.guardrails();
  if (guardrails == nullptr) {
    throw std::invalid_argument(
        "PlatformGuardrails: (object): a policy set without PlatformGuardrails has no pools to chart "
        "[render.guardrails-missing]");
  }
  const auto& g = guardrails->as<policy::PlatformGuardrailsSpec>();
  const std::vector<std::pair<Dashboard, std::vector<const PolicyObject*>>> dashboards{
      {gpu_noc(), {}},
      {capacity(g), {guardrails}},
      {bank(), {}},
      {training(), {}},
      {inference_slo(), {}},
      {finops(g), {guardrails}},
  };
  std::vector<RenderedObject> out;
  for (const auto& [d, sources] : dashboards) {
    RenderedObject dashboard = dashboard_object(d, sources);
    out.push_back(configmap_object(d, dashboard.manifest, sources));
    out.push_back(std::move(dashboard));
  }
  sort_and_check_unique(out);
  return out;
}

}  // namespace gpubank::render
