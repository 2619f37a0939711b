#include "twin/trace/csv.hpp"

#include <charconv>
#include <limits>

#include "core/quote.hpp"

namespace gpubank::twin::trace {

void TraceErrors::report(std::string_view rule, int line, int column, std::string path, std::string message) {
  ++count_;
  if (count_ > max_errors_ + 1) return;
  if (count_ == max_errors_ + 1) {
    out_->push_back(Diagnostic{Severity::Error, std::string(kRuleTooManyErrors), file_, {line, 0}, {}, {}, {},
                               "more than " + std::to_string(max_errors_) + " errors; the rest are not reported"});
    return;
  }
  out_->push_back(
      Diagnostic{Severity::Error, std::string(rule), file_, {line, column}, {}, {}, std::move(path), std::move(message)});
}

namespace {

// The tokenizer's cursor over the text, with line and column bookkeeping.
class Tokenizer {
 public:
  Tokenizer(std::string_view text, TraceErrors& errors, const CsvLimits& limits)
      : text_(text), errors_(&errors), limits_(limits) {}

  enum class Result { Record, End, Skipped, Fatal };

  // Reads the next non-empty record into `out`.
  Result next(CsvRecord& out) {
    out.fields.clear();
    out.columns.clear();
    // Empty lines are skipped.
    while (p_ < text_.size() && (text_[p_] == '\n' || (text_[p_] == '\r' && p_ + 1 < text_.size() && text_[p_ + 1] == '\n'))) {
      p_ += text_[p_] == '\r' ? 2 : 1;
      new_line();
    }
    if (p_ >= text_.size()) return Result::End;
    out.line = line_;
    while (true) {
      if (out.fields.size() >= limits_.max_fields) {
        error(kRuleCsvTooManyFields, out.line, column(), "more than " + std::to_string(limits_.max_fields) + " fields in one row");
        return skip_line();
      }
      out.columns.push_back(column());
      out.fields.emplace_back();
      std::string& field = out.fields.back();
      const Result r = p_ < text_.size() && text_[p_] == '"' ? quoted(out, field) : unquoted(out, field);
      if (r != Result::Record) return r;
      // After a field: ',' continues the record, a line end or the end of text ends it.
      if (p_ >= text_.size()) return Result::Record;
      if (text_[p_] == ',') {
        ++p_;
        continue;
      }
      // unquoted() and quoted() stop only at ',', a line end or the end.
      p_ += text_[p_] == '\r' ? 2 : 1;
      new_line();
      return Result::Record;
    }
  }

 private:
  Result unquoted(const CsvRecord& record, std::string& field) {
    const std::size_t start = p_;
    while (p_ < text_.size()) {
      const char c = text_[p_];
      if (c == ',' || c == '\n') break;
      if (c == '\r') {
        if (p_ + 1 < text_.size() && text_[p_ + 1] == '\n') break;
        error(kRuleCsvLineEnd, line_, column(), "a carriage return not followed by a line feed");
        return skip_line();
      }
      if (c == '"') {
        error(kRuleCsvQuote, line_, column(),
              "a double quote inside an unquoted field (RFC 4180: quote the whole field and double the quote)");
        return skip_line();
      }
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
        error(kRuleCsvControl, line_, column(), "control byte " + quote(std::string_view(&text_[p_], 1)) + " in a field");
        return skip_line();
      }
      ++p_;
      if (p_ - start > limits_.max_field_bytes) {
        error(kRuleCsvFieldTooLong, record.line, record.columns.back(),
              "a field longer than " + std::to_string(limits_.max_field_bytes) + " bytes");
        return skip_line();
      }
    }
    field.assign(text_.substr(start, p_ - start));
    return Result::Record;
  }

