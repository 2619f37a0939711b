// gpubank serving recommend: the inference autoscaler of one InferenceScalingPolicy run
// against live signals, printing what it would set (a recommender: it changes nothing).
// gpubank serving autoscale: the same autoscaler acting on the cluster: the workload's
// scale subresource, the tidal floor in force, pod-deletion-cost before a scale-in
// (autoscale/workload_scale.hpp).
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
// replica should carry (its requests in flight). Exit codes: 0 the last sync read its
// signals (autoscale: and wrote what it decided), 1 it could not (held, a refused write, a
// competing autoscaler) or the policies are invalid, 2 usage.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>

#include "autoscale/capacity_server.hpp"
#include "autoscale/live_autoscaler.hpp"
#include "autoscale/prometheus_signals.hpp"
#include "autoscale/vllm_scrape.hpp"
#include "autoscale/workload_scale.hpp"
#include "cli/command.hpp"
#include "cli/signals.hpp"
#include "core/duration.hpp"
#include "core/escape.hpp"
#include "governance/prometheus_client.hpp"
#include "k8s/client_config.hpp"
#include "k8s/informer.hpp"
#include "k8s/leader_election.hpp"
#include "k8s/transport.hpp"

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
  // autoscale only
  std::string kubeconfig;
  std::string context;
  bool dry_run = false;
  std::string listen;
  bool leader_elect = false;
  std::string leader_election_namespace;
  std::string leader_election_id;
};

// Where a sync's signals come from: a Prometheus client or a scraper, and the function
// reading them.
struct SignalSource {
  std::unique_ptr<governance::PrometheusClient> prometheus;
  std::unique_ptr<autoscale::VllmScraper> scraper;
  std::function<Expected<autoscale::SignalReading>(std::int64_t)> read;
};

