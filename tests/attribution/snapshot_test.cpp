#include "attribution/snapshot.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "attribution/labels.hpp"
#include "attribution/pods.hpp"
#include "support/promtool.hpp"  // ScratchDir

namespace gpubank::attribution {
namespace {

using testing::Json;
namespace fs = std::filesystem;

const std::string kKey = "0123456789abcdef0123456789abcdef-metasync-test-key";
const std::string kOtherKey = "fedcba9876543210fedcba9876543210-another-test-key";

// HMAC-SHA256 in hex, computed here apart from snapshot.cpp.
std::string hmac(const std::string& text, const std::string& key) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
       text.size(), mac, &n);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) {
    static constexpr char kHex[] = "0123456789abcdef";
    hex += kHex[mac[i] >> 4];
    hex += kHex[mac[i] & 0xf];
  }
  return hex;
}

// A wire form of any inner text, signed correctly: what a key holder could send.
std::string signed_wire(const std::string& inner, const std::string& key = kKey) {
  return Json{{"hmacSha256", hmac(inner, key)}, {"snapshot", inner}}.dump();
}

PodMeta pod(const std::string& uid, const std::string& name, const std::string& node = "gpu-node-17") {
  return PodMeta{.uid = uid, .namespace_name = "team-search", .name = name, .node = node, .created_ms = 1'796'026'365'000,
                 .business_group = "search", .owner_id = "u12345", .cost_center = "cc-4711", .queue = "search-train",
                 .workload_type = "training", .workload_kind = "PyTorchJob", .workload = "llama-ft",
                 .workload_uid = "9b2f6c1e-3d4a-4f7b-8e21-5c6d7e8f9a01", .model = "llama-3.1-70b", .model_version = "v7"};
}

NodeSnapshot sample() {
  NodeSnapshot s{.node = "gpu-node-17", .generation = 1'796'026'400'000, .produced_ms = 1'796'026'400'000, .pods = {}};
  s.pods.push_back(pod("b-uid-2", "llama-ft-worker-0"));
  s.pods.push_back(pod("a-uid-1", "llama-ft-master-0"));
  PodMeta gone = pod("c-uid-3", "old-notebook");
  gone.deleted_ms = 1'796'026'390'000;
  gone.owner_id.clear();
  gone.model.clear();
  gone.model_version.clear();
  s.pods.push_back(gone);
  return s;
}

NodeSnapshot sorted(NodeSnapshot s) {
  std::sort(s.pods.begin(), s.pods.end(), [](const PodMeta& a, const PodMeta& b) { return a.uid < b.uid; });
  return s;
}

// The inner text of a wire form.
std::string inner_of(const std::string& wire) { return Json::parse(wire)["snapshot"].get<std::string>(); }

void expect_rejected(const std::string& wire, const std::string& message, const std::string& key = kKey) {
  auto decoded = decode_snapshot(wire, key);
  ASSERT_FALSE(decoded.ok()) << "accepted: " << wire.substr(0, 200);
  EXPECT_EQ(decoded.error(), message);
}

TEST(SnapshotCodec, RoundTripsSortedByUid) {
  const NodeSnapshot s = sample();
  const std::string wire = encode_snapshot(s, kKey);
  auto decoded = decode_snapshot(wire, kKey);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(*decoded, sorted(s));
  // Deterministic: the same content in another order is the same bytes.
  NodeSnapshot shuffled = s;
  std::reverse(shuffled.pods.begin(), shuffled.pods.end());
  EXPECT_EQ(encode_snapshot(shuffled, kKey), wire);
  // The signature is HMAC-SHA256 of the inner text's exact bytes, and that text is
  // canonical JSON (sorted keys, no whitespace).
  const Json outer = Json::parse(wire);
  EXPECT_EQ(outer["hmacSha256"], hmac(inner_of(wire), kKey));
  EXPECT_EQ(Json::parse(inner_of(wire)).dump(), inner_of(wire));
  EXPECT_EQ(outer.size(), 2u);
  // An empty node snapshot too.
  const NodeSnapshot empty{.node = "gpu-node-3", .generation = 7, .produced_ms = 9, .pods = {}};
  auto again = decode_snapshot(encode_snapshot(empty, kKey), kKey);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, empty);
}

