#include "node/device_id.hpp"

#include <charconv>
#include <cstddef>

namespace gpubank::node {
namespace {

constexpr std::string_view kGpuPrefix = "GPU-";
constexpr std::string_view kMigPrefix = "MIG-";
constexpr std::string_view kReplicaSeparator = "::";

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// NVML's UUID body: 8-4-4-4-12 hex digits, 36 characters. Returned lower-case (NVML's
// spelling), so an upper-cased ID from some plugin still matches the GPU NVML names.
bool nvml_uuid_body(std::string_view s, std::string& out) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !is_hex(s[i])) return false;
  }
  out.clear();
  for (char c : s) out.push_back(c >= 'A' && c <= 'F' ? static_cast<char>(c - 'A' + 'a') : c);
  return true;
}

// A decimal count as plugins print it (%d of a non-negative int): no sign, no leading zero,
// no overflow.
bool decimal(std::string_view s, int& out) {
  if (s.empty() || (s.size() > 1 && s.front() == '0')) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

bool consume(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// nvidia<i>/gi<g>/vgpu<v>
DeviceRef parse_indexed(std::string_view s) {
  DeviceRef ref;
  const auto slash1 = s.find('/');
  if (slash1 == std::string_view::npos) return {};
  const auto slash2 = s.find('/', slash1 + 1);
  if (slash2 == std::string_view::npos) return {};
  std::string_view gpu = s.substr(0, slash1);
  std::string_view gi = s.substr(slash1 + 1, slash2 - slash1 - 1);
  std::string_view vgpu = s.substr(slash2 + 1);
  if (!consume(gpu, "nvidia") || !consume(gi, "gi") || !consume(vgpu, "vgpu")) return {};
  if (!decimal(gpu, ref.gpu_index) || !decimal(gi, ref.gpu_instance) || !decimal(vgpu, ref.replica)) return {};
  ref.kind = DeviceRef::Kind::Indexed;
  return ref;
}

}  // namespace

DeviceRef parse_device_id(std::string_view id) {
  if (id.starts_with("nvidia")) return parse_indexed(id);

  std::string_view body = id;
  std::string_view suffix;
  bool has_suffix = false;
  if (const auto sep = id.find(kReplicaSeparator); sep != std::string_view::npos) {
    body = id.substr(0, sep);
    suffix = id.substr(sep + kReplicaSeparator.size());
    has_suffix = true;
  }

  DeviceRef ref;
  std::string uuid;
  if (has_suffix && !decimal(suffix, ref.replica)) return {};
  if (consume(body, kMigPrefix)) {
    if (!nvml_uuid_body(body, uuid)) return {};
    ref.kind = DeviceRef::Kind::Mig;
    ref.uuid = std::string(kMigPrefix) + uuid;
    return ref;
  }
  // "GPU-<uuid>" or, only as a replica, the bare "<uuid>::<n>".
  const bool prefixed = consume(body, kGpuPrefix);
  if (!prefixed && !has_suffix) return {};
  if (!nvml_uuid_body(body, uuid)) return {};
  ref.kind = has_suffix ? DeviceRef::Kind::Replica : DeviceRef::Kind::Gpu;
  ref.uuid = std::string(kGpuPrefix) + uuid;
  return ref;
}

}  // namespace gpubank::node
