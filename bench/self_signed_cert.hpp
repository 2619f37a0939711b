// A throwaway TLS identity for benchmarks: an RSA 2048 key and a self-signed certificate
// for "localhost" / 127.0.0.1, written as PEM files (OpenSSL's C API, no `openssl` CLI).
#pragma once

#include <string>

namespace gpubank::bench {

// Writes key_path and cert_path; returns an error message, empty on success.
std::string write_self_signed_cert(const std::string& cert_path, const std::string& key_path);

}  // namespace gpubank::bench
