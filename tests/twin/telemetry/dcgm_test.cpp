// dcgm-exporter's families and gpubank's per-device series: names, types, HELP, label
// order, values, MIG rules, devices that go away, refusals; written with the metrics text
// writer, read back with the project's parser and checked by the real promtool.
#include "twin/telemetry/dcgm.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>

#include "metrics/text_parser.hpp"
#include "support/promtool.hpp"

namespace gpubank::twin::telemetry {
namespace {

template <class T>
T must(Expected<T> e) {
  if (!e) throw std::runtime_error(e.error());
  return std::move(*e);
}

void ok(const metrics::Status& s) { ASSERT_TRUE(s.ok()) << s.error(); }

const char* const kH100Uuid = "GPU-5c8a2c4e-1f5b-9d3e-7a21-0e4b6f9d2c11";
const char* const kA100Uuid = "GPU-9a0e3b7d-4c2f-6e18-b5d9-3f7c1a8e4b22";

Allocation allocation(std::string ns, std::string pod, std::string container) {
  Allocation a;
  a.pod_namespace = std::move(ns);
  a.pod = std::move(pod);
  a.container = std::move(container);
  return a;
}

// Node gpu-node-07: GPU 0 (H100) training for team search, GPU 1 (H100) idle, GPU 2 an
// A100 in MIG mode with two 3g.40gb instances (ids 1 and 2), the first serving.
std::vector<GpuState> cluster() {
  GpuState busy;
  busy.gpu_index = 0;
  busy.uuid = kH100Uuid;
  busy.pci_bus_id = "00000000:18:00.0";
  busy.model_name = "NVIDIA H100 80GB HBM3";
  busy.hostname = "gpu-node-07";
  busy.driver_version = "580.159.04";
  busy.allocations = {allocation("search", "llama-ft-worker-0", "pytorch")};
  busy.sample.activity_bp = 9321;
  busy.sample.gpu_util_pct = 93;
  busy.sample.mem_copy_util_pct = 37;
  busy.sample.fb_used_mib = 73454;
  busy.sample.fb_free_mib = 8105;
  busy.sample.power_w = 657.2;
  busy.sample.power_limit_w = 700;
  busy.sample.gr_engine_active = 0.9321;
  busy.sample.tensor_active = 0.55926;
  busy.sample.dram_active = 0.419445;
  busy.sample.temperature_c = 69;
  busy.sample.sm_clock_mhz = 1980;
  busy.sample.energy_mj = 123456789.9;

  GpuState idle = busy;
  idle.gpu_index = 1;
  idle.uuid = "GPU-1b2c3d4e-0000-4000-8000-000000000001";
  idle.pci_bus_id = "00000000:2A:00.0";
  idle.allocations.clear();
  idle.sample = GpuSample{};
  idle.sample.fb_used_mib = 512;
  idle.sample.fb_free_mib = 81047;
  idle.sample.power_w = 70;
  idle.sample.temperature_c = 30;
  idle.sample.sm_clock_mhz = 345;
  idle.sample.energy_mj = 5000;
  idle.xid = 79;
  idle.ecc_dbe_volatile = 2;
  idle.row_remap_failure = true;

  GpuState mig1 = busy;
  mig1.gpu_index = 2;
  mig1.uuid = kA100Uuid;
  mig1.pci_bus_id = "00000000:3B:00.0";
  mig1.model_name = "NVIDIA A100-SXM4-80GB";
  mig1.mig = MigInstance{"3g.40gb", 1};
  mig1.allocations = {allocation("chat", "vllm-0", "vllm")};
  mig1.sample.gr_engine_active = 0.5;
  mig1.sample.gpu_util_pct = 50;
  GpuState mig2 = mig1;
  mig2.mig = MigInstance{"3g.40gb", 2};
  mig2.allocations.clear();
  mig2.sample.gr_engine_active = 0;
  return {busy, idle, mig1, mig2};
}

struct Scrape {
  metrics::Registry registry;
  DcgmFamilies dcgm;
};

std::unique_ptr<Scrape> scrape(const std::vector<GpuState>& gpus, const DcgmOptions& options = {}) {
  auto s = std::make_unique<Scrape>();
  s->dcgm = must(register_dcgm(s->registry, options));
  if (auto d = update_dcgm(s->dcgm, gpus); !d) throw std::runtime_error(d.error());
  return s;
}

std::vector<std::string> names_of(const std::vector<metrics::Label>& labels) {
  std::vector<std::string> names;
  for (const auto& l : labels) names.push_back(l.name);
  return names;
}

std::string label(const metrics::Sample& s, std::string_view name) {
  for (const auto& l : s.labels) {
    if (l.name == name) return l.value;
  }
  return "<absent>";
}

// The samples of `family` whose label `name` is `value`.
std::vector<metrics::Sample> where(const metrics::Exposition& e, std::string_view family, std::string_view name,
                                   std::string_view value) {
  std::vector<metrics::Sample> out;
  const metrics::Family* f = e.find(family);
  if (f == nullptr) return out;
  for (const auto& s : f->samples) {
    if (label(s, name) == value) out.push_back(s);
  }
  return out;
}

const std::vector<std::string> kLabels{"gpu",      "UUID",     "pci_bus_id", "device",   "modelName",
                                       "GPU_I_PROFILE", "GPU_I_ID", "Hostname",  "DCGM_FI_DRIVER_VERSION",
                                       "container", "namespace", "pod"};

TEST(Dcgm, FamiliesHaveDcgmExportersNamesTypesAndHelp) {
  metrics::Registry r;
  must(register_dcgm(r));
  // etc/default-counters.csv: name, type, help.
  const std::vector<std::tuple<std::string, metrics::MetricType, std::string>> expected{
      {"DCGM_FI_DEV_SM_CLOCK", metrics::MetricType::gauge, "SM clock frequency (in MHz)."},
      {"DCGM_FI_DEV_GPU_TEMP", metrics::MetricType::gauge, "GPU temperature (in C)."},
      {"DCGM_FI_DEV_POWER_USAGE", metrics::MetricType::gauge, "Power draw (in W)."},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", metrics::MetricType::counter,
       "Total energy consumption since boot (in mJ)."},
      {"DCGM_FI_DEV_GPU_UTIL", metrics::MetricType::gauge, "GPU utilization (in %)."},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", metrics::MetricType::gauge, "Memory utilization (in %)."},
      {"DCGM_FI_DEV_XID_ERRORS", metrics::MetricType::gauge, "Value of the last XID error encountered."},
      {"DCGM_FI_DEV_FB_FREE", metrics::MetricType::gauge, "Framebuffer memory free (in MiB)."},
      {"DCGM_FI_DEV_FB_USED", metrics::MetricType::gauge, "Framebuffer memory used (in MiB)."},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", metrics::MetricType::gauge, "Ratio of time the graphics engine is active."},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", metrics::MetricType::gauge,
       "Ratio of cycles the tensor (HMMA) pipe is active."},
      {"DCGM_FI_PROF_DRAM_ACTIVE", metrics::MetricType::gauge,
       "Ratio of cycles the device memory interface is active sending or receiving data."},
      // Not default counters; the metric contract asks for them.
      {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", metrics::MetricType::gauge,
       "Effective power limit that the driver enforces after taking into account all limiters (in W)."},
      {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", metrics::MetricType::counter, "Total number of double-bit volatile ECC errors."},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", metrics::MetricType::gauge, "Whether remapping of rows has failed"},
  };
  for (const auto& [name, type, help] : expected) {
    const metrics::FamilyBase* f = r.find(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->type(), type) << name;
    EXPECT_EQ(f->help(), help) << name;
    std::vector<std::string> labels = kLabels;
    if (name == "DCGM_FI_DEV_XID_ERRORS") labels.insert(labels.begin() + 10, {"err_code", "err_msg"});
    EXPECT_EQ(f->label_names(), labels) << name;
  }
  EXPECT_EQ(r.collect().families.size(), 15u);
  EXPECT_EQ(dcgm_label_names(), kLabels);
  // dcgm-exporter's main branch spells the host label in lower case.
  EXPECT_EQ(dcgm_label_names({"hostname"})[7], "hostname");
  // Registering twice is refused by the registry.
  EXPECT_FALSE(register_dcgm(r).ok());
}

