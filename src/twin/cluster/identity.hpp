// Deterministic identities of the twin's GPUs, in the forms dcgm-exporter and the NVIDIA
// device plugin print them: `GPU-<uuid>` per device, `MIG-<uuid>` per MIG slice, a PCI bus
// id and a device name. The same inventory always yields the same identities, so metrics
// and events from two runs can be compared line by line.
//
// UUIDs are RFC 4122 version 5 (SHA-1, name-based) in the namespace kGpuNamespace, which is
// itself uuid5(NAMESPACE_URL, "https://gpubank.dev/twin/gpu")
// = 3c480df3-f6b1-5398-9e90-d55e503f4b00. Names: "<node>/<index>" for a GPU,
// "<node>/<index>/<slice>" for a MIG slice (0-based index and slice).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpubank::twin::cluster {

using Uuid = std::array<std::uint8_t, 16>;

// RFC 4122 appendix C: the DNS name space, 6ba7b810-9dad-11d1-80b4-00c04fd430c8.
inline constexpr Uuid kDnsNamespace{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1,
                                    0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8};
// gpubank's namespace for GPU identities (see above).
inline constexpr Uuid kGpuNamespace{0x3c, 0x48, 0x0d, 0xf3, 0xf6, 0xb1, 0x53, 0x98,
                                    0x9e, 0x90, 0xd5, 0x5e, 0x50, 0x3f, 0x4b, 0x00};

// uuid5(ns, name) formatted lowercase 8-4-4-4-12, as Python's uuid.uuid5 prints it.
[[nodiscard]] std::string uuid_v5(const Uuid& ns, std::string_view name);

// "GPU-" + uuid5(kGpuNamespace, "<node>/<index>").
[[nodiscard]] std::string gpu_uuid(std::string_view node, int index);
// "MIG-" + uuid5(kGpuNamespace, "<node>/<index>/<slice>").
[[nodiscard]] std::string mig_uuid(std::string_view node, int index, int slice);
// "00000000:<bus>:00.0" with bus = 0x10 + 0x0E * index as two upper-case hex digits
// (index 0 -> 10, 1 -> 1E, 15 -> E2): distinct per index on a node, like nvidia-smi's.
[[nodiscard]] std::string pci_bus_id(int index);
// "nvidia<index>", the device file name dcgm-exporter reports in its `device` label.
[[nodiscard]] std::string device_name(int index);

}  // namespace gpubank::twin::cluster
