// The portal's API under load: the requests the overview page makes (pools, groups, GPUs,
// alerts, the next page of events, the clock), over real HTTP on loopback with a bearer
// token, against `gpubank up`'s platform at two sizes in the same run:
//   baseline  the example cluster (examples/, 136 GPUs) at midday of its seeded day;
//   large     the same policies and inventory with every GPU count (pool capacities,
//             guarantees, limits, node counts) times 15 — 2,040 GPUs — and the training
//             load raised so the day holds about 5,000 workloads, at midday.
// Prints p50/p99 per endpoint and for the whole overview (the six requests in a row), the
// large/baseline ratio, and the issue's target (overview p99 under 50 ms at the large size).
// Then the impact preview: one borrowLimit change over 7 days of the example cluster
// (twin/preview), the wall time of `run_preview` (both runs) with the fluid serving model,
// three times, and once with every request served (the baseline); the two models' serving
// figures side by side.
//
//   portal_bench [--requests N] [--summary FILE]
#include <httplib.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/platform_server.hpp"
#include "auth/gate.hpp"
#include "policy/policy_set.hpp"
#include "proposals/proposals.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/preview/preview.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpubank;
using Clock = std::chrono::steady_clock;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every GPU count of the policies and the inventory times k (the MIG node becomes a group).
void write_scaled(const fs::path& dir, int k) {
  fs::create_directories(dir / "policies");
  const std::regex keys(R"(\b(capacity|minGuaranteed|maxCapacity|guaranteed|borrowLimit|lendingLimit|extraGuaranteed|trainingBorrowLimit): (\d+))");
  auto scale = [&](const std::string& text, const std::regex& re) {
    std::string out;
    auto begin = std::sregex_iterator(text.begin(), text.end(), re);
    std::size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      out += text.substr(last, static_cast<std::size_t>(it->position()) - last);
      out += (*it)[1].str() + ": " + std::to_string(std::stoll((*it)[2].str()) * k);
      last = static_cast<std::size_t>(it->position() + it->length());
    }
    return out + text.substr(last);
  };
  for (const auto& e : fs::directory_iterator(std::string(GPUBANK_SOURCE_DIR) + "/examples/policies")) {
    std::ofstream(dir / "policies" / e.path().filename()) << scale(read(e.path()), keys);
  }
  std::string inventory = scale(read(std::string(GPUBANK_SOURCE_DIR) + "/examples/inventory/example.yaml"), std::regex(R"(\b(count): (\d+))"));
  const auto nodes = inventory.find("nodes:\n");
  const auto mig = inventory.find("- name: a100-mig-dev\n");
  inventory = inventory.substr(0, nodes) + inventory.substr(nodes + 7, mig - nodes - 7) + "- namePrefix: a100-mig-dev\n  count: " +
              std::to_string(k) + "\n" + inventory.substr(mig + 21);
  std::ofstream(dir / "inventory.yaml") << inventory;
}

struct Size {
  std::string name;
  std::size_t workloads = 0, gpus = 0, live = 0;
  std::vector<std::vector<double>> per_endpoint;  // ms
  std::vector<double> overview;                   // ms
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::max<std::size_t>(rank, 1) - 1];
}

const std::vector<std::string> kOverview{"/api/v1/pools", "/api/v1/groups", "/api/v1/gpus", "/api/v1/governance/alerts",
                                         "/api/v1/events?after=0&limit=100", "/api/v1/clock"};