  Result quoted(const CsvRecord& record, std::string& field) {
    const int open_line = line_;
    const int open_column = column();
    ++p_;  // the opening quote
    while (true) {
      if (p_ >= text_.size()) {
        error(kRuleCsvQuote, open_line, open_column, "a quoted field is not closed before the end of the file");
        return Result::Fatal;
      }
      const char c = text_[p_];
      if (c == '"') {
        if (p_ + 1 < text_.size() && text_[p_ + 1] == '"') {
          field += '"';
          p_ += 2;
        } else {
          ++p_;
          break;
        }
      } else {
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\r' && c != '\n') {
          error(kRuleCsvControl, line_, column(), "control byte " + quote(std::string_view(&text_[p_], 1)) + " in a field");
          return skip_line();
        }
        field += c;
        ++p_;
        if (c == '\n') new_line();
      }
      if (field.size() > limits_.max_field_bytes) {
        error(kRuleCsvFieldTooLong, record.line, record.columns.back(),
              "a field longer than " + std::to_string(limits_.max_field_bytes) + " bytes");
        return skip_line();
      }
    }
    if (p_ >= text_.size() || text_[p_] == ',' || text_[p_] == '\n' ||
        (text_[p_] == '\r' && p_ + 1 < text_.size() && text_[p_ + 1] == '\n')) {
      return Result::Record;
    }
    error(kRuleCsvQuote, line_, column(), "text after the closing quote of a field (expected ',' or the end of the line)");
    return skip_line();
  }

  // Drops the rest of the current line (after an error in it).
  Result skip_line() {
    while (p_ < text_.size() && text_[p_] != '\n') ++p_;
    if (p_ < text_.size()) {
      ++p_;
      new_line();
    }
    return Result::Skipped;
  }

  void new_line() {
    ++line_;
    line_start_ = p_;
  }
  [[nodiscard]] int column() const { return static_cast<int>(p_ - line_start_) + 1; }
  void error(std::string_view rule, int line, int col, std::string message) {
    errors_->report(rule, line, col, "", std::move(message));
  }

  std::string_view text_;
  TraceErrors* errors_;
  const CsvLimits& limits_;
  std::size_t p_ = 0;
  std::size_t line_start_ = 0;
  int line_ = 1;
};

}  // namespace

std::optional<CsvTable> read_csv(std::string_view text, TraceErrors& errors, const CsvLimits& limits) {
  if (text.size() > limits.max_bytes) {
    errors.report(kRuleCsvTooLarge, 0, 0, "",
                  "the file has " + std::to_string(text.size()) + " bytes; the limit is " + std::to_string(limits.max_bytes));
    return std::nullopt;
  }
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  Tokenizer tokenizer(text, errors, limits);
  CsvTable table;
  CsvRecord record;
  bool have_header = false;
  while (true) {
    const auto r = tokenizer.next(record);
    if (r == Tokenizer::Result::Fatal) return std::nullopt;
    if (r == Tokenizer::Result::End) break;
    if (r == Tokenizer::Result::Skipped) {
      if (!have_header) return std::nullopt;  // without a header nothing below can be read
      continue;
    }
    if (!have_header) {
      have_header = true;
      table.header = record.fields;
      table.header_line = record.line;
      continue;
    }
    if (record.fields.size() != table.header.size()) {
      errors.report(kRuleCsvFieldCount, record.line, 0, "",
                    "the row has " + std::to_string(record.fields.size()) + " fields; the header has " +
                        std::to_string(table.header.size()));
      continue;
    }
    if (table.rows.size() >= limits.max_rows) {
      errors.report(kRuleCsvTooManyRows, record.line, 0, "",
                    "more than " + std::to_string(limits.max_rows) + " data rows");
      return std::nullopt;
    }
    table.rows.push_back(record);
  }
  if (!have_header) {
    errors.report(kRuleCsvEmpty, 0, 0, "", "the file has no header row");
    return std::nullopt;
  }
  return table;
}