TEST(Dcgm, SeriesReadBackWithDcgmExportersLabelsAndValues) {
  const auto s = scrape(cluster());
  const std::string text = metrics::write_text(s->registry);
  // One whole line, byte for byte: label order, empty MIG labels, the pod triple.
  EXPECT_NE(text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-5c8a2c4e-1f5b-9d3e-7a21-0e4b6f9d2c11\","
                      "pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\","
                      "GPU_I_PROFILE=\"\",GPU_I_ID=\"\",Hostname=\"gpu-node-07\",DCGM_FI_DRIVER_VERSION=\"580.159.04\","
                      "container=\"pytorch\",namespace=\"search\",pod=\"llama-ft-worker-0\"} 93\n"),
            std::string::npos)
      << text;
  const metrics::Exposition e = must(metrics::parse_text(text));
  for (const auto& f : e.families) {
    if (f.name.rfind("DCGM_", 0) != 0) continue;
    for (const auto& sample : f.samples) {
      std::vector<std::string> labels = kLabels;
      if (f.name == "DCGM_FI_DEV_XID_ERRORS") labels.insert(labels.begin() + 10, {"err_code", "err_msg"});
      EXPECT_EQ(names_of(sample.labels), labels) << f.name;
    }
  }
  auto value = [&](std::string_view family, std::string_view uuid, std::string_view instance = "") {
    for (const auto& sample : where(e, family, "UUID", uuid)) {
      if (label(sample, "GPU_I_ID") == instance) return sample.value;
    }
    return -1.0;
  };
  EXPECT_EQ(value("DCGM_FI_DEV_SM_CLOCK", kH100Uuid), 1980);
  EXPECT_EQ(value("DCGM_FI_DEV_GPU_TEMP", kH100Uuid), 69);
  EXPECT_EQ(value("DCGM_FI_DEV_POWER_USAGE", kH100Uuid), 657.2);
  EXPECT_EQ(value("DCGM_FI_DEV_MEM_COPY_UTIL", kH100Uuid), 37);
  EXPECT_EQ(value("DCGM_FI_DEV_FB_USED", kH100Uuid), 73454);
  EXPECT_EQ(value("DCGM_FI_DEV_FB_FREE", kH100Uuid), 8105);
  EXPECT_EQ(value("DCGM_FI_PROF_GR_ENGINE_ACTIVE", kH100Uuid), 0.9321);
  EXPECT_EQ(value("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", kH100Uuid), 0.55926);
  EXPECT_EQ(value("DCGM_FI_PROF_DRAM_ACTIVE", kH100Uuid), 0.419445);
  // Energy in whole mJ, as DCGM's integer field: 123,456,789.9 -> 123,456,789.
  EXPECT_EQ(value("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", kH100Uuid), 123456789);
  EXPECT_EQ(value("DCGM_FI_DEV_XID_ERRORS", kH100Uuid), 0);
  EXPECT_EQ(value("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", kH100Uuid), 700);
  EXPECT_EQ(value("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", kH100Uuid), 0);
  EXPECT_EQ(value("DCGM_FI_DEV_ROW_REMAP_FAILURE", kH100Uuid), 0);

  // The idle GPU: pod labels empty (Prometheus stores them as absent), XID 79 with its text.
  const auto idle = where(e, "DCGM_FI_DEV_XID_ERRORS", "gpu", "1");
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0].value, 79);
  EXPECT_EQ(label(idle[0], "err_code"), "79");
  EXPECT_EQ(label(idle[0], "err_msg"), "GPU has fallen off the bus");
  EXPECT_EQ(label(idle[0], "pod"), "");
  EXPECT_EQ(label(idle[0], "device"), "nvidia1");
  EXPECT_EQ(where(e, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "gpu", "1").at(0).value, 2);
  EXPECT_EQ(where(e, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gpu", "1").at(0).value, 1);
  const auto busy_xid = where(e, "DCGM_FI_DEV_XID_ERRORS", "gpu", "0");
  ASSERT_EQ(busy_xid.size(), 1u);
  EXPECT_EQ(label(busy_xid[0], "err_msg"), "No Error");
}

TEST(Dcgm, MigInstancesCarryTheParentUuidAndNoUtilFields) {
  const auto s = scrape(cluster());
  const metrics::Exposition e = must(metrics::parse_text(metrics::write_text(s->registry)));
  // Both instances: the parent's UUID, their profile and id; no *_UTIL series.
  const auto gr = where(e, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "UUID", kA100Uuid);
  ASSERT_EQ(gr.size(), 2u);
  EXPECT_EQ(label(gr[0], "GPU_I_PROFILE"), "3g.40gb");
  EXPECT_EQ(label(gr[0], "GPU_I_ID"), "1");
  EXPECT_EQ(gr[0].value, 0.5);
  EXPECT_EQ(label(gr[0], "pod"), "vllm-0");
  EXPECT_EQ(label(gr[1], "GPU_I_ID"), "2");
  EXPECT_EQ(label(gr[1], "pod"), "");
  EXPECT_TRUE(where(e, "DCGM_FI_DEV_GPU_UTIL", "UUID", kA100Uuid).empty());
  EXPECT_TRUE(where(e, "DCGM_FI_DEV_MEM_COPY_UTIL", "UUID", kA100Uuid).empty());
  EXPECT_EQ(where(e, "DCGM_FI_DEV_GPU_UTIL", "UUID", kH100Uuid).size(), 1u);
  // Every other family has both instances.
  for (const char* f : {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                        "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"}) {
    EXPECT_EQ(where(e, f, "UUID", kA100Uuid).size(), 2u) << f;
  }
  // 4 devices in all; GPU_UTIL has the 2 whole GPUs.
  EXPECT_EQ(e.find("DCGM_FI_DEV_FB_USED")->samples.size(), 4u);
  EXPECT_EQ(e.find("DCGM_FI_DEV_GPU_UTIL")->samples.size(), 2u);
}

TEST(Dcgm, TimeSlicedDevicesHaveOneSeriesPerContainer) {
  std::vector<GpuState> gpus = cluster();
  gpus[0].allocations.push_back(allocation("search", "llama-ft-worker-1", "pytorch"));
  const auto s = scrape(gpus);
  const metrics::Exposition e = must(metrics::parse_text(metrics::write_text(s->registry)));
  const auto util = where(e, "DCGM_FI_DEV_GPU_UTIL", "UUID", kH100Uuid);
  ASSERT_EQ(util.size(), 2u);
  EXPECT_EQ(label(util[0], "pod"), "llama-ft-worker-0");
  EXPECT_EQ(label(util[1], "pod"), "llama-ft-worker-1");
  EXPECT_EQ(util[0].value, 93);
  EXPECT_EQ(util[1].value, 93);
}

TEST(Dcgm, DevicesThatGoAwayLoseTheirSeries) {
  auto s = scrape(cluster());
  std::vector<GpuState> fewer = cluster();
  fewer.erase(fewer.begin() + 1);  // GPU 1 withdrawn
  fewer[0].allocations.clear();    // the pod on GPU 0 ended
  ok(update_dcgm(s->dcgm, fewer));
  const metrics::Exposition e = must(metrics::parse_text(metrics::write_text(s->registry)));
  for (const auto& f : e.families) {
    for (const auto& sample : f.samples) {
      EXPECT_NE(label(sample, "gpu"), "1") << f.name;
      EXPECT_NE(label(sample, "pod"), "llama-ft-worker-0") << f.name;
    }
  }
  EXPECT_EQ(e.find("DCGM_FI_DEV_FB_USED")->samples.size(), 3u);
  EXPECT_EQ(e.find("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")->samples.size(), 3u);
  // No devices at all: empty families.
  ok(update_dcgm(s->dcgm, {}));
  EXPECT_EQ(must(metrics::parse_text(metrics::write_text(s->registry))).find("DCGM_FI_DEV_FB_USED")->samples.size(), 0u);
}

TEST(Dcgm, RefusalsChangeNothing) {
  auto s = scrape(cluster());
  const std::string before = metrics::write_text(s->registry);
  std::vector<GpuState> twice = cluster();
  twice.push_back(twice[0]);
  twice.back().sample.power_w = 1;
  const auto d = update_dcgm(s->dcgm, twice);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error(), "update_dcgm: device GPU-5c8a2c4e-1f5b-9d3e-7a21-0e4b6f9d2c11 is listed twice "
                       "[telemetry.duplicate-device]");
  std::vector<GpuState> mig_twice = cluster();
  mig_twice[3].mig->instance_id = 1;
  EXPECT_EQ(update_dcgm(s->dcgm, mig_twice).error(),
            "update_dcgm: device GPU-9a0e3b7d-4c2f-6e18-b5d9-3f7c1a8e4b22 GPU instance 1 is listed twice "
            "[telemetry.duplicate-device]");
  std::vector<GpuState> nan = cluster();
  nan[2].sample.energy_mj = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(update_dcgm(s->dcgm, nan).error().find("[telemetry.energy]"), std::string::npos);
  nan[2].sample.energy_mj = -1;
  EXPECT_FALSE(update_dcgm(s->dcgm, nan).ok());
  std::vector<GpuState> ecc = cluster();
  ecc[1].ecc_dbe_volatile = -1;
  EXPECT_NE(update_dcgm(s->dcgm, ecc).error().find("[telemetry.ecc-count]"), std::string::npos);
  // A pod listed twice on a device would write one series twice: the first family refuses.
  std::vector<GpuState> pod_twice = cluster();
  pod_twice[0].allocations.push_back(pod_twice[0].allocations[0]);
  EXPECT_NE(update_dcgm(s->dcgm, pod_twice).error().find("[metrics.snapshot]"), std::string::npos);
  // Text that is not UTF-8.
  std::vector<GpuState> bad = cluster();
  bad[1].hostname = "node-\xff";
  EXPECT_FALSE(update_dcgm(s->dcgm, bad).ok());
  std::vector<GpuState> bad_pod = cluster();
  bad_pod[0].allocations[0].pod = "\xc3(";
  EXPECT_FALSE(update_dcgm(s->dcgm, bad_pod).ok());
  EXPECT_EQ(metrics::write_text(s->registry), before);
}

