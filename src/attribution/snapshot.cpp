#include "attribution/snapshot.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "attribution/labels.hpp"

namespace gpubank::attribution {

namespace {

using Json = nlohmann::json;

constexpr int kFormatVersion = 1;

// The optional string fields of a pod on the wire, with the label name check_value knows
// them by.
struct StringField {
  std::string_view wire;
  std::string_view label;
  std::string PodMeta::*member;
};
// Every one is optional: left out when empty, so that a snapshot of a metasync older than a
// field (capacityRole, checkpointable, keepRunningUntil) still decodes.
constexpr std::array<StringField, 13> kAttributionFields{{
    {"businessGroup", "business_group", &PodMeta::business_group},
    {"ownerId", "owner_id", &PodMeta::owner_id},
    {"costCenter", "cost_center", &PodMeta::cost_center},
    {"queue", "queue", &PodMeta::queue},
    {"workloadType", "workload_type", &PodMeta::workload_type},
    {"workloadKind", "workload_kind", &PodMeta::workload_kind},
    {"workload", "workload", &PodMeta::workload},
    {"workloadUid", "workload_uid", &PodMeta::workload_uid},
    {"model", "model", &PodMeta::model},
    {"modelVersion", "model_version", &PodMeta::model_version},
    {"capacityRole", "capacity_role", &PodMeta::capacity_role},
    {"checkpointable", "checkpointable", &PodMeta::checkpointable},
    {"keepRunningUntil", "keep_running_until", &PodMeta::keep_running_until},
}};
// Required, non-empty.
constexpr std::array<StringField, 4> kIdentityFields{{
    {"uid", "uid", &PodMeta::uid},
    {"namespace", "namespace", &PodMeta::namespace_name},
    {"name", "name", &PodMeta::name},
    {"node", "node", &PodMeta::node},
}};

std::string hmac_hex(std::string_view text, std::string_view key) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int length = 0;
  // A zero-length key is legal for HMAC; OpenSSL wants a non-null pointer for it.
  static const unsigned char kEmpty = 0;
  const void* key_data = key.empty() ? static_cast<const void*>(&kEmpty) : key.data();
  HMAC(EVP_sha256(), key_data, static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
       text.size(), mac.data(), &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 0xf];
  }
  return out;
}

bool lower_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Json pod_json(const PodMeta& pod) {
  Json j = Json::object();
  for (const StringField& f : kIdentityFields) j[std::string(f.wire)] = pod.*f.member;
  for (const StringField& f : kAttributionFields) {
    if (!(pod.*f.member).empty()) j[std::string(f.wire)] = pod.*f.member;
  }
  j["createdMs"] = pod.created_ms;
  if (pod.deleted_ms) j["deletedMs"] = *pod.deleted_ms;
  return j;
}

// A non-negative integer that fits an int64, or the error text.
std::optional<std::string> read_count(const Json& v, std::int64_t& out) {
  if (!v.is_number_integer()) return "not an integer";
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return "out of range";
    }
    out = static_cast<std::int64_t>(v.get<std::uint64_t>());
    return std::nullopt;
  }
  out = v.get<std::int64_t>();
  if (out < 0) return "must not be negative";
  return std::nullopt;
}

Expected<PodMeta> decode_pod(const Json& j, const std::string& at, const std::string& node) {
  if (!j.is_object()) return Unexpected{at + ": not an object"};
  PodMeta pod;
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    const Json& value = item.value();
    const std::string field = at + "." + key;
    const auto string_field = [&](const auto& table) -> const StringField* {
      for (const StringField& f : table) {
        if (f.wire == key) return &f;
      }
      return nullptr;
    };
    const StringField* f = string_field(kIdentityFields);
    if (f == nullptr) f = string_field(kAttributionFields);
    if (f != nullptr) {
      if (!value.is_string()) return Unexpected{field + ": not a string"};
      std::string s = value.get<std::string>();
      if (const auto bad = check_value(f->label, s)) return Unexpected{field + ": " + std::string(to_string(*bad))};
      pod.*f->member = std::move(s);
    } else if (key == "createdMs") {
      if (auto e = read_count(value, pod.created_ms)) return Unexpected{field + ": " + *e};
    } else if (key == "deletedMs") {
      std::int64_t deleted = 0;
      if (auto e = read_count(value, deleted)) return Unexpected{field + ": " + *e};
      pod.deleted_ms = deleted;
    } else {
      return Unexpected{field + ": unknown field"};
    }
  }
  for (const StringField& f : kIdentityFields) {
    if ((pod.*f.member).empty()) return Unexpected{at + "." + std::string(f.wire) + ": missing"};
  }
  if (!j.contains("createdMs")) return Unexpected{at + ".createdMs: missing"};
  if (pod.node != node) return Unexpected{at + ".node: not the snapshot's node"};
  return pod;
}

