// gpubank scan: the low-utilisation scanner (src/governance/scanner.hpp). Once by default;
// with --every a service that scans at that interval until SIGINT/SIGTERM.
//
//   gpubank scan --prometheus URL --policies DIR [--store LOCATION | --data-dir DIR]
//                [--alertmanager URL] [--webhook URL] [--portal-url URL] [--allow-owner ID ...]
//                [--at TIME] [--every 15m] [--timeout 30s] [--verbose] [-o text|json|yaml]
//
// Exit codes: 0 the scan ran (whatever it found), 1 it failed (Prometheus, the store, the
// policies) or a notice could not be delivered (it is retried at the next scan), 2 usage.
//
//   gpubank scan alerts [--store LOCATION | --data-dir DIR] [-o text|json|yaml]
//   gpubank scan approve|reject WORKLOAD_UID --policies DIR --user NAME [--group G ...]
//                [--reason TEXT] [--store LOCATION | --data-dir DIR] [-o text|json|yaml]
//   gpubank scan approve WORKLOAD_UID --downgrade-to CLASS ...   a downgrade, not a reclaim
//
// list the open alerts, and record a person's decision on a ReclaimCandidate
// (governance/reclaim_approval.hpp; `gpubank controller` carries out approved ones). Exit
// 1 when the decision is refused (the message names the rule).
#include <CLI/CLI.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>

#include "cli/command.hpp"
#include "cli/signals.hpp"
#include "core/duration.hpp"
#include "core/escape.hpp"
#include "core/timestamp.hpp"
#include "governance/notify.hpp"
#include "governance/reclaim_approval.hpp"
#include "governance/scanner.hpp"
#include "store/store.hpp"

