// The PodResources client against the fake kubelet (a real gRPC server on a unix socket):
// each recorded-style fixture flattened exactly, a >4 MiB answer read whole, and errors that
// name the socket, the method and the gRPC status.
#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "node/device_id.hpp"
#include "node_fixture.hpp"
#include "podresources/v1/api.grpc.pb.h"

namespace gpubank::node {
namespace {

using test::client_of;
using test::dra_device;
using test::fixture;
using test::plugin_device;
using testing::FakeKubelet;

std::vector<DeviceAllocation> list_fixture(const std::string& name) {
  FakeKubelet kubelet;
  kubelet.set_list_fixture(fixture(name));
  auto devices = client_of(kubelet)->list();
  if (!devices) throw std::runtime_error(devices.error());
  return std::move(devices).value();
}

TEST(PodResources, PlainGpusOnePerDeviceInKubeletOrder) {
  const std::vector<DeviceAllocation> expected = {
      plugin_device("ml-research", "llm-finetune-0", "trainer", "nvidia.com/gpu", "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc"),
      plugin_device("ml-research", "llm-finetune-0", "trainer", "nvidia.com/gpu", "GPU-05afb6ad-4640-451a-bc1d-bd2e34f300da"),
      // cilium-x7k2p holds no device: nothing for it; git-sync neither.
      plugin_device("notebooks", "jupyter-alice-5f7d9c", "notebook", "nvidia.com/gpu", "GPU-316509da-f2a9-4ba6-bcd5-111d907764eb"),
      // Not filtered: the client reports every device plugin's devices; attribution picks GPUs.
      plugin_device("ml-research", "nccl-tests-0", "nccl", "rdma/rdma_shared_device_a", "rdma-0"),
      plugin_device("ml-research", "nccl-tests-0", "nccl", "nvidia.com/gpu", "GPU-f595ed2b-4b59-4f69-839b-99fffd2cc6b8"),
  };
  EXPECT_EQ(list_fixture("list-plain-gpus.json"), expected);
}

TEST(PodResources, MigDevicesKeepTheirIdsAndProfiles) {
  const std::vector<DeviceAllocation> expected = {
      plugin_device("inference", "triton-embed-6c8b7d-4xq2m", "triton", "nvidia.com/mig-1g.10gb",
                    "MIG-382bf6c0-b5e5-4167-bfe3-7e85e30b585d"),
      plugin_device("inference", "triton-rerank-6c8b7d-9hz4t", "triton", "nvidia.com/mig-3g.40gb",
                    "MIG-08d16a5c-4170-403d-a283-98f24924ad46"),
      plugin_device("notebooks", "dev-bob-0", "notebook", "nvidia.com/mig-1g.10gb",
                    "MIG-08062287-3dcc-4d25-8849-23ec7c24e015::0"),
      plugin_device("notebooks", "dev-bob-0", "notebook", "nvidia.com/mig-1g.10gb",
                    "MIG-08062287-3dcc-4d25-8849-23ec7c24e015::3"),
  };
  const auto devices = list_fixture("list-mig.json");
  EXPECT_EQ(devices, expected);
  for (const auto& d : devices) EXPECT_EQ(parse_device_id(d.device_id).kind, DeviceRef::Kind::Mig) << d.device_id;
}

TEST(PodResources, TimeSlicedReplicas) {
  const std::vector<DeviceAllocation> expected = {
      plugin_device("team-a", "vllm-small-0", "vllm", "nvidia.com/gpu", "43cc5cc7-ffb3-4b5a-9d88-dab691dcc45f::0"),
      plugin_device("team-b", "vllm-small-1", "vllm", "nvidia.com/gpu", "43cc5cc7-ffb3-4b5a-9d88-dab691dcc45f::3"),
      plugin_device("team-b", "batch-embed-27", "worker", "nvidia.com/gpu.shared",
                    "GPU-d584433e-5153-47a0-9390-e411ccb468bf::1"),
      plugin_device("team-b", "batch-embed-27", "worker", "nvidia.com/gpu.shared",
                    "GPU-d584433e-5153-47a0-9390-e411ccb468bf::2"),
  };
  const auto devices = list_fixture("list-time-slicing.json");
  EXPECT_EQ(devices, expected);
  // Two pods of two namespaces share one physical GPU.
  EXPECT_EQ(parse_device_id(devices[0].device_id).uuid, parse_device_id(devices[1].device_id).uuid);
  for (const auto& d : devices) EXPECT_EQ(parse_device_id(d.device_id).kind, DeviceRef::Kind::Replica) << d.device_id;
}

TEST(PodResources, EightGpusAcrossTwoContainers) {
  const std::string ns = "foundation-models";
  const std::string pod = "pretrain-70b-worker-3";
  const std::vector<DeviceAllocation> expected = {
      plugin_device(ns, pod, "trainer", "nvidia.com/gpu", "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc"),
      plugin_device(ns, pod, "trainer", "nvidia.com/gpu", "GPU-7224eaf0-19a8-4e0b-aa47-c73d99c2543b"),
      plugin_device(ns, pod, "trainer", "nvidia.com/gpu", "GPU-4c711de7-8cea-4ace-857b-8f81a2f6e2e0"),
      plugin_device(ns, pod, "trainer", "nvidia.com/gpu", "GPU-c4c45784-a7e8-4f09-9bec-9e71b258cf40"),
      plugin_device(ns, pod, "evaluator", "nvidia.com/gpu", "GPU-a22e31b9-63f8-4dea-9a37-6056d66965a7"),
      plugin_device(ns, pod, "evaluator", "nvidia.com/gpu", "GPU-d516c941-8b87-4217-ac84-74e76a764538"),
      plugin_device(ns, pod, "evaluator", "nvidia.com/gpu", "GPU-3600b47f-6542-425b-a822-40f25fa84f54"),
      plugin_device(ns, pod, "evaluator", "nvidia.com/gpu", "GPU-950c9a75-7954-4eea-b34f-a4d42e2e721b"),
  };
  EXPECT_EQ(list_fixture("list-multi-gpu.json"), expected);
}

TEST(PodResources, DraClaimDevicesAfterPluginDevices) {
  const std::string ns = "inference";
  const std::string pod = "vllm-llama-70b-0";
  const std::vector<DeviceAllocation> expected = {
      dra_device(ns, pod, "vllm", "gpu-0", "vllm-llama-70b-0-gpus-x8mlq", "gpu-node-a17"),
      dra_device(ns, pod, "vllm", "gpu-1", "vllm-llama-70b-0-gpus-x8mlq", "gpu-node-a17"),
      // Per container: device plugin devices first, then claims.
      plugin_device(ns, pod, "metrics-proxy", "nvidia.com/gpu", "GPU-39b4bd1b-3eb3-4d0e-9e43-0c75bcb51ed7"),
      dra_device(ns, pod, "metrics-proxy", "gpu-2-mig-1g10gb-19-3", "shared-mig-slice", "gpu-node-a17"),
  };
  EXPECT_EQ(list_fixture("list-dra.json"), expected);
}

TEST(PodResources, AllocatableDevicesWithoutPods) {
  FakeKubelet kubelet;
  kubelet.set_allocatable_fixture(fixture("allocatable.json"));
  const auto devices = client_of(kubelet)->allocatable();
  ASSERT_TRUE(devices) << devices.error();
  ASSERT_EQ(devices->size(), 8u);
  EXPECT_EQ((*devices)[0], plugin_device("", "", "", "nvidia.com/gpu", "GPU-e46a8f8f-eb27-178a-160e-ae0ab04e8dfc"));
  EXPECT_EQ((*devices)[7], plugin_device("", "", "", "nvidia.com/gpu", "GPU-950c9a75-7954-4eea-b34f-a4d42e2e721b"));
  EXPECT_EQ(kubelet.allocatable_calls(), 1);
  EXPECT_EQ(kubelet.list_calls(), 0);
}

TEST(PodResources, EmptyNodeIsAnEmptyAnswer) {
  FakeKubelet kubelet;
  const auto devices = client_of(kubelet)->list();
  ASSERT_TRUE(devices) << devices.error();
  EXPECT_TRUE(devices->empty());
}

// A busy node's answer over gRPC's default 4 MiB: read whole with the raised limit.
constexpr int kManyPods = 12000;  // about 5.2 MB on the wire

TEST(PodResources, AnswerOverFourMiBIsReadWhole) {
  FakeKubelet kubelet;
  kubelet.set_list(testing::many_pods_response(kManyPods));
  const std::size_t bytes = kubelet.list_bytes();
  RecordProperty("list_bytes", static_cast<int>(bytes));
  ASSERT_GT(bytes, std::size_t{4} << 20);
  ASSERT_LT(bytes, kMaxResponseBytes);
  const auto devices = client_of(kubelet)->list();
  ASSERT_TRUE(devices) << devices.error();
  ASSERT_EQ(devices->size(), std::size_t{kManyPods} * 4);
  EXPECT_EQ(devices->front(), plugin_device("tenant-0", "infer-0", "server", "nvidia.com/gpu", testing::many_pods_device_id(0, 0)));
  EXPECT_EQ(devices->back(), plugin_device("tenant-" + std::to_string((kManyPods - 1) % 40), "infer-" + std::to_string(kManyPods - 1),
                                           "server", "nvidia.com/gpu", testing::many_pods_device_id(kManyPods - 1, 3)));
}

TEST(PodResources, DefaultFourMiBLimitWouldFailTheSameAnswer) {
  // The call below is cancelled mid-message, and gRPC's library shutdown (when its last user
  // goes: this test's channel or the fake) then waits 10 s for the connection that call left
  // behind (grpc_iomgr_shutdown's deadline). Holding the library for the rest of the process
  // skips that wait; nothing here depends on gRPC shutting down.
  grpc_init();
  FakeKubelet kubelet;
  kubelet.set_list(testing::many_pods_response(kManyPods));
  // What a client without the raised limit gets: the same call on a plain channel.
  auto stub = v1::PodResourcesLister::NewStub(
      grpc::CreateChannel("unix:" + kubelet.socket_path(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ListPodResourcesResponse response;
  const grpc::Status status = stub->List(&context, v1::ListPodResourcesRequest{}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
}

TEST(PodResources, UnavailableNamesSocketMethodAndStatus) {
  FakeKubelet kubelet;
  kubelet.set_mode(FakeKubelet::Mode::Unavailable);
  const auto devices = client_of(kubelet)->list();
  ASSERT_FALSE(devices);
  EXPECT_EQ(devices.error(), "podresources unix:" + kubelet.socket_path() + " List: UNAVAILABLE: fake kubelet told to fail");
  const auto allocatable = client_of(kubelet)->allocatable();
  ASSERT_FALSE(allocatable);
  EXPECT_EQ(allocatable.error(),
            "podresources unix:" + kubelet.socket_path() + " GetAllocatableResources: UNAVAILABLE: fake kubelet told to fail");
}

TEST(PodResources, NoKubeletIsUnavailableAtOnce) {
  std::string socket;
  {
    FakeKubelet gone;
    socket = gone.socket_path();
  }
  PodResourcesOptions options;
  options.socket = socket;
  options.timeout = std::chrono::seconds(10);
  auto client = PodResourcesClient::create(options);
  ASSERT_TRUE(client) << client.error();
  const auto started = std::chrono::steady_clock::now();
  const auto devices = (*client)->list();
  ASSERT_FALSE(devices);
  EXPECT_TRUE(devices.error().starts_with("podresources unix:" + socket + " List: UNAVAILABLE")) << devices.error();
  // Fails fast: a missing socket is not waited on until the deadline.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(PodResources, StalledKubeletHitsTheDeadline) {
  FakeKubelet kubelet;
  kubelet.set_mode(FakeKubelet::Mode::Stall);
  const auto started = std::chrono::steady_clock::now();
  const auto devices = client_of(kubelet, std::chrono::milliseconds(300))->list();
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(devices);
  EXPECT_TRUE(devices.error().starts_with("podresources unix:" + kubelet.socket_path() + " List: DEADLINE_EXCEEDED"))
      << devices.error();
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST(PodResources, RecoversWhenTheKubeletComesBack) {
  FakeKubelet kubelet;
  kubelet.set_list_fixture(fixture("list-multi-gpu.json"));
  auto client = client_of(kubelet, std::chrono::seconds(2));
  ASSERT_TRUE(client->list());
  kubelet.stop();
  EXPECT_FALSE(client->list());
  kubelet.start();
  // The channel reconnects with backoff (at most 5 s between attempts, see the client).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  Expected<std::vector<DeviceAllocation>> devices = Unexpected{"not tried"};
  while (!(devices = client->list()) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(devices) << devices.error();
  EXPECT_EQ(devices->size(), 8u);
}

TEST(PodResources, CreateRejectsBadOptions) {
  PodResourcesOptions no_socket;
  no_socket.socket = "";
  EXPECT_FALSE(PodResourcesClient::create(no_socket));
  PodResourcesOptions no_timeout;
  no_timeout.timeout = std::chrono::milliseconds(0);
  const auto client = PodResourcesClient::create(no_timeout);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error(), std::string("podresources unix:") + kDefaultPodResourcesSocket + ": timeout must be positive");
}

TEST(PodResources, TargetKeepsAGivenScheme) {
  EXPECT_EQ(pod_resources_target("/var/lib/kubelet/pod-resources/kubelet.sock"),
            "unix:/var/lib/kubelet/pod-resources/kubelet.sock");
  EXPECT_EQ(pod_resources_target("unix:/run/k.sock"), "unix:/run/k.sock");
  EXPECT_EQ(grpc_status_name(14), "UNAVAILABLE");
  EXPECT_EQ(grpc_status_name(8), "RESOURCE_EXHAUSTED");
}

// The fake itself: fixtures must be exact (no field silently dropped), Get answers from the
// same pods, and calls are counted per method.
TEST(FakeKubelet, RejectsUnknownFieldsInFixtures) {
  FakeKubelet kubelet;
  EXPECT_THROW(kubelet.set_list_json(R"({"podResources": [{"name": "a", "uid": "x"}]})"), std::runtime_error);
  EXPECT_THROW(kubelet.set_list_json("{"), std::runtime_error);
}

TEST(FakeKubelet, GetAnswersOnePodAndCountsCalls) {
  FakeKubelet kubelet;
  kubelet.set_list_fixture(fixture("list-mig.json"));
  auto stub = v1::PodResourcesLister::NewStub(
      grpc::CreateChannel("unix:" + kubelet.socket_path(), grpc::InsecureChannelCredentials()));
  v1::GetPodResourcesRequest request;
  request.set_pod_name("dev-bob-0");
  request.set_pod_namespace("notebooks");
  {
    grpc::ClientContext context;
    v1::GetPodResourcesResponse response;
    ASSERT_TRUE(stub->Get(&context, request, &response).ok());
    EXPECT_EQ(response.pod_resources().containers(0).devices(0).device_ids(1), "MIG-08062287-3dcc-4d25-8849-23ec7c24e015::3");
  }
  {
    request.set_pod_namespace("inference");
    grpc::ClientContext context;
    v1::GetPodResourcesResponse response;
    EXPECT_EQ(stub->Get(&context, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  EXPECT_EQ(kubelet.get_calls(), 2);
  EXPECT_EQ(kubelet.list_calls(), 0);
}

}  // namespace
}  // namespace gpubank::node
