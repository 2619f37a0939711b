// gpubank tidal: the tidal controller from the command line.
//   timeline <policy>          the boundaries of a TidalPolicy's windows over the next days
//                              (approaching, prewarm, start, end; floors and borrow limits)
//   freeze|unfreeze <policy>   pin (or release) the replicas of its services on a running
//                              `gpubank up`, through its API; audited there.
#include <CLI/CLI.hpp>
#include <httplib.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "core/timestamp.hpp"
#include "policy/validate.hpp"
#include "tidal/controller.hpp"

namespace gpubank::cli {

namespace {

using Json = nlohmann::ordered_json;

struct TidalOptions {
  std::string policy;
  std::vector<std::string> policies{"examples/policies"};
  std::string from;
  int days = 2;
  std::string server = "http://127.0.0.1:8080";
  std::string reason;
  std::string token_file;
  Format format = Format::Text;
};

// The bearer token for the platform's API: --token-file's first line, else $GPUBANK_TOKEN.
std::optional<std::string> api_token(const std::string& token_file, const std::string& me) {
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::string token;
    if (!in || !std::getline(in, token) || token.empty()) {
      std::cerr << me << ": --token-file: cannot read a token from " << token_file << '\n';
      return std::nullopt;
    }
    return token;
  }
  const char* env = std::getenv("GPUBANK_TOKEN");
  return std::string(env != nullptr ? env : "");
}

int run_timeline(const TidalOptions& opt) {
  auto loaded = load_valid_policies(opt.policies, "tidal timeline");
  if (!loaded) return 1;
  policy::PolicySet set = std::move(*loaded);
  const policy::PolicyObject* object = set.find(policy::Kind::TidalPolicy, opt.policy);
  if (object == nullptr) {
    std::cerr << "gpubank tidal timeline: no TidalPolicy named \"" << opt.policy << "\" in the policies\n";
    return 1;
  }
  const auto& spec = object->as<policy::TidalPolicySpec>();
  std::map<std::string, policy::InferenceScalingPolicySpec> targeted;
  for (const auto& name : spec.targets.inference_policies) {
    if (const auto* p = set.find(policy::Kind::InferenceScalingPolicy, name)) {
      targeted.emplace(name, p->as<policy::InferenceScalingPolicySpec>());
    }
  }
  auto controller = tidal::TidalController::create(opt.policy, spec, std::move(targeted));
  if (!controller) {
    std::cerr << "gpubank tidal timeline: " << controller.error() << '\n';
    return 1;
  }
  Timestamp from_time{};
  if (opt.from.empty()) {
    std::cerr << "gpubank tidal timeline: --from is required (RFC 3339): the timeline does not read the clock\n";
    return 2;
  }
  auto parsed = parse_rfc3339(opt.from);
  if (!parsed) {
    std::cerr << "gpubank tidal timeline: --from: " << parsed.error() << '\n';
    return 2;
  }
  from_time = *parsed;
  const auto from = std::chrono::floor<std::chrono::seconds>(from_time);
  const auto to = from + std::chrono::hours(24 * opt.days);
  const auto actions = controller->timeline(from, to);
  Json list = Json::array();
  for (const auto& a : actions) {
    const auto record = controller->record_of(a);
    Json j = Json::object();
    j["time"] = format_rfc3339(Timestamp(a.at));
    j["kind"] = record.kind;
    j["window"] = a.occurrence.window;
    j["floors"] = a.floors;
    j["trainingBorrowLimit"] = a.training_borrow_limit ? Json(*a.training_borrow_limit) : Json(nullptr);
    j["admissionHold"] = a.admission_hold;
    if (a.reclaim) {
      j["reclaim"] = {{"pool", a.reclaim->resource_pool},
                      {"gpusNeeded", a.reclaim->gpus_needed},
                      {"trainingGroups", a.reclaim->training_groups}};
    }
    j["message"] = record.message;
    list.push_back(std::move(j));
  }
  if (opt.format == Format::Text) {
    for (const auto& j : list) {
      std::cout << j["time"].get<std::string>() << "  " << j["kind"].get<std::string>() << "  "
                << j["window"].get<std::string>() << ": " << j["message"].get<std::string>() << '\n';
    }
  } else {
    print_structured(std::cout, list, opt.format);
  }
  return 0;
}

int run_freeze(const TidalOptions& opt, bool freeze) {
  const std::string verb = freeze ? "freeze" : "unfreeze";
  const std::string prefix = "http://";
  if (opt.server.rfind(prefix, 0) != 0) {
    std::cerr << "gpubank tidal " << verb << ": --server must be an http:// URL, got \"" << opt.server << "\"\n";
    return 2;
  }
  const auto token = api_token(opt.token_file, "gpubank tidal " + verb);
  if (!token) return 1;
  httplib::Client client(opt.server);
  if (!token->empty()) client.set_bearer_token_auth(*token);
  client.set_connection_timeout(5);
  client.set_read_timeout(30);
  Json body = Json::object();
  if (!opt.reason.empty()) body["reason"] = opt.reason;
  auto res = client.Post("/api/v1/tidal/" + opt.policy + "/" + verb, body.dump(), "application/json");
  if (!res) {
    std::cerr << "gpubank tidal " << verb << ": cannot reach " << opt.server << ": " << httplib::to_string(res.error())
              << '\n';
    return 1;
  }
  if (res->status != 200) {
    const auto error = nlohmann::json::parse(res->body, nullptr, false);
    std::cerr << "gpubank tidal " << verb << ": " << res->status << ": "
              << (error.is_object() && error.contains("error") && error["error"].is_string()
                      ? error["error"].get<std::string>()
                      : res->body)
              << '\n';
    return 1;
  }
  const auto services = nlohmann::ordered_json::parse(res->body, nullptr, false);
  if (opt.format == Format::Text) {
    std::cout << "TidalPolicy " << opt.policy << (freeze ? " frozen" : " unfrozen") << '\n';
  } else {
    print_structured(std::cout, services, opt.format);
  }
  return 0;
}

}  // namespace

