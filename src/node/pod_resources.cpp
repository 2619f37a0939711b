#include "node/pod_resources.hpp"

#include <grpcpp/grpcpp.h>

#include <utility>

#include "podresources/v1/api.grpc.pb.h"

namespace gpubank::node {

std::string_view grpc_status_name(int code) {
  switch (static_cast<grpc::StatusCode>(code)) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN_CODE";
  }
}

std::string pod_resources_target(std::string_view socket) {
  if (socket.starts_with("unix:")) return std::string(socket);
  return "unix:" + std::string(socket);
}

namespace {

// Device-plugin devices: one allocation per device ID, in the kubelet's order.
void append_devices(const google::protobuf::RepeatedPtrField<v1::ContainerDevices>& devices,
                    const DeviceAllocation& owner, std::vector<DeviceAllocation>& out) {
  for (const auto& group : devices) {
    for (const auto& id : group.device_ids()) {
      DeviceAllocation a = owner;
      a.resource_name = group.resource_name();
      a.device_id = id;
      out.push_back(std::move(a));
    }
  }
}

// DRA: one allocation per device of each claim; the device name is the device ID.
void append_dynamic(const v1::ContainerResources& container, const DeviceAllocation& owner,
                    std::vector<DeviceAllocation>& out) {
  for (const auto& claim : container.dynamic_resources()) {
    for (const auto& resource : claim.claim_resources()) {
      DeviceAllocation a = owner;
      a.device_id = resource.device_name();
      a.claim_name = claim.claim_name();
      a.claim_namespace = claim.claim_namespace();
      a.driver = resource.driver_name();
      a.pool = resource.pool_name();
      out.push_back(std::move(a));
    }
  }
}

class GrpcPodResourcesClient final : public PodResourcesClient {
 public:
  explicit GrpcPodResourcesClient(const PodResourcesOptions& options)
      : target_(pod_resources_target(options.socket)), timeout_(options.timeout) {
    grpc::ChannelArguments args;
    // gRPC's default is 4 MiB, which a node with many pods exceeds (node-apis.md).
    args.SetMaxReceiveMessageSize(static_cast<int>(kMaxResponseBytes));
    // A restarted kubelet re-creates its socket: reconnect within seconds, not gRPC's
    // default of up to two minutes of backoff.
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
    stub_ = v1::PodResourcesLister::NewStub(
        grpc::CreateCustomChannel(target_, grpc::InsecureChannelCredentials(), args));
  }

  Expected<std::vector<DeviceAllocation>> list() override {
    v1::ListPodResourcesResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout_);
    const grpc::Status status = stub_->List(&context, v1::ListPodResourcesRequest{}, &response);
    if (!status.ok()) return failure("List", status);
    std::vector<DeviceAllocation> out;
    for (const auto& pod : response.pod_resources()) {
      for (const auto& container : pod.containers()) {
        DeviceAllocation owner;
        owner.namespace_name = pod.namespace_();
        owner.pod = pod.name();
        owner.container = container.name();
        append_devices(container.devices(), owner, out);
        append_dynamic(container, owner, out);
      }
    }
    return out;
  }

  Expected<std::vector<DeviceAllocation>> allocatable() override {
    v1::AllocatableResourcesResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout_);
    const grpc::Status status =
        stub_->GetAllocatableResources(&context, v1::AllocatableResourcesRequest{}, &response);
    if (!status.ok()) return failure("GetAllocatableResources", status);
    std::vector<DeviceAllocation> out;
    append_devices(response.devices(), DeviceAllocation{}, out);
    return out;
  }

 private:
  Unexpected failure(std::string_view method, const grpc::Status& status) const {
    std::string message = "podresources " + target_ + " " + std::string(method) + ": " +
                          std::string(grpc_status_name(status.error_code()));
    if (!status.error_message().empty()) message += ": " + status.error_message();
    return Unexpected{std::move(message)};
  }

  std::string target_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub_;
};

}  // namespace

Expected<std::unique_ptr<PodResourcesClient>> PodResourcesClient::create(const PodResourcesOptions& options) {
  if (options.socket.empty() || options.socket == "unix:") return Unexpected{"podresources: no socket path"};
  if (options.timeout <= std::chrono::milliseconds::zero()) {
    return Unexpected{"podresources " + pod_resources_target(options.socket) + ": timeout must be positive"};
  }
  // The channel connects lazily: a kubelet that is not up yet is an error of the first call.
  return std::unique_ptr<PodResourcesClient>(std::make_unique<GrpcPodResourcesClient>(options));
}

}  // namespace gpubank::node
