// Load test of the admission webhook: the real api::WebhookServer, in this process on its
// own threads, over HTTPS on 127.0.0.1, with the example policies and a durable audit log.
//
// 32 client threads (--connections) each keep one TLS connection open and send their
// share of 10,000 requests (--requests), one at a time:
//   baseline  GET /healthz        transport, TLS and HTTP only
//   measured  POST /validate      AdmissionReviews: 70% valid GPUQuotaPolicy changes
//                                 (CREATE and UPDATE by group admins), 20% denied ones
//                                 (out of the guardrail range, not a group admin, a
//                                 duplicate quota), 10% pod creations with labels
// Every /validate answer must be HTTP 200, echo the request's uid and give the decision
// its category expects; otherwise the run fails (exit 1). The client threads share the
// machine with the server, as a load generator on the same host does.
//
// Afterwards, with the server stopped, the same requests go through api::review() in one
// thread (the decision alone) and single appends go to a fresh audit log (one fdatasync
// each), to show where a request's time goes.
#include <httplib.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/admission.hpp"
#include "api/audit_log.hpp"
#include "api/webhook_server.hpp"
#include "self_signed_cert.hpp"

namespace {

namespace fs = std::filesystem;
namespace api = gpubank::api;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// ---- options -----------------------------------------------------------------------------

struct Options {
  int connections = 32;
  int requests = 10'000;
  int server_threads = gpubank::api::WebhookOptions{}.threads;         // event-loop threads
  int review_threads = gpubank::api::WebhookOptions{}.review_threads;  // decisions and audit appends
  int in_process_samples = 2'000;
  int audit_samples = 200;
  double rate = 0;  // requests/s over all connections; 0: closed loop (as fast as answers come)
  std::string examples = GPUBANK_SOURCE_DIR "/examples/policies";
  std::string work_dir;  // default: $TMPDIR or /tmp
  std::string summary;
  bool keep = false;
};

const char* const kUsage =
    "usage: webhook_load [--connections=32] [--requests=10000] [--server-threads=2] [--review-threads=16]\n"
    "                    [--rate=REQUESTS_PER_S] [--in-process-samples=2000] [--audit-samples=200]\n"
    "                    [--examples=DIR] [--work-dir=DIR] [--summary=FILE] [--keep]\n";

bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    const auto eq = arg.find('=');
    const std::string key = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? std::string() : arg.substr(eq + 1);
    auto number = [&](int& out) {
      out = std::atoi(value.c_str());
      return out > 0;
    };
    bool ok = true;
    if (key == "--connections") ok = number(o.connections);
    else if (key == "--requests") ok = number(o.requests);
    else if (key == "--server-threads") ok = number(o.server_threads);
    else if (key == "--review-threads") ok = number(o.review_threads);
    else if (key == "--in-process-samples") ok = number(o.in_process_samples);
    else if (key == "--audit-samples") ok = number(o.audit_samples);
    else if (key == "--rate") ok = (o.rate = std::atof(value.c_str())) > 0;
    else if (key == "--examples") o.examples = value;
    else if (key == "--work-dir") o.work_dir = value;
    else if (key == "--summary") o.summary = value;
    else if (key == "--keep") o.keep = true;
    else ok = false;
    if (!ok) {
      std::cerr << "webhook_load: bad argument " << arg << "\n" << kUsage;
      return false;
    }
  }
  if (o.work_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    o.work_dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  return true;
}

// ---- the requests ------------------------------------------------------------------------

enum class Category { ValidCreate, ValidUpdate, OutOfRange, NotGroupAdmin, DuplicateQuota, Pod };

struct CategoryInfo {
  Category category;
  const char* name;
  const char* description;
  bool allowed;
  int code;  // status.code of a denial
};

constexpr CategoryInfo kCategories[] = {
    {Category::ValidCreate, "valid-create", "CREATE GPUQuotaPolicy by a group admin, within the guardrails", true, 200},
    {Category::ValidUpdate, "valid-update", "UPDATE GPUQuotaPolicy by a group admin, within the guardrails", true, 200},
    {Category::OutOfRange, "denied-range", "CREATE GPUQuotaPolicy above the group's guardrail (422)", false, 422},
    {Category::NotGroupAdmin, "denied-admin", "CREATE GPUQuotaPolicy by another group's admin (403)", false, 403},
    {Category::DuplicateQuota, "denied-duplicate", "CREATE a second quota for a group and pool (422)", false, 422},
    {Category::Pod, "pod", "CREATE Pod with workload labels and a priority class", true, 200},
};

const CategoryInfo& info(Category c) { return kCategories[static_cast<int>(c)]; }

