// httplib's error codes in words for the scanner's messages ("Connection" alone says little).
#pragma once

#include <httplib.h>

#include <string>

namespace gpubank::governance {

inline std::string describe(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection: return "could not connect";
    case httplib::Error::ConnectionTimeout: return "timed out connecting";
    case httplib::Error::Read: return "reading the answer failed or timed out";
    case httplib::Error::Write: return "sending the request failed or timed out";
    case httplib::Error::SSLConnection: return "TLS handshake failed";
    default: return httplib::to_string(error);
  }
}

}  // namespace gpubank::governance
