#include "self_signed_cert.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>

namespace gpubank::bench {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct ExtFree {
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
struct FileClose {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

std::string openssl_error(const std::string& what) {
  const unsigned long code = ERR_get_error();
  char buf[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, buf, sizeof buf);
  return what + ": " + buf;
}

bool add_extension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, ExtFree> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  return ext != nullptr && X509_add_ext(cert, ext.get(), -1) == 1;
}

}  // namespace

std::string write_self_signed_cert(const std::string& cert_path, const std::string& key_path) {
  std::unique_ptr<EVP_PKEY, PkeyFree> key(EVP_RSA_gen(2048));
  if (!key) return openssl_error("generate RSA key");

  std::unique_ptr<X509, X509Free> cert(X509_new());
  if (!cert) return openssl_error("X509_new");
  X509_set_version(cert.get(), 2);  // v3
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24L * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  const unsigned char cn[] = "localhost";
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, cn, -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  if (!add_extension(cert.get(), NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1")) {
    return openssl_error("add subjectAltName");
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return openssl_error("sign certificate");

  std::unique_ptr<std::FILE, FileClose> key_file(std::fopen(key_path.c_str(), "w"));
  if (!key_file || PEM_write_PrivateKey(key_file.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return "cannot write " + key_path;
  }
  std::unique_ptr<std::FILE, FileClose> cert_file(std::fopen(cert_path.c_str(), "w"));
  if (!cert_file || PEM_write_X509(cert_file.get(), cert.get()) != 1) return "cannot write " + cert_path;
  return {};
}

}  // namespace gpubank::bench
