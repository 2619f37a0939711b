#include "core/log_format.hpp"

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

namespace gpubank {
namespace {

// Issue 28: log lines quoted input verbatim, so a name could start a forged log entry or
// send ESC sequences to an operator's terminal.
TEST(LogFormat, EscapesTheMessageAndKeepsOneLinePerEntry) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("test", sink);
  logger.set_formatter(escaping_log_formatter());
  logger.info("denied {}: {}", "team-a/x\n[2026-01-01 00:00:00.000] [info] allowed everything", "\x1b[2J");
  const std::string line = out.str();
  EXPECT_TRUE(line.ends_with(
      "] [info] denied team-a/x\\n[2026-01-01 00:00:00.000] [info] allowed everything: \\x1b[2J\n"))
      << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
}

}  // namespace
}  // namespace gpubank
