#include "attribution/sources.hpp"

#include <httplib.h>

#include <fstream>
#include <sstream>

#include "metrics/text_parser.hpp"

namespace gpubank::attribution {
namespace {

// "http://host:port/path" -> ("http://host:port", "/path").
Expected<std::pair<std::string, std::string>> split_url(const std::string& url, std::string_view what) {
  const std::string_view scheme = "http://";
  if (!url.starts_with(scheme)) {
    return Unexpected{std::string(what) + ": " + url + ": must be an http:// URL (node-local traffic, no TLS)"};
  }
  const auto slash = url.find('/', scheme.size());
  if (slash == scheme.size()) return Unexpected{std::string(what) + ": " + url + ": names no host"};
  if (slash == std::string::npos) return std::pair{url, std::string("/")};
  return std::pair{url.substr(0, slash), url.substr(slash)};
}

std::string http_error(const httplib::Result& res, const std::string& url) {
  if (!res) return url + ": " + httplib::to_string(res.error());
  return url + ": HTTP " + std::to_string(res->status);
}

class DcgmSource final : public UpstreamSource {
 public:
  DcgmSource(std::string url, std::string base, std::string path, std::chrono::milliseconds timeout,
             std::unique_ptr<node::Nvml> nvml)
      : url_(std::move(url)), path_(std::move(path)), client_(base), nvml_(std::move(nvml)) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(timeout - seconds);
    client_.set_connection_timeout(seconds.count(), static_cast<time_t>(micros.count()));
    client_.set_read_timeout(seconds.count(), static_cast<time_t>(micros.count()));
    client_.set_keep_alive(true);
    if (nvml_) {
      if (auto devices = nvml_->devices()) inventory_ = std::move(*devices);
    }
  }

