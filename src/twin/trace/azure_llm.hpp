// Azure's LLM inference trace 2023 (Azure/AzurePublicDataset, AzureLLMInferenceTrace_code
// and _conv): about an hour of requests, "TIMESTAMP,ContextTokens,GeneratedTokens" with
// times like "2023-11-16 18:15:46.6805900" (CRLF line ends). The requests become inference
// load for the twin; diurnal_repeat stretches the hour into days with a day/night cycle.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/expected.hpp"
#include "twin/trace/csv.hpp"

namespace gpubank::twin::trace {

inline constexpr std::int64_t kMaxAzureTokens = 10'000'000;

struct AzureRequest {
  std::int64_t t_ms = 0;       // since the first request (truncated)
  std::int64_t offset_ns = 0;  // since the first request, exact (the file has 100 ns steps)
  std::int64_t context_tokens = 0;
  std::int64_t generated_tokens = 0;
};

// The requests ordered by time; requests at the same instant keep the file's order (so do
// requests within one millisecond: the order is by offset_ns, never by t_ms alone). Time 0
// is the earliest request. Errors: header, tokenizer, malformed times, tokens outside
// 0..kMaxAzureTokens.
[[nodiscard]] std::optional<std::vector<AzureRequest>> read_azure_llm(std::string_view text, const std::string& file,
                                                                      Diagnostics& diagnostics,
                                                                      const CsvLimits& limits = {});

// Hourly factors of the arrival rate, hour 0 = 00:00-01:00 of virtual day 0.
using DiurnalCurve = std::array<double, 24>;

// The default curve: a daytime plateau from 09:00 to 20:00 (factor 0.85-1.0), evening and
// morning ramps, a night trough of 0.2 at 03:00-05:00. Factor 1.0 is the recorded hour's
// rate (the traces were recorded 18:15-19:14, inside the peak), so the peak replays the
// trace as recorded and the night a fifth of it.
[[nodiscard]] const DiurnalCurve& default_diurnal_curve();

inline constexpr std::uint64_t kDuplicateSpreadMs = 60'000;

struct DiurnalLimits {
  std::int64_t max_days = 366;
  double max_factor = 64;
  std::size_t max_requests = 20'000'000;  // an upper bound is checked before generating
};

// The hour-long trace repeated to fill `days` days, its rate scaled hour by hour.
//
// Rule: copy h (h = 0 .. 24 days - 1) of the trace starts at h hours; its requests are the
// trace's requests with t_ms < 1h (the public traces are 57-58 minutes; later ones are
// dropped), each taken floor(f) times plus once more with probability f - floor(f), where
// f = curve[h mod 24] (f < 1 thins, f > 1 duplicates). The draw is seeded by (seed, h,
// request index), so it is the same on every run. The first take keeps the request's time;
// each further take is shifted by a seeded offset in [0, kDuplicateSpreadMs) ms, kept
// inside its hour. A minute keeps the trace's minute-scale shape (every copy lands within
// the minute after its original) without the sub-second clumps of identical requests a
// shorter spread makes at large factors (at x6 within 1 s, each recorded request became a
// burst of six that no replica count served within a 1.5 s TTFT p95).
// Output sorted by time, ties in (hour, request, take) order; t_ms and offset_ns count from
// virtual time 0. Errors: days outside 1..max_days, a factor that is negative, not finite
// or above max_factor, or more than max_requests possible requests.
[[nodiscard]] Expected<std::vector<AzureRequest>> diurnal_repeat(const std::vector<AzureRequest>& requests,
                                                                 std::int64_t days, const DiurnalCurve& curve,
                                                                 std::uint64_t seed, const DiurnalLimits& limits = {});

}  // namespace gpubank::twin::trace
