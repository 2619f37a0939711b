// The CSV tokenizer every trace reader shares, and the typed-field helpers they use.
//
// It reads RFC 4180 CSV: fields separated by ',', records ended by LF or CRLF (the Azure
// files use CRLF, the others LF; the last record may lack its line end), fields in double
// quotes may hold ',', CR, LF and doubled quotes (none of the public trace files quote, but
// a re-exported file may). A UTF-8 byte order mark is skipped; empty lines are skipped.
// Hostile input is bounded (bytes, rows, fields per row, bytes per field, errors reported)
// and every problem becomes a Diagnostic with the line, the column (and its header name
// once known) and a rule id below; the tokenizer never throws on input and never crashes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"

namespace gpubank::twin::trace {

// Tokenizer rules.
inline constexpr std::string_view kRuleCsvTooLarge = "trace.csv.too-large";
inline constexpr std::string_view kRuleCsvTooManyRows = "trace.csv.too-many-rows";
inline constexpr std::string_view kRuleCsvTooManyFields = "trace.csv.too-many-fields";
inline constexpr std::string_view kRuleCsvFieldTooLong = "trace.csv.field-too-long";
inline constexpr std::string_view kRuleCsvQuote = "trace.csv.quote";          // RFC 4180 quoting broken
inline constexpr std::string_view kRuleCsvLineEnd = "trace.csv.line-end";     // CR without LF
inline constexpr std::string_view kRuleCsvControl = "trace.csv.control-byte"; // NUL and other control bytes
inline constexpr std::string_view kRuleCsvFieldCount = "trace.csv.field-count";
inline constexpr std::string_view kRuleCsvHeader = "trace.csv.header";
inline constexpr std::string_view kRuleCsvEmpty = "trace.csv.empty";
inline constexpr std::string_view kRuleTooManyErrors = "trace.too-many-errors";
// Field rules (the readers').
inline constexpr std::string_view kRuleRequired = "trace.required";
inline constexpr std::string_view kRuleNumber = "trace.number";
inline constexpr std::string_view kRuleOutOfRange = "trace.out-of-range";
inline constexpr std::string_view kRuleTime = "trace.time";
inline constexpr std::string_view kRuleEnum = "trace.enum";
inline constexpr std::string_view kRuleName = "trace.name";
inline constexpr std::string_view kRuleDuplicate = "trace.duplicate";
inline constexpr std::string_view kRuleOrder = "trace.order";
inline constexpr std::string_view kRuleTotal = "trace.total-mismatch";

struct CsvLimits {
  std::size_t max_bytes = std::size_t{64} << 20;  // the largest public file is 2.9 MB
  std::size_t max_rows = 1'000'000;               // data rows; Philly's node sequence has 105,644
  std::size_t max_fields = 256;                   // per row
  std::size_t max_field_bytes = 1024;             // per field, unquoted
  std::size_t max_errors = 50;                    // then one trace.too-many-errors and silence
};

// Collects a reader's errors into Diagnostics, at most `max_errors` of them (a file with a
// million bad lines must not make a million diagnostics).
class TraceErrors {
 public:
  TraceErrors(std::string file, Diagnostics& out, std::size_t max_errors)
      : file_(std::move(file)), out_(&out), max_errors_(max_errors) {}
  // `path` is the column's header name (or "" for line-level problems).
  void report(std::string_view rule, int line, int column, std::string path, std::string message);
  [[nodiscard]] std::size_t count() const { return count_; }
  [[nodiscard]] const std::string& file() const { return file_; }

 private:
  std::string file_;
  Diagnostics* out_;
  std::size_t max_errors_;
  std::size_t count_ = 0;
};

struct CsvRecord {
  int line = 0;                     // 1-based line the record starts on
  std::vector<std::string> fields;  // unquoted
  std::vector<int> columns;         // 1-based byte column of each field's start
};

struct CsvTable {
  std::vector<std::string> header;
  int header_line = 0;
  std::vector<CsvRecord> rows;  // only rows without tokenizer errors, each with header.size() fields
};

// Tokenizes `text`: the first non-empty record is the header. Rows with a tokenizer error
// or the wrong number of fields are reported and left out; nullopt after a fatal problem
// (too large, too many rows, an unterminated quote, no header). Callers decide with
// errors.count() whether the rows that remain may be used.
[[nodiscard]] std::optional<CsvTable> read_csv(std::string_view text, TraceErrors& errors, const CsvLimits& limits = {});

// Whether the header is exactly `expected`; else reports kRuleCsvHeader naming the
// expected columns.
bool check_header(const CsvTable& table, std::span<const std::string_view> expected, TraceErrors& errors);

// Typed access to one record's fields, reporting problems with the column's name.
class FieldReader {
 public:
  FieldReader(const CsvTable& table, const CsvRecord& record, TraceErrors& errors)
      : table_(&table), record_(&record), errors_(&errors) {}

  [[nodiscard]] std::string_view text(std::size_t column) const { return record_->fields[column]; }
  [[nodiscard]] bool empty(std::size_t column) const { return record_->fields[column].empty(); }
  // A decimal integer in [min, max] (optional '-', no '+', no spaces).
  bool integer(std::size_t column, std::int64_t min, std::int64_t max, std::int64_t& out) const;
  // The same, empty allowed (nullopt).
  bool optional_integer(std::size_t column, std::int64_t min, std::int64_t max, std::optional<std::int64_t>& out) const;
  // Non-empty text.
  bool required(std::size_t column) const;
  void report(std::size_t column, std::string_view rule, std::string message) const;

  [[nodiscard]] int line() const { return record_->line; }
  [[nodiscard]] const std::string& name(std::size_t column) const { return table_->header[column]; }

 private:
  const CsvTable* table_;
  const CsvRecord* record_;
  TraceErrors* errors_;
};

// Parses a decimal integer (optional '-', digits only); nullopt on anything else or overflow.
[[nodiscard]] std::optional<std::int64_t> parse_int64(std::string_view text);

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil);
// nullopt for a day that does not exist (month 13, Feb 30).
[[nodiscard]] std::optional<std::int64_t> days_from_civil(std::int64_t year, unsigned month, unsigned day);

// "YYYY-MM-DD": days since the epoch; nullopt when malformed or outside the years
// 1970..2200.
[[nodiscard]] std::optional<std::int64_t> parse_date(std::string_view text);
// "YYYY-MM-DD HH:MM:SS[.fraction]" (1-9 fraction digits): nanoseconds since the epoch,
// read as UTC; nullopt when malformed or outside the years 1970..2200.
[[nodiscard]] std::optional<std::int64_t> parse_date_time(std::string_view text);

}  // namespace gpubank::twin::trace
