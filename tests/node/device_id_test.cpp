// parse_device_id: every form the kubelet reports (node-apis.md), and malformed IDs as
// Unknown rather than a guess.
#include "node/device_id.hpp"

#include <gtest/gtest.h>

namespace gpubank::node {
namespace {

using Kind = DeviceRef::Kind;

DeviceRef make(Kind kind, std::string uuid, int replica = -1) {
  DeviceRef ref;
  ref.kind = kind;
  ref.uuid = std::move(uuid);
  ref.replica = replica;
  return ref;
}

constexpr const char* kH200 = "e46a8f8f-eb27-178a-160e-ae0ab04e8dfc";  // node-apis.md's H200

TEST(DeviceId, WholeGpu) {
  EXPECT_EQ(parse_device_id(std::string("GPU-") + kH200), make(Kind::Gpu, std::string("GPU-") + kH200));
}

TEST(DeviceId, MigDevice) {
  EXPECT_EQ(parse_device_id("MIG-382bf6c0-b5e5-4167-bfe3-7e85e30b585d"),
            make(Kind::Mig, "MIG-382bf6c0-b5e5-4167-bfe3-7e85e30b585d"));
}

TEST(DeviceId, MigDeviceWithReplicaSuffix) {
  EXPECT_EQ(parse_device_id("MIG-08062287-3dcc-4d25-8849-23ec7c24e015::3"),
            make(Kind::Mig, "MIG-08062287-3dcc-4d25-8849-23ec7c24e015", 3));
}

TEST(DeviceId, BareUuidReplicaGetsGpuPrefix) {
  EXPECT_EQ(parse_device_id(std::string(kH200) + "::0"), make(Kind::Replica, std::string("GPU-") + kH200, 0));
  EXPECT_EQ(parse_device_id(std::string(kH200) + "::15"), make(Kind::Replica, std::string("GPU-") + kH200, 15));
}

TEST(DeviceId, PrefixedReplica) {
  EXPECT_EQ(parse_device_id("GPU-d584433e-5153-47a0-9390-e411ccb468bf::2"),
            make(Kind::Replica, "GPU-d584433e-5153-47a0-9390-e411ccb468bf", 2));
}

TEST(DeviceId, GkeIndexed) {
  DeviceRef expected;
  expected.kind = Kind::Indexed;
  expected.gpu_index = 0;
  expected.gpu_instance = 0;
  expected.replica = 0;
  EXPECT_EQ(parse_device_id("nvidia0/gi0/vgpu0"), expected);
  expected.gpu_index = 7;
  expected.gpu_instance = 12;
  expected.replica = 3;
  EXPECT_EQ(parse_device_id("nvidia7/gi12/vgpu3"), expected);
}

TEST(DeviceId, UpperCaseHexIsReturnedInNvmlSpelling) {
  EXPECT_EQ(parse_device_id("GPU-E46A8F8F-EB27-178A-160E-AE0AB04E8DFC"), make(Kind::Gpu, std::string("GPU-") + kH200));
}

TEST(DeviceId, MalformedIsUnknownNeverGuessed) {
  const DeviceRef unknown;
  for (const char* id : {
           "",
           "GPU-",
           "MIG-",
           kH200,                                          // a bare UUID without "::n": not a listed form
           "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8df",     // one digit short
           "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc0",   // one digit long
           "GPU-e46a8f8feb27-178a-160e-ae0ab04e8dfc-",    // dash misplaced
           "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfg",    // not hex
           "gpu-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc",    // prefix case
           " GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc",   // leading space
           "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc ",   // trailing space
           "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc::",  // empty replica
           "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc::-1",
           "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc::+1",
           "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc::01",
           "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc::1::2",
           "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc::99999999999",  // overflows int
           "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc:1",
           "MIG-GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc/1/0",  // pre-R470 MIG form: not listed
           "MIG-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc::x",
           "::3",
           "0",
           "rdma-0",
           "gpu-0",  // a DRA device name
           "nvidia0",
           "nvidia0/gi0",
           "nvidia0/vgpu0",
           "nvidia/gi0/vgpu0",
           "nvidia0/gi0/vgpu",
           "nvidia0/gi0/vgpu0/x",
           "nvidia0/gi00/vgpu0",
           "nvidiaX/gi0/vgpu0",
       }) {
    EXPECT_EQ(parse_device_id(id), unknown) << '"' << id << '"';
  }
}

}  // namespace
}  // namespace gpubank::node
