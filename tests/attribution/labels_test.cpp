#include "attribution/labels.hpp"

#include <gtest/gtest.h>

#include "attribution/snapshot.hpp"
#include "attribution/pods.hpp"

namespace gpubank::attribution {
namespace {

using testing::Json;
using testing::pod_named;
using testing::pytorch_master;
using testing::with_owner;

PodMeta meta_of(const Json& pod, LabelStats* stats = nullptr) {
  auto meta = pod_meta_from_json(pod, stats);
  EXPECT_TRUE(meta.ok()) << (meta.ok() ? "" : meta.error());
  return meta.ok() ? *meta : PodMeta{};
}

TEST(Labels, AllowlistIsTheContractsAndNothingElse) {
  EXPECT_EQ(kAllowlist.size(), 14u);
  for (const char* name : {"business_group", "owner_id", "cost_center", "queue", "workload_type", "workload_uid",
                           "workload_kind", "workload", "model", "model_version", "pod_uid", "capacity_role",
                           "checkpointable", "keep_running_until"}) {
    EXPECT_TRUE(is_allowlisted(name)) << name;
  }
  for (const char* name : {"prompt", "request_id", "user", "email", "namespace", "pod", "", "Business_group"}) {
    EXPECT_FALSE(is_allowlisted(name)) << name;
  }
  EXPECT_EQ(check_value("prompt", "x"), DropReason::NotAllowlisted);
}

TEST(Labels, EverySourceOfARealPod) {
  LabelStats stats;
  const PodMeta m = meta_of(pytorch_master(), &stats);
  EXPECT_EQ(m.uid, "1f0e2d3c-4b5a-4978-8a6b-5c4d3e2f1a00");
  EXPECT_EQ(m.namespace_name, "team-search");
  EXPECT_EQ(m.name, "llama-ft-master-0");
  EXPECT_EQ(m.node, "gpu-node-17");
  EXPECT_EQ(m.created_ms, 1'796'026'365'000);  // 2026-11-30T08:12:45Z
  EXPECT_FALSE(m.deleted_ms);
  EXPECT_EQ(m.business_group, "search");
  EXPECT_EQ(m.cost_center, "cc-4711");
  EXPECT_EQ(m.owner_id, "u12345");
  EXPECT_EQ(m.workload_type, "training");
  EXPECT_EQ(m.queue, "search-train");
  EXPECT_EQ(m.model, "llama-3.1-70b");
  EXPECT_EQ(m.model_version, "v7");
  EXPECT_EQ(m.workload_kind, "PyTorchJob");
  EXPECT_EQ(m.workload, "llama-ft");
  EXPECT_EQ(m.workload_uid, "9b2f6c1e-3d4a-4f7b-8e21-5c6d7e8f9a01");
  // The governance labels: the pod carries none of them.
  EXPECT_EQ(m.capacity_role, "");
  EXPECT_EQ(m.checkpointable, "");
  EXPECT_EQ(m.keep_running_until, "");
  EXPECT_EQ(stats.total(), 0u);
}

// What the low-utilisation scanner reads from Prometheus alone: the capacity role and
// checkpointable labels as they are, the keep-running-until annotation as Unix seconds.
TEST(Labels, GovernanceLabelsAndTheKeepRunningUntilAnnotation) {
  Json pod = pytorch_master();
  pod["metadata"]["labels"]["platform.gpubank.dev/capacity-role"] = "borrowable-cold";
  pod["metadata"]["labels"]["platform.gpubank.dev/checkpointable"] = "true";
  pod["metadata"]["annotations"]["platform.gpubank.dev/keep-running-until"] = "2026-12-05T18:00:00Z";
  LabelStats stats;
  PodMeta m = meta_of(pod, &stats);
  EXPECT_EQ(m.capacity_role, "borrowable-cold");
  EXPECT_EQ(m.checkpointable, "true");
  EXPECT_EQ(m.keep_running_until, "1796493600");
  EXPECT_EQ(stats.total(), 0u);
  for (const char* role : {"serving-floor", "burst-headroom", "borrowable-cold"}) {
    pod["metadata"]["labels"]["platform.gpubank.dev/capacity-role"] = role;
    EXPECT_EQ(meta_of(pod).capacity_role, role);
  }
  pod["metadata"]["labels"]["platform.gpubank.dev/checkpointable"] = "false";
  EXPECT_EQ(meta_of(pod).checkpointable, "false");
  // The same instant with an offset; a fraction of a second rounds up (the exception still
  // holds at the whole second before it ends).
  pod["metadata"]["annotations"]["platform.gpubank.dev/keep-running-until"] = "2026-12-05T19:00:00+01:00";
  EXPECT_EQ(meta_of(pod).keep_running_until, "1796493600");
  pod["metadata"]["annotations"]["platform.gpubank.dev/keep-running-until"] = "2026-12-05T17:59:59.25Z";
  EXPECT_EQ(meta_of(pod).keep_running_until, "1796493600");
  pod["metadata"]["annotations"]["platform.gpubank.dev/keep-running-until"] = "1970-01-01T00:00:00Z";
  EXPECT_EQ(meta_of(pod).keep_running_until, "0");
}

TEST(Labels, RefusedGovernanceValuesAreDroppedAndCounted) {
  Json pod = pytorch_master();
  auto& labels = pod["metadata"]["labels"];
  auto& annotations = pod["metadata"]["annotations"];
  LabelStats stats;
  for (const char* role : {"Serving-Floor", "primary", "serving_floor"}) {
    labels["platform.gpubank.dev/capacity-role"] = role;
    EXPECT_EQ(meta_of(pod, &stats).capacity_role, "") << role;
  }
  EXPECT_EQ(stats.of("capacity_role", DropReason::NotAllowedValue), 3u);
  labels["platform.gpubank.dev/capacity-role"] = "serving floor";
  EXPECT_EQ(meta_of(pod, &stats).capacity_role, "");
  EXPECT_EQ(stats.of("capacity_role", DropReason::BadCharacter), 1u);
  labels.erase("platform.gpubank.dev/capacity-role");
  for (const char* flag : {"True", "yes", "1"}) {
    labels["platform.gpubank.dev/checkpointable"] = flag;
    EXPECT_EQ(meta_of(pod, &stats).checkpointable, "") << flag;
  }
  EXPECT_EQ(stats.of("checkpointable", DropReason::NotAllowedValue), 3u);
  labels.erase("platform.gpubank.dev/checkpointable");
  // Not an RFC 3339 instant (no zone, a date alone, Unix seconds, a calendar error), or one
  // before 1970: dropped, the pod's other attribution kept.
  for (const char* until : {"2026-12-05T18:00:00", "2026-12-05", "1796493600", "2026-02-30T00:00:00Z", "tomorrow",
                            "1969-12-31T23:59:59Z"}) {
    annotations["platform.gpubank.dev/keep-running-until"] = until;
    const PodMeta m = meta_of(pod, &stats);
    EXPECT_EQ(m.keep_running_until, "") << until;
    EXPECT_EQ(m.business_group, "search") << until;
  }
  EXPECT_EQ(stats.of("keep_running_until", DropReason::MalformedTime), 6u);
  EXPECT_EQ(stats.total(), 13u);
  EXPECT_EQ(to_string(DropReason::MalformedTime), "malformed-time");

  // As a snapshot or the join sees the values: check_value's rules.
  EXPECT_EQ(check_value("capacity_role", "burst-headroom"), std::nullopt);
  EXPECT_EQ(check_value("capacity_role", "burst"), DropReason::NotAllowedValue);
  EXPECT_EQ(check_value("checkpointable", "false"), std::nullopt);
  EXPECT_EQ(check_value("checkpointable", "TRUE"), DropReason::NotAllowedValue);
  EXPECT_EQ(check_value("keep_running_until", "1796493600"), std::nullopt);
  EXPECT_EQ(check_value("keep_running_until", "0"), std::nullopt);
  EXPECT_EQ(check_value("keep_running_until", "01796493600"), DropReason::MalformedTime);  // one spelling per instant
  EXPECT_EQ(check_value("keep_running_until", "1796493600.5"), DropReason::MalformedTime);
  EXPECT_EQ(check_value("keep_running_until", "2026-12-05"), DropReason::MalformedTime);
  EXPECT_EQ(check_value("keep_running_until", std::string(18, '9')), std::nullopt);
  EXPECT_EQ(check_value("keep_running_until", std::string(19, '9')), DropReason::MalformedTime);  // past int64
}

TEST(Labels, QueueFromKueueElseVolcanoAnnotationElseVolcanoLabel) {
  Json pod = pytorch_master();
  pod["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] = "volcano-annotated";
  pod["metadata"]["labels"]["volcano.sh/queue-name"] = "volcano-labelled";
  EXPECT_EQ(meta_of(pod).queue, "search-train");
  pod["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  EXPECT_EQ(meta_of(pod).queue, "volcano-annotated");
  pod["metadata"]["annotations"].erase("scheduling.volcano.sh/queue-name");
  EXPECT_EQ(meta_of(pod).queue, "volcano-labelled");
  pod["metadata"]["labels"].erase("volcano.sh/queue-name");
  EXPECT_EQ(meta_of(pod).queue, "");
  // The first source present decides: an invalid Kueue queue does not fall through.
  pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "bad queue";
  pod["metadata"]["labels"]["volcano.sh/queue-name"] = "volcano-labelled";
  LabelStats stats;
  EXPECT_EQ(meta_of(pod, &stats).queue, "");
  EXPECT_EQ(stats.of("queue", DropReason::BadCharacter), 1u);
}

struct OwnerCase {
  const char* what;
  Json owner;
  Json labels;
  Workload expected;
};

TEST(Labels, TopLevelOwnerWithoutApiCalls) {
  const std::string pod_uid = "1f0e2d3c-4b5a-4978-8a6b-5c4d3e2f1a00";
  const std::vector<OwnerCase> cases = {
      {"Kubeflow job owning the pod", Json{{"apiVersion", "kubeflow.org/v1"}, {"kind", "PyTorchJob"}, {"name", "llama-ft"}, {"uid", "u-job"}},
       Json{{"training.kubeflow.org/job-name", "llama-ft"}, {"training.kubeflow.org/operator-name", "pytorchjob-controller"}},
       {"PyTorchJob", "llama-ft", "u-job"}},
      {"Kubeflow labels, owner not the job: kind from the operator", Json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "launcher"}, {"uid", "u-x"}},
       Json{{"training.kubeflow.org/job-name", "mpi-bench"}, {"training.kubeflow.org/operator-name", "mpijob-controller"}},
       {"MPIJob", "mpi-bench", ""}},
      {"JobSet", Json{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", "pretrain-workers-0"}, {"uid", "u-job"}},
       Json{{"jobset.sigs.k8s.io/jobset-name", "pretrain"}, {"jobset.sigs.k8s.io/jobset-uid", "u-jobset"},
            {"batch.kubernetes.io/job-name", "pretrain-workers-0"}},
       {"JobSet", "pretrain", "u-jobset"}},
      {"KServe raw deployment", Json{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "chat-predictor-6d9f7c"}, {"uid", "u-rs"}},
       Json{{"serving.kserve.io/inferenceservice", "chat"}, {"pod-template-hash", "6d9f7c"}},
       {"InferenceService", "chat", ""}},
      {"Deployment through its ReplicaSet", Json{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "vllm-llama-5f8b9d7c4"}, {"uid", "u-rs"}},
       Json{{"pod-template-hash", "5f8b9d7c4"}, {"app", "vllm-llama"}},
       {"Deployment", "vllm-llama", ""}},
      {"ReplicaSet without the hash is its own top", Json{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "bare-rs"}, {"uid", "u-rs"}},
       Json::object(), {"ReplicaSet", "bare-rs", "u-rs"}},
      {"ReplicaSet whose name does not end in the hash", Json{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "other"}, {"uid", "u-rs"}},
       Json{{"pod-template-hash", "5f8b9d7c4"}}, {"ReplicaSet", "other", "u-rs"}},
      {"Job", Json{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", "eval-1128"}, {"uid", "u-job"}},
       Json{{"batch.kubernetes.io/job-name", "eval-1128"}, {"batch.kubernetes.io/controller-uid", "u-job"}},
       {"Job", "eval-1128", "u-job"}},
      {"LeaderWorkerSet", Json{{"apiVersion", "apps/v1"}, {"kind", "StatefulSet"}, {"name", "llm-serve-0"}, {"uid", "u-sts"}},
       Json{{"leaderworkerset.sigs.k8s.io/name", "llm-serve"}}, {"LeaderWorkerSet", "llm-serve", ""}},
      {"RayCluster", Json{{"apiVersion", "ray.io/v1"}, {"kind", "RayCluster"}, {"name", "rc-1"}, {"uid", "u-rc"}},
       Json{{"ray.io/cluster", "rc-1"}, {"ray.io/node-type", "worker"}}, {"RayCluster", "rc-1", "u-rc"}},
      {"RayJob's cluster", Json{{"apiVersion", "ray.io/v1"}, {"kind", "RayCluster"}, {"name", "tune-raycluster-x2"}, {"uid", "u-rc"}},
       Json{{"ray.io/cluster", "tune-raycluster-x2"}, {"ray.io/originated-from-crd", "RayJob"}, {"ray.io/originated-from-cr-name", "tune"}},
       {"RayJob", "tune", ""}},
      {"Kubeflow Notebook", Json{{"apiVersion", "apps/v1"}, {"kind", "StatefulSet"}, {"name", "alice-nb"}, {"uid", "u-sts"}},
       Json{{"notebook-name", "alice-nb"}, {"statefulset", "alice-nb"}}, {"Notebook", "alice-nb", ""}},
      {"StatefulSet", Json{{"apiVersion", "apps/v1"}, {"kind", "StatefulSet"}, {"name", "etcd"}, {"uid", "u-sts"}},
       Json::object(), {"StatefulSet", "etcd", "u-sts"}},
      {"bare pod", Json(), Json::object(), {"Pod", "llama-ft-master-0", pod_uid}},
      {"bare pod copying a job's labels is still itself", Json(),
       Json{{"batch.kubernetes.io/job-name", "eval-1128"}, {"jobset.sigs.k8s.io/jobset-name", "pretrain"},
            {"serving.kserve.io/inferenceservice", "chat"}},
       {"Pod", "llama-ft-master-0", pod_uid}},
  };
  for (const OwnerCase& c : cases) {
    const Json pod = with_owner(pytorch_master(), c.owner, c.labels);
    const Workload w = resolve_workload(pod);
    EXPECT_EQ(w, c.expected) << c.what << ": got " << w.kind << "/" << w.name << "/" << w.uid;
    const PodMeta m = meta_of(pod);
    EXPECT_EQ(m.workload_kind, c.expected.kind) << c.what;
    EXPECT_EQ(m.workload, c.expected.name) << c.what;
    EXPECT_EQ(m.workload_uid, c.expected.uid) << c.what;
  }
}