// 20 slots: 12 + 2 valid (70%), 2 + 1 + 1 denied (20%), 2 pods (10%).
Category category_of(int i) {
  constexpr Category kMix[20] = {
      Category::ValidCreate, Category::ValidCreate,   Category::ValidCreate, Category::ValidCreate,
      Category::ValidCreate, Category::OutOfRange,    Category::ValidCreate, Category::ValidCreate,
      Category::ValidUpdate, Category::Pod,           Category::ValidCreate, Category::ValidCreate,
      Category::ValidCreate, Category::NotGroupAdmin, Category::ValidCreate, Category::OutOfRange,
      Category::ValidCreate, Category::ValidUpdate,   Category::DuplicateQuota, Category::Pod,
  };
  return kMix[i % 20];
}

struct Request {
  Category category;
  std::string uid;
  std::string body;
};

class RequestFactory {
 public:
  explicit RequestFactory(std::uint64_t seed) : rng_(seed) {}

  Request make(int i) {
    Request r{category_of(i), uuid(), {}};
    json review;
    switch (r.category) {
      case Category::ValidCreate: {
        const int guaranteed = between(0, 8);
        review = policy_review(r.uid, "CREATE", cs_mig_quota("cs-dev-mig-" + std::to_string(i), guaranteed), nullptr,
                               cs_admin(i));
        break;
      }
      case Category::ValidUpdate: {
        const int borrow = between(0, 16);
        review = policy_review(r.uid, "UPDATE", search_quota(borrow, 32 + borrow), search_quota(16, 48), search_admin());
        break;
      }
      case Category::OutOfRange:
        review = policy_review(r.uid, "CREATE", cs_mig_quota("cs-dev-mig-" + std::to_string(i), between(9, 24)),
                               nullptr, cs_admin(i));
        break;
      case Category::NotGroupAdmin:
        review = policy_review(r.uid, "CREATE", cs_mig_quota("cs-dev-mig-" + std::to_string(i), between(0, 8)), nullptr,
                               {"dana", {"ads-admins", "system:authenticated"}});
        break;
      case Category::DuplicateQuota:
        review = policy_review(r.uid, "CREATE",
                               quota("search-h100-extra-" + std::to_string(i), "search", "h100-rdma-training",
                                     between(1, 8), 8, std::nullopt, std::nullopt),
                               nullptr, search_admin());
        break;
      case Category::Pod:
        review = pod_review(r.uid, "ranking-finetune-" + std::to_string(i));
        break;
    }
    r.body = review.dump();
    return r;
  }

 private:
  struct User {
    std::string name;
    std::vector<std::string> groups;
  };

  int between(int lo, int hi) { return lo + static_cast<int>(rng_() % static_cast<std::uint64_t>(hi - lo + 1)); }

