// Shared by the transport and list/watch tests: a ClientConfig pointing at a fake API
// server, a Transport whose sleeps are recorded instead of slept, and a wait with a
// generous deadline that only guards against a hang (tests never depend on speed).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "k8s/transport.hpp"
#include "support/fake_apiserver.hpp"

namespace gpubank::k8s::testing {

using gpubank::testing::FakeApiServer;

inline ClientConfig config_for(const FakeApiServer& fake, const std::string& token = "fake-token") {
  ClientConfig config;
  auto url = parse_server_url(fake.url(), /*allow_loopback_http=*/true);
  EXPECT_TRUE(url.ok()) << (url.ok() ? "" : url.error());
  config.server = *url;
  config.ca_pem = fake.ca_pem();
  if (!token.empty()) config.token = std::make_shared<StaticTokenSource>(token);
  config.namespace_name = "default";
  return config;
}

// The waits a transport asked for, in order (thread-safe: list/watch runs on a thread).
struct SleepLog {
  std::mutex m;
  std::vector<std::chrono::milliseconds> waits;
  std::function<void(std::chrono::milliseconds)> sleeper() {
    return [this](std::chrono::milliseconds d) {
      std::lock_guard lock(m);
      waits.push_back(d);
    };
  }
  std::vector<std::chrono::milliseconds> get() {
    std::lock_guard lock(m);
    return waits;
  }
};

inline std::unique_ptr<Transport> make_transport(ClientConfig config, SleepLog& sleeps, TransportOptions options = {}) {
  options.sleep = sleeps.sleeper();
  auto t = Transport::create(std::move(config), std::move(options));
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error());
  return t.ok() ? std::move(t.value()) : nullptr;
}

// Polls `done` until it holds; fails the test after a minute (a hang, not slowness).
inline bool eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "condition not reached within 60 s";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace gpubank::k8s::testing
