// Fuzzes the Prometheus text parser and, through it, the writer and the histogram maths.
// Whatever the input: no crash, no undefined behaviour, and an error is one line of UTF-8
// that starts with its position. Whatever parses must write back (write_text accepts all
// the parser returns) and read back the same (parse_text(write_text(x)) == x); every
// histogram family must group into series whose quantiles can be taken.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/utf8.hpp"
#include "metrics/histogram.hpp"
#include "metrics/text_parser.hpp"

namespace {

using namespace gpubank::metrics;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "\nmetrics_text_fuzzer: %s\n%s\n", what, detail.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ParseLimits limits;
  limits.max_bytes = 1 << 16;
  limits.max_lines = 4096;
  limits.max_labels_per_sample = 16;
  limits.max_label_value_bytes = 256;

  const auto parsed = parse_text(text, limits);
  if (!parsed) {
    const std::string& message = parsed.error();
    if (!message.starts_with("line ") || message.find('\n') != std::string::npos || !gpubank::is_utf8(message) ||
        !message.ends_with("]")) {
      fail("malformed error message", message);
    }
    return 0;
  }

  const auto written = write_text(*parsed);
  if (!written) fail("write_text refused what parse_text returned", written.error());
  const auto again = parse_text(*written);
  if (!again) fail("the written text does not parse", again.error() + "\n--- text:\n" + *written);
  if (!(*again == *parsed)) fail("the written text reads back differently", *written);

  for (const Family& family : parsed->families) {
    if (family.type != MetricType::histogram) continue;
    const auto children = histogram_children(family);
    if (!children) fail("histogram_children refused a parsed histogram", children.error());
    for (const HistogramChild& child : *children) {
      for (const double q : {0.0, 0.5, 0.95, 1.0}) (void)bucket_quantile(q, child.buckets);
    }
  }
  return 0;
}
