// gpubank serving recommend: the inference autoscaler of one InferenceScalingPolicy run
// against live signals, printing what it would set (a recommender: it changes nothing).
//
//   gpubank serving recommend --policies DIR --policy NAME --replicas N
//       (--prometheus URL [--selector MATCHERS] [--replica-label pod] | --scrape URL ...)
//       [--every 15s [--syncs N]] [-o text|json|yaml]
//
// With --prometheus it runs the queries the rendered KEDA ScaledObject runs (selector: the
// rendered pods' namespace and name pattern unless given); with --scrape it reads vLLM's
// /metrics pages itself. When the signals cannot be read (Prometheus down, a timeout,
// samples older than --max-age) the sync holds and says why (docs/serving.md, "Live
// signals"). With each count it prints the controller.kubernetes.io/pod-deletion-cost each
// replica should carry (its requests in flight). Exit codes: 0 the last sync read its signals, 1 it could not (held) or the
// policies are invalid, 2 usage.
#include <CLI/CLI.hpp>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>

#include "autoscale/live_autoscaler.hpp"
#include "autoscale/prometheus_signals.hpp"
#include "autoscale/vllm_scrape.hpp"
#include "cli/command.hpp"
#include "cli/signals.hpp"
#include "core/duration.hpp"
#include "core/escape.hpp"
#include "governance/prometheus_client.hpp"

