// The shared CSV tokenizer: RFC 4180 quoting, CRLF, limits, and one small bad input per
// rule, each reported with its line, column and rule id.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "twin/trace/csv.hpp"

namespace gpubank::twin::trace {
namespace {

struct Read {
  std::optional<CsvTable> table;
  Diagnostics diagnostics;
  std::size_t errors = 0;
};

Read read(std::string_view text, const CsvLimits& limits = {}) {
  Read r;
  TraceErrors errors("t.csv", r.diagnostics, limits.max_errors);
  r.table = read_csv(text, errors, limits);
  r.errors = errors.count();
  return r;
}

TEST(Csv, ReadsPlainRowsWithLfOrCrlfAndNoFinalLineEnd) {
  for (const std::string_view text : {"a,b\n1,2\n3,\n", "a,b\r\n1,2\r\n3,", "\xEF\xBB\xBF" "a,b\n\n1,2\n3,\n\n"}) {
    const auto r = read(text);
    ASSERT_TRUE(r.table) << text;
    EXPECT_EQ(r.errors, 0u);
    EXPECT_EQ(r.table->header, (std::vector<std::string>{"a", "b"}));
    ASSERT_EQ(r.table->rows.size(), 2u);
    EXPECT_EQ(r.table->rows[0].fields, (std::vector<std::string>{"1", "2"}));
    EXPECT_EQ(r.table->rows[1].fields, (std::vector<std::string>{"3", ""}));  // an empty last field
  }
}

TEST(Csv, LinesAndColumnsAreOneBased) {
  const auto r = read("name,value\nx,10\nlonger,7\n");
  ASSERT_TRUE(r.table);
  EXPECT_EQ(r.table->header_line, 1);
  EXPECT_EQ(r.table->rows[1].line, 3);
  EXPECT_EQ(r.table->rows[1].columns, (std::vector<int>{1, 8}));  // "longer," is 7 bytes
}

TEST(Csv, QuotedFieldsFollowRfc4180) {
  const auto r = read("a,b\n\"x, y\",\"say \"\"hi\"\"\"\n\"two\nlines\",2\nlast,\"\"\n");
  ASSERT_TRUE(r.table);
  EXPECT_EQ(r.errors, 0u);
  ASSERT_EQ(r.table->rows.size(), 3u);
  EXPECT_EQ(r.table->rows[0].fields, (std::vector<std::string>{"x, y", "say \"hi\""}));
  EXPECT_EQ(r.table->rows[1].fields, (std::vector<std::string>{"two\nlines", "2"}));
  EXPECT_EQ(r.table->rows[1].line, 3);
  EXPECT_EQ(r.table->rows[2].line, 5);  // the quoted line feed counted
  EXPECT_EQ(r.table->rows[2].fields, (std::vector<std::string>{"last", ""}));
}

void expect_rule(const Read& r, std::string_view rule, int line) {
  ASSERT_FALSE(r.diagnostics.empty());
  EXPECT_EQ(r.diagnostics.front().rule, rule) << r.diagnostics.front().to_string();
  EXPECT_EQ(r.diagnostics.front().pos.line, line) << r.diagnostics.front().to_string();
  EXPECT_EQ(r.diagnostics.front().file, "t.csv");
}

TEST(Csv, EachTokenizerRuleOnASmallBadInput) {
  expect_rule(read("a,b\n1,2\"x\n"), kRuleCsvQuote, 2);             // quote inside an unquoted field
  expect_rule(read("a,b\n\"1\"x,2\n"), kRuleCsvQuote, 2);            // text after the closing quote
  expect_rule(read("a,b\n1,\"open\n"), kRuleCsvQuote, 2);            // never closed
  expect_rule(read("a,b\n1\r2,3\n"), kRuleCsvLineEnd, 2);            // CR without LF
  expect_rule(read(std::string_view("a,b\n1,\0\n", 8)), kRuleCsvControl, 2);
  expect_rule(read("a,b\n1,2,3\n"), kRuleCsvFieldCount, 2);
  expect_rule(read(""), kRuleCsvEmpty, 0);
  expect_rule(read("\n\r\n"), kRuleCsvEmpty, 0);
  CsvLimits small;
  small.max_bytes = 8;
  expect_rule(read("a,b\n1,2\n3,4\n", small), kRuleCsvTooLarge, 0);
  small = {};
  small.max_rows = 1;
  expect_rule(read("a,b\n1,2\n3,4\n", small), kRuleCsvTooManyRows, 3);
  small = {};
  small.max_fields = 2;
  expect_rule(read("a,b\n1,2,3\n", small), kRuleCsvTooManyFields, 2);
  small = {};
  small.max_field_bytes = 3;
  expect_rule(read("a,b\n1,2345\n", small), kRuleCsvFieldTooLong, 2);
  expect_rule(read("a,b\n1,\"2345\"\n", small), kRuleCsvFieldTooLong, 2);
}

TEST(Csv, BadRowsAreLeftOutAndTheRestRead) {
  const auto r = read("a,b\n1,2\n3\n4,5\n\"x\"y,6\n7,8\n");
  ASSERT_TRUE(r.table);
  EXPECT_EQ(r.errors, 2u);  // line 3 (one field) and line 5 (quote)
  ASSERT_EQ(r.table->rows.size(), 3u);
  EXPECT_EQ(r.table->rows[2].fields[0], "7");
  EXPECT_EQ(r.diagnostics[0].pos.line, 3);
  EXPECT_EQ(r.diagnostics[1].pos.line, 5);
}

TEST(Csv, ErrorsStopAtTheLimitWithOneSummary) {
  std::string text = "a,b\n";
  for (int i = 0; i < 100; ++i) text += "1\n";
  CsvLimits limits;
  limits.max_errors = 5;
  const auto r = read(text, limits);
  EXPECT_EQ(r.errors, 100u);
  ASSERT_EQ(r.diagnostics.size(), 6u);  // 5 errors and the summary
  EXPECT_EQ(r.diagnostics.back().rule, kRuleTooManyErrors);
}

TEST(Csv, HeaderCheckNamesTheExpectedColumns) {
  const auto r = read("a,c\n1,2\n");
  ASSERT_TRUE(r.table);
  Diagnostics d;
  TraceErrors errors("t.csv", d, 10);
  constexpr std::array<std::string_view, 2> expected{"a", "b"};
  EXPECT_FALSE(check_header(*r.table, expected, errors));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rule, kRuleCsvHeader);
  EXPECT_NE(d[0].message.find("\"a,b\""), std::string::npos) << d[0].message;
  EXPECT_NE(d[0].message.find("\"a,c\""), std::string::npos) << d[0].message;
}

TEST(Csv, FieldReaderNamesTheColumnAndTheRule) {
  const auto r = read("id,count\nx,12a\ny,-1\nz,\n");
  ASSERT_TRUE(r.table);
  Diagnostics d;
  TraceErrors errors("t.csv", d, 10);
  std::int64_t v = 0;
  EXPECT_FALSE(FieldReader(*r.table, r.table->rows[0], errors).integer(1, 0, 100, v));
  EXPECT_FALSE(FieldReader(*r.table, r.table->rows[1], errors).integer(1, 0, 100, v));
  EXPECT_FALSE(FieldReader(*r.table, r.table->rows[2], errors).integer(1, 0, 100, v));
  std::optional<std::int64_t> maybe = 5;
  EXPECT_TRUE(FieldReader(*r.table, r.table->rows[2], errors).optional_integer(1, 0, 100, maybe));
  EXPECT_FALSE(maybe);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].rule, kRuleNumber);
  EXPECT_EQ(d[1].rule, kRuleOutOfRange);
  EXPECT_EQ(d[2].rule, kRuleRequired);
  EXPECT_EQ(d[0].path, "count");
  EXPECT_EQ(d[0].pos.line, 2);
  EXPECT_EQ(d[0].pos.column, 3);
  EXPECT_EQ(d[0].to_string(), "t.csv:2:3: error: count: count must be a whole number, got \"12a\" [trace.number]");
}

