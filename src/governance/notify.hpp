// Where the scanner's notices go: a real Alertmanager (its v2 API) and/or a generic webhook.
// A notice is a transition that asks for one (alerts.hpp); it is recorded only after every
// configured notifier took it, so a failed delivery is retried at the next scan.
//
// Alertmanager: POST <url>/api/v2/alerts with one alert per notice, labels
//   alertname="GPULowUtilization", notify=<audience>, lowutil_policy, workload_uid,
//   business_group, owner_id, namespace, workload_kind, workload, pool, gpu_model, severity
// (by audience) and the state and evidence as annotations. Alertmanager deduplicates by labels, so posting an open alert
// again (keep_alive, at every scan, with endsAt = now + ttl) keeps it firing without a
// second notification, and a resolved one is posted with endsAt = now. Each audience told
// (the owner, then the escalation's) has its own alert, kept until the alert resolves. Its routes decide
// which receiver an audience reaches (match on `notify`).
// Webhook: POST <url> with the notice as JSON ({"action", "audience", "alert", ...}).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "governance/alerts.hpp"

namespace gpubank::governance {

struct NoticeContext {
  std::string portal_url;  // links to <portal>/workloads/<uid>; empty: no link
  std::chrono::milliseconds alert_ttl{std::chrono::hours(1)};  // how long Alertmanager keeps an alert without a re-post
};

// What a notice says (the webhook's body; Alertmanager's annotations carry the same).
[[nodiscard]] nlohmann::ordered_json notice_json(const Transition& t, const NoticeContext& context);

class Notifier {
 public:
  virtual ~Notifier() = default;
  // Delivers the notices (transitions with a notice); true once the receiver took them all.
  virtual Expected<bool> deliver(std::span<const Transition> notices, std::int64_t now_ms) = 0;
  // Re-posts the open alerts and the resolutions of this scan (Alertmanager only; a webhook
  // hears of a resolution as a notice-less transition: it is sent too).
  virtual Expected<bool> keep_alive(std::span<const Alert> open, std::span<const Transition> resolved,
                                    std::int64_t now_ms) = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
};

[[nodiscard]] Expected<std::unique_ptr<Notifier>> alertmanager_notifier(const std::string& url,
                                                                        std::chrono::milliseconds timeout,
                                                                        NoticeContext context);
[[nodiscard]] Expected<std::unique_ptr<Notifier>> webhook_notifier(const std::string& url,
                                                                   std::chrono::milliseconds timeout,
                                                                   NoticeContext context);

// The Alertmanager v2 alert of an alert for one audience as of `now_ms` (resolved: endsAt
// = its resolution). Severity follows the audience (owner info, business-group-admin
// warning, platform-admin critical): labels never change during an alert's life.
[[nodiscard]] nlohmann::ordered_json alertmanager_alert(const Alert& alert, Audience audience, std::int64_t now_ms,
                                                        const NoticeContext& context);
// The audiences told of an alert so far: the owner once notified, and the last audience.
[[nodiscard]] std::vector<Audience> audiences_told(const Alert& alert);

}  // namespace gpubank::governance
