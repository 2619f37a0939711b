// Watching a burst of 10,000 Kueue Workload updates: the real k8s::Informer (and the bare
// k8s::ListWatch under it) against the fake API server (tests/support/fake_apiserver.hpp)
// over TLS on loopback, with and without faults, next to what polling would cost.
//
// The fake runs in a CHILD PROCESS, forked for each run while this process has no other
// thread, and driven over a socketpair (populate, burst, drop the next watch, compact, dump
// the objects). So this process holds only the client side: its resident set is the
// informer's memory, and the fake's store, its event log (a JSON copy per update) and its
// CPU are not in the figures. The informer thread's CPU is read from
// /proc/self/task/<tid>/schedstat, found by the thread's name (gpubank-inform), as
// webhook_load reads the webhook's threads.
//
// Each run: the fake gets N Workloads (--workloads, about 4 KB of JSON each: labels,
// ownerReferences, managedFields, two podSets, admission, three conditions); the client
// lists (limit=500) and opens its watch; then the fake's producer thread applies
// --updates (10,000) status updates (a condition's status, reason, message and time, and
// the status manager's time), each to a Workload drawn from a seeded generator. Measured:
// the time from the burst's start until the client's cache holds the last update (a
// handler that sees the object with the burst's last resourceVersion: informer handlers
// run after the snapshot with the change is published), the client thread's CPU (and its
// time waiting for a CPU), the peak resident set over the burst (VmHWM reset through
// /proc/self/clear_refs before it), what the cache holds (resident set after the list minus
// before the client started, per object, against the objects' JSON size), ListWatchStats.
// At the end of every run the cache must equal the fake's objects exactly; otherwise the
// program says what differs and exits 1.
//
// Runs, interleaved in each repetition (--repetitions, 5; medians):
//   bare        k8s::ListWatch::run() on a thread of ours: the baseline for the informer's
//               overhead (its snapshot layer: a shared copy of each object, the map, a lock)
//   informer    k8s::Informer, no faults
//   drops       the watch cut (no final chunk, as a dropped connection) every --drop-every
//               (1,000) events: resumed from the last resourceVersion, no relist
//   compaction  the watch cut after half the burst and the fake compacted before the
//               client comes back: 410 Gone, a relist, then the watch again
// and, after the informer run, the polling baseline: full paginated LISTs (limit=500) of
// every Workload through a ListWatch's list() (a fresh one, then steady-state polls on a
// kept-alive connection into the already filled store): what a controller without watches
// pays per poll to see the same final state.
//
// A watch that drops waits the transport's backoff (RetryPolicy: 500 ms and up, jittered
// from a fixed seed) before it resumes, as in production; the wait goes through the
// Transport's injectable sleep, which the benchmark uses to count it and, for the fault
// runs, to arm the next drop or the compaction while the client is away.
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/informer.hpp"
#include "k8s/list_watch.hpp"
#include "k8s/payloads.hpp"  // tests/k8s/payloads.hpp: the Workload shape the k8s tests use
#include "k8s/server_url.hpp"
#include "k8s/token_source.hpp"
#include "k8s/transport.hpp"
#include "support/fake_apiserver.hpp"

// mimalloc, when the build links it as the process allocator (GPUBANK_MIMALLOC): weak, so
// that the benchmark also builds and runs under glibc's malloc.
extern "C" void mi_collect(bool force) __attribute__((weak));

// ---- live heap bytes ---------------------------------------------------------------------
// Every operator new and delete of this program goes through these, which count the bytes
// the allocator handed out (malloc_usable_size): the C++ heap the client holds at any
// moment, exactly, whatever the allocator keeps resident besides. nlohmann::json, the maps
// and strings are all in it; OpenSSL's own buffers (malloc) are not. One relaxed atomic add
// per allocation and per free, in every run alike.
namespace {
std::atomic<std::int64_t> g_heap_bytes{0};

void* counted_alloc(std::size_t size, std::size_t alignment, bool nothrow) {
  if (size == 0) size = 1;
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(size)
                : std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  if (p == nullptr) {
    if (nothrow) return nullptr;
    throw std::bad_alloc();
  }
  g_heap_bytes.fetch_add(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  return p;
}

void counted_free(void* p) noexcept {
  if (p == nullptr) return;
  g_heap_bytes.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n, 0, false); }
void* operator new[](std::size_t n) { return counted_alloc(n, 0, false); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0, true); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0, true); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a), false); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a), false); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a), true);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a), true);
}
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { counted_free(p); }

namespace {

namespace fs = std::filesystem;
namespace k8s = gpubank::k8s;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kCollection = "/apis/kueue.x-k8s.io/v1beta2/workloads";
constexpr const char* kInformerThread = "gpubank-inform";  // src/k8s/informer.cpp names it
constexpr const char* kBareThread = "bench-listwatch";

// ---- options -----------------------------------------------------------------------------

struct Options {
  int workloads = 5'000;
  int updates = 10'000;
  int repetitions = 5;
  int warmup = 1;  // unreported runs of the informer scenario first (page faults, TLS setup)
  int drop_every = 1'000;
  int page_size = 500;
  int steady_polls = 3;
  std::uint64_t seed = 29;
  std::string summary;
};

const char* const kUsage =
    "usage: watch_bench [--workloads=5000] [--updates=10000] [--repetitions=5] [--warmup=1]\n"
    "                   [--drop-every=1000] [--page-size=500] [--steady-polls=3] [--seed=29] [--summary=FILE]\n";

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
    auto number = [&](int& out, int min) {
      out = std::atoi(value.c_str());
      return out >= min;
    };
    bool ok = true;
    if (key == "--workloads") ok = number(o.workloads, 1);
    else if (key == "--updates") ok = number(o.updates, 2);
    else if (key == "--repetitions") ok = number(o.repetitions, 1);
    else if (key == "--warmup") ok = number(o.warmup, 0);
    else if (key == "--drop-every") ok = number(o.drop_every, 1);
    else if (key == "--page-size") ok = number(o.page_size, 1);
    else if (key == "--steady-polls") ok = number(o.steady_polls, 1);
    else if (key == "--seed") o.seed = std::strtoull(value.c_str(), nullptr, 10);
    else if (key == "--summary") o.summary = value;
    else ok = false;
    if (!ok) {
      std::cerr << "watch_bench: bad argument " << arg << "\n" << kUsage;
      return false;
    }
  }
  if (o.drop_every >= o.updates) {
    std::cerr << "watch_bench: --drop-every must be below --updates\n";
    return false;
  }
  return true;
}

// ---- the Workloads -----------------------------------------------------------------------

std::string timestamp(int seconds_after) {
  const int h = seconds_after / 3600, m = seconds_after / 60 % 60, s = seconds_after % 60;
  char buf[32];
  std::snprintf(buf, sizeof buf, "2026-01-0%dT%02d:%02d:%02dZ", 1 + h / 24 % 9, h % 24, m, s);
  return buf;
}

std::string workload_name(int i) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "job-llm-pretrain-%05d-7f9c4", i);
  return buf;
}

std::string workload_namespace(int i) { return "team-" + std::to_string(i % 40); }

