// The exporter's join (attribution/enrich.hpp): dcgm-exporter text as it prints it, the
// kubelet's allocations and the metadata snapshot -> attributed samples and gpubank's own
// per-device series. The mission's validation cases that do not need a process: same name
// different UID, MIG, multi-container and multi-GPU per device, time-slicing, forged
// upstream labels, a cache miss.
#include "attribution/enrich.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "metrics/text_parser.hpp"
#include "support/promtool.hpp"

namespace gpubank::attribution {
namespace {

constexpr const char* kGpu0 = "GPU-5d6c58a2-7c52-3f4e-9f3a-0b1c2d3e4f50";
constexpr const char* kGpu1 = "GPU-0b4e2f8c-3d1a-4c5b-8e7f-6a5b4c3d2e1f";
constexpr const char* kMig = "MIG-2f0c1a4e-8b7d-5e6f-9a0b-1c2d3e4f5a6b";

// dcgm-exporter's label order (node-apis.md): gpu, UUID, pci_bus_id, device, modelName,
// [GPU_I_PROFILE, GPU_I_ID,] Hostname, then its own pod attributes when enabled.
std::string dcgm_line(const char* family, const char* uuid, int gpu, double value, const std::string& extra = "") {
  return std::string(family) + "{gpu=\"" + std::to_string(gpu) + "\",UUID=\"" + uuid +
         "\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia" + std::to_string(gpu) +
         "\",modelName=\"NVIDIA H100 80GB HBM3\"" + extra + ",Hostname=\"node-a\"} " + std::to_string(value) + "\n";
}

metrics::Exposition upstream(const std::string& samples) {
  const std::string text = "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n" + samples;
  auto parsed = metrics::parse_text(text);
  EXPECT_TRUE(parsed.ok()) << parsed.error();
  return *parsed;
}

PodMeta pod(const std::string& uid, const std::string& ns, const std::string& name, const std::string& group) {
  PodMeta m;
  m.uid = uid;
  m.namespace_name = ns;
  m.name = name;
  m.node = "node-a";
  m.created_ms = 1'000;
  m.business_group = group;
  m.owner_id = "u-1042";
  m.cost_center = "cc-77";
  m.queue = group + "-queue";
  m.workload_type = "training";
  m.workload_kind = "PyTorchJob";
  m.workload = "llm-pretrain";
  m.workload_uid = "6c1f1a52-0d1e-4d7a-9a55-0e3c8f3b2a10";
  return m;
}

// A pod with the governance labels metasync reads (docs/attribution.md).
PodMeta governed(PodMeta m) {
  m.created_ms = 1'796'026'365'000;  // 2026-11-30T08:12:45Z
  m.capacity_role = "burst-headroom";
  m.checkpointable = "true";
  m.keep_running_until = "1796493600";  // 2026-12-05T18:00:00Z
  return m;
}

node::DeviceAllocation held(const std::string& ns, const std::string& pod_name, const std::string& container,
                            const std::string& id, const std::string& resource = "nvidia.com/gpu") {
  node::DeviceAllocation a;
  a.namespace_name = ns;
  a.pod = pod_name;
  a.container = container;
  a.resource_name = resource;
  a.device_id = id;
  return a;
}

const NodeInfo kNode{"node-a", "h100-rdma-training", "H100", "full"};

// The labels of the samples of a family, one "k=v,k=v" line per sample.
std::vector<std::string> series(const metrics::Exposition& e, const std::string& family) {
  std::vector<std::string> out;
  const metrics::Family* f = e.find(family);
  if (f == nullptr) return out;
  for (const metrics::Sample& s : f->samples) {
    std::string line;
    for (const metrics::Label& l : s.labels) line += (line.empty() ? "" : ",") + l.name + "=" + l.value;
    out.push_back(line);
  }
  return out;
}

std::string value_of(const metrics::Sample& s, const std::string& name) {
  for (const auto& l : s.labels) {
    if (l.name == name) return l.value;
  }
  return "<absent>";
}

TEST(Enrich, AHeldGpuGetsItsPodsAttributionAndAnIdleOneSaysUnallocated) {
  NodeSnapshot snap{"node-a", 3, 5'000, {pod("uid-a", "search", "trainer-0", "search")}};
  const std::vector<node::DeviceAllocation> allocations{held("search", "trainer-0", "pytorch", kGpu0)};
  const auto result = enrich(upstream(dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu0, 0, 87) + dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu1, 1, 0)),
                             allocations, &snap, {}, kNode);
  const auto lines = series(result.exposition, "DCGM_FI_DEV_GPU_UTIL");
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(lines[0], std::string("gpu=0,UUID=") + kGpu0 +
                          ",pci_bus_id=00000000:18:00.0,device=nvidia0,modelName=NVIDIA H100 80GB HBM3,Hostname=node-a,"
                          "container=pytorch,namespace=search,pod=trainer-0,pod_uid=uid-a,business_group=search,"
                          "owner_id=u-1042,cost_center=cc-77,queue=search-queue,workload_type=training,"
                          "workload_kind=PyTorchJob,workload=llm-pretrain,"
                          "workload_uid=6c1f1a52-0d1e-4d7a-9a55-0e3c8f3b2a10,mapping_status=mapped");
  EXPECT_EQ(value_of(result.exposition.find("DCGM_FI_DEV_GPU_UTIL")->samples[1], "mapping_status"), "unallocated");
  EXPECT_EQ(result.stats.by_status.at("mapped"), 1U);
  EXPECT_EQ(result.stats.by_status.at("unallocated"), 1U);
  // The value is the hardware's, untouched.
  EXPECT_EQ(result.exposition.find("DCGM_FI_DEV_GPU_UTIL")->samples[0].value, 87);
  // gpubank's series: both devices (from the samples, no NVML here), one holder.
  EXPECT_EQ(series(result.exposition, "gpubank_gpu_info").size(), 2U);
  const auto alloc = series(result.exposition, "gpubank_gpu_allocation_info");
  ASSERT_EQ(alloc.size(), 1U);
  EXPECT_EQ(alloc[0], std::string("node=node-a,pool=h100-rdma-training,gpu_model=H100,partition=full,gpu_uuid=") + kGpu0 +
                          ",namespace=search,pod=trainer-0,container=pytorch,business_group=search,owner_id=u-1042,"
                          "cost_center=cc-77,workload_type=training,workload_kind=PyTorchJob,workload=llm-pretrain,"
                          "workload_uid=6c1f1a52-0d1e-4d7a-9a55-0e3c8f3b2a10,queue=search-queue");
  // The pod that holds it, with its creation time.
  EXPECT_EQ(series(result.exposition, "gpubank_pod_start_time_seconds"),
            (std::vector<std::string>{"namespace=search,pod=trainer-0,pod_uid=uid-a,workload_kind=PyTorchJob,"
                                      "workload=llm-pretrain,workload_uid=6c1f1a52-0d1e-4d7a-9a55-0e3c8f3b2a10,business_group=search,"
                                      "owner_id=u-1042"}));
  EXPECT_EQ(result.exposition.find("gpubank_pod_start_time_seconds")->samples[0].value, 1.0);
}

// What the low-utilisation scanner reads from Prometheus: the governance labels on
// gpubank_gpu_allocation_info (never on the device samples, whose series the budget counts)
// and each holding pod's creation time, once per pod however many devices it holds.
TEST(Enrich, GovernanceLabelsOnAllocationsAndOneStartTimePerHoldingPod) {
  PodMeta trainer = governed(pod("uid-a", "search", "trainer-0", "search"));
  PodMeta server = pod("uid-b", "ads", "vllm-0", "ads");
  server.created_ms = 1'796'026'400'500;
  server.capacity_role = "serving-floor";
  PodMeta idle = pod("uid-c", "ads", "vllm-1", "ads");  // in the snapshot, holding nothing
  NodeSnapshot snap{"node-a", 1, 5'000, {trainer, server, idle}};
  const std::string forged = ",capacity_role=\"serving-floor\",keep_running_until=\"4102444800\"";
  const std::vector<node::DeviceAllocation> allocations{
      held("search", "trainer-0", "pytorch", kGpu0), held("search", "trainer-0", "sidecar", kGpu1),
      held("ads", "vllm-0", "server", kMig, "nvidia.com/mig-3g.40gb"),
      held("dev", "unknown-0", "c", "GPU-11111111-2222-3333-4444-555555555555")};
  std::vector<node::GpuDevice> inventory(4);
  inventory[0].uuid = kGpu0;
  inventory[1].uuid = kGpu1;
  inventory[1].index = 1;
  inventory[2].uuid = "GPU-7e2f0c1a-0000-4c5b-8e7f-6a5b4c3d2e1f";
  inventory[2].index = 2;
  inventory[2].mig_enabled = true;
  inventory[2].mig = {node::MigDevice{kMig, 1, 0, "3g.40gb", 0}};
  inventory[3].uuid = "GPU-11111111-2222-3333-4444-555555555555";
  inventory[3].index = 3;
  const auto result = enrich(upstream(dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu0, 0, 3, forged) +
                                      dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu1, 1, 4)),
                             allocations, &snap, inventory, kNode);
  for (const metrics::Sample& s : result.exposition.find("DCGM_FI_DEV_GPU_UTIL")->samples) {
    EXPECT_EQ(value_of(s, "mapping_status"), "mapped");
    for (const char* name : {"capacity_role", "checkpointable", "keep_running_until"}) {
      EXPECT_EQ(value_of(s, name), "<absent>") << name;
    }
  }
  EXPECT_EQ(result.stats.upstream_labels_removed, 2u);  // the forged pair

