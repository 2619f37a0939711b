// Pods as `kubectl get pod -o json` prints them (and as a watch delivers them, managedFields
// included): a PyTorchJob master on an 8-GPU node, with everything a real pod carries that
// attribution must ignore (a prompt in an environment variable, a request-id annotation,
// status, conditions). Tests change labels and owners from there.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace gpubank::attribution::testing {

using Json = nlohmann::json;

inline constexpr const char* kPyTorchMaster = R"({
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "annotations": {
      "kubectl.kubernetes.io/default-container": "pytorch",
      "gateway.example.com/request-id": "req-7f3a9c0e-5b1d-4e2a-9f44-2d8c1b7e6a10",
      "scheduling.k8s.io/group-name": "llama-ft"
    },
    "creationTimestamp": "2026-11-30T08:12:45Z",
    "generation": 1,
    "labels": {
      "kueue.x-k8s.io/podset": "master",
      "kueue.x-k8s.io/queue-name": "search-train",
      "platform.gpubank.dev/business-group": "search",
      "platform.gpubank.dev/cost-center": "cc-4711",
      "platform.gpubank.dev/owner-id": "u12345",
      "platform.gpubank.dev/workload-type": "training",
      "platform.gpubank.dev/model": "llama-3.1-70b",
      "platform.gpubank.dev/model-version": "v7",
      "platform.gpubank.dev/prompt": "summarise-the-quarterly-report",
      "training.kubeflow.org/job-name": "llama-ft",
      "training.kubeflow.org/job-role": "master",
      "training.kubeflow.org/operator-name": "pytorchjob-controller",
      "training.kubeflow.org/replica-index": "0",
      "training.kubeflow.org/replica-type": "master",
      "user": "alice.smith"
    },
    "managedFields": [
      {
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:training.kubeflow.org/job-name": {}}},
                     "f:spec": {"f:containers": {"k:{\"name\":\"pytorch\"}": {".": {}, "f:image": {}}}}},
        "manager": "training-operator",
        "operation": "Update",
        "time": "2026-11-30T08:12:45Z"
      },
      {
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:phase": {}, "f:podIP": {}}},
        "manager": "kubelet",
        "operation": "Update",
        "subresource": "status",
        "time": "2026-11-30T08:13:20Z"
      }
    ],
    "name": "llama-ft-master-0",
    "namespace": "team-search",
    "ownerReferences": [
      {
        "apiVersion": "kubeflow.org/v1",
        "blockOwnerDeletion": true,
        "controller": true,
        "kind": "PyTorchJob",
        "name": "llama-ft",
        "uid": "9b2f6c1e-3d4a-4f7b-8e21-5c6d7e8f9a01"
      }
    ],
    "resourceVersion": "48213377",
    "uid": "1f0e2d3c-4b5a-4978-8a6b-5c4d3e2f1a00"
  },
  "spec": {
    "containers": [
      {
        "name": "pytorch",
        "image": "registry.example.com/ml/llama-train:2026.11",
        "command": ["torchrun", "--nproc-per-node=8", "train.py"],
        "env": [
          {"name": "PROMPT", "value": "Summarise the quarterly report for alice.smith@example.com"},
          {"name": "MASTER_PORT", "value": "23456"},
          {"name": "PET_NNODES", "value": "2"}
        ],
        "resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access-x7k2p", "readOnly": true}]
      }
    ],
    "dnsPolicy": "ClusterFirst",
    "enableServiceLinks": true,
    "nodeName": "gpu-node-17",
    "preemptionPolicy": "PreemptLowerPriority",
    "priority": 0,
    "restartPolicy": "OnFailure",
    "schedulerName": "default-scheduler",
    "serviceAccount": "default",
    "serviceAccountName": "default",
    "terminationGracePeriodSeconds": 30,
    "tolerations": [
      {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
      {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300}
    ],
    "volumes": [{"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}]
  },
  "status": {
    "conditions": [
      {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T08:12:47Z", "status": "True", "type": "PodReadyToStartContainers"},
      {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T08:12:45Z", "status": "True", "type": "Initialized"},
      {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T08:13:20Z", "status": "True", "type": "Ready"},
      {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T08:12:45Z", "status": "True", "type": "PodScheduled"}
    ],
    "containerStatuses": [
      {
        "containerID": "containerd://5a4b3c2d1e0f",
        "image": "registry.example.com/ml/llama-train:2026.11",
        "imageID": "registry.example.com/ml/llama-train@sha256:0c1d2e3f4a5b6c7d8e9f00112233445566778899aabbccddeeff001122334455",
        "lastState": {},
        "name": "pytorch",
        "ready": true,
        "restartCount": 0,
        "started": true,
        "state": {"running": {"startedAt": "2026-11-30T08:13:19Z"}}
      }
    ],
    "hostIP": "10.0.4.17",
    "phase": "Running",
    "podIP": "10.8.3.17",
    "podIPs": [{"ip": "10.8.3.17"}],
    "qosClass": "Burstable",
    "startTime": "2026-11-30T08:12:45Z"
  }
})";

inline Json pytorch_master() { return Json::parse(kPyTorchMaster); }

// The PyTorchJob master with another identity: uid, name, node ("" for a pending pod).
inline Json pod_named(const std::string& uid, const std::string& name, const std::string& node,
                      const std::string& ns = "team-search") {
  Json pod = pytorch_master();
  pod["metadata"]["uid"] = uid;
  pod["metadata"]["name"] = name;
  pod["metadata"]["namespace"] = ns;
  if (node.empty()) {
    pod["spec"].erase("nodeName");
    pod["status"] = Json{{"phase", "Pending"}};
  } else {
    pod["spec"]["nodeName"] = node;
  }
  return pod;
}

// The pod with its controller owner replaced (null: none) and `labels` merged in (a null
// value removes a label).
inline Json with_owner(Json pod, const Json& owner, const Json& labels = Json::object()) {
  if (owner.is_null()) {
    pod["metadata"].erase("ownerReferences");
  } else {
    Json ref = owner;
    ref["controller"] = true;
    ref["blockOwnerDeletion"] = true;
    pod["metadata"]["ownerReferences"] = Json::array({ref});
  }
  for (const char* kubeflow : {"training.kubeflow.org/job-name", "training.kubeflow.org/job-role",
                               "training.kubeflow.org/operator-name", "training.kubeflow.org/replica-index",
                               "training.kubeflow.org/replica-type"}) {
    pod["metadata"]["labels"].erase(kubeflow);
  }
  for (const auto& [key, value] : labels.items()) {
    if (value.is_null()) {
      pod["metadata"]["labels"].erase(key);
    } else {
      pod["metadata"]["labels"][key] = value;
    }
  }
  return pod;
}

}  // namespace gpubank::attribution::testing