// Workload i as Kueue writes it for a batch/v1 Job of 1 launcher and 8 GPU workers, admitted:
// the shape of tests/k8s/payloads.hpp's workload_json (same fields, same managers) with the
// rest of what a real one carries, about 4 KB of JSON once the fake adds its metadata.
Json workload(int i) {
  const std::string ns = workload_namespace(i);
  const std::string queue = ns + "-queue";
  Json w = gpubank::k8s::testing::workload_json(ns, workload_name(i));
  auto& meta = w["metadata"];
  meta["labels"]["kueue.x-k8s.io/queue-name"] = queue;
  meta["labels"]["app.kubernetes.io/part-of"] = "llm-pretrain";
  meta["annotations"] = {{"kueue.x-k8s.io/job-owner", "batch/v1 Job " + ns + "/llm-pretrain-" + std::to_string(i)},
                         {"gpubank.dev/business-group", ns}};
  meta["finalizers"] = {"kueue.x-k8s.io/resource-in-use"};
  meta["ownerReferences"][0]["name"] = "llm-pretrain-" + std::to_string(i);
  meta["managedFields"][0]["fieldsV1"]["f:metadata"] = {
      {"f:labels", {{".", Json::object()}, {"f:kueue.x-k8s.io/job-uid", Json::object()},
                    {"f:kueue.x-k8s.io/queue-name", Json::object()}}},
      {"f:ownerReferences", {{".", Json::object()},
                             {"k:{\"uid\":\"0b5c1e8f-3a52-4a57-9a8e-2f4b1d9c7e01\"}", Json::object()}}}};
  meta["managedFields"][1]["fieldsV1"]["f:status"] = {
      {"f:admission", {{"f:clusterQueue", Json::object()}, {"f:podSetAssignments", Json::object()}}},
      {"f:conditions", {{"k:{\"type\":\"Admitted\"}", Json::object()}, {"k:{\"type\":\"PodsReady\"}", Json::object()},
                        {"k:{\"type\":\"QuotaReserved\"}", Json::object()}}},
      {"f:resourceRequests", Json::object()}};

  auto& spec = w["spec"];
  spec["queueName"] = queue;
  spec["priorityClassName"] = "training-high";
  spec["priorityClassSource"] = "scheduling.k8s.io/priorityclass";
  spec["priority"] = 1000;
  const Json tolerations = Json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  auto container = [&](const std::string& name, const std::string& gpus, const std::string& cpu, const std::string& mem) {
    Json c = {{"name", name},
              {"image", "registry.example/llm/pretrain:2.3.1"},
              {"command", {"torchrun"}},
              {"args", {"--nnodes=8", "--nproc-per-node=8", "train.py", "--config=/etc/train/llama-70b.yaml"}},
              {"resources", {{"requests", {{"cpu", cpu}, {"memory", mem}}}, {"limits", {{"memory", mem}}}}}};
    if (!gpus.empty()) {
      c["resources"]["requests"]["nvidia.com/gpu"] = gpus;
      c["resources"]["limits"]["nvidia.com/gpu"] = gpus;
    }
    return c;
  };
  auto pod_set = [&](const std::string& name, int count, const Json& c) {
    return Json{{"name", name},
                {"count", count},
                {"template",
                 {{"metadata", {{"labels", {{"training.example/role", name}}}}},
                  {"spec",
                   {{"restartPolicy", "Never"},
                    {"nodeSelector", {{"gpubank.dev/pool", "h100-rdma-training"}}},
                    {"tolerations", tolerations},
                    {"containers", {c}}}}}}};
  };
  spec["podSets"] = {pod_set("launcher", 1, container("launcher", "", "4", "16Gi")),
                     pod_set("worker", 8, container("trainer", "8", "96", "1536Gi"))};

  auto& status = w["status"];
  status["admission"] = {
      {"clusterQueue", ns + "-cq"},
      {"podSetAssignments",
       {{{"name", "launcher"}, {"count", 1}, {"flavors", {{"cpu", "default"}, {"memory", "default"}}},
         {"resourceUsage", {{"cpu", "4"}, {"memory", "16Gi"}}}},
        {{"name", "worker"}, {"count", 8},
         {"flavors", {{"cpu", "default"}, {"memory", "default"}, {"nvidia.com/gpu", "h100"}}},
         {"resourceUsage", {{"cpu", "768"}, {"memory", "12Ti"}, {"nvidia.com/gpu", "64"}}}}}}};
  status["resourceRequests"] = {{{"name", "launcher"}, {"resources", {{"cpu", "4"}, {"memory", "16Gi"}}}},
                                {{"name", "worker"}, {"resources", {{"cpu", "96"}, {"memory", "1536Gi"}, {"nvidia.com/gpu", "8"}}}}};
  status["conditions"].push_back({{"type", "PodsReady"},
                                  {"status", "True"},
                                  {"reason", "PodsReady"},
                                  {"message", "All pods reached readiness and the workload is running"},
                                  {"lastTransitionTime", "2026-01-01T00:00:30Z"},
                                  {"observedGeneration", 1}});
  return w;
}

// Update number `step` of the burst, to workload `w` (a copy of the stored one): the
// PodsReady condition goes to `ready`, with its reason, message and time, and the status
// manager's managedFields time moves with it. Nothing in spec: the generation stays.
void apply_update(Json& w, int step, bool ready, int pods_ready) {
  const std::string when = timestamp(60 + step);
  for (auto& c : w["status"]["conditions"]) {
    if (c["type"] != "PodsReady") continue;
    c["status"] = ready ? "True" : "False";
    c["reason"] = ready ? "PodsReady" : "WaitForPodsReady";
    c["message"] = ready ? "All pods reached readiness and the workload is running"
                         : "Not all pods are ready or succeeded: " + std::to_string(pods_ready) + " of 9 ready";
    c["lastTransitionTime"] = when;
  }
  w["metadata"]["managedFields"][1]["time"] = when;
}

// ---- socket helpers ----------------------------------------------------------------------

bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool read_exact(int fd, char* out, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, out + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::optional<std::string> read_line(int fd) {
  std::string line;
  char c = 0;
  while (true) {
    if (!read_exact(fd, &c, 1)) return std::nullopt;
    if (c == '\n') return line;
    line += c;
  }
}

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// ---- the fake, in a child process --------------------------------------------------------

// The child's command loop: one command per line, each answered with "<bytes>\n<bytes of
// answer>". The burst runs on a thread of its own, so that the parent's fault commands
// (drop, compact) are served while it runs.
[[noreturn]] void serve_fake(int fd, std::uint64_t seed) {
  int code = 0;
  try {
    gpubank::testing::FakeApiServer fake({});
    std::thread producer;
    auto answer = [&](const std::string& text) {
      if (!write_all(fd, std::to_string(text.size()) + "\n" + text)) throw std::runtime_error("parent went away");
    };
    int populated = 0;
    while (auto line = read_line(fd)) {
      std::istringstream in(*line);
      std::string command;
      in >> command;
      if (command == "hello") {
        answer(fake.url() + "\n" + fake.ca_pem());
      } else if (command == "populate") {
        in >> populated;
        for (int i = 0; i < populated; ++i) fake.put("workloads", workload(i));
        answer(std::to_string(fake.resource_version()));
      } else if (command == "burst") {
        int updates = 0;
        in >> updates;
        // The stored objects, updated in place here and put whole (as a status PUT would).
        std::vector<Json> current = fake.objects("workloads");
        producer = std::thread([&fake, current = std::move(current), updates, seed]() mutable {
          std::mt19937_64 random(seed);
          std::uniform_int_distribution<std::size_t> pick(0, current.size() - 1);
          std::uniform_int_distribution<int> ready_pods(0, 8);
          for (int step = 0; step < updates; ++step) {
            Json& w = current[pick(random)];
            const int pods = ready_pods(random);
            apply_update(w, step, pods == 8, pods);
            w = fake.put("workloads", w);
          }
        });
        answer("started");
      } else if (command == "wait_burst") {
        if (producer.joinable()) producer.join();
        answer(std::to_string(fake.resource_version()));
      } else if (command == "wait_watch") {
        answer(fake.wait_for_open_watches(1) ? "open" : "timeout");
      } else if (command == "drop") {
        int events = 0;
        in >> events;
        fake.drop_next_watch_after(events);
        answer("ok");
      } else if (command == "compact_after") {
        // Compacts once the burst has gone past `rv`, so that a client that saw up to rv-1
        // is certain to be behind the compaction.
        std::uint64_t rv = 0;
        in >> rv;
        while (fake.resource_version() < rv) std::this_thread::sleep_for(std::chrono::microseconds(100));
        fake.compact();
        answer(std::to_string(fake.resource_version()));
      } else if (command == "objects") {
        answer(Json(fake.objects("workloads")).dump());
      } else if (command == "cpu") {
        answer(std::to_string(process_cpu_seconds()));
      } else if (command == "quit") {
        if (producer.joinable()) producer.join();
        answer("bye");
        break;
      } else {
        answer("unknown command " + command);
      }
    }
    if (producer.joinable()) producer.join();
  } catch (const std::exception& e) {
    std::cerr << "watch_bench: fake API server process: " << e.what() << '\n';
    code = 1;
  }
  std::cerr.flush();
  _exit(code);
}

class FakeProcess {
 public:
  // Forks: call it while this process has no other thread.
  explicit FakeProcess(std::uint64_t seed) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw std::runtime_error("socketpair failed");
    std::cout.flush();
    std::cerr.flush();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      // Only its socket: the pipe to the benchmark's parent must see EOF when the client ends.
      if (sv[1] != 3) {
        ::dup2(sv[1], 3);
      }
      ::close_range(4, ~0U, 0);
      serve_fake(3, seed);
    }
    ::close(sv[1]);
    fd_ = sv[0];
    const std::string hello = call("hello");
    const auto nl = hello.find('\n');
    url_ = hello.substr(0, nl);
    ca_pem_ = hello.substr(nl + 1);
  }
  ~FakeProcess() {
    try {
      call("quit");
    } catch (const std::exception&) {
    }
    ::close(fd_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  FakeProcess(const FakeProcess&) = delete;
  FakeProcess& operator=(const FakeProcess&) = delete;

  // One command and its answer; thread-safe (the informer's thread sends fault commands).
  std::string call(const std::string& command) {
    std::lock_guard lock(m_);
    if (!write_all(fd_, command + "\n")) throw std::runtime_error("fake API server process: cannot send " + command);
    const auto header = read_line(fd_);
    if (!header) throw std::runtime_error("fake API server process: no answer to " + command);
    std::string body(std::stoull(*header), '\0');
    if (!read_exact(fd_, body.data(), body.size())) throw std::runtime_error("fake API server process: short answer");
    return body;
  }
  std::uint64_t number(const std::string& command) { return std::stoull(call(command)); }

  [[nodiscard]] k8s::ClientConfig config() const {
    k8s::ClientConfig c;
    auto url = k8s::parse_server_url(url_, /*allow_loopback_http=*/true);
    if (!url.ok()) throw std::runtime_error("fake API server URL: " + url.error());
    c.server = *url;
    c.ca_pem = ca_pem_;
    c.token = std::make_shared<k8s::StaticTokenSource>("fake-token");
    c.namespace_name = "default";
    return c;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::mutex m_;
  std::string url_;
  std::string ca_pem_;
};

// ---- this process: threads and memory ----------------------------------------------------

pid_t this_thread_id() { return static_cast<pid_t>(::gettid()); }

// A thread of this process by name (/proc/self/task/*/comm).
std::optional<pid_t> find_thread(const std::string& name) {
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string n;
    std::getline(comm, n);
    if (n == name) return static_cast<pid_t>(std::stol(task.path().filename().string()));
  }
  return std::nullopt;
}

// A thread's time on a CPU and waiting for one (run queue), in seconds, from
// /proc/self/task/<tid>/schedstat (nanoseconds); where the kernel has no schedstat, the CPU
// time from .../stat (clock ticks) and no wait.
struct ThreadTimes {
  double cpu_s = 0;
  double wait_s = 0;
};
ThreadTimes thread_times(pid_t tid) {
  const fs::path dir = fs::path("/proc/self/task") / std::to_string(tid);
  ThreadTimes t;
  std::ifstream schedstat(dir / "schedstat");
  std::uint64_t run_ns = 0, wait_ns = 0;
  if (schedstat >> run_ns >> wait_ns) {
    t.cpu_s = static_cast<double>(run_ns) / 1e9;
    t.wait_s = static_cast<double>(wait_ns) / 1e9;
    return t;
  }
  std::ifstream stat(dir / "stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos) return t;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  t.cpu_s = (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return t;
}

// VmRSS or VmHWM of this process, in MiB.
double status_mib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  }
  return 0;
}

double heap_mib() { return static_cast<double>(g_heap_bytes.load(std::memory_order_relaxed)) / (1024.0 * 1024.0); }

// Resets VmHWM to the current resident set (Linux 4.0+). False where it is not allowed.
bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

// Gives the allocator's freed memory back to the system, so that the next run starts from
// a resident set without the last run's leftovers.
void collect_freed_memory() {
  if (&mi_collect != nullptr) mi_collect(true);
}

// ---- one run -----------------------------------------------------------------------------

enum class Kind { Bare, Informer, Drops, Compaction };

struct KindInfo {
  Kind kind;
  const char* name;
  const char* description;
};

constexpr KindInfo kKinds[] = {
    {Kind::Bare, "bare", "(a) baseline: bare k8s::ListWatch::run(), no faults"},
    {Kind::Informer, "informer", "(b) k8s::Informer, no faults"},
    {Kind::Drops, "drops", "(c) Informer, watch dropped every N events"},
    {Kind::Compaction, "compaction", "(d) Informer, compaction mid-burst: 410 Gone, relist"},
};

struct PollResult {
  double wall_ms = 0;
  double cpu_ms = 0;
};

