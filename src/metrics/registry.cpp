#include "metrics/registry.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "metrics/names.hpp"
#include "metrics/number.hpp"

namespace gpubank::metrics {

namespace {

Status ok() { return std::monostate{}; }
Unexpected fail(std::string message, std::string_view rule) { return Unexpected{with_rule(std::move(message), rule)}; }

}  // namespace

// ---- FamilyBase ----

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), type_(type), label_names_(std::move(label_names)) {}

std::vector<std::string> FamilyBase::sample_names() const {
  if (type_ == MetricType::histogram) return {name_ + "_bucket", name_ + "_sum", name_ + "_count"};
  return {name_};
}

Family FamilyBase::collect() const {
  Family f{name_, type_, help_, {}};
  collect_samples(f.samples);
  return f;
}

std::optional<std::string> FamilyBase::check_values(const LabelValues& values) const {
  if (values.size() != label_names_.size()) {
    std::string names;
    for (const auto& n : label_names_) names += (names.empty() ? "" : ", ") + n;
    return with_rule(name_ + " has " + std::to_string(label_names_.size()) + " label" +
                         (label_names_.size() == 1 ? "" : "s") + (names.empty() ? "" : " (" + names + ")") + ", got " +
                         std::to_string(values.size()) + " value" + (values.size() == 1 ? "" : "s"),
                     kRuleLabelCount);
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (auto bad = check_utf8(values[i], name_ + ": the value of label " + label_names_[i])) return bad;
  }
  return std::nullopt;
}

std::vector<Label> FamilyBase::labels_of(const LabelValues& values) const {
  std::vector<Label> labels;
  labels.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) labels.push_back({label_names_[i], values[i]});
  return labels;
}

std::string FamilyBase::child_text(const LabelValues& values) const { return series_text(name_, labels_of(values)); }

// ---- scalar families ----

ScalarFamily::ScalarFamily(std::string name, std::string help, MetricType type, std::vector<std::string> label_names)
    : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)) {
  clear();
}

void ScalarFamily::clear() {
  children_.clear();
  if (label_names().empty()) children_[{}] = 0;
}

double& ScalarFamily::child(const LabelValues& values) { return children_[values]; }

Expected<double> ScalarFamily::value(const LabelValues& values) const {
  if (auto bad = check_values(values)) return Unexpected{*bad};
  const auto it = children_.find(values);
  if (it == children_.end()) return Unexpected{"no child " + child_text(values)};
  return it->second;
}

void ScalarFamily::collect_samples(std::vector<Sample>& out) const {
  for (const auto& [values, value] : children_) out.push_back({name(), labels_of(values), value, std::nullopt});
}

CounterFamily::CounterFamily(std::string name, std::string help, std::vector<std::string> label_names)
    : ScalarFamily(std::move(name), std::move(help), MetricType::counter, std::move(label_names)) {}

Status CounterFamily::inc(const LabelValues& values, double by) {
  if (auto bad = check_values(values)) return Unexpected{*bad};
  if (std::isnan(by) || by < 0) {
    return fail(child_text(values) + ": cannot add " + format_value(by) + ": a counter only goes up",
                kRuleCounterDecrease);
  }
  child(values) += by;
  return ok();
}

Status CounterFamily::set_total(const LabelValues& values, double total) {
  if (auto bad = check_values(values)) return Unexpected{*bad};
  const auto it = children_.find(values);
  const double current = it == children_.end() ? 0 : it->second;
  if (std::isnan(total) || total < current) {
    return fail(child_text(values) + ": cannot go from " + format_value(current) + " to " + format_value(total) +
                    ": a counter only goes up",
                kRuleCounterDecrease);
  }
  child(values) = total;
  return ok();
}

GaugeFamily::GaugeFamily(std::string name, std::string help, std::vector<std::string> label_names)
    : ScalarFamily(std::move(name), std::move(help), MetricType::gauge, std::move(label_names)) {}

Status GaugeFamily::set(const LabelValues& values, double value) {
  if (auto bad = check_values(values)) return Unexpected{*bad};
  child(values) = value;
  return ok();
}

Status GaugeFamily::add(const LabelValues& values, double delta) {
  if (auto bad = check_values(values)) return Unexpected{*bad};
  child(values) += delta;
  return ok();
}

Status GaugeFamily::set_all(const std::vector<std::pair<LabelValues, double>>& snapshot) {
  std::map<LabelValues, double> next;
  for (const auto& [values, value] : snapshot) {
    if (auto bad = check_values(values)) return Unexpected{*bad};
    if (!next.emplace(values, value).second) {
      return fail(child_text(values) + " is in the snapshot twice", kRuleSnapshot);
    }
  }
  clear();
  for (auto& [values, value] : next) children_[values] = value;
  return ok();
}

UntypedFamily::UntypedFamily(std::string name, std::string help, std::vector<std::string> label_names)
    : ScalarFamily(std::move(name), std::move(help), MetricType::untyped, std::move(label_names)) {}

Status UntypedFamily::set(const LabelValues& values, double value) {
  if (auto bad = check_values(values)) return Unexpected{*bad};
  child(values) = value;
  return ok();
}

// ---- histograms ----

HistogramFamily::HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                                 std::vector<double> upper_bounds)
    : FamilyBase(std::move(name), std::move(help), MetricType::histogram, std::move(label_names)),
      upper_bounds_(std::move(upper_bounds)) {
  clear();
}

void HistogramFamily::clear() {
  children_.clear();
  if (label_names().empty()) children_[{}].bucket_counts.assign(upper_bounds_.size() + 1, 0);
}

