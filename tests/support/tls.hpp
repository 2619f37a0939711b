// Throwaway self-signed certificates for servers and clients started by tests (real TLS on
// loopback, no fixed key material in the repository): EC P-256, valid from an hour ago for
// a day, made with OpenSSL's C API.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace gpubank::testing {

struct PemPair {
  std::string cert;
  std::string key;
};

// A self-signed certificate with CN=`cn` and, when `subject_alt_names` is not empty, that
// subjectAltName extension ("DNS:localhost,IP:127.0.0.1"), and its key, as PEM.
inline PemPair self_signed_pem(const std::string& cn, const std::string& subject_alt_names = {}) {
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
  if (!subject_alt_names.empty()) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, subject_alt_names.c_str());
    if (san == nullptr) throw std::runtime_error("bad subjectAltName: " + subject_alt_names);
    X509_add_ext(cert, san, -1);
    X509_EXTENSION_free(san);
  }
  if (X509_sign(cert, key, EVP_sha256()) == 0) throw std::runtime_error("certificate signing failed");
  const auto text = [](BIO* bio) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string s(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    return s;
  };
  BIO* cert_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cert_bio, cert);
  BIO* key_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  X509_free(cert);
  EVP_PKEY_free(key);
  return {text(cert_bio), text(key_bio)};
}

// A loopback server's certificate: CN=`cn`, SAN localhost and 127.0.0.1.
inline PemPair localhost_pem(const std::string& cn = "localhost") {
  return self_signed_pem(cn, "DNS:localhost,IP:127.0.0.1");
}

struct TlsFiles {
  std::string cert;
  std::string key;
};

// Writes cert.pem and key.pem (localhost_pem()) into `dir`.
inline TlsFiles make_self_signed(const std::string& dir) {
  const PemPair pem = localhost_pem();
  TlsFiles files{dir + "/cert.pem", dir + "/key.pem"};
  for (const auto& [path, text] : {std::pair{files.cert, pem.cert}, std::pair{files.key, pem.key}}) {
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) throw std::runtime_error("cannot write " + path);
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write " + path);
  }
  return files;
}

}  // namespace gpubank::testing