  const auto alloc = series(result.exposition, "gpubank_gpu_allocation_info");
  ASSERT_EQ(alloc.size(), 4u);
  const std::string device = "node=node-a,pool=h100-rdma-training,gpu_model=H100,partition=full,gpu_uuid=";
  const std::string trainer_tail =
      "business_group=search,owner_id=u-1042,cost_center=cc-77,workload_type=training,workload_kind=PyTorchJob,"
      "workload=llm-pretrain,workload_uid=6c1f1a52-0d1e-4d7a-9a55-0e3c8f3b2a10,queue=search-queue,"
      "capacity_role=burst-headroom,checkpointable=true,keep_running_until=1796493600";
  // In device order (GPU-0b4e..., GPU-1111..., GPU-5d6c..., GPU-7e2f...); the pod the
  // snapshot does not know has its kubelet names alone.
  EXPECT_EQ(alloc[0], device + kGpu1 + ",namespace=search,pod=trainer-0,container=sidecar," + trainer_tail);
  EXPECT_EQ(alloc[1], device + "GPU-11111111-2222-3333-4444-555555555555,namespace=dev,pod=unknown-0,container=c");
  EXPECT_EQ(alloc[2], device + kGpu0 + ",namespace=search,pod=trainer-0,container=pytorch," + trainer_tail);
  EXPECT_EQ(alloc[3], device + "GPU-7e2f0c1a-0000-4c5b-8e7f-6a5b4c3d2e1f,gpu_instance=1,namespace=ads,pod=vllm-0,"
                               "container=server,business_group=ads,owner_id=u-1042,cost_center=cc-77,"
                               "workload_type=training,workload_kind=PyTorchJob,workload=llm-pretrain,"
                               "workload_uid=6c1f1a52-0d1e-4d7a-9a55-0e3c8f3b2a10,queue=ads-queue,"
                               "capacity_role=serving-floor");