Command add_tidal_command(CLI::App& app) {
  auto opt = std::make_shared<TidalOptions>();
  CLI::App* tidal = app.add_subcommand("tidal", "Tidal capacity: a TidalPolicy's timeline, and manual freeze");
  tidal->require_subcommand(1);
  CLI::App* timeline = tidal->add_subcommand(
      "timeline", "The boundaries of a TidalPolicy's windows (approaching, prewarm, start, end) with the floors and "
                  "training borrow limits they set, computed from the policies");
  timeline->add_option("policy", opt->policy, "the TidalPolicy's name")->required();
  timeline->add_option("--policies", opt->policies, "policy files and directories (default: examples/policies)")
      ->expected(1, -1);
  timeline->add_option("--from", opt->from, "start of the timeline, RFC 3339 (required)");
  timeline->add_option("--days", opt->days, "days to cover (default 2)")->check(CLI::Range(1, 366));
  add_output_option(*timeline, opt->format);
  CLI::App* freeze = tidal->add_subcommand(
      "freeze", "Pin the replicas of a TidalPolicy's services on a running `gpubank up` (its windows stop moving them; "
                "real-time demand may still add replicas); audited");
  CLI::App* unfreeze = tidal->add_subcommand("unfreeze", "Release a freeze: the windows act again; audited");
  for (CLI::App* c : {freeze, unfreeze}) {
    c->add_option("policy", opt->policy, "the TidalPolicy's name")->required();
    c->add_option("--server", opt->server, "the platform's URL (default http://127.0.0.1:8080)");
    c->add_option("--token-file", opt->token_file,
                  "a file holding a platform-admin API token (default: $GPUBANK_TOKEN; gpubank up --token-file)");
    add_output_option(*c, opt->format);
  }
  freeze->add_option("--reason", opt->reason, "why (recorded in the audit log)");
  return {tidal, [opt, timeline, freeze] {
            if (timeline->parsed()) return run_timeline(*opt);
            return run_freeze(*opt, freeze->parsed());
          }};
}

}  // namespace gpubank::cli
