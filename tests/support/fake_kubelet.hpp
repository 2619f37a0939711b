// A FAKE kubelet for tests: a real gRPC server of the PodResources v1 service
// (proto/podresources/v1/api.proto) on a unix socket in a fresh temporary directory,
// answering List, GetAllocatableResources and Get from what the test gave it: JSON in
// proto3's JSON mapping (as grpcurl prints the kubelet's answers; fixtures in
// tests/node/data/) or a message built in code (many_pods_response).
//
// Faults on demand: every call answered UNAVAILABLE, or stalled until the caller's deadline
// passes (the client sees DEADLINE_EXCEEDED). It counts the calls of each method, so a test
// can show that a reader never reached the kubelet. stop() and start() restart it on the
// same socket, as a kubelet restart re-creates its socket.
//
// What it does NOT do: the kubelet's rate limit, filtering List to active pods, or any
// check of what the answer contains (it serves whatever the test set).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "podresources/v1/api.pb.h"

namespace grpc {
class Server;
}

namespace gpubank::testing {

class FakeKubelet {
 public:
  enum class Mode { Serve, Unavailable, Stall };

  FakeKubelet();  // started, answering List with no pods
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  [[nodiscard]] const std::string& socket_path() const { return socket_path_; }

  // List's answer (and Get's pods). The JSON forms throw std::runtime_error naming what is
  // wrong (unknown fields are errors, so a fixture cannot silently lose a field).
  void set_list(v1::ListPodResourcesResponse response);
  void set_list_json(const std::string& json);
  void set_list_fixture(const std::string& path);
  void set_allocatable(v1::AllocatableResourcesResponse response);
  void set_allocatable_fixture(const std::string& path);
  // The serialized size of List's answer now, in bytes: what crosses the socket.
  [[nodiscard]] std::size_t list_bytes() const;

  void set_mode(Mode mode) { mode_ = mode; }

  [[nodiscard]] int list_calls() const { return list_calls_; }
  [[nodiscard]] int allocatable_calls() const { return allocatable_calls_; }
  [[nodiscard]] int get_calls() const { return get_calls_; }

  // Stops serving (the socket file is removed) / serves again on the same path.
  void stop();
  void start();

 private:
  class Service;

  std::string dir_;
  std::string socket_path_;
  mutable std::mutex mutex_;
  v1::ListPodResourcesResponse list_;
  v1::AllocatableResourcesResponse allocatable_;
  std::atomic<Mode> mode_{Mode::Serve};
  std::atomic<bool> stopping_{false};
  std::atomic<int> list_calls_{0};
  std::atomic<int> allocatable_calls_{0};
  std::atomic<int> get_calls_{0};
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

// A node's List answer with `pods` pods, generated (deterministic): pod i is
// "tenant-<i % 40>/infer-<i>" with containers "server" (4 time-sliced replicas of one GPU,
// "<uuid>::<n>", nvidia.com/gpu) and "sidecar" (no devices), each with CPU IDs, memory and
// NUMA topology as the kubelet reports them. About 434 bytes per pod serialized, so a
// 4 MiB answer takes some 9,700 pods.
[[nodiscard]] v1::ListPodResourcesResponse many_pods_response(int pods);
// The device ID many_pods_response gives pod `pod`'s replica `replica`.
[[nodiscard]] std::string many_pods_device_id(int pod, int replica);

}  // namespace gpubank::testing
