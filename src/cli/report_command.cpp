// gpubank report showback|kpis|leaderboard: FinOps over a period, from Prometheus
// (src/governance/showback.hpp, rankings.hpp). The three share one set of queries.
//
//   gpubank report showback    --prometheus URL --policies DIR --from TIME --to TIME
//                              [--level group|owner|workload] [--format table|csv|json|yaml]
//   gpubank report kpis        (the same options but --level)
//   gpubank report leaderboard (the same, and --min-gpu-hours N)
//   gpubank report review      (the same, and --store S for the alert record)
#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>

#include "cli/command.hpp"
#include "cli/validators.hpp"
#include "core/duration.hpp"
#include "core/timestamp.hpp"
#include "governance/prometheus_client.hpp"
#include "governance/rankings.hpp"
#include "governance/review.hpp"
#include "store/store.hpp"
#include "governance/showback.hpp"

namespace gpubank::cli {
namespace {

struct ReportOptions {
  std::string prometheus;
  std::vector<std::string> policies;
  std::string from;
  std::string to;
  std::string level = "group";
  std::string format = "table";
  std::string timeout = "60s";
  double min_gpu_hours = 10;
  std::string store;
};

enum class Report { Showback, Kpis, Leaderboard, Review };

Expected<std::int64_t> time_ms(const std::string& text, const char* flag) {
  auto t = parse_rfc3339(text);
  if (!t) return Unexpected{std::string(flag) + ": " + t.error()};
  return std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count();
}

int run_report(const ReportOptions& opt, Report report) {
  const std::string me = std::string("gpubank report ") +
                         (report == Report::Showback ? "showback"
                          : report == Report::Kpis   ? "kpis"
                          : report == Report::Review ? "review"
                                                     : "leaderboard");
  auto from = time_ms(opt.from, "--from");
  if (!from) return std::cerr << me << ": " << from.error() << '\n', 2;
  auto to = time_ms(opt.to, "--to");
  if (!to) return std::cerr << me << ": " << to.error() << '\n', 2;
  auto period = governance::showback_period(*from, *to);
  if (!period) return std::cerr << me << ": " << period.error() << '\n', 2;
  auto timeout = Duration::parse(opt.timeout);
  if (!timeout || timeout->milliseconds() <= 0) {
    return std::cerr << me << ": --timeout: " << (timeout ? "must be positive" : timeout.error()) << '\n', 2;
  }
  // --level is checked against the same three names by the option parser.
  const governance::ShowbackLevel level = governance::showback_level(opt.level).value_or(governance::ShowbackLevel::Group);
  auto set = load_valid_policies(opt.policies, me);
  if (!set) return 1;
  const policy::PlatformGuardrailsSpec* guardrails = set->guardrails_spec();
  if (guardrails == nullptr) return std::cerr << me << ": the policies hold no PlatformGuardrails (prices)\n", 1;
  const auto policies = governance::scan_policies(*set);
  const auto slos = governance::serving_slos(*set);
  auto prometheus = governance::PrometheusClient::create(opt.prometheus, std::chrono::milliseconds(timeout->milliseconds()));
  if (!prometheus) return std::cerr << me << ": " << prometheus.error() << '\n', 2;

  governance::Answers answers;
  std::vector<governance::Query> plan = governance::plan_showback(*period, policies, slos);
  if (report == Report::Review) {
    for (governance::Query& q : governance::plan_review(*period, *set)) plan.push_back(std::move(q));
  }
  for (const governance::Query& q : plan) {
    auto samples = (*prometheus)->query(q.promql, period->to_ms - 1);
    if (!samples) return std::cerr << me << ": query " << q.name << ": " << samples.error() << '\n', 1;
    answers[q.name] = std::move(*samples);
  }
  auto showback = governance::showback_from(answers, *period, policies, *guardrails, slos);
  if (!showback) return std::cerr << me << ": " << showback.error() << '\n', 1;
  for (const std::string& m : showback->unpriced_models) {
    std::cerr << me << ": warning: GPU model " << m << " has no gpuHourPrice in the guardrails: its cost is 0\n";
  }
  const Format structured = opt.format == "yaml" ? Format::Yaml : Format::Json;
  if (report == Report::Review) {
    std::optional<governance::AlertBook> book;
    if (!opt.store.empty()) {
      auto store = store::Store::open(opt.store, store::OpenOptions{.create = false, .read_only = true});
      if (!store) return std::cerr << me << ": --store: " << store.error() << '\n', 1;
      book.emplace();
      if (auto read = governance::refresh(**store, *book); !read) {
        return std::cerr << me << ": --store: " << read.error() << '\n', 1;
      }
    }
    const auto findings = governance::review(*showback, answers, *set, book ? &*book : nullptr);
    if (opt.format == "table" || opt.format == "csv") {
      std::cout << governance::review_text(findings);
    } else {
      print_structured(std::cout, governance::to_json(findings), structured);
    }
    return 0;
  }
  if (report == Report::Kpis) {
    const auto k = governance::kpis(*showback, answers);
    if (opt.format == "csv") {
      std::cout << governance::kpi_csv(k);
    } else if (opt.format == "table") {
      std::cout << governance::kpi_table(k);
    } else {
      print_structured(std::cout, governance::to_json(k), structured);
    }
    return 0;
  }
  if (report == Report::Leaderboard) {
    const auto board = governance::leaderboard(*showback, *guardrails, opt.min_gpu_hours);
    if (opt.format == "csv") {
      std::cout << governance::leaderboard_csv(board);
    } else if (opt.format == "table") {
      std::cout << governance::leaderboard_table(board, showback->currency);
    } else {
      print_structured(std::cout, governance::to_json(board), structured);
    }
    return 0;
  }
  if (opt.format == "csv") {
    std::cout << governance::to_csv(*showback, level);
  } else if (opt.format == "table") {
    std::cout << governance::to_table(*showback, level);
  } else {
    print_structured(std::cout, governance::to_json(*showback, level), structured);
  }
  return 0;
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto opt = std::make_shared<ReportOptions>();
  auto chosen = std::make_shared<Report>(Report::Showback);
  CLI::App* cmd =
      app.add_subcommand("report", "FinOps reports from Prometheus: showback, KPIs, the team leaderboard, the quota review");
  cmd->require_subcommand(1);
  auto common = [&](CLI::App* sub) {
    sub->add_option("--prometheus", opt->prometheus, "Prometheus base URL (http://host:9090)")->required();
    sub->add_option("--policies", opt->policies, "Policy files or directories (prices from the guardrails)")->required();
    sub->add_option("--from", opt->from, "Start of the period, RFC 3339 (rounded up to a minute)")->required();
    sub->add_option("--to", opt->to, "End of the period, RFC 3339, exclusive (rounded down to a minute)")->required();
    sub->add_option("--format,-o", opt->format, "table, csv, json or yaml")
        ->check(CLI::IsMember({"table", "csv", "json", "yaml"}))
        ->capture_default_str();
    sub->add_option("--timeout", opt->timeout, "Timeout of each query")->capture_default_str();
  };
  CLI::App* showback = cmd->add_subcommand(
      "showback", "GPU-hours and cost per business group, owner or workload, with low-utilisation and serving-floor hours");
  common(showback);
  showback->add_option("--level", opt->level, "Rows per group (and pool), owner or workload")
      ->check(CLI::IsMember({"group", "owner", "workload"}))
      ->capture_default_str();
  showback->callback([chosen] { *chosen = Report::Showback; });
  CLI::App* k = cmd->add_subcommand("kpis", "Allocation rate, borrow rate and idle waste per pool and per group on a pool");
  common(k);
  k->callback([chosen] { *chosen = Report::Kpis; });
  CLI::App* board = cmd->add_subcommand(
      "leaderboard", "Business groups ranked by idle-waste share within each class of devices (model, partition, sharing)");
  common(board);
  board->add_option("--min-gpu-hours", opt->min_gpu_hours, "Groups with fewer judged GPU-hours are listed unranked")
      ->check(finite_range(0, 1e12))
      ->capture_default_str();
  board->callback([chosen] { *chosen = Report::Leaderboard; });
  CLI::App* review = cmd->add_subcommand(
      "review", "What to change in the quotas: unused guarantees, constant borrowing, long pending, orphans, "
                "alerts that keep re-opening; each naming the policy and the evidence");
  common(review);
  review->add_option("--store", opt->store, "The scanner's store, for alerts that keep re-opening (read only)");
  review->callback([chosen] { *chosen = Report::Review; });
  return {cmd, [opt, chosen] { return run_report(*opt, *chosen); }};
}

}  // namespace gpubank::cli
