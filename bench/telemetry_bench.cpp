// One scrape of the twin's dcgm-exporter for a 6,212-GPU cluster (776 nodes of 8 H100 and
// one of 4): sampling every device, filling the families, writing the text. The issue asks
// for O(1) work per device and scrape; the baseline is what the registry costs anyway.
//
//   (a) registry_constant   baseline: the same dcgm families and series set from prebuilt
//                           (label values, constant) snapshots, then write_text: the
//                           registry and writer alone
//   (b) sample_all          telemetry::sample for every device (profiles and energy), no
//                           metrics
//   (c) update_dcgm         update_dcgm from sampled states (label tuples built per series,
//                           set_all per family); gpubank's own series come from the
//                           attribution exporter's join since b2ffb17 (bench/exporter_bench)
//   (d) write_text          metrics::write_text of the filled registry
//   (e) scrape              (b) + (c) + (d): what one scrape of the twin costs
//
// Devices: 60 % training, 15 % inference (load from the device id), 10 % notebook, 5 %
// batch, 10 % idle; every busy device held by one container. --summary=FILE also writes
// the markdown summary there.
#include <benchmark/benchmark.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "metrics/registry.hpp"
#include "summary_reporter.hpp"
#include "twin/telemetry/dcgm.hpp"
#include "twin/telemetry/profile.hpp"

namespace {

using namespace gpubank;
using namespace gpubank::twin::telemetry;
using gpubank::bench::SummaryReporter;

constexpr int kNodes = 777;
constexpr int kGpus = 776 * 8 + 4;  // 6,212
constexpr std::int64_t kScrapeAt = 6LL * 3600 * 1000 + 15'000;  // six hours in, mid-interval

struct Device {
  GpuState state;
  ActivityInput input;
  EnergyBase energy;
};

std::string uuid_of(int node, int gpu) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-%08x-%04x-4%03x-8%03x-%012x", static_cast<unsigned>(node * 131 + gpu), gpu,
                node % 4096, gpu % 4096, static_cast<unsigned>(node * 8 + gpu));
  return buf;
}

std::vector<Device> make_cluster() {
  std::vector<Device> devices;
  devices.reserve(kGpus);
  for (int node = 0; node < kNodes; ++node) {
    const int gpus = node + 1 == kNodes ? 4 : 8;
    const std::string hostname = "gpu-node-" + std::to_string(node);
    for (int g = 0; g < gpus; ++g) {
      Device d;
      GpuState& s = d.state;
      s.gpu_index = g;
      s.uuid = uuid_of(node, g);
      char bus[32];
      std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + g * 0x11);
      s.pci_bus_id = bus;
      s.model_name = "NVIDIA H100 80GB HBM3";
      s.hostname = hostname;
      s.driver_version = "580.159.04";
      const std::uint64_t key = device_key(hostname, g);
      const int kind = static_cast<int>(key % 20);  // 12 training, 3 inference, 2 notebook, 1 batch, 2 idle
      d.input.seed = 1;
      d.input.device_key = key;
      d.input.start_ms = static_cast<std::int64_t>(key % 3'600'000);
      Profile p = Profile::idle;
      if (kind < 12) p = Profile::training;
      else if (kind < 15) p = Profile::inference;
      else if (kind < 17) p = Profile::notebook;
      else if (kind < 18) p = Profile::batch;
      d.input.profile = p;
      const std::string workload = "job-" + std::to_string(node / 4);
      d.input.workload_key = workload_key(workload);
      d.input.load = static_cast<double>(key % 100) / 100;
      d.input.weights_mib = 30'000;
      d.input.kv_cache_mib = 20'000;
      if (p != Profile::idle) {
        Allocation a;
        a.pod_namespace = "team-" + std::to_string(node % 40);
        a.pod = workload + "-worker-" + std::to_string(g);
        a.container = "main";
        s.allocations.push_back(std::move(a));
      }
      d.energy = {d.input.start_ms, 1.0e9};
      devices.push_back(std::move(d));
    }
  }
  return devices;
}

std::vector<Device>& cluster() {
  static std::vector<Device> devices = make_cluster();
  return devices;
}

const GpuModelSpec& h100() { return gpu_model_spec("H100"); }

void sample_all(std::vector<Device>& devices, std::int64_t t) {
  for (Device& d : devices) d.state.sample = sample(h100(), d.input, t, d.energy);
}

std::vector<GpuState> states(const std::vector<Device>& devices) {
  std::vector<GpuState> out;
  out.reserve(devices.size());
  for (const Device& d : devices) out.push_back(d.state);
  return out;
}

struct Exporter {
  metrics::Registry registry;
  DcgmFamilies dcgm;
  Exporter() {
    auto d = register_dcgm(registry);
    if (!d) throw std::runtime_error("registering the families failed");
    dcgm = *d;
  }
  void update(std::span<const GpuState> gpus) {
    if (auto s = update_dcgm(dcgm, gpus); !s) throw std::runtime_error(s.error());
  }
};

std::size_t bytes_written = 0;

// ---- cases ------------------------------------------------------------------------------------

