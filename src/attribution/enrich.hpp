// The exporter's join, pure: GPU samples as dcgm-exporter (or the NVML source) writes them,
// which container holds which device (the kubelet's PodResources), who each pod is (the
// metadata snapshot) and what the devices are (NVML, for MIG) -> the same samples with
// attribution labels, plus gpubank's own series (docs/metrics-contract.md): per device,
// per holder of a device (with the pod's governance labels: capacity_role, checkpointable,
// keep_running_until) and per pod holding one (its creation time).
//
// A sample names its device by `UUID` (for a MIG instance, the parent GPU's) and `GPU_I_ID`
// (MIG only). A kubelet device ID names it by its own forms (node/device_id.hpp): GPU-...,
// a time-slicing replica, MIG-... (its parent and GPU instance come from the inventory), or
// nvidia<i>/gi<g> (the index from the inventory). Per sample:
//
//   mapping_status="mapped"       a container holds the device and the snapshot knows its pod
//   mapping_status="unknown"      a container holds it but the snapshot does not know the pod
//                                 (a cache miss: the hardware sample is kept, never dropped)
//   mapping_status="unallocated"  no container holds it
//   mapping_status="mig-parent"   a device-level sample (no GPU_I_ID) of a GPU whose MIG
//                                 instances are held: it belongs to no single pod
//
// A device held by several containers (time-slicing, or a shared resource name) gives one
// sample per holder with sharing="time-sliced": such samples must be shared, never ranked
// as one pod's exclusive GPU. Labels added, after the upstream ones, when known: container,
// namespace, pod, pod_uid, then the allowlist (labels.hpp) less the governance labels, claim
// (DRA), sharing, mapping_status. Upstream labels of those names and of the governance labels
// (dcgm-exporter's own pod attributes, or anything an upstream claims) are removed and
// counted: only the join decides them.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "attribution/snapshot.hpp"
#include "metrics/exposition.hpp"
#include "node/nvml.hpp"
#include "node/pod_resources.hpp"

namespace gpubank::attribution {

// The node the exporter runs on, for gpubank_gpu_info / gpubank_gpu_allocation_info.
struct NodeInfo {
  std::string node;
  std::string pool;        // the node's platform.gpubank.dev/pool label
  std::string gpu_model;   // the pool's gpuModel ("H100")
  std::string partition = "full";  // the pool's partition ("full" or a MIG profile)
};

struct EnrichStats {
  std::uint64_t samples = 0;  // device samples (with a UUID label)
  std::uint64_t passed_through = 0;  // other samples, unchanged
  std::map<std::string, std::uint64_t> by_status;  // mapping_status -> samples
  std::uint64_t time_sliced = 0;     // samples written per holder of a shared device
  std::uint64_t unresolved_devices = 0;  // held device IDs the inventory cannot place (logged)
  std::uint64_t upstream_labels_removed = 0;
  std::uint64_t upstream_duplicates = 0;  // device samples equal to an earlier one once stripped (dropped)
  // Snapshot values check_value refused: per device sample written, and per allocation series
  // for the governance labels (which only gpubank_gpu_allocation_info carries).
  std::uint64_t values_dropped = 0;
  // Holders of one device left with the same labels once refused values were dropped (two
  // pods of one namespace whose names fail the rules): one series each time, not two.
  std::uint64_t holder_collisions = 0;
};

struct EnrichResult {
  metrics::Exposition exposition;
  EnrichStats stats;
  std::vector<std::string> unresolved;  // "<namespace>/<pod>/<container>: <device id>"
};

[[nodiscard]] EnrichResult enrich(const metrics::Exposition& upstream, std::span<const node::DeviceAllocation> allocations,
                                  const NodeSnapshot* snapshot, std::span<const node::GpuDevice> inventory,
                                  const NodeInfo& node);

}  // namespace gpubank::attribution