  // One per mapped pod that holds a device: not the pod the snapshot does not know, not the
  // one that holds nothing; sorted by namespace and pod; seconds with the milliseconds kept.
  const metrics::Family* starts = result.exposition.find("gpubank_pod_start_time_seconds");
  ASSERT_NE(starts, nullptr);
  EXPECT_EQ(starts->type, metrics::MetricType::gauge);
  EXPECT_EQ(series(result.exposition, "gpubank_pod_start_time_seconds"),
            (std::vector<std::string>{
                "namespace=ads,pod=vllm-0,pod_uid=uid-b,workload_kind=PyTorchJob,workload=llm-pretrain,"
                "workload_uid=6c1f1a52-0d1e-4d7a-9a55-0e3c8f3b2a10,business_group=ads,owner_id=u-1042",
                "namespace=search,pod=trainer-0,pod_uid=uid-a,workload_kind=PyTorchJob,workload=llm-pretrain,"
                "workload_uid=6c1f1a52-0d1e-4d7a-9a55-0e3c8f3b2a10,business_group=search,owner_id=u-1042"}));
  EXPECT_EQ(starts->samples[0].value, 1'796'026'400.5);
  EXPECT_EQ(starts->samples[1].value, 1'796'026'365.0);
  // The families after the upstream's, in the documented order.
  const auto& families = result.exposition.families;
  ASSERT_GE(families.size(), 3u);
  EXPECT_EQ(families[families.size() - 3].name, "gpubank_gpu_info");
  EXPECT_EQ(families[families.size() - 2].name, "gpubank_gpu_allocation_info");
  EXPECT_EQ(families.back().name, "gpubank_pod_start_time_seconds");
  EXPECT_EQ(result.stats.values_dropped, 0u);
  EXPECT_TRUE(metrics::write_text(result.exposition).ok());
}

// The snapshot is signed, but the join checks every value again: a governance value that
// metasync would not have written is dropped from gpubank_gpu_allocation_info and counted,
// and a pod without a creation time has no start-time series (0 would read as 1970).
TEST(Enrich, RefusedGovernanceValuesAreDroppedAndCounted) {
  PodMeta m = pod("uid-a", "search", "trainer-0", "search");
  m.created_ms = 0;
  m.capacity_role = "primary";
  m.checkpointable = "yes";
  m.keep_running_until = "2026-12-05T18:00:00Z";
  NodeSnapshot snap{"node-a", 1, 5'000, {m}};
  const std::vector<node::DeviceAllocation> allocations{held("search", "trainer-0", "pytorch", kGpu0),
                                                        held("search", "trainer-0", "pytorch", kGpu1)};
  const auto result = enrich(upstream(dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu0, 0, 1) + dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu1, 1, 1)),
                             allocations, &snap, {}, kNode);
  const metrics::Family* alloc = result.exposition.find("gpubank_gpu_allocation_info");
  ASSERT_NE(alloc, nullptr);
  ASSERT_EQ(alloc->samples.size(), 2u);
  for (const metrics::Sample& s : alloc->samples) {
    EXPECT_EQ(value_of(s, "capacity_role"), "<absent>");
    EXPECT_EQ(value_of(s, "checkpointable"), "<absent>");
    EXPECT_EQ(value_of(s, "keep_running_until"), "<absent>");
    EXPECT_EQ(value_of(s, "business_group"), "search");  // the rest is kept
  }
  EXPECT_EQ(result.stats.values_dropped, 3u * 2u);  // three values on each of two allocation series
  EXPECT_TRUE(result.exposition.find("gpubank_pod_start_time_seconds")->samples.empty());
  EXPECT_TRUE(metrics::write_text(result.exposition).ok());
}

TEST(Enrich, ACacheMissKeepsTheSampleAsUnknownAndForgedUpstreamLabelsAreReplaced) {
  // dcgm-exporter's own Kubernetes attributes (or a forged page) name another pod: the
  // join decides, and the snapshot knows nothing yet.
  const std::string forged = ",pod=\"ceo-laptop\",namespace=\"finance\",container=\"x\",business_group=\"finance\"";
  const std::vector<node::DeviceAllocation> allocations{held("search", "trainer-0", "pytorch", kGpu0)};
  const auto result = enrich(upstream(dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu0, 0, 50, forged)), allocations, nullptr, {}, kNode);
  const metrics::Sample& s = result.exposition.find("DCGM_FI_DEV_GPU_UTIL")->samples.at(0);
  EXPECT_EQ(value_of(s, "pod"), "trainer-0");
  EXPECT_EQ(value_of(s, "namespace"), "search");
  EXPECT_EQ(value_of(s, "business_group"), "<absent>");
  EXPECT_EQ(value_of(s, "mapping_status"), "unknown");
  EXPECT_EQ(result.stats.upstream_labels_removed, 4U);
  EXPECT_TRUE(metrics::write_text(result.exposition).ok());
}

