#include "twin/trace/alibaba.hpp"

#include <array>
#include <map>
#include <utility>

#include "core/quote.hpp"

namespace gpubank::twin::trace {

namespace {

constexpr std::array<std::string_view, 11> kColumns{"name",     "cpu_milli",     "memory_mib",    "num_gpu",
                                                    "gpu_milli", "gpu_spec",      "qos",           "pod_phase",
                                                    "creation_time", "deletion_time", "scheduled_time"};
constexpr std::size_t kShortHeader = 5;  // openb_pod_list_multigpu50.csv

enum Column : std::size_t {
  kName, kCpuMilli, kMemoryMib, kNumGpu, kGpuMilli, kGpuSpec, kQos, kPodPhase, kCreation, kDeletion, kScheduled
};

constexpr std::array<std::pair<AlibabaQos, std::string_view>, 4> kQosNames{{
    {AlibabaQos::LS, "LS"},
    {AlibabaQos::BE, "BE"},
    {AlibabaQos::Burstable, "Burstable"},
    {AlibabaQos::Guaranteed, "Guaranteed"},
}};
constexpr std::array<std::pair<AlibabaPodPhase, std::string_view>, 5> kPhaseNames{{
    {AlibabaPodPhase::Pending, "Pending"},
    {AlibabaPodPhase::Running, "Running"},
    {AlibabaPodPhase::Succeeded, "Succeeded"},
    {AlibabaPodPhase::Failed, "Failed"},
    {AlibabaPodPhase::Unknown, "Unknown"},
}};

template <class E, std::size_t N>
bool read_enum(const FieldReader& row, std::size_t column, const std::array<std::pair<E, std::string_view>, N>& names,
               std::optional<E>& out) {
  out.reset();
  if (row.empty(column)) return true;
  std::string allowed;
  for (const auto& n : names) {
    if (n.second == row.text(column)) {
      out = n.first;
      return true;
    }
    allowed += (allowed.empty() ? "" : ", ") + std::string(n.second);
  }
  row.report(column, kRuleEnum, row.name(column) + " must be one of " + allowed + ", got " + quote(row.text(column)));
  return false;
}

bool model_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

// gpu_spec: models separated by '|', each 1-63 letters, digits, '-', '_' or '.' (the
// policy API's GPU model format).
bool read_gpu_spec(const FieldReader& row, std::vector<std::string>& out) {
  out.clear();
  const std::string_view spec = row.text(kGpuSpec);
  if (spec.empty()) return true;
  std::size_t start = 0;
  while (true) {
    const std::size_t bar = spec.find('|', start);
    const std::string_view model = spec.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start);
    bool ok = !model.empty() && model.size() <= 63;
    for (const char c : model) ok = ok && model_char(c);
    if (!ok) {
      row.report(kGpuSpec, kRuleName,
                 "gpu_spec must list GPU models (1-63 letters, digits, '-', '_' or '.') separated by '|', got " +
                     quote(spec));
      return false;
    }
    out.emplace_back(model);
    if (bar == std::string_view::npos) return true;
    start = bar + 1;
  }
}

}  // namespace

std::string_view to_string(AlibabaQos qos) {
  for (const auto& n : kQosNames) {
    if (n.first == qos) return n.second;
  }
  return "?";
}

std::string_view to_string(AlibabaPodPhase phase) {
  for (const auto& n : kPhaseNames) {
    if (n.first == phase) return n.second;
  }
  return "?";
}

std::optional<std::vector<AlibabaPod>> read_alibaba_pods(std::string_view text, const std::string& file,
                                                         Diagnostics& diagnostics, const CsvLimits& limits) {
  TraceErrors errors(file, diagnostics, limits.max_errors);
  const auto table = read_csv(text, errors, limits);
  if (!table) return std::nullopt;
  const std::span<const std::string_view> full(kColumns);
  const bool short_header = table->header.size() == kShortHeader;
  if (!check_header(*table, short_header ? full.first(kShortHeader) : full, errors)) return std::nullopt;

  std::vector<AlibabaPod> pods;
  pods.reserve(table->rows.size());
  std::map<std::string, int, std::less<>> lines_by_name;
  for (const auto& record : table->rows) {
    const FieldReader row(*table, record, errors);
    AlibabaPod pod;
    pod.line = record.line;
    bool ok = row.required(kName);
    if (ok) {
      pod.name = record.fields[kName];
      if (auto [it, fresh] = lines_by_name.emplace(pod.name, record.line); !fresh) {
        row.report(kName, kRuleDuplicate,
                   "pod " + quote(pod.name) + " appears already on line " + std::to_string(it->second));
        ok = false;
      }
    }
    ok = row.integer(kCpuMilli, 0, kMaxAlibabaCpuMilli, pod.cpu_milli) && ok;
    ok = row.integer(kMemoryMib, 0, kMaxAlibabaMemoryMib, pod.memory_mib) && ok;
    ok = row.integer(kNumGpu, 0, kMaxAlibabaGpus, pod.num_gpu) && ok;
    ok = row.integer(kGpuMilli, 0, 1000, pod.gpu_milli) && ok;
    if (!short_header) {
      ok = read_gpu_spec(row, pod.gpu_spec) && ok;
      ok = read_enum(row, kQos, kQosNames, pod.qos) && ok;
      ok = read_enum(row, kPodPhase, kPhaseNames, pod.pod_phase) && ok;
      ok = row.optional_integer(kCreation, 0, kMaxAlibabaSeconds, pod.creation_time) && ok;
      ok = row.optional_integer(kDeletion, 0, kMaxAlibabaSeconds, pod.deletion_time) && ok;
      ok = row.optional_integer(kScheduled, 0, kMaxAlibabaSeconds, pod.scheduled_time) && ok;
    }
    if (ok) pods.push_back(std::move(pod));
  }
  if (errors.count() > 0) return std::nullopt;
  return pods;
}

}  // namespace gpubank::twin::trace
