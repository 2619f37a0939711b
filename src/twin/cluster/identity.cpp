#include "twin/cluster/identity.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace gpubank::twin::cluster {

std::string uuid_v5(const Uuid& ns, std::string_view name) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha1(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, ns.data(), ns.size()) == 1 &&
                  EVP_DigestUpdate(ctx, name.data(), name.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, digest.data(), &length) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok || length < 16) throw std::runtime_error("sha1 failed");
  // RFC 4122 section 4.3: the first 16 bytes of the hash, version 5 in the high nibble of
  // byte 6, the variant 10xx in the high bits of byte 8.
  digest[6] = static_cast<unsigned char>((digest[6] & 0x0F) | 0x50);
  digest[8] = static_cast<unsigned char>((digest[8] & 0x3F) | 0x80);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xF];
  }
  return out;
}

std::string gpu_uuid(std::string_view node, int index) {
  std::string name(node);
  name += '/';
  name += std::to_string(index);
  return "GPU-" + uuid_v5(kGpuNamespace, name);
}

std::string mig_uuid(std::string_view node, int index, int slice) {
  std::string name(node);
  name += '/';
  name += std::to_string(index);
  name += '/';
  name += std::to_string(slice);
  return "MIG-" + uuid_v5(kGpuNamespace, name);
}

std::string pci_bus_id(int index) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const int bus = (0x10 + 0x0E * index) & 0xFF;
  std::string out = "00000000:";
  out += kHex[bus >> 4];
  out += kHex[bus & 0xF];
  out += ":00.0";
  return out;
}

std::string device_name(int index) { return "nvidia" + std::to_string(index); }

}  // namespace gpubank::twin::cluster