TEST(Labels, BadValuesAreDroppedWholeAndCountedByReason) {
  Json pod = pytorch_master();
  auto& labels = pod["metadata"]["labels"];
  labels["platform.gpubank.dev/business-group"] = std::string(129, 'a');
  labels["platform.gpubank.dev/cost-center"] = "cc 4711";
  labels["platform.gpubank.dev/owner-id"] = "alice.smith@example.com";
  labels["platform.gpubank.dev/workload-type"] = "research";
  labels["platform.gpubank.dev/model"] = "-llama";
  LabelStats stats;
  const PodMeta m = meta_of(pod, &stats);
  // Dropped, never truncated or rewritten into something that looks valid.
  EXPECT_EQ(m.business_group, "");
  EXPECT_EQ(m.cost_center, "");
  EXPECT_EQ(m.owner_id, "");
  EXPECT_EQ(m.workload_type, "");
  EXPECT_EQ(m.model, "");
  EXPECT_EQ(m.model_version, "v7");  // the others are unaffected
  EXPECT_EQ(stats.of("business_group", DropReason::TooLong), 1u);
  EXPECT_EQ(stats.of("cost_center", DropReason::BadCharacter), 1u);
  EXPECT_EQ(stats.of("owner_id", DropReason::Email), 1u);
  EXPECT_EQ(stats.of("workload_type", DropReason::NotAllowedValue), 1u);
  EXPECT_EQ(stats.of("model", DropReason::BadCharacter), 1u);
  EXPECT_EQ(stats.total(), 5u);
  // Counted per pod parsed.
  (void)meta_of(pod, &stats);
  EXPECT_EQ(stats.of("owner_id", DropReason::Email), 2u);

  // The limits: 128 bytes for attribution, 253 for names; both ends alphanumeric.
  EXPECT_EQ(check_value("business_group", std::string(128, 'a')), std::nullopt);
  EXPECT_EQ(check_value("workload", std::string(253, 'a')), std::nullopt);
  EXPECT_EQ(check_value("workload", std::string(254, 'a')), DropReason::TooLong);
  EXPECT_EQ(check_value("owner_id", "@"), DropReason::Email);
  EXPECT_EQ(check_value("queue", "team_a.high-prio"), std::nullopt);
  EXPECT_EQ(check_value("queue", "team-a-"), DropReason::BadCharacter);
  EXPECT_EQ(check_value("queue", "téam"), DropReason::BadCharacter);
  EXPECT_EQ(check_value("node", ".."), DropReason::BadCharacter);
  EXPECT_EQ(check_value("queue", ""), std::nullopt);
  for (const char* type : {"training", "inference", "batch", "notebook"}) {
    EXPECT_EQ(check_value("workload_type", type), std::nullopt) << type;
  }
}