TEST(Enrich, ASameNameWithAnotherUidNeverInheritsTheOldPodsAttribution) {
  PodMeta old_pod = pod("uid-old", "search", "trainer-0", "search");
  old_pod.deleted_ms = 4'000;  // a tombstone
  PodMeta new_pod = pod("uid-new", "search", "trainer-0", "ads");
  NodeSnapshot snap{"node-a", 7, 5'000, {new_pod, old_pod}};
  const std::vector<node::DeviceAllocation> allocations{held("search", "trainer-0", "pytorch", kGpu0)};
  const auto result = enrich(upstream(dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu0, 0, 1)), allocations, &snap, {}, kNode);
  const metrics::Sample& s = result.exposition.find("DCGM_FI_DEV_GPU_UTIL")->samples.at(0);
  EXPECT_EQ(value_of(s, "pod_uid"), "uid-new");
  EXPECT_EQ(value_of(s, "business_group"), "ads");
}

TEST(Enrich, MigInstancesAreAttributedPerGpuInstanceAndTheParentsSamplesToNoPod) {
  std::vector<node::GpuDevice> inventory(1);
  inventory[0].uuid = kGpu0;
  inventory[0].mig_enabled = true;
  inventory[0].mig = {node::MigDevice{kMig, 1, 0, "3g.40gb", 0},
                      node::MigDevice{"MIG-7a8b9c0d-1e2f-5a3b-8c4d-5e6f7a8b9c0d", 9, 0, "1g.10gb", 0}};
  NodeSnapshot snap{"node-a", 1, 5'000, {pod("uid-n", "nlp", "notebook-0", "nlp")}};
  const std::vector<node::DeviceAllocation> allocations{
      held("nlp", "notebook-0", "lab", kMig, "nvidia.com/mig-3g.40gb")};
  const std::string text = dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu0, 0, 12) +
                           dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu0, 0, 40, ",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\"") +
                           dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu0, 0, 0, ",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"9\"");
  const auto result = enrich(upstream(text), allocations, &snap, inventory, kNode);
  const auto& samples = result.exposition.find("DCGM_FI_DEV_GPU_UTIL")->samples;
  ASSERT_EQ(samples.size(), 3U);
  EXPECT_EQ(value_of(samples[0], "mapping_status"), "mig-parent");
  EXPECT_EQ(value_of(samples[1], "mapping_status"), "mapped");
  EXPECT_EQ(value_of(samples[1], "pod"), "notebook-0");
  EXPECT_EQ(value_of(samples[2], "mapping_status"), "unallocated");
  // gpubank_gpu_info: one per MIG instance (from NVML), none for the MIG-enabled parent.
  EXPECT_EQ(series(result.exposition, "gpubank_gpu_info"),
            (std::vector<std::string>{
                std::string("node=node-a,pool=h100-rdma-training,gpu_model=H100,partition=full,gpu_uuid=") + kGpu0 + ",gpu_instance=1",
                std::string("node=node-a,pool=h100-rdma-training,gpu_model=H100,partition=full,gpu_uuid=") + kGpu0 + ",gpu_instance=9"}));
}

