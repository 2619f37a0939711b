#include "serving/signals.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "document/reader.hpp"
#include "metrics/exposition.hpp"
#include "metrics/names.hpp"
#include "metrics/number.hpp"
#include "metrics/text_parser.hpp"

namespace gpubank::serving {

namespace {

using metrics::Bucket;
using metrics::Family;
using metrics::Label;
using metrics::MetricType;
using metrics::Sample;
using metrics::with_rule;

// ---- the text page ----------------------------------------------------------------------

// What one replica's series add up to while the page is read.
struct Accumulator {
  std::optional<double> waiting, running;
  double kv_sum = 0;
  int kv_engines = 0;
  double kv_deprecated_sum = 0;
  int kv_deprecated_engines = 0;
  std::map<double, double> ttft, itl, itl_deprecated;  // bound -> count, summed over engines
  std::optional<double> requests_finished;
};

const std::string* label_value(const std::vector<Label>& labels, std::string_view name) {
  for (const Label& l : labels) {
    if (l.name == name) return &l.value;
  }
  return nullptr;
}

class PageReader {
 public:
  PageReader(const metrics::Exposition& page, const ScrapeOptions& options) : page_(page), options_(options) {}

  Expected<Scrape> read(std::int64_t t_ms) {
    if (auto e = gauge(kWaiting, &PageReader::add_waiting)) return Unexpected{*e};
    if (auto e = gauge(kRunning, &PageReader::add_running)) return Unexpected{*e};
    if (auto e = gauge(kKvCacheUsage, &PageReader::add_kv)) return Unexpected{*e};
    if (auto e = gauge(kKvCacheUsageDeprecated, &PageReader::add_kv_deprecated)) return Unexpected{*e};
    if (auto e = histogram(kTtft, &Accumulator::ttft)) return Unexpected{*e};
    if (options_.itl) {
      if (auto e = histogram(kItl, &Accumulator::itl)) return Unexpected{*e};
      if (auto e = histogram(kItlDeprecated, &Accumulator::itl_deprecated)) return Unexpected{*e};
    }
    if (auto e = requests_finished()) return Unexpected{*e};

    Scrape scrape;
    scrape.t_ms = t_ms;
    for (auto& entry : replicas_) {
      const Accumulator& a = entry.second;
      ReplicaSignals r;
      r.replica = entry.first;
      r.waiting = a.waiting;
      r.running = a.running;
      // The current name wins: a replica may export both while the old one is deprecated.
      if (a.kv_engines > 0) {
        r.kv_cache_usage = a.kv_sum / a.kv_engines;
      } else if (a.kv_deprecated_engines > 0) {
        r.kv_cache_usage = a.kv_deprecated_sum / a.kv_deprecated_engines;
      }
      r.ttft_buckets = buckets_of(a.ttft);
      r.itl_buckets = buckets_of(a.itl.empty() ? a.itl_deprecated : a.itl);
      r.requests_finished = a.requests_finished;
      scrape.replicas.push_back(std::move(r));
    }
    return scrape;
  }

 private:
  using GaugeAdder = void (PageReader::*)(Accumulator&, double);

  static std::vector<Bucket> buckets_of(const std::map<double, double>& counts) {
    std::vector<Bucket> out;
    out.reserve(counts.size());
    for (const auto& entry : counts) out.push_back({entry.first, entry.second});
    return out;
  }

  void add_waiting(Accumulator& a, double v) { a.waiting = a.waiting.value_or(0) + v; }
  void add_running(Accumulator& a, double v) { a.running = a.running.value_or(0) + v; }
  void add_kv(Accumulator& a, double v) {
    a.kv_sum += v;
    ++a.kv_engines;
  }
  void add_kv_deprecated(Accumulator& a, double v) {
    a.kv_deprecated_sum += v;
    ++a.kv_deprecated_engines;
  }

  // Whether the series is of the model asked for.
  [[nodiscard]] bool wanted(const std::vector<Label>& labels) const {
    if (options_.model_name.empty()) return true;
    const std::string* model = label_value(labels, "model_name");
    return model != nullptr && *model == options_.model_name;
  }