Status HistogramFamily::observe(const LabelValues& values, double observation) {
  if (auto bad = check_values(values)) return Unexpected{*bad};
  if (std::isnan(observation)) return fail(child_text(values) + ": cannot observe NaN", kRuleValue);
  Child& c = children_[values];
  if (c.bucket_counts.empty()) c.bucket_counts.assign(upper_bounds_.size() + 1, 0);
  // The first bucket whose bound is >= the observation (le: "less than or equal").
  const auto bucket = std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), observation) - upper_bounds_.begin();
  c.bucket_counts[static_cast<std::size_t>(bucket)] += 1;
  c.sum += observation;
  c.count += 1;
  return ok();
}

void HistogramFamily::collect_samples(std::vector<Sample>& out) const {
  const std::string bucket = name() + "_bucket";
  for (const auto& [values, c] : children_) {
    const std::vector<Label> labels = labels_of(values);
    double cumulative = 0;
    for (std::size_t i = 0; i < c.bucket_counts.size(); ++i) {
      cumulative += c.bucket_counts[i];
      std::vector<Label> with_le = labels;
      with_le.push_back({"le", i < upper_bounds_.size() ? format_value(upper_bounds_[i]) : "+Inf"});
      out.push_back({bucket, std::move(with_le), cumulative, std::nullopt});
    }
    out.push_back({name() + "_sum", labels, c.sum, std::nullopt});
    out.push_back({name() + "_count", labels, c.count, std::nullopt});
  }
}

// ---- Registry ----

namespace {

std::optional<std::string> check_bounds(std::string_view name, const std::vector<double>& bounds) {
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      return with_rule(std::string(name) + ": bucket bound " + format_value(bounds[i]) +
                           " is not a finite number (the +Inf bucket is always there)",
                       kRuleBucketBounds);
    }
    if (i > 0 && bounds[i] <= bounds[i - 1]) {
      return with_rule(std::string(name) + ": bucket bounds must increase strictly, but " + format_value(bounds[i]) +
                           " follows " + format_value(bounds[i - 1]),
                       kRuleBucketBounds);
    }
  }
  return std::nullopt;
}

}  // namespace

template <class F, class... Extra>
Expected<F*> Registry::add(std::string_view name, std::string_view help, MetricType type,
                           std::vector<std::string> label_names, Extra&&... extra) {
  if (auto bad = check_metric_name(name)) return Unexpected{*bad};
  if (help.empty()) return fail(std::string(name) + ": HELP text is empty: say what the metric measures", kRuleHelp);
  if (auto bad = check_utf8(help, std::string(name) + ": HELP text")) return Unexpected{*bad};
  std::set<std::string_view> seen;
  for (const std::string& label : label_names) {
    if (auto bad = check_label_name(label)) return Unexpected{std::string(name) + ": " + *bad};
    if (!seen.insert(label).second) {
      return fail(std::string(name) + ": label " + label + " is listed twice", kRuleDuplicateLabel);
    }
    if (type == MetricType::histogram && label == "le") {
      return fail(std::string(name) + ": label name \"le\" is the histogram's bucket label", kRuleReservedLabel);
    }
  }
  if (families_.contains(name)) {
    return fail("a family named " + std::string(name) + " is already registered", kRuleFamilyExists);
  }
  auto family = std::unique_ptr<F>(new F(std::string(name), std::string(help), std::move(label_names),
                                         std::forward<Extra>(extra)...));
  for (const std::string& series : family->sample_names()) {
    for (const auto& [other_name, other] : families_) {
      const auto others = other->sample_names();
      if (std::find(others.begin(), others.end(), series) != others.end()) {
        return fail(std::string(name) + " would write the series " + series + ", which " + other_name + " writes",
                    kRuleNameCollision);
      }
    }
  }
  F* raw = family.get();
  families_.emplace(std::string(name), std::move(family));
  return raw;
}

Expected<CounterFamily*> Registry::counter(std::string_view name, std::string_view help,
                                           std::vector<std::string> label_names) {
  return add<CounterFamily>(name, help, MetricType::counter, std::move(label_names));
}

Expected<GaugeFamily*> Registry::gauge(std::string_view name, std::string_view help,
                                       std::vector<std::string> label_names) {
  return add<GaugeFamily>(name, help, MetricType::gauge, std::move(label_names));
}

Expected<UntypedFamily*> Registry::untyped(std::string_view name, std::string_view help,
                                           std::vector<std::string> label_names) {
  return add<UntypedFamily>(name, help, MetricType::untyped, std::move(label_names));
}

Expected<HistogramFamily*> Registry::histogram(std::string_view name, std::string_view help,
                                               std::vector<std::string> label_names, std::vector<double> upper_bounds) {
  if (auto bad = check_metric_name(name)) return Unexpected{*bad};
  if (auto bad = check_bounds(name, upper_bounds)) return Unexpected{*bad};
  return add<HistogramFamily>(name, help, MetricType::histogram, std::move(label_names), std::move(upper_bounds));
}

const FamilyBase* Registry::find(std::string_view name) const {
  const auto it = families_.find(name);
  return it == families_.end() ? nullptr : it->second.get();
}

Exposition Registry::collect() const {
  Exposition e;
  e.families.reserve(families_.size());
  for (const auto& [name, family] : families_) e.families.push_back(family->collect());
  return e;
}

std::string write_text(const Registry& registry) {
  auto text = write_text(registry.collect());
  // The registry checked every name and value on the way in; a refusal is a bug here.
  if (!text) throw std::logic_error("metrics registry wrote an invalid exposition: " + text.error());
  return std::move(text).value();
}

}  // namespace gpubank::metrics