Expected<NodeSnapshot> decode_inner(const std::string& text) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Unexpected{"snapshot: not JSON"};
  if (!j.is_object()) return Unexpected{"snapshot: not an object"};
  // The signer writes canonical text; anything else (duplicate keys among them) is not
  // what was signed, whatever the HMAC says.
  if (j.dump() != text) return Unexpected{"snapshot: not canonical JSON"};
  for (const auto& [key, value] : j.items()) {
    if (key != "version" && key != "node" && key != "generation" && key != "producedMs" && key != "pods") {
      return Unexpected{key + ": unknown field"};
    }
  }
  std::int64_t version = 0;
  if (!j.contains("version")) return Unexpected{"version: missing"};
  if (auto e = read_count(j["version"], version)) return Unexpected{"version: " + *e};
  if (version != kFormatVersion) return Unexpected{"version: " + std::to_string(version) + " is not 1"};
  NodeSnapshot snapshot;
  if (!j.contains("node")) return Unexpected{"node: missing"};
  if (!j["node"].is_string()) return Unexpected{"node: not a string"};
  snapshot.node = j["node"].get<std::string>();
  if (snapshot.node.empty()) return Unexpected{"node: missing"};
  if (const auto bad = check_value("node", snapshot.node)) return Unexpected{"node: " + std::string(to_string(*bad))};
  for (const auto& [key, out] : {std::pair<const char*, std::int64_t*>{"generation", &snapshot.generation},
                                 std::pair<const char*, std::int64_t*>{"producedMs", &snapshot.produced_ms}}) {
    if (!j.contains(key)) return Unexpected{std::string(key) + ": missing"};
    if (auto e = read_count(j[key], *out)) return Unexpected{std::string(key) + ": " + *e};
  }
  if (!j.contains("pods")) return Unexpected{"pods: missing"};
  const Json& pods = j["pods"];
  if (!pods.is_array()) return Unexpected{"pods: not an array"};
  if (pods.size() > kMaxPods) return Unexpected{"pods: more than " + std::to_string(kMaxPods)};
  std::set<std::string> uids;
  snapshot.pods.reserve(pods.size());
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const std::string at = "pods[" + std::to_string(i) + "]";
    auto pod = decode_pod(pods[i], at, snapshot.node);
    if (!pod) return Unexpected{pod.error()};
    if (!uids.insert(pod->uid).second) return Unexpected{at + ".uid: duplicate \"" + pod->uid + "\""};
    if (!snapshot.pods.empty() && snapshot.pods.back().uid > pod->uid) return Unexpected{at + ".uid: not sorted"};
    snapshot.pods.push_back(std::move(*pod));
  }
  return snapshot;
}

std::string errno_text(int error) { return std::strerror(error); }

}  // namespace

const PodMeta* NodeSnapshot::resolve(std::string_view namespace_name, std::string_view name) const {
  const PodMeta* best = nullptr;
  for (const PodMeta& pod : pods) {
    if (pod.namespace_name != namespace_name || pod.name != name) continue;
    if (best == nullptr) {
      best = &pod;
      continue;
    }
    const bool live = !pod.deleted_ms, best_live = !best->deleted_ms;
    if (live != best_live) {
      if (live) best = &pod;  // the pod that exists now beats every tombstone
    } else if (live ? pod.created_ms > best->created_ms : *pod.deleted_ms > *best->deleted_ms) {
      best = &pod;
    }
  }
  return best;
}

std::string encode_snapshot(const NodeSnapshot& snapshot, std::string_view key) {
  std::vector<const PodMeta*> sorted;
  sorted.reserve(snapshot.pods.size());
  for (const PodMeta& pod : snapshot.pods) sorted.push_back(&pod);
  std::sort(sorted.begin(), sorted.end(), [](const PodMeta* a, const PodMeta* b) { return a->uid < b->uid; });
  Json pods = Json::array();
  for (const PodMeta* pod : sorted) pods.push_back(pod_json(*pod));
  Json inner = Json::object();
  inner["version"] = kFormatVersion;
  inner["node"] = snapshot.node;
  inner["generation"] = snapshot.generation;
  inner["producedMs"] = snapshot.produced_ms;
  inner["pods"] = std::move(pods);
  std::string text = inner.dump();
  Json outer = Json::object();
  outer["hmacSha256"] = hmac_hex(text, key);
  outer["snapshot"] = std::move(text);
  return outer.dump();
}