  std::string uuid() {
    const std::uint64_t a = rng_();
    const std::uint64_t b = rng_();
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08llx-%04llx-4%03llx-a%03llx-%012llx", static_cast<unsigned long long>(a >> 32),
                  static_cast<unsigned long long>((a >> 16) & 0xffff), static_cast<unsigned long long>(a & 0xfff),
                  static_cast<unsigned long long>(b >> 52), static_cast<unsigned long long>(b & 0xffffffffffffULL));
    return buf;
  }

  static User cs_admin(int i) {
    // customer-service's admins: user:mei.chen and group:customer-service-admins.
    if (i % 2 == 0) return {"mei.chen", {"customer-service-engineers", "system:authenticated"}};
    return {"li.wei", {"customer-service-admins", "system:authenticated"}};
  }
  static User search_admin() { return {"arjun", {"search-admins", "search-engineers", "system:authenticated"}}; }

  // A policy as the API server forwards it: server-written metadata, kubectl's
  // last-applied annotation and managedFields included.
  static json with_server_metadata(json object) {
    json applied = object;
    object["metadata"]["uid"] = "5d0c6a48-1f6e-4f4e-9d5c-3d8f0e6c1a2b";
    object["metadata"]["generation"] = 1;
    object["metadata"]["creationTimestamp"] = "2026-11-30T09:12:44Z";
    object["metadata"]["annotations"] = {{"kubectl.kubernetes.io/last-applied-configuration", applied.dump() + "\n"}};
    json spec_fields = json::object();
    for (const auto& [key, value] : object["spec"].items()) spec_fields["f:" + key] = json::object();
    object["metadata"]["managedFields"] = json::array({{
        {"manager", "kubectl-client-side-apply"},
        {"operation", "Update"},
        {"apiVersion", "platform.gpubank.dev/v1alpha1"},
        {"time", "2026-11-30T09:12:44Z"},
        {"fieldsType", "FieldsV1"},
        {"fieldsV1",
         {{"f:metadata",
           {{"f:annotations", {{".", json::object()}, {"f:kubectl.kubernetes.io/last-applied-configuration", json::object()}}}}},
          {"f:spec", spec_fields}}},
    }});
    return object;
  }

  static json quota(const std::string& name, const std::string& group, const std::string& pool, int guaranteed,
                    int borrow, std::optional<int> lending, std::optional<int> max_capacity) {
    json spec = {{"businessGroup", group}, {"resourcePool", pool}, {"guaranteed", guaranteed}, {"borrowLimit", borrow}};
    if (lending) spec["lendingLimit"] = *lending;
    if (max_capacity) spec["maxCapacity"] = *max_capacity;
    spec["reclaimPolicy"] = {{"gracePeriod", "10m"}, {"onlyPreempt", {"batch", "checkpointable"}}};
    return with_server_metadata({{"apiVersion", "platform.gpubank.dev/v1alpha1"},
                                 {"kind", "GPUQuotaPolicy"},
                                 {"metadata", {{"name", name}}},
                                 {"spec", spec}});
  }

  // customer-service may hold 0..8 on the MIG pool and has no quota there yet.
  json cs_mig_quota(const std::string& name, int guaranteed) {
    const int max_capacity = std::max(guaranteed, 8);
    return quota(name, "customer-service", "mig-or-shared-development", guaranteed, max_capacity - guaranteed,
                 between(0, guaranteed), max_capacity);
  }

  static json search_quota(int borrow, int max_capacity) {
    return quota("search-team-h100", "search", "h100-rdma-training", 32, borrow, 8, max_capacity);
  }

  static json policy_review(const std::string& uid, const std::string& operation, const json& object,
                            const json& old_object, const User& user) {
    const json gvk = {{"group", "platform.gpubank.dev"}, {"version", "v1alpha1"}, {"kind", "GPUQuotaPolicy"}};
    const json gvr = {{"group", "platform.gpubank.dev"}, {"version", "v1alpha1"}, {"resource", "gpuquotapolicies"}};
    return review(uid, gvk, gvr, operation, object["metadata"]["name"], "", object, old_object, user);
  }

  static json review(const std::string& uid, const json& gvk, const json& gvr, const std::string& operation,
                     const std::string& name, const std::string& ns, const json& object, const json& old_object,
                     const User& user) {
    json request = {
        {"uid", uid},
        {"kind", gvk},
        {"resource", gvr},
        {"requestKind", gvk},
        {"requestResource", gvr},
        {"name", name},
        {"operation", operation},
        {"userInfo", {{"username", user.name}, {"uid", "u-" + user.name}, {"groups", user.groups}}},
        {"object", object},
        {"oldObject", old_object},
        {"dryRun", false},
        {"options",
         {{"apiVersion", "meta.k8s.io/v1"},
          {"kind", operation == "CREATE" ? "CreateOptions" : "UpdateOptions"},
          {"fieldManager", "kubectl-client-side-apply"}}},
    };
    if (!ns.empty()) request["namespace"] = ns;
    return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", request}};
  }

  json pod_review(const std::string& uid, const std::string& name) {
    const json labels = {
        {"app", "ranking-finetune"},
        {"platform.gpubank.dev/business-group", "search"},
        {"platform.gpubank.dev/workload-type", "training"},
        {"platform.gpubank.dev/owner-id", "arjun"},
        {"kueue.x-k8s.io/queue-name", "search-training"},
        {"kueue.x-k8s.io/priority-class", between(0, 1) == 0 ? "training-high" : "training-standard"},
    };
    const json container = {
        {"name", "trainer"},
        {"image", "registry.example.com/search/ranking-trainer:2026.11.3"},
        {"command", {"torchrun", "--nproc-per-node=8", "train.py", "--config=/etc/train/config.yaml"}},
        {"env", {{{"name", "NCCL_DEBUG"}, {"value", "WARN"}}, {{"name", "EPOCHS"}, {"value", "3"}}}},
        {"resources", {{"limits", {{"nvidia.com/gpu", "8"}, {"cpu", "64"}, {"memory", "512Gi"}}},
                       {"requests", {{"nvidia.com/gpu", "8"}, {"cpu", "48"}, {"memory", "480Gi"}}}}},
        {"volumeMounts", {{{"name", "config"}, {"mountPath", "/etc/train"}}, {{"name", "shm"}, {"mountPath", "/dev/shm"}}}},
    };
    const json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", name},
          {"namespace", "search"},
          {"uid", "9a7f0f0e-3b7e-4d8e-8b0c-2f5e1d9c7b11"},
          {"creationTimestamp", nullptr},
          {"labels", labels},
          {"ownerReferences",
           {{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", "ranking-finetune"}, {"uid", "c1f5"},
             {"controller", true}}}}}},
        {"spec",
         {{"containers", {container}},
          {"restartPolicy", "Never"},
          {"priorityClassName", labels["kueue.x-k8s.io/priority-class"]},
          {"serviceAccountName", "trainer"},
          {"nodeSelector", {{"platform.gpubank.dev/pool", "h100-rdma-training"}}},
          {"tolerations",
           {{{"key", "platform.gpubank.dev/pool"}, {"operator", "Equal"}, {"value", "h100-rdma-training"},
             {"effect", "NoSchedule"}}}},
          {"volumes",
           {{{"name", "config"}, {"configMap", {{"name", "ranking-finetune"}}}},
            {{"name", "shm"}, {"emptyDir", {{"medium", "Memory"}}}}}}}},
    };
    const json gvk = {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}};
    const json gvr = {{"group", ""}, {"version", "v1"}, {"resource", "pods"}};
    return review(uid, gvk, gvr, "CREATE", name, "search", pod, nullptr,
                  {"system:serviceaccount:kube-system:job-controller",
                   {"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}});
  }

  std::mt19937_64 rng_;
};

// ---- statistics --------------------------------------------------------------------------

struct Stats {
  std::size_t count = 0;
  double wall_s = 0;
  double cpu_s = 0;  // user + system of the whole process (clients and server)
  double server_cpu_s = 0;  // of it, the server's own threads (named gpubank-*)
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;  // milliseconds
  [[nodiscard]] double rate() const { return wall_s > 0 ? static_cast<double>(count) / wall_s : 0; }
};

// Nearest-rank percentiles.
Stats latency_stats(std::vector<double> ms) {
  Stats s;
  s.count = ms.size();
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double p) {
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(ms.size())));
    return ms[std::min(ms.size() - 1, rank == 0 ? 0 : rank - 1)];
  };
  s.p50 = at(0.50);
  s.p90 = at(0.90);
  s.p99 = at(0.99);
  s.max = ms.back();
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean = sum / static_cast<double>(ms.size());
  return s;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// User + system time of this process's threads named gpubank-* (the server's event loops,
