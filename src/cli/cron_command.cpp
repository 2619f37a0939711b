#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>

#include "cli/command.hpp"
#include "core/cron.hpp"
#include "core/timestamp.hpp"
#include "core/timezone.hpp"

namespace gpubank::cli {
namespace {

struct CronOptions {
  std::string expression;
  std::string timezone = "UTC";
  std::string after;
  int count = 5;
  Format format = Format::Text;
};

int run_cron(const CronOptions& opt) {
  auto schedule = CronSchedule::parse(opt.expression);
  if (!schedule) {
    std::cerr << "gpubank cron: " << schedule.error() << '\n';
    return 1;
  }
  auto zone = find_time_zone(opt.timezone);
  if (!zone) {
    std::cerr << "gpubank cron: --timezone: " << zone.error() << '\n';
    return 1;
  }
  std::chrono::sys_seconds t;
  if (opt.after.empty()) {
    t = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
  } else {
    auto parsed = parse_rfc3339(opt.after);
    if (!parsed) {
      std::cerr << "gpubank cron: --after: " << parsed.error() << '\n';
      return 2;
    }
    t = std::chrono::floor<std::chrono::seconds>(*parsed);
  }
  nlohmann::ordered_json firings = nlohmann::ordered_json::array();
  for (int i = 0; i < opt.count; ++i) {
    auto next = schedule->next(t, **zone);
    if (!next) break;
    t = *next;
    const auto local = date::make_zoned(*zone, t);
    firings.push_back({{"utc", format_rfc3339(t)}, {"local", date::format("%Y-%m-%dT%H:%M:%S%Ez %Z", local)}});
  }
  if (opt.format == Format::Text) {
    if (firings.empty()) std::cout << "never fires within five years\n";
    for (const auto& f : firings) std::cout << f["local"].get<std::string>() << "  (" << f["utc"].get<std::string>() << ")\n";
  } else {
    print_structured(std::cout,
                     {{"expression", opt.expression}, {"timezone", opt.timezone}, {"next", firings}}, opt.format);
  }
  return firings.empty() ? 1 : 0;
}

}  // namespace

Command add_cron_command(CLI::App& app) {
  auto opt = std::make_shared<CronOptions>();
  CLI::App* cmd = app.add_subcommand(
      "cron", "Show when a cron expression fires, with robfig/cron v3 (KEDA) semantics and DST handling");
  cmd->add_option("expression", opt->expression, "five-field cron expression, e.g. \"30 8 * * 1-5\"")->required();
  cmd->add_option("-z,--timezone", opt->timezone, "IANA time zone")->capture_default_str();
  cmd->add_option("--after", opt->after, "RFC 3339 time to start from (default: now)");
  cmd->add_option("-n,--count", opt->count, "how many firings to show")->check(CLI::Range(1, 10000))->capture_default_str();
  add_output_option(*cmd, opt->format);
  return {cmd, [opt] { return run_cron(*opt); }};
}

}  // namespace gpubank::cli