// The governance fields (capacity role, checkpointable, keep-running-until) travel like the
// attribution, and are optional: a snapshot written before they existed still decodes.
TEST(SnapshotCodec, GovernanceFieldsRoundTripAndAnOlderSnapshotStillDecodes) {
  NodeSnapshot s = sample();
  s.pods[0].capacity_role = "serving-floor";
  s.pods[0].checkpointable = "false";
  s.pods[1].capacity_role = "borrowable-cold";
  s.pods[1].checkpointable = "true";
  s.pods[1].keep_running_until = "1796493600";
  const std::string wire = encode_snapshot(s, kKey);
  auto decoded = decode_snapshot(wire, kKey);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(*decoded, sorted(s));
  const std::string inner = inner_of(wire);
  EXPECT_NE(inner.find(R"("capacityRole":"borrowable-cold","checkpointable":"true",)"), std::string::npos) << inner;
  EXPECT_NE(inner.find(R"("keepRunningUntil":"1796493600")"), std::string::npos) << inner;
  // Left out when unknown, as every attribution field.
  EXPECT_EQ(Json::parse(inner)["pods"][2].count("capacityRole"), 0u);

  // The inner text of a metasync from before these fields (fuzz/corpus-seeds/snapshot/two-pods.json).
  const std::string older =
      R"({"generation":1796026400000,"node":"gpu-node-17","pods":[{"businessGroup":"search","costCenter":"cc-4711",)"
      R"("createdMs":1796026365000,"model":"llama-3.1-70b","modelVersion":"v7","name":"llama-ft-master-0",)"
      R"("namespace":"team-search","node":"gpu-node-17","ownerId":"u12345","queue":"search-train",)"
      R"("uid":"1f0e2d3c-4b5a-4978-8a6b-5c4d3e2f1a00","workload":"llama-ft","workloadKind":"PyTorchJob",)"
      R"("workloadType":"training","workloadUid":"9b2f6c1e-3d4a-4f7b-8e21-5c6d7e8f9a01"}],)"
      R"("producedMs":1796026400000,"version":1})";
  auto old = decode_snapshot(signed_wire(older), kKey);
  ASSERT_TRUE(old.ok()) << old.error();
  ASSERT_EQ(old->pods.size(), 1u);
  EXPECT_EQ(old->pods[0].business_group, "search");
  EXPECT_EQ(old->pods[0].capacity_role, "");
  EXPECT_EQ(old->pods[0].checkpointable, "");
  EXPECT_EQ(old->pods[0].keep_running_until, "");
  // Encoded again it is the same text: nothing was added for the fields it lacks.
  EXPECT_EQ(inner_of(encode_snapshot(*old, kKey)), older);

  // Signed, but values metasync would not have written.
  Json base = Json::parse(inner);
  const auto reject = [&](const char* field, const Json& value, const std::string& message) {
    SCOPED_TRACE(message);
    Json changed = base;
    changed["pods"][0][field] = value;
    expect_rejected(signed_wire(changed.dump()), message);
  };
  reject("capacityRole", "primary", "pods[0].capacityRole: not-allowed-value");
  reject("checkpointable", "yes", "pods[0].checkpointable: not-allowed-value");
  reject("checkpointable", true, "pods[0].checkpointable: not a string");
  reject("keepRunningUntil", "1796493600.5", "pods[0].keepRunningUntil: malformed-time");
  reject("keepRunningUntil", "2026-12-05T18:00:00Z", "pods[0].keepRunningUntil: bad-character");
  reject("keepRunningUntil", 1796493600, "pods[0].keepRunningUntil: not a string");
}

