// Fuzzes the twin's cluster inventory readers and, on what they accept, the cluster model.
// Input starting with "sn," is an Alibaba node list (CSV), anything else an Inventory YAML
// file. Rejected input must come with an error finding; accepted input is built into a
// Cluster and driven through a fixed mix of requests, checking that placements take only
// free healthy units, that bind and release keep the counters exact, and that two clusters
// given the same calls decide the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "twin/cluster/cluster.hpp"
#include "twin/cluster/inventory.hpp"

using namespace gpubank;
using namespace gpubank::twin::cluster;

namespace {

std::int64_t total_free(const Cluster& c) {
  std::int64_t free = 0;
  for (const auto& pool : c.pool_names()) free += c.pool_usage(pool).free;
  return free;
}

// Places a fixed mix of shapes; the log of every decision.
std::string drive(Cluster& c) {
  std::string log;
  std::vector<std::string> bound;
  const std::int64_t free_before = total_free(c);
  int n = 0;
  for (int pods : {1, 2, 3}) {
    for (int gpus : {1, 2, 4, 8}) {
      for (int milli : {0, 300, 700}) {
        if (milli > 0 && gpus != 1) continue;
        PlacementRequest r;
        r.workload = "w" + std::to_string(n++);
        r.pods = pods;
        r.gpus_per_pod = gpus;
        r.gpu_milli = milli;
        const auto p = c.find(r);
        (void)c.explain(r);
        log += r.workload + (p ? ":" : ":-");
        if (!p) continue;
        if (static_cast<int>(p->pods.size()) != pods) __builtin_trap();
        for (const auto& pod : p->pods) {
          for (const UnitId u : pod.units) {
            const Unit& unit = c.unit(u);
            if (unit.node != pod.node || !unit.healthy || unit.whole) __builtin_trap();
            if (milli == 0 && unit.used_milli != 0) __builtin_trap();
            log += " " + std::to_string(u);
          }
        }
        if (!c.bind(r.workload, *p).ok()) __builtin_trap();
        bound.push_back(r.workload);
      }
    }
  }
  std::vector<PlacementRequest> pending(2);
  pending[0].gpus_per_pod = 4;
  pending[1].gpu_milli = 500;
  const FragmentationReport f = c.fragmentation(pending);
  if (f.total.stranded > f.total.free || f.total.shared_milli_stranded > f.total.shared_milli_left) __builtin_trap();
  if (c.gpu_count() > 0) {
    const auto hit = c.set_gpu_health(c.gpu(0).uuid, false, 79);
    if (!hit.ok()) __builtin_trap();
  }
  for (const auto& w : bound) {
    if (!c.release(w).ok() || !c.release(w).ok()) __builtin_trap();
  }
  const std::int64_t unhealthy = c.gpu_count() > 0 ? c.gpu(0).units : 0;
  if (total_free(c) != free_before - unhealthy) __builtin_trap();
  return log;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  InventoryLimits limits;
  limits.max_nodes = 64;
  limits.max_units = 2048;
  Diagnostics diagnostics;
  const bool csv = text.starts_with("sn,");
  auto inventory = csv ? alibaba_inventory(text, "fuzz.csv", diagnostics, limits)
                       : parse_inventory(text, "fuzz.yaml", diagnostics, limits);
  if (!inventory) {
    if (!has_errors(diagnostics)) __builtin_trap();  // rejected without saying why
    return 0;
  }
  if (has_errors(diagnostics)) __builtin_trap();  // accepted despite an error
  Cluster a(*inventory);
  Cluster b(std::move(*inventory));
  if (drive(a) != drive(b)) __builtin_trap();
  return 0;
}
