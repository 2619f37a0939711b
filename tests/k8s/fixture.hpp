// Shared by the k8s tests: scratch directories, freshly generated PEM material (no key
// material in the repository), base64 and a kubeconfig writer.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "support/promtool.hpp"  // ScratchDir, write_file, read_file

namespace gpubank::k8s::testing {

namespace fs = std::filesystem;
using gpubank::testing::read_file;
using gpubank::testing::ScratchDir;
using gpubank::testing::write_file;

struct PemPair {
  std::string cert;
  std::string key;
};

inline std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string s(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return s;
}

// A self-signed EC P-256 certificate with CN=`cn` and its key, as PEM.
inline PemPair make_pem_pair(const std::string& cn) {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  if (key == nullptr) throw std::runtime_error("EC key generation failed");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  if (X509_sign(cert, key, EVP_sha256()) == 0) throw std::runtime_error("certificate signing failed");
  BIO* cert_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cert_bio, cert);
  BIO* key_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  X509_free(cert);
  EVP_PKEY_free(key);
  return {bio_text(cert_bio), bio_text(key_bio)};
}

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
