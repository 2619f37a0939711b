// Fuzzes the exporter's join (attribution/enrich.hpp): what decides every attributed label a
// node serves, run on an upstream page (dcgm-exporter's text, from the network), the
// kubelet's PodResources answer and a metadata snapshot. The input is three parts split at
// lines "---":
//
//   1. the upstream page, parsed with metrics::parse_text (a page it refuses is skipped:
//      the exporter keeps its last page then);
//   2. PodResources devices, one per line: "<namespace> <pod> <container> <resource> <id>"
//      and optionally " <claim>" (a DRA claim device: driver gpu.nvidia.com);
//   3. snapshot pods, one per line: "<uid> <namespace> <name> <business_group> <owner_id>"
//      and optionally " <capacity_role> <checkpointable> <keep_running_until> <created_ms>".
//
// The node's inventory is fixed: GPU 0 whole, GPU 1 with MIG instances GI 1 and 9 (the UUIDs
// in the seeds), so that MIG-..., "::N" replicas and nvidia<i>/gi<g> forms resolve.
// Invariants: no crash; the joined page is valid exposition text (write_text accepts it: no
// duplicate series, no bad label), and reads back equal; every device sample carries exactly
// one mapping_status, one of the four, counted as the stats say; attribution labels only on
// mapped samples, the governance labels (capacity_role, ...) on none; at most one start time
// per snapshot pod; the join is deterministic.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "attribution/enrich.hpp"
#include "metrics/exposition.hpp"
#include "metrics/text_parser.hpp"

using namespace gpubank;

namespace {

std::vector<node::GpuDevice> inventory() {
  node::GpuDevice whole;
  whole.index = 0;
  whole.uuid = "GPU-5d6c58a2-7c52-3f4e-9f3a-0b1c2d3e4f50";
  whole.name = "NVIDIA H100 80GB HBM3";
  node::GpuDevice mig;
  mig.index = 1;
  mig.uuid = "GPU-0b4e2f8c-3d1a-4c5b-8e7f-6a5b4c3d2e1f";
  mig.name = "NVIDIA H100 80GB HBM3";
  mig.mig_enabled = true;
  mig.mig = {node::MigDevice{"MIG-2f0c1a4e-8b7d-5e6f-9a0b-1c2d3e4f5a6b", 1, 0, "3g.40gb", 42'949'672'960},
             node::MigDevice{"MIG-7a8b9c0d-1e2f-5a3b-8c4d-5e6f7a8b9c0d", 9, 0, "1g.10gb", 10'737'418'240}};
  return {whole, mig};
}

std::vector<std::string> split_parts(std::string_view text) {
  std::vector<std::string> parts(1);
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::string_view line = text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (line == "---" && parts.size() < 3) {
      parts.emplace_back();
    } else {
      parts.back().append(line);
      if (end != std::string_view::npos) parts.back() += '\n';
    }
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  parts.resize(3);
  return parts;
}

std::vector<std::vector<std::string>> lines_of_words(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (!w.empty()) out.push_back(std::move(w));
  }
  return out;
}

// Says which invariant broke, then stops the run (libFuzzer keeps the input).
[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "enrich_fuzzer: %s\n", why.c_str());
  __builtin_trap();
}

const metrics::Label* find(const metrics::Sample& s, std::string_view name) {
  for (const auto& l : s.labels) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  const auto parts = split_parts(std::string_view(reinterpret_cast<const char*>(data), size));
  auto upstream = metrics::parse_text(parts[0]);
  // A page the writer itself refuses (the parser is more lenient: a series twice) is not the
  // join's doing.
  if (!upstream.ok() || !metrics::write_text(*upstream).ok()) return 0;

  std::vector<node::DeviceAllocation> held;
  for (const auto& w : lines_of_words(parts[1])) {
    if (w.size() < 5) continue;
    node::DeviceAllocation a{w[0], w[1], w[2], w[3], w[4], {}, {}, {}, {}};
    if (w.size() > 5) {
      a.resource_name.clear();
      a.claim_name = w[5];
      a.claim_namespace = w[0];
      a.driver = "gpu.nvidia.com";
      a.pool = "node-a";
    }
    held.push_back(std::move(a));
  }
  attribution::NodeSnapshot snapshot{"node-a", 1, 1'700'000'000'000, {}};
  for (const auto& w : lines_of_words(parts[2])) {
    if (w.size() < 5) continue;
    attribution::PodMeta m;
    m.uid = w[0];
    m.namespace_name = w[1];
    m.name = w[2];
    m.node = "node-a";
    m.business_group = w[3];
    m.owner_id = w[4];
    if (w.size() > 7) {
      m.capacity_role = w[5];
      m.checkpointable = w[6];
      m.keep_running_until = w[7];
    }
    if (w.size() > 8) (void)std::from_chars(w[8].data(), w[8].data() + w[8].size(), m.created_ms);
    snapshot.pods.push_back(std::move(m));
  }
  std::sort(snapshot.pods.begin(), snapshot.pods.end(), [](const auto& a, const auto& b) { return a.uid < b.uid; });

  const auto devices = inventory();
  const attribution::NodeInfo info{"node-a", "h100", "H100", "full"};
  const attribution::EnrichResult r = attribution::enrich(*upstream, held, &snapshot, devices, info);

  auto text = metrics::write_text(r.exposition);
  if (!text.ok()) fail("the joined page is refused by the writer: " + text.error());
  auto again = metrics::parse_text(*text);
  if (!again.ok() || !(*again == r.exposition)) fail("the joined page does not read back as written");

  std::uint64_t counted = 0;
  for (const auto& f : r.exposition.families) {
    for (const auto& s : f.samples) {
      const metrics::Label* status = find(s, "mapping_status");
      if (status == nullptr) continue;
      int statuses = 0;
      for (const auto& l : s.labels) statuses += l.name == "mapping_status" ? 1 : 0;
      if (statuses != 1) fail(f.name + ": a sample with " + std::to_string(statuses) + " mapping_status labels");
      const std::string& v = status->value;
      if (v != "mapped" && v != "unknown" && v != "unallocated" && v != "mig-parent") fail("mapping_status " + v);
      if (v != "mapped" && (find(s, "business_group") != nullptr || find(s, "owner_id") != nullptr)) {
        fail(f.name + ": attribution on a sample that is " + v);
      }
      if (find(s, "UUID") != nullptr) ++counted;
    }
  }
  for (const auto& f : r.exposition.families) {
    for (const auto& s : f.samples) {
      if (find(s, "UUID") == nullptr) continue;
      for (const char* name : {"capacity_role", "checkpointable", "keep_running_until"}) {
        if (find(s, name) != nullptr) fail(f.name + ": a device sample with " + name);
      }
    }
  }
  if (const metrics::Family* starts = r.exposition.find("gpubank_pod_start_time_seconds");
      starts == nullptr || starts->samples.size() > snapshot.pods.size()) {
    fail("gpubank_pod_start_time_seconds missing, or more start times than pods");
  }
  std::uint64_t by_status = 0;
  for (const auto& [status, n] : r.stats.by_status) by_status += n;
  if (by_status != counted) fail("stats count " + std::to_string(by_status) + " device samples, the page has " + std::to_string(counted));

  const attribution::EnrichResult twice = attribution::enrich(*upstream, held, &snapshot, devices, info);
  if (!(twice.exposition == r.exposition)) fail("the join is not deterministic");
  return 0;
}
