// gpubank up: the embedded platform on the twin, served on loopback (README's main command).
#include <CLI/CLI.hpp>

#include <csignal>
#include <fcntl.h>
#include <pthread.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "api/desk_reconcile.hpp"
#include "api/platform_server.hpp"
#include "auth/gate.hpp"
#include "cli/command.hpp"
#include "cli/validators.hpp"
#include "cli/proxy_options.hpp"
#include "core/escape.hpp"
#include "core/timestamp.hpp"
#include "policy/validate.hpp"
#include "store/store.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/interventions.hpp"
#include "twin/live/resume.hpp"

namespace gpubank::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

struct UpOptions {
  std::vector<std::string> policies{"examples/policies"};
  std::string inventory = "examples/inventory/example.yaml";
  std::string llm_trace;
  double serving_load = 1.0;
  std::uint64_t seed = 1;
  std::string start = "2026-11-30T16:00:00Z";  // midnight in Asia/Shanghai, a Tuesday
  int hours = 24;
  std::string address = "127.0.0.1";
  int port = 8080;
  std::string speed = "60";
  bool paused = false;
  std::string data_dir;
  bool with_prometheus = false;
  int prometheus_port = 9090;
  bool quiet = false;
  bool exit_when_done = false;
  std::string auth_store;  // default: <data-dir>/auth.db, or a fresh temporary directory's
  std::string token_file;
  std::string operator_name;
  std::string portal_dir;
  ProxyOptions proxy;
};