struct RunResult {
  Kind kind = Kind::Bare;
  double reflect_s = 0;       // burst start -> the cache holds the last update
  double cpu_s = 0;           // the client thread's CPU over that time
  double wait_s = 0;          // ... and its time waiting for a CPU
  double process_cpu_s = 0;   // this whole process (client thread + the main thread waiting)
  double fake_cpu_s = 0;      // the fake's process over the same time
  double backoff_s = 0;       // waited in the transport's backoff
  int backoffs = 0;
  double rss_before_mib = 0;  // before the client started
  double rss_synced_mib = 0;  // after the list, the watch open
  double sync_peak_mib = 0;   // VmHWM over the list
  double burst_peak_mib = 0;  // VmHWM over the burst
  double rss_after_mib = 0;   // after the burst
  double heap_before_mib = 0; // live operator-new bytes, at the same three points
  double heap_synced_mib = 0;
  double heap_after_mib = 0;
  bool peak_reset = true;
  k8s::ListWatchStats stats;
  std::size_t objects = 0;
  double object_bytes = 0;    // mean JSON size of the fake's objects at the end
  std::vector<std::string> failures;
  std::optional<PollResult> cold_poll;
  std::vector<PollResult> steady_polls;
};

// The transport's sleep in the client: counts the backoff, arms the run's next fault while
// the client is away (it runs on the client's thread, right after a watch dropped), and
// waits for real unless the run is over.
class FaultDriver {
 public:
  FaultDriver(FakeProcess& fake, Kind kind, int drops_planned, std::uint64_t compact_after_rv, int drop_every)
      : fake_(fake), kind_(kind), drops_planned_(drops_planned), compact_after_rv_(compact_after_rv),
        drop_every_(drop_every) {}

  // Before the client starts: the first watch after the list carries the first cut.
  void arm_first() {
    if (kind_ == Kind::Drops) {
      fake_.call("drop " + std::to_string(drop_every_));
      drops_armed_ = 1;
    } else if (kind_ == Kind::Compaction) {
      fake_.call("drop " + std::to_string(drop_every_));  // here: half the burst
    }
  }

  void sleep(std::chrono::milliseconds d) {
    if (kind_ == Kind::Drops && drops_armed_ < drops_planned_) {
      fake_.call("drop " + std::to_string(drop_every_));
      ++drops_armed_;
    } else if (kind_ == Kind::Compaction && !compacted_) {
      fake_.call("compact_after " + std::to_string(compact_after_rv_));
      compacted_ = true;
    }
    const auto t0 = Clock::now();
    std::unique_lock lock(m_);
    cv_.wait_for(lock, d, [&] { return stopping_; });
    backoff_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
    ++backoffs_;
  }

  void stop() {
    {
      std::lock_guard lock(m_);
      stopping_ = true;
    }
    cv_.notify_all();
  }
  double backoff_s() {
    std::lock_guard lock(m_);
    return backoff_s_;
  }
  int backoffs() {
    std::lock_guard lock(m_);
    return backoffs_;
  }

 private:
  FakeProcess& fake_;
  Kind kind_;
  int drops_planned_;
  std::uint64_t compact_after_rv_;
  int drop_every_;
  int drops_armed_ = 0;  // the client's thread only
  bool compacted_ = false;
  std::mutex m_;
  std::condition_variable cv_;
  bool stopping_ = false;
  double backoff_s_ = 0;
  int backoffs_ = 0;
};

// Set by the client's handler when it sees the object carrying the burst's last
// resourceVersion; the main thread waits on it.
class LastUpdate {
 public:
  explicit LastUpdate(std::string rv) : rv_(std::move(rv)) {}
  void see(const Json* after) {
    if (after == nullptr) return;
    const auto meta = after->find("metadata");
    if (meta == after->end()) return;
    const auto rv = meta->find("resourceVersion");
    if (rv == meta->end() || !rv->is_string() || rv->get_ref<const std::string&>() != rv_) return;
    {
      std::lock_guard lock(m_);
      seen_ = true;
    }
    cv_.notify_all();
  }
  bool wait(std::chrono::seconds timeout) {
    std::unique_lock lock(m_);
    return cv_.wait_for(lock, timeout, [&] { return seen_; });
  }
  [[nodiscard]] const std::string& rv() const { return rv_; }

 private:
  std::string rv_;
  std::mutex m_;
  std::condition_variable cv_;
  bool seen_ = false;
};

// Compares a client's cache (key -> object) with the fake's objects; records what differs.
template <class Get>
void check_equal(const std::vector<Json>& expected, std::size_t cached_size, const Get& cached, const std::string& who,
                 std::vector<std::string>& failures) {
  if (cached_size != expected.size()) {
    failures.push_back(who + ": " + std::to_string(cached_size) + " objects cached, the fake has " +
                       std::to_string(expected.size()));
  }
  int reported = 0;
  for (const auto& o : expected) {
    const std::string key = k8s::object_key(o);
    const Json* mine = cached(key);
    if (mine == nullptr || *mine != o) {
      if (reported++ < 3) {
        failures.push_back(who + ": " + key + (mine == nullptr ? " missing" : " differs: cached resourceVersion " +
                                                                             mine->at("metadata").value("resourceVersion", "?") +
                                                                             ", the fake's " +
                                                                             o["metadata"].value("resourceVersion", "?")));
      }
    }
  }
  if (reported > 3) failures.push_back(who + ": " + std::to_string(reported) + " objects differ in all");
}

PollResult poll_once(k8s::ListWatch& poller, std::vector<std::string>& failures) {
  const pid_t me = this_thread_id();
  const auto t0 = Clock::now();
  const double c0 = thread_times(me).cpu_s;
  auto res = poller.list();
  PollResult p;
  p.cpu_ms = (thread_times(me).cpu_s - c0) * 1e3;
  p.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!res.ok()) failures.push_back("poll: " + res.error().describe());
  return p;
}

