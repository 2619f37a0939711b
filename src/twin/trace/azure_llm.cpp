#include "twin/trace/azure_llm.hpp"

#include <algorithm>
#include <cmath>

#include "core/quote.hpp"
#include "twin/trace/seeded.hpp"

namespace gpubank::twin::trace {

namespace {

constexpr std::array<std::string_view, 3> kColumns{"TIMESTAMP", "ContextTokens", "GeneratedTokens"};
constexpr std::int64_t kNsPerMs = 1'000'000;
constexpr std::int64_t kHourMs = 3'600'000;

}  // namespace

std::optional<std::vector<AzureRequest>> read_azure_llm(std::string_view text, const std::string& file,
                                                        Diagnostics& diagnostics, const CsvLimits& limits) {
  TraceErrors errors(file, diagnostics, limits.max_errors);
  const auto table = read_csv(text, errors, limits);
  if (!table || !check_header(*table, kColumns, errors)) return std::nullopt;
  struct Timed {
    std::int64_t ns;
    AzureRequest request;
  };
  std::vector<Timed> timed;
  timed.reserve(table->rows.size());
  for (const auto& record : table->rows) {
    const FieldReader row(*table, record, errors);
    Timed t{0, {}};
    bool ok = row.required(0);
    if (ok) {
      const auto ns = parse_date_time(record.fields[0]);
      if (!ns) {
        row.report(0, kRuleTime,
                   "TIMESTAMP must be \"YYYY-MM-DD HH:MM:SS[.fraction]\" (years 1970-2200), got " + quote(record.fields[0]));
        ok = false;
      } else {
        t.ns = *ns;
      }
    }
    ok = row.integer(1, 0, kMaxAzureTokens, t.request.context_tokens) && ok;
    ok = row.integer(2, 0, kMaxAzureTokens, t.request.generated_tokens) && ok;
    if (ok) timed.push_back(t);
  }
  if (errors.count() > 0) return std::nullopt;
  std::stable_sort(timed.begin(), timed.end(), [](const Timed& a, const Timed& b) { return a.ns < b.ns; });
  std::vector<AzureRequest> out;
  out.reserve(timed.size());
  const std::int64_t first = timed.empty() ? 0 : timed.front().ns;
  for (auto& t : timed) {
    t.request.offset_ns = t.ns - first;  // < 230 years: fits
    t.request.t_ms = t.request.offset_ns / kNsPerMs;
    out.push_back(t.request);
  }
  return out;
}

const DiurnalCurve& default_diurnal_curve() {
  static const DiurnalCurve curve{
      0.35, 0.30, 0.25, 0.20, 0.20, 0.25,  // 00-06: the night trough
      0.35, 0.50, 0.70,                    // 06-09: morning ramp
      0.90, 1.00, 1.00, 0.95, 0.95, 1.00, 1.00, 1.00, 0.95, 0.90, 0.85,  // 09-20: daytime peak
      0.70, 0.55, 0.45,                    // 20-23: evening ramp
      0.40,                                // 23-24
  };
  return curve;
}

Expected<std::vector<AzureRequest>> diurnal_repeat(const std::vector<AzureRequest>& requests, std::int64_t days,
                                                   const DiurnalCurve& curve, std::uint64_t seed,
                                                   const DiurnalLimits& limits) {
  if (days < 1 || days > limits.max_days) {
    return Unexpected{"days must be between 1 and " + std::to_string(limits.max_days) + ", got " + std::to_string(days)};
  }
  double takes_per_day = 0;
  double expected_per_day = 0;
  for (std::size_t h = 0; h < curve.size(); ++h) {
    const double f = curve[h];
    if (!std::isfinite(f) || f < 0 || f > limits.max_factor) {
      return Unexpected{"the factor of hour " + std::to_string(h) + " must be between 0 and " +
                        std::to_string(limits.max_factor)};
    }
    takes_per_day += std::ceil(f);
    expected_per_day += f;
  }
  std::size_t in_hour = 0;
  for (const auto& r : requests) in_hour += r.t_ms >= 0 && r.t_ms < kHourMs ? 1 : 0;
  const double bound = takes_per_day * static_cast<double>(days) * static_cast<double>(in_hour);
  if (bound > static_cast<double>(limits.max_requests)) {
    return Unexpected{"the repeat could make up to " + std::to_string(static_cast<std::int64_t>(bound)) +
                      " requests; the limit is " + std::to_string(limits.max_requests)};
  }
  std::vector<AzureRequest> out;
  out.reserve(static_cast<std::size_t>(expected_per_day * static_cast<double>(days) * static_cast<double>(in_hour) * 1.01));
  const std::int64_t hours = days * 24;
  for (std::int64_t h = 0; h < hours; ++h) {
    const double f = curve[static_cast<std::size_t>(h % 24)];
    const auto whole = static_cast<std::int64_t>(std::floor(f));
    const double extra = f - static_cast<double>(whole);
    const std::int64_t hour_start_ns = h * kHourMs * kNsPerMs;
    const std::int64_t hour_end_ns = hour_start_ns + kHourMs * kNsPerMs;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const AzureRequest& r = requests[i];
      if (r.t_ms < 0 || r.t_ms >= kHourMs) continue;
      // offset_ns when it agrees with t_ms (requests from read_azure_llm), else t_ms.
      const std::int64_t offset =
          r.offset_ns >= 0 && r.offset_ns / kNsPerMs == r.t_ms ? r.offset_ns : r.t_ms * kNsPerMs;
      const bool one_more =
          extra > 0 && unit_interval(seeded_hash(seed, "azure-thin", static_cast<std::uint64_t>(h), i, 0)) < extra;
      const std::int64_t takes = whole + (one_more ? 1 : 0);
      for (std::int64_t c = 0; c < takes; ++c) {
        AzureRequest copy = r;
        std::int64_t ns = hour_start_ns + offset;
        if (c > 0) {
          const auto jitter_ms = static_cast<std::int64_t>(
              below(seeded_hash(seed, "azure-dup", static_cast<std::uint64_t>(h), i, static_cast<std::uint64_t>(c)),
                    kDuplicateSpreadMs));
          ns = std::min(ns + jitter_ms * kNsPerMs, hour_end_ns - 1);
        }
        copy.offset_ns = ns;
        copy.t_ms = ns / kNsPerMs;
        out.push_back(copy);
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const AzureRequest& a, const AzureRequest& b) { return a.offset_ns < b.offset_ns; });
  return out;
}

}  // namespace gpubank::twin::trace
