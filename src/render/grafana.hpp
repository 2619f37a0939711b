// Policy -> Grafana dashboards: one dashboard model per category, plus a ConfigMap per
// dashboard for the Grafana helm chart's sidecar (label grafana_dashboard: "1"), so GitOps
// can apply them. The panels read the recording rules of prometheus_rules.hpp.
#pragma once

#include <string_view>
#include <vector>

#include "policy/policy_set.hpp"
#include "render/object.hpp"

namespace gpubank::render {

// The template variables every dashboard has, in chain order: each one's query is
// filtered by the ones before it, so picking a business group narrows queues, services,
// workloads, pods and GPUs. "datasource" comes first and is every panel's data source.
inline constexpr std::string_view kDashboardVariables[] = {"datasource", "cluster", "pool",  "business_group", "queue",
                                                           "service",    "workload", "pod", "gpu"};

// Renders the six dashboards (slugs gpu-noc, capacity, bank, training, inference-slo,
// finops) as grafana/<slug>.json (manifest = the dashboard model, uid gpubank-<slug>) and
// grafana/configmap-<slug>.yaml (a v1 ConfigMap holding it), sorted by path. Pure and
// deterministic. The panels read policy figures from the recording rules (targets, replica
// shapes), so only the guardrails feed dashboards directly (pool capacities, currency).
[[nodiscard]] std::vector<RenderedObject> render_grafana_dashboards(const policy::PolicySet& set);

}  // namespace gpubank::render