  // The replica a series belongs to, or an error naming the series.
  Expected<Accumulator*> replica_of(std::string_view sample_name, const std::vector<Label>& labels) {
    if (options_.replica_label.empty()) return &replicas_[options_.page_replica];
    const std::string* name = label_value(labels, options_.replica_label);
    if (name == nullptr) {
      return Unexpected{with_rule(metrics::series_text(sample_name, labels) + " has no label \"" +
                                      options_.replica_label + "\" to tell the replica (ScrapeOptions::replica_label)",
                                  kRuleReplicaLabel)};
    }
    return &replicas_[*name];
  }

  static std::optional<std::string> wrong_type(const Family& family, bool histogram) {
    const bool ok = histogram ? family.type == MetricType::histogram
                              : family.type == MetricType::gauge || family.type == MetricType::untyped;
    if (ok) return std::nullopt;
    return with_rule(family.name + " is a " + std::string(metrics::to_string(family.type)) + ", not a " +
                         (histogram ? "histogram" : "gauge") + " as vLLM exports it",
                     kRuleSignalType);
  }

  std::optional<std::string> gauge(std::string_view name, GaugeAdder add) {
    const Family* family = page_.find(name);
    if (family == nullptr) return std::nullopt;
    if (auto e = wrong_type(*family, false)) return e;
    const bool is_kv = name == kKvCacheUsage || name == kKvCacheUsageDeprecated;
    for (const Sample& s : family->samples) {
      if (!wanted(s.labels)) continue;
      auto replica = replica_of(s.name, s.labels);
      if (!replica) return replica.error();
      double v = s.value;
      if (std::isnan(v) || std::isinf(v)) {
        return with_rule(metrics::series_text(s.name, s.labels) + " is " + metrics::format_value(v) +
                             ", not a number of requests or a usage",
                         kRuleSignalValue);
      }
      if (is_kv) {
        if (v < -kKvUsageEpsilon || v > 1 + kKvUsageEpsilon) {
          return with_rule(metrics::series_text(s.name, s.labels) + " is " + metrics::format_value(v) +
                               ", outside the usage range [0, 1]",
                           kRuleSignalValue);
        }
        v = std::clamp(v, 0.0, 1.0);
      } else if (v < 0) {
        return with_rule(metrics::series_text(s.name, s.labels) + " is " + metrics::format_value(v) +
                             ", a negative number of requests",
                         kRuleSignalValue);
      }
      (this->*add)(**replica, v);
    }
    return std::nullopt;
  }

  // vllm:request_success_total summed per replica over its other labels (engine,
  // finished_reason). The text format names the family after its _total series,
  // OpenMetrics without the suffix; the _created samples are not counts.
  std::optional<std::string> requests_finished() {
    const Family* family = page_.find(kRequestSuccess);
    if (family == nullptr) family = page_.find(kRequestSuccess.substr(0, kRequestSuccess.size() - 6));
    if (family == nullptr) return std::nullopt;
    if (family->type != MetricType::counter && family->type != MetricType::untyped) {
      return with_rule(family->name + " is a " + std::string(metrics::to_string(family->type)) +
                           ", not a counter as vLLM exports it",
                       kRuleSignalType);
    }
    for (const Sample& s : family->samples) {
      if (s.name != kRequestSuccess || !wanted(s.labels)) continue;
      auto replica = replica_of(s.name, s.labels);
      if (!replica) return replica.error();
      if (std::isnan(s.value) || std::isinf(s.value) || s.value < 0) {
        return with_rule(metrics::series_text(s.name, s.labels) + " is " + metrics::format_value(s.value) +
                             ", not a count of requests",
                         kRuleSignalValue);
      }
      (**replica).requests_finished = (**replica).requests_finished.value_or(0) + s.value;
    }
    return std::nullopt;
  }

  std::optional<std::string> histogram(std::string_view name, std::map<double, double> Accumulator::*field) {
    const Family* family = page_.find(name);
    if (family == nullptr) return std::nullopt;
    if (auto e = wrong_type(*family, true)) return e;
    auto children = metrics::histogram_children(*family);
    if (!children) return children.error();
    const std::string bucket_name = family->name + "_bucket";
    for (const metrics::HistogramChild& child : *children) {
      if (!wanted(child.labels)) continue;
      if (child.buckets.empty()) continue;  // only _sum/_count: nothing to take a quantile of
      auto replica = replica_of(bucket_name, child.labels);
      if (!replica) return replica.error();
      bool has_inf = false;
      for (const Bucket& b : child.buckets) {
        if (std::isnan(b.count) || std::isinf(b.count) || b.count < 0) {
          std::vector<Label> labels = child.labels;
          labels.push_back({"le", metrics::format_value(b.upper_bound)});
          return with_rule(metrics::series_text(bucket_name, labels) + " is " + metrics::format_value(b.count) +
                               ", not a count of observations",
                           kRuleSignalValue);
        }
        if (std::isinf(b.upper_bound) && b.upper_bound > 0) has_inf = true;
      }
      if (!has_inf) {
        return with_rule(metrics::series_text(bucket_name, child.labels) +
                             " has no le=\"+Inf\" bucket, so no quantile can be taken",
                         kRuleHistogram);
      }
      std::map<double, double>& sums = (**replica).*field;
      for (const Bucket& b : child.buckets) sums[b.upper_bound] += b.count;
    }
    return std::nullopt;
  }

