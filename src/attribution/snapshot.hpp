// The metadata snapshot: what `gpubank metasync` knows about the pods of one node, and the
// only thing `gpubank exporter` knows about pods. The exporter holds no Kubernetes
// credentials: it reads a signed snapshot (over HTTP with ETag, or from a file) and joins
// it with the kubelet's PodResources answer and the GPU samples.
//
//   PodMeta       one pod, keyed by its UID: where it runs, and the attribution labels
//                 (labels.hpp's allowlist only), as they were when the pod was first seen
//                 (a later re-organisation does not rewrite a running pod's history)
//   NodeSnapshot  the pods of one node, a generation that grows with every change of its
//                 content (and only then), the time of that change; deleted pods stay as
//                 tombstones (deleted_ms set) for the tombstone period, so the last samples
//                 still count for them
//
// Wire form: canonical JSON (keys sorted, no insignificant whitespace) of the snapshot
// ("version": 1; field names in docs/attribution.md; fields added later are optional, so a
// snapshot of an older metasync still decodes), wrapped as
// {"snapshot": <canonical text as a string>, "hmacSha256": "<64 hex>"}; the HMAC is over
// the exact bytes of the canonical text with the shared key. Decoding verifies the HMAC
// (constant-time compare) before parsing the inner text, and refuses: a bad or missing
// signature, oversized input (kMaxSnapshotBytes), more than kMaxPods pods, unknown fields,
// wrong types, values labels.hpp would not accept, duplicate UIDs, an inner text that is not
// canonical. The error names the field and the rule. Pure except the file functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"

namespace gpubank::attribution {

inline constexpr std::size_t kMaxSnapshotBytes = std::size_t{64} << 20;
inline constexpr std::size_t kMaxPods = 100'000;

struct PodMeta {
  std::string uid{};
  std::string namespace_name{};
  std::string name{};
  std::string node{};
  std::int64_t created_ms = 0;               // metadata.creationTimestamp
  std::optional<std::int64_t> deleted_ms{};  // set while a tombstone
  // The allowlisted attribution (labels.hpp); empty: unknown.
  std::string business_group{};
  std::string owner_id{};
  std::string cost_center{};
  std::string queue{};
  std::string workload_type{};
  std::string workload_kind{};  // the top-level owner's kind (PyTorchJob, Deployment, ..., Pod)
  std::string workload{};       // and its name
  std::string workload_uid{};   // and its UID
  std::string model{};
  std::string model_version{};
  // What governance reads of the pod (docs/attribution.md): serving-floor, burst-headroom or
  // borrowable-cold; "true" or "false"; until when the pod must not be stopped, as decimal
  // Unix seconds. Empty: unknown.
  std::string capacity_role{};
  std::string checkpointable{};
  std::string keep_running_until{};
  friend bool operator==(const PodMeta&, const PodMeta&) = default;
};

struct NodeSnapshot {
  std::string node{};
  std::int64_t generation = 0;   // grows with every change of the node's pods
  std::int64_t produced_ms = 0;  // when this generation was made (its change), ms since 1970
  std::vector<PodMeta> pods{};   // sorted by uid
  friend bool operator==(const NodeSnapshot&, const NodeSnapshot&) = default;

  // The pod a PodResources entry (namespace, name) means: the live pod of that name, else
  // the most recently deleted tombstone (its last samples); nullptr when none. PodResources
  // carries no UID, so a reused name resolves to the pod that exists now.
  [[nodiscard]] const PodMeta* resolve(std::string_view namespace_name, std::string_view name) const;
};

// The signed wire form.
[[nodiscard]] std::string encode_snapshot(const NodeSnapshot& snapshot, std::string_view key);
// Verifies and decodes; the error is "<field>: <rule>".
[[nodiscard]] Expected<NodeSnapshot> decode_snapshot(std::string_view wire, std::string_view key);

// Atomic replacement: write to a temporary file in the same directory, fsync it, rename it
// over `path`, fsync the directory. A reader sees the old file or the new one, never half.
[[nodiscard]] Expected<bool> write_snapshot_file(const std::string& path, const NodeSnapshot& snapshot,
                                                 std::string_view key);
[[nodiscard]] Expected<NodeSnapshot> read_snapshot_file(const std::string& path, std::string_view key);
// Removes what a writer killed between create and rename left in `dir`: files named as
// write_snapshot_file names its temporaries ("<name>.json.tmp-<pid>-<n>") by another process
// than this one. A reader never opens them (it reads "<node>.json" alone); without this they
// would pile up, one per kill. One metasync writes a directory. Returns the names removed.
[[nodiscard]] Expected<std::vector<std::string>> remove_stale_temporaries(const std::string& dir);

// The shared key, from a file both sides read the same way: its bytes, less trailing
// whitespace (so that `openssl rand -hex 32 > key` works; the newline is not part of the
// key). Refused: an unreadable file, one larger than 64 KiB, and a key shorter than
// kMinKeyBytes (an HMAC key should have the hash's 32 bytes of strength).
inline constexpr std::size_t kMinKeyBytes = 32;
[[nodiscard]] Expected<std::string> read_hmac_key_file(const std::string& path);

}  // namespace gpubank::attribution