bool check_header(const CsvTable& table, std::span<const std::string_view> expected, TraceErrors& errors) {
  bool same = table.header.size() == expected.size();
  for (std::size_t i = 0; same && i < expected.size(); ++i) same = table.header[i] == expected[i];
  if (same) return true;
  std::string want;
  for (const auto e : expected) want += (want.empty() ? "" : ",") + std::string(e);
  std::string got;
  for (const auto& h : table.header) got += (got.empty() ? "" : ",") + h;
  errors.report(kRuleCsvHeader, table.header_line, 1, "", "expected the header " + quote(want) + ", got " + quote(got));
  return false;
}

std::optional<std::int64_t> parse_int64(std::string_view text) {
  if (text.empty() || text.front() == '+') return std::nullopt;
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

bool FieldReader::integer(std::size_t column, std::int64_t min, std::int64_t max, std::int64_t& out) const {
  if (empty(column)) {
    report(column, kRuleRequired, name(column) + " must not be empty");
    return false;
  }
  std::optional<std::int64_t> value;
  if (!optional_integer(column, min, max, value)) return false;
  out = *value;
  return true;
}

bool FieldReader::optional_integer(std::size_t column, std::int64_t min, std::int64_t max,
                                   std::optional<std::int64_t>& out) const {
  out.reset();
  if (empty(column)) return true;
  const auto value = parse_int64(text(column));
  if (!value) {
    report(column, kRuleNumber, name(column) + " must be a whole number, got " + quote(text(column)));
    return false;
  }
  if (*value < min || *value > max) {
    report(column, kRuleOutOfRange,
           name(column) + " must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
               std::to_string(*value));
    return false;
  }
  out = value;
  return true;
}

bool FieldReader::required(std::size_t column) const {
  if (!empty(column)) return true;
  report(column, kRuleRequired, name(column) + " must not be empty");
  return false;
}

void FieldReader::report(std::size_t column, std::string_view rule, std::string message) const {
  errors_->report(rule, record_->line, record_->columns[column], name(column), std::move(message));
}

std::optional<std::int64_t> days_from_civil(std::int64_t year, unsigned month, unsigned day) {
  if (month < 1 || month > 12 || day < 1) return std::nullopt;
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  const unsigned last = month == 2 && leap ? 29 : kDays[month - 1];
  if (day > last) return std::nullopt;
  const std::int64_t y = year - (month <= 2 ? 1 : 0);
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

namespace {

// `count` digits at text[pos..]; nullopt when any is not a digit.
std::optional<unsigned> digits(std::string_view text, std::size_t pos, std::size_t count) {
  if (pos + count > text.size()) return std::nullopt;
  unsigned v = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + static_cast<unsigned>(text[i] - '0');
  }
  return v;
}

}  // namespace

std::optional<std::int64_t> parse_date(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
  const auto year = digits(text, 0, 4);
  const auto month = digits(text, 5, 2);
  const auto day = digits(text, 8, 2);
  if (!year || !month || !day || *year < 1970 || *year > 2200) return std::nullopt;
  return days_from_civil(*year, *month, *day);
}

std::optional<std::int64_t> parse_date_time(std::string_view text) {
  if (text.size() < 19 || text[10] != ' ' || text[13] != ':' || text[16] != ':') return std::nullopt;
  const auto days = parse_date(text.substr(0, 10));
  const auto hour = digits(text, 11, 2);
  const auto minute = digits(text, 14, 2);
  const auto second = digits(text, 17, 2);
  if (!days || !hour || !minute || !second || *hour > 23 || *minute > 59 || *second > 59) return std::nullopt;
  std::int64_t nanos = 0;
  if (text.size() > 19) {
    const std::size_t count = text.size() - 20;
    if (text[19] != '.' || count < 1 || count > 9) return std::nullopt;
    const auto fraction = digits(text, 20, count);
    if (!fraction) return std::nullopt;
    nanos = *fraction;
    for (std::size_t i = count; i < 9; ++i) nanos *= 10;
  }
  constexpr std::int64_t kSecond = 1'000'000'000;
  return ((*days * 24 + *hour) * 60 + *minute) * 60 * kSecond + *second * kSecond + nanos;
}

}  // namespace gpubank::twin::trace
