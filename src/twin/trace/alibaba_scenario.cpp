#include "twin/trace/alibaba_scenario.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_set>

#include "twin/trace/seeded.hpp"

namespace gpubank::twin::trace {

namespace {

constexpr std::int64_t kMaxScenarioMs = 366LL * 24 * 3600 * 1000;  // the scenario checker's limit
constexpr std::int64_t kJitterMs = 3'600'000;
constexpr std::size_t kBaseNameLength = 48;

bool label_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

std::string to_label(std::string_view text, std::size_t max_length) {
  std::string out;
  for (const char c : text) {
    const char lower = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    out += label_char(lower) ? lower : '-';
  }
  const auto first = out.find_first_not_of('-');
  if (first == std::string::npos) return {};
  out = out.substr(first);
  if (out.size() > max_length) out.resize(max_length);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string hex8(std::uint64_t h) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(h & 0xffffffffU));
  return buf;
}

// `prefix` cut so that prefix + suffix is at most 63 characters (no '-' left at the cut).
std::string fit(std::string prefix, const std::string& suffix) {
  if (prefix.size() + suffix.size() > 63) prefix.resize(63 - suffix.size());
  while (!prefix.empty() && prefix.back() == '-') prefix.pop_back();
  return prefix + suffix;
}

// Makes `candidate` (a DNS label) unique among `taken` (see the header's naming rule) and
// takes it.
std::string take_unique(const std::string& candidate, std::string_view pod_name, std::uint64_t copy,
                        std::unordered_set<std::string>& taken) {
  if (taken.insert(candidate).second) return candidate;
  const std::string hash = "-" + hex8(mix64(hash_text(pod_name) ^ copy));
  if (std::string hashed = fit(candidate, hash); taken.insert(hashed).second) return hashed;
  for (std::int64_t n = 2;; ++n) {
    std::string numbered = fit(candidate, hash + "-" + std::to_string(n));
    if (taken.insert(numbered).second) return numbered;
  }
}

policy::WorkloadType workload_type_of(const std::optional<AlibabaQos>& qos) {
  if (qos == AlibabaQos::LS) return policy::WorkloadType::Inference;
  if (qos == AlibabaQos::BE) return policy::WorkloadType::Batch;
  return policy::WorkloadType::Training;
}

// A pod that passed the checks, with what the copies share.
struct Mapped {
  std::size_t index = 0;  // in the pod list
  std::int64_t arrival_ms = 0;
  std::int64_t run_ms = 0;
  std::string pool;
};

struct Entry {
  std::int64_t arrival_ms;
  std::int64_t copy;
  std::size_t index;
  run::ScenarioWorkload workload;
};

}  // namespace

bool is_dns_label(std::string_view s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  return std::all_of(s.begin(), s.end(), label_char);
}

std::string alibaba_pool_for_model(std::string_view model) {
  std::string out = "alibaba-";
  for (const char c : model) {
    const char lower = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    out += label_char(lower) ? lower : '-';
  }
  return out;
}

