// The NVML loader (src/node/nvml.hpp) against a FAKE libnvidia-ml.so.1
// (tests/support/fake_nvml.cpp) describing the real H200 of ../shared/spec/node-apis.md and
// an H100 node with MIG; a second fake with only the older symbol names checks the fallback.
#include "node/nvml.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "support/paths.hpp"
#include "support/promtool.hpp"

namespace gpubank::node {
namespace {

std::string fake(const char* variant) {
  return gpubank::testing::binary_dir() + "/tests/support/fake-nvml-" + variant + "/libnvidia-ml.so.1";
}

// Points the fake at a description for the scope of a test (read at nvmlInit).
class FakeDescription {
 public:
  explicit FakeDescription(const std::string& path) { setenv("GPUBANK_FAKE_NVML", path.c_str(), 1); }
  ~FakeDescription() { unsetenv("GPUBANK_FAKE_NVML"); }
};

TEST(Nvml, ReadsTheRealH200AsNvmlReportsIt) {
  auto nvml = Nvml::open(fake("current"));
  ASSERT_TRUE(nvml.ok()) << nvml.error();
  EXPECT_EQ((*nvml)->driver_version(), "580.159.04");
  auto devices = (*nvml)->devices();
  ASSERT_TRUE(devices.ok()) << devices.error();
  ASSERT_EQ(devices->size(), 1U);
  const GpuDevice& g = devices->front();
  EXPECT_EQ(g.uuid, "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc");
  EXPECT_EQ(g.name, "NVIDIA H200");
  EXPECT_EQ(g.pci_bus_id, "00000000:00:06.0");
  EXPECT_EQ(g.memory_total, 150'754'820'096ULL);
  EXPECT_EQ(g.compute_major, 9);
  EXPECT_EQ(g.architecture, 9U);
  EXPECT_FALSE(g.numa_node.has_value());  // "not supported" on that virtual machine: unknown, not an error
  EXPECT_FALSE(g.mig_enabled);
  EXPECT_TRUE(g.mig.empty());
  auto reading = (*nvml)->read(0);
  ASSERT_TRUE(reading.ok()) << reading.error();
  EXPECT_EQ(reading->power_mw, 78'970U);
  EXPECT_EQ(reading->temperature_c, 35U);
  EXPECT_EQ(reading->gpu_util, 0U);
}

TEST(Nvml, ListsMigDevicesWithTheirInstancesAndProfiles) {
  FakeDescription description(gpubank::testing::source_dir() + "/tests/node/data/fake-nvml-mig.json");
  auto nvml = Nvml::open(fake("current"));
  ASSERT_TRUE(nvml.ok()) << nvml.error();
  auto devices = (*nvml)->devices();
  ASSERT_TRUE(devices.ok()) << devices.error();
  ASSERT_EQ(devices->size(), 2U);
  const GpuDevice& mig = (*devices)[0];
  EXPECT_TRUE(mig.mig_enabled);
  EXPECT_EQ(mig.numa_node, 0);
  ASSERT_EQ(mig.mig.size(), 2U);
  EXPECT_EQ(mig.mig[0], (MigDevice{"MIG-2f0c1a4e-8b7d-5e6f-9a0b-1c2d3e4f5a6b", 1, 0, "3g.40gb", 42'949'672'960ULL}));
  EXPECT_EQ(mig.mig[1].profile, "1g.10gb");
  EXPECT_EQ(mig.mig[1].gpu_instance, 9U);
  const GpuDevice& whole = (*devices)[1];
  EXPECT_FALSE(whole.mig_enabled);
  EXPECT_EQ(whole.index, 1U);
  auto reading = (*nvml)->read(1);
  ASSERT_TRUE(reading.ok());
  EXPECT_EQ(reading->gpu_util, 87U);
  EXPECT_EQ(reading->memory_util, 41U);
  EXPECT_EQ(reading->memory_used, 17'179'869'184ULL);
  EXPECT_EQ(reading->memory_free, 85'520'809'984ULL - 17'179'869'184ULL);
  EXPECT_FALSE((*nvml)->read(2).ok());  // no such GPU
}

TEST(Nvml, FallsBackToTheOlderSymbolNames) {
  auto nvml = Nvml::open(fake("legacy"));
  ASSERT_TRUE(nvml.ok()) << nvml.error();
  auto devices = (*nvml)->devices();
  ASSERT_TRUE(devices.ok()) << devices.error();
  ASSERT_EQ(devices->size(), 1U);
  EXPECT_EQ(devices->front().pci_bus_id, "00000000:00:06.0");  // nvmlDeviceGetPciInfo, not _v3
}

TEST(Nvml, AMissingLibraryOrAFailedInitSaysWhat) {
  auto missing = Nvml::open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("cannot load /nonexistent/libnvidia-ml.so.1"), std::string::npos) << missing.error();
  EXPECT_NE(missing.error().find("dcgm-exporter"), std::string::npos);

  auto not_nvml = Nvml::open("libc.so.6");
  ASSERT_FALSE(not_nvml.ok());
  EXPECT_NE(not_nvml.error().find("has no nvmlInit_v2"), std::string::npos) << not_nvml.error();

  gpubank::testing::ScratchDir dir;
  gpubank::testing::write_file(dir.path() / "broken.json", R"({"initError": 9})");
  FakeDescription description((dir.path() / "broken.json").string());
  auto failed = Nvml::open(fake("current"));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), "nvml init: Driver Not Loaded (9)");
}

}  // namespace
}  // namespace gpubank::node
