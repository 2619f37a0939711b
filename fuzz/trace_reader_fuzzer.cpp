// Fuzzes the trace readers (src/twin/trace): the first byte selects the reader, the rest
// is the file's text. 'c': the CSV tokenizer alone; 'a': Alibaba pods, then the mapping
// (replicated twice) whose names must be unique DNS labels and whose two runs must agree;
// 'v': Philly VCs; 'n': Philly node sequence, then its demand curve against two fixed VCs
// and the workloads of its first day, which must add up to the curve's levels; 'h': Helios
// GPU numbers; 'z': Azure LLM requests, then a one-day diurnal repeat (sorted, the same
// twice). Other first bytes pick a reader by value. Invalid input must only produce
// findings (a reader that returns nothing without one is a bug).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "twin/trace/alibaba.hpp"
#include "twin/trace/alibaba_scenario.hpp"
#include "twin/trace/azure_llm.hpp"
#include "twin/trace/csv.hpp"
#include "twin/trace/helios.hpp"
#include "twin/trace/philly.hpp"

using namespace gpubank;
using namespace gpubank::twin::trace;

namespace {

template <class T>
void expect_findings(const T& result, const Diagnostics& d) {
  if (!result && !has_errors(d)) __builtin_trap();  // rejected without saying why
}

void alibaba(std::string_view text, const CsvLimits& limits) {
  Diagnostics d;
  const auto pods = read_alibaba_pods(text, "f.csv", d, limits);
  expect_findings(pods, d);
  if (!pods) return;
  TraceMapping m;
  m.groups = {{"a", 2}, {"b", 1}};
  m.replication = 2;
  const auto one = alibaba_scenario(*pods, m);
  const auto two = alibaba_scenario(*pods, m);
  if (!one.ok() || !two.ok()) __builtin_trap();  // the mapping itself is valid
  if (one->scenario.workloads.size() != two->scenario.workloads.size()) __builtin_trap();
  std::set<std::string> names;
  for (std::size_t i = 0; i < one->scenario.workloads.size(); ++i) {
    const auto& w = one->scenario.workloads[i];
    if (!is_dns_label(w.name) || !names.insert(w.name).second) __builtin_trap();
    if (w.name != two->scenario.workloads[i].name || w.arrival_time != two->scenario.workloads[i].arrival_time) {
      __builtin_trap();
    }
    if (w.run_time.milliseconds() <= 0 || w.arrival_time.milliseconds() < 0) __builtin_trap();
  }
}

void philly_sequence(std::string_view text, const CsvLimits& limits) {
  Diagnostics d;
  const auto samples = read_philly_node_sequence(text, "f.csv", d, limits);
  expect_findings(samples, d);
  if (!samples) return;
  const auto curve = philly_demand_curve({{"x", 3}, {"y", 1}}, *samples, 7 * 1440);
  if (!curve.ok()) return;
  PhillyScenarioOptions o;
  o.days = 1;
  o.resolution_minutes = 10;
  const auto out = philly_scenario(*curve, o);
  if (!out.ok()) __builtin_trap();
  std::int64_t levels = 0, jobs = 0;
  const std::int64_t minutes = std::min<std::int64_t>(static_cast<std::int64_t>(curve->minutes()), 1440);
  for (const auto& vc : out->levels) {
    for (std::size_t b = 0; b < vc.size(); ++b) {
      levels += vc[b] * std::min<std::int64_t>(10, minutes - static_cast<std::int64_t>(b) * 10);
    }
  }
  for (const auto& g : out->per_group) jobs += g.second.node_minutes;
  if (levels != jobs) __builtin_trap();
}

void azure(std::string_view text, const CsvLimits& limits) {
  Diagnostics d;
  const auto requests = read_azure_llm(text, "f.csv", d, limits);
  expect_findings(requests, d);
  if (!requests) return;
  const auto one = diurnal_repeat(*requests, 1, default_diurnal_curve(), 3);
  const auto two = diurnal_repeat(*requests, 1, default_diurnal_curve(), 3);
  if (!one.ok() || !two.ok() || one->size() != two->size()) __builtin_trap();
  for (std::size_t i = 0; i < one->size(); ++i) {
    if ((*one)[i].offset_ns != (*two)[i].offset_ns) __builtin_trap();
    if (i > 0 && (*one)[i].offset_ns < (*one)[i - 1].offset_ns) __builtin_trap();
    if ((*one)[i].t_ms < 0 || (*one)[i].t_ms >= 86'400'000) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 64 * 1024) return 0;
  const char selector = static_cast<char>(data[0]);
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  CsvLimits limits;
  limits.max_rows = 2000;
  limits.max_errors = 20;
  Diagnostics d;
  switch (selector == 'c' || selector == 'a' || selector == 'v' || selector == 'n' || selector == 'h' || selector == 'z'
              ? selector
              : "cavnhz"[data[0] % 6]) {
    case 'c': {
      TraceErrors errors("f.csv", d, limits.max_errors);
      const auto table = read_csv(text, errors, limits);
      if (!table && errors.count() == 0) __builtin_trap();
      if (table) {
        for (const auto& row : table->rows) {
          if (row.fields.size() != table->header.size() || row.columns.size() != row.fields.size()) __builtin_trap();
        }
      }
      if (d.size() > limits.max_errors + 1) __builtin_trap();
      break;
    }
    case 'a': alibaba(text, limits); break;
    case 'v': {
      const auto vcs = read_philly_vcs(text, "f.csv", d, limits);
      expect_findings(vcs, d);
      break;
    }
    case 'n': philly_sequence(text, limits); break;
    case 'h': {
      const auto numbers = read_helios_gpu_numbers(text, "f.csv", d, limits);
      expect_findings(numbers, d);
      break;
    }
    case 'z': azure(text, limits); break;
    default: break;
  }
  return 0;
}
