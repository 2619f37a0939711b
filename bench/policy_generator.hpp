// A large, valid, deterministic policy set for the benchmarks: one PlatformGuardrails and
// thousands of GPUQuotaPolicy, InferenceScalingPolicy, LowUtilizationPolicy and
// CapacityLease objects plus a few TidalPolicy objects, as one YAML stream. The same seed
// always gives the same text (the generator uses its own bounded draws, not the
// implementation-defined std::uniform_int_distribution).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpubank::bench {

struct GeneratorOptions {
  std::uint64_t seed = 20240601;
  int pools = 40;
  int groups = 200;
  int pools_per_group = 12;        // each group has limits (and one quota) on this many pools
  int inference_policies = 3000;
  int low_utilization_policies = 1600;
  int leases = 2990;
  int tidal_policies = 9;
  int pool_capacity = 2048;        // GPUs per pool; guarantees and leases must fit
  bool keda_scalable_refs = false;  // workloadRefs only of kinds KEDA can scale (no RayService)
};

struct GeneratedSet {
  std::string yaml;            // every object, "---"-separated
  std::size_t objects = 0;     // documents in `yaml`
  std::size_t quotas = 0;
  std::size_t inference = 0;
  std::size_t low_utilization = 0;
  std::size_t leases = 0;
  std::size_t tidal = 0;
};

// Throws std::invalid_argument when the options cannot give a valid set (for example
// more low-utilization policies than distinct matches).
GeneratedSet generate_policy_set(const GeneratorOptions& options = {});

}  // namespace gpubank::bench
