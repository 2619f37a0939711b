#include "twin/kueue_perf/config.hpp"

#include <array>
#include <unordered_map>
#include <utility>

#include "document/decode.hpp"
#include "document/quantity_field.hpp"
#include "document/loader.hpp"
#include "document/reader.hpp"

namespace gpubank::twin::kueue_perf {
namespace {

// A quantity as upstream's string fields take it: "500m", "2", or a plain YAML number.
struct QuantityField {
  Quantity value;
};

// Fields of upstream's structs that only the TAS mode uses.
void reject_unsupported(doc::ObjectReader& v, std::initializer_list<std::string_view> keys) {
  const doc::Field& f = v.field();
  for (auto key : keys) {
    const doc::Node* n = v.raw(key);
    if (n == nullptr || n->type == doc::NodeType::Null) continue;
    const std::string path = f.path.empty() ? std::string(key) : f.path + "." + std::string(key);
    f.ctx.report(kRuleUnsupported, n->pos, path,
                 "\"" + std::string(key) +
                     "\" is part of Kueue's Topology Aware Scheduling tests, which the twin does not model");
  }
}

}  // namespace
}  // namespace gpubank::twin::kueue_perf

namespace gpubank::doc {

using twin::PreemptionPolicy;
using twin::kueue_perf::CohortSet;
using twin::kueue_perf::GeneratorConfig;
using twin::kueue_perf::QuantityField;
using twin::kueue_perf::QueuesSet;
using twin::kueue_perf::ResourceFlavorConfig;
using twin::kueue_perf::WorkloadsSet;
using twin::kueue_perf::WorkloadTemplate;

template <>
struct Codec<QuantityField> {
  static bool decode(const Field& f, QuantityField& out) { return decode_quantity(f, out.value); }
};

template <>
struct EnumNames<PreemptionPolicy> {
  static constexpr std::array<std::pair<PreemptionPolicy, std::string_view>, 4> values{{
      {PreemptionPolicy::Never, "Never"},
      {PreemptionPolicy::LowerPriority, "LowerPriority"},
      {PreemptionPolicy::LowerOrNewerEqualPriority, "LowerOrNewerEqualPriority"},
      {PreemptionPolicy::Any, "Any"},
  }};
};

// The field names, types and defaults of generator.go's structs. These schemas only
// decode (they use ObjectReader::raw and read quantities through locals).
template <>
struct Schema<WorkloadTemplate> {
  static void fields(ObjectReader& v, WorkloadTemplate& s) {
    v.required("className", s.class_name, DnsLabel{});
    v.optional("runtimeMs", s.runtime_ms, AtLeast{0});
    v.optional("priority", s.priority);
    QuantityField request;
    v.required("request", request);
    s.request = request.value;
    // generator.go builds a pod set of podCount pods only with tasLevel; a standard
    // workload gets the default pod set of one pod.
    int pod_count = 0;
    v.optional("podCount", pod_count, AtLeast{0});
    if (pod_count > 1) {
      const Field& f = v.field();
      const std::string path = f.path + ".podCount";
      f.ctx.report(twin::kueue_perf::kRuleIgnored, f.node.find("podCount")->pos, path,
                   "podCount " + std::to_string(pod_count) +
                       " is ignored without tasLevel, as upstream's generator does: the workload has one pod",
                   Severity::Warning);
    }
    twin::kueue_perf::reject_unsupported(v, {"tasConstraint", "tasLevel", "sliceSize"});
  }
};

template <>
struct Schema<WorkloadsSet> {
  static void fields(ObjectReader& v, WorkloadsSet& s) {
    v.required("count", s.count, AtLeast{0});
    v.optional("creationIntervalMs", s.creation_interval_ms, AtLeast{0});
    v.required("workloads", s.workloads);
  }
};

template <>
struct Schema<QueuesSet> {
  static void fields(ObjectReader& v, QueuesSet& s) {
    v.required("className", s.class_name, DnsLabel{});
    v.required("count", s.count, AtLeast{0});
    QuantityField nominal;
    v.required("nominalQuota", nominal);
    s.nominal_quota = nominal.value;
    std::optional<QuantityField> borrowing;
    v.optional("borrowingLimit", borrowing);
    if (borrowing) s.borrowing_limit = borrowing->value;
    v.optional("reclaimWithinCohort", s.reclaim_within_cohort);
    v.optional("withinClusterQueue", s.within_cluster_queue);
    v.optional("workloadsSets", s.workloads_sets);
  }
};

template <>
struct Schema<CohortSet> {
  static void fields(ObjectReader& v, CohortSet& s) {
    v.required("className", s.class_name, DnsLabel{});
    v.required("count", s.count, AtLeast{0});
    v.optional("queuesSets", s.queues_sets);
  }
};

template <>
struct Schema<ResourceFlavorConfig> {
  static void fields(ObjectReader& v, ResourceFlavorConfig& s) {
    v.required("name", s.name, DnsLabel{});
    twin::kueue_perf::reject_unsupported(v, {"nodeLabel", "topologyName"});
  }
};

template <>
struct Schema<GeneratorConfig> {
  static void fields(ObjectReader& v, GeneratorConfig& s) {
    twin::kueue_perf::reject_unsupported(v, {"topology"});
    v.optional("resourceFlavor", s.resource_flavor);
    v.required("cohorts", s.cohorts);
  }
};

}  // namespace gpubank::doc