TEST(Labels, PromptsRequestIdsAndUserNamesNeverBecomeLabels) {
  const PodMeta m = meta_of(pytorch_master());
  NodeSnapshot s{.node = "gpu-node-17", .generation = 1, .produced_ms = 1, .pods = {m}};
  const std::string wire = encode_snapshot(s, std::string(32, 'k'));
  for (const char* secret : {"summarise-the-quarterly-report", "req-7f3a9c0e", "alice.smith", "Summarise", "example.com"}) {
    EXPECT_EQ(wire.find(secret), std::string::npos) << secret;
  }
}

TEST(Labels, IdentityIsRequiredAndNamed) {
  Json pod = pytorch_master();
  pod["metadata"].erase("uid");
  auto m = pod_meta_from_json(pod);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), "metadata.uid: missing");
  pod = pytorch_master();
  pod["metadata"]["name"] = "Bad Name";
  m = pod_meta_from_json(pod);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), "metadata.name: bad-character");
  pod = pytorch_master();
  pod["metadata"]["creationTimestamp"] = "yesterday";
  m = pod_meta_from_json(pod);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.error().starts_with("metadata.creationTimestamp: ")) << m.error();
  EXPECT_FALSE(pod_meta_from_json(Json::array()).ok());
  // A pending pod has no node.
  const PodMeta pending = meta_of(pod_named("u-pending", "p", ""));
  EXPECT_EQ(pending.node, "");
}