TEST(Dcgm, XidMessagesFollowDcgmExportersTable) {
  EXPECT_EQ(xid_message(0), "No Error");
  EXPECT_EQ(xid_message(13), "Graphics Engine Exception");
  EXPECT_EQ(xid_message(31), "GPU memory page fault");
  EXPECT_EQ(xid_message(48), "Double Bit ECC Error");
  EXPECT_EQ(xid_message(172), "Uncorrectable SRAM Error");
  EXPECT_EQ(xid_message(173), "Unknown Error");
  EXPECT_EQ(xid_message(-1), "Unknown Error");
}

TEST(Dcgm, TheSameStateWritesTheSameBytes) {
  EXPECT_EQ(metrics::write_text(scrape(cluster())->registry), metrics::write_text(scrape(cluster())->registry));
}

TEST(Dcgm, PromtoolParsesTheExposition) {
  const auto promtool = testing::find_promtool();
  ASSERT_TRUE(promtool.has_value()) << testing::kPromtoolMissing;
  testing::ScratchDir dir;
  testing::write_file(dir.path() / "metrics.prom", metrics::write_text(scrape(cluster())->registry));
  const auto checked = testing::run_in(dir.path(), promtool->string() + " check metrics < metrics.prom");
  // Exit 3: it parses, and promlint has remarks, all about what dcgm-exporter itself writes
  // and the twin must keep: the label modelName is camelCase (one remark per series), and
  // the two counters' names have no _total suffix. Upper-case metric names pass; gpubank's
  // families draw no remark.
  EXPECT_EQ(checked.status, 3) << checked.output;
  std::istringstream lines(checked.output);
  int remarks = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    ++remarks;
    EXPECT_EQ(line.rfind("DCGM_FI_", 0), 0u) << line;
    const bool known = line.find(" label names should be written in 'snake_case' not 'camelCase'") != std::string::npos ||
                       line == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter metrics should have \"_total\" suffix" ||
                       line == "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter metrics should have \"_total\" suffix";
    EXPECT_TRUE(known) << "unexpected promtool remark: " << line;
  }
  // 13 families × 4 devices + the 2 *_UTIL families × 2 whole GPUs, + the two suffixes.
  EXPECT_EQ(remarks, 13 * 4 + 2 * 2 + 2) << checked.output;
}

}  // namespace
}  // namespace gpubank::twin::telemetry