Expected<NodeSnapshot> decode_snapshot(std::string_view wire, std::string_view key) {
  if (wire.size() > kMaxSnapshotBytes) {
    return Unexpected{"snapshot: larger than " + std::to_string(kMaxSnapshotBytes) + " bytes"};
  }
  if (key.empty()) return Unexpected{"key: empty"};
  const Json outer = Json::parse(wire, nullptr, /*allow_exceptions=*/false);
  if (outer.is_discarded()) return Unexpected{"wire: not JSON (truncated?)"};
  if (!outer.is_object()) return Unexpected{"wire: not an object"};
  for (const auto& [name, value] : outer.items()) {
    if (name != "hmacSha256" && name != "snapshot") return Unexpected{name + ": unknown field"};
  }
  const auto hmac = outer.find("hmacSha256");
  if (hmac == outer.end()) return Unexpected{"hmacSha256: missing"};
  if (!hmac->is_string()) return Unexpected{"hmacSha256: not a string"};
  const auto text = outer.find("snapshot");
  if (text == outer.end()) return Unexpected{"snapshot: missing"};
  if (!text->is_string()) return Unexpected{"snapshot: not a string"};
  const std::string& given = hmac->get_ref<const std::string&>();
  if (given.size() != 64 || !lower_hex(given)) return Unexpected{"hmacSha256: not 64 lowercase hex digits"};
  const std::string& inner = text->get_ref<const std::string&>();
  const std::string expected = hmac_hex(inner, key);
  // Constant time: how much of a forged signature matched must not show in the timing.
  if (CRYPTO_memcmp(expected.data(), given.data(), expected.size()) != 0) {
    return Unexpected{"hmacSha256: does not match the snapshot (altered, or signed with another key)"};
  }
  return decode_inner(inner);
}

Expected<bool> write_snapshot_file(const std::string& path, const NodeSnapshot& snapshot, std::string_view key) {
  namespace fs = std::filesystem;
  static std::atomic<std::uint64_t> counter{0};
  const std::string text = encode_snapshot(snapshot, key);
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Unexpected{"file: cannot create " + tmp + ": " + errno_text(errno)};
  const auto fail = [&](const std::string& what, int error) -> Expected<bool> {
    ::unlink(tmp.c_str());
    return Unexpected{"file: " + what + " " + tmp + ": " + errno_text(error)};
  };
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      return fail("cannot write", error);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    return fail("cannot fsync", error);
  }
  if (::close(fd) != 0) return fail("cannot close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename to " + path + ":", errno);
  // The rename is durable once the directory is.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return Unexpected{"file: cannot open directory " + dir.string() + ": " + errno_text(errno)};
  const int synced = ::fsync(dfd);
  const int error = errno;
  ::close(dfd);
  if (synced != 0) return Unexpected{"file: cannot fsync directory " + dir.string() + ": " + errno_text(error)};
  return true;
}

Expected<std::vector<std::string>> remove_stale_temporaries(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string own = ".tmp-" + std::to_string(::getpid()) + "-";
  std::vector<std::string> removed;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Unexpected{"file: cannot list " + dir + ": " + ec.message()};
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::size_t at = name.find(".json.tmp-");
    if (at == std::string::npos || name.find(own, at) == at + 5) continue;
    // Only the exact shape: digits, '-', digits after ".tmp-".
    const std::string_view tail = std::string_view(name).substr(at + 10);
    const std::size_t dash = tail.find('-');
    const auto digits = [](std::string_view v) {
      return !v.empty() && v.find_first_not_of("0123456789") == std::string_view::npos;
    };
    if (dash == std::string_view::npos || !digits(tail.substr(0, dash)) || !digits(tail.substr(dash + 1))) continue;
    if (!it->is_regular_file(ec)) continue;
    if (fs::remove(it->path(), ec); ec) return Unexpected{"file: cannot remove " + it->path().string() + ": " + ec.message()};
    removed.push_back(name);
  }
  // A failed increment leaves the iterator at the end with `ec` set.
  if (ec) return Unexpected{"file: cannot list " + dir + ": " + ec.message()};
  std::sort(removed.begin(), removed.end());
  return removed;
}

namespace {

// The whole file, refused when larger than `limit`.
Expected<std::string> read_limited(const std::string& path, std::size_t limit, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Unexpected{what + ": cannot open " + path + ": " + errno_text(errno)};
  std::string text;
  std::array<char, 1 << 16> buffer{};
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return Unexpected{what + ": cannot read " + path + ": " + errno_text(error)};
    }
    if (n == 0) break;
    text.append(buffer.data(), static_cast<std::size_t>(n));
    if (text.size() > limit) {
      ::close(fd);
      return Unexpected{what + ": " + path + " is larger than " + std::to_string(limit) + " bytes"};
    }
  }
  ::close(fd);
  return text;
}

}  // namespace

Expected<NodeSnapshot> read_snapshot_file(const std::string& path, std::string_view key) {
  auto text = read_limited(path, kMaxSnapshotBytes, "file");
  if (!text) return Unexpected{text.error()};
  return decode_snapshot(*text, key);
}

Expected<std::string> read_hmac_key_file(const std::string& path) {
  auto text = read_limited(path, std::size_t{64} << 10, "hmac key file");
  if (!text) return Unexpected{text.error()};
  std::string key = std::move(*text);
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ' || key.back() == '\t')) {
    key.pop_back();
  }
  if (key.empty()) return Unexpected{"hmac key file: " + path + " is empty"};
  if (key.size() < kMinKeyBytes) {
    return Unexpected{"hmac key file: " + path + " holds " + std::to_string(key.size()) + " bytes; at least " +
                      std::to_string(kMinKeyBytes) + " are needed"};
  }
  return key;
}

}  // namespace gpubank::attribution
