// `gpubank exporter`: the node agent of attribution (src/attribution/exporter.hpp).
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "attribution/exporter.hpp"
#include "attribution/snapshot.hpp"
#include "cli/command.hpp"
#include "cli/validators.hpp"
#include "cli/signals.hpp"
#include "node/nvml.hpp"
#include "node/pod_resources.hpp"
#include "node/pod_resources_cache.hpp"

namespace gpubank::cli {
namespace {

struct ExporterCommandOptions {
  std::string source = "dcgm";
  std::string upstream = "http://127.0.0.1:9400/metrics";
  std::string nvml_library = node::kNvmlLibrary;
  bool no_nvml = false;
  std::string pod_resources = node::kDefaultPodResourcesSocket;
  std::string snapshot_url;
  std::string snapshot_file;
  std::string hmac_key_file;
  std::string node;
  std::string pool;
  std::string gpu_model;
  std::string partition = "full";
  double interval = 5;
  std::string listen = "0.0.0.0:9410";
};

int run_exporter(const ExporterCommandOptions& opt) {
  if (opt.node.empty()) {
    std::cerr << "gpubank exporter: --node is required (the downward API's spec.nodeName)\n";
    return 2;
  }
  if (!opt.snapshot_url.empty() && !opt.snapshot_file.empty()) {
    std::cerr << "gpubank exporter: --snapshot-url and --snapshot-file exclude each other\n";
    return 2;
  }
  const auto colon = opt.listen.rfind(':');
  int port = -1;
  if (colon != std::string::npos) {
    try {
      port = std::stoi(opt.listen.substr(colon + 1));
    } catch (const std::exception&) {
      port = -1;
    }
  }
  if (port < 0 || port > 65535) {
    std::cerr << "gpubank exporter: --listen: \"" << opt.listen << "\" is not ADDRESS:PORT\n";
    return 2;
  }
  // Before any thread starts: gRPC's channel and the HTTP client start their own.
  StopOnSignal signals;
  std::string key;
  if (!opt.snapshot_url.empty() || !opt.snapshot_file.empty()) {
    if (opt.hmac_key_file.empty()) {
      std::cerr << "gpubank exporter: a snapshot needs --hmac-key-file (snapshots are verified, never trusted)\n";
      return 2;
    }
    auto read = attribution::read_hmac_key_file(opt.hmac_key_file);
    if (!read) {
      std::cerr << "gpubank exporter: " << read.error() << '\n';
      return 1;
    }
    key = std::move(*read);
  }

  std::unique_ptr<attribution::UpstreamSource> upstream;
  if (opt.source == "nvml") {
    auto nvml = node::Nvml::open(opt.nvml_library);
    if (!nvml) {
      std::cerr << "gpubank exporter: --source nvml: " << nvml.error() << '\n';
      return 1;
    }
    upstream = attribution::nvml_source(std::move(*nvml), opt.node);
  } else {
    // NVML, when the driver is there, places MIG devices; without it MIG devices stay unplaced.
    std::unique_ptr<node::Nvml> nvml;
    if (!opt.no_nvml) {
      if (auto opened = node::Nvml::open(opt.nvml_library)) {
        nvml = std::move(*opened);
      } else {
        spdlog::warn("no NVML ({}): MIG devices cannot be placed", opened.error());
      }
    }
    auto source = attribution::dcgm_source(opt.upstream, std::chrono::milliseconds(2000), std::move(nvml));
    if (!source) {
      std::cerr << "gpubank exporter: " << source.error() << '\n';
      return 2;
    }
    upstream = std::move(*source);
  }
  std::unique_ptr<attribution::SnapshotSource> snapshots;
  if (!opt.snapshot_url.empty()) {
    auto source = attribution::http_snapshot_source(opt.snapshot_url, key, std::chrono::milliseconds(2000));
    if (!source) {
      std::cerr << "gpubank exporter: " << source.error() << '\n';
      return 2;
    }
    snapshots = std::move(*source);
  } else if (!opt.snapshot_file.empty()) {
    snapshots = attribution::file_snapshot_source(opt.snapshot_file, key);
  }
  std::unique_ptr<node::PodResourcesCache> pod_resources;
  if (!opt.pod_resources.empty()) {
    auto client = node::PodResourcesClient::create(node::PodResourcesOptions{.socket = opt.pod_resources});
    if (!client) {
      std::cerr << "gpubank exporter: --pod-resources: " << client.error() << '\n';
      return 1;
    }
    const auto interval = std::chrono::milliseconds(static_cast<std::int64_t>(opt.interval * 1000));
    pod_resources = std::make_unique<node::PodResourcesCache>(std::move(*client), interval);
  }


  attribution::ExporterOptions options;
  options.node = attribution::NodeInfo{opt.node, opt.pool, opt.gpu_model, opt.partition};
  options.interval = std::chrono::milliseconds(static_cast<std::int64_t>(opt.interval * 1000));
  options.listen_address = opt.listen.substr(0, colon);
  options.port = port;
  options.log = [](const std::string& line) { spdlog::info("{}", line); };
  auto exporter = attribution::Exporter::create(std::move(options), std::move(upstream), std::move(snapshots),
                                                std::move(pod_resources));
  if (!exporter) {
    std::cerr << "gpubank exporter: " << exporter.error() << '\n';
    return 1;
  }
  spdlog::info("serving http://{}:{}/metrics", opt.listen.substr(0, colon), (*exporter)->port());
  const Expected<bool> result = signals.run([&](std::stop_token stop) { return (*exporter)->run(stop); });
  if (!result) {
    std::cerr << "gpubank exporter: " << result.error() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace

Command add_exporter_command(CLI::App& app) {
  auto opt = std::make_shared<ExporterCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "exporter",
      "The node agent of attribution: GPU samples (dcgm-exporter's page on localhost, or NVML) joined with the "
      "kubelet's PodResources and the signed metadata snapshot of `gpubank metasync`, served on /metrics with "
      "team, owner and workload labels. Holds no Kubernetes credentials; nothing is read on a scrape.");
  cmd->add_option("--node", opt->node, "this node's name (the downward API's spec.nodeName)");
  cmd->add_option("--source", opt->source, "where GPU samples come from: dcgm (dcgm-exporter) or nvml")
      ->check(CLI::IsMember({"dcgm", "nvml"}));
  cmd->add_option("--upstream", opt->upstream, "dcgm-exporter's metrics URL (--source dcgm)")->capture_default_str();
  cmd->add_option("--nvml-library", opt->nvml_library, "NVML to load")->capture_default_str();
  cmd->add_flag("--no-nvml", opt->no_nvml, "with --source dcgm: do not load NVML (MIG devices stay unplaced)");
  cmd->add_option("--pod-resources", opt->pod_resources, "the kubelet's PodResources socket (empty: none)")
      ->capture_default_str();
  cmd->add_option("--snapshot-url", opt->snapshot_url, "metasync's snapshot URL for this node (http://.../v1/nodes/<node>/snapshot)");
  cmd->add_option("--snapshot-file", opt->snapshot_file, "or a snapshot file metasync writes (--out-dir)");
  cmd->add_option("--hmac-key-file", opt->hmac_key_file, "the key snapshots are signed with (at least 32 bytes)");
  cmd->add_option("--pool", opt->pool, "this node's pool (its platform.gpubank.dev/pool label)");
  cmd->add_option("--gpu-model", opt->gpu_model, "the pool's gpuModel (the key of gpuHourPrice, e.g. H100)");
  cmd->add_option("--partition", opt->partition, "the pool's partition: full or a MIG profile")->capture_default_str();
  cmd->add_option("--interval", opt->interval, "seconds between refreshes of the inputs")
      ->check(finite_range(0.1, 3600))
      ->capture_default_str();
  cmd->add_option("--listen", opt->listen, "ADDRESS:PORT of /metrics, /healthz and /readyz")->capture_default_str();
  return {cmd, [opt] { return run_exporter(*opt); }};
}

}  // namespace gpubank::cli