namespace gpubank::cli {
namespace {

struct ScanOptions {
  std::string prometheus;
  std::vector<std::string> policies;
  std::string store;
  std::string data_dir;
  std::string alertmanager;
  std::string webhook;
  std::string portal_url;
  std::vector<std::string> allow_owners;
  std::string at;
  std::string every;
  std::string timeout = "30s";
  std::string alert_ttl = "1h";
  bool verbose = false;
  Format format = Format::Text;
};

// $GPUBANK_DATA_DIR, else $XDG_DATA_HOME/gpubank, else ~/.local/share/gpubank.
std::string default_data_dir() {
  if (const char* d = std::getenv("GPUBANK_DATA_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x != nullptr && *x != '\0') return std::string(x) + "/gpubank";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return std::string(h) + "/.local/share/gpubank";
  return ".";
}

void print_text(std::ostream& out, const governance::ScanReport& r, bool verbose) {
  out << "scanned " << r.workloads << " workloads with " << r.queries.size() << " queries at "
      << format_rfc3339(Timestamp(std::chrono::milliseconds(r.at_ms))) << "; " << r.open_alerts << " open alerts\n";
  std::map<std::string, const governance::Transition*> last;
  for (const governance::Transition& t : r.recorded) last[t.alert.workload_uid] = &t;
  for (const auto& [uid, t] : last) {
    const governance::Alert& a = t->alert;
    out << "  " << governance::to_string(a.state) << "  " << escape_text(a.evidence.business_group) << "/"
        << escape_text(a.evidence.owner_id) << "  " << escape_text(a.evidence.workload_kind) << " "
        << escape_text(a.evidence.namespace_name) << "/" << escape_text(a.evidence.workload) << "  "
        << escape_text(a.state == governance::AlertState::Resolved ? a.resolution : a.evidence.reason) << '\n';
  }
  for (const auto& [reason, n] : r.excluded) out << "  excluded (" << reason << "): " << n << '\n';
  for (const std::string& w : r.warnings) out << "  warning: " << escape_text(w) << '\n';
  for (const std::string& e : r.delivery_errors) out << "  delivery failed: " << escape_text(e) << '\n';
  if (!r.undelivered.empty()) out << "  " << r.undelivered.size() << " notices to retry at the next scan\n";
  if (verbose) {
    for (const governance::Observed& o : r.observed) {
      out << "  " << governance::to_string(o.verdict.kind) << "  " << escape_text(o.facts.workload_uid) << "  "
          << escape_text(o.verdict.reason) << '\n';
    }
  }
}

// The store: --store, else governance.db under --data-dir (created), else under the default.
Expected<std::string> store_location(const std::string& store, const std::string& data_dir) {
  if (!store.empty()) return store;
  const std::string dir = data_dir.empty() ? default_data_dir() : data_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Unexpected{"--data-dir: cannot create " + dir + ": " + ec.message()};
  return (std::filesystem::path(dir) / "governance.db").string();
}

struct DecisionOptions {
  std::string workload_uid;
  std::vector<std::string> policies;
  std::string store;
  std::string data_dir;
  std::string user;
  std::vector<std::string> groups;
  std::string reason;
  std::string downgrade_to;
  Format format = Format::Text;
};

// The store the options name, opened, and its alert record folded.
struct OpenRecord {
  std::unique_ptr<store::Store> store;
  governance::AlertBook book;
};
Expected<OpenRecord> open_record(const DecisionOptions& opt) {
  auto location = store_location(opt.store, opt.data_dir);
  if (!location) return Unexpected{location.error()};
  auto store = store::Store::open(*location);
  if (!store) return Unexpected{"--store: " + store.error()};
  OpenRecord r{std::move(*store), {}};
  if (auto read = governance::refresh(*r.store, r.book); !read) return Unexpected{read.error()};
  return r;
}

int run_alerts(const DecisionOptions& opt) {
  const char* me = "gpubank scan alerts";
  auto record = open_record(opt);
  if (!record) return std::cerr << me << ": " << record.error() << '\n', 1;
  const governance::AlertBook& book = record->book;
  if (opt.format != Format::Text) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& [uid, a] : book.open) out.push_back(governance::to_json(a));
    print_structured(std::cout, out, opt.format);
    return 0;
  }
  std::cout << book.open.size() << " open alerts\n";
  for (const auto& [uid, a] : book.open) {
    const governance::Evidence& e = a.evidence;
    std::cout << "  " << governance::to_string(a.state) << "  " << escape_text(uid) << "  " << escape_text(e.business_group)
              << "/" << escape_text(e.owner_id) << "  " << escape_text(e.workload_kind) << " "
              << escape_text(e.namespace_name) << "/" << escape_text(e.workload) << "  " << e.gpus << " GPUs";
    if (a.decision) {
      std::cout << "  " << (!a.decision->approved              ? std::string("rejected")
                            : a.decision->downgrade_to.empty() ? std::string("reclaim approved")
                                                               : "downgrade to " + escape_text(a.decision->downgrade_to) +
                                                                     " approved")
                << " by " << escape_text(a.decision->by);
    }
    std::cout << '\n';
  }
  return 0;
}

int run_decision(const DecisionOptions& opt, bool approve) {
  const std::string me = std::string("gpubank scan ") + (approve ? "approve" : "reject");
  auto set = load_valid_policies(opt.policies, me);
  if (!set) return 1;
  auto record = open_record(opt);
  if (!record) return std::cerr << me << ": " << record.error() << '\n', 1;
  governance::AlertBook& book = record->book;
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  governance::DecisionRequest request{opt.workload_uid, approve, {opt.user, opt.groups}, opt.reason, opt.downgrade_to};
  auto transition = governance::decide(book, request, *set, now);
  if (!transition) return std::cerr << me << ": " << escape_text(transition.error()) << '\n', 1;
  // Two people deciding at once both append; the fold keeps the first decision, so read
  // back whose it is.
  if (auto recorded = governance::record(*record->store, book, std::span(&*transition, 1), now); !recorded) {
    return std::cerr << me << ": " << recorded.error() << '\n', 1;
  }
  const auto it = book.open.find(opt.workload_uid);
  const bool took = it != book.open.end() && it->second.decision && it->second.decision->by == opt.user &&
                    it->second.decision->at_ms == now;
  if (!took) {
    return std::cerr << me << ": another decision on " << escape_text(opt.workload_uid) << " was recorded first\n", 1;
  }
  if (opt.format != Format::Text) {
    print_structured(std::cout, governance::to_json(it->second), opt.format);
  } else {
    const bool downgrade = !opt.downgrade_to.empty();
    std::cout << (approve ? "approved" : "rejected") << (downgrade ? " the downgrade of " : " the reclaim of ")
              << escape_text(it->second.evidence.workload_kind) << " " << escape_text(it->second.evidence.namespace_name)
              << "/" << escape_text(it->second.evidence.workload) << " (" << it->second.evidence.gpus << " GPUs, alert "
              << it->second.id << ")"
              << (!approve   ? std::string()
                  : downgrade ? "; gpubank controller moves it to priority class " + escape_text(opt.downgrade_to) +
                                    ", where higher-priority work may preempt it"
                              : std::string("; gpubank controller stops it after a checkpoint or its grace period"))
              << '\n';
  }
  return 0;
}

int run_scan(const ScanOptions& opt) {
  const char* me = "gpubank scan";
  if (opt.prometheus.empty() || opt.policies.empty()) {
    std::cerr << me << ": " << (opt.prometheus.empty() ? "--prometheus" : "--policies") << " is required\n"
              << "Run with --help for more information.\n";
    return 2;
  }
  auto timeout = Duration::parse(opt.timeout);
  if (!timeout || timeout->milliseconds() <= 0) {
    std::cerr << me << ": --timeout: " << (timeout ? "must be positive" : timeout.error()) << '\n';
    return 2;
  }
  auto ttl = Duration::parse(opt.alert_ttl);
  if (!ttl || ttl->milliseconds() <= 0) {
    std::cerr << me << ": --alert-ttl: " << (ttl ? "must be positive" : ttl.error()) << '\n';
    return 2;
  }
  std::optional<Duration> every;
  if (!opt.every.empty()) {
    auto parsed = Duration::parse(opt.every);
    if (!parsed || parsed->milliseconds() < 1000) {
      std::cerr << me << ": --every: " << (parsed ? "must be at least 1s" : parsed.error()) << '\n';
      return 2;
    }
    every = *parsed;
  }
  std::optional<std::int64_t> at_ms;
  if (!opt.at.empty()) {
    if (every) return std::cerr << me << ": --at and --every exclude each other\n", 2;
    auto parsed = parse_rfc3339(opt.at);
    if (!parsed) return std::cerr << me << ": --at: " << parsed.error() << '\n', 2;
    at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(parsed->time_since_epoch()).count();
  }
  auto set = load_valid_policies(opt.policies, "gpubank scan");
  if (!set) return 1;
  const std::vector<governance::ScanPolicy> policies = governance::scan_policies(*set);
  if (policies.empty()) std::cerr << me << ": warning: the policies hold no LowUtilizationPolicy; nothing is judged\n";

  const std::chrono::milliseconds limit(timeout->milliseconds());
  auto prometheus = governance::PrometheusClient::create(opt.prometheus, limit);
  if (!prometheus) return std::cerr << me << ": " << prometheus.error() << '\n', 2;

  auto location = store_location(opt.store, opt.data_dir);
  if (!location) return std::cerr << me << ": " << location.error() << '\n', 1;
  auto store = store::Store::open(*location);
  if (!store) return std::cerr << me << ": --store: " << store.error() << '\n', 1;

  governance::NoticeContext context{opt.portal_url, std::chrono::milliseconds(ttl->milliseconds())};
  std::vector<std::unique_ptr<governance::Notifier>> owned;
  for (const auto& [url, make] :
       {std::pair{&opt.alertmanager, &governance::alertmanager_notifier}, std::pair{&opt.webhook, &governance::webhook_notifier}}) {
    if (url->empty()) continue;
    auto n = make(*url, limit, context);
    if (!n) return std::cerr << me << ": " << n.error() << '\n', 2;
    owned.push_back(std::move(*n));
  }
  std::vector<governance::Notifier*> notifiers;
  for (auto& n : owned) notifiers.push_back(n.get());
  governance::AssessOptions assess;
  assess.allowed_owners.insert(opt.allow_owners.begin(), opt.allow_owners.end());
  governance::Scanner scanner(**prometheus, **store, notifiers, assess);

  auto now = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  auto once = [&](std::int64_t when) -> int {
    auto report = scanner.scan(policies, when);
    if (!report) {
      std::cerr << me << ": " << report.error() << '\n';
      return 1;
    }
    if (opt.format == Format::Text) {
      print_text(std::cout, *report, opt.verbose);
    } else {
      print_structured(std::cout, governance::to_json(*report, opt.verbose), opt.format);
    }
    std::cout.flush();
    for (const std::string& e : report->delivery_errors) std::cerr << me << ": delivery failed: " << e << '\n';
    return report->delivery_errors.empty() ? 0 : 1;
  };
  if (!every) return once(at_ms.value_or(now()));

  StopOnSignal signals;
  int last = 0;
  const Expected<bool> ran = signals.run([&](std::stop_token stop) -> Expected<bool> {
    std::mutex m;
    std::condition_variable_any wake;
    while (!stop.stop_requested()) {
      last = once(now());
      std::unique_lock lock(m);
      wake.wait_for(lock, stop, std::chrono::milliseconds(every->milliseconds()), [] { return false; });
    }
    return true;
  });
  if (!ran) return std::cerr << me << ": " << ran.error() << '\n', 1;
  return last;
}

}  // namespace

Command add_scan_command(CLI::App& app) {
  auto opt = std::make_shared<ScanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "scan", "Find workloads that hold GPUs at low utilisation (LowUtilizationPolicy), track their alerts and notify");
  cmd->add_option("--prometheus", opt->prometheus, "Prometheus base URL (http://host:9090); required to scan");
  cmd->add_option("--policies", opt->policies, "Policy files or directories; required to scan");
  cmd->add_option("--store", opt->store, "Where the alert record lives: a SQLite file or a postgresql:// URL");
  cmd->add_option("--data-dir", opt->data_dir,
                  "Directory of the default store (governance.db); default $GPUBANK_DATA_DIR, $XDG_DATA_HOME/gpubank "
                  "or ~/.local/share/gpubank");
  cmd->add_option("--alertmanager", opt->alertmanager, "Alertmanager base URL: notices go to its v2 API");
  cmd->add_option("--webhook", opt->webhook, "A URL that receives every notice as JSON (POST)");
  cmd->add_option("--portal-url", opt->portal_url, "The portal's base URL, for the links in notices");
  cmd->add_option("--allow-owner", opt->allow_owners, "An owner_id never flagged (repeatable)");
  cmd->add_option("--at", opt->at, "Scan as of this RFC 3339 time instead of now (not with --every)");
  cmd->add_option("--every", opt->every, "Run as a service, scanning at this interval (e.g. 15m)");
  cmd->add_option("--timeout", opt->timeout, "Timeout of each request to Prometheus and the notifiers")
      ->capture_default_str();
  cmd->add_option("--alert-ttl", opt->alert_ttl,
                  "How long Alertmanager keeps an open alert firing without the next scan's re-post")
      ->capture_default_str();
  cmd->add_flag("--verbose", opt->verbose, "List every workload's verdict, not only alerts that changed");
  add_output_option(*cmd, opt->format);