namespace gpubank::twin::kueue_perf {
namespace {

// Size checks that need the whole config: totals of queues and workloads, and the bounds
// of ConfigLimits. Each finding names the field that crosses the limit.
class LimitChecker {
 public:
  LimitChecker(doc::DecodeContext& ctx, const doc::SourceMap& map, const ConfigLimits& limits)
      : ctx_(ctx), map_(map), limits_(limits) {}

  void check(const GeneratorConfig& config) {
    if (config.cohorts.empty()) {
      report(doc::kRuleRequired, "cohorts", "config must contain at least one cohort");
    }
    for (std::size_t ci = 0; ci < config.cohorts.size(); ++ci) {
      const CohortSet& cs = config.cohorts[ci];
      const std::string cpath = "cohorts[" + std::to_string(ci) + "]";
      // Expansion walks every cohort even when it holds no queue: a cohort count beyond the
      // queue limit is either over that limit or cohorts that generate nothing.
      if (cs.count > limits_.max_queues) {
        report(kRuleTooLarge, cpath + ".count",
               "the config would create " + std::to_string(cs.count) + " cohorts in this set; the limit is " +
                   std::to_string(limits_.max_queues) + " (each cohort needs a ClusterQueue)");
        continue;
      }
      for (std::size_t qi = 0; qi < cs.queues_sets.size(); ++qi) {
        const QueuesSet& qs = cs.queues_sets[qi];
        const std::string qpath = cpath + ".queuesSets[" + std::to_string(qi) + "]";
        if (!queues_over_) check_names(cs, qs, qi, qpath);
        check_quantity(qs.nominal_quota, qpath + ".nominalQuota", limits_.max_quota_cpus);
        if (qs.borrowing_limit) check_quantity(*qs.borrowing_limit, qpath + ".borrowingLimit", limits_.max_quota_cpus);
        const Wide queues = Wide{cs.count} * qs.count;
        if (!queues_over_ && total_queues_ + queues > limits_.max_queues) {
          queues_over_ = true;
          report(kRuleTooLarge, qpath + ".count",
                 "the config would create " + to_string(total_queues_ + queues) + " ClusterQueues (this set: " +
                     std::to_string(qs.count) + " queues x " + std::to_string(cs.count) +
                     " cohorts); the limit is " + std::to_string(limits_.max_queues));
        }
        total_queues_ += queues;
        for (std::size_t wi = 0; wi < qs.workloads_sets.size(); ++wi) {
          const WorkloadsSet& ws = qs.workloads_sets[wi];
          const std::string wpath = qpath + ".workloadsSets[" + std::to_string(wi) + "]";
          check_ms(ws.creation_interval_ms, wpath + ".creationIntervalMs");
          for (std::size_t ti = 0; ti < ws.workloads.size(); ++ti) {
            const WorkloadTemplate& t = ws.workloads[ti];
            const std::string tpath = wpath + ".workloads[" + std::to_string(ti) + "]";
            check_ms(t.runtime_ms, tpath + ".runtimeMs");
            check_request(t, tpath);
          }
          const Wide workloads = queues * ws.count * static_cast<Wide>(ws.workloads.size());
          if (!workloads_over_ && total_workloads_ + workloads > limits_.max_workloads) {
            workloads_over_ = true;
            report(kRuleTooLarge, wpath + ".count",
                   "the config would create " + to_string(total_workloads_ + workloads) +
                       " workloads (this set: " + std::to_string(ws.count) + " rounds x " +
                       std::to_string(ws.workloads.size()) + " templates x " + std::to_string(qs.count) +
                       " queues x " + std::to_string(cs.count) + " cohorts); the limit is " +
                       std::to_string(limits_.max_workloads));
          }
          total_workloads_ += workloads;
        }
      }
    }
  }

 private:
  __extension__ using Wide = __int128;  // products of four counts cannot overflow it

  static std::string to_string(Wide v) {
    if (v > Wide{1} << 62) return "more than 4611686018427387904";
    return std::to_string(static_cast<std::int64_t>(v));
  }

  void report(std::string_view rule, const std::string& path, std::string message) {
    ctx_.report(rule, map_.find(path), path, std::move(message));
  }