// The parsed durations shared by both commands.
struct Periods {
  std::chrono::milliseconds max_age{}, timeout{}, window{};
  std::optional<std::chrono::milliseconds> every;
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

// A usage error (exit 2) or the checked periods.
Expected<Periods> check_common(const RecommendOptions& opt) {
  if (opt.policies.empty()) return Unexpected{std::string("--policies is required")};
  if (opt.prometheus.empty() == opt.scrape.empty()) {
    return Unexpected{std::string(opt.prometheus.empty() ? "give --prometheus URL or --scrape URL"
                                                         : "--prometheus and --scrape exclude each other")};
  }
  if (!opt.scrape.empty() && opt.selector) return Unexpected{std::string("--selector applies to --prometheus only")};
  if (!opt.prometheus.empty() && (!opt.model_name.empty() || !opt.bearer_token_file.empty())) {
    return Unexpected{std::string("--model-name and --bearer-token-file apply to --scrape only")};
  }
  if (opt.syncs > 0 && opt.every.empty()) return Unexpected{std::string("--syncs needs --every")};
  Periods out;
  for (auto [text, flag, into] : {std::tuple{&opt.max_age, "--max-age", &out.max_age},
                                  std::tuple{&opt.timeout, "--timeout", &out.timeout},
                                  std::tuple{&opt.rate_window, "--rate-window", &out.window}}) {
    auto d = positive(*text, flag);
    if (!d) return Unexpected{d.error()};
    *into = *d;
  }
  if (!opt.every.empty()) {
    auto parsed = positive(opt.every, "--every");
    if (!parsed) return Unexpected{parsed.error()};
    out.every = *parsed;
  }
  return out;
}

// The InferenceScalingPolicy --policy names (or the only one); nullptr after saying why
// (`code` 1: none in the policies, 2: usage).
const policy::PolicyObject* choose_policy(const policy::PolicySet& set, const std::string& name, const char* me, int& code) {
  std::vector<const policy::PolicyObject*> inference;
  for (const auto& p : set.policies()) {
    if (p.kind == policy::Kind::InferenceScalingPolicy) inference.push_back(&p);
  }
  for (const auto* p : inference) {
    if (p->name() == name || (name.empty() && inference.size() == 1)) return p;
  }
  std::string names;
  for (const auto* p : inference) names += (names.empty() ? "" : ", ") + p->name();
  if (inference.empty()) {
    std::cerr << me << ": the policies hold no InferenceScalingPolicy\n";
    code = 1;
    return nullptr;
  }
  std::cerr << me << ": "
            << (name.empty() ? "--policy is required: the policies hold " + names
                             : "--policy " + escape_text(name) + ": no such InferenceScalingPolicy (there are " + names + ")")
            << "\nRun with --help for more information.\n";
  code = 2;
  return nullptr;
}

// The valid policies and the InferenceScalingPolicy chosen (a pointer into them: policies
// are shared objects, so it stays valid as the set moves); nullopt after saying why, with
// the exit code in `code`.
std::optional<std::pair<policy::PolicySet, const policy::PolicyObject*>> load_and_choose(const RecommendOptions& opt,
                                                                                         const char* me, int& code) {
  auto set = load_valid_policies(opt.policies, me);
  if (!set) {
    code = 1;
    return std::nullopt;
  }
  const policy::PolicyObject* chosen = choose_policy(*set, opt.policy, me, code);
  if (chosen == nullptr) return std::nullopt;
  return std::pair<policy::PolicySet, const policy::PolicyObject*>{std::move(*set), chosen};
}

// The signals' source; an error is a usage error (exit 2) unless it says otherwise through
// `code`.
Expected<std::unique_ptr<SignalSource>> make_source(const RecommendOptions& opt, const policy::InferenceScalingPolicySpec& spec,
                                                    const Periods& periods, const char* me, int& code) {
  auto out = std::make_unique<SignalSource>();
  code = 2;
  if (!opt.prometheus.empty()) {
    autoscale::SignalSelector selector;
    if (opt.selector) {
      selector.matchers = *opt.selector;
    } else {
      auto rendered = autoscale::rendered_selector(spec);
      if (!rendered) return Unexpected{rendered.error()};
      selector = *rendered;
    }
    if (opt.replica_label) selector.replica_label = *opt.replica_label;
    auto client = governance::PrometheusClient::create(opt.prometheus, periods.timeout);
    if (!client) return Unexpected{client.error()};
    out->prometheus = std::move(*client);
    const auto queries = autoscale::signal_queries(spec, selector, Duration(periods.window));
    auto* prometheus = out->prometheus.get();
    const auto max_age = periods.max_age;
    out->read = [prometheus, queries, max_age, me](std::int64_t now) -> Expected<autoscale::SignalReading> {
      const auto query = [&](const std::string& q, std::int64_t t) { return prometheus->query(q, t); };
      auto seen = autoscale::read_prometheus_signals(queries, query, now, max_age);
      if (!seen) return Unexpected{seen.error()};
      autoscale::SignalReading reading{*seen, {}, {}};
      // The costs are advice beside the count: without them the sync still stands.
      auto loads = autoscale::read_prometheus_loads(queries, query, now);
      if (loads) {
        reading.loads = std::move(*loads);
      } else {
        std::cerr << me << ": no pod-deletion-cost: " << escape_text(loads.error()) << '\n';
      }
      return reading;
    };
    return out;
  }
  autoscale::ScrapeClientOptions options;
  options.timeout = periods.timeout;
  options.rate_window_ms = periods.window.count();
  options.page.model_name = opt.model_name;
  options.page.replica_label = opt.replica_label.value_or("");
  options.page.itl = false;
  if (!opt.bearer_token_file.empty()) {
    code = 1;
    std::ifstream in(opt.bearer_token_file);
    if (!in) return Unexpected{"--bearer-token-file: cannot read " + escape_text(opt.bearer_token_file)};
    std::getline(in, options.bearer_token);
    if (options.bearer_token.empty()) return Unexpected{std::string("--bearer-token-file: the file is empty")};
    code = 2;
  }
  auto created = autoscale::VllmScraper::create(opt.scrape, options);
  if (!created) return Unexpected{created.error()};
  out->scraper = std::move(*created);
  auto* scraper = out->scraper.get();
  out->read = [scraper](std::int64_t now) { return scraper->read(now); };
  return out;
}

// Runs `sync` once, or every period until SIGINT/SIGTERM or `syncs` syncs.
Expected<bool> repeat(const Periods& periods, int syncs, const std::function<void()>& sync) {
  if (!periods.every) {
    sync();
    return true;
  }
  StopOnSignal signals;
  return signals.run([&](std::stop_token stop) -> Expected<bool> {
    std::mutex m;
    std::condition_variable_any wake;
    for (int n = 0; !stop.stop_requested() && (syncs == 0 || n < syncs); ++n) {
      if (n > 0) {
        std::unique_lock lock(m);
        wake.wait_for(lock, stop, *periods.every, [] { return false; });
        if (stop.stop_requested()) break;
      }
      sync();
    }
    return true;
  });
}

void print_record(std::ostream& out, const nlohmann::ordered_json& record, Format format, bool repeated) {
  if (format == Format::Json) {
    out << record.dump() << '\n';  // one line per sync (JSON Lines)
  } else {
    if (repeated) out << "---\n";
    print_structured(out, record, format);
  }
  out.flush();
}

int run_recommend(const RecommendOptions& opt) {
  const char* me = "gpubank serving recommend";
  auto usage = [&](const std::string& why) {
    std::cerr << me << ": " << why << "\nRun with --help for more information.\n";
    return 2;
  };
  if (opt.replicas < 0) return usage("--replicas is required (the replicas the workload has now)");
  if (opt.ready > opt.replicas) return usage("--ready must not exceed --replicas");
  auto periods = check_common(opt);
  if (!periods) return usage(periods.error());

  int code = 0;
  auto loaded = load_and_choose(opt, me, code);
  if (!loaded) return code;
  const policy::PolicyObject* chosen = loaded->second;
  const auto& spec = chosen->as<policy::InferenceScalingPolicySpec>();
  auto source = make_source(opt, spec, *periods, me, code);
  if (!source) return code == 2 ? usage(source.error()) : (std::cerr << me << ": " << source.error() << '\n', 1);

  autoscale::LiveAutoscaler autoscaler(spec);
  const std::optional<int> ready = opt.ready >= 0 ? std::optional<int>(opt.ready) : std::nullopt;
  bool last_read = false;
  std::int64_t last_t = 0;
  const auto ran = repeat(*periods, opt.syncs, [&] {
    const std::int64_t now = std::max(wall_ms(), last_t + 1);  // strictly later, for the scrape window
    last_t = now;
    const auto step = autoscaler.step((*source)->read(now), now, opt.replicas, ready);
    last_read = step.signals_error.empty();
    if (!last_read) std::cerr << me << ": " << escape_text(step.signals_error) << '\n';
    if (opt.format == Format::Text) {
      print_text(std::cout, chosen->name(), step);
      std::cout.flush();
    } else {
      print_record(std::cout, autoscale::to_json(step), opt.format, periods->every.has_value());
    }
  });
  if (!ran) return std::cerr << me << ": " << ran.error() << '\n', 1;
  return last_read ? 0 : 1;
}

void print_sync_text(std::ostream& out, const std::string& policy, const autoscale::WorkloadTarget& target,
                     const autoscale::ScaleSync& sync, bool dry_run) {
  if (!sync.error.empty() && sync.step.t_ms == 0) {  // the workload was not read
    out << escape_text(policy) << "  " << escape_text(target.describe()) << "  not read\n  " << escape_text(sync.error) << '\n';
    return;
  }
  print_text(out, policy, sync.step);
  if (sync.tidal) {
    for (const auto& r : sync.tidal->reasons) out << "  " << escape_text(r) << '\n';
    for (const auto& r : sync.tidal->records) out << "  " << r.kind << ": " << escape_text(r.message) << '\n';
  }
  for (const auto& c : sync.costs) {
    out << "  pod-deletion-cost " << escape_text(c.pod.empty() ? c.replica : c.pod) << '=' << c.cost << ": "
        << escape_text(c.outcome) << '\n';
  }
  out << "  " << escape_text(target.describe()) << ": " << sync.step.current << " -> " << sync.target << ", "
      << (sync.target == sync.step.current  ? "unchanged"
          : sync.written                    ? "written"
          : sync.standby && sync.error.empty() ? "not written (standby: another replica leads)"
          : dry_run && sync.error.empty()   ? "not written (--dry-run)"
                                            : "NOT written")
      << " (" << escape_text(sync.decision) << ")\n";
  if (!sync.error.empty()) out << "  error: " << escape_text(sync.error) << '\n';
  if (sync.capacity) {
    const auto& c = *sync.capacity;
    out << "  capacity: " << c.ready << " ready, " << c.loading << " loading, " << c.draining << " draining, " << c.requested
        << " requested; headroom " << (c.headroom_rps ? number(c.headroom_rps) + "/s" : std::string("unknown"))
        << "; scale-out " << (c.scale_out_possible ? "possible" : "blocked (" + c.scale_out_blocked_reason + ")")
        << (c.scale_out_ready_seconds ? ", serving in " + number(c.scale_out_ready_seconds) + " s" : std::string()) << "; "
        << c.borrowable_gpus << " GPUs borrowable\n";
  } else if (!sync.capacity_error.empty()) {
    out << "  capacity: " << escape_text(sync.capacity_error) << '\n';
  }
}

int run_autoscale(const RecommendOptions& opt) {
  const char* me = "gpubank serving autoscale";
  auto usage = [&](const std::string& why) {
    std::cerr << me << ": " << why << "\nRun with --help for more information.\n";
    return 2;
  };
  auto periods = check_common(opt);
  if (!periods) return usage(periods.error());
  if (opt.leader_elect && !periods->every) return usage("--leader-elect needs --every (a replica that syncs once never leads)");
  if (!opt.leader_elect && (!opt.leader_election_namespace.empty() || !opt.leader_election_id.empty())) {
    return usage("--leader-election-namespace and --leader-election-id need --leader-elect");
  }
  int code = 0;
  auto loaded = load_and_choose(opt, me, code);
  if (!loaded) return code;
  policy::PolicySet& set = loaded->first;
  const policy::PolicyObject* chosen = loaded->second;
  const auto& spec = chosen->as<policy::InferenceScalingPolicySpec>();
  auto target = autoscale::workload_target(spec);
  if (!target) return std::cerr << me << ": " << chosen->name() << ": " << target.error() << '\n', 1;
  std::optional<std::pair<std::string, int>> listener;
  if (!opt.listen.empty()) {
    const auto colon = opt.listen.rfind(':');
    const std::string port = colon == std::string::npos ? "" : opt.listen.substr(colon + 1);
    if (colon == 0 || port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit) ||
        std::stoi(port) > 65535) {
      return usage("--listen: \"" + escape_text(opt.listen) + "\" is not ADDR:PORT (a port of 0 to 65535)");
    }
    listener = std::pair{opt.listen.substr(0, colon), std::stoi(port)};
  }
  auto tidal = autoscale::TidalFloors::create(set, chosen->name());
  if (!tidal) return std::cerr << me << ": " << tidal.error() << '\n', 1;
  auto source = make_source(opt, spec, *periods, me, code);
  if (!source) return code == 2 ? usage(source.error()) : (std::cerr << me << ": " << source.error() << '\n', 1);