TEST(Enrich, AMigDeviceWithoutAnInventoryIsReportedNotGuessed) {
  const std::vector<node::DeviceAllocation> allocations{held("nlp", "notebook-0", "lab", kMig, "nvidia.com/mig-3g.40gb")};
  const auto result =
      enrich(upstream(dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu0, 0, 40, ",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\"")), allocations,
             nullptr, {}, kNode);
  EXPECT_EQ(result.stats.unresolved_devices, 1U);
  ASSERT_EQ(result.unresolved.size(), 1U);
  EXPECT_EQ(result.unresolved[0], std::string("nlp/notebook-0/lab: ") + kMig);
  EXPECT_EQ(value_of(result.exposition.find("DCGM_FI_DEV_GPU_UTIL")->samples[0], "mapping_status"), "unallocated");
}

TEST(Enrich, ATimeSlicedGpuGivesOneSharedSamplePerHolder) {
  NodeSnapshot snap{"node-a", 1, 5'000, {pod("uid-1", "dev", "a", "search"), pod("uid-2", "dev", "b", "ads")}};
  const std::string uuid_only = std::string(kGpu1).substr(4);
  const std::vector<node::DeviceAllocation> allocations{held("dev", "a", "c", uuid_only + "::0"),
                                                        held("dev", "b", "c", uuid_only + "::1"),
                                                        held("dev", "b", "c", uuid_only + "::2")};
  const auto result = enrich(upstream(dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu1, 1, 60)), allocations, &snap, {}, kNode);
  const auto& samples = result.exposition.find("DCGM_FI_DEV_GPU_UTIL")->samples;
  ASSERT_EQ(samples.size(), 2U);  // b holds two replicas: still one series
  EXPECT_EQ(value_of(samples[0], "business_group"), "search");
  EXPECT_EQ(value_of(samples[1], "business_group"), "ads");
  EXPECT_EQ(value_of(samples[0], "sharing"), "time-sliced");
  EXPECT_EQ(value_of(samples[1], "sharing"), "time-sliced");
  EXPECT_EQ(result.stats.time_sliced, 2U);
  EXPECT_TRUE(metrics::write_text(result.exposition).ok());
}

