// The format of gpubank's log lines (spdlog). Messages hold input (object names, request
// fields, file paths), so the message part is escaped as diagnostics are
// (core/escape.hpp): one entry stays one line, and no ESC sequence reaches a terminal.
// Header-only: only the programs that log (and link spdlog) include it.
#pragma once

#include <spdlog/pattern_formatter.h>

#include <memory>
#include <string>
#include <string_view>

#include "core/escape.hpp"

namespace gpubank {

// "%*": the log message, escaped.
class EscapedLogMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/, spdlog::memory_buf_t& dest) override {
    const std::string text = escape_text(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  [[nodiscard]] std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedLogMessage>();
  }
};

// spdlog's default pattern ("[time] [level] message", the level coloured on a terminal)
// with the message escaped: spdlog::set_formatter(escaping_log_formatter()).
[[nodiscard]] inline std::unique_ptr<spdlog::formatter> escaping_log_formatter() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedLogMessage>('*').set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %*");
  return formatter;
}

}  // namespace gpubank