  k8s::LoadOptions load;
  load.kubeconfig = opt.kubeconfig;
  load.resolve.context = opt.context;
  auto config = k8s::load_client_config(load, k8s::Environment::from_process());
  if (!config) return std::cerr << me << ": " << config.error() << '\n', 1;
  const k8s::ClientConfig informer_config = *config;
  k8s::TransportOptions transport_options;
  transport_options.field_manager = "gpubank-serving-autoscale";
  transport_options.read_timeout = std::max(periods->timeout, std::chrono::milliseconds(10'000));
  transport_options.retry.max_attempts = 3;  // a sync period later, the next sync tries again
  auto limiter = k8s::RateLimiter::create({5, 10});
  if (limiter) transport_options.rate_limiter = *limiter;
  auto transport = k8s::Transport::create(std::move(*config), transport_options);
  if (!transport) return std::cerr << me << ": " << transport.error() << '\n', 1;

  autoscale::ActuatorOptions actuator_options;
  actuator_options.dry_run = opt.dry_run;
  // --listen: the capacity for gateways, from informers on the nodes and pods.
  std::unique_ptr<autoscale::CapacityServer> server;
  std::vector<std::unique_ptr<k8s::Informer>> informers;
  if (listener) {
    for (const char* collection : {"/api/v1/nodes", "/api/v1/pods"}) {
      k8s::InformerOptions informer_options;
      informer_options.transport.rate_limiter = transport_options.rate_limiter;
      auto informer = k8s::Informer::create(informer_config, collection, informer_options);
      if (!informer) return std::cerr << me << ": " << informer.error() << '\n', 1;
      (*informer)->start();
      informers.push_back(std::move(*informer));
    }
    for (const auto& informer : informers) {
      if (auto synced = informer->wait_for_sync(std::chrono::minutes(2)); !synced) {
        return std::cerr << me << ": --listen: " << informer->collection() << ": " << synced.error().describe() << '\n', 1;
      }
    }
    auto started = autoscale::CapacityServer::start(listener->first, listener->second, chosen->name());
    if (!started) return std::cerr << me << ": " << started.error() << '\n', 1;
    server = std::move(*started);
    std::cerr << me << ": serving /api/v1/services/" << chosen->name() << "/capacity and /metrics on " << listener->first
              << ':' << server->port() << '\n';
    actuator_options.policy_name = chosen->name();
    actuator_options.policies = &set;
    actuator_options.cluster_objects = [&informers]() -> Expected<autoscale::ClusterObjects> {
      autoscale::ClusterObjects objects;
      for (std::size_t i = 0; i < informers.size(); ++i) {
        if (!informers[i]->running()) {
          return Unexpected{informers[i]->collection() + ": the informer stopped" +
                            (informers[i]->error() ? ": " + informers[i]->error()->describe() : std::string())};
        }
        auto& into = i == 0 ? objects.nodes : objects.pods;
        for (const auto& [key, object] : informers[i]->snapshot()->objects) into.push_back(*object);
      }
      return objects;
    };
  }
  // --leader-elect: of several replicas of this command, only the Lease's holder syncs.
  // The first sync waits for the election's first outcome (this replica leads, or another
  // holder is seen), so a free Lease is taken before it rather than a period later.
  struct FirstOutcome {
    std::mutex m;
    std::condition_variable cv;
    bool settled = false;
    void settle() {
      std::lock_guard lock(m);
      settled = true;
      cv.notify_all();
    }
    void wait(std::chrono::milliseconds limit) {
      std::unique_lock lock(m);
      cv.wait_for(lock, limit, [this] { return settled; });
    }
  } elected;
  std::unique_ptr<k8s::LeaderElector> elector;
  if (opt.leader_elect) {
    k8s::LeaderElectionOptions election;
    election.namespace_name =
        opt.leader_election_namespace.empty() ? informer_config.namespace_name : opt.leader_election_namespace;
    election.name = opt.leader_election_id.empty() ? "gpubank-serving-" + chosen->name() : opt.leader_election_id;
    election.identity = default_identity();
    k8s::LeaderCallbacks callbacks;
    callbacks.on_started_leading = [me, &elected] {
      std::cerr << me << ": leading\n";
      elected.settle();
    };
    callbacks.on_stopped_leading = [me] { std::cerr << me << ": stopped leading\n"; };
    callbacks.on_new_leader = [&elected](const std::string&) { elected.settle(); };
    auto created = k8s::LeaderElector::create(informer_config, election, callbacks);
    if (!created) return std::cerr << me << ": leader election: " << created.error() << '\n', 1;
    elector = std::move(*created);
    actuator_options.may_write = [&elector] { return elector->is_leader(); };
    actuator_options.reporting_instance = election.identity;
  }
  std::jthread election;
  if (elector) {
    election = std::jthread([&elector](std::stop_token stop) { elector->run(stop); });
    elected.wait(std::chrono::seconds(15));  // a lease duration: a hang guard
  }
  autoscale::ScaleActuator actuator(**transport, *target, spec, std::move(*tidal), actuator_options);
  bool last_ok = false;
  std::int64_t last_t = 0;
  const auto ran = repeat(*periods, opt.syncs, [&] {
    const std::int64_t now = std::max(wall_ms(), last_t + 1);
    last_t = now;
    const auto sync = actuator.sync((*source)->read, now);
    if (server) server->publish(sync, now);
    last_ok = sync.error.empty() && sync.step.signals_error.empty();
    if (!sync.step.signals_error.empty()) std::cerr << me << ": " << escape_text(sync.step.signals_error) << '\n';
    if (!sync.error.empty()) std::cerr << me << ": " << escape_text(sync.error) << '\n';
    if (opt.format == Format::Text) {
      print_sync_text(std::cout, chosen->name(), *target, sync, opt.dry_run);
      std::cout.flush();
    } else {
      print_record(std::cout, autoscale::to_json(sync), opt.format, periods->every.has_value());
    }
  });
  if (election.joinable()) {
    election.request_stop();  // a leader releases its Lease
    election.join();
  }
  if (!ran) return std::cerr << me << ": " << ran.error() << '\n', 1;
  return last_ok ? 0 : 1;
}

}  // namespace

namespace {

// The options both commands share: the policy, the signals, the periods, the output.
void add_signal_options(CLI::App& cmd, RecommendOptions& opt) {
  cmd.add_option("--policies", opt.policies, "Policy files or directories")->required();
  cmd.add_option("--policy", opt.policy, "The InferenceScalingPolicy (optional when there is one)");
  cmd.add_option("--prometheus", opt.prometheus, "Prometheus base URL: run the rendered KEDA queries there");
  cmd.add_option("--selector", opt.selector,
                 "PromQL label matchers of the service's pods (default: the rendered ScaledObject's namespace and pod "
                 "pattern)");
  cmd.add_option("--replica-label", opt.replica_label,
                 "Label naming a replica (default: pod with --prometheus; none with --scrape, one replica per page)");
  cmd.add_option("--scrape", opt.scrape, "vLLM /metrics URL to read directly (repeatable: one per replica)");
  cmd.add_option("--model-name", opt.model_name, "With --scrape: only series of this model_name");
  cmd.add_option("--bearer-token-file", opt.bearer_token_file, "With --scrape: a file whose first line is the bearer token");
  cmd.add_option("--every", opt.every, "Sync at this period until SIGINT/SIGTERM (e.g. 15s); default: once");
  cmd.add_option("--syncs", opt.syncs, "With --every: stop after this many syncs")->check(CLI::Range(1, 1000000));
  cmd.add_option("--max-age", opt.max_age, "Hold when a pod's latest Prometheus sample is older than this")
      ->capture_default_str();
  cmd.add_option("--timeout", opt.timeout, "Timeout of each request, whole answer included")->capture_default_str();
  cmd.add_option("--rate-window", opt.rate_window, "Window of the rates (TTFT p95, finished requests)")->capture_default_str();
  add_output_option(cmd, opt.format);
}

}  // namespace

Command add_serving_command(CLI::App& app) {
  CLI::App* group = app.add_subcommand("serving", "Inference serving against a live cluster's signals");
  group->require_subcommand(1);
  auto recommend_opt = std::make_shared<RecommendOptions>();
  CLI::App* recommend = group->add_subcommand(
      "recommend",
      "Run an InferenceScalingPolicy's autoscaler on live signals (Prometheus or vLLM /metrics) and print the replica count "
      "it would set; holds, and exits 1, when the signals cannot be read");
  add_signal_options(*recommend, *recommend_opt);
  recommend->add_option("--replicas", recommend_opt->replicas, "Replicas the workload has now (ready or loading)")
      ->required()
      ->check(CLI::Range(0, 100000));
  recommend->add_option("--ready", recommend_opt->ready, "Of them, replicas serving now (default: all)")->check(CLI::Range(0, 100000));

  auto autoscale_opt = std::make_shared<RecommendOptions>();
  CLI::App* autoscale = group->add_subcommand(
      "autoscale",
      "Run an InferenceScalingPolicy's autoscaler on live signals and set the workload's replicas through its scale "
      "subresource: max(autoscaler, tidal floor in force), pod-deletion-cost written before a scale-in; refuses while a "
      "HorizontalPodAutoscaler (KEDA's) scales the same workload. Connection: --kubeconfig, else KUBECONFIG, else the "
      "in-cluster service account, else ~/.kube/config");
  add_signal_options(*autoscale, *autoscale_opt);
  autoscale->add_option("--kubeconfig", autoscale_opt->kubeconfig, "kubeconfig file (default: the loading order above)");
  autoscale->add_option("--context", autoscale_opt->context, "kubeconfig context (default: current-context)");
  autoscale->add_flag("--dry-run", autoscale_opt->dry_run, "Read and decide, write nothing");
  autoscale->add_flag("--leader-elect", autoscale_opt->leader_elect,
                      "Run several replicas: only the holder of the Lease (coordination.k8s.io) syncs; the others stand by");
  autoscale->add_option("--leader-election-namespace", autoscale_opt->leader_election_namespace,
                        "namespace of the Lease (default: the kubeconfig's or the service account's)");
  autoscale->add_option("--leader-election-id", autoscale_opt->leader_election_id,
                        "name of the Lease (default: gpubank-serving-<policy>)");
  autoscale->add_option("--listen", autoscale_opt->listen,
                        "ADDR:PORT: serve GET /api/v1/services/<policy>/capacity, /metrics and /healthz (the capacity "
                        "for gateways, from watches on nodes and pods)");
  return {group, [recommend_opt, autoscale_opt, recommend, autoscale] {
            if (recommend->parsed()) return run_recommend(*recommend_opt);
            if (autoscale->parsed()) return run_autoscale(*autoscale_opt);
            return 2;
          }};
}

}  // namespace gpubank::cli