// dcgm-exporter with its own Kubernetes mapping writes a time-sliced GPU once per pod. With
// its pod labels removed the copies are one series: the join writes each holder once, never
// the holders times the copies (which would be duplicate series on the page).
TEST(Enrich, UpstreamCopiesOfATimeSlicedGpuBecomeOneSamplePerHolder) {
  NodeSnapshot snap{"node-a", 1, 5'000, {pod("uid-1", "dev", "a", "search"), pod("uid-2", "dev", "b", "ads")}};
  const std::string uuid_only = std::string(kGpu1).substr(4);
  const std::vector<node::DeviceAllocation> allocations{held("dev", "a", "c", uuid_only + "::0"),
                                                        held("dev", "b", "c", uuid_only + "::1")};
  const std::string text = dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu1, 1, 60, ",container=\"c\",namespace=\"dev\",pod=\"a\"") +
                           dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu1, 1, 60, ",container=\"c\",namespace=\"dev\",pod=\"b\"");
  const auto result = enrich(upstream(text), allocations, &snap, {}, kNode);
  const auto& samples = result.exposition.find("DCGM_FI_DEV_GPU_UTIL")->samples;
  ASSERT_EQ(samples.size(), 2U);
  EXPECT_EQ(value_of(samples[0], "pod"), "a");
  EXPECT_EQ(value_of(samples[1], "pod"), "b");
  EXPECT_EQ(result.stats.upstream_duplicates, 1U);
  EXPECT_EQ(result.stats.by_status.at("mapped"), 2U);
  auto reparsed = metrics::parse_text(metrics::write_text(result.exposition).value());
  ASSERT_TRUE(reparsed.ok()) << reparsed.error();
}

