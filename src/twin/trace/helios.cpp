#include "twin/trace/helios.hpp"

#include <set>

#include "core/quote.hpp"

namespace gpubank::twin::trace {

std::optional<HeliosGpuNumbers> read_helios_gpu_numbers(std::string_view text, const std::string& file,
                                                        Diagnostics& diagnostics, const CsvLimits& limits) {
  TraceErrors errors(file, diagnostics, limits.max_errors);
  const auto table = read_csv(text, errors, limits);
  if (!table) return std::nullopt;
  const auto& header = table->header;
  if (header.size() < 3 || header.front() != "date" || header.back() != "total") {
    errors.report(kRuleCsvHeader, table->header_line, 1, "",
                  "expected the header \"date,<virtual cluster>,...,total\" with at least one virtual cluster");
    return std::nullopt;
  }
  HeliosGpuNumbers out;
  std::set<std::string, std::less<>> seen;
  for (std::size_t c = 1; c + 1 < header.size(); ++c) {
    if (header[c].empty() || !seen.insert(header[c]).second) {
      errors.report(kRuleCsvHeader, table->header_line, 0, header[c],
                    "virtual cluster " + quote(header[c]) + " in the header is empty or repeated");
    }
    out.vcs.push_back(header[c]);
  }
  if (errors.count() > 0) return std::nullopt;
  const std::size_t total_column = header.size() - 1;
  std::optional<std::int64_t> previous;
  for (const auto& record : table->rows) {
    const FieldReader row(*table, record, errors);
    HeliosDay d;
    bool ok = row.required(0);
    if (ok) {
      const auto day = parse_date(record.fields[0]);
      if (!day) {
        row.report(0, kRuleTime, "date must be \"YYYY-MM-DD\" (years 1970-2200), got " + quote(record.fields[0]));
        ok = false;
      } else {
        if (previous && *day <= *previous) {
          row.report(0, kRuleOrder, "date " + record.fields[0] + " is not after the previous row's");
          ok = false;
        }
        previous = *day;
        d.day = *day;
        d.date = record.fields[0];
      }
    }
    std::int64_t sum = 0;
    d.gpus.resize(out.vcs.size());
    for (std::size_t c = 1; c < total_column; ++c) {
      const bool field_ok = row.integer(c, 0, kMaxHeliosGpus, d.gpus[c - 1]);
      ok = field_ok && ok;
      sum += field_ok ? d.gpus[c - 1] : 0;
    }
    if (row.integer(total_column, 0, kMaxHeliosGpus * 256, d.total)) {
      if (ok && d.total != sum) {
        row.report(total_column, kRuleTotal,
                   "total " + std::to_string(d.total) + " is not the sum of the row's counts, " + std::to_string(sum));
        ok = false;
      }
    } else {
      ok = false;
    }
    if (ok) out.days.push_back(std::move(d));
  }
  if (errors.count() > 0) return std::nullopt;
  return out;
}

}  // namespace gpubank::twin::trace
