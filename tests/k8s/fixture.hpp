// Shared by the k8s tests: scratch directories, freshly generated PEM material (no key
// material in the repository), base64 and a kubeconfig writer.
#pragma once

#include <openssl/evp.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "support/promtool.hpp"  // ScratchDir, write_file, read_file
#include "support/tls.hpp"

namespace gpubank::k8s::testing {

namespace fs = std::filesystem;
using gpubank::testing::read_file;
using gpubank::testing::ScratchDir;
using gpubank::testing::write_file;

using gpubank::testing::PemPair;

// A self-signed certificate with CN=`cn` and its key, as PEM (support/tls.hpp).
inline PemPair make_pem_pair(const std::string& cn) { return gpubank::testing::self_signed_pem(cn); }

// The pairs every test uses, generated once per process (key generation is the slow part).
inline const PemPair& ca_pem() {
  static const PemPair pair = make_pem_pair("test-ca");
  return pair;
}
inline const PemPair& client_pem() {
  static const PemPair pair = make_pem_pair("test-client");
  return pair;
}
inline const PemPair& other_pem() {
  static const PemPair pair = make_pem_pair("other");
  return pair;
}

inline std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// Writes `text` to dir/name (creating directories) and returns the path.
inline std::string put(const fs::path& dir, const std::string& name, const std::string& text) {
  const fs::path file = dir / name;
  fs::create_directories(file.parent_path());
  write_file(file, text);
  return file.string();
}

}  // namespace gpubank::k8s::testing
