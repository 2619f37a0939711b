#include "document/loader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace gpubank::doc {
namespace fs = std::filesystem;

namespace {

bool is_document_file(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

bool hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() > 1 && name[0] == '.';
}

void read_one(const fs::path& path, std::vector<Document>& out, Diagnostics& diagnostics,
              const ReadLimits& limits) {
  const std::string name = path.string();
  auto text = read_file(name, limits.max_bytes);
  if (!text) {
    const bool too_large = text.error().find("above the limit") != std::string::npos;
    diagnostics.push_back(Diagnostic{Severity::Error, std::string(too_large ? kRuleTooLarge : kRuleUnreadable),
                                     name, {}, {}, {}, {}, text.error()});
    return;
  }
  if (path.extension() == ".json") {
    read_json(*text, name, out, diagnostics, limits);
  } else {
    read_yaml(*text, name, out, diagnostics, limits);
  }
}

}  // namespace

Expected<std::string> read_file(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return Unexpected{"cannot read " + path + ": no such file or directory"};
  if (!fs::is_regular_file(status)) return Unexpected{"cannot read " + path + ": not a regular file"};
  const auto size = fs::file_size(path, ec);
  if (ec) return Unexpected{"cannot read " + path + ": " + ec.message()};
  if (size > max_bytes) {
    return Unexpected{path + " is " + std::to_string(size) + " bytes, above the limit of " +
                      std::to_string(max_bytes)};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Unexpected{"cannot read " + path + ": " + std::strerror(errno)};
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Unexpected{"cannot read " + path + ": read error"};
  return buffer.str();
}

void load_paths(const std::vector<std::string>& paths, std::vector<Document>& out,
                Diagnostics& diagnostics, const ReadLimits& limits) {
  // A file named twice (directly and through its directory) is read once.
  std::set<fs::path> seen;
  auto first_time = [&](const fs::path& p) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(p, ec);
    return seen.insert(ec ? p : canonical).second;
  };
  for (const auto& p : paths) {
    std::error_code ec;
    const fs::path root(p);
    if (!fs::is_directory(root, ec)) {
      if (first_time(root)) read_one(root, out, diagnostics, limits);
      continue;
    }
    std::vector<fs::path> files;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (hidden(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file() && is_document_file(it->path())) files.push_back(it->path());
    }
    if (ec) {
      diagnostics.push_back(Diagnostic{Severity::Error, std::string(kRuleUnreadable), p, {}, {}, {}, {},
                                       "cannot list " + p + ": " + ec.message()});
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      if (first_time(f)) read_one(f, out, diagnostics, limits);
    }
  }
}

}  // namespace gpubank::doc
