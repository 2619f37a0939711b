#include "api/webhook_metrics.hpp"

#include <stdexcept>
#include <utility>

#include "api/webhook_server.hpp"
#include "metrics/registry.hpp"
#include "policy/types.hpp"

namespace gpubank::api {

namespace {

// The kinds the webhook configurations send (deploy/webhook/*webhookconfiguration.yaml)
// and the workload kinds review() recognises without a pod template (policy_set.cpp), by
// API group. The label is the kind alone: no two of these share a kind name.
constexpr std::pair<std::string_view, std::string_view> kWorkloadKinds[] = {
    {"", "Pod"},
    {"batch", "Job"},
    {"batch", "CronJob"},
    {"apps", "Deployment"},
    {"apps", "StatefulSet"},
    {"apps", "ReplicaSet"},
    {"jobset.x-k8s.io", "JobSet"},
    {"kubeflow.org", "PyTorchJob"},
    {"ray.io", "RayCluster"},
    {"ray.io", "RayJob"},
    {"ray.io", "RayService"},
    {"serving.kserve.io", "InferenceService"},
    {"serving.kserve.io", "LLMInferenceService"},
    {"leaderworkerset.x-k8s.io", "LeaderWorkerSet"},
};

constexpr std::string_view kRejectionLabels[kRejectionCount] = {
    "too_large", "headers_too_large", "malformed", "unsupported_encoding", "length_required", "timeout", "over_capacity",
};

// Review durations: a decision is parsing, policy checks and an fdatasync of the audit log,
// from well under a millisecond to the API server's timeout (5 s in deploy/webhook).
const std::vector<double> kDurationBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                             0.1,    0.25,  0.5,    1,     2.5,   5,     10};

// Registration of the fixed families below only fails on a programming error.
template <class F>
F* must(Expected<F*> family) {
  if (!family) throw std::logic_error("webhook metrics: " + family.error());
  return *family;
}

template <class T>
void must(const Expected<T>& done) {
  if (!done) throw std::logic_error("webhook metrics: " + done.error());
}

}  // namespace

std::string_view kind_label(std::string_view group_and_kind) {
  const auto slash = group_and_kind.find('/');
  if (slash == std::string_view::npos) return "other";
  const std::string_view group = group_and_kind.substr(0, slash);
  const std::string_view kind = group_and_kind.substr(slash + 1);
  if (group == policy::kApiGroup) {
    // kind_name() is static storage: the label outlives the request.
    if (const auto k = policy::kind_from_name(kind)) return policy::kind_name(*k);
    return "other";
  }
  for (const auto& [g, k] : kWorkloadKinds) {
    if (g == group && k == kind) return k;
  }
  return "other";
}

std::string_view operation_label(std::string_view operation) {
  for (std::string_view op : {"CREATE", "UPDATE", "DELETE", "CONNECT"}) {
    if (op == operation) return op;
  }
  return "other";
}

std::string_view result_label(const AdmissionDecision& decision) {
  if (decision.allowed) return "allowed";
  // 400 and 413 are requests nobody could judge; 5xx the webhook's own failures.
  if (decision.code == 400 || decision.code == 413 || decision.code >= 500) return "error";
  return "denied";
}

std::string_view rejection_label(Rejection why) { return kRejectionLabels[static_cast<std::size_t>(why)]; }

