#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <streambuf>

#include "cli/command.hpp"
#include "cli/version.hpp"
#include "core/escape.hpp"
#include "document/yaml_writer.hpp"
#include "policy/validate.hpp"

namespace gpubank::cli {

void add_output_option(CLI::App& command, Format& format, bool allow_text) {
  std::map<std::string, Format> choices{{"json", Format::Json}, {"yaml", Format::Yaml}};
  if (allow_text) choices.emplace("text", Format::Text);
  command.add_option("-o,--output", format, allow_text ? "output format: text, json or yaml" : "output format: json or yaml")
      ->transform(CLI::CheckedTransformer(choices, CLI::ignore_case))
      ->capture_default_str();
}

std::string default_identity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return std::string(host) + "_" + std::to_string(getpid());
}

std::optional<policy::PolicySet> load_valid_policies(const std::vector<std::string>& paths, std::string_view command) {
  policy::PolicySet set = policy::load_policy_set(paths);
  Diagnostics diagnostics = set.diagnostics();
  const Diagnostics checks = policy::validate(set);
  diagnostics.insert(diagnostics.end(), checks.begin(), checks.end());
  if (!has_errors(diagnostics)) return set;
  for (const auto& d : diagnostics) std::cerr << d.to_string() << '\n';
  std::cerr << "gpubank " << command << ": the policies are invalid\n";
  return std::nullopt;
}

std::optional<twin::cluster::Inventory> load_valid_inventory(const std::string& path, std::string_view command) {
  Diagnostics diagnostics;
  auto inventory = twin::cluster::load_inventory(path, diagnostics);
  if (inventory) return inventory;
  for (const auto& d : diagnostics) std::cerr << d.to_string() << '\n';
  std::cerr << "gpubank " << command << ": the inventory is invalid\n";
  return std::nullopt;
}

void print_structured(std::ostream& out, const nlohmann::ordered_json& value, Format format) {
  if (format == Format::Yaml) {
    out << doc::to_yaml(value);
  } else {
    out << value.dump(2) << '\n';
  }
}

namespace {

// std::cout's buffer: file descriptor 1 directly, keeping the first write error and its
// errno. (Through stdio, a buffer that fails to drain is dropped and its errno lost, so
// "> /dev/full" would be noticed only as "some error" or, for short output flushed at
// exit, not at all.) After an error, output is discarded and the stream fails.
class StdoutBuffer : public std::streambuf {
 public:
  StdoutBuffer() { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  [[nodiscard]] int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* p = pbase();
    auto left = static_cast<std::size_t>(pptr() - pbase());
    while (left > 0 && error_ == 0) {
      const ssize_t n = ::write(STDOUT_FILENO, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        break;
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0;
  }

  std::array<char, std::size_t{1} << 16> buffer_{};
  int error_ = 0;
};

// Lives until the process ends (never destroyed), so that std::cout's final flush at exit
// always has a buffer to go to.
StdoutBuffer& stdout_buffer() {
  static auto* buffer = new StdoutBuffer();
  return *buffer;
}

// Output that was not written is a failure, whatever the command decided: flushes std::cout
// and stdio's stdout (log lines), closes descriptor 1 (where a file system reports some
// errors only then), and returns 1 after "gpubank: error writing output: <reason>" if any
// of it failed.
int finish_output(int code) {
  std::cout.flush();
  int error = stdout_buffer().error();
  if (error == 0 && std::cout.fail()) error = EIO;
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    if (error == 0) error = errno != 0 ? errno : EIO;
  }
  if (::close(STDOUT_FILENO) != 0 && errno != EBADF && errno != EINTR && error == 0) error = errno;
  if (error == 0) return code;
  std::cerr << "gpubank: error writing output: " << std::strerror(error) << '\n';
  return code == 0 ? 1 : code;
}

int run_command(int argc, char** argv) {
  CLI::App app{"gpubank: a GPU resource bank and tidal inference platform for shared Kubernetes clusters"};
  app.set_version_flag("--version", std::string("gpubank ") + kVersion);
  app.require_subcommand(1);
  app.fallthrough(false);

  const Command commands[] = {
      add_validate_command(app), add_convert_command(app), add_rules_command(app),
      add_cron_command(app),     add_webhook_command(app), add_crds_command(app),
      add_render_command(app),   add_controller_command(app), add_schema_command(app),  add_twin_command(app),
      add_bank_command(app),     add_audit_command(app),    add_up_command(app), add_tidal_command(app),
      add_metasync_command(app), add_exporter_command(app), add_scan_command(app), add_report_command(app),
      add_token_command(app),    add_serving_command(app),
  };

  // CLI11 would only say "A subcommand is required" for a misspelt command.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string_view first = argv[1];
    const bool known = std::any_of(std::begin(commands), std::end(commands),
                                   [&](const Command& c) { return c.app->get_name() == first; });
    if (!known) {
      std::cerr << "gpubank: unknown command \"" << escape_text(first) << "\"\nRun with --help for the list of commands.\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and the hint to use --help
    return 2;
  }
  for (const auto& command : commands) {
    if (command.app->parsed()) {
      try {
        return command.action();
      } catch (const std::exception& e) {
        std::cerr << "gpubank: " << escape_text(e.what()) << '\n';
        return 1;
      }
    }
  }
  return 2;
}

}  // namespace

int run(int argc, char** argv) {
  std::cout.rdbuf(&stdout_buffer());
  return finish_output(run_command(argc, argv));
}

}  // namespace gpubank::cli
