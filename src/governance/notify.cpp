#include "governance/notify.hpp"

#include <httplib.h>

#include <chrono>
#include <cstdio>

#include "core/timestamp.hpp"
#include "governance/http_error.hpp"

namespace gpubank::governance {
namespace {

using Json = nlohmann::ordered_json;

std::string rfc3339(std::int64_t ms) { return format_rfc3339(Timestamp(std::chrono::milliseconds(ms))); }

std::string hours(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600.0);
  return buf;
}
std::string percent(const std::optional<double>& v) {
  if (!v) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", *v);
  return buf;
}

std::string suggested_action(const Evidence& e) {
  if (e.workload_type == "notebook") return "Stop the notebook server, or release its GPUs while you are away.";
  if (e.workload_type == "inference") return "Lower the service's minReplicas or scale it to zero outside its traffic.";
  if (e.training_steps && *e.training_steps < 1) {
    return "The job made no training step in the window: look for a hang (a collective waiting on a lost rank, a "
           "deadlocked data loader); restart it from its last checkpoint or stop it to release the GPUs.";
  }
  if (e.workload_type == "training") {
    return "Check the data pipeline and the job's progress; if it is stuck, checkpoint and stop it to release the GPUs.";
  }
  return "Finish or stop the workload to release its GPUs.";
}

std::string portal_link(const NoticeContext& c, const Alert& a) {
  return c.portal_url.empty() ? std::string() : c.portal_url + "/workloads/" + a.workload_uid;
}

// Labels must not change during an alert's life (Alertmanager would see another alert), so
// severity follows the audience, and the state is an annotation.
std::string severity_of(Audience a) {
  return a == Audience::PlatformAdmin ? "critical" : a == Audience::GroupAdmin ? "warning" : "info";
}

constexpr const char* kExceptionPath =
    "Annotate its pods with platform.gpubank.dev/keep-running-until=<RFC 3339 time> to keep them running until "
    "then, or ask your business group's administrators to add an exclusion to the LowUtilizationPolicy.";

std::string summary_of(const Alert& a) {
  const Evidence& e = a.evidence;
  char gpus[32];
  std::snprintf(gpus, sizeof gpus, "%g", e.gpus);
  return e.workload_kind + " " + e.namespace_name + "/" + e.workload + " of " + e.owner_id + " (" + e.business_group +
         ") holds " + gpus + " " + e.gpu_model + " GPUs at " + percent(e.gpu_utilization) + " GPU and " +
         percent(e.memory_utilization) + " memory utilisation, low for " + hours(e.low_seconds);
}

Expected<bool> post_json(httplib::Client& client, const std::string& url, const std::string& path, const Json& body) {
  auto res = client.Post(path.empty() ? "/" : path, body.dump(), "application/json");
  if (!res) return Unexpected{url + ": " + describe(res.error())};
  if (res->status < 200 || res->status >= 300) {
    return Unexpected{url + ": HTTP " + std::to_string(res->status) + " " + res->body.substr(0, 500)};
  }
  return true;
}

class AlertmanagerNotifier final : public Notifier {
 public:
  AlertmanagerNotifier(std::string url, HttpEndpoint e, std::chrono::milliseconds timeout, NoticeContext context)
      : url_(std::move(url)), path_(e.path + "/api/v2/alerts"), client_(e.base), context_(std::move(context)) {
    configure_client(client_, timeout);
  }
  Expected<bool> deliver(std::span<const Transition> notices, std::int64_t now_ms) override {
    Json alerts = Json::array();
    for (const Transition& t : notices) {
      alerts.push_back(alertmanager_alert(t.alert, t.notice.value_or(Audience::Owner), now_ms, context_));
    }
    if (alerts.empty()) return true;
    return post_json(client_, url_, path_, alerts);
  }
  Expected<bool> keep_alive(std::span<const Alert> open, std::span<const Transition> resolved,
                            std::int64_t now_ms) override {
    Json alerts = Json::array();
    for (const Alert& a : open) {  // an alert nobody was told of yet is not posted
      for (Audience who : audiences_told(a)) alerts.push_back(alertmanager_alert(a, who, now_ms, context_));
    }
    for (const Transition& t : resolved) {
      for (Audience who : audiences_told(t.alert)) alerts.push_back(alertmanager_alert(t.alert, who, now_ms, context_));
    }
    if (alerts.empty()) return true;
    return post_json(client_, url_, path_, alerts);
  }
  [[nodiscard]] std::string describe() const override { return "alertmanager " + url_; }