Size measure(const std::string& name, const fs::path& policies, const fs::path& inventory_file, double load, int requests,
             const fs::path& work) {
  Size out;
  out.name = name;
  Diagnostics d;
  auto inventory = twin::cluster::load_inventory(inventory_file.string(), d);
  if (!inventory) throw std::runtime_error("inventory: " + (d.empty() ? std::string("?") : d.front().to_string()));
  twin::run::RunOptions run;
  run.inventory = std::make_shared<const twin::cluster::Inventory>(std::move(*inventory));
  twin::live::DayOptions day;
  day.start = *parse_rfc3339("2026-11-30T16:00:00Z");
  day.hours = 24;
  day.load = load;
  day.serving_load = 0.05;
  day.governance = true;
  policy::PolicySet set = policy::load_policy_set({policies.string()});
  auto platform = twin::live::Platform::create(std::move(set), day, run);
  if (!platform) throw std::runtime_error(platform.error());
  std::cerr << "portal_bench: " << name << ": running to midday\n";
  (*platform)->advance_to(12 * 3'600'000);
  out.workloads = (*platform)->scenario().workloads.size();
  const auto gpus = (*platform)->gpus_json("");
  out.gpus = gpus.size();
  for (const auto& w : (*platform)->workloads_json({})) {
    const std::string state = w["state"];
    out.live += state != "Finished" && state != "Deleted" && state != "Waiting" ? 1 : 0;
  }
  fs::create_directories(work);
  auto gate = auth::Gate::open((work / (name + "-auth.db")).string());
  if (!gate) throw std::runtime_error(gate.error());
  std::shared_ptr<auth::Gate> shared_gate(std::move(*gate));
  auto token = shared_gate->issue(auth::GrantRequest{"bench", auth::Role::PlatformAdmin, "", "bench", std::nullopt}, 0);
  api::PlatformServerOptions options;
  options.port = 0;
  options.paused = true;
  options.gate = shared_gate;
  api::PlatformServer server(std::move(*platform), options);
  const auto port = server.bind();
  if (!port) throw std::runtime_error(port.error());
  std::thread serving([&] { server.serve(); });
  httplib::Client client("127.0.0.1", *port);
  client.set_keep_alive(true);
  client.set_bearer_token_auth(token->token);
  while (!client.Get("/readyz")) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  out.per_endpoint.assign(kOverview.size(), {});
  // The token's rate limit is the product's (50/s, bursts of 200): the bench paces itself
  // below it, and measures each request's own latency.
  for (int i = 0; i < requests; ++i) {
    const auto page = Clock::now();
    for (std::size_t e = 0; e < kOverview.size(); ++e) {
      const auto t0 = Clock::now();
      auto res = client.Get(kOverview[e]);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (!res || res->status != 200) throw std::runtime_error(kOverview[e] + ": " + (res ? std::to_string(res->status) + " " + res->body : "no answer"));
      out.per_endpoint[e].push_back(ms);
    }
    out.overview.push_back(std::chrono::duration<double, std::milli>(Clock::now() - page).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(130));  // 6 requests / 130 ms < 50/s
  }
  server.stop();
  serving.join();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int requests = 200;
  std::string summary;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--requests=", 0) == 0) requests = std::stoi(a.substr(11));
    else if (a.rfind("--summary=", 0) == 0) summary = a.substr(10);
    else {
      std::cerr << "usage: portal_bench [--requests=N] [--summary=FILE]\n";
      return 2;
    }
  }
  const fs::path work = fs::temp_directory_path() / ("gpubank-portal-bench-" + std::to_string(::getpid()));
  write_scaled(work / "large", 15);
  const std::string examples = std::string(GPUBANK_SOURCE_DIR) + "/examples";
  std::vector<Size> sizes;
  sizes.push_back(measure("baseline", examples + "/policies", examples + "/inventory/example.yaml", 1.1, requests, work));
  sizes.push_back(measure("large", work / "large/policies", work / "large/inventory.yaml", 1.6, requests, work));

  std::ostringstream md;
  md << "| size | workloads in the day | live at midday | GPUs | ";
  for (const auto& e : kOverview) md << e.substr(8) << " p50 / p99 | ";
  md << "overview (6 requests) p50 / p99 |\n|---|---|---|---|";
  for (std::size_t i = 0; i <= kOverview.size(); ++i) md << "---|";
  md << "\n";
  for (const Size& s : sizes) {
    char buf[64];
    md << "| " << s.name << " | " << s.workloads << " | " << s.live << " | " << s.gpus << " | ";
    for (const auto& v : s.per_endpoint) {
      std::snprintf(buf, sizeof buf, "%.2f / %.2f ms", percentile(v, 50), percentile(v, 99));
      md << buf << " | ";
    }
    std::snprintf(buf, sizeof buf, "%.2f / %.2f ms", percentile(s.overview, 50), percentile(s.overview, 99));
    md << buf << " |\n";
  }
  const double ratio = percentile(sizes[1].overview, 99) / percentile(sizes[0].overview, 99);
  char line[2048];
  std::snprintf(line, sizeof line,
                "\nOverview p99, large / baseline: %.2fx. Target (issue 32): p99 under 50 ms at %zu GPUs and %zu workloads: %s.\n",
                ratio, sizes[1].gpus, sizes[1].workloads, percentile(sizes[1].overview, 99) < 50 ? "met" : "NOT met");
  md << line;

  // The impact preview over 7 days of the example cluster, three times.
  policy::PolicySet current = policy::load_policy_set({examples + "/policies"});
  fs::create_directories(work / "proposed");
  for (const auto& e : fs::directory_iterator(examples + "/policies")) fs::copy_file(e.path(), work / "proposed" / e.path().filename());
  {
    std::string quotas = read(work / "proposed/10-quotas.yaml");
    const std::string from = "  guaranteed: 8\n  borrowLimit: 24\n  maxCapacity: 32\n",
                      to = "  guaranteed: 8\n  borrowLimit: 16\n  maxCapacity: 24\n";
    quotas.replace(quotas.find(from), from.size(), to);
    std::ofstream(work / "proposed/10-quotas.yaml", std::ios::trunc) << quotas;
  }
  policy::PolicySet proposed = policy::load_policy_set({(work / "proposed").string()});
  Diagnostics d;
  twin::preview::Work w;
  w.inventory = std::make_shared<const twin::cluster::Inventory>(*twin::cluster::load_inventory(examples + "/inventory/example.yaml", d));
  w.day.start = *parse_rfc3339("2026-11-30T16:00:00Z");
  w.day.hours = 7 * 24;
  // The fluid serving model (what the CLI and the portal run) three times, and once the
  // request model it is calibrated on: the baseline of the ratio and of the figures.
  using Model = twin::live::DayOptions::ServingModel;
  std::vector<double> seconds;
  std::optional<twin::preview::Preview> fluid;
  for (int i = 0; i < 3; ++i) {
    std::cerr << "portal_bench: impact preview over 7 days (fluid serving), run " << i + 1 << " of 3\n";
    w.day.serving_model = Model::Fluid;
    const auto t0 = Clock::now();
    auto p = twin::preview::run_preview(current, proposed, w);
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    if (!p || p->refused) {
      std::cerr << "portal_bench: the preview failed: " << (p ? twin::preview::to_text(*p) : p.error()) << '\n';
      return 1;
    }
    fluid = std::move(*p);
  }
  std::cerr << "portal_bench: impact preview over 7 days (every request served), once\n";
  w.day.serving_model = Model::Requests;
  const auto t0 = Clock::now();
  auto exact = twin::preview::run_preview(current, proposed, w);
  const double exact_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!exact || exact->refused) {
    std::cerr << "portal_bench: the preview failed: " << (exact ? twin::preview::to_text(*exact) : exact.error()) << '\n';
    return 1;
  }
  std::sort(seconds.begin(), seconds.end());
  std::snprintf(line, sizeof line,
                "\nImpact preview, research's borrowLimit 24 -> 16 (maxCapacity 32 -> 24), 7 days of the example cluster (both runs, serving "
                "at load 1, fluid model): %.1f s median of 3 (min %.1f, max %.1f). Target (issue 32): under 5 s: %s. "
                "The same preview with every request served: %.1f s (%.1fx the fluid median).\n",
                seconds[1], seconds[0], seconds[2], seconds[1] < 5 ? "met" : "NOT met", exact_seconds, exact_seconds / seconds[1]);
  md << line;
  // What the fluid model gives away: per service and side, its SLO attainment and
  // GPU-hours against the request model's, and the group rows it changes.
  md << "\n| service | side | SLO attainment, requests / fluid | GPU-hours, requests / fluid |\n|---|---|---|---|\n";
  auto pct = [](const std::optional<double>& v) {
    if (!v) return std::string("-");
    char b[32];
    std::snprintf(b, sizeof b, "%.1f %%", 100 * *v);
    return std::string(b);
  };
  for (const auto& e : exact->services) {
    for (const auto& f : fluid->services) {
      if (f.policy != e.policy) continue;
      std::snprintf(line, sizeof line, "| %s | current | %s / %s | %.1f / %.1f |\n| %s | proposed | %s / %s | %.1f / %.1f |\n",
                    e.policy.c_str(), pct(e.current_attainment).c_str(), pct(f.current_attainment).c_str(), e.current_gpu_hours,
                    f.current_gpu_hours, e.policy.c_str(), pct(e.proposed_attainment).c_str(), pct(f.proposed_attainment).c_str(),
                    e.proposed_gpu_hours, f.proposed_gpu_hours);
      md << line;
    }
  }
  int rows = 0, same = 0;
  for (const auto& e : exact->rows) {
    for (const auto& f : fluid->rows) {
      if (f.business_group != e.business_group || f.pool != e.pool || !e.current || !f.current || !e.proposed || !f.proposed) continue;
      ++rows;
      const double de = e.proposed->used_gpu_hours - e.current->used_gpu_hours;
      const double df = f.proposed->used_gpu_hours - f.current->used_gpu_hours;
      same += std::abs(de - df) < 0.05 ? 1 : 0;
    }
  }
  std::snprintf(line, sizeof line,
                "\nGroup and pool rows whose predicted change in GPU-hours used is the same (within 0.05) under both serving "
                "models: %d of %d.\n",
                same, rows);
  md << line;
  std::cout << md.str();
  if (!summary.empty()) std::ofstream(summary) << md.str();
  fs::remove_all(work);
  return 0;
}