TEST(Enrich, EveryDeviceOfAMultiContainerPodGoesToItsOwnContainer) {
  NodeSnapshot snap{"node-a", 1, 5'000, {pod("uid-a", "search", "trainer-0", "search")}};
  const std::vector<node::DeviceAllocation> allocations{held("search", "trainer-0", "main", kGpu0),
                                                        held("search", "trainer-0", "sidecar", kGpu1)};
  const auto result = enrich(upstream(dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu0, 0, 90) + dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu1, 1, 10)),
                             allocations, &snap, {}, kNode);
  const auto& samples = result.exposition.find("DCGM_FI_DEV_GPU_UTIL")->samples;
  ASSERT_EQ(samples.size(), 2U);
  EXPECT_EQ(value_of(samples[0], "container"), "main");
  EXPECT_EQ(value_of(samples[1], "container"), "sidecar");
}

TEST(Enrich, ThePageIsValidExpositionTextForTheRealPromtool) {
  NodeSnapshot snap{"node-a", 1, 5'000, {governed(pod("uid-a", "search", "trainer-0", "search"))}};
  const std::vector<node::DeviceAllocation> allocations{held("search", "trainer-0", "pytorch", kGpu0)};
  const auto result = enrich(upstream(dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu0, 0, 87) + dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu1, 1, 0)),
                             allocations, &snap, {}, kNode);
  auto text = metrics::write_text(result.exposition);
  ASSERT_TRUE(text.ok()) << text.error();
  ASSERT_NE(text->find("gpubank_pod_start_time_seconds{"), std::string::npos);
  ASSERT_NE(text->find("keep_running_until=\"1796493600\""), std::string::npos);
  const auto promtool = gpubank::testing::find_promtool();
  ASSERT_TRUE(promtool) << gpubank::testing::kPromtoolMissing;
  gpubank::testing::ScratchDir dir;
  gpubank::testing::write_file(dir.path() / "page.prom", *text);
  const auto lint = gpubank::testing::run_in(dir.path(), promtool->string() + " check metrics < page.prom");
  // Exit 3 is a lint, not an error: dcgm-exporter's own label names (UUID, modelName) are
  // camelCase and stay as dcgm-exporter writes them. Nothing else may be reported.
  EXPECT_TRUE(lint.status == 0 || lint.status == 3) << lint.output;
  std::istringstream lines(lint.output);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_NE(line.find("label names should be written in 'snake_case'"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace gpubank::attribution

namespace gpubank::attribution {
namespace {

std::size_t series_count(const metrics::Exposition& e) {
  std::size_t n = 0;
  for (const metrics::Family& f : e.families) n += f.samples.size();
  return n;
}

// The series budget (issue 30): attribution adds labels, not series. On a node of 8 whole
// GPUs x 30 fields, each GPU held by one container of its own pod, the page has exactly the
// upstream's series plus gpubank's own two per device (gpubank_gpu_info,
// gpubank_gpu_allocation_info) and one per holding pod (gpubank_pod_start_time_seconds);
// a time-sliced GPU adds one device series per extra holder, and that holder's allocation
// and start-time series, nothing else.
TEST(Enrich, AttributionKeepsTheSeriesBudget) {
  std::string text;
  std::vector<std::string> uuids;
  for (int g = 0; g < 8; ++g) {
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-%08x-7c52-3f4e-9f3a-0b1c2d3e4f5%d", 0x5d6c58a2 + g, g);
    uuids.emplace_back(uuid);
  }
  for (int f = 0; f < 30; ++f) {
    const std::string family = "DCGM_FI_FIELD_" + std::to_string(f);
    text += "# TYPE " + family + " gauge\n";
    for (int g = 0; g < 8; ++g) text += dcgm_line(family.c_str(), uuids[static_cast<std::size_t>(g)].c_str(), g, f + g);
  }
  text += "# TYPE go_goroutines gauge\ngo_goroutines 12\n";
  auto page = metrics::parse_text(text);
  ASSERT_TRUE(page.ok()) << page.error();
  ASSERT_EQ(series_count(*page), 241u);

  std::vector<node::DeviceAllocation> allocations;
  NodeSnapshot snapshot{"node-a", 1, 1'000, {}};
  for (int g = 0; g < 8; ++g) {
    const std::string name = "trainer-" + std::to_string(g);
    allocations.push_back(held("search", name, "pytorch", uuids[static_cast<std::size_t>(g)]));
    snapshot.pods.push_back(pod("uid-" + std::to_string(g), "search", name, "search"));
  }
  EnrichResult exclusive = enrich(*page, allocations, &snapshot, {}, kNode);
  EXPECT_EQ(exclusive.stats.by_status["mapped"], 240u);
  // 241 upstream (8 x 30 device samples + go_goroutines) + 8 gpu_info + 8 allocation_info
  // + 8 pod start times (one pod per GPU).
  EXPECT_EQ(series_count(exclusive.exposition), 241u + 8u + 8u + 8u);
  EXPECT_TRUE(metrics::write_text(exclusive.exposition).ok());

  // GPU 0 time-sliced between two more pods (three holders): 30 fields x 2 more series, two
  // more allocation series and two more pod start times.
  allocations.push_back(held("ads", "vllm-0", "server", uuids[0] + "::1"));
  allocations.push_back(held("ads", "vllm-1", "server", uuids[0] + "::2"));
  snapshot.pods.push_back(pod("uid-a", "ads", "vllm-0", "ads"));
  snapshot.pods.push_back(pod("uid-b", "ads", "vllm-1", "ads"));
  std::sort(snapshot.pods.begin(), snapshot.pods.end(), [](const PodMeta& a, const PodMeta& b) { return a.uid < b.uid; });
  EnrichResult shared = enrich(*page, allocations, &snapshot, {}, kNode);
  EXPECT_EQ(series_count(shared.exposition), 241u + 8u + 8u + 8u + 2u * 30u + 2u + 2u);
  EXPECT_EQ(shared.stats.time_sliced, 3u * 30u);
  EXPECT_TRUE(metrics::write_text(shared.exposition).ok());
}

}  // namespace
}  // namespace gpubank::attribution

namespace gpubank::attribution {
namespace {

// Found by enrich_fuzzer: names from the kubelet that are not Kubernetes names (bytes that
// are not UTF-8) reached gpubank_gpu_allocation_info unchecked, and the writer refused the
// whole page, so the exporter would have kept its last page forever. Now they are dropped
// as on the device samples, and two holders left alike are one series.
TEST(Enrich, NamesThatAreNotKubernetesNamesNeverMakeThePageUnwritable) {
  const std::vector<node::DeviceAllocation> allocations{
      held("ads\x8d", "vllm-0", "server", std::string(kGpu0) + "::0"),
      held("ads", "bad pod!", "server", std::string(kGpu0) + "::1"),
      held("ads", "bad pod?", "server", std::string(kGpu0) + "::2")};
  EnrichResult r = enrich(upstream(dcgm_line("DCGM_FI_DEV_GPU_UTIL", kGpu0, 0, 50)), allocations, nullptr, {}, kNode);
  auto text = metrics::write_text(r.exposition);
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_EQ(text->find("ads\x8d"), std::string::npos);
  EXPECT_EQ(text->find("bad pod"), std::string::npos);
  // vllm-0 (its namespace dropped) and one of the two bad pods; the other collided.
  EXPECT_EQ(series(r.exposition, "DCGM_FI_DEV_GPU_UTIL").size(), 2u);
  EXPECT_EQ(r.stats.holder_collisions, 1u);
  EXPECT_EQ(series(r.exposition, "gpubank_gpu_allocation_info").size(), 2u);
}

}  // namespace
}  // namespace gpubank::attribution