TEST(SnapshotTamper, OneByteOfTheInnerTextChanged) {
  const std::string wire = encode_snapshot(sample(), kKey);
  const std::size_t at = wire.find("search-train");
  ASSERT_NE(at, std::string::npos);
  std::string altered = wire;
  altered[at] = 'r';  // "rearch-train": still valid JSON, still a valid queue name
  expect_rejected(altered, "hmacSha256: does not match the snapshot (altered, or signed with another key)");
}

TEST(SnapshotTamper, SignatureReplaced) {
  const std::string wire = encode_snapshot(sample(), kKey);
  Json outer = Json::parse(wire);
  outer["hmacSha256"] = std::string(64, '0');
  expect_rejected(outer.dump(), "hmacSha256: does not match the snapshot (altered, or signed with another key)");
  // The signature of other content (a replayed one) does not fit either.
  NodeSnapshot other = sample();
  other.generation += 1;
  outer["hmacSha256"] = Json::parse(encode_snapshot(other, kKey))["hmacSha256"];
  expect_rejected(outer.dump(), "hmacSha256: does not match the snapshot (altered, or signed with another key)");
  outer["hmacSha256"] = "ABCDEF";
  expect_rejected(outer.dump(), "hmacSha256: not 64 lowercase hex digits");
  outer["hmacSha256"] = 17;
  expect_rejected(outer.dump(), "hmacSha256: not a string");
  outer.erase("hmacSha256");
  expect_rejected(outer.dump(), "hmacSha256: missing");
}

TEST(SnapshotTamper, WrongKey) {
  const std::string wire = encode_snapshot(sample(), kKey);
  expect_rejected(wire, "hmacSha256: does not match the snapshot (altered, or signed with another key)", kOtherKey);
  expect_rejected(wire, "key: empty", "");
}

TEST(SnapshotTamper, TruncatedAndOversized) {
  const std::string wire = encode_snapshot(sample(), kKey);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, wire.size() / 2, wire.size() - 1}) {
    expect_rejected(wire.substr(0, n), "wire: not JSON (truncated?)");
  }
  std::string big = wire;
  big.resize(kMaxSnapshotBytes + 1, ' ');  // valid JSON with trailing blanks, but too large
  expect_rejected(big, "snapshot: larger than 67108864 bytes");
}

TEST(SnapshotTamper, SignedButInvalidContentIsNamed) {
  Json inner = Json::parse(inner_of(encode_snapshot(sample(), kKey)));
  const auto reject = [&](const Json& changed, const std::string& message) {
    SCOPED_TRACE(message);
    expect_rejected(signed_wire(changed.dump()), message);
  };
  Json dup = inner;
  dup["pods"][1]["uid"] = dup["pods"][0]["uid"];
  reject(dup, "pods[1].uid: duplicate \"a-uid-1\"");
  Json unsorted = inner;
  std::swap(unsorted["pods"][0], unsorted["pods"][1]);
  reject(unsorted, "pods[1].uid: not sorted");
  Json unknown = inner;
  unknown["pods"][0]["prompt"] = "hello";
  reject(unknown, "pods[0].prompt: unknown field");
  Json unknown_top = inner;
  unknown_top["labels"] = Json::object();
  reject(unknown_top, "labels: unknown field");
  Json email = inner;
  email["pods"][0]["ownerId"] = "alice@example.com";
  reject(email, "pods[0].ownerId: email");
  Json type = inner;
  type["pods"][2]["workloadType"] = "research";
  reject(type, "pods[2].workloadType: not-allowed-value");
  Json wrong_type = inner;
  wrong_type["generation"] = "7";
  reject(wrong_type, "generation: not an integer");
  Json negative = inner;
  negative["pods"][0]["createdMs"] = -1;
  reject(negative, "pods[0].createdMs: must not be negative");
  Json missing = inner;
  missing["pods"][0].erase("name");
  reject(missing, "pods[0].name: missing");
  Json other_node = inner;
  other_node["pods"][0]["node"] = "gpu-node-18";
  reject(other_node, "pods[0].node: not the snapshot's node");
  Json version = inner;
  version["version"] = 2;
  reject(version, "version: 2 is not 1");
  // Signed, but not the canonical text the signer writes (here: indented).
  expect_rejected(signed_wire(inner.dump(1)), "snapshot: not canonical JSON");
  expect_rejected(Json{{"hmacSha256", hmac("x", kKey)}, {"snapshot", "x"}, {"extra", 1}}.dump(), "extra: unknown field");
}