// A secret to a file only its owner can read; an existing file is replaced, a symbolic
// link is refused (O_NOFOLLOW).
bool write_secret(const fs::path& file, const std::string& secret) {
  std::error_code ec;
  fs::remove(file, ec);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const std::string text = secret + '\n';
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  return ::close(fd) == 0 && ok;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The run a data directory belongs to (written before the store gets its first entry) and
// how far its clock got. The clock is only a hint, saved at most once a second: after a
// SIGKILL it lags the store, and a restart replays to the store's head whatever it says
// (twin/live/resume.hpp).
struct SavedClock {
  std::uint64_t seed = 0;
  std::string start, policy_version;
  int hours = 0;
  std::int64_t virtual_ms = 0;
};

Expected<std::optional<SavedClock>> read_clock(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::optional<SavedClock>{};
  std::ifstream in(file);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Unexpected{file.string() + ": not a JSON object"};
  try {
    SavedClock c;
    c.seed = j.at("seed").get<std::uint64_t>();
    c.start = j.at("start").get<std::string>();
    c.hours = j.at("hours").get<int>();
    c.policy_version = j.at("policyVersion").get<std::string>();
    c.virtual_ms = j.at("virtualTimeMs").get<std::int64_t>();
    if (c.virtual_ms < 0) return Unexpected{file.string() + ": virtualTimeMs: must not be negative"};
    return std::optional<SavedClock>{c};
  } catch (const std::exception& e) {
    return Unexpected{file.string() + ": " + e.what()};
  }
}

// Written to a temporary file, fsync'd, renamed over the old one and the directory
// fsync'd: a crash, even of the machine, leaves one whole file or the other.
bool write_clock(const fs::path& file, const SavedClock& c) {
  Json j = Json::object();
  j["seed"] = c.seed;
  j["start"] = c.start;
  j["hours"] = c.hours;
  j["policyVersion"] = c.policy_version;
  j["virtualTimeMs"] = c.virtual_ms;
  const std::string text = j.dump(2) + '\n';
  const fs::path tmp = file.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::fsync(fd) == 0 && ok;
  ok = ::close(fd) == 0 && ok;
  if (!ok) return false;
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) return false;
  const int dir = ::open(file.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  ok = ::fsync(dir) == 0;
  return ::close(dir) == 0 && ok;
}

// A real Prometheus scraping the platform, with a generated configuration.
class PrometheusChild {
 public:
  ~PrometheusChild() { stop(); }
  // `token_file`: the bearer token it scrapes /metrics with (a finops token of its own).
  Expected<bool> start(const fs::path& dir, const std::string& target, int port, const fs::path& token_file) {
    const fs::path config = dir / "prometheus.yml";
    {
      std::ofstream out(config, std::ios::trunc);
      out << "# Generated by gpubank up.\nglobal:\n  scrape_interval: 5s\n  evaluation_interval: 5s\n"
             "scrape_configs:\n- job_name: gpubank\n  honor_labels: true\n  authorization:\n    type: Bearer\n"
             "    credentials_file: '"
          << token_file.string() << "'\n  static_configs:\n  - targets: ['" << target << "']\n";
      if (!out) return Unexpected{"cannot write " + config.string()};
    }
    const std::string config_arg = "--config.file=" + config.string();
    const std::string storage_arg = "--storage.tsdb.path=" + (dir / "prometheus-data").string();
    const std::string listen_arg = "--web.listen-address=127.0.0.1:" + std::to_string(port);
    const pid_t pid = fork();
    if (pid < 0) return Unexpected{"cannot start prometheus: fork failed"};
    if (pid == 0) {
      // run_up blocks SIGINT and SIGTERM for its own threads; exec keeps the mask, and
      // Prometheus must stop on SIGTERM.
      sigset_t unblock;
      sigemptyset(&unblock);
      sigaddset(&unblock, SIGINT);
      sigaddset(&unblock, SIGTERM);
      sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
      const fs::path log = dir / "prometheus.log";
      FILE* f = std::freopen(log.c_str(), "a", stderr);
      (void)f;
      execlp("prometheus", "prometheus", config_arg.c_str(), storage_arg.c_str(), listen_arg.c_str(),
             "--log.level=warn", static_cast<char*>(nullptr));
      _exit(127);
    }
    pid_ = pid;
    return true;
  }
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::string p = path;
  for (std::size_t from = 0; from <= p.size();) {
    const std::size_t colon = p.find(':', from);
    const std::string dir = p.substr(from, colon == std::string::npos ? std::string::npos : colon - from);
    std::error_code ec;
    if (!dir.empty() && fs::exists(fs::path(dir) / program, ec)) return true;
    if (colon == std::string::npos) break;
    from = colon + 1;
  }
  return false;
}

int run_up(const UpOptions& opt) {
  // Ctrl-C and SIGTERM are blocked from the start, in this thread and every one it starts:
  // one that arrives while the day is being set up (the fluid models' calibration takes a
  // while) stays pending and stops the run cleanly once it serves, instead of killing it.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  double speed = 0;
  if (opt.speed != "max") {
    try {
      std::size_t used = 0;
      speed = std::stod(opt.speed, &used);
      if (used != opt.speed.size() || !(speed > 0) || speed > 1e6) throw std::invalid_argument("range");
    } catch (const std::exception&) {
      std::cerr << "gpubank up: --speed: must be a number in (0, 1000000] or \"max\", got \"" << opt.speed << "\"\n";
      return 2;
    }
  }
  auto start = parse_rfc3339(opt.start);
  if (!start) {
    std::cerr << "gpubank up: --start: " << start.error() << '\n';
    return 2;
  }
  auto loaded = load_valid_policies(opt.policies, "up");
  if (!loaded) return 1;
  policy::PolicySet set = std::move(*loaded);

  auto inventory = load_valid_inventory(opt.inventory, "up");
  if (!inventory) return 1;

  twin::live::DayOptions day;
  day.seed = opt.seed;
  day.start = *start;
  day.hours = opt.hours;
  day.governance = true;  // /api/v1/governance/: the scanner and the reports in virtual time
  day.llm_trace = opt.llm_trace;
  day.serving_load = opt.serving_load;

  // Persistence: the ledger and the audit log go to the store as the run makes them, each
  // instant's before the run goes on (and before anything shows it). A restart re-runs the
  // seeded day from virtual time 0 (the run is a pure function of its inputs): the entries
  // it regenerates up to the store's head must be the stored ones, content field by field
  // (twin/live/resume.hpp), and only what lies beyond is appended.
  const std::string policy_version = twin::live::policy_version(set);
  std::unique_ptr<store::Store> db;
  std::shared_ptr<twin::live::ReplayWriter> writer;
  // What the API did to the run (twin/live/interventions.hpp): journalled before it takes
  // effect, applied again at its virtual time by a restart's replay.
  std::shared_ptr<twin::live::InterventionJournal> journal;
  std::optional<SavedClock> saved;
  fs::path clock_file;
  twin::run::RunOptions run_options;
  const auto write_identity = [&] {
    if (write_clock(clock_file, SavedClock{opt.seed, format_rfc3339(*start), policy_version, opt.hours, 0})) return true;
    std::cerr << "gpubank up: --data-dir: cannot write " << clock_file.string() << '\n';
    return false;
  };
  run_options.inventory = std::make_shared<const twin::cluster::Inventory>(std::move(*inventory));
  if (!opt.data_dir.empty()) {
    std::error_code ec;
    fs::create_directories(opt.data_dir, ec);
    if (ec) {
      std::cerr << "gpubank up: --data-dir: cannot create " << opt.data_dir << ": " << ec.message() << '\n';
      return 1;
    }
    clock_file = fs::path(opt.data_dir) / "up.json";
    auto read = read_clock(clock_file);
    if (!read) {
      std::cerr << "gpubank up: --data-dir: " << read.error() << '\n';
      return 1;
    }
    saved = *read;
    if (saved && (saved->seed != opt.seed || saved->start != format_rfc3339(*start) || saved->hours != opt.hours)) {
      std::cerr << "gpubank up: --data-dir: " << opt.data_dir << " holds the run with --seed " << saved->seed
                << " --start " << saved->start << " --hours " << saved->hours
                << "; pass the same flags to resume it, or use another --data-dir\n";
      return 1;
    }
    if (saved && saved->policy_version != policy_version) {
      std::cerr << "gpubank up: --data-dir: the saved run used other policies (version " << saved->policy_version
                << ", now " << policy_version << "); use another --data-dir to start over with these\n";
      return 1;
    }
    auto opened = store::Store::open((fs::path(opt.data_dir) / "gpubank.db").string());
    if (!opened) {
      std::cerr << "gpubank up: --data-dir: " << opened.error() << '\n';
      return 1;
    }
    db = std::move(opened.value());
    // This process becomes the store's one producer: one still running on the same
    // directory is fenced (its next append fails instead of double counting). Taken
    // before the store's head is read, so nothing the fenced process could still append
    // goes unseen by the replay.
    auto epoch = db->acquire_writer("gpubank up pid " + std::to_string(::getpid()));
    if (!epoch) {
      std::cerr << "gpubank up: --data-dir: " << epoch.error() << '\n';
      return 1;
    }
    auto replay = twin::live::ReplayWriter::open(*db);
    if (!replay) {
      std::cerr << "gpubank up: --data-dir: " << replay.error() << '\n';
      return 1;
    }
    writer = std::move(*replay);
    // Record ids carry the epoch of the store's first producer, not this start's: every
    // start replays the same run and must regenerate the ids already stored (after a kill
    // before anything was appended too), and the store is this run's alone.
    auto first = db->first_writer_epoch();
    if (!first) {
      std::cerr << "gpubank up: --data-dir: " << first.error() << '\n';
      return 1;
    }
    run_options.record_prefix = std::to_string(*first) + "-";
    auto interventions = twin::live::InterventionJournal::open((fs::path(opt.data_dir) / "interventions.db").string());
    if (!interventions) {
      std::cerr << "gpubank up: --data-dir: " << interventions.error() << '\n';
      return 1;
    }
    journal = std::move(*interventions);
    // The run's identity goes to disk before its first entry goes to the store (a store
    // with entries and no up.json gets it once the replay has matched them).
    if (!saved && writer->stored_ledger() == 0 && writer->stored_audit() == 0 && !write_identity()) return 1;
    run_options.on_instant = [writer](std::span<const bank::LedgerEntry> ledger,
                                      std::span<const bank::AuditEntry> audit) { return (*writer)(ledger, audit); };
  }
  const auto another_run = [&] {
    std::cerr << "gpubank up: --data-dir: " << writer->mismatch() << ": the store holds another run (other flags, "
              << "policies, inventory or gpubank version); use another --data-dir\n";
    return 1;
  };

  const policy::PolicySet base_policies = set.policies_only();  // the policy desk's base (proposals)
  const auto inventory_for_previews = run_options.inventory;
  auto platform = twin::live::Platform::create(std::move(set), day, run_options);
  if (!platform) {
    if (writer && !writer->mismatch().empty()) return another_run();
    std::cerr << "gpubank up: " << platform.error() << '\n';
    return 1;
  }
  auto& p = *platform.value();
  if (journal) {
    p.schedule(journal->recorded());
    p.set_journal([journal](twin::live::Intervention& i) { return journal->append(i, wall_ms()); });
  }
  if (writer && (writer->stored_ledger() > 0 || writer->stored_audit() > 0 || (saved && saved->virtual_ms > 0))) {
    // The replay, as fast as it goes (in the minute steps of --speed max): to the store's
    // head, and on to the saved clock when that is further.
    const std::int64_t hint = saved ? saved->virtual_ms : 0;
    while ((!writer->caught_up() || p.now() < hint) && p.now() < p.end()) {
      if (!p.advance_to(std::min(p.end(), p.now() + 60'000))) break;
    }
    if (!writer->mismatch().empty()) return another_run();
    if (!p.error().empty()) {
      std::cerr << "gpubank up: the replay stopped: " << p.error() << '\n';
      return 1;
    }
    if (!writer->caught_up()) {
      std::cerr << "gpubank up: --data-dir: the store holds " << writer->stored_ledger() << " ledger and "
                << writer->stored_audit() << " audit entries but this run makes only " << writer->replayed_ledger()
                << " and " << writer->replayed_audit()
                << " in its whole day: the store holds another run; use another --data-dir\n";
      return 1;
    }
    if (!saved && !write_identity()) return 1;
    std::cerr << "gpubank up: resuming from " << opt.data_dir << " at virtual time " << p.now() / 1000
              << " s: the replay matched the store's " << writer->stored_ledger() << " ledger and "
              << writer->stored_audit() << " audit entries";
    if (const std::size_t n = journal->recorded().size(); n > 0) {
      std::cerr << ", with " << n - p.scheduled_left() << " of " << n << " journalled interventions applied";
      if (p.scheduled_refused() > 0) std::cerr << " (" << p.scheduled_refused() << " refused by the run, as at first)";
    }
    std::cerr << '\n';
  }
  std::cerr << "gpubank up: " << p.scenario().workloads.size() << " workloads in the seeded day (seed " << opt.seed
            << "), starting " << format_rfc3339(day.start) << '\n';

  // Who may use the API: tokens in the auth store (its own, apart from the run's store,
  // whose entries a restart must regenerate). Each start revokes the tokens the last start
  // issued and prints a new operator token: a URL once shown stops working at the next start.
  fs::path scratch = fs::temp_directory_path() / ("gpubank-up-" + std::to_string(getpid()));
  std::string auth_location = opt.auth_store;
  if (auth_location.empty()) {
    const fs::path dir = opt.data_dir.empty() ? scratch : fs::path(opt.data_dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    auth_location = (dir / "auth.db").string();
  }
  auto gate = auth::Gate::open(auth_location);
  if (!gate) {
    std::cerr << "gpubank up: --auth-store: " << gate.error() << '\n';
    return 1;
  }
  const char* user = std::getenv("USER");
  const std::string operator_name = !opt.operator_name.empty() ? opt.operator_name
                                    : user != nullptr && *user != '\0' ? std::string(user)
                                                                       : std::string("operator");
  constexpr const char* kIssuer = "gpubank-up";
  for (const std::string& subject : {operator_name, std::string("prometheus")}) {
    if (auto revoked = (*gate)->revoke_issued(kIssuer, subject, wall_ms()); !revoked) {
      std::cerr << "gpubank up: --auth-store: " << revoked.error() << '\n';
      return 1;
    }
  }
  auto operator_token = (*gate)->issue(
      auth::GrantRequest{operator_name, auth::Role::PlatformAdmin, "", kIssuer, 30LL * 24 * 3600 * 1000}, wall_ms());
  if (!operator_token) {
    std::cerr << "gpubank up: --operator: " << operator_token.error() << '\n';
    return 1;
  }
  if (!opt.token_file.empty() && !write_secret(opt.token_file, operator_token->token)) {
    std::cerr << "gpubank up: --token-file: cannot write " << opt.token_file << '\n';
    return 1;
  }

  // Self-service policy changes, recorded in the same store as the tokens.
  auto desk = proposals::Desk::open(auth_location, base_policies);
  if (!desk) {
    std::cerr << "gpubank up: --auth-store: " << desk.error() << '\n';
    return 1;
  }

  // Changes the desk holds in force that the run never took (a stop between the desk's
  // record and the journal, or a new --data-dir beside this --auth-store): applied now.
  {
    auto view = (*desk)->view();
    if (!view) {
      std::cerr << "gpubank up: --auth-store: " << view.error() << '\n';
      return 1;
    }
    const std::vector<twin::live::Intervention> none;
    for (const api::ReconciledProposal& r :
         api::reconcile_desk(p, view->proposals, journal ? journal->recorded() : none, "gpubank-up/" + operator_name)) {
      std::cerr << "gpubank up: proposal " << r.id << " (" << r.object
                << ") is in force in the policy desk but was not in the run: "
                << (r.applied ? "applied now" : "not applied in the running day: " + r.reason) << '\n';
    }
    if (!p.error().empty()) {
      std::cerr << "gpubank up: " << p.error() << '\n';
      return 1;
    }
  }

  api::PlatformServerOptions server_options;
  server_options.gate = std::shared_ptr<auth::Gate>(std::move(*gate));
  server_options.desk = std::shared_ptr<proposals::Desk>(std::move(*desk));
  server_options.inventory = inventory_for_previews;
  server_options.portal_dir = opt.portal_dir;
  server_options.proxy = proxy_auth(opt.proxy);
  server_options.address = opt.address;
  server_options.port = opt.port;
  server_options.speed = speed;
  server_options.paused = opt.paused;
  auto last_save = std::make_shared<std::chrono::steady_clock::time_point>();
  SavedClock clock{opt.seed, format_rfc3339(day.start), policy_version, opt.hours, 0};
  auto save = [clock, clock_file, last_save](const twin::live::Platform& now, bool force) mutable {
    if (clock_file.empty()) return;
    const auto wall = std::chrono::steady_clock::now();
    if (!force && wall - *last_save < std::chrono::seconds(1)) return;
    *last_save = wall;
    clock.virtual_ms = now.now();
    if (!write_clock(clock_file, clock)) std::cerr << "gpubank up: cannot write " << clock_file.string() << '\n';
  };
  std::function<void(const std::string&)> timeline;
  if (!opt.quiet) timeline = [](const std::string& line) { std::cerr << line << '\n'; };
  const bool exit_when_done = opt.exit_when_done;
  api::PlatformServer* server_ptr = nullptr;
  api::PlatformServer server(
      std::move(platform.value()), server_options, timeline,
      [save, exit_when_done, &server_ptr](const twin::live::Platform& now) mutable {
        // A run that stopped on an error (its store refused an append: the disk, or
        // another process took the store over) has nothing left to serve: say why and
        // exit 1, leaving the clock file to whoever holds the store now.
        if (!now.error().empty()) {
          if (server_ptr == nullptr) return;
          std::cerr << "gpubank up: the run stopped: " << escape_text(now.error()) << '\n';
          std::thread([s = server_ptr] { s->stop(); }).detach();
          server_ptr = nullptr;
          return;
        }
        save(now, false);
        if (exit_when_done && now.now() >= now.end() && server_ptr != nullptr) {
          // Stopping the HTTP server from the clock thread: stop() only signals.
          std::thread([s = server_ptr] { s->stop(); }).detach();
          server_ptr = nullptr;
        }
      });
  auto port = server.bind();
  if (!port) {
    std::cerr << "gpubank up: " << port.error() << '\n';
    return 1;
  }
  server_ptr = &server;
  const std::string target = opt.address + ":" + std::to_string(*port);
  std::cerr << "gpubank up: serving http://" << target << " (the portal at /, /metrics, /api/v1/...), speed "
            << (speed <= 0 ? std::string("max") : opt.speed + "x") << (opt.paused ? ", paused" : "") << '\n';
  std::cerr << "gpubank up: open the portal as " << escape_text(operator_name) << " (platform-admin): http://" << target
            << "/#token=" << operator_token->token << '\n'
            << "gpubank up: more tokens: gpubank token create --store " << auth_location
            << " --subject NAME --role viewer|group-admin|finops|platform-admin [--group GROUP]\n";

  PrometheusChild prometheus;
  if (opt.with_prometheus) {
    if (!on_path("prometheus")) {
      std::cerr << "gpubank up: --with-prometheus: no prometheus on PATH (Debian package \"prometheus\")\n";
      return 1;
    }
    const fs::path dir = opt.data_dir.empty() ? scratch : fs::path(opt.data_dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    auto scrape_token = server_options.gate->issue(
        auth::GrantRequest{"prometheus", auth::Role::FinOps, "", kIssuer, std::nullopt}, wall_ms());
    const fs::path token_file = dir / "prometheus.token";
    if (!scrape_token || !write_secret(token_file, scrape_token->token)) {
      std::cerr << "gpubank up: --with-prometheus: cannot issue or write its scrape token "
                << (scrape_token ? token_file.string() : scrape_token.error()) << '\n';
      return 1;
    }
    if (auto started = prometheus.start(dir, target, opt.prometheus_port, token_file); !started) {
      std::cerr << "gpubank up: --with-prometheus: " << started.error() << '\n';
      return 1;
    }
    std::cerr << "gpubank up: prometheus on http://127.0.0.1:" << opt.prometheus_port << " scraping " << target
              << " (config " << (dir / "prometheus.yml").string() << ")\n";
  }

  // Ctrl-C and SIGTERM: a thread waits for them (blocked everywhere else since the start)
  // and stops the server.
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    while (!done) {
      timespec timeout{0, 200'000'000};
      const int sig = sigtimedwait(&signals, nullptr, &timeout);
      if (sig == SIGINT || sig == SIGTERM) {
        std::cerr << "\ngpubank up: shutting down\n";
        server.stop();
        return;
      }
    }
  });
  const bool served = server.serve();
  done = true;
  waiter.join();
  prometheus.stop();
  server.with_platform([&](twin::live::Platform& now) {
    if (now.error().empty()) save(now, true);
    std::cerr << "gpubank up: stopped at " << format_rfc3339(now.start() + std::chrono::milliseconds(now.now()))
              << " (virtual), " << now.events().size() << " events, " << now.ledger().size()
              << " ledger entries\n";
  });
  bool stopped_on_error = false;
  server.with_platform([&](twin::live::Platform& now) { stopped_on_error = !now.error().empty(); });
  return served && !stopped_on_error ? 0 : 1;
}

}  // namespace

Command add_up_command(CLI::App& app) {
  auto opt = std::make_shared<UpOptions>();
  CLI::App* cmd = app.add_subcommand(
      "up",
      "Start the embedded platform on the twin: the policies, an example cluster and a seeded day of work for the "
      "business groups, served on loopback (REST API under /api/v1/, /metrics, /healthz, /readyz) with a clock you "
      "can pause, resume and step. Ctrl-C stops it; with --data-dir a restart resumes where it stopped.");
  cmd->add_option("--policies", opt->policies, "policy files and directories (default: examples/policies)")
      ->expected(1, -1);
  cmd->add_option("--inventory", opt->inventory,
                  "the cluster: nodes, GPUs, pools (default: examples/inventory/example.yaml)");
  cmd->add_option("--llm-trace", opt->llm_trace,
                  "drive the inference services with a real request trace (AzureLLMInferenceTrace_*.csv), repeated "
                  "over the day on a diurnal curve; default: a seeded synthetic load with the same token statistics");
  cmd->add_option("--serving-load", opt->serving_load,
                  "the inference services' request rate relative to their floors' capacity (default 1; 0.1 for a "
                  "quick, light run)")
      ->check(finite_range(0.001, 10));
  cmd->add_option("--seed", opt->seed, "seed of the day's workload (default 1)")->check(seed_text());
  cmd->add_option("--start", opt->start, "wall time of virtual time 0, RFC 3339 (default 2026-11-30T16:00:00Z)");
  cmd->add_option("--hours", opt->hours, "length of the generated day in hours (default 24)")
      ->check(CLI::Range(1, 24 * 14));
  cmd->add_option("--address", opt->address, "address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", opt->port, "port to listen on, 0 for any (default 8080)")->check(CLI::Range(0, 65535));
  cmd->add_option("--speed", opt->speed,
                  "virtual seconds per wall second, or max (default 60: a virtual hour per wall minute)");
  cmd->add_flag("--paused", opt->paused, "start with the clock paused (POST /api/v1/clock to resume or step)");
  cmd->add_option("--data-dir", opt->data_dir,
                  "persist the ledger, the audit log and the clock here (SQLite) and resume from it on restart");
  cmd->add_flag("--with-prometheus", opt->with_prometheus,
                "also start a real Prometheus (Debian package prometheus) scraping the platform");
  cmd->add_option("--prometheus-port", opt->prometheus_port, "Prometheus' port with --with-prometheus (default 9090)")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--auth-store", opt->auth_store,
                  "where API tokens are kept (a SQLite file or postgresql:// URL; default DATA_DIR/auth.db, or a "
                  "temporary directory's without --data-dir); gpubank token create --store takes the same");
  cmd->add_option("--token-file", opt->token_file,
                  "also write the operator's platform-admin token to this file (mode 0600) for scripts");
  cmd->add_option("--operator", opt->operator_name, "the subject of the operator's token (default $USER)");
  add_proxy_options(*cmd, opt->proxy);
  cmd->add_option("--portal-dir", opt->portal_dir,
                  "development: serve the portal's files from this directory (re-read at each request) instead of "
                  "the ones built into the binary")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--quiet", opt->quiet, "no timeline on stderr");
  cmd->add_flag("--exit-when-done", opt->exit_when_done, "exit once the day has been run (for scripts and tests)");
  return {cmd, [opt] { return run_up(*opt); }};
}

}  // namespace gpubank::cli