WebhookMetrics::WebhookMetrics(const std::string& version) : registry_(std::make_unique<metrics::Registry>()) {
  metrics::Registry& r = *registry_;
  requests_ = must(r.counter("gpubank_webhook_requests_total",
                             "AdmissionReviews answered, by endpoint, object kind (\"other\" when not one the webhook "
                             "knows), operation and result (allowed, denied by a policy, error: not judged).",
                             {"endpoint", "kind", "operation", "result"}));
  duration_ = must(r.histogram("gpubank_webhook_request_duration_seconds",
                               "Wall-clock time of a review, from reading the AdmissionReview to its audit record.",
                               {"endpoint"}, kDurationBounds));
  rejected_ = must(r.counter("gpubank_webhook_rejected_requests_total",
                             "Requests answered or closed before any decision, by reason.", {"reason"}));
  open_connections_ = must(r.gauge("gpubank_webhook_open_connections",
                                   "HTTPS connections open now, those being refused included."));
  accepted_ = must(r.counter("gpubank_webhook_connections_accepted_total", "HTTPS connections accepted."));
  dropped_ = must(r.counter("gpubank_webhook_connections_dropped_total",
                            "HTTPS connections closed unanswered: over the limit and over the refusal lane too."));
  reloads_ = must(r.counter("gpubank_webhook_policy_reload_total",
                            "Reloads of the policies and certificate (SIGHUP, changed files, the cluster's policy "
                            "set), by result; a failed reload keeps what failed to load.",
                            {"result"}));
  reload_time_ = must(r.gauge("gpubank_webhook_policy_last_reload_success_timestamp_seconds",
                              "When the policies in force were loaded (Unix seconds)."));
  audit_failures_total_ = must(r.counter("gpubank_webhook_audit_append_failures_total",
                                         "Decisions that could not be written to the audit log (and were denied)."));
  auto* build = must(r.gauge("gpubank_build_info", "The gpubank build serving these metrics; always 1.", {"version"}));
  must(build->set({version.empty() ? std::string("unknown") : version}, 1));
  // Every reason and result from the first scrape on, so that rate() sees the first one.
  for (std::string_view reason : kRejectionLabels) must(rejected_->set_total({std::string(reason)}, 0));
  for (const char* result : {"success", "failure"}) must(reloads_->set_total({result}, 0));
}

WebhookMetrics::~WebhookMetrics() = default;

void WebhookMetrics::decision(bool mutating, const AdmissionDecision& d, double seconds) {
  const std::string endpoint = mutating ? "mutate" : "validate";
  metrics::LabelValues labels{endpoint, std::string(kind_label(d.kind)), std::string(operation_label(d.operation)),
                              std::string(result_label(d))};
  std::lock_guard lock(mu_);
  // The labels are bounded and valid and the duration finite: these cannot fail.
  (void)requests_->inc(labels);
  (void)duration_->observe({endpoint}, seconds < 0 ? 0 : seconds);
}

void WebhookMetrics::reload(bool success, double policies_at) {
  (success ? reload_success_ : reload_failure_).fetch_add(1, std::memory_order_relaxed);
  if (policies_at > 0) policies_at_.store(policies_at, std::memory_order_relaxed);
}

void WebhookMetrics::policies_loaded(double at) { policies_at_.store(at, std::memory_order_relaxed); }

std::string WebhookMetrics::render(const WebhookStats& stats) const {
  std::lock_guard lock(mu_);
  // The atomics are copied in under the lock; set_total refuses nothing here, since each
  // of them only grows.
  for (std::size_t i = 0; i < kRejectionCount; ++i) {
    (void)rejected_->set_total({std::string(kRejectionLabels[i])},
                               static_cast<double>(rejections_[i].load(std::memory_order_relaxed)));
  }
  (void)reloads_->set_total({"success"}, static_cast<double>(reload_success_.load(std::memory_order_relaxed)));
  (void)reloads_->set_total({"failure"}, static_cast<double>(reload_failure_.load(std::memory_order_relaxed)));
  (void)audit_failures_total_->set_total({}, static_cast<double>(audit_failures_.load(std::memory_order_relaxed)));
  (void)reload_time_->set({}, policies_at_.load(std::memory_order_relaxed));
  (void)open_connections_->set({}, static_cast<double>(stats.open_connections));
  (void)accepted_->set_total({}, static_cast<double>(stats.accepted));
  (void)dropped_->set_total({}, static_cast<double>(stats.dropped));
  return metrics::write_text(*registry_);
}

}  // namespace gpubank::api
