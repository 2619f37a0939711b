// GPU identities: UUID v5 checked against known vectors (RFC 4122 / Python's uuid.uuid5)
// before trusting gpubank's namespace, then the GPU, MIG, PCI and device names.
#include "twin/cluster/identity.hpp"

#include <gtest/gtest.h>

#include <set>

namespace gpubank::twin::cluster {
namespace {

// RFC 4122 appendix C: the URL name space, 6ba7b811-9dad-11d1-80b4-00c04fd430c8.
constexpr Uuid kUrlNamespace{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1,
                             0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8};

TEST(Identity, UuidV5MatchesPythonsUuid5) {
  // python3 -c "import uuid; print(uuid.uuid5(uuid.NAMESPACE_DNS, 'www.example.com'))"
  EXPECT_EQ(uuid_v5(kDnsNamespace, "www.example.com"), "2ed6657d-e927-568b-95e1-2665a8aea6a2");
  EXPECT_EQ(uuid_v5(kDnsNamespace, ""), "4ebd0208-8328-5d69-8c44-ec50939c0967");
  // gpubank's namespace is uuid5(NAMESPACE_URL, "https://gpubank.dev/twin/gpu").
  EXPECT_EQ(uuid_v5(kUrlNamespace, "https://gpubank.dev/twin/gpu"), "3c480df3-f6b1-5398-9e90-d55e503f4b00");
}

TEST(Identity, GpuAndMigUuidsAreUuid5OfNodeIndexAndSlice) {
  // uuid.uuid5(uuid.UUID('3c480df3-f6b1-5398-9e90-d55e503f4b00'), 'h100-train-00/0') etc.
  EXPECT_EQ(gpu_uuid("h100-train-00", 0), "GPU-45bd346c-2b6e-5bb4-8084-ba4af4949b28");
  EXPECT_EQ(gpu_uuid("openb-node-0000", 1), "GPU-de57434d-c88f-5466-9ac9-9fbd586edbef");
  EXPECT_EQ(mig_uuid("mig-dev-00", 3, 6), "MIG-f5cdd2e8-d690-5b64-9f9c-22b2009b3df2");
  // Version nibble 5 and variant 10xx in every one of them.
  for (int i = 0; i < 16; ++i) {
    const std::string u = gpu_uuid("n", i);
    EXPECT_EQ(u[4 + 14], '5') << u;
    EXPECT_TRUE(u[4 + 19] == '8' || u[4 + 19] == '9' || u[4 + 19] == 'a' || u[4 + 19] == 'b') << u;
  }
}

TEST(Identity, PciBusIdsAreDistinctPerIndexAndDeviceNamesFollowTheIndex) {
  EXPECT_EQ(pci_bus_id(0), "00000000:10:00.0");
  EXPECT_EQ(pci_bus_id(1), "00000000:1E:00.0");   // 0x10 + 0x0E
  EXPECT_EQ(pci_bus_id(15), "00000000:E2:00.0");  // 0x10 + 15 * 0x0E = 0xE2
  std::set<std::string> ids;
  for (int i = 0; i < 16; ++i) ids.insert(pci_bus_id(i));
  EXPECT_EQ(ids.size(), 16U);
  EXPECT_EQ(device_name(3), "nvidia3");
}

}  // namespace
}  // namespace gpubank::twin::cluster