Expected<AlibabaScenario> alibaba_scenario(const std::vector<AlibabaPod>& pods, const TraceMapping& mapping) {
  if (mapping.groups.empty()) return Unexpected{"no business groups to assign"};
  std::int64_t total_weight = 0;
  std::set<std::string> group_names;
  for (const auto& g : mapping.groups) {
    if (!is_dns_label(g.name)) return Unexpected{"business group \"" + g.name + "\" is not a DNS-1123 label"};
    if (!group_names.insert(g.name).second) return Unexpected{"business group " + g.name + " is listed twice"};
    if (g.weight < 1 || g.weight > kMaxGroupWeight) {
      return Unexpected{"the weight of group " + g.name + " must be between 1 and 1000000000"};
    }
    total_weight += g.weight;
  }
  if (!is_dns_label(mapping.shared_pool)) return Unexpected{"shared pool \"" + mapping.shared_pool + "\" is not a DNS-1123 label"};
  if (!is_dns_label(mapping.default_pool)) {
    return Unexpected{"default pool \"" + mapping.default_pool + "\" is not a DNS-1123 label"};
  }
  if (mapping.days && (*mapping.days < 1 || *mapping.days > 366)) return Unexpected{"days must be between 1 and 366"};
  if (mapping.replication < 1 || mapping.replication > 1024) return Unexpected{"replication must be between 1 and 1024"};
  if (!(mapping.checkpointable_fraction >= 0 && mapping.checkpointable_fraction <= 1)) {
    return Unexpected{"checkpointable_fraction must be between 0 and 1"};
  }

  AlibabaScenario out;
  MappingReport& report = out.report;
  report.pods_read = static_cast<std::int64_t>(pods.size());
  std::optional<std::int64_t> first;
  for (const auto& p : pods) {
    if (p.creation_time && (!first || *p.creation_time < *first)) first = p.creation_time;
  }
  report.first_creation_s = first.value_or(0);
  auto skip = [&](std::string_view reason) { report.skipped[std::string(reason)] += 1; };

  std::vector<Mapped> mapped;
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const AlibabaPod& p = pods[i];
    if (p.num_gpu <= 0) {
      skip(kSkipCpuOnly);
      continue;
    }
    if (p.gpu_milli <= 0) {
      skip(kSkipZeroGpuMilli);
      continue;
    }
    const bool shared = p.gpu_milli < 1000;
    if (shared && p.num_gpu > 1) {
      skip(kSkipSharedMultiGpu);
      continue;
    }
    if (!p.creation_time) {
      skip(kSkipNoCreationTime);
      continue;
    }
    const std::int64_t arrival_s = *p.creation_time - report.first_creation_s;
    if (mapping.days && arrival_s >= *mapping.days * 86400) {
      skip(kSkipAfterDays);
      continue;
    }
    if (!p.deletion_time) {
      skip(kSkipNoDeletionTime);
      continue;
    }
    bool fallback = false;
    std::int64_t run_s = 0;
    if (p.scheduled_time) {
      run_s = *p.deletion_time - *p.scheduled_time;
    } else if (mapping.never_scheduled == NeverScheduled::Skip) {
      skip(kSkipNeverScheduled);
      continue;
    } else {
      run_s = *p.deletion_time - *p.creation_time;
      fallback = true;
    }
    if (run_s <= 0) {
      skip(kSkipNonPositiveRunTime);
      continue;
    }
    // Seconds are below ten years (the reader's bound): the products cannot overflow.
    const std::int64_t arrival_ms = arrival_s * 1000;
    const std::int64_t run_ms = run_s * 1000;
    if (arrival_ms + kJitterMs > kMaxScenarioMs || run_ms > kMaxScenarioMs) {
      skip(kSkipBeyondYear);
      continue;
    }
    std::string pool;
    if (shared) {
      pool = mapping.shared_pool;
    } else if (!p.gpu_spec.empty()) {
      bool invalid = false;
      for (const auto& model : p.gpu_spec) {
        std::string candidate = mapping.pool_for_model ? mapping.pool_for_model(model) : alibaba_pool_for_model(model);
        if (!is_dns_label(candidate)) {
          invalid = true;
          break;
        }
        if (!mapping.whole_gpu_pool || mapping.whole_gpu_pool(candidate)) {
          pool = std::move(candidate);
          break;
        }
      }
      if (invalid || pool.empty()) {
        skip(invalid ? kSkipInvalidPool : kSkipNoWholeGpuPool);
        continue;
      }
    } else {
      pool = mapping.default_pool;
    }
    if (fallback) report.fallback_run_time += 1;
    mapped.push_back(Mapped{i, arrival_ms, run_ms, std::move(pool)});
  }

  report.pods_mapped = static_cast<std::int64_t>(mapped.size());
  std::vector<Entry> entries;
  entries.reserve(mapped.size() * static_cast<std::size_t>(mapping.replication));
  std::unordered_set<std::string> taken;
  taken.reserve(entries.capacity() * 2);
  std::vector<std::string> base(mapped.size());
  for (std::int64_t copy = 0; copy < mapping.replication; ++copy) {
    for (std::size_t m = 0; m < mapped.size(); ++m) {
      const Mapped& mp = mapped[m];
      const AlibabaPod& p = pods[mp.index];
      const auto ucopy = static_cast<std::uint64_t>(copy);
      run::ScenarioWorkload w;
      if (copy == 0) {
        std::string label = to_label(p.name, kBaseNameLength);
        if (label.empty()) label = "pod";
        w.name = take_unique(label, p.name, ucopy, taken);
        base[m] = w.name;
        if (w.name != p.name) report.renamed += 1;
      } else {
        w.name = take_unique(fit(base[m], "-r" + std::to_string(copy)), p.name, ucopy, taken);
        if (w.name != p.name + "-r" + std::to_string(copy)) report.renamed += 1;
      }
      std::uint64_t pick = below(seeded_hash(mapping.seed, "group", p.name, ucopy), static_cast<std::uint64_t>(total_weight));
      for (const auto& g : mapping.groups) {
        if (pick < static_cast<std::uint64_t>(g.weight)) {
          w.business_group = g.name;
          break;
        }
        pick -= static_cast<std::uint64_t>(g.weight);
      }
      w.resource_pool = mp.pool;
      w.gpus = p.num_gpu;
      w.pods = 1;
      w.gpu_milli = p.gpu_milli < 1000 ? p.gpu_milli : 0;
      w.gpu_models = p.gpu_spec;
      w.workload_type = workload_type_of(p.qos);
      if (w.workload_type == policy::WorkloadType::Training) {
        w.checkpointable =
            unit_interval(seeded_hash(mapping.seed, "checkpointable", p.name, ucopy)) < mapping.checkpointable_fraction;
      }
      const std::int64_t jitter =
          copy == 0 ? 0 : static_cast<std::int64_t>(below(seeded_hash(mapping.seed, "jitter", p.name, ucopy), kJitterMs));
      const std::int64_t arrival_ms = mp.arrival_ms + jitter;
      w.arrival_time = Duration(std::chrono::milliseconds(arrival_ms));
      w.run_time = Duration(std::chrono::milliseconds(mp.run_ms));
      const std::int64_t milli_seconds = p.num_gpu * (p.gpu_milli < 1000 ? p.gpu_milli : 1000) * (mp.run_ms / 1000);
      for (auto* totals : {&report.per_group[w.business_group], &report.per_pool[w.resource_pool]}) {
        totals->workloads += 1;
        totals->gpu_milli_seconds += milli_seconds;
      }
      entries.push_back(Entry{arrival_ms, copy, mp.index, std::move(w)});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.arrival_ms != b.arrival_ms) return a.arrival_ms < b.arrival_ms;
    if (a.copy != b.copy) return a.copy < b.copy;
    return a.index < b.index;
  });
  out.scenario.workloads.reserve(entries.size());
  for (auto& e : entries) out.scenario.workloads.push_back(std::move(e.workload));
  report.workloads = static_cast<std::int64_t>(out.scenario.workloads.size());
  return out;
}

std::string to_text(const MappingReport& report) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line("pods read: " + std::to_string(report.pods_read));
  line("pods mapped: " + std::to_string(report.pods_mapped));
  line("workloads: " + std::to_string(report.workloads));
  line("run time from the never-scheduled fallback: " + std::to_string(report.fallback_run_time));
  line("renamed: " + std::to_string(report.renamed));
  for (const auto& [reason, count] : report.skipped) line("skipped " + reason + ": " + std::to_string(count));
  char buf[64];
  for (const auto& [name, t] : report.per_group) {
    std::snprintf(buf, sizeof buf, "%.6g", t.gpu_seconds());
    line("group " + name + ": " + std::to_string(t.workloads) + " workloads, " + buf + " GPU-seconds");
  }
  for (const auto& [name, t] : report.per_pool) {
    std::snprintf(buf, sizeof buf, "%.6g", t.gpu_seconds());
    line("pool " + name + ": " + std::to_string(t.workloads) + " workloads, " + buf + " GPU-seconds");
  }
  return out;
}

}  // namespace gpubank::twin::trace