namespace gpubank::cli {
namespace {

struct RecommendOptions {
  std::vector<std::string> policies;
  std::string policy;
  int replicas = -1;
  int ready = -1;
  std::string prometheus;
  std::vector<std::string> scrape;
  std::optional<std::string> selector;
  std::optional<std::string> replica_label;
  std::string model_name;
  std::string bearer_token_file;
  std::string every;
  int syncs = 0;
  std::string max_age = "90s";
  std::string timeout = "5s";
  std::string rate_window = "2m";
  Format format = Format::Text;
};

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string number(const std::optional<double>& v) {
  if (!v) return "-";
  std::ostringstream s;
  s << *v;
  return s.str();
}

void print_text(std::ostream& out, const std::string& policy, const autoscale::LiveStep& step) {
  const auto& r = step.recommendation;
  out << format_rfc3339(Timestamp(std::chrono::milliseconds(step.t_ms))) << "  " << escape_text(policy) << "  "
      << step.current << " -> " << r.desired << (step.held ? "  HELD" : "") << '\n';
  if (step.reading) {
    const auto& o = step.reading->observation;
    out << "  signals: " << o.replicas_reporting << " replicas reporting, queue " << number(o.queue_depth) << ", running "
        << number(o.running) << ", kv " << number(o.kv_cache_usage) << ", ttft p95 "
        << (o.ttft_idle ? std::string("idle") : number(o.ttft_p95_s)) << " s, finished " << number(o.request_rate) << "/s\n";
    for (const auto& u : step.reading->unread) out << "  unread: " << escape_text(u) << '\n';
    const auto costs = autoscale::deletion_costs(step.reading->loads);
    if (!costs.empty()) {
      out << "  pod-deletion-cost (lowest removed first):";
      for (const auto& c : costs) out << ' ' << escape_text(c.replica) << '=' << c.cost;
      out << '\n';
    }
  }
  out << "  " << escape_text(r.reason) << '\n';
}

Expected<std::chrono::milliseconds> positive(const std::string& text, const char* flag) {
  auto d = Duration::parse(text);
  if (!d) return Unexpected{std::string(flag) + ": " + d.error()};
  if (d->milliseconds() <= 0) return Unexpected{std::string(flag) + ": must be positive"};
  return std::chrono::milliseconds(d->milliseconds());
}

int run_recommend(const RecommendOptions& opt) {
  const char* me = "gpubank serving recommend";
  auto usage = [&](const std::string& why) {
    std::cerr << me << ": " << why << "\nRun with --help for more information.\n";
    return 2;
  };
  if (opt.policies.empty()) return usage("--policies is required");
  if (opt.replicas < 0) return usage("--replicas is required (the replicas the workload has now)");
  if (opt.ready > opt.replicas) return usage("--ready must not exceed --replicas");
  if (opt.prometheus.empty() == opt.scrape.empty()) {
    return usage(opt.prometheus.empty() ? "give --prometheus URL or --scrape URL" : "--prometheus and --scrape exclude each other");
  }
  if (!opt.scrape.empty() && opt.selector) return usage("--selector applies to --prometheus only");
  if (!opt.prometheus.empty() && (!opt.model_name.empty() || !opt.bearer_token_file.empty())) {
    return usage("--model-name and --bearer-token-file apply to --scrape only");
  }
  if (opt.syncs > 0 && opt.every.empty()) return usage("--syncs needs --every");
  auto max_age = positive(opt.max_age, "--max-age");
  auto timeout = positive(opt.timeout, "--timeout");
  auto window = positive(opt.rate_window, "--rate-window");
  for (const auto* e : {&max_age, &timeout, &window}) {
    if (!*e) return usage(e->error());
  }
  std::optional<std::chrono::milliseconds> every;
  if (!opt.every.empty()) {
    auto parsed = positive(opt.every, "--every");
    if (!parsed) return usage(parsed.error());
    every = *parsed;
  }

  auto set = load_valid_policies(opt.policies, me);
  if (!set) return 1;
  std::vector<const policy::PolicyObject*> inference;
  for (const auto& p : set->policies()) {
    if (p.kind == policy::Kind::InferenceScalingPolicy) inference.push_back(&p);
  }
  const policy::PolicyObject* chosen = nullptr;
  for (const auto* p : inference) {
    if (p->name() == opt.policy || (opt.policy.empty() && inference.size() == 1)) chosen = p;
  }
  if (chosen == nullptr) {
    std::string names;
    for (const auto* p : inference) names += (names.empty() ? "" : ", ") + p->name();
    if (inference.empty()) return std::cerr << me << ": the policies hold no InferenceScalingPolicy\n", 1;
    return usage(opt.policy.empty() ? "--policy is required: the policies hold " + names
                                    : "--policy " + escape_text(opt.policy) + ": no such InferenceScalingPolicy (there are " +
                                          names + ")");
  }
  const auto& spec = chosen->as<policy::InferenceScalingPolicySpec>();

  std::function<Expected<autoscale::SignalReading>(std::int64_t)> read;
  std::unique_ptr<governance::PrometheusClient> prometheus;
  std::unique_ptr<autoscale::VllmScraper> scraper;
  if (!opt.prometheus.empty()) {
    autoscale::SignalSelector selector;
    if (opt.selector) {
      selector.matchers = *opt.selector;
    } else {
      auto rendered = autoscale::rendered_selector(spec);
      if (!rendered) return usage(rendered.error());
      selector = *rendered;
    }
    if (opt.replica_label) selector.replica_label = *opt.replica_label;
    auto client = governance::PrometheusClient::create(opt.prometheus, *timeout);
    if (!client) return usage(client.error());
    prometheus = std::move(*client);
    const auto queries = autoscale::signal_queries(spec, selector, Duration(*window));
    read = [&, queries](std::int64_t now) -> Expected<autoscale::SignalReading> {
      auto seen = autoscale::read_prometheus_signals(
          queries, [&](const std::string& q, std::int64_t t) { return prometheus->query(q, t); }, now, *max_age);
      if (!seen) return Unexpected{seen.error()};
      autoscale::SignalReading reading{*seen, {}, {}};
      // The costs are advice beside the count: without them the sync still stands.
      auto loads = autoscale::read_prometheus_loads(
          queries, [&](const std::string& q, std::int64_t t) { return prometheus->query(q, t); }, now);
      if (loads) {
        reading.loads = std::move(*loads);
      } else {
        std::cerr << "gpubank serving recommend: no pod-deletion-cost: " << escape_text(loads.error()) << '\n';
      }
      return reading;
    };
  } else {
    autoscale::ScrapeClientOptions options;
    options.timeout = *timeout;
    options.rate_window_ms = window->count();
    options.page.model_name = opt.model_name;
    options.page.replica_label = opt.replica_label.value_or("");
    options.page.itl = false;
    if (!opt.bearer_token_file.empty()) {
      std::ifstream in(opt.bearer_token_file);
      if (!in) return std::cerr << me << ": --bearer-token-file: cannot read " << escape_text(opt.bearer_token_file) << '\n', 1;
      std::getline(in, options.bearer_token);
      if (options.bearer_token.empty()) return std::cerr << me << ": --bearer-token-file: the file is empty\n", 1;
    }
    auto created = autoscale::VllmScraper::create(opt.scrape, options);
    if (!created) return usage(created.error());
    scraper = std::move(*created);
    read = [&](std::int64_t now) { return scraper->read(now); };
  }

  autoscale::LiveAutoscaler autoscaler(spec);
  const std::optional<int> ready = opt.ready >= 0 ? std::optional<int>(opt.ready) : std::nullopt;
  bool last_read = false;
  std::int64_t last_t = 0;
  auto sync = [&] {
    const std::int64_t now = std::max(wall_ms(), last_t + 1);  // strictly later, for the scrape window
    last_t = now;
    const auto step = autoscaler.step(read(now), now, opt.replicas, ready);
    last_read = step.signals_error.empty();
    if (!last_read) std::cerr << me << ": " << escape_text(step.signals_error) << '\n';
    if (opt.format == Format::Text) {
      print_text(std::cout, chosen->name(), step);
    } else if (opt.format == Format::Json) {
      std::cout << autoscale::to_json(step).dump() << '\n';  // one line per sync (JSON Lines)
    } else {
      if (every) std::cout << "---\n";
      print_structured(std::cout, autoscale::to_json(step), opt.format);
    }
    std::cout.flush();
  };
  if (!every) {
    sync();
    return last_read ? 0 : 1;
  }
  StopOnSignal signals;
  const Expected<bool> ran = signals.run([&](std::stop_token stop) -> Expected<bool> {
    std::mutex m;
    std::condition_variable_any wake;
    for (int n = 0; !stop.stop_requested() && (opt.syncs == 0 || n < opt.syncs); ++n) {
      if (n > 0) {
        std::unique_lock lock(m);
        wake.wait_for(lock, stop, *every, [] { return false; });
        if (stop.stop_requested()) break;
      }
      sync();
    }
    return true;
  });
  if (!ran) return std::cerr << me << ": " << ran.error() << '\n', 1;
  return last_read ? 0 : 1;
}

}  // namespace

Command add_serving_command(CLI::App& app) {
  CLI::App* group = app.add_subcommand("serving", "Inference serving against a live cluster's signals");
  group->require_subcommand(1);
  auto opt = std::make_shared<RecommendOptions>();
  CLI::App* cmd = group->add_subcommand(
      "recommend",
      "Run an InferenceScalingPolicy's autoscaler on live signals (Prometheus or vLLM /metrics) and print the replica count "
      "it would set; holds, and exits 1, when the signals cannot be read");
  cmd->add_option("--policies", opt->policies, "Policy files or directories")->required();
  cmd->add_option("--policy", opt->policy, "The InferenceScalingPolicy (optional when there is one)");
  cmd->add_option("--replicas", opt->replicas, "Replicas the workload has now (ready or loading)")->required()->check(CLI::Range(0, 100000));
  cmd->add_option("--ready", opt->ready, "Of them, replicas serving now (default: all)")->check(CLI::Range(0, 100000));
  cmd->add_option("--prometheus", opt->prometheus, "Prometheus base URL: run the rendered KEDA queries there");
  cmd->add_option("--selector", opt->selector,
                  "PromQL label matchers of the service's pods (default: the rendered ScaledObject's namespace and pod "
                  "pattern)");
  cmd->add_option("--replica-label", opt->replica_label,
                  "Label naming a replica (default: pod with --prometheus; none with --scrape, one replica per page)");
  cmd->add_option("--scrape", opt->scrape, "vLLM /metrics URL to read directly (repeatable: one per replica)");
  cmd->add_option("--model-name", opt->model_name, "With --scrape: only series of this model_name");
  cmd->add_option("--bearer-token-file", opt->bearer_token_file, "With --scrape: a file whose first line is the bearer token");
  cmd->add_option("--every", opt->every, "Sync at this period until SIGINT/SIGTERM (e.g. 15s); default: once");
  cmd->add_option("--syncs", opt->syncs, "With --every: stop after this many syncs")->check(CLI::Range(1, 1000000));
  cmd->add_option("--max-age", opt->max_age, "Hold when a pod's latest Prometheus sample is older than this")
      ->capture_default_str();
  cmd->add_option("--timeout", opt->timeout, "Timeout of each request, whole answer included")->capture_default_str();
  cmd->add_option("--rate-window", opt->rate_window, "Window of the rates (TTFT p95, finished requests)")->capture_default_str();
  add_output_option(*cmd, opt->format);
  return {group, [opt, cmd] { return cmd->parsed() ? run_recommend(*opt) : 2; }};
}

}  // namespace gpubank::cli
