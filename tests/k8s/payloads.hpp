// Objects shaped like `kubectl get -o json` output of real clusters (managedFields,
// ownerReferences, status conditions), for the fake API server. They are written from the
// Kubernetes and Kueue API references, not recorded: no recordings of a real cluster exist
// in this repository or in ../shared. uid, resourceVersion and creationTimestamp are left
// to the fake, which assigns them as an API server would.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace gpubank::k8s::testing {

inline nlohmann::json pod_json(const std::string& ns, const std::string& name, const std::string& node = "gpu-node-1") {
  return nlohmann::json::parse(R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {
    "name": ")" + name + R"(", "namespace": ")" + ns + R"(", "generateName": "train-",
    "labels": {"batch.kubernetes.io/job-name": "train", "kueue.x-k8s.io/queue-name": "team-a"},
    "annotations": {"kueue.x-k8s.io/workload": "job-train-3c1d2"},
    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
      "uid": "0b5c1e8f-3a52-4a57-9a8e-2f4b1d9c7e01", "controller": true, "blockOwnerDeletion": true}],
    "managedFields": [
      {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
       "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:batch.kubernetes.io/job-name": {}},
                    "f:ownerReferences": {".": {}, "k:{\"uid\":\"0b5c1e8f-3a52-4a57-9a8e-2f4b1d9c7e01\"}": {}}}}},
      {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:05Z",
       "fieldsType": "FieldsV1", "subresource": "status",
       "fieldsV1": {"f:status": {"f:conditions": {}, "f:phase": {}, "f:podIP": {}}}}]
  },
  "spec": {
    "nodeName": ")" + node + R"(", "restartPolicy": "Never", "schedulingGates": [],
    "containers": [{"name": "trainer", "image": "registry.example/trainer:1.4",
      "resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"}}}],
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
  },
  "status": {
    "phase": "Running", "podIP": "10.244.3.17", "qosClass": "Burstable",
    "conditions": [
      {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z"},
      {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-01-01T00:00:02Z"},
      {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"},
      {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"}]
  }
})");
}

inline nlohmann::json node_json(const std::string& name) {
  return nlohmann::json::parse(R"({
  "apiVersion": "v1", "kind": "Node",
  "metadata": {
    "name": ")" + name + R"(",
    "labels": {"kubernetes.io/hostname": ")" + name + R"(", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
               "gpubank.dev/pool": "h100-rdma-training"},
    "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
       "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:labels": {"f:kubernetes.io/hostname": {}}}}}]
  },
  "spec": {"podCIDR": "10.244.3.0/24", "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
  "status": {
    "capacity": {"cpu": "192", "memory": "2063731564Ki", "nvidia.com/gpu": "8", "pods": "110"},
    "allocatable": {"cpu": "191", "memory": "2052197164Ki", "nvidia.com/gpu": "8", "pods": "110"},
    "conditions": [
      {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
       "lastHeartbeatTime": "2026-01-01T00:10:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"},
      {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
       "lastHeartbeatTime": "2026-01-01T00:10:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
    "nodeInfo": {"kubeletVersion": "v1.32.3", "containerRuntimeVersion": "containerd://1.7.25",
                 "architecture": "amd64", "operatingSystem": "linux"}
  }
})");
}

inline nlohmann::json workload_json(const std::string& ns, const std::string& name, int generation = 1) {
  auto w = nlohmann::json::parse(R"({
  "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
  "metadata": {
    "name": ")" + name + R"(", "namespace": ")" + ns + R"(",
    "labels": {"kueue.x-k8s.io/job-uid": "0b5c1e8f-3a52-4a57-9a8e-2f4b1d9c7e01"},
    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
      "uid": "0b5c1e8f-3a52-4a57-9a8e-2f4b1d9c7e01", "controller": true, "blockOwnerDeletion": true}],
    "managedFields": [
      {"manager": "kueue", "operation": "Update", "apiVersion": "kueue.x-k8s.io/v1beta2",
       "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:spec": {"f:active": {}, "f:podSets": {}, "f:queueName": {}}}},
      {"manager": "kueue-admission", "operation": "Apply", "apiVersion": "kueue.x-k8s.io/v1beta2",
       "time": "2026-01-01T00:00:01Z", "fieldsType": "FieldsV1", "subresource": "status",
       "fieldsV1": {"f:status": {"f:admission": {}, "f:conditions": {}}}}]
  },
  "spec": {
    "active": true, "queueName": "team-a", "priority": 0,
    "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "trainer",
      "image": "registry.example/trainer:1.4", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}}]
  },
  "status": {
    "admission": {"clusterQueue": "team-a-cq", "podSetAssignments": [{"name": "main", "count": 1,
      "flavors": {"nvidia.com/gpu": "h100"}, "resourceUsage": {"nvidia.com/gpu": "8"}}]},
    "conditions": [
      {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue team-a-cq",
       "lastTransitionTime": "2026-01-01T00:00:01Z", "observedGeneration": 1},
      {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted",
       "lastTransitionTime": "2026-01-01T00:00:01Z", "observedGeneration": 1}]
  }
})");
  w["metadata"]["generation"] = generation;
  return w;
}

inline nlohmann::json cluster_queue_json(const std::string& name) {
  return nlohmann::json::parse(R"({
  "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
  "metadata": {"name": ")" + name + R"(", "generation": 3, "finalizers": ["kueue.x-k8s.io/resource-in-use"],
    "managedFields": [{"manager": "gpubank", "operation": "Apply", "apiVersion": "kueue.x-k8s.io/v1beta2",
       "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:spec": {"f:cohortName": {}, "f:resourceGroups": {}}}}]},
  "spec": {
    "cohortName": "h100-rdma-training", "namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
    "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "h100",
      "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "16", "borrowingLimit": "8"}]}]}],
    "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
  },
  "status": {
    "admittedWorkloads": 2, "pendingWorkloads": 1, "reservingWorkloads": 2,
    "flavorsReservation": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "total": "16", "borrowed": "0"}]}],
    "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads",
      "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 3}]
  }
})");
}

}  // namespace gpubank::k8s::testing