void registry_constant(benchmark::State& state) {
  // The label tuples the exporter writes, built once; constant values.
  Exporter e;
  sample_all(cluster(), kScrapeAt);
  const auto gpus = states(cluster());
  e.update(gpus);
  std::vector<std::pair<metrics::GaugeFamily*, std::vector<std::pair<metrics::LabelValues, double>>>> gauges;
  std::vector<std::pair<metrics::CounterFamily*, std::vector<metrics::LabelValues>>> counters;
  const metrics::Exposition x = e.registry.collect();
  for (const auto& family : x.families) {
    std::vector<metrics::LabelValues> children;
    for (const auto& s : family.samples) {
      metrics::LabelValues values;
      for (const auto& l : s.labels) values.push_back(l.value);
      children.push_back(std::move(values));
    }
    const metrics::FamilyBase* base = e.registry.find(family.name);
    if (family.type == metrics::MetricType::gauge) {
      std::vector<std::pair<metrics::LabelValues, double>> snapshot;
      for (auto& c : children) snapshot.emplace_back(std::move(c), 42);
      gauges.emplace_back(const_cast<metrics::GaugeFamily*>(dynamic_cast<const metrics::GaugeFamily*>(base)),
                          std::move(snapshot));
    } else {
      counters.emplace_back(const_cast<metrics::CounterFamily*>(dynamic_cast<const metrics::CounterFamily*>(base)),
                            std::move(children));
    }
  }
  for (auto _ : state) {
    for (const auto& [family, snapshot] : gauges) {
      if (!family->set_all(snapshot)) state.SkipWithError("set_all failed");
    }
    for (const auto& [family, children] : counters) {
      family->clear();
      for (const auto& c : children) {
        if (!family->set_total(c, 42)) state.SkipWithError("set_total failed");
      }
    }
    const std::string text = metrics::write_text(e.registry);
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["gpus/s"] = benchmark::Counter(static_cast<double>(kGpus), benchmark::Counter::kIsIterationInvariantRate);
}

void sample_all_case(benchmark::State& state) {
  std::vector<Device>& devices = cluster();
  std::int64_t t = kScrapeAt;
  for (auto _ : state) {
    sample_all(devices, t);
    t += 15'000;
    benchmark::DoNotOptimize(devices.front().state.sample.energy_mj);
  }
  state.counters["gpus/s"] = benchmark::Counter(static_cast<double>(kGpus), benchmark::Counter::kIsIterationInvariantRate);
}

void update_case(benchmark::State& state) {
  Exporter e;
  sample_all(cluster(), kScrapeAt);
  const auto gpus = states(cluster());
  for (auto _ : state) e.update(gpus);
  state.counters["gpus/s"] = benchmark::Counter(static_cast<double>(kGpus), benchmark::Counter::kIsIterationInvariantRate);
}

void write_case(benchmark::State& state) {
  Exporter e;
  sample_all(cluster(), kScrapeAt);
  e.update(states(cluster()));
  for (auto _ : state) {
    const std::string text = metrics::write_text(e.registry);
    bytes_written = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["gpus/s"] = benchmark::Counter(static_cast<double>(kGpus), benchmark::Counter::kIsIterationInvariantRate);
}

void scrape_case(benchmark::State& state) {
  Exporter e;
  std::vector<Device>& devices = cluster();
  std::vector<GpuState> gpus = states(devices);
  std::int64_t t = kScrapeAt;
  for (auto _ : state) {
    for (std::size_t i = 0; i < devices.size(); ++i) gpus[i].sample = sample(h100(), devices[i].input, t, devices[i].energy);
    e.update(gpus);
    const std::string text = metrics::write_text(e.registry);
    benchmark::DoNotOptimize(text.data());
    t += 15'000;
  }
  state.counters["gpus/s"] = benchmark::Counter(static_cast<double>(kGpus), benchmark::Counter::kIsIterationInvariantRate);
}

const gpubank::bench::Case kCases[] = {
    {"registry_constant", "(a) baseline: the same series from prebuilt snapshots, constant values, + write_text",
     registry_constant},
    {"sample_all", "(b) telemetry::sample for every GPU", sample_all_case},
    {"update_dcgm", "(c) update_dcgm + update_gpu_attribution", update_case},
    {"write_text", "(d) write_text of the filled registry", write_case},
    {"scrape", "(e) sample + update + write: one scrape", scrape_case},
};

}  // namespace

int main(int argc, char** argv) {
  const std::string summary_path = gpubank::bench::take_summary_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  if (cluster().size() != static_cast<std::size_t>(kGpus)) {
    std::cerr << "telemetry_bench: generated " << cluster().size() << " GPUs, expected " << kGpus << '\n';
    return 1;
  }
  gpubank::bench::register_cases(kCases);
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::ostringstream s;
  const bool medians = gpubank::bench::write_table(s, reporter, kCases, "GPUs/s", "gpus/s");
  s << "\n" << kGpus << " GPUs (" << kNodes << " nodes), " << bytes_written << " bytes of exposition per scrape; "
    << (medians ? "medians of repetitions" : "single runs") << ".\n";
  if (!gpubank::bench::emit_summary(s.str(), summary_path, "telemetry_bench")) return 1;
  return 0;
}
