#include "support/fake_kubelet.hpp"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "podresources/v1/api.grpc.pb.h"

namespace gpubank::testing {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("fake kubelet: cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

template <class Message>
Message from_json(const std::string& json, const std::string& what) {
  Message message;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &message);
  if (!status.ok()) throw std::runtime_error("fake kubelet: " + what + ": " + status.ToString());
  return message;
}

}  // namespace

class FakeKubelet::Service final : public v1::PodResourcesLister::Service {
 public:
  explicit Service(FakeKubelet& fake) : fake_(fake) {}

  grpc::Status List(grpc::ServerContext* context, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    ++fake_.list_calls_;
    if (auto fault = fault_of(context)) return *fault;
    std::lock_guard lock(fake_.mutex_);
    *response = fake_.list_;
    return grpc::Status::OK;
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext* context, const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* response) override {
    ++fake_.allocatable_calls_;
    if (auto fault = fault_of(context)) return *fault;
    std::lock_guard lock(fake_.mutex_);
    *response = fake_.allocatable_;
    return grpc::Status::OK;
  }

  grpc::Status Get(grpc::ServerContext* context, const v1::GetPodResourcesRequest* request,
                   v1::GetPodResourcesResponse* response) override {
    ++fake_.get_calls_;
    if (auto fault = fault_of(context)) return *fault;
    std::lock_guard lock(fake_.mutex_);
    for (const auto& pod : fake_.list_.pod_resources()) {
      if (pod.name() == request->pod_name() && pod.namespace_() == request->pod_namespace()) {
        *response->mutable_pod_resources() = pod;
        return grpc::Status::OK;
      }
    }
    // Worded like the kubelet's answer for an unknown pod.
    return {grpc::StatusCode::NOT_FOUND,
            "pod " + request->pod_name() + " not found in " + request->pod_namespace()};
  }

 private:
  std::optional<grpc::Status> fault_of(grpc::ServerContext* context) {
    switch (fake_.mode_.load()) {
      case Mode::Serve:
        return std::nullopt;
      case Mode::Unavailable:
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "fake kubelet told to fail");
      case Mode::Stall:
        // Until the caller gives up (its deadline) or the fake stops.
        while (!context->IsCancelled() && !fake_.stopping_) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return grpc::Status(grpc::StatusCode::CANCELLED, "fake kubelet stalled");
    }
    return std::nullopt;
  }

  FakeKubelet& fake_;
};

FakeKubelet::FakeKubelet() : service_(std::make_unique<Service>(*this)) {
  std::string pattern = (std::filesystem::temp_directory_path() / "gpubank-fake-kubelet-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("fake kubelet: mkdtemp failed");
  dir_ = pattern;
  socket_path_ = dir_ + "/kubelet.sock";
  start();
}

FakeKubelet::~FakeKubelet() {
  stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void FakeKubelet::start() {
  if (server_) return;
  stopping_ = false;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) throw std::runtime_error("fake kubelet: cannot serve on unix:" + socket_path_);
}

void FakeKubelet::stop() {
  if (!server_) return;
  stopping_ = true;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  server_.reset();
  std::error_code ignored;
  std::filesystem::remove(socket_path_, ignored);
}

void FakeKubelet::set_list(v1::ListPodResourcesResponse response) {
  std::lock_guard lock(mutex_);
  list_ = std::move(response);
}

void FakeKubelet::set_list_json(const std::string& json) {
  set_list(from_json<v1::ListPodResourcesResponse>(json, "ListPodResourcesResponse"));
}

void FakeKubelet::set_list_fixture(const std::string& path) {
  set_list(from_json<v1::ListPodResourcesResponse>(read_file(path), path));
}

void FakeKubelet::set_allocatable(v1::AllocatableResourcesResponse response) {
  std::lock_guard lock(mutex_);
  allocatable_ = std::move(response);
}

void FakeKubelet::set_allocatable_fixture(const std::string& path) {
  set_allocatable(from_json<v1::AllocatableResourcesResponse>(read_file(path), path));
}

std::size_t FakeKubelet::list_bytes() const {
  std::lock_guard lock(mutex_);
  return list_.ByteSizeLong();
}

std::string many_pods_device_id(int pod, int replica) {
  // NVML's UUID shape (8-4-4-4-12 hex), one GPU per pod, as a bare "<uuid>::<n>" replica.
  char id[64];
  std::snprintf(id, sizeof id, "e46a8f8f-eb27-178a-160e-%012x::%d", static_cast<unsigned>(pod), replica);
  return id;
}

v1::ListPodResourcesResponse many_pods_response(int pods) {
  v1::ListPodResourcesResponse response;
  for (int i = 0; i < pods; ++i) {
    auto* pod = response.add_pod_resources();
    pod->set_namespace_("tenant-" + std::to_string(i % 40));
    pod->set_name("infer-" + std::to_string(i));
    auto* server = pod->add_containers();
    server->set_name("server");
    auto* devices = server->add_devices();
    devices->set_resource_name("nvidia.com/gpu");
    for (int r = 0; r < 4; ++r) devices->add_device_ids(many_pods_device_id(i, r));
    devices->mutable_topology()->add_nodes()->set_id(i % 2);
    // Exclusive CPUs (static CPU manager) and hugepages (memory manager): most of a real
    // answer's bytes on a busy node.
    for (int c = 0; c < 96; ++c) server->add_cpu_ids(2 + (i * 96 + c) % 190);
    auto* memory = server->add_memory();
    memory->set_memory_type("memory");
    memory->set_size(std::uint64_t{64} << 30);
    memory->mutable_topology()->add_nodes()->set_id(i % 2);
    auto* hugepages = server->add_memory();
    hugepages->set_memory_type("hugepages-1Gi");
    hugepages->set_size(std::uint64_t{16} << 30);
    hugepages->mutable_topology()->add_nodes()->set_id(i % 2);
    auto* sidecar = pod->add_containers();
    sidecar->set_name("sidecar");
    for (int c = 0; c < 8; ++c) sidecar->add_cpu_ids(192 + c % 8);
  }
  return response;
}

}  // namespace gpubank::testing