  auto decision = std::make_shared<DecisionOptions>();
  enum class Chosen { Scan, Alerts, Approve, Reject };
  auto chosen = std::make_shared<Chosen>(Chosen::Scan);
  auto where = [decision](CLI::App* sub) {
    sub->add_option("--store", decision->store, "The scanner's store: a SQLite file or a postgresql:// URL");
    sub->add_option("--data-dir", decision->data_dir, "Directory of the default store (governance.db)");
    add_output_option(*sub, decision->format);
  };
  CLI::App* alerts = cmd->add_subcommand("alerts", "List the open low-utilisation alerts from the store, with decisions");
  where(alerts);
  alerts->callback([chosen] { *chosen = Chosen::Alerts; });
  for (const bool approve : {true, false}) {
    CLI::App* sub = cmd->add_subcommand(
        approve ? "approve" : "reject",
        approve ? "Approve the reclaim of a ReclaimCandidate: gpubank controller stops it after a checkpoint or its grace"
                : "Reject the reclaim of a ReclaimCandidate: it keeps its GPUs (a decision is final)");
    sub->add_option("workload-uid", decision->workload_uid, "The alert's workload UID (gpubank scan alerts)")->required();
    sub->add_option("--policies", decision->policies, "Policy files or directories (who may decide)")->required();
    sub->add_option("--user", decision->user, "Who decides (the audit entry's actor)")->required();
    sub->add_option("--group", decision->groups, "A group the user belongs to (repeatable; matches group: subjects)");
    sub->add_option("--reason", decision->reason, "Why, for the record (at most 1024 bytes)");
    if (approve) {
      sub->add_option("--downgrade-to", decision->downgrade_to,
                      "Approve a downgrade to this priority class (one of the guardrails' priorities, preemptible) "
                      "instead of a reclaim: the workload keeps running, preemptible by higher-priority work");
    }
    where(sub);
    sub->callback([chosen, approve] { *chosen = approve ? Chosen::Approve : Chosen::Reject; });
  }
  return {cmd, [opt, decision, chosen] {
            switch (*chosen) {
              case Chosen::Alerts: return run_alerts(*decision);
              case Chosen::Approve: return run_decision(*decision, true);
              case Chosen::Reject: return run_decision(*decision, false);
              case Chosen::Scan: break;
            }
            return run_scan(*opt);
          }};
}

}  // namespace gpubank::cli