 private:
  std::string url_;
  std::string path_;
  httplib::Client client_;
  NoticeContext context_;
};

class WebhookNotifier final : public Notifier {
 public:
  WebhookNotifier(std::string url, HttpEndpoint e, std::chrono::milliseconds timeout, NoticeContext context)
      : url_(std::move(url)), path_(e.path), client_(e.base), context_(std::move(context)) {
    configure_client(client_, timeout);
  }
  Expected<bool> deliver(std::span<const Transition> notices, std::int64_t) override {
    for (const Transition& t : notices) {
      if (auto sent = post_json(client_, url_, path_, notice_json(t, context_)); !sent) return sent;
    }
    return true;
  }
  Expected<bool> keep_alive(std::span<const Alert>, std::span<const Transition> resolved, std::int64_t) override {
    for (const Transition& t : resolved) {
      if (!t.alert.last_audience) continue;  // nobody was told of it
      if (auto sent = post_json(client_, url_, path_, notice_json(t, context_)); !sent) return sent;
    }
    return true;
  }
  [[nodiscard]] std::string describe() const override { return "webhook " + url_; }

 private:
  std::string url_;
  std::string path_;
  httplib::Client client_;
  NoticeContext context_;
};

}  // namespace

Json notice_json(const Transition& t, const NoticeContext& context) {
  const Alert& a = t.alert;
  Json j{{"action", t.action},
         {"state", std::string(to_string(a.state))},
         {"audience", t.notice ? std::string(to_string(*t.notice))
                               : std::string(to_string(a.last_audience.value_or(Audience::Owner)))},
         {"summary", summary_of(a)},
         {"suggestedAction", suggested_action(a.evidence)},
         {"exceptionRequest", kExceptionPath}};
  if (const std::string link = portal_link(context, a); !link.empty()) j["portalUrl"] = link;
  j["alert"] = to_json(a);
  return j;
}

std::vector<Audience> audiences_told(const Alert& a) {
  std::vector<Audience> out;
  if (a.notified_ms) out.push_back(Audience::Owner);
  if (a.last_audience && *a.last_audience != Audience::Owner) out.push_back(*a.last_audience);
  return out;
}

Json alertmanager_alert(const Alert& a, Audience audience, std::int64_t now_ms, const NoticeContext& context) {
  const Evidence& e = a.evidence;
  Json labels{{"alertname", "GPULowUtilization"},
              {"notify", std::string(to_string(audience))},
              {"severity", severity_of(audience)},
              {"lowutil_policy", a.policy},
              {"workload_uid", a.workload_uid}};
  for (const auto& [name, value] : {std::pair{"business_group", &e.business_group}, std::pair{"owner_id", &e.owner_id},
                                    std::pair{"namespace", &e.namespace_name}, std::pair{"workload_kind", &e.workload_kind},
                                    std::pair{"workload", &e.workload}, std::pair{"pool", &e.pool},
                                    std::pair{"gpu_model", &e.gpu_model}}) {
    if (!value->empty()) labels[name] = *value;
  }
  Json annotations{{"summary", summary_of(a)},
                   {"state", std::string(to_string(a.state))},
                   {"evidence", e.reason},
                   {"suggested_action", suggested_action(e)},
                   {"exception_request", kExceptionPath}};
  const std::string link = portal_link(context, a);
  if (!link.empty()) annotations["portal_url"] = link;
  const bool resolved = a.state == AlertState::Resolved;
  Json alert{{"labels", labels},
             {"annotations", annotations},
             {"startsAt", rfc3339(a.detected_ms)},
             {"endsAt", rfc3339(resolved ? a.resolved_ms.value_or(now_ms) : now_ms + context.alert_ttl.count())}};
  if (!link.empty()) alert["generatorURL"] = link;
  return alert;
}

Expected<std::unique_ptr<Notifier>> alertmanager_notifier(const std::string& url, std::chrono::milliseconds timeout,
                                                          NoticeContext context) {
  auto e = split_http_url(url, "--alertmanager");
  if (!e) return Unexpected{e.error()};
  return std::unique_ptr<Notifier>(new AlertmanagerNotifier(url, *e, timeout, std::move(context)));
}

Expected<std::unique_ptr<Notifier>> webhook_notifier(const std::string& url, std::chrono::milliseconds timeout,
                                                     NoticeContext context) {
  auto e = split_http_url(url, "--webhook");
  if (!e) return Unexpected{e.error()};
  return std::unique_ptr<Notifier>(new WebhookNotifier(url, *e, timeout, std::move(context)));
}

}  // namespace gpubank::governance
