// The twin's node agents (twin/live/node_agents.hpp): the twin's pods read by metasync's
// builder as a cluster's pods are, and each node's dcgm page attributed by the exporter's
// join. platform_serving_test.cpp checks the embedded day's /metrics as a whole.
#include "twin/live/node_agents.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "attribution/labels.hpp"
#include "metrics/text_parser.hpp"
#include "twin/telemetry/dcgm.hpp"

namespace gpubank::twin::live {
namespace {

constexpr const char* kGpu0 = "GPU-5d6c58a2-7c52-3f4e-9f3a-0b1c2d3e4f50";
constexpr const char* kA100 = "GPU-0b4e2f8c-3d1a-4c5b-8e7f-6a5b4c3d2e1f";
constexpr const char* kMig1 = "MIG-2f0c1a4e-8b7d-5e6f-9a0b-1c2d3e4f5a6b";
constexpr const char* kMig2 = "MIG-7a1b2c3d-4e5f-5a6b-8c7d-9e0f1a2b3c4d";

TwinPodSpec job_pod(const std::string& name, const std::string& node, int epoch) {
  TwinPodSpec s;
  s.namespace_name = "search-training";
  s.name = name + "-0";
  s.node = node;
  s.uid = twin_uid("pod", s.namespace_name, s.name, epoch);
  s.created = "2026-12-01T00:00:00Z";
  s.business_group = "search";
  s.cost_center = "CC-1001";
  s.owner_id = "search-user-2";
  s.workload_type = "training";
  s.queue = "h100-rdma-training";
  s.workload = name;
  s.workload_uid = twin_uid("job", s.namespace_name, name, 0);
  s.labels = {{"app", name}};
  return s;
}

node::DeviceAllocation device(const TwinPodSpec& pod, const std::string& resource, const std::string& id) {
  node::DeviceAllocation a;
  a.namespace_name = pod.namespace_name;
  a.pod = pod.name;
  a.container = "main";
  a.resource_name = resource;
  a.device_id = id;
  return a;
}

std::string label(const metrics::Sample& s, std::string_view name) {
  for (const auto& l : s.labels) {
    if (l.name == name) return l.value;
  }
  return "<absent>";
}

// One H100 node and one A100 node in MIG mode (two 3g.40gb instances).
std::vector<TwinNode> nodes() {
  std::vector<telemetry::GpuState> h100(1), a100(2);
  h100[0].uuid = kGpu0;
  h100[0].hostname = "h100-node-1";
  h100[0].model_name = "NVIDIA H100 80GB HBM3";
  for (int i = 0; i < 2; ++i) {
    a100[i].uuid = kA100;
    a100[i].hostname = "a100-node-1";
    a100[i].model_name = "NVIDIA A100-SXM4-80GB";
    a100[i].mig = telemetry::MigInstance{"3g.40gb", i + 1};
  }
  std::vector<TwinNode> out;
  for (const auto& [info, gpus] : {std::pair{attribution::NodeInfo{"h100-node-1", "h100-rdma-training", "H100", "full"}, h100},
                                   std::pair{attribution::NodeInfo{"a100-node-1", "mig-dev", "A100", "3g.40gb"}, a100}}) {
    metrics::Registry page;
    auto dcgm = telemetry::register_dcgm(page);
    EXPECT_TRUE(dcgm.ok());
    EXPECT_TRUE(telemetry::update_dcgm(*dcgm, gpus).ok());
    TwinNode n{info, page.collect(), {}};
    if (info.node == "a100-node-1") {
      node::GpuDevice g;
      g.uuid = kA100;
      g.mig_enabled = true;
      g.mig = {node::MigDevice{kMig1, 1, 0, "3g.40gb", 0}, node::MigDevice{kMig2, 2, 0, "3g.40gb", 0}};
      n.inventory.push_back(g);
    }
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<const metrics::Sample*> samples_of(const metrics::Exposition& e, const std::string& family) {
  std::vector<const metrics::Sample*> out;
  if (const auto* f = e.find(family)) {
    for (const auto& s : f->samples) out.push_back(&s);
  }
  return out;
}

TEST(TwinPods, MetasyncReadsATwinPodAsItReadsAClustersPod) {
  const TwinPodSpec spec = job_pod("llm-pretrain", "h100-node-1", 1);
  auto job = attribution::pod_meta_from_json(pod_object(spec));
  ASSERT_TRUE(job.ok()) << job.error();
  EXPECT_EQ(job->uid, spec.uid);
  EXPECT_EQ(job->node, "h100-node-1");
  EXPECT_EQ(job->business_group, "search");
  EXPECT_EQ(job->cost_center, "CC-1001");
  EXPECT_EQ(job->owner_id, "search-user-2");
  EXPECT_EQ(job->queue, "h100-rdma-training");
  EXPECT_EQ(job->workload_type, "training");
  EXPECT_EQ(job->workload_kind, "Job");
  EXPECT_EQ(job->workload, "llm-pretrain");
  EXPECT_EQ(job->workload_uid, spec.workload_uid);
  EXPECT_EQ(job->created_ms, 1'796'083'200'000);  // 2026-12-01T00:00:00Z
  EXPECT_EQ(job->capacity_role, "");
  EXPECT_EQ(job->checkpointable, "");  // absent, as admission leaves a pod that is not

  TwinPodSpec replica = spec;
  replica.name = "chat-r1-1-0";
  replica.deployment = true;
  replica.workload = "chat";
  replica.workload_type = "inference";
  auto served = attribution::pod_meta_from_json(pod_object(replica));
  ASSERT_TRUE(served.ok()) << served.error();
  EXPECT_EQ(served->workload_kind, "Deployment");
  EXPECT_EQ(served->workload, "chat");
  EXPECT_EQ(served->workload_uid, "");  // a ReplicaSet's UID would be wrong for the Deployment

  // The governance labels the twin knows: a replica's capacity role, a checkpointable job.
  replica.capacity_role = "serving-floor";
  served = attribution::pod_meta_from_json(pod_object(replica));
  ASSERT_TRUE(served.ok()) << served.error();
  EXPECT_EQ(served->capacity_role, "serving-floor");
  TwinPodSpec checkpointed = spec;
  checkpointed.checkpointable = true;
  const nlohmann::json object = pod_object(checkpointed);
  EXPECT_EQ(object["metadata"]["labels"]["platform.gpubank.dev/checkpointable"], "true");
  auto resumable = attribution::pod_meta_from_json(object);
  ASSERT_TRUE(resumable.ok()) << resumable.error();
  EXPECT_EQ(resumable->checkpointable, "true");

  // A new admission is a new pod.
  EXPECT_NE(twin_uid("pod", "ns", "a-0", 1), twin_uid("pod", "ns", "a-0", 2));
  EXPECT_EQ(twin_uid("pod", "ns", "a-0", 1), twin_uid("pod", "ns", "a-0", 1));
}

TEST(NodeAgents, EveryDeviceIsAttributedByTheJoinAndAReadmissionIsANewPod) {
  const TwinPodSpec trainer = job_pod("llm-pretrain", "h100-node-1", 1);
  TwinPodSpec notebook = job_pod("nb", "a100-node-1", 1);
  notebook.workload_type = "notebook";
  const std::vector<TwinNode> n = nodes();
  std::vector<TwinPod> pods{{trainer, {device(trainer, "nvidia.com/gpu", kGpu0)}},
                            {notebook, {device(notebook, "nvidia.com/mig-3g.40gb", kMig2)}}};
  NodeAgents agents;
  const metrics::Exposition first = agents.scrape(pods, n, 1'000);
  for (const auto* s : samples_of(first, "DCGM_FI_DEV_POWER_USAGE")) {
    const std::string uuid = label(*s, "UUID"), gi = label(*s, "GPU_I_ID");
    if (uuid == kGpu0) {
      EXPECT_EQ(label(*s, "mapping_status"), "mapped");
      EXPECT_EQ(label(*s, "pod_uid"), trainer.uid);
      EXPECT_EQ(label(*s, "business_group"), "search");
    } else if (gi == "2") {
      EXPECT_EQ(label(*s, "pod"), "nb-0");
      EXPECT_EQ(label(*s, "workload_type"), "notebook");
    } else {
      EXPECT_EQ(gi, "1");
      EXPECT_EQ(label(*s, "mapping_status"), "unallocated");
      EXPECT_EQ(label(*s, "pod"), "<absent>");
    }
  }
  EXPECT_EQ(samples_of(first, "DCGM_FI_DEV_POWER_USAGE").size(), 3U);
  EXPECT_EQ(samples_of(first, "gpubank_gpu_info").size(), 3U);
  ASSERT_EQ(samples_of(first, "gpubank_gpu_allocation_info").size(), 2U);
  // One start time per pod, from its creationTimestamp, merged over the two nodes.
  const auto starts = samples_of(first, "gpubank_pod_start_time_seconds");
  ASSERT_EQ(starts.size(), 2U);
  for (const auto* s : starts) EXPECT_EQ(s->value, 1'796'083'200.0) << label(*s, "pod");
  EXPECT_EQ(label(*starts[0], "pod_uid"), trainer.uid);
  EXPECT_EQ(label(*starts[1], "pod_uid"), notebook.uid);
  // Every sample of the two held devices is mapped, every other device sample is not.
  std::size_t held_samples = 0, device_samples = 0;
  for (const auto& f : first.families) {
    for (const auto& s : f.samples) {
      if (label(s, "UUID") == "<absent>") continue;
      ++device_samples;
      const bool held = label(s, "UUID") == kGpu0 || label(s, "GPU_I_ID") == "2";
      held_samples += held ? 1 : 0;
      EXPECT_EQ(label(s, "mapping_status") == "mapped", held) << f.name;
    }
  }
  EXPECT_GE(held_samples, 20U);
  EXPECT_EQ(agents.last_stats().by_status.at("mapped"), held_samples);
  EXPECT_EQ(agents.last_stats().samples, device_samples);
  // The twin's dcgm pages carry dcgm-exporter's own pod, namespace and container labels on
  // every device sample; the join removes them and writes its own.
  EXPECT_EQ(agents.last_stats().upstream_labels_removed, 3U * agents.last_stats().samples);

  // The trainer is stopped and admitted again: its old pod is a tombstone for five minutes,
  // the new one (same name, new UID) takes the device and never the old attribution.
  const TwinPodSpec again = job_pod("llm-pretrain", "h100-node-1", 2);
  pods[0] = TwinPod{again, {device(again, "nvidia.com/gpu", kGpu0)}};
  const metrics::Exposition second = agents.scrape(pods, n, 2'000);
  for (const auto* s : samples_of(second, "DCGM_FI_DEV_POWER_USAGE")) {
    if (label(*s, "UUID") == kGpu0) {
      EXPECT_EQ(label(*s, "pod_uid"), again.uid);
    }
  }
  const auto snap = agents.builder().snapshot("h100-node-1");
  ASSERT_TRUE(snap.has_value());
  ASSERT_EQ(snap->pods.size(), 2U);
  for (const auto& p : snap->pods) EXPECT_EQ(p.deleted_ms.has_value(), p.uid == trainer.uid);
  (void)agents.scrape(pods, n, 2'000 + 5 * 60'000 + 1);
  EXPECT_EQ(agents.builder().snapshot("h100-node-1")->pods.size(), 1U);
}

}  // namespace
}  // namespace gpubank::twin::live