RunResult run_once(const Options& o, Kind kind, bool with_polls) {
  RunResult r;
  r.kind = kind;
  FakeProcess fake(o.seed);  // forked here: no other thread is running
  const std::uint64_t base_rv = fake.number("populate " + std::to_string(o.workloads));
  const std::uint64_t last_rv = base_rv + static_cast<std::uint64_t>(o.updates);
  const int half = o.updates / 2;
  const int drops_planned = (o.updates - 1) / o.drop_every;  // the last cut comes before the last event
  FaultDriver faults(fake, kind, drops_planned, base_rv + static_cast<std::uint64_t>(half) + 1,
                     kind == Kind::Compaction ? half : o.drop_every);
  LastUpdate last(std::to_string(last_rv));

  collect_freed_memory();
  r.heap_before_mib = heap_mib();
  r.rss_before_mib = status_mib("VmRSS");
  r.peak_reset = reset_peak_rss();

  k8s::TransportOptions transport;
  transport.sleep = [&faults](std::chrono::milliseconds d) { faults.sleep(d); };
  k8s::ListWatchOptions lw_options;
  lw_options.page_size = o.page_size;

  // The client: an Informer, or a bare ListWatch on a thread of ours.
  std::unique_ptr<k8s::Informer> informer;
  std::unique_ptr<k8s::Transport> bare_transport;
  std::unique_ptr<k8s::ListWatch> bare;
  std::thread bare_thread;
  std::atomic<pid_t> bare_tid{0};
  std::optional<k8s::ApiResult<std::monostate>> bare_result;
  std::mutex synced_m;
  std::condition_variable synced_cv;
  bool bare_synced = false;

  faults.arm_first();
  if (kind == Kind::Bare) {
    auto t = k8s::Transport::create(fake.config(), transport);
    if (!t.ok()) throw std::runtime_error("transport: " + t.error());
    bare_transport = std::move(t.value());
    lw_options.on_list_end = [&] {
      {
        std::lock_guard lock(synced_m);
        bare_synced = true;
      }
      synced_cv.notify_all();
    };
    bare = std::make_unique<k8s::ListWatch>(
        *bare_transport, kCollection, [&last](k8s::EventType, const Json*, const Json* after) { last.see(after); },
        lw_options);
    bare_thread = std::thread([&] {
      pthread_setname_np(pthread_self(), kBareThread);
      bare_tid = this_thread_id();
      bare_result.emplace(bare->run());
      synced_cv.notify_all();
    });
    std::unique_lock lock(synced_m);
    if (!synced_cv.wait_for(lock, std::chrono::seconds(120), [&] { return bare_synced; })) {
      throw std::runtime_error("bare ListWatch: no list within 120 s");
    }
  } else {
    k8s::InformerOptions options;
    options.list_watch = lw_options;
    options.transport = transport;
    auto created = k8s::Informer::create(fake.config(), kCollection, options);
    if (!created.ok()) throw std::runtime_error("informer: " + created.error());
    informer = std::move(created.value());
    informer->add_handler([&last](k8s::EventType, const k8s::ObjectPtr&, const k8s::ObjectPtr& after) { last.see(after.get()); });
    informer->start();
    auto synced = informer->wait_for_sync(std::chrono::seconds(120));
    if (!synced.ok()) throw std::runtime_error("informer: " + synced.error().describe());
  }
  if (fake.call("wait_watch") != "open") throw std::runtime_error("the client's watch did not open");
  r.heap_synced_mib = heap_mib();
  r.rss_synced_mib = status_mib("VmRSS");
  r.sync_peak_mib = status_mib("VmHWM");

  // The burst.
  const std::optional<pid_t> tid = kind == Kind::Bare ? std::optional<pid_t>(bare_tid.load()) : find_thread(kInformerThread);
  if (!tid) throw std::runtime_error(std::string("no thread named ") + kInformerThread);
  r.peak_reset = reset_peak_rss() && r.peak_reset;
  const double fake_cpu0 = std::stod(fake.call("cpu"));
  const ThreadTimes t0 = thread_times(*tid);
  const double p0 = process_cpu_seconds();
  const auto w0 = Clock::now();
  fake.call("burst " + std::to_string(o.updates));
  const bool seen = last.wait(std::chrono::seconds(300));
  r.reflect_s = std::chrono::duration<double>(Clock::now() - w0).count();
  const ThreadTimes t1 = thread_times(*tid);
  r.process_cpu_s = process_cpu_seconds() - p0;
  r.cpu_s = t1.cpu_s - t0.cpu_s;
  r.wait_s = t1.wait_s - t0.wait_s;
  // Memory once the client is back to watching: in (d) the last update can arrive while
  // the relist is still delivering its events, with the list's items alive.
  const std::uint64_t final_rv = fake.number("wait_burst");
  if (fake.call("wait_watch") != "open") r.failures.push_back("the client's watch did not open again after the burst");
  r.burst_peak_mib = status_mib("VmHWM");
  r.rss_after_mib = status_mib("VmRSS");
  r.heap_after_mib = heap_mib();
  r.fake_cpu_s = std::stod(fake.call("cpu")) - fake_cpu0;
  if (!seen) r.failures.push_back("the last update (resourceVersion " + last.rv() + ") never reached the cache");
  if (final_rv != last_rv) {
    r.failures.push_back("the fake ended at resourceVersion " + std::to_string(final_rv) + ", expected " + last.rv());
  }

  // Correctness: the cache is the fake's state, exactly.
  const Json dumped = Json::parse(fake.call("objects"));
  const std::vector<Json> expected = dumped.get<std::vector<Json>>();
  r.objects = expected.size();
  double bytes = 0;
  for (const auto& e : expected) bytes += static_cast<double>(e.dump().size());
  r.object_bytes = expected.empty() ? 0 : bytes / static_cast<double>(expected.size());
  if (expected.size() != static_cast<std::size_t>(o.workloads)) r.failures.push_back("the fake lost objects");

  faults.stop();
  if (kind == Kind::Bare) {
    bare_transport->cancel();
    bare_thread.join();
    if (!bare_result || !bare_result->ok()) {
      r.failures.push_back("bare ListWatch: " + (bare_result ? bare_result->error().describe() : std::string("no result")));
    }
    r.stats = bare->stats();
    const auto& objects = bare->store().objects();
    check_equal(expected, objects.size(),
                [&](const std::string& key) -> const Json* {
                  const auto it = objects.find(key);
                  return it == objects.end() ? nullptr : &it->second;
                },
                "bare ListWatch", r.failures);
    if (bare->store().resource_version() != last.rv()) {
      r.failures.push_back("bare ListWatch: resourceVersion " + bare->store().resource_version() + ", expected " + last.rv());
    }
  } else {
    const k8s::SnapshotPtr snapshot = informer->snapshot();
    check_equal(expected, snapshot->objects.size(),
                [&](const std::string& key) -> const Json* {
                  const auto it = snapshot->objects.find(key);
                  return it == snapshot->objects.end() ? nullptr : it->second.get();
                },
                "informer snapshot", r.failures);
    if (snapshot->resource_version != last.rv()) {
      r.failures.push_back("informer snapshot: resourceVersion " + snapshot->resource_version + ", expected " + last.rv());
    }
    informer->stop();
    if (const auto error = informer->error()) r.failures.push_back("informer died: " + error->describe());
    r.stats = informer->stats();
  }
  r.backoff_s = faults.backoff_s();
  r.backoffs = faults.backoffs();

  // What each run must have done: no relist without a 410, a resume per drop.
  const auto expect = [&](const char* what, std::size_t got, std::size_t want) {
    if (got != want) {
      r.failures.push_back(std::string(what) + ": " + std::to_string(got) + ", expected " + std::to_string(want));
    }
  };
  switch (kind) {
    case Kind::Bare:
    case Kind::Informer:
      expect("lists", r.stats.lists, 1);
      expect("410s", r.stats.gone, 0);
      expect("resumes", r.stats.resumes, 0);
      break;
    case Kind::Drops:
      expect("lists", r.stats.lists, 1);
      expect("410s", r.stats.gone, 0);
      expect("resumes", r.stats.resumes, static_cast<std::size_t>(drops_planned));
      break;
    case Kind::Compaction:
      expect("lists", r.stats.lists, 2);
      expect("410s", r.stats.gone, 1);
      expect("resumes", r.stats.resumes, 1);
      break;
  }

  // The polling baseline, against the same final state, with the informer stopped.
  if (with_polls) {
    auto t = k8s::Transport::create(fake.config());
    if (!t.ok()) throw std::runtime_error("transport: " + t.error());
    k8s::ListWatchOptions poll_options;
    poll_options.page_size = o.page_size;
    k8s::ListWatch poller(*t.value(), kCollection, {}, poll_options);
    r.cold_poll = poll_once(poller, r.failures);
    for (int i = 0; i < o.steady_polls; ++i) r.steady_polls.push_back(poll_once(poller, r.failures));
    const auto& objects = poller.store().objects();
    check_equal(expected, objects.size(),
                [&](const std::string& key) -> const Json* {
                  const auto it = objects.find(key);
                  return it == objects.end() ? nullptr : &it->second;
                },
                "poll", r.failures);
  }
  return r;
}