  // ClusterQueue names are also namespace names (DNS-1123 labels, at most 63
  // characters), and two sets of the same class names would generate the same queues;
  // upstream's runner fails on the API server's answer, here it is a finding.
  void check_names(const CohortSet& cs, const QueuesSet& qs, std::size_t qi, const std::string& qpath) {
    if (Wide{cs.count} * qs.count + static_cast<Wide>(seen_.size()) > limits_.max_queues) return;
    bool reported = false;
    for (std::int64_t c = 0; c < cs.count && !reported; ++c) {
      const std::string cohort = cohort_name(cs.class_name, c);
      for (std::int64_t q = 0; q < qs.count && !reported; ++q) {
        std::string name = cluster_queue_name(qs.class_name, qi, q, cohort);
        if (name.size() > 63) {
          report(kRuleNameTooLong, qpath + ".className",
                 "generated ClusterQueue name \"" + name + "\" is longer than 63 characters (it is also the "
                 "namespace of the queue's workloads)");
          reported = true;
        } else if (auto [it, inserted] = seen_.emplace(std::move(name), qpath); !inserted) {
          report(kRuleDuplicateName, qpath + ".className",
                 "generates ClusterQueue \"" + it->first + "\", which " + it->second + " generates too");
          reported = true;
        }
      }
    }
  }

  void check_ms(std::int64_t ms, const std::string& path) {
    if (ms > limits_.max_milliseconds) {
      report(doc::kRuleOutOfRange, path,
             "must be at most " + std::to_string(limits_.max_milliseconds) + " ms, got " + std::to_string(ms));
    }
  }

  void check_quantity(const Quantity& q, const std::string& path, std::int64_t max_cpus) {
    if (q.negative()) {
      report(doc::kRuleOutOfRange, path, "must not be negative, got " + q.to_string());
    } else if (q > Quantity::from_int(max_cpus)) {
      report(doc::kRuleOutOfRange, path,
             "must be at most " + std::to_string(max_cpus) + " cpus, got " + q.to_string());
    }
  }

  void check_request(const WorkloadTemplate& t, const std::string& path) {
    if (t.request.negative()) {
      report(doc::kRuleOutOfRange, path + ".request", "must not be negative, got " + t.request.to_string());
      return;
    }
    if (t.request > Quantity::from_int(limits_.max_request_cpus)) {
      report(doc::kRuleOutOfRange, path + ".request",
             "a workload may request at most " + std::to_string(limits_.max_request_cpus) + " cpus, got " +
                 t.request.to_string());
    }
  }

  doc::DecodeContext& ctx_;
  const doc::SourceMap& map_;
  const ConfigLimits& limits_;
  Wide total_queues_ = 0, total_workloads_ = 0;
  bool queues_over_ = false, workloads_over_ = false;
  std::unordered_map<std::string, std::string> seen_;  // ClusterQueue name -> queue set path
};

}  // namespace

std::string cohort_name(std::string_view cohort_class, std::int64_t index) {
  return std::string(cohort_class) + "-" + std::to_string(index);
}

std::string cluster_queue_name(std::string_view queue_class, std::size_t queue_set_index, std::int64_t index,
                               std::string_view cohort) {
  std::string out(queue_class);
  out += '-';
  out += std::to_string(queue_set_index);
  out += '-';
  out += std::to_string(index);
  out += '-';
  out += cohort;
  return out;
}

std::string workload_name(std::string_view workload_class, std::size_t workloads_set_index, std::int64_t round,
                          std::size_t template_index) {
  std::string out(workload_class);
  out += '-';
  out += std::to_string(workloads_set_index);
  out += '-';
  out += std::to_string(round);
  out += '-';
  out += std::to_string(template_index);
  return out;
}

std::optional<GeneratorConfig> parse_generator_config(std::string_view text, const std::string& file,
                                                      Diagnostics& diagnostics, const ConfigLimits& limits) {
  std::vector<doc::Document> docs;
  const std::size_t before = diagnostics.size();
  doc::read_yaml(text, file, docs, diagnostics);
  if (has_errors(Diagnostics(diagnostics.begin() + static_cast<std::ptrdiff_t>(before), diagnostics.end()))) {
    return std::nullopt;
  }
  if (docs.size() != 1) {
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(doc::kRuleRequired), file, {}, {}, {}, {},
                                     docs.empty() ? "the file holds no generator config"
                                                  : "expected one generator config, found " +
                                                        std::to_string(docs.size()) + " YAML documents"});
    return std::nullopt;
  }
  GeneratorConfig config;
  config.file = file;
  doc::SourceMap map;
  doc::DecodeContext ctx(file, "", "", diagnostics, &map);
  const bool decoded = doc::decode_value(doc::Field{ctx, docs.front().root, ""}, config);
  if (!decoded || ctx.error_count() > 0) return std::nullopt;
  LimitChecker(ctx, map, limits).check(config);
  if (ctx.error_count() > 0) return std::nullopt;
  return config;
}

std::optional<GeneratorConfig> load_generator_config(const std::string& path, Diagnostics& diagnostics,
                                                     const ConfigLimits& limits) {
  const doc::ReadLimits read_limits;
  auto text = doc::read_file(path, read_limits.max_bytes);
  if (!text) {
    const bool too_large = text.error().find("above the limit") != std::string::npos;
    diagnostics.push_back(Diagnostic{Severity::Error,
                                     std::string(too_large ? doc::kRuleTooLarge : doc::kRuleUnreadable), path,
                                     {}, {}, {}, {}, text.error()});
    return std::nullopt;
  }
  return parse_generator_config(*text, path, diagnostics, limits);
}

}  // namespace gpubank::twin::kueue_perf
