// Fuzzes the metadata snapshot decoder (attribution/snapshot.hpp), what an attribution
// exporter runs on bytes from the network or a shared file. The input is the wire form, tried
// twice: as it is (so the fuzzer can reach the signature check and the outer envelope), and
// with its "snapshot" string re-signed with the test key (so that mutations of the inner
// text reach the field checks behind the HMAC).
// Invariants: no crash; an error is never empty; whatever decodes was valid enough to encode
// again, and encoding it and decoding that gives the same snapshot (a fixed point), and a
// one-byte change of a valid wire form is refused.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "attribution/snapshot.hpp"

using namespace gpubank::attribution;

namespace {

constexpr std::string_view kKey = "fuzz-key-0123456789abcdef0123456789abcdef";

std::string hmac_hex(const std::string& text) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), kKey.data(), static_cast<int>(kKey.size()), reinterpret_cast<const unsigned char*>(text.data()),
       text.size(), mac, &n);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) {
    hex += kHex[mac[i] >> 4];
    hex += kHex[mac[i] & 0xf];
  }
  return hex;
}

void check(std::string_view wire) {
  auto decoded = decode_snapshot(wire, kKey);
  if (!decoded.ok()) {
    if (decoded.error().empty()) __builtin_trap();
    return;
  }
  const std::string again = encode_snapshot(*decoded, kKey);
  auto round = decode_snapshot(again, kKey);
  if (!round.ok() || !(*round == *decoded)) __builtin_trap();
  if (encode_snapshot(*round, kKey) != again) __builtin_trap();
  // Altering one byte inside the signed text is always refused.
  std::string altered = again;
  const std::size_t at = altered.find("node");  // only inside the signed text
  if (at == std::string::npos) __builtin_trap();
  altered[at] = 'm';
  if (decode_snapshot(altered, kKey).ok()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view wire(reinterpret_cast<const char*>(data), size);
  check(wire);
  // Re-signed: the inner text as the fuzzer made it, with a valid HMAC.
  const nlohmann::json outer = nlohmann::json::parse(wire, nullptr, false);
  if (!outer.is_object() || !outer.contains("snapshot") || !outer["snapshot"].is_string()) return 0;
  const std::string& inner = outer["snapshot"].get_ref<const std::string&>();
  check(nlohmann::json{{"hmacSha256", hmac_hex(inner)}, {"snapshot", inner}}.dump());
  return 0;
}
