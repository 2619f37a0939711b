#include "twin/run/scenario.hpp"

#include <algorithm>
#include <set>

#include "document/decode.hpp"
#include "document/loader.hpp"
#include "document/reader.hpp"
#include "policy/schema.hpp"

namespace gpubank::doc {

using twin::run::Scenario;
using twin::run::ScenarioWorkload;

template <>
struct Schema<ScenarioWorkload> {
  static void fields(ObjectReader& v, ScenarioWorkload& s) {
    v.required("name", s.name, DnsLabel{});
    v.optional("namespace", s.namespace_, DnsLabel{});
    v.required("businessGroup", s.business_group, DnsLabel{});
    v.required("resourcePool", s.resource_pool, DnsLabel{});
    v.required("gpus", s.gpus, Between{1, 100'000});
    v.optional("pods", s.pods, Between{1, 100'000});
    v.optional("workloadType", s.workload_type);
    v.optional("checkpointable", s.checkpointable);
    v.optional("checkpointInterval", s.checkpoint_interval, Positive{});
    v.optional("checkpointDuration", s.checkpoint_duration, NonNegative{});
    v.optional("checkpointFails", s.checkpoint_fails);
    v.optional("priorityClass", s.priority_class, DnsLabel{});
    v.optional("arrivalTime", s.arrival_time, NonNegative{});
    v.required("runTime", s.run_time, Positive{});
    v.optional("startupTime", s.startup_time, NonNegative{});
    v.optional("labels", s.labels);
    v.optional("deleteTime", s.delete_time, NonNegative{});
    v.optional("gpuMilli", s.gpu_milli, Between{1, 999});
    v.optional("gpuModels", s.gpu_models);
  }
};

template <>
struct EnumNames<twin::run::LeaseDecision> {
  static constexpr std::array<std::pair<twin::run::LeaseDecision, std::string_view>, 2> values{{
      {twin::run::LeaseDecision::Approved, "Approved"},
      {twin::run::LeaseDecision::Rejected, "Rejected"},
  }};
};

template <>
struct Schema<twin::run::Requester> {
  static void fields(ObjectReader& v, twin::run::Requester& s) {
    v.required("username", s.username);
    v.optional("groups", s.groups);
  }
};

template <>
struct Schema<twin::run::ScenarioLease> {
  static void fields(ObjectReader& v, twin::run::ScenarioLease& s) {
    v.required("name", s.name, DnsLabel{});
    v.optional("requestedAt", s.requested_at, NonNegative{});
    v.required("requestedBy", s.requested_by);
    v.required("decision", s.decision);
    v.required("decidedAt", s.decided_at, NonNegative{});
    v.required("decidedBy", s.decided_by);
    v.optional("reason", s.reason);
  }
};

template <>
struct Schema<twin::run::ScenarioGpuFault> {
  static void fields(ObjectReader& v, twin::run::ScenarioGpuFault& s) {
    v.required("node", s.node);
    v.required("gpu", s.gpu, Between{0, 127});
    v.optional("xid", s.xid, Between{1, 1000});
    v.optional("eccDoubleBit", s.ecc_double_bit, Between{0, 1'000'000});
    v.required("at", s.at, NonNegative{});
    v.optional("recoverAt", s.recover_at, NonNegative{});
  }
};

template <>
struct Schema<Scenario> {
  static void fields(ObjectReader& v, Scenario& s) {
    v.optional("start", s.start);
    v.required("workloads", s.workloads);
    v.optional("leases", s.leases);
    v.optional("gpuFaults", s.gpu_faults);
  }
};

}  // namespace gpubank::doc

namespace gpubank::twin::run {

namespace {

// Virtual time is int64 milliseconds; a year of scenario is plenty and keeps sums of
// times and GPU-milliseconds far from overflow.
constexpr std::int64_t kMaxMs = 366LL * 24 * 3600 * 1000;

void report(Diagnostics& out, const std::string& file, std::string_view rule, const std::string& path,
            std::string message) {
  out.push_back(Diagnostic{Severity::Error, std::string(rule), file, {}, {}, {}, path, std::move(message)});
}

}  // namespace

doc::ReadLimits ScenarioLimits::read_limits() const {
  doc::ReadLimits out;
  // The leases and GPU faults beside the workloads: room for 1,000 more entries.
  constexpr std::size_t kOthers = 1'000;
  out.max_nodes = (max_workloads + kOthers) * max_nodes_per_workload;
  out.max_bytes = std::max(out.max_bytes, (max_workloads + kOthers) * max_bytes_per_workload);
  return out;
}

std::optional<Scenario> parse_scenario(std::string_view text, const std::string& file, Diagnostics& diagnostics,
                                       const ScenarioLimits& limits) {
  std::vector<doc::Document> docs;
  const std::size_t before = diagnostics.size();
  const doc::ReadLimits read_limits = limits.read_limits();
  if (text.size() > read_limits.max_bytes) {
    report(diagnostics, file, doc::kRuleTooLarge, "",
           "the scenario has " + std::to_string(text.size()) + " bytes; the limit is " +
               std::to_string(read_limits.max_bytes) + " (" + std::to_string(limits.max_bytes_per_workload) +
               " per workload, at most " + std::to_string(limits.max_workloads) + " workloads)");
    return std::nullopt;
  }
  doc::read_yaml(text, file, docs, diagnostics, read_limits);
  if (has_errors(Diagnostics(diagnostics.begin() + static_cast<std::ptrdiff_t>(before), diagnostics.end()))) {
    return std::nullopt;
  }
  if (docs.size() != 1) {
    report(diagnostics, file, doc::kRuleRequired, "",
           docs.empty() ? "the file holds no scenario" : "expected one scenario, found " + std::to_string(docs.size()) +
                                                             " YAML documents");
    return std::nullopt;
  }
  const doc::Node* list = docs.front().root.find("workloads");
  if (list != nullptr && list->type == doc::NodeType::Sequence && list->items.size() > limits.max_workloads) {
    report(diagnostics, file, kRuleTooManyWorkloads, "workloads",
           "the scenario has " + std::to_string(list->items.size()) + " workloads; the limit is " +
               std::to_string(limits.max_workloads));
    return std::nullopt;
  }
  Scenario scenario;
  doc::SourceMap map;
  doc::DecodeContext ctx(file, "", "", diagnostics, &map);
  const bool decoded = doc::decode_value(doc::Field{ctx, docs.front().root, ""}, scenario);
  if (!decoded || ctx.error_count() > 0) return std::nullopt;
  std::set<std::string> names;
  for (std::size_t i = 0; i < scenario.workloads.size(); ++i) {
    const auto& w = scenario.workloads[i];
    const std::string path = "workloads[" + std::to_string(i) + "]";
    if (!names.insert(w.name).second) {
      ctx.report(kRuleDuplicateWorkload, map.find(path + ".name"), path + ".name",
                 "workload \"" + w.name + "\" is declared more than once");
    }
    if (w.gpus * w.pods > limits.max_gpus) {
      ctx.report(doc::kRuleOutOfRange, map.find(path + ".gpus"), path + ".gpus",
                 "gpus x pods is " + std::to_string(w.gpus * w.pods) + "; the limit is " + std::to_string(limits.max_gpus));
    }
    auto check_ms = [&](const Duration& d, const char* field) {
      if (d.milliseconds() > kMaxMs) {
        ctx.report(doc::kRuleOutOfRange, map.find(path + "." + field), path + "." + field,
                   "must be at most 8784h (a year), got " + d.to_string());
      }
    };
    check_ms(w.arrival_time, "arrivalTime");
    check_ms(w.run_time, "runTime");
    check_ms(w.startup_time, "startupTime");
    check_ms(w.checkpoint_duration, "checkpointDuration");
    if (w.checkpoint_interval) check_ms(*w.checkpoint_interval, "checkpointInterval");
    if (w.delete_time) {
      check_ms(*w.delete_time, "deleteTime");
      if (*w.delete_time < w.arrival_time) {
        ctx.report(doc::kRuleOutOfRange, map.find(path + ".deleteTime"), path + ".deleteTime",
                   "must not be before arrivalTime (" + w.arrival_time.to_string() + "), got " + w.delete_time->to_string());
      }
    }
    if (w.run_time.milliseconds() <= 0) {
      ctx.report(doc::kRuleOutOfRange, map.find(path + ".runTime"), path + ".runTime", "must be at least 1ms");
    }
    if (w.gpu_milli > 0 && w.gpus != 1) {
      ctx.report(doc::kRuleOutOfRange, map.find(path + ".gpuMilli"), path + ".gpuMilli",
                 "a shared fraction (gpuMilli) needs gpus: 1, got gpus: " + std::to_string(w.gpus));
    }
    if (!w.checkpointable && (w.checkpoint_interval || w.checkpoint_fails)) {
      ctx.report(doc::kRuleInvalidFormat, map.find(path + ".checkpointable"), path + ".checkpointable",
                 "checkpointInterval and checkpointFails need checkpointable: true");
    }
  }
  std::set<std::string> leases;
  for (std::size_t i = 0; i < scenario.leases.size(); ++i) {
    const auto& l = scenario.leases[i];
    const std::string path = "leases[" + std::to_string(i) + "]";
    if (!leases.insert(l.name).second) {
      ctx.report(kRuleDuplicateLease, map.find(path + ".name"), path + ".name",
                 "lease \"" + l.name + "\" is decided more than once");
    }
    if (l.decided_at < l.requested_at) {
      ctx.report(doc::kRuleOutOfRange, map.find(path + ".decidedAt"), path + ".decidedAt",
                 "must not be before requestedAt (" + l.requested_at.to_string() + "), got " + l.decided_at.to_string());
    }
    if (l.decided_at.milliseconds() > kMaxMs) {
      ctx.report(doc::kRuleOutOfRange, map.find(path + ".decidedAt"), path + ".decidedAt", "must be at most 8784h (a year)");
    }
  }
  for (std::size_t i = 0; i < scenario.gpu_faults.size(); ++i) {
    const auto& f = scenario.gpu_faults[i];
    const std::string path = "gpuFaults[" + std::to_string(i) + "]";
    if (f.recover_at && *f.recover_at <= f.at) {
      ctx.report(doc::kRuleOutOfRange, map.find(path + ".recoverAt"), path + ".recoverAt",
                 "must be after at (" + f.at.to_string() + "), got " + f.recover_at->to_string());
    }
    if (f.at.milliseconds() > kMaxMs || (f.recover_at && f.recover_at->milliseconds() > kMaxMs)) {
      ctx.report(doc::kRuleOutOfRange, map.find(path + ".at"), path + ".at", "must be at most 8784h (a year)");
    }
  }
  if (ctx.error_count() > 0) return std::nullopt;
  return scenario;
}

std::optional<Scenario> load_scenario(const std::string& path, Diagnostics& diagnostics, const ScenarioLimits& limits) {
  const doc::ReadLimits read_limits = limits.read_limits();
  auto text = doc::read_file(path, read_limits.max_bytes);
  if (!text) {
    const bool too_large = text.error().find("above the limit") != std::string::npos;
    report(diagnostics, path, too_large ? doc::kRuleTooLarge : doc::kRuleUnreadable, "", text.error());
    return std::nullopt;
  }
  return parse_scenario(*text, path, diagnostics, limits);
}

}  // namespace gpubank::twin::run
