// Fuzzes what the low-utilisation scanner reads from outside: an alert record from the
// store's audit log (alert_from_json) and Prometheus' answers (read_prometheus_query, then
// facts_from under every query name), then judges and steps what was read. Whatever the
// input: no crash, no undefined behaviour; an error is one line of UTF-8 naming where it
// is; an alert that reads back writes back to the same alert; facts are one per workload,
// sorted, with finite non-negative GPU counts; a scan step opens at most one alert per
// workload.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "core/utf8.hpp"
#include "governance/alerts.hpp"
#include "governance/queries.hpp"
#include "policy/policy_set.hpp"
#include "serving/signals.hpp"

using namespace gpubank;
using namespace gpubank::governance;

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "\nscan_record_fuzzer: %s\n%s\n", what, detail.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

void check_error(const std::string& message, std::string_view prefix) {
  if (message.empty() || message.find('\n') != std::string::npos || !is_utf8(message) ||
      !message.starts_with(prefix)) {
    fail("an error is not one line naming where it is", message);
  }
}

const std::vector<ScanPolicy>& policies() {
  static const std::vector<ScanPolicy> out = [] {
    const char* env = std::getenv("GPUBANK_SOURCE_DIR");
    const std::string root = env != nullptr ? env : GPUBANK_DEFAULT_SOURCE_DIR;
    return scan_policies(policy::load_policy_set({root + "/examples/policies"}));
  }();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 256 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);

  // The record.
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_discarded()) {
    auto alert = alert_from_json(j);
    if (!alert) {
      check_error(alert.error(), "alert");
    } else {
      auto again = alert_from_json(nlohmann::json::parse(to_json(*alert).dump()));
      if (!again || !(*again == *alert)) fail("an alert does not read back as itself", to_json(*alert).dump());
    }
  }

  // Prometheus' answers.
  auto samples = serving::read_prometheus_query(text);
  if (!samples) return 0;
  for (const char* name : {"allocations", "starts", "borrowing", "gpu_utilization", "memory_utilization",
                           "power_fraction"}) {
    Answers answers;
    answers[name] = *samples;
    auto facts = facts_from(answers, policies());
    if (!facts) {
      check_error(facts.error(), name);
      continue;
    }
    std::vector<Observed> observed;
    std::string last;
    for (const WorkloadFacts& w : *facts) {
      if (!observed.empty() && !(last < w.workload_uid)) fail("facts are not sorted and unique", w.workload_uid);
      last = w.workload_uid;
      if (!std::isfinite(w.gpus) || w.gpus < 0) fail("a GPU count is not finite and non-negative", w.workload_uid);
      observed.push_back({w, assess(w, policies(), 1'764'000'000'000)});
    }
    const ScanResult r = step({}, {}, observed, 1'764'000'000'000);
    std::set<std::string> detected;
    for (const Transition& t : r.transitions) {
      if (t.action == "Detected" && !detected.insert(t.alert.workload_uid).second) {
        fail("two alerts opened for one workload", t.alert.workload_uid);
      }
    }
  }
  return 0;
}