// review pool and health listener: webhook_server.cpp names them), from
// /proc/self/task/*/stat, in seconds.
double server_cpu_seconds() {
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  double total = 0;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (!name.starts_with("gpubank-")) continue;
    std::ifstream stat(task.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // Fields after the ")" that closes the name: state is field 3; utime and stime are 14 and 15.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    total += (utime + stime) / tick;
  }
  return total;
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string filesystem_type(const std::string& path) {
  struct statfs st {};
  if (statfs(path.c_str(), &st) != 0) return "unknown";
  switch (static_cast<unsigned long>(st.f_type)) {
    case 0xEF53UL: return "ext4";
    case 0x01021994UL: return "tmpfs (fdatasync is a no-op)";
    case 0x58465342UL: return "xfs";
    case 0x9123683EUL: return "btrfs";
    case 0x794C7630UL: return "overlayfs";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "type 0x%lx", static_cast<unsigned long>(st.f_type));
      return buf;
    }
  }
}

// ---- the load ----------------------------------------------------------------------------

struct Reply {
  int index = 0;  // into the request list
  int status = 0;
  std::string body;
};

struct ClientResult {
  std::vector<double> health_ms;
  std::vector<double> validate_ms;
  std::vector<Reply> replies;
  int transport_errors = 0;
  int health_errors = 0;
};

// Send times for one connection. Closed loop (rate 0): the next request goes as soon as
// the previous answer is in, and latency runs from the send. Paced: requests are due at
// fixed intervals (the connections staggered), and latency runs from when a request was
// due, so a slow answer also counts against the requests queued behind it.
class Pacer {
 public:
  Pacer(const Options& o, int id)
      : interval_(o.rate > 0 ? std::chrono::duration<double>(o.connections / o.rate) : std::chrono::duration<double>(0)),
        offset_(interval_ * id / o.connections) {}
  void start() { start_ = Clock::now(); }
  // Waits until request k is due; returns the time its latency is measured from.
  Clock::time_point due(std::size_t k) const {
    if (interval_.count() == 0) return Clock::now();
    const auto at = start_ + std::chrono::duration_cast<Clock::duration>(offset_ + interval_ * static_cast<double>(k));
    std::this_thread::sleep_until(at);
    return at;
  }

 private:
  std::chrono::duration<double> interval_;
  std::chrono::duration<double> offset_;
  Clock::time_point start_;
};

// One client thread: connect, then both phases on the same keep-alive connection. It
// always reaches every barrier, even after errors, so the run cannot hang.
void client(int id, int port, const Options& o, const std::vector<Request>& requests, std::barrier<>& sync,
            ClientResult& out) {
  httplib::SSLClient cli("127.0.0.1", port);
  cli.enable_server_certificate_verification(false);
  cli.set_keep_alive(true);
  cli.set_tcp_nodelay(true);  // as the API server's Go client does (net.TCPConn's default)
  cli.set_read_timeout(30, 0);
  if (auto warm = cli.Get("/healthz"); !warm || warm->status != 200) ++out.transport_errors;  // TLS handshake
  std::vector<int> mine;
  for (int i = id; i < o.requests; i += o.connections) mine.push_back(i);
  out.health_ms.reserve(mine.size());
  out.validate_ms.reserve(mine.size());
  out.replies.reserve(mine.size());
  Pacer pacer(o, id);

  sync.arrive_and_wait();  // everyone connected: healthz phase
  pacer.start();
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const auto t0 = pacer.due(k);
    auto res = cli.Get("/healthz");
    out.health_ms.push_back(ms_since(t0));
    if (!res) ++out.transport_errors;
    else if (res->status != 200 || res->body != "ok\n") ++out.health_errors;
  }
  sync.arrive_and_wait();  // validate phase
  pacer.start();
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const int i = mine[k];
    const Request& r = requests[static_cast<std::size_t>(i)];
    const auto t0 = pacer.due(k);
    auto res = cli.Post("/validate", r.body, "application/json");
    out.validate_ms.push_back(ms_since(t0));
    if (!res) {
      ++out.transport_errors;
      continue;
    }
    out.replies.push_back(Reply{i, res->status, std::move(res->body)});
  }
  sync.arrive_and_wait();  // done
}