TEST(SnapshotTamper, TooManyPods) {
  // Empty pods: the count is checked before any pod is.
  std::string pods = "{}";
  pods.reserve(3 * (kMaxPods + 1));
  for (std::size_t i = 0; i < kMaxPods; ++i) pods += ",{}";
  const std::string inner = R"({"generation":1,"node":"gpu-node-1","pods":[)" + pods + R"(],"producedMs":1,"version":1})";
  expect_rejected(signed_wire(inner), "pods: more than 100000");
}

TEST(SnapshotResolve, SameNameDifferentUidNeverMixes) {
  NodeSnapshot s{.node = "gpu-node-17", .generation = 1, .produced_ms = 1, .pods = {}};
  PodMeta old_pod = pod("uid-old", "notebook-0");
  old_pod.business_group = "ads";
  old_pod.deleted_ms = 100;
  PodMeta older = pod("uid-older", "notebook-0");
  older.business_group = "maps";
  older.deleted_ms = 50;
  PodMeta live = pod("uid-new", "notebook-0");
  live.business_group = "search";
  s.pods = {old_pod, live, older};
  const PodMeta* r = s.resolve("team-search", "notebook-0");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->uid, "uid-new");  // the pod that exists now, never the deleted one
  EXPECT_EQ(r->business_group, "search");
  // Without a live pod: the most recently deleted tombstone (its last samples).
  s.pods = {older, old_pod};
  r = s.resolve("team-search", "notebook-0");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->uid, "uid-old");
  EXPECT_EQ(r->business_group, "ads");
  EXPECT_EQ(s.resolve("team-ads", "notebook-0"), nullptr);  // the namespace is part of the name
  EXPECT_EQ(s.resolve("team-search", "notebook-1"), nullptr);
}

TEST(SnapshotFile, WriteThenReadAndErrorsNamed) {
  gpubank::testing::ScratchDir dir;
  const std::string path = (dir.path() / "gpu-node-17.json").string();
  auto written = write_snapshot_file(path, sample(), kKey);
  ASSERT_TRUE(written.ok()) << written.error();
  auto read = read_snapshot_file(path, kKey);
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(*read, sorted(sample()));
  auto wrong = read_snapshot_file(path, kOtherKey);
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(wrong.error().starts_with("hmacSha256: ")) << wrong.error();
  // A file cut short (a crash without the atomic write) is refused, not half-read.
  fs::resize_file(path, fs::file_size(path) / 2);
  auto torn = read_snapshot_file(path, kKey);
  ASSERT_FALSE(torn.ok());
  EXPECT_EQ(torn.error(), "wire: not JSON (truncated?)");
  auto missing = read_snapshot_file((dir.path() / "none.json").string(), kKey);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.error().starts_with("file: cannot open ")) << missing.error();
  auto no_dir = write_snapshot_file((dir.path() / "absent" / "x.json").string(), sample(), kKey);
  ASSERT_FALSE(no_dir.ok());
  EXPECT_TRUE(no_dir.error().starts_with("file: cannot create ")) << no_dir.error();
}