// ---- each run in a process of its own ------------------------------------------------------

Json to_json(const RunResult& r) {
  auto poll = [](const PollResult& p) { return Json{{"wall_ms", p.wall_ms}, {"cpu_ms", p.cpu_ms}}; };
  Json j = {{"kind", static_cast<int>(r.kind)}, {"reflect_s", r.reflect_s}, {"cpu_s", r.cpu_s}, {"wait_s", r.wait_s},
            {"process_cpu_s", r.process_cpu_s}, {"fake_cpu_s", r.fake_cpu_s}, {"backoff_s", r.backoff_s},
            {"backoffs", r.backoffs}, {"rss_before_mib", r.rss_before_mib}, {"rss_synced_mib", r.rss_synced_mib},
            {"sync_peak_mib", r.sync_peak_mib}, {"burst_peak_mib", r.burst_peak_mib}, {"rss_after_mib", r.rss_after_mib},
            {"heap_before_mib", r.heap_before_mib}, {"heap_synced_mib", r.heap_synced_mib},
            {"heap_after_mib", r.heap_after_mib}, {"peak_reset", r.peak_reset},
            {"stats", {r.stats.lists, r.stats.pages, r.stats.watches, r.stats.resumes, r.stats.gone, r.stats.bookmarks}},
            {"objects", r.objects}, {"object_bytes", r.object_bytes}, {"failures", r.failures},
            {"steady_polls", Json::array()}};
  if (r.cold_poll) j["cold_poll"] = poll(*r.cold_poll);
  for (const auto& p : r.steady_polls) j["steady_polls"].push_back(poll(p));
  return j;
}

RunResult from_json(const Json& j) {
  auto poll = [](const Json& p) { return PollResult{p.at("wall_ms").get<double>(), p.at("cpu_ms").get<double>()}; };
  RunResult r;
  r.kind = static_cast<Kind>(j.at("kind").get<int>());
  for (auto [field, key] : {std::pair{&r.reflect_s, "reflect_s"}, {&r.cpu_s, "cpu_s"}, {&r.wait_s, "wait_s"},
                            {&r.process_cpu_s, "process_cpu_s"}, {&r.fake_cpu_s, "fake_cpu_s"}, {&r.backoff_s, "backoff_s"},
                            {&r.rss_before_mib, "rss_before_mib"}, {&r.rss_synced_mib, "rss_synced_mib"},
                            {&r.sync_peak_mib, "sync_peak_mib"}, {&r.burst_peak_mib, "burst_peak_mib"},
                            {&r.rss_after_mib, "rss_after_mib"}, {&r.heap_before_mib, "heap_before_mib"},
                            {&r.heap_synced_mib, "heap_synced_mib"}, {&r.heap_after_mib, "heap_after_mib"},
                            {&r.object_bytes, "object_bytes"}}) {
    *field = j.at(key).get<double>();
  }
  r.backoffs = j.at("backoffs").get<int>();
  r.peak_reset = j.at("peak_reset").get<bool>();
  const auto& st = j.at("stats");
  r.stats = {st.at(0).get<std::size_t>(), st.at(1).get<std::size_t>(), st.at(2).get<std::size_t>(),
             st.at(3).get<std::size_t>(), st.at(4).get<std::size_t>(), st.at(5).get<std::size_t>()};
  r.objects = j.at("objects").get<std::size_t>();
  r.failures = j.at("failures").get<std::vector<std::string>>();
  if (j.contains("cold_poll")) r.cold_poll = poll(j.at("cold_poll"));
  for (const auto& p : j.at("steady_polls")) r.steady_polls.push_back(poll(p));
  return r;
}

// run_once in a fresh child process (which forks the fake in turn), so that every run's
// resident set starts from the same small process, whatever earlier runs left to the
// allocator. The result comes back as JSON on a pipe.
RunResult run_isolated(const Options& o, Kind kind, bool with_polls) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(fds[0]);
    Json out;
    try {
      out = to_json(run_once(o, kind, with_polls));
    } catch (const std::exception& e) {
      out = {{"error", e.what()}};
    }
    const bool written = write_all(fds[1], out.dump());
    ::close(fds[1]);
    std::cerr.flush();
    _exit(written ? 0 : 1);
  }
  ::close(fds[1]);
  std::string text;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (text.empty()) throw std::runtime_error("a run's process ended without a result (status " + std::to_string(status) + ")");
  const Json j = Json::parse(text);
  if (j.contains("error")) throw std::runtime_error(j.at("error").get<std::string>());
  return from_json(j);
}