struct Verification {
  std::map<Category, std::pair<int, int>> allowed_denied;  // by category
  int allowed = 0;
  int denied = 0;
  int failures = 0;
  std::vector<std::string> first_failures;
  void fail(std::string message) {
    ++failures;
    if (first_failures.size() < 5) first_failures.push_back(std::move(message));
  }
};

// Every answer: HTTP 200, an AdmissionReview response with the request's uid, and the
// decision its category expects.
Verification verify(const std::vector<Request>& requests, const std::vector<ClientResult>& results) {
  Verification v;
  std::size_t answered = 0;
  for (const auto& c : results) {
    for (const auto& reply : c.replies) {
      ++answered;
      const Request& r = requests[static_cast<std::size_t>(reply.index)];
      const CategoryInfo& expect = info(r.category);
      const std::string where = "request " + std::to_string(reply.index) + " (" + expect.name + ")";
      if (reply.status != 200) {
        v.fail(where + ": HTTP " + std::to_string(reply.status));
        continue;
      }
      const json body = json::parse(reply.body, nullptr, false);
      const json* response = body.is_object() && body.contains("response") ? &body["response"] : nullptr;
      if (response == nullptr || !response->is_object()) {
        v.fail(where + ": not an AdmissionReview response: " + reply.body.substr(0, 200));
        continue;
      }
      if (response->value("uid", std::string()) != r.uid) {
        v.fail(where + ": uid " + response->value("uid", std::string("<none>")) + " does not echo " + r.uid);
        continue;
      }
      const bool allowed = response->value("allowed", false);
      auto& [n_allowed, n_denied] = v.allowed_denied[r.category];
      ++(allowed ? n_allowed : n_denied);
      ++(allowed ? v.allowed : v.denied);
      if (allowed != expect.allowed) {
        v.fail(where + ": expected " + (expect.allowed ? "allowed" : "denied") + ", got " + reply.body.substr(0, 300));
      } else if (!allowed && response->contains("status") && (*response)["status"].value("code", 0) != expect.code) {
        v.fail(where + ": expected code " + std::to_string(expect.code) + ", got " + reply.body.substr(0, 300));
      }
    }
  }
  const std::size_t missing = requests.size() - answered;
  if (missing > 0) v.fail(std::to_string(missing) + " requests got no answer (transport errors)");
  return v;
}

// ---- in-process breakdown ------------------------------------------------------------------

struct Breakdown {
  std::map<Category, Stats> review_by_category;  // api::review() alone
  Stats review_all;
  Stats audit_append;  // AuditLog::append alone, one thread: one fdatasync per entry
};

Breakdown measure_in_process(const api::PolicySnapshot& snapshot, const std::vector<Request>& requests,
                             const Options& o, const std::string& dir) {
  Breakdown b;
  std::map<Category, std::vector<double>> by_category;
  std::vector<double> all;
  for (int k = 0; k < o.in_process_samples; ++k) {
    const Request& r = requests[static_cast<std::size_t>(k) % requests.size()];
    const gpubank::Timestamp now = std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
    const auto t0 = Clock::now();
    const api::AdmissionDecision d = api::review(snapshot, r.body, now);
    const double ms = ms_since(t0);
    by_category[r.category].push_back(ms);
    all.push_back(ms);
    if (d.uid != r.uid) std::cerr << "webhook_load: review() lost the uid of request " << k << '\n';
  }
  for (auto& [c, v] : by_category) b.review_by_category[c] = latency_stats(std::move(v));
  b.review_all = latency_stats(std::move(all));

  auto log = api::AuditLog::open(dir + "/audit-single-writer.jsonl");
  if (!log) {
    std::cerr << "webhook_load: " << log.error() << '\n';
    return b;
  }
  const json entry = {{"time", "2026-11-30T09:12:44.123456789Z"}, {"uid", requests.front().uid},
                      {"operation", "CREATE"}, {"kind", "platform.gpubank.dev/GPUQuotaPolicy"},
                      {"namespace", ""}, {"name", "cs-dev-mig-0"}, {"user", "mei.chen"},
                      {"groups", {"customer-service-engineers", "system:authenticated"}}, {"dryRun", false},
                      {"allowed", true}, {"code", 200}, {"rules", json::array()}};
  std::vector<double> appends;
  for (int k = 0; k < o.audit_samples; ++k) {
    const auto t0 = Clock::now();
    if (!(*log)->append(entry)) break;
    appends.push_back(ms_since(t0));
  }
  b.audit_append = latency_stats(std::move(appends));
  return b;
}

