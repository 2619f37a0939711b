#include "k8s/credentials.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <climits>
#include <cstring>
#include <memory>

namespace gpubank::k8s {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct OpensslFree {
  void operator()(void* p) const { OPENSSL_free(p); }
};

std::unique_ptr<BIO, BioFree> memory_bio(std::string_view bytes) {
  if (bytes.size() > INT_MAX) return nullptr;
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
}

// Never asks for a passphrase: OpenSSL's default callback would prompt on the terminal.
int no_passphrase(char*, int, int, void*) { return 0; }

// The certificates of `pem` in order; the first error sets `error`.
std::unique_ptr<X509, X509Free> next_certificate(BIO* bio, std::size_t index, std::optional<std::string>& error,
                                                 bool& done) {
  for (;;) {
    char* name = nullptr;
    char* header = nullptr;
    unsigned char* data = nullptr;
    long length = 0;
    if (PEM_read_bio(bio, &name, &header, &data, &length) != 1) {
      ERR_clear_error();  // the end of the data reads as an error too
      done = true;
      return nullptr;
    }
    const std::unique_ptr<char, OpensslFree> owned_name(name);
    const std::unique_ptr<char, OpensslFree> owned_header(header);
    const std::unique_ptr<unsigned char, OpensslFree> owned_data(data);
    if (std::strcmp(name, "CERTIFICATE") != 0) continue;
    const unsigned char* p = data;
    std::unique_ptr<X509, X509Free> cert(d2i_X509(nullptr, &p, length));
    if (cert == nullptr || p != data + length) {
      ERR_clear_error();
      error = "PEM certificate " + std::to_string(index + 1) + " is not a valid X.509 certificate";
      done = true;
      return nullptr;
    }
    return cert;
  }
}

}  // namespace

std::optional<std::string> check_certificates_pem(std::string_view pem) {
  const auto bio = memory_bio(pem);
  if (bio == nullptr) return "the data is too large";
  std::optional<std::string> error;
  bool done = false;
  std::size_t count = 0;
  while (!done) {
    if (next_certificate(bio.get(), count, error, done) != nullptr) ++count;
  }
  if (error) return error;
  if (count == 0) return std::string("no PEM certificate found (expected \"-----BEGIN CERTIFICATE-----\")");
  return std::nullopt;
}

std::optional<std::string> check_key_pair_pem(std::string_view certificate_pem, std::string_view key_pem) {
  const auto cert_bio = memory_bio(certificate_pem);
  const auto key_bio = memory_bio(key_pem);
  if (cert_bio == nullptr || key_bio == nullptr) return "the data is too large";
  std::optional<std::string> error;
  bool done = false;
  const auto cert = next_certificate(cert_bio.get(), 0, error, done);
  if (error) return error;
  if (cert == nullptr) return std::string("no PEM certificate found in the client certificate");
  const std::unique_ptr<EVP_PKEY, PkeyFree> key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_passphrase, nullptr));
  if (key == nullptr) {
    ERR_clear_error();
    if (key_pem.find("ENCRYPTED") != std::string_view::npos) {
      return std::string("the client key is encrypted: a kubeconfig key must be unencrypted");
    }
    return std::string("no PEM private key found (expected \"-----BEGIN PRIVATE KEY-----\", RSA or EC)");
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return std::string("the client key does not belong to the client certificate");
  }
  return std::nullopt;
}

std::string_view trim_whitespace(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

std::optional<std::string> check_bearer_token(std::string_view token) {
  token = trim_whitespace(token);
  if (token.empty()) return std::string("the token is empty");
  for (std::size_t i = 0; i < token.size(); ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (c <= 0x20 || c >= 0x7f) {
      return "the token has a space, a control character or a non-ASCII byte at offset " + std::to_string(i) +
             " (it goes into an HTTP header)";
    }
  }
  return std::nullopt;
}

}  // namespace gpubank::k8s