// ---- the report --------------------------------------------------------------------------

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string with_commas(long long v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string render(const Options& o, const std::vector<RunResult>& runs, const std::string& load_before,
                   const std::string& load_after) {
  std::map<Kind, std::vector<const RunResult*>> by_kind;
  for (const auto& r : runs) by_kind[r.kind].push_back(&r);
  auto med = [&](Kind k, const std::function<double(const RunResult&)>& f) {
    std::vector<double> v;
    for (const auto* r : by_kind[k]) v.push_back(f(*r));
    return median(v);
  };
  auto each = [&](Kind k, const std::function<double(const RunResult&)>& f, int decimals) {
    std::string s;
    for (const auto* r : by_kind[k]) s += (s.empty() ? "" : ", ") + fixed(f(*r), decimals);
    return s;
  };
  const double n = o.workloads;
  const double updates = o.updates;
  const double object_bytes = med(Kind::Informer, [](const RunResult& r) { return r.object_bytes; });
  const double list_mib = n * object_bytes / (1024.0 * 1024.0);

  std::ostringstream s;
  s << "Fake API server (tests/support/fake_apiserver.hpp) in a child process, HTTPS on 127.0.0.1, so this "
       "process's resident set and CPU are the client's alone. "
    << with_commas(o.workloads) << " Kueue Workloads (tests/k8s/payloads.hpp's shape with two podSets, admission, "
    << "three conditions and managedFields: " << fixed(object_bytes, 0) << " bytes of JSON each on average, "
    << fixed(list_mib, 1) << " MiB in all), then a burst of " << with_commas(o.updates)
    << " status updates (a condition's status, reason, message and time) as fast as the fake takes them, each to a "
       "Workload drawn from a generator seeded with "
    << o.seed << ". Lists use limit=" << o.page_size << " (" << (o.workloads + o.page_size - 1) / o.page_size
    << " pages). " << o.repetitions << " repetitions, the runs of each repetition in the order of the table, after "
    << o.warmup << " unreported warm-up run(s); figures are medians, with each run's where they vary. Load average "
       "(1, 5, 15 min) before: "
    << load_before << "; after: " << load_after << ".\n\n";

  s << "| Run | Last update in the cache after (s), median | each run (s) | Updates/s | Client thread CPU (s), median | "
       "each run (s) | CPU per update (us) | Waiting for a CPU (s) | Backoff waited (s) | Lists | Watches | Resumes | "
       "410s | Peak RSS growth over the burst (MiB) |\n";
  s << "|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& ki : kKinds) {
    if (by_kind[ki.kind].empty()) continue;
    const Kind k = ki.kind;
    const auto* first = by_kind[k].front();
    std::string description = ki.description;
    if (k == Kind::Drops) description = "(c) Informer, watch dropped every " + with_commas(o.drop_every) + " events";
    const double reflect = med(k, [](const RunResult& r) { return r.reflect_s; });
    const double cpu = med(k, [](const RunResult& r) { return r.cpu_s; });
    s << "| " << description << " | " << fixed(reflect, 2) << " | " << each(k, [](const RunResult& r) { return r.reflect_s; }, 2)
      << " | " << fixed(updates / reflect, 0) << " | " << fixed(cpu, 3) << " | "
      << each(k, [](const RunResult& r) { return r.cpu_s; }, 2) << " | " << fixed(cpu / updates * 1e6, 1) << " | "
      << fixed(med(k, [](const RunResult& r) { return r.wait_s; }), 2) << " | "
      << fixed(med(k, [](const RunResult& r) { return r.backoff_s; }), 2) << " | " << first->stats.lists << " | "
      << first->stats.watches << " | " << first->stats.resumes << " | " << first->stats.gone << " | "
      << fixed(med(k, [](const RunResult& r) { return r.burst_peak_mib - r.rss_synced_mib; }), 1) << " |\n";
  }
  s << "\nClient thread: the informer's (`gpubank-inform`) or, for (a), the thread running ListWatch::run(); its CPU "
       "and run-queue wait from /proc/self/task/<tid>/schedstat over the burst (TLS, chunked HTTP, JSON parsing of every "
       "event, the store, the informer's cache and handlers). Lists, watches, resumes and 410s: ListWatchStats of the "
       "first run (lists, resumes and 410s are checked in every run; the benchmark fails otherwise). The fake's process used "
    << fixed(med(Kind::Informer, [](const RunResult& r) { return r.fake_cpu_s; }), 2)
    << " s of CPU over run (b)'s burst (making the updates and serving the watch), on the same "
    << std::thread::hardware_concurrency() << " CPUs.\n\n";

  // Ratios.
  const double bare_cpu = med(Kind::Bare, [](const RunResult& r) { return r.cpu_s; });
  const double inf_cpu = med(Kind::Informer, [](const RunResult& r) { return r.cpu_s; });
  const double drops_cpu = med(Kind::Drops, [](const RunResult& r) { return r.cpu_s; });
  const double compaction_cpu = med(Kind::Compaction, [](const RunResult& r) { return r.cpu_s; });
  const double inf_reflect = med(Kind::Informer, [](const RunResult& r) { return r.reflect_s; });
  const double drops_reflect = med(Kind::Drops, [](const RunResult& r) { return r.reflect_s - r.backoff_s; });
  std::vector<double> steady_wall, steady_cpu, cold_wall, cold_cpu;
  for (const auto* r : by_kind[Kind::Informer]) {
    for (const auto& p : r->steady_polls) {
      steady_wall.push_back(p.wall_ms);
      steady_cpu.push_back(p.cpu_ms);
    }
    if (r->cold_poll) {
      cold_wall.push_back(r->cold_poll->wall_ms);
      cold_cpu.push_back(r->cold_poll->cpu_ms);
    }
  }
  const double poll_wall = median(steady_wall), poll_cpu = median(steady_cpu);
  s << "Polling baseline: a full LIST of the " << with_commas(o.workloads) << " Workloads (limit=" << o.page_size
    << ", " << fixed(list_mib, 1) << " MiB of JSON) through ListWatch::list() on the main thread, against the final "
       "state after run (b): the first poll (new connection, empty store) took "
    << fixed(median(cold_wall), 1) << " ms and " << fixed(median(cold_cpu), 1) << " ms of CPU; a steady-state poll "
    << "(kept-alive connection, the store already filled: what every later poll costs) " << fixed(poll_wall, 1)
    << " ms and " << fixed(poll_cpu, 1) << " ms of CPU (medians of " << steady_cpu.size() << " polls: "
    << o.steady_polls << " per repetition). Its result must equal the fake's objects too.\n\n";

  s << "| Ratio | Value | What it means |\n|---|---:|---|\n";
  s << "| (b) CPU per update / (a) CPU per update | " << fixed(inf_cpu / bare_cpu, 2)
    << "x | the informer's overhead over bare list/watch: a shared copy of each object for its cache, the map, the "
       "lock, the handler call |\n";
  s << "| (b) CPU for the whole burst / one steady poll's CPU | " << fixed(inf_cpu * 1e3 / poll_cpu, 1)
    << "x | the informer followed all " << with_commas(o.updates) << " updates for the CPU of that many polls: a poller "
    << "is cheaper only if it polls fewer times than this while such a burst goes on (here the burst took "
    << fixed(inf_reflect, 2) << " s; spread over minutes, as real ones are, the watch costs the same and polling more), "
       "and then it sees that many states, not every update |\n";
  s << "| (b) CPU per update / one steady poll's CPU | " << fixed(inf_cpu / updates * 1e3 / poll_cpu * 1e3, 2)
    << " per thousand | what one update costs the informer, in thousandths of a poll; in bytes an update is "
    << fixed(1e3 / n, 2) << " per thousand of a poll (one object of " << with_commas(o.workloads) << ") |\n";
  s << "| (b) time to the last update / one steady poll's wall time | " << fixed(inf_reflect * 1e3 / poll_wall, 1)
    << "x | the burst, as fast as the fake produced it, reached the cache in the time of that many polls |\n";
  s << "| (c) CPU / (b) CPU | " << fixed(drops_cpu / inf_cpu, 2) << "x | what " << (o.updates - 1) / o.drop_every
    << " dropped watches cost in CPU (TLS handshakes and watch requests; no relist); in time they cost the "
       "transport's backoff: (c) took "
    << fixed(drops_reflect, 2) << " s without its backoff waits |\n";
  s << "| (d) CPU / (b) CPU | " << fixed(compaction_cpu / inf_cpu, 2)
    << "x | a 410 Gone half-way: the watch stops after " << with_commas(o.updates / 2) << " events, a relist of all "
    << with_commas(o.workloads) << " Workloads (the cache replaced as one change) stands for the events missed "
       "meanwhile, then the watch resumes from the list |\n\n";

  // Memory.
  auto mem = [&](Kind k, const std::function<double(const RunResult&)>& f) { return med(k, f); };
  const auto held_rss = [](const RunResult& r) { return r.rss_synced_mib - r.rss_before_mib; };
  const auto held_heap = [](const RunResult& r) { return r.heap_synced_mib - r.heap_before_mib; };
  const auto peak_list = [](const RunResult& r) { return r.sync_peak_mib - r.rss_before_mib; };
  const auto peak_burst = [](const RunResult& r) { return r.burst_peak_mib - r.rss_synced_mib; };
  const auto heap_burst = [](const RunResult& r) { return r.heap_after_mib - r.heap_synced_mib; };
  const double mib = 1024.0 * 1024.0;
  const bool reset = std::all_of(runs.begin(), runs.end(), [](const RunResult& r) { return r.peak_reset; });
  s << "Memory of the client's process (each run in a fresh process; VmRSS and VmHWM from /proc/self/status, the peak "
       "reset through /proc/self/clear_refs before the list and before the burst"
    << (reset ? "" : ", WHICH FAILED here, so the peaks are since the process started")
    << "; live heap: the bytes operator new handed out and not yet freed, counted by the benchmark). The "
    << with_commas(o.workloads) << " Workloads' JSON text, object count x average size: " << with_commas(o.workloads)
    << " x " << fixed(object_bytes, 0) << " bytes = " << fixed(list_mib, 1) << " MiB.\n\n";
  s << "| After the list, watch open | (a) bare ListWatch | (b) Informer | (b) - (a): the informer's cache |\n"
       "|---|---:|---:|---:|\n";
  const double heap_a = mem(Kind::Bare, held_heap), heap_b = mem(Kind::Informer, held_heap);
  const double rss_a = mem(Kind::Bare, held_rss), rss_b = mem(Kind::Informer, held_rss);
  s << "| Live heap (MiB) | " << fixed(heap_a, 1) << " | " << fixed(heap_b, 1) << " | " << fixed(heap_b - heap_a, 1) << " |\n";
  s << "| Live heap per Workload (bytes) | " << with_commas(std::llround(heap_a * mib / n)) << " | "
    << with_commas(std::llround(heap_b * mib / n)) << " | " << with_commas(std::llround((heap_b - heap_a) * mib / n)) << " |\n";
  s << "| Live heap / JSON text | " << fixed(heap_a / list_mib, 1) << "x | " << fixed(heap_b / list_mib, 1) << "x | "
    << fixed((heap_b - heap_a) / list_mib, 1) << "x |\n";
  s << "| Resident set held (MiB) | " << fixed(rss_a, 1) << " | " << fixed(rss_b, 1) << " | " << fixed(rss_b - rss_a, 1) << " |\n";
  s << "| Resident set per Workload (bytes) | " << with_commas(std::llround(rss_a * mib / n)) << " | "
    << with_commas(std::llround(rss_b * mib / n)) << " | " << with_commas(std::llround((rss_b - rss_a) * mib / n)) << " |\n";
  s << "| Peak resident set over the list (MiB) | " << fixed(mem(Kind::Bare, peak_list), 1) << " | "
    << fixed(mem(Kind::Informer, peak_list), 1) << " | |\n\n";
  s << "Held: after the list (the watch open, the process otherwise idle) minus before the client started, medians. "
       "The bare ListWatch holds each Workload once (its store, nlohmann::json); the informer twice (the ListWatch's "
       "store, from which it computes each change's before and after, and its own cache of shared immutable copies: "
       "docs/controller.md, Informers, Memory). The resident set is the live heap plus what the list left behind: "
       "ListWatch::list() gathers every page's items (a full copy of the objects) and ObjectStore::replace copies them "
       "into a new map, so a list briefly holds one more copy than the store keeps, and the allocator (mimalloc) keeps "
       "most of those pages resident once they are freed. Over the burst, the peak resident set grew by "
    << fixed(mem(Kind::Bare, peak_burst), 1) << ", " << fixed(mem(Kind::Informer, peak_burst), 1) << ", "
    << fixed(mem(Kind::Drops, peak_burst), 1) << " and " << fixed(mem(Kind::Compaction, peak_burst), 1)
    << " MiB in (a), (b), (c) and (d) (the relist in (d) holds every page's objects next to the cache until it "
       "replaces it), and the live heap by "
    << fixed(mem(Kind::Bare, heap_burst), 1) << ", " << fixed(mem(Kind::Informer, heap_burst), 1) << ", "
    << fixed(mem(Kind::Drops, heap_burst), 1) << " and " << fixed(mem(Kind::Compaction, heap_burst), 1)
    << " MiB (measured once the client's watch was open again).\n\n";

  std::size_t failed = 0;
  for (const auto& r : runs) failed += r.failures.empty() ? 0 : 1;
  s << "**Correctness: " << (failed == 0 ? "every run's cache equalled the fake's " + with_commas(o.workloads) +
                                               " objects exactly, at the burst's last resourceVersion, with the "
                                               "lists, resumes and 410s expected"
                                         : std::to_string(failed) + " run(s) FAILED (see stderr)")
    << "** (" << runs.size() << " runs, and " << steady_cpu.size() + cold_cpu.size() << " polls).\n";
  return s.str();
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, o)) return 2;
  const std::string load_before = load_average();
  std::vector<RunResult> runs;
  try {
    for (int i = 0; i < o.warmup; ++i) {
      std::cerr << "watch_bench: warm-up run\n";
      const RunResult r = run_isolated(o, Kind::Informer, false);
      for (const auto& f : r.failures) std::cerr << "watch_bench: FAILED (warm-up): " << f << '\n';
      if (!r.failures.empty()) return 1;
    }
    for (int rep = 0; rep < o.repetitions; ++rep) {
      for (const auto& k : kKinds) {
        RunResult r = run_isolated(o, k.kind, k.kind == Kind::Informer);
        std::cerr << "watch_bench: repetition " << rep + 1 << " " << k.name << ": last update after " << fixed(r.reflect_s, 3)
                  << " s, client CPU " << fixed(r.cpu_s, 3) << " s (waited " << fixed(r.wait_s, 3) << " s), backoff "
                  << fixed(r.backoff_s, 2) << " s in " << r.backoffs << ", lists " << r.stats.lists << ", watches "
                  << r.stats.watches << ", resumes " << r.stats.resumes << ", 410s " << r.stats.gone << "; RSS MiB before "
                  << fixed(r.rss_before_mib, 1) << ", synced " << fixed(r.rss_synced_mib, 1) << ", peak over list "
                  << fixed(r.sync_peak_mib, 1) << ", peak over burst " << fixed(r.burst_peak_mib, 1) << ", after "
                  << fixed(r.rss_after_mib, 1) << "; heap MiB before " << fixed(r.heap_before_mib, 1) << ", synced "
                  << fixed(r.heap_synced_mib, 1) << ", after " << fixed(r.heap_after_mib, 1);
        if (r.cold_poll) {
          std::cerr << "; polls (wall/CPU ms): " << fixed(r.cold_poll->wall_ms, 1) << "/" << fixed(r.cold_poll->cpu_ms, 1);
          for (const auto& p : r.steady_polls) std::cerr << ", " << fixed(p.wall_ms, 1) << "/" << fixed(p.cpu_ms, 1);
        }
        std::cerr << (r.failures.empty() ? "; check ok" : "; CHECK FAILED") << '\n';
        for (const auto& f : r.failures) std::cerr << "watch_bench: FAILED: " << f << '\n';
        runs.push_back(std::move(r));
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "watch_bench: " << e.what() << '\n';
    return 1;
  }
  const std::string text = render(o, runs, load_before, load_average());
  std::cout << text;
  if (!o.summary.empty()) {
    std::ofstream out(o.summary);
    out << text;
  }
  const bool ok = std::all_of(runs.begin(), runs.end(), [](const RunResult& r) { return r.failures.empty(); });
  return ok ? 0 : 1;
}
