// Metric families owned by the caller: counters, gauges, histograms and untyped families,
// each with HELP text and a fixed list of label names, and one child per tuple of label
// values. There is no global registry; whoever exposes metrics owns one.
//
// Not thread-safe: the twin is single-threaded, and `gpubank up` renders under its own
// lock. Family pointers stay valid as long as the registry (also when it is moved).
//
//   metrics::Registry registry;
//   auto reclaims = registry.counter("gpubank_reclaims_total", "Reclaims by result.", {"result"});
//   if (auto done = (*reclaims)->inc({"checkpointed"}); !done) log(done.error());
//   std::string text = metrics::write_text(registry);
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/expected.hpp"
#include "metrics/exposition.hpp"

namespace gpubank::metrics {

// Success, or an error sentence ending in "[rule]".
using Status = Expected<std::monostate>;

using LabelValues = std::vector<std::string>;

// Rule ids of the registry's checks (names: see names.hpp).
inline constexpr std::string_view kRuleFamilyExists = "metrics.family-exists";
inline constexpr std::string_view kRuleNameCollision = "metrics.name-collision";
inline constexpr std::string_view kRuleHelp = "metrics.help";
inline constexpr std::string_view kRuleLabelCount = "metrics.label-count";
inline constexpr std::string_view kRuleCounterDecrease = "metrics.counter-decrease";
inline constexpr std::string_view kRuleValue = "metrics.value";
inline constexpr std::string_view kRuleBucketBounds = "metrics.bucket-bounds";
inline constexpr std::string_view kRuleSnapshot = "metrics.snapshot";

// What every family shares. Children are kept sorted by their label values.
class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& help() const { return help_; }
  [[nodiscard]] MetricType type() const { return type_; }
  [[nodiscard]] const std::vector<std::string>& label_names() const { return label_names_; }
  // The series names this family writes (its name, or name_bucket/_sum/_count).
  [[nodiscard]] std::vector<std::string> sample_names() const;

  // The family as the writer renders it.
  [[nodiscard]] Family collect() const;

 protected:
  FamilyBase(std::string name, std::string help, MetricType type, std::vector<std::string> label_names);
  // Empty when `values` fit the label names (count and UTF-8), else why not.
  [[nodiscard]] std::optional<std::string> check_values(const LabelValues& values) const;
  // name{label="value",...} of one child, for messages.
  [[nodiscard]] std::string child_text(const LabelValues& values) const;
  [[nodiscard]] std::vector<Label> labels_of(const LabelValues& values) const;
  virtual void collect_samples(std::vector<Sample>& out) const = 0;

 private:
  std::string name_;
  std::string help_;
  MetricType type_;
  std::vector<std::string> label_names_;
};

// A value per child: counters, gauges, untyped. Families without labels start with their
// one child at 0, so the series exists from the first scrape.
class ScalarFamily : public FamilyBase {
 public:
  // The child's value, or an error when it does not exist or the values do not fit.
  [[nodiscard]] Expected<double> value(const LabelValues& values) const;
  // Removes every child (label-less families keep theirs, at 0).
  void clear();

 protected:
  ScalarFamily(std::string name, std::string help, MetricType type, std::vector<std::string> label_names);
  [[nodiscard]] double& child(const LabelValues& values);
  void collect_samples(std::vector<Sample>& out) const override;
  std::map<LabelValues, double> children_;
};

class CounterFamily final : public ScalarFamily {
 public:
  // Adds `by` (>= 0, not NaN): counters only go up.
  Status inc(const LabelValues& values, double by = 1);
  // Sets the running total when it is recomputed from a ledger: it may not go down.
  Status set_total(const LabelValues& values, double total);

 private:
  friend class Registry;
  CounterFamily(std::string name, std::string help, std::vector<std::string> label_names);
};

class GaugeFamily final : public ScalarFamily {
 public:
  Status set(const LabelValues& values, double value);
  Status add(const LabelValues& values, double delta);
  // Replaces every child with the snapshot (positions recomputed each cycle): children not
  // in it disappear. All or nothing: a snapshot with an invalid or repeated tuple changes
  // nothing.
  Status set_all(const std::vector<std::pair<LabelValues, double>>& snapshot);

 private:
  friend class Registry;
  GaugeFamily(std::string name, std::string help, std::vector<std::string> label_names);
};

class UntypedFamily final : public ScalarFamily {
 public:
  Status set(const LabelValues& values, double value);

 private:
  friend class Registry;
  UntypedFamily(std::string name, std::string help, std::vector<std::string> label_names);
};

class HistogramFamily final : public FamilyBase {
 public:
  // An observation counts in every bucket whose bound is >= it (and in +Inf); NaN is
  // refused, infinities are counted like client_golang does.
  Status observe(const LabelValues& values, double observation);
  [[nodiscard]] const std::vector<double>& upper_bounds() const { return upper_bounds_; }
  void clear();

 private:
  friend class Registry;
  // `upper_bounds`: strictly increasing finite numbers (the registry checks); +Inf is implicit.
  HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  std::vector<double> upper_bounds);
  struct Child {
    std::vector<double> bucket_counts;  // per bound, not cumulative; the last is +Inf
    double sum = 0;
    double count = 0;
  };
  void collect_samples(std::vector<Sample>& out) const override;
  std::vector<double> upper_bounds_;
  std::map<LabelValues, Child> children_;
};

class Registry {
 public:
  Registry() = default;
  Registry(Registry&&) = default;
  Registry& operator=(Registry&&) = default;

  // Registering checks the metric name, the label names (valid, not reserved, not
  // repeated, not "le" for a histogram), non-empty UTF-8 help, and that no family of the
  // registry writes a series of the same name ("x_count" next to a histogram "x").
  Expected<CounterFamily*> counter(std::string_view name, std::string_view help, std::vector<std::string> label_names = {});
  Expected<GaugeFamily*> gauge(std::string_view name, std::string_view help, std::vector<std::string> label_names = {});
  Expected<UntypedFamily*> untyped(std::string_view name, std::string_view help, std::vector<std::string> label_names = {});
  Expected<HistogramFamily*> histogram(std::string_view name, std::string_view help, std::vector<std::string> label_names,
                                       std::vector<double> upper_bounds);

  [[nodiscard]] const FamilyBase* find(std::string_view name) const;

  // Every family, sorted by name, each with its children sorted by label values.
  [[nodiscard]] Exposition collect() const;

 private:
  template <class F, class... Extra>
  Expected<F*> add(std::string_view name, std::string_view help, MetricType type, std::vector<std::string> label_names,
                   Extra&&... extra);
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_;
};

// The registry in text format 0.0.4 (write_text of collect()): deterministic, byte for
// byte, for the same contents.
[[nodiscard]] std::string write_text(const Registry& registry);

}  // namespace gpubank::metrics