TEST(SnapshotFile, ReaderNeverSeesATornFileDuringRewrites) {
  gpubank::testing::ScratchDir dir;
  const std::string path = (dir.path() / "gpu-node-17.json").string();
  NodeSnapshot s = sample();
  ASSERT_TRUE(write_snapshot_file(path, s, kKey).ok());
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::atomic<int> failures{0};
  std::string first_failure;
  std::thread reader([&] {
    std::int64_t last = 0;
    while (!done.load()) {
      auto r = read_snapshot_file(path, kKey);
      if (!r.ok() || r->generation < last) {
        if (failures++ == 0) first_failure = r.ok() ? "generation went back" : r.error();
        continue;
      }
      last = r->generation;
      ++reads;
    }
  });
  // Sizes vary from one write to the next, so a torn file would not parse.
  for (int i = 0; i < 150; ++i) {
    s.generation += 1;
    s.pods.resize(1 + static_cast<std::size_t>(i % 40), pod("p", "x"));
    for (std::size_t k = 0; k < s.pods.size(); ++k) s.pods[k].uid = "uid-" + std::to_string(i) + "-" + std::to_string(k);
    ASSERT_TRUE(write_snapshot_file(path, s, kKey).ok());
  }
  // The reader had the chance to read at least once after the writes.
  while (reads.load() < 5) std::this_thread::yield();
  done = true;
  reader.join();
  EXPECT_EQ(failures.load(), 0) << first_failure;
  auto last = read_snapshot_file(path, kKey);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->generation, s.generation);
  // No temporary file is left behind.
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "gpu-node-17.json");
  }
  EXPECT_EQ(files, 1u);
}

// What a writer killed between create and rename leaves: another process's temporaries are
// removed, this process's own (a write in flight) and anything not of that exact shape kept.
TEST(SnapshotFile, StaleTemporariesOfAnotherWriterAreRemoved) {
  gpubank::testing::ScratchDir dir;
  const std::string own = std::to_string(::getpid());
  const std::vector<std::string> names{"node-a.json",          "node-a.json.tmp-1-0",    "node-b.json.tmp-99999-12",
                                       "node-a.json.tmp-" + own + "-3", "notes.tmp-1-0",  "node-a.json.tmp-x-0",
                                       "node-a.json.tmp-1-",   "node-a.json.tmp-1-0.bak"};
  for (const std::string& n : names) std::ofstream(dir.path() / n) << "x";
  auto removed = remove_stale_temporaries(dir.path().string());
  ASSERT_TRUE(removed.ok()) << removed.error();
  EXPECT_EQ(*removed, (std::vector<std::string>{"node-a.json.tmp-1-0", "node-b.json.tmp-99999-12"}));
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  std::vector<std::string> kept{"node-a.json",         "node-a.json.tmp-" + own + "-3", "node-a.json.tmp-1-",
                                "node-a.json.tmp-1-0.bak", "node-a.json.tmp-x-0",        "notes.tmp-1-0"};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(left, kept);
  EXPECT_FALSE(remove_stale_temporaries((dir.path() / "missing").string()).ok());
}

TEST(SnapshotFile, HmacKeyFile) {
  gpubank::testing::ScratchDir dir;
  const auto put = [&](const std::string& name, const std::string& text) {
    const std::string path = (dir.path() / name).string();
    std::ofstream(path) << text;
    return path;
  };
  auto empty = read_hmac_key_file(put("empty", "\n"));
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(empty.error().ends_with(" is empty")) << empty.error();
  auto short_key = read_hmac_key_file(put("short", "too-short-key\n"));
  ASSERT_FALSE(short_key.ok());
  EXPECT_TRUE(short_key.error().ends_with("holds 13 bytes; at least 32 are needed")) << short_key.error();
  const std::string hex(64, 'a');
  auto hex_key = read_hmac_key_file(put("hex", hex + "\n"));
  ASSERT_TRUE(hex_key.ok()) << hex_key.error();
  EXPECT_EQ(*hex_key, hex);  // the newline is not part of the key
  auto missing = read_hmac_key_file((dir.path() / "absent").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.error().starts_with("hmac key file: cannot open ")) << missing.error();
}

}  // namespace
}  // namespace gpubank::attribution