  Expected<metrics::Exposition> read() override {
    std::string body;
    bool too_large = false;
    auto res = client_.Get(path_, [&](const char* data, std::size_t n) {
      if (body.size() + n > kMaxUpstreamBytes) {
        too_large = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (too_large) return Unexpected{url_ + ": the page is over " + std::to_string(kMaxUpstreamBytes) + " bytes"};
    if (!res || res->status != 200) return Unexpected{http_error(res, url_)};
    auto parsed = metrics::parse_text(body, metrics::ParseLimits{.max_bytes = kMaxUpstreamBytes});
    if (!parsed) return Unexpected{url_ + ": " + parsed.error()};
    return parsed;
  }

  std::vector<node::GpuDevice> inventory() const override { return inventory_; }

 private:
  std::string url_;
  std::string path_;
  httplib::Client client_;
  std::unique_ptr<node::Nvml> nvml_;
  std::vector<node::GpuDevice> inventory_;
};

class NvmlSource final : public UpstreamSource {
 public:
  NvmlSource(std::unique_ptr<node::Nvml> nvml, std::string hostname) : nvml_(std::move(nvml)), hostname_(std::move(hostname)) {}

  Expected<metrics::Exposition> read() override {
    auto devices = nvml_->devices();
    if (!devices) return Unexpected{devices.error()};
    inventory_ = *devices;
    std::vector<std::optional<node::GpuReading>> readings;
    for (const node::GpuDevice& g : *devices) {
      auto r = nvml_->read(g.index);
      readings.push_back(r ? std::optional(*r) : std::nullopt);  // a GPU that fails one read loses its samples
    }
    return nvml_exposition(*devices, readings, hostname_);
  }

  std::vector<node::GpuDevice> inventory() const override { return inventory_; }

 private:
  std::unique_ptr<node::Nvml> nvml_;
  std::string hostname_;
  std::vector<node::GpuDevice> inventory_;
};

class HttpSnapshotSource final : public SnapshotSource {
 public:
  HttpSnapshotSource(std::string url, std::string base, std::string path, std::string key, std::chrono::milliseconds timeout)
      : url_(std::move(url)), path_(std::move(path)), key_(std::move(key)), client_(base) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
    client_.set_connection_timeout(seconds.count(), 0);
    client_.set_read_timeout(std::max<std::int64_t>(1, seconds.count()), 0);
  }

  Expected<SnapshotRead> read() override {
    httplib::Headers headers;
    if (!etag_.empty()) headers.emplace("If-None-Match", etag_);
    std::string body;
    bool too_large = false;
    auto res = client_.Get(path_, headers, [&](const char* data, std::size_t n) {
      if (body.size() + n > kMaxSnapshotBytes) {
        too_large = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (too_large) return Unexpected{url_ + ": the snapshot is over " + std::to_string(kMaxSnapshotBytes) + " bytes"};
    if (res && res->status == 304) return SnapshotRead{last_, false};
    if (!res || res->status != 200) return Unexpected{http_error(res, url_)};
    auto decoded = decode_snapshot(body, key_);
    if (!decoded) return Unexpected{url_ + ": rejected: " + decoded.error()};
    if (last_ && decoded->generation < last_->generation && decoded->produced_ms < last_->produced_ms) {
      // An older snapshot than the one held (a replayed or stale answer): keep ours.
      return Unexpected{url_ + ": rejected: generation " + std::to_string(decoded->generation) + " is older than " +
                        std::to_string(last_->generation)};
    }
    etag_ = res->get_header_value("ETag");
    last_ = std::make_shared<const NodeSnapshot>(std::move(*decoded));
    return SnapshotRead{last_, true};
  }

 private:
  std::string url_;
  std::string path_;
  std::string key_;
  httplib::Client client_;
  std::string etag_;
  std::shared_ptr<const NodeSnapshot> last_;
};

class FileSnapshotSource final : public SnapshotSource {
 public:
  FileSnapshotSource(std::string path, std::string key) : path_(std::move(path)), key_(std::move(key)) {}

  Expected<SnapshotRead> read() override {
    auto decoded = read_snapshot_file(path_, key_);
    if (!decoded) return Unexpected{path_ + ": rejected: " + decoded.error()};
    if (last_ && *decoded == *last_) return SnapshotRead{last_, false};
    last_ = std::make_shared<const NodeSnapshot>(std::move(*decoded));
    return SnapshotRead{last_, true};
  }

 private:
  std::string path_;
  std::string key_;
  std::shared_ptr<const NodeSnapshot> last_;
};

}  // namespace

Expected<std::unique_ptr<UpstreamSource>> dcgm_source(const std::string& url, std::chrono::milliseconds timeout,
                                                      std::unique_ptr<node::Nvml> nvml) {
  auto parts = split_url(url, "--upstream");
  if (!parts) return Unexpected{parts.error()};
  return std::unique_ptr<UpstreamSource>(new DcgmSource(url, parts->first, parts->second, timeout, std::move(nvml)));
}

std::unique_ptr<UpstreamSource> nvml_source(std::unique_ptr<node::Nvml> nvml, std::string hostname) {
  return std::make_unique<NvmlSource>(std::move(nvml), std::move(hostname));
}

metrics::Exposition nvml_exposition(const std::vector<node::GpuDevice>& devices,
                                    const std::vector<std::optional<node::GpuReading>>& readings,
                                    const std::string& hostname) {
  // dcgm-exporter's names, types and HELP texts (etc/default-counters.csv), for the fields
  // NVML answers without DCGM.
  struct Field {
    const char* name;
    const char* help;
    double (*value)(const node::GpuReading&);
  };
  static const Field kFields[] = {
      {"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", [](const node::GpuReading& r) { return double(r.temperature_c); }},
      {"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", [](const node::GpuReading& r) { return r.power_mw / 1000.0; }},
      {"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", [](const node::GpuReading& r) { return double(r.gpu_util); }},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).",
       [](const node::GpuReading& r) { return double(r.memory_util); }},
      {"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).",
       [](const node::GpuReading& r) { return double(r.memory_free / (1024 * 1024)); }},
      {"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).",
       [](const node::GpuReading& r) { return double(r.memory_used / (1024 * 1024)); }},
  };
  metrics::Exposition out;
  for (const Field& f : kFields) {
    metrics::Family family{f.name, metrics::MetricType::gauge, f.help, {}};
    for (std::size_t i = 0; i < devices.size() && i < readings.size(); ++i) {
      const node::GpuDevice& g = devices[i];
      if (!readings[i] || g.mig_enabled) continue;  // MIG: dcgm-exporter's profiling fields only
      family.samples.push_back(metrics::Sample{
          f.name,
          {{"gpu", std::to_string(g.index)},
           {"UUID", g.uuid},
           {"pci_bus_id", g.pci_bus_id},
           {"device", "nvidia" + std::to_string(g.minor)},
           {"modelName", g.name},
           {"Hostname", hostname}},
          f.value(*readings[i]),
          std::nullopt});
    }
    out.families.push_back(std::move(family));
  }
  return out;
}

Expected<std::unique_ptr<SnapshotSource>> http_snapshot_source(const std::string& url, std::string key,
                                                               std::chrono::milliseconds timeout) {
  auto parts = split_url(url, "--snapshot-url");
  if (!parts) return Unexpected{parts.error()};
  return std::unique_ptr<SnapshotSource>(new HttpSnapshotSource(url, parts->first, parts->second, std::move(key), timeout));
}

std::unique_ptr<SnapshotSource> file_snapshot_source(std::string path, std::string key) {
  return std::make_unique<FileSnapshotSource>(std::move(path), std::move(key));
}

}  // namespace gpubank::attribution