// ---- report ------------------------------------------------------------------------------

struct Report {
  Options options;
  Stats health;
  Stats validate;
  Verification verification;
  int transport_errors = 0;
  int health_errors = 0;
  std::uintmax_t audit_bytes = 0;
  std::size_t audit_lines = 0;
  std::uintmax_t server_log_bytes = 0;
  std::string filesystem;
  Breakdown breakdown;
};

std::string latency_row(const std::string& name, const Stats& s, bool with_rate) {
  return "| " + name + " | " + std::to_string(s.count) + " | " + (with_rate ? fixed(s.rate(), 0) : std::string("-")) +
         " | " + fixed(s.mean, 2) + " | " + fixed(s.p50, 2) + " | " + fixed(s.p90, 2) + " | " + fixed(s.p99, 2) + " | " +
         fixed(s.max, 2) + " |\n";
}

std::string render(const Report& r) {
  const Options& o = r.options;
  std::ostringstream s;
  s << "Server: api::WebhookServer in-process, HTTPS on 127.0.0.1 (RSA 2048 self-signed), " << o.server_threads
    << " event-loop threads and " << o.review_threads
    << " review threads (Boost.Beast), policies from examples/policies, audit log on " << r.filesystem << ".\n";
  s << "Load: " << o.connections << " client threads in the same process, one keep-alive TLS connection each, "
    << o.requests << " requests per phase, one request in flight per connection, "
    << (o.rate > 0 ? "paced at " + fixed(o.rate, 0) + " requests/s in all (latency from when each request was due)"
                   : std::string("closed loop (each connection sends its next request as soon as the answer is in)"))
    << ".\n\n";
  s << "| Phase | Requests | Requests/s | Mean (ms) | p50 (ms) | p90 (ms) | p99 (ms) | Max (ms) |\n";
  s << "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  s << latency_row("GET /healthz (baseline)", r.health, true);
  s << latency_row("POST /validate", r.validate, true);
  auto ratio = [](double a, double b) { return b > 0 ? fixed(a / b, 2) + "x" : std::string("n/a"); };
  s << "| **validate / healthz** | | " << ratio(r.validate.rate(), r.health.rate()) << " | "
    << ratio(r.validate.mean, r.health.mean) << " | " << ratio(r.validate.p50, r.health.p50) << " | "
    << ratio(r.validate.p90, r.health.p90) << " | " << ratio(r.validate.p99, r.health.p99) << " | "
    << ratio(r.validate.max, r.health.max) << " |\n\n";

  const double validate_cpu_ms = r.validate.count > 0 ? r.validate.cpu_s * 1e3 / static_cast<double>(r.validate.count) : 0;
  const double health_cpu_ms = r.health.count > 0 ? r.health.cpu_s * 1e3 / static_cast<double>(r.health.count) : 0;
  s << "CPU time of the whole process (clients + server) per request: healthz " << fixed(health_cpu_ms, 3)
    << " ms, validate " << fixed(validate_cpu_ms, 3) << " ms";
  if (o.rate > 0) {
    s << " (paced: this includes what the process spends while waiting).\n\n";
  } else {
    s << "; with " << std::thread::hardware_concurrency() << " hardware threads, CPU-bound throughput is at most about "
      << fixed(validate_cpu_ms > 0 ? std::thread::hardware_concurrency() * 1e3 / validate_cpu_ms : 0, 0)
      << " validate requests/s.\n\n";
  }
  const double validate_server_ms =
      r.validate.count > 0 ? r.validate.server_cpu_s * 1e3 / static_cast<double>(r.validate.count) : 0;
  const double health_server_ms = r.health.count > 0 ? r.health.server_cpu_s * 1e3 / static_cast<double>(r.health.count) : 0;
  s << "Of that, the server's own threads (gpubank-io, gpubank-review, gpubank-health, from /proc/self/task): healthz "
    << fixed(health_server_ms, 3) << " ms, validate " << fixed(validate_server_ms, 3)
    << " ms per request; the rest is the load generator's (its TLS, HTTP and bookkeeping).";
  if (o.rate <= 0 && validate_server_ms > 0) {
    const double cpus = std::thread::hardware_concurrency();
    const double server_rate = cpus * 1e3 / validate_server_ms;
    s << " On " << cpus << " CPUs of its own the server would answer at most about " << fixed(server_rate, 0)
      << " validate requests/s, so by Little's law " << o.connections << " closed-loop connections would wait at least "
      << fixed(o.connections / server_rate * 1e3, 2) << " ms on average; here the clients take the other "
      << fixed(100.0 * (1.0 - validate_server_ms / std::max(validate_cpu_ms, 1e-9)), 0) << " % of the CPU.";
  }
  s << "\n\n";

  const bool met = r.validate.p99 < 5.0 && r.verification.failures == 0;
  s << "**Target: POST /validate p99 < 5 ms with " << o.connections << " connections ("
    << (o.rate > 0 ? "paced at " + fixed(o.rate, 0) + " requests/s" : std::string("closed loop"))
    << "): " << (met ? "met" : "NOT met") << "** (p99 " << fixed(r.validate.p99, 2) << " ms).\n\n";

  s << "Decisions: " << r.verification.allowed << " allowed, " << r.verification.denied << " denied; "
    << (r.verification.failures == 0 ? "every response echoed its request's uid and had the expected decision."
                                     : std::to_string(r.verification.failures) + " FAILED checks.")
    << " Transport errors: " << r.transport_errors << ", bad healthz answers: " << r.health_errors << ".\n\n";
  s << "| Category | Share | Allowed | Denied | What |\n|---|---:|---:|---:|---|\n";
  for (const auto& c : kCategories) {
    int n = 0;
    for (int i = 0; i < 20; ++i) n += category_of(i) == c.category ? 1 : 0;
    const auto it = r.verification.allowed_denied.find(c.category);
    const auto counts = it == r.verification.allowed_denied.end() ? std::pair{0, 0} : it->second;
    s << "| " << c.name << " | " << n * 5 << "% | " << counts.first << " | " << counts.second << " | " << c.description
      << " |\n";
  }
  s << "\nAudit log after the run: " << r.audit_bytes << " bytes, " << r.audit_lines << " lines ("
    << (r.audit_lines > 0 ? fixed(static_cast<double>(r.audit_bytes) / static_cast<double>(r.audit_lines), 0) : "0")
    << " bytes per decision); every decision is fdatasync'ed before it is answered (group commit). Server log (spdlog, "
       "info level, one line per denial): "
    << r.server_log_bytes << " bytes.\n\n";

  const Breakdown& b = r.breakdown;
  s << "Where the time goes (server stopped, one thread, no TLS or HTTP):\n\n";
  s << "| Step | Samples | Mean (ms) | p50 (ms) | p90 (ms) | p99 (ms) | Max (ms) |\n|---|---:|---:|---:|---:|---:|---:|\n";
  auto row = [&](const std::string& name, const Stats& st) {
    return "| " + name + " | " + std::to_string(st.count) + " | " + fixed(st.mean, 3) + " | " + fixed(st.p50, 3) + " | " +
           fixed(st.p90, 3) + " | " + fixed(st.p99, 3) + " | " + fixed(st.max, 3) + " |\n";
  };
  s << row("api::review(), all requests", b.review_all);
  for (const auto& c : kCategories) {
    if (auto it = b.review_by_category.find(c.category); it != b.review_by_category.end()) {
      s << row(std::string("api::review(), ") + c.name, it->second);
    }
  }
  s << row("AuditLog::append, single writer (one fdatasync each)", b.audit_append);
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, o)) return 2;

  // Work directory: certificate, audit log, server log.
  std::string dir_template = o.work_dir + "/webhook-load-XXXXXX";
  if (mkdtemp(dir_template.data()) == nullptr) {
    std::perror(("webhook_load: mkdtemp in " + o.work_dir).c_str());
    return 1;
  }
  const std::string dir = dir_template;
  std::cerr << "webhook_load: working in " << dir << '\n';
  if (const std::string err = gpubank::bench::write_self_signed_cert(dir + "/tls.crt", dir + "/tls.key"); !err.empty()) {
    std::cerr << "webhook_load: " << err << '\n';
    return 1;
  }
  // The server logs as in production (info: one line per denial), to a file.
  spdlog::set_default_logger(spdlog::basic_logger_mt("webhook", dir + "/webhook.log"));
  spdlog::set_level(spdlog::level::info);

  api::WebhookOptions server_options;
  server_options.address = "127.0.0.1";
  server_options.port = 0;
  server_options.tls_cert = dir + "/tls.crt";
  server_options.tls_key = dir + "/tls.key";
  server_options.audit_log = dir + "/audit.jsonl";
  server_options.threads = o.server_threads;
  server_options.review_threads = o.review_threads;
  server_options.health_port = -1;  // loopback only; the probes are not measured here
  server_options.guardrails = o.examples + "/00-guardrails.yaml";
  for (const auto& e : fs::directory_iterator(o.examples)) {
    if (e.path().extension() == ".yaml" && e.path().filename() != "00-guardrails.yaml") {
      server_options.policies.push_back(e.path().string());
    }
  }
  std::sort(server_options.policies.begin(), server_options.policies.end());

  auto created = api::WebhookServer::create(server_options);
  if (!created) {
    std::cerr << "webhook_load: " << created.error() << '\n';
    return 1;
  }
  std::unique_ptr<api::WebhookServer> server = std::move(*created);
  auto port = server->bind();
  if (!port) {
    std::cerr << "webhook_load: " << port.error() << '\n';
    return 1;
  }
  std::thread serving([&] { server->serve(); });
  {
    httplib::SSLClient probe("127.0.0.1", *port);
    probe.enable_server_certificate_verification(false);
    bool ready = false;
    for (int attempt = 0; attempt < 500 && !ready; ++attempt) {
      auto res = probe.Get("/readyz");
      ready = res && res->status == 200;
      if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!ready) {
      std::cerr << "webhook_load: the server did not become ready\n";
      server->stop();
      serving.join();
      return 1;
    }
  }

  // Requests are built before anything is timed, and every category is checked once
  // against the decision logic, so a wrong payload fails here rather than skewing the run.
  RequestFactory factory(20240601);
  std::vector<Request> requests;
  requests.reserve(static_cast<std::size_t>(o.requests));
  for (int i = 0; i < o.requests; ++i) requests.push_back(factory.make(i));
  {
    const auto snapshot = server->snapshot();
    const gpubank::Timestamp now = std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
    for (int i = 0; i < 20 && i < o.requests; ++i) {
      const auto d = api::review(*snapshot, requests[static_cast<std::size_t>(i)].body, now);
      const CategoryInfo& expect = info(requests[static_cast<std::size_t>(i)].category);
      if (d.allowed != expect.allowed || (!d.allowed && d.code != expect.code)) {
        std::cerr << "webhook_load: request " << i << " (" << expect.name << ") is decided " << d.code << ' '
                  << d.message << "; fix the payload\n";
        server->stop();
        serving.join();
        return 1;
      }
    }
  }

  std::cerr << "webhook_load: " << o.connections << " connections, " << o.requests << " requests per phase\n";
  std::vector<ClientResult> results(static_cast<std::size_t>(o.connections));
  std::barrier<> sync(o.connections + 1);
  std::vector<std::thread> clients;
  for (int c = 0; c < o.connections; ++c) {
    clients.emplace_back(client, c, *port, std::cref(o), std::cref(requests), std::ref(sync),
                         std::ref(results[static_cast<std::size_t>(c)]));
  }
  Report report;
  report.options = o;
  sync.arrive_and_wait();
  auto t0 = Clock::now();
  double cpu0 = cpu_seconds();
  double server0 = server_cpu_seconds();
  sync.arrive_and_wait();
  report.health.wall_s = ms_since(t0) / 1e3;
  report.health.cpu_s = cpu_seconds() - cpu0;
  report.health.server_cpu_s = server_cpu_seconds() - server0;
  t0 = Clock::now();
  cpu0 = cpu_seconds();
  server0 = server_cpu_seconds();
  sync.arrive_and_wait();
  report.validate.wall_s = ms_since(t0) / 1e3;
  report.validate.cpu_s = cpu_seconds() - cpu0;
  report.validate.server_cpu_s = server_cpu_seconds() - server0;
  for (auto& t : clients) t.join();
  server->stop();
  serving.join();
  std::cerr << "webhook_load: load done, measuring the parts in-process\n";

  std::vector<double> health_ms;
  std::vector<double> validate_ms;
  for (const auto& c : results) {
    health_ms.insert(health_ms.end(), c.health_ms.begin(), c.health_ms.end());
    validate_ms.insert(validate_ms.end(), c.validate_ms.begin(), c.validate_ms.end());
    report.transport_errors += c.transport_errors;
    report.health_errors += c.health_errors;
  }
  auto with_latencies = [](Stats timing, std::vector<double> ms) {
    Stats s = latency_stats(std::move(ms));
    s.wall_s = timing.wall_s;
    s.cpu_s = timing.cpu_s;
    s.server_cpu_s = timing.server_cpu_s;
    return s;
  };
  report.health = with_latencies(report.health, std::move(health_ms));
  report.validate = with_latencies(report.validate, std::move(validate_ms));
  report.verification = verify(requests, results);

  std::error_code ec;
  report.audit_bytes = fs::file_size(server_options.audit_log, ec);
  {
    std::ifstream audit(server_options.audit_log);
    std::string line;
    while (std::getline(audit, line)) ++report.audit_lines;
  }
  spdlog::default_logger()->flush();
  report.server_log_bytes = fs::file_size(dir + "/webhook.log", ec);
  report.filesystem = filesystem_type(dir);
  if (report.audit_lines != static_cast<std::size_t>(o.requests)) {
    report.verification.fail("the audit log has " + std::to_string(report.audit_lines) + " lines for " +
                             std::to_string(o.requests) + " decisions");
  }
  report.breakdown = measure_in_process(*server->snapshot(), requests, o, dir);

  const std::string text = render(report);
  std::cout << text;
  for (const auto& f : report.verification.first_failures) std::cerr << "webhook_load: FAILED: " << f << '\n';
  if (!o.summary.empty()) {
    std::ofstream out(o.summary);
    out << text;
  }
  if (!o.keep) fs::remove_all(dir, ec);
  return report.verification.failures == 0 && report.health_errors == 0 ? 0 : 1;
}