TEST(Csv, DatesAndTimes) {
  EXPECT_EQ(parse_date("1970-01-01"), 0);
  EXPECT_EQ(parse_date("2020-04-01"), 18353);  // 50 years: 12 leap days, 50 x 365 + 12 = 18262; + Jan-Mar 2020 (31+29+31)
  EXPECT_EQ(parse_date("2020-02-30"), std::nullopt);
  EXPECT_EQ(parse_date("2021-02-29"), std::nullopt);
  EXPECT_EQ(parse_date("2020-4-01"), std::nullopt);
  // 2023-11-16 is day 19677; + 18:15:46.68059 = 65746.68059 s.
  EXPECT_EQ(parse_date_time("2023-11-16 18:15:46.6805900"), (19677LL * 86400 + 65746) * 1'000'000'000 + 680'590'000);
  EXPECT_EQ(parse_date_time("2017-10-03 00:01:00"), (17442LL * 86400 + 60) * 1'000'000'000);
  EXPECT_EQ(parse_date_time("2017-10-03 24:00:00"), std::nullopt);
  EXPECT_EQ(parse_date_time("2017-10-03 00:00:00."), std::nullopt);
  EXPECT_EQ(parse_date_time("2017-10-03 00:00:00.1234567890"), std::nullopt);
  EXPECT_EQ(parse_date_time("2017-10-03T00:00:00"), std::nullopt);
  EXPECT_EQ(parse_int64("-12"), -12);
  EXPECT_EQ(parse_int64("+12"), std::nullopt);
  EXPECT_EQ(parse_int64("99999999999999999999"), std::nullopt);
  EXPECT_EQ(parse_int64(" 1"), std::nullopt);
}

}  // namespace
}  // namespace gpubank::twin::trace
