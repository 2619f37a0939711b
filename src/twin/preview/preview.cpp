#include "twin/preview/preview.hpp"

#include <cmath>
#include <future>
#include <mutex>
#include <cstdio>
#include <map>
#include <sstream>

#include "policy/decode.hpp"
#include "policy/validate.hpp"
#include "twin/live/resume.hpp"
#include "twin/live/serving_report.hpp"
#include "twin/run/engine.hpp"
#include "twin/run/summary.hpp"

namespace gpubank::twin::preview {

namespace {

using Json = nlohmann::ordered_json;
constexpr double kMsPerHour = 3'600'000.0;

struct RunFigures {
  std::map<std::pair<std::string, std::string>, Figures> by_pair;
  std::map<std::string, live::ServingOutcome> services;
  std::string error;
};

Figures figures(const run::GroupStats& g) {
  Figures f;
  f.used_gpu_hours = static_cast<double>(g.used_gpu_ms) / kMsPerHour;
  f.borrowed_gpu_hours = static_cast<double>(g.borrowed_gpu_ms) / kMsPerHour;
  f.lent_gpu_hours = static_cast<double>(g.lent_gpu_ms) / kMsPerHour;
  f.loss_gpu_hours = static_cast<double>(g.loss_gpu_ms) / kMsPerHour;
  f.workloads = g.workloads;
  f.admitted = g.admitted;
  f.reclaims = g.reclaims;
  f.stops = g.stops;
  f.wait_p50_ms = run::percentile(g.waits_ms, 50);
  f.wait_p90_ms = run::percentile(g.waits_ms, 90);
  f.wait_p99_ms = run::percentile(g.waits_ms, 99);
  return f;
}

RunFigures run_one(const policy::PolicySet& policies, const std::shared_ptr<const policy::PolicySet>& work_from,
                   const Work& work, const std::function<void(std::int64_t)>& progress) {
  RunFigures out;
  run::RunResult stats;
  if (work.scenario) {
    run::RunOptions options;
    options.inventory = work.inventory;
    options.retain = false;
    stats = run::run_scenario(policies, *work.scenario, options);
    if (!stats.ok()) {
      out.error = stats.diagnostics.empty() ? "the run stopped" : stats.diagnostics.front().to_string();
      return out;
    }
  } else {
    live::DayOptions day = work.day;
    day.work_from = work_from;
    day.governance = false;
    auto services = live::run_serving_day(policies, day, work.inventory, progress, nullptr, &stats);
    if (!services) {
      out.error = services.error();
      return out;
    }
    for (auto& s : *services) out.services.emplace(s.policy, std::move(s));
  }
  for (const run::GroupStats& g : stats.groups) out.by_pair[{g.business_group, g.pool}] = figures(g);
  return out;
}

std::vector<Change> changes(const policy::PolicySet& current, const policy::PolicySet& proposed) {
  std::map<std::string, nlohmann::json> before, after;
  for (const policy::PolicyObject& o : current.policies()) before[o.ref()] = encode_policy(o)["spec"];
  for (const policy::PolicyObject& o : proposed.policies()) after[o.ref()] = encode_policy(o)["spec"];
  std::vector<Change> out;
  for (const auto& [ref, spec] : before) {
    const auto it = after.find(ref);
    if (it == after.end()) {
      out.push_back({ref, "removed", nlohmann::json()});
    } else if (it->second != spec) {
      out.push_back({ref, "changed", nlohmann::json::diff(spec, it->second)});
    }
  }
  for (const auto& [ref, spec] : after) {
    if (!before.contains(ref)) out.push_back({ref, "added", nlohmann::json()});
  }
  return out;
}

Json figures_json(const std::optional<Figures>& f) {
  if (!f) return nullptr;
  Json j = Json::object();
  j["usedGpuHours"] = f->used_gpu_hours;
  j["borrowedGpuHours"] = f->borrowed_gpu_hours;
  j["lentGpuHours"] = f->lent_gpu_hours;
  j["recomputeLossGpuHours"] = f->loss_gpu_hours;
  j["workloads"] = f->workloads;
  j["admitted"] = f->admitted;
  j["reclaims"] = f->reclaims;
  j["stops"] = f->stops;
  j["queueWaitP50Seconds"] = static_cast<double>(f->wait_p50_ms) / 1000.0;
  j["queueWaitP90Seconds"] = static_cast<double>(f->wait_p90_ms) / 1000.0;
  j["queueWaitP99Seconds"] = static_cast<double>(f->wait_p99_ms) / 1000.0;
  return j;
}

// proposed - current, field by field (both present only).
Json delta_json(const std::optional<Figures>& a, const std::optional<Figures>& b) {
  if (!a || !b) return nullptr;
  const Json x = figures_json(a), y = figures_json(b);
  Json d = Json::object();
  for (const auto& [key, value] : x.items()) {
    if (value.is_number_integer()) {
      d[key] = y[key].get<std::int64_t>() - value.get<std::int64_t>();
    } else {
      d[key] = y[key].get<double>() - value.get<double>();
    }
  }
  return d;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string signed_fixed(double v, int digits) {
  if (std::abs(v) < 0.5 * std::pow(10.0, -digits)) return "0";
  return (v > 0 ? "+" : "") + fixed(v, digits);
}

}  // namespace

Expected<Preview> run_preview(const policy::PolicySet& current, const policy::PolicySet& proposed, const Work& work,
                              const std::function<void(const std::string&, std::int64_t)>& progress) {
  Preview p;
  p.current_version = live::policy_version(current);
  p.proposed_version = live::policy_version(proposed);
  p.changes = changes(current, proposed);
  p.findings = proposed.diagnostics();
  const Diagnostics checks = policy::validate(proposed);
  p.findings.insert(p.findings.end(), checks.begin(), checks.end());
  p.refused = has_errors(p.findings);
  if (work.scenario) {
    p.work = work.scenario_name.empty() ? std::string("a scenario") : work.scenario_name;
  } else {
    p.work = "seeded day (seed " + std::to_string(work.day.seed) + ", " + std::to_string(work.day.hours) + " h, serving: " +
             (work.day.serving_model == live::DayOptions::ServingModel::Fluid ? "fluid model" : "every request") +
             (work.day.llm_trace.empty() ? std::string() : ", requests from " + work.day.llm_trace) + ")";
  }
  if (p.refused) return p;

  // The day's work is the policies in force's, under both sets. The two runs share
  // nothing mutable (each has its own platform; the sets and the inventory are read only),
  // so they run side by side: the proposal's on a thread of its own.
  const auto work_from = std::make_shared<const policy::PolicySet>(current);
  std::mutex progress_mu;
  auto told = [&](const char* side) {
    return [&, side](std::int64_t h) {
      if (!progress) return;
      std::lock_guard lock(progress_mu);
      progress(side, h);
    };
  };
  auto proposed_run = std::async(std::launch::async, [&] { return run_one(proposed, work_from, work, told("proposed")); });
  const RunFigures a = run_one(current, work_from, work, told("current"));
  const RunFigures b = proposed_run.get();
  p.current_error = a.error;
  p.proposed_error = b.error;
  if (!a.error.empty()) return Unexpected{"the policies in force do not run: " + a.error};

  std::map<std::pair<std::string, std::string>, Row> rows;
  for (const auto& [key, f] : a.by_pair) {
    rows[key].business_group = key.first;
    rows[key].pool = key.second;
    rows[key].current = f;
  }
  for (const auto& [key, f] : b.by_pair) {
    rows[key].business_group = key.first;
    rows[key].pool = key.second;
    rows[key].proposed = f;
  }
  for (auto& [key, r] : rows) p.rows.push_back(std::move(r));

  std::map<std::string, ServiceRow> services;
  for (const auto* side : {&a, &b}) {
    for (const auto& [name, s] : side->services) {
      ServiceRow& r = services[name];
      r.policy = s.policy;
      r.business_group = s.business_group;
      r.pool = s.pool;
      r.ttft_target_ms = s.ttft_target_ms;
      const std::optional<double> attainment =
          s.ttft_target_ms > 0 && s.minutes > 0 ? std::optional<double>(s.attainment()) : std::nullopt;
      (side == &a ? r.current_attainment : r.proposed_attainment) = attainment;
      (side == &a ? r.current_gpu_hours : r.proposed_gpu_hours) = s.inference_gpu_hours;
    }
  }
  for (auto& [name, r] : services) p.services.push_back(std::move(r));
  return p;
}

Json to_json(const Preview& p) {
  Json j = Json::object();
  j["work"] = p.work;
  j["currentPolicyVersion"] = p.current_version;
  j["proposedPolicyVersion"] = p.proposed_version;
  Json changes = Json::array();
  for (const Change& c : p.changes) {
    Json x = Json::object();
    x["object"] = c.object;
    x["change"] = c.change;
    if (!c.patch.is_null()) x["patch"] = c.patch;
    changes.push_back(std::move(x));
  }
  j["changes"] = std::move(changes);
  Json findings = Json::array();
  for (const Diagnostic& d : p.findings) {
    Json x = Json::object();
    x["severity"] = to_string(d.severity);
    x["rule"] = d.rule;
    if (!d.kind.empty()) x["object"] = d.kind + "/" + d.name;
    if (!d.path.empty()) x["field"] = d.path;
    x["message"] = d.message;
    findings.push_back(std::move(x));
  }
  j["findings"] = std::move(findings);
  j["refused"] = p.refused;
  if (!p.proposed_error.empty()) j["proposedRunError"] = p.proposed_error;
  Json rows = Json::array();
  for (const Row& r : p.rows) {
    Json x = Json::object();
    x["businessGroup"] = r.business_group;
    x["pool"] = r.pool;
    x["current"] = figures_json(r.current);
    x["proposed"] = figures_json(r.proposed);
    x["difference"] = delta_json(r.current, r.proposed);
    rows.push_back(std::move(x));
  }
  j["groups"] = std::move(rows);
  Json services = Json::array();
  for (const ServiceRow& s : p.services) {
    Json x = Json::object();
    x["policy"] = s.policy;
    x["businessGroup"] = s.business_group;
    x["pool"] = s.pool;
    x["ttftTargetSeconds"] = static_cast<double>(s.ttft_target_ms) / 1000.0;
    x["current"] = Json{{"sloAttainment", s.current_attainment ? Json(*s.current_attainment) : Json(nullptr)},
                        {"gpuHours", s.current_gpu_hours}};
    x["proposed"] = Json{{"sloAttainment", s.proposed_attainment ? Json(*s.proposed_attainment) : Json(nullptr)},
                         {"gpuHours", s.proposed_gpu_hours}};
    services.push_back(std::move(x));
  }
  j["services"] = std::move(services);
  return j;
}

std::string to_text(const Preview& p) {
  std::ostringstream out;
  out << "impact preview over the " << p.work << "\n";
  out << "policies in force " << p.current_version.substr(0, 12) << ", proposed " << p.proposed_version.substr(0, 12)
      << "\n";
  if (p.changes.empty()) out << "the proposal changes nothing\n";
  for (const Change& c : p.changes) {
    out << "  " << c.change << " " << c.object;
    if (c.change == "changed") {
      std::string paths;
      for (const auto& op : c.patch) paths += (paths.empty() ? "" : ", ") + op.value("path", std::string());
      out << ": " << paths;
    }
    out << "\n";
  }
  for (const Diagnostic& d : p.findings) out << d.to_string() << "\n";
  if (p.refused) {
    out << "the proposal is refused: it breaks the checks above; nothing was run\n";
    return out.str();
  }
  if (!p.proposed_error.empty()) out << "the proposal's run stopped: " << p.proposed_error << "\n";
  out << "\nper group and pool: current -> proposed (difference)\n";
  auto cell = [](const std::optional<Figures>& a, const std::optional<Figures>& b, auto field, int digits) {
    const std::string x = a ? fixed(field(*a), digits) : "-";
    const std::string y = b ? fixed(field(*b), digits) : "-";
    std::string s = x + " -> " + y;
    if (a && b) s += " (" + signed_fixed(field(*b) - field(*a), digits) + ")";
    return s;
  };
  for (const Row& r : p.rows) {
    out << r.business_group << " @ " << r.pool << "\n";
    out << "  queue wait p50/p90/p99 (min): "
        << cell(r.current, r.proposed, [](const Figures& f) { return f.wait_p50_ms / 60000.0; }, 1) << " / "
        << cell(r.current, r.proposed, [](const Figures& f) { return f.wait_p90_ms / 60000.0; }, 1) << " / "
        << cell(r.current, r.proposed, [](const Figures& f) { return f.wait_p99_ms / 60000.0; }, 1) << "\n";
    out << "  GPU-hours used " << cell(r.current, r.proposed, [](const Figures& f) { return f.used_gpu_hours; }, 1)
        << ", borrowed " << cell(r.current, r.proposed, [](const Figures& f) { return f.borrowed_gpu_hours; }, 1)
        << ", lent " << cell(r.current, r.proposed, [](const Figures& f) { return f.lent_gpu_hours; }, 1) << "\n";
    out << "  reclaims " << cell(r.current, r.proposed, [](const Figures& f) { return static_cast<double>(f.reclaims); }, 0)
        << ", stops " << cell(r.current, r.proposed, [](const Figures& f) { return static_cast<double>(f.stops); }, 0)
        << ", recompute loss (GPU-h) "
        << cell(r.current, r.proposed, [](const Figures& f) { return f.loss_gpu_hours; }, 1) << "\n";
  }
  if (!p.services.empty()) out << "\ninference services: TTFT p95 SLO attainment, GPU-hours\n";
  for (const ServiceRow& s : p.services) {
    auto pct = [](const std::optional<double>& v) { return v ? fixed(100 * *v, 1) + " %" : std::string("-"); };
    out << "  " << s.policy << " (" << s.business_group << " @ " << s.pool << "): " << pct(s.current_attainment)
        << " -> " << pct(s.proposed_attainment) << ", " << fixed(s.current_gpu_hours, 1) << " -> "
        << fixed(s.proposed_gpu_hours, 1) << " GPU-h\n";
  }
  return out.str();
}

}  // namespace gpubank::twin::preview
