#include "k8s/server_url.hpp"

#include <gtest/gtest.h>

namespace gpubank::k8s {
namespace {

ServerUrl parsed(std::string_view text, bool loopback_http = false) {
  auto r = parse_server_url(text, loopback_http);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error());
  return r.ok() ? *r : ServerUrl{};
}

std::string error_of(std::string_view text, bool loopback_http = false) {
  auto r = parse_server_url(text, loopback_http);
  EXPECT_FALSE(r.ok()) << text << " parsed as " << (r.ok() ? r->to_string() : "");
  return r.ok() ? std::string() : r.error();
}

TEST(ServerUrl, HttpsWithAndWithoutPort) {
  EXPECT_EQ(parsed("https://api.example.com"), (ServerUrl{"https", "api.example.com", 443, ""}));
  EXPECT_EQ(parsed("https://10.0.0.1:6443"), (ServerUrl{"https", "10.0.0.1", 6443, ""}));
  EXPECT_EQ(parsed("HTTPS://API.Example.COM:6443/"), (ServerUrl{"https", "api.example.com", 6443, ""}));
  EXPECT_EQ(parsed("https://rancher.example/k8s/clusters/c-1/"),
            (ServerUrl{"https", "rancher.example", 443, "/k8s/clusters/c-1"}));
  EXPECT_EQ(parsed("https://a:6443").to_string(), "https://a:6443");
}

TEST(ServerUrl, Ipv6InBrackets) {
  const ServerUrl url = parsed("https://[fd00::1]:6443");
  EXPECT_EQ(url.host, "fd00::1");
  EXPECT_EQ(url.port, 6443);
  EXPECT_EQ(url.host_for_url(), "[fd00::1]");
  EXPECT_EQ(url.to_string(), "https://[fd00::1]:6443");
  EXPECT_EQ(parsed("https://[::1]").port, 443);
  EXPECT_EQ(error_of("https://fd00::1:6443"),
            "server \"https://fd00::1:6443\": an IPv6 address must be written in brackets, https://[::1]:6443");
  EXPECT_EQ(error_of("https://[fd00::1%25eth0]:6443"),
            "server \"https://[fd00::1%25eth0]:6443\": \"fd00::1%25eth0\" in brackets is not an IPv6 address");
  EXPECT_EQ(error_of("https://[::1"), "server \"https://[::1\" has an unclosed '[' in its host");
  EXPECT_EQ(error_of("https://[::1]x"), "server \"https://[::1]x\" has text after its IPv6 address");
}

TEST(ServerUrl, PlainHttpOnlyForLoopbackWhenAllowed) {
  EXPECT_EQ(parsed("http://127.0.0.1:8080", true), (ServerUrl{"http", "127.0.0.1", 8080, ""}));
  EXPECT_EQ(parsed("http://localhost", true).port, 80);
  EXPECT_EQ(parsed("http://[::1]:1", true).host, "::1");
  EXPECT_NE(error_of("http://127.0.0.1:8080").find("uses plain http: only https is supported"), std::string::npos);
  EXPECT_NE(error_of("http://10.0.0.1:8080", true).find("uses plain http"), std::string::npos);
  EXPECT_NE(error_of("http://localhost.evil.example", true).find("uses plain http"), std::string::npos);
  EXPECT_FALSE(is_loopback_host("127.0.0.1.example"));
  EXPECT_TRUE(is_loopback_host("127.1.2.3"));
}

TEST(ServerUrl, RefusesMalformedAddresses) {
  EXPECT_EQ(error_of("api.example.com:6443"), "server \"api.example.com:6443\" has no scheme: write it as https://host:port");
  EXPECT_EQ(error_of("ftp://a"), "server \"ftp://a\" uses scheme \"ftp\": only https is supported");
  EXPECT_EQ(error_of("https://"), "server \"https://\" has no host");
  EXPECT_EQ(error_of("https://:6443"), "server \"https://:6443\" has no host");
  EXPECT_EQ(error_of("https://a:"), "server \"https://a:\" has an empty port");
  EXPECT_EQ(error_of("https://a:0"), "server \"https://a:0\": port \"0\" is not a number in 1..65535");
  EXPECT_EQ(error_of("https://a:65536"), "server \"https://a:65536\": port \"65536\" is not a number in 1..65535");
  EXPECT_EQ(error_of("https://a:+1"), "server \"https://a:+1\": port \"+1\" is not a number in 1..65535");
  EXPECT_EQ(error_of("https://user:pw@a"),
            "server \"https://user:pw@a\" carries user information before '@': put credentials in the user entry");
  EXPECT_EQ(error_of("https://a/?x=1"), "server \"https://a/?x=1\" has a query or a fragment: a server address has neither");
  EXPECT_EQ(error_of("https://a#f"), "server \"https://a#f\" has a query or a fragment: a server address has neither");
  EXPECT_EQ(error_of("https://a_b.example"), "server \"https://a_b.example\": \"a_b.example\" is not a valid host name or IPv4 address");
  EXPECT_EQ(error_of("https://-a.example"), "server \"https://-a.example\": \"-a.example\" is not a valid host name or IPv4 address");
  EXPECT_EQ(error_of("https://a..b"), "server \"https://a..b\": \"a..b\" is not a valid host name or IPv4 address");
  EXPECT_EQ(error_of("https://a b"), "server \"https://a b\" contains a space, a control character or non-ASCII text");
  EXPECT_EQ(error_of("https://a\r\nX: y"),
            "server \"https://a\\r\\nX: y\" contains a space, a control character or non-ASCII text");
}

}  // namespace
}  // namespace gpubank::k8s