TEST(Labels, PruneKeepsExactlyWhatAttributionReads) {
  std::vector<Json> pods = {pytorch_master()};
  pods.push_back(with_owner(pytorch_master(),
                            Json{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "vllm-5f8b9d7c4"}, {"uid", "u"}},
                            Json{{"pod-template-hash", "5f8b9d7c4"}}));
  pods.push_back(with_owner(pytorch_master(), Json(), Json{{"kueue.x-k8s.io/queue-name", nullptr}}));
  pods.back()["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] = "vq";
  pods.push_back(with_owner(pytorch_master(),
                            Json{{"apiVersion", "ray.io/v1"}, {"kind", "RayCluster"}, {"name", "rc"}, {"uid", "u"}},
                            Json{{"ray.io/cluster", "rc"}, {"ray.io/originated-from-crd", "RayJob"},
                                 {"ray.io/originated-from-cr-name", "tune"}}));
  pods.push_back(pytorch_master());
  pods.back()["metadata"]["labels"]["platform.gpubank.dev/capacity-role"] = "burst-headroom";
  pods.back()["metadata"]["labels"]["platform.gpubank.dev/checkpointable"] = "true";
  pods.back()["metadata"]["annotations"]["platform.gpubank.dev/keep-running-until"] = "2026-12-05T18:00:00Z";
  for (const Json& pod : pods) {
    Json pruned = pod;
    prune_pod(pruned);
    EXPECT_EQ(meta_of(pruned), meta_of(pod)) << pod.dump();
    EXPECT_EQ(pod_finished(pruned), pod_finished(pod));
    EXPECT_LT(pruned.dump().size() * 3, pod.dump().size()) << pruned.dump();
    const std::string text = pruned.dump();
    for (const char* gone : {"managedFields", "PROMPT", "request-id", "platform.gpubank.dev/prompt", "\"user\"", "containerStatuses"}) {
      EXPECT_EQ(text.find(gone), std::string::npos) << gone;
    }
  }
  Json governed = pods.back();
  prune_pod(governed);
  EXPECT_EQ(meta_of(governed).capacity_role, "burst-headroom");
  EXPECT_EQ(meta_of(governed).checkpointable, "true");
  EXPECT_EQ(meta_of(governed).keep_running_until, "1796493600");
  Json finished = pytorch_master();
  finished["status"]["phase"] = "Succeeded";
  prune_pod(finished);
  EXPECT_TRUE(pod_finished(finished));
}

}  // namespace
}  // namespace gpubank::attribution