  const metrics::Exposition& page_;
  const ScrapeOptions& options_;
  std::map<std::string, Accumulator> replicas_;
};

// ---- the query API ------------------------------------------------------------------------

using doc::Node;
using doc::NodeType;

// Text from the response, for a message: control characters as spaces, at most 200 bytes
// (cut at a UTF-8 boundary; the JSON parser has checked the encoding).
std::string printable(std::string_view text) {
  std::size_t n = text.size();
  if (n > 200) {
    n = 200;
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  }
  std::string out;
  for (const char c : text.substr(0, n)) out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  if (n < text.size()) out += "...";
  return out;
}

std::string in_quotes(std::string_view text) {
  std::string out = "\"";
  for (const char c : printable(text)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

Unexpected shape_error(const std::string& path, const std::string& what) {
  return Unexpected{with_rule("Prometheus query response: " + path + " " + what, kRulePromShape)};
}

const Node* field(const Node& object, std::string_view key) {
  return object.type == NodeType::Mapping ? object.find(key) : nullptr;
}

// Unix seconds, at most millisecond precision, as Prometheus writes a sample's time.
Expected<std::int64_t> time_ms(const Node& node, const std::string& path) {
  if (node.type != NodeType::Int && node.type != NodeType::Float) {
    return shape_error(path, "is " + std::string(doc::describe(node.type)) + ", not a time in Unix seconds");
  }
  // Up to year 9999 (253402300799 s); a negative time is before any scrape could be.
  if (!std::isfinite(node.number) || node.number < 0 || node.number > 253402300799.999) {
    return Unexpected{with_rule("Prometheus query response: " + path + " is " + node.text +
                                    ", not a time between 1970 and 9999 in Unix seconds",
                                kRulePromValue)};
  }
  return static_cast<std::int64_t>(std::llround(node.number * 1000));
}

// A sample value as Prometheus writes it (strconv.FormatFloat(v, 'f', -1, 64) in quotes).
Expected<double> sample_value(const Node& node, const std::string& path) {
  if (node.type != NodeType::String) {
    return shape_error(path, "is " + std::string(doc::describe(node.type)) + ", not a value in a string");
  }
  const std::string& text = node.text;
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (text == "+Inf") return std::numeric_limits<double>::infinity();
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  const auto v = metrics::parse_value(text);
  if (!v || !std::isfinite(*v)) {
    return Unexpected{with_rule("Prometheus query response: " + path + " is " + in_quotes(text) +
                                    ", not a number as Prometheus writes one (digits, \"NaN\", \"+Inf\", \"-Inf\")",
                                kRulePromValue)};
  }
  return *v;
}

// [<time>, "<value>"]
Expected<PromSample> point(const Node& node, const std::string& path, PromSample sample) {
  if (node.type != NodeType::Sequence || node.items.size() != 2) {
    return shape_error(path, "is not a pair [<time>, \"<value>\"]");
  }
  auto t = time_ms(node.items[0], path + "[0]");
  if (!t) return Unexpected{t.error()};
  auto v = sample_value(node.items[1], path + "[1]");
  if (!v) return Unexpected{v.error()};
  sample.t_ms = *t;
  sample.value = *v;
  return sample;
}

}  // namespace

Expected<Scrape> read_vllm_text(std::string_view text, std::int64_t t_ms, const ScrapeOptions& options) {
  auto page = metrics::parse_text(text);
  if (!page) return Unexpected{page.error()};
  return PageReader(*page, options).read(t_ms);
}

Expected<Scrape> read_vllm(const metrics::Exposition& page, std::int64_t t_ms, const ScrapeOptions& options) {
  return PageReader(page, options).read(t_ms);
}

Expected<std::vector<PromSample>> read_prometheus_query(std::string_view json_body) {
  if (json_body.size() > kPromMaxBodyBytes) {
    return Unexpected{with_rule("Prometheus query response of " + std::to_string(json_body.size()) +
                                    " bytes is above the limit of " + std::to_string(kPromMaxBodyBytes),
                                kRulePromTooLarge)};
  }
  doc::ReadLimits limits;
  limits.max_bytes = kPromMaxBodyBytes;
  limits.max_depth = 32;
  // A vector sample is about 5 nodes plus one per label: 100k samples of up to 20 labels.
  limits.max_nodes = 2'500'000;
  auto root = doc::parse_json(json_body, limits);
  if (!root) {
    const bool limit = root.error().starts_with("more than") || root.error().starts_with("nesting deeper");
    return Unexpected{with_rule("Prometheus query response: " + printable(root.error()),
                                limit ? kRulePromTooLarge : kRulePromJson)};
  }
  if (root->type != NodeType::Mapping) return shape_error("the body", "is not a JSON object");

  const Node* status = field(*root, "status");
  if (status == nullptr || status->type != NodeType::String) return shape_error("\"status\"", "is missing or not a string");
  if (status->text == "error") {
    const std::string_view type = root->string_at("errorType");
    const std::string_view message = root->string_at("error");
    return Unexpected{with_rule("Prometheus answered the query with an error: errorType " + in_quotes(type) + ", error " +
                                    in_quotes(message),
                                kRulePromStatus)};
  }
  if (status->text != "success") return shape_error("\"status\"", "is " + in_quotes(status->text) + ", not \"success\" or \"error\"");

  const Node* data = field(*root, "data");
  if (data == nullptr || data->type != NodeType::Mapping) return shape_error("\"data\"", "is missing or not an object");
  const Node* type = field(*data, "resultType");
  if (type == nullptr || type->type != NodeType::String) {
    return shape_error("data.resultType", "is missing or not a string");
  }
  const Node* result = field(*data, "result");
  if (result == nullptr || result->type != NodeType::Sequence) {
    return shape_error("data.result", "is missing or not a list");
  }

  std::vector<PromSample> out;
  if (type->text == "scalar") {
    auto s = point(*result, "data.result", {});
    if (!s) return Unexpected{s.error()};
    out.push_back(std::move(*s));
    return out;
  }
  if (type->text != "vector") {
    return shape_error("data.resultType", "is " + in_quotes(type->text) +
                                              ": an instant query for the autoscaler returns a vector or a scalar");
  }
  if (result->items.size() > kPromMaxSamples) {
    return Unexpected{with_rule("Prometheus query response has " + std::to_string(result->items.size()) +
                                    " samples, above the limit of " + std::to_string(kPromMaxSamples),
                                kRulePromTooLarge)};
  }
  out.reserve(result->items.size());
  for (std::size_t i = 0; i < result->items.size(); ++i) {
    const Node& item = result->items[i];
    const std::string path = "data.result[" + std::to_string(i) + "]";
    if (item.type != NodeType::Mapping) return shape_error(path, "is not an object");
    PromSample sample;
    const Node* metric = item.find("metric");
    if (metric != nullptr) {  // Prometheus writes "metric": {} for a sample without labels
      if (metric->type != NodeType::Mapping) return shape_error(path + ".metric", "is not an object");
      for (const doc::Entry& e : metric->entries) {
        if (e.value.type != NodeType::String) {
          return shape_error(path + ".metric." + printable(e.key), "is " + std::string(doc::describe(e.value.type)) +
                                                            ", not a label value (a string)");
        }
        sample.labels[e.key] = e.value.text;
      }
    }
    const Node* value = item.find("value");
    if (value == nullptr) {
      if (item.find("histogram") != nullptr) {
        return shape_error(path, "is a native histogram sample; the autoscaler reads float samples only");
      }
      return shape_error(path + ".value", "is missing");
    }
    auto s = point(*value, path + ".value", std::move(sample));
    if (!s) return Unexpected{s.error()};
    out.push_back(std::move(*s));
  }
  return out;
}

// ---- the window ------------------------------------------------------------------------

SignalWindow::SignalWindow(std::int64_t retain_ms) : retain_ms_(std::max<std::int64_t>(retain_ms, 1)) {}

Expected<std::monostate> SignalWindow::add(Scrape scrape) {
  if (!scrapes_.empty() && scrape.t_ms <= scrapes_.back().t_ms) {
    return Unexpected{with_rule("scrape at " + std::to_string(scrape.t_ms) + " ms is not after the newest one (" +
                                    std::to_string(scrapes_.back().t_ms) + " ms)",
                                kRuleScrapeOrder)};
  }
  std::sort(scrape.replicas.begin(), scrape.replicas.end(),
            [](const ReplicaSignals& a, const ReplicaSignals& b) { return a.replica < b.replica; });
  scrapes_.push_back(std::move(scrape));
  // PromQL's range [t - retain, t] keeps a sample exactly at t - retain (Prometheus 2.x).
  const std::int64_t oldest = scrapes_.back().t_ms - retain_ms_;
  while (scrapes_.front().t_ms < oldest) scrapes_.pop_front();
  return std::monostate{};
}

std::optional<double> SignalWindow::quantile(double q, bool itl) const { return quantile_of(q, itl, nullptr); }

std::optional<double> SignalWindow::quantile_of(double q, bool itl, bool* had_rates) const {
  if (had_rates != nullptr) *had_rates = false;
  if (scrapes_.empty()) return std::nullopt;
  // One series per replica and bound, as Prometheus stores them. The autoscaler asks every
  // 15 s over a window of scrapes whose replicas nearly always show the same bounds: each
  // replica keeps its bounds sorted with one point list per bound, and a scrape with the
  // same bounds as the last appends by position without a lookup.
  struct ReplicaSeries {
    std::vector<double> bounds;  // sorted
    std::vector<std::vector<metrics::Point>> points;  // by bounds
  };
  std::map<std::string_view, ReplicaSeries> series;  // by replica name: the sum's order
  for (const Scrape& s : scrapes_) {
    for (const ReplicaSignals& r : s.replicas) {
      const auto& buckets = itl ? r.itl_buckets : r.ttft_buckets;
      if (buckets.empty()) continue;
      ReplicaSeries& rs = series[r.replica];
      const bool same = rs.bounds.size() == buckets.size() &&
                        std::equal(buckets.begin(), buckets.end(), rs.bounds.begin(),
                                   [](const Bucket& b, double bound) { return b.upper_bound == bound; });
      for (std::size_t i = 0; i < buckets.size(); ++i) {
        const Bucket& b = buckets[i];
        std::size_t at = i;
        if (!same) {
          const auto it = std::lower_bound(rs.bounds.begin(), rs.bounds.end(), b.upper_bound);
          at = static_cast<std::size_t>(it - rs.bounds.begin());
          if (it == rs.bounds.end() || *it != b.upper_bound) {
            rs.bounds.insert(it, b.upper_bound);
            rs.points.insert(rs.points.begin() + static_cast<std::ptrdiff_t>(at), std::vector<metrics::Point>{});
            rs.points[at].reserve(scrapes_.size());
          }
        }
        rs.points[at].push_back({s.t_ms, b.count});
      }
    }
  }
  const metrics::Range range{scrapes_.back().t_ms, retain_ms_};
  // sum by (le) (rate(...)): only the series that have a rate take part (added in replica
  // name order, then bound order).
  std::map<double, double> sums;
  for (const auto& [replica, rs] : series) {
    for (std::size_t i = 0; i < rs.bounds.size(); ++i) {
      if (const auto r = metrics::rate(rs.points[i], range)) {
        const auto [it, fresh] = sums.emplace(rs.bounds[i], *r);
        if (!fresh) it->second += *r;
      }
    }
  }
  if (sums.empty()) return std::nullopt;
  if (had_rates != nullptr) *had_rates = true;
  std::vector<Bucket> buckets;
  buckets.reserve(sums.size());
  for (const auto& entry : sums) buckets.push_back({entry.first, entry.second});
  const double v = metrics::bucket_quantile(q, std::move(buckets));
  if (std::isnan(v)) return std::nullopt;
  return v;
}

Observation SignalWindow::observe() const {
  Observation o;
  if (scrapes_.empty()) return o;
  const Scrape& newest = scrapes_.back();
  o.t_ms = newest.t_ms;
  o.replicas_reporting = static_cast<int>(newest.replicas.size());
  double kv_sum = 0;
  int kv_replicas = 0;
  for (const ReplicaSignals& r : newest.replicas) {
    if (r.waiting) o.queue_depth = o.queue_depth.value_or(0) + *r.waiting;
    if (r.running) o.running = o.running.value_or(0) + *r.running;
    if (r.kv_cache_usage) {
      kv_sum += *r.kv_cache_usage;
      ++kv_replicas;
    }
  }
  if (kv_replicas > 0) o.kv_cache_usage = kv_sum / kv_replicas;
  bool had_rates = false;
  o.ttft_p95_s = quantile_of(0.95, false, &had_rates);
  o.ttft_idle = !o.ttft_p95_s && had_rates;
  o.request_rate = request_rate();
  return o;
}

std::optional<double> SignalWindow::request_rate() const {
  if (scrapes_.empty()) return std::nullopt;
  std::map<std::string_view, std::vector<metrics::Point>> series;  // by replica name: the sum's order
  for (const Scrape& s : scrapes_) {
    for (const ReplicaSignals& r : s.replicas) {
      if (r.requests_finished) series[r.replica].push_back({s.t_ms, *r.requests_finished});
    }
  }
  const metrics::Range range{scrapes_.back().t_ms, retain_ms_};
  std::optional<double> sum;
  for (const auto& entry : series) {
    if (const auto r = metrics::rate(entry.second, range)) sum = sum.value_or(0) + *r;
  }
  return sum;
}

// ---- Prometheus' answers -------------------------------------------------------------------

namespace {

// The one sample of an aggregated query, or nothing for an empty result.
Expected<std::optional<double>> single(const std::vector<PromSample>& result, std::string_view query) {
  if (result.empty()) return std::optional<double>{};
  if (result.size() > 1) {
    return Unexpected{with_rule("the " + std::string(query) + " query returned " + std::to_string(result.size()) +
                                    " samples; it aggregates to one",
                                kRulePromShape)};
  }
  return std::optional<double>{result.front().value};
}

Expected<std::optional<double>> count(const std::vector<PromSample>& result, std::string_view query) {
  auto v = single(result, query);
  if (!v || !*v) return v;
  if (!std::isfinite(**v) || **v < 0) {
    return Unexpected{with_rule("the " + std::string(query) + " query returned " + metrics::format_value(**v) +
                                    ", not a count",
                                kRulePromValue)};
  }
  return v;
}

}  // namespace

Expected<Observation> from_prometheus(const PrometheusResults& results) {
  Observation o;
  o.t_ms = results.t_ms;
  auto pods = count(results.pods_reporting, "pods-reporting");
  if (!pods) return Unexpected{pods.error()};
  if (*pods) {
    if (**pods != std::floor(**pods) || **pods > 1e9) {
      return Unexpected{with_rule("the pods-reporting query returned " + metrics::format_value(**pods) +
                                      ", not a whole number of pods",
                                  kRulePromValue)};
    }
    o.replicas_reporting = static_cast<int>(**pods);
  }
  auto queue = count(results.queue_depth, "queue-depth");
  if (!queue) return Unexpected{queue.error()};
  o.queue_depth = *queue;
  if (results.running) {
    auto running = count(*results.running, "running");
    if (!running) return Unexpected{running.error()};
    o.running = *running;
  }
  if (results.request_rate) {
    auto rate = count(*results.request_rate, "request-rate");
    if (!rate) return Unexpected{rate.error()};
    o.request_rate = *rate;
  }
  auto ttft = single(results.ttft_p95, "ttft-p95");
  if (!ttft) return Unexpected{ttft.error()};
  if (*ttft && std::isnan(**ttft)) o.ttft_idle = true;
  if (*ttft && !std::isnan(**ttft)) {
    if (**ttft < 0 || std::isinf(**ttft)) {
      return Unexpected{with_rule("the ttft-p95 query returned " + metrics::format_value(**ttft) +
                                      ", not a latency in seconds",
                                  kRulePromValue)};
    }
    o.ttft_p95_s = **ttft;
  }
  auto kv = count(results.kv_cache, "kv-cache");
  if (!kv) return Unexpected{kv.error()};
  if (*kv && o.replicas_reporting > 0) {
    const double mean = **kv / o.replicas_reporting;
    if (mean > 1 + kKvUsageEpsilon) {
      return Unexpected{with_rule("the kv-cache query returned " + metrics::format_value(**kv) + " over " +
                                      std::to_string(o.replicas_reporting) + " pods, a mean usage above 1",
                                  kRulePromValue)};
    }
    o.kv_cache_usage = std::min(mean, 1.0);
  }
  return o;
}

}  // namespace gpubank::serving
