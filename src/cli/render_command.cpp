// gpubank render: a policy set in, one file per engine object out (src/render). Writing
// is all or nothing per file: each file goes to a temporary name beside it, the file
// system is synced once, then every file is renamed into place, so a crash leaves each
// file either old or new, never half written.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "cli/command.hpp"
#include "document/reader.hpp"
#include "policy/policy_set.hpp"
#include "render/consistency.hpp"
#include "render/render.hpp"

namespace gpubank::cli {
namespace {

namespace fs = std::filesystem;
using Json = render::Json;

struct RenderCommandOptions {
  std::vector<std::string> paths;
  std::string backend;
  std::string out;
  bool check = false;
  Format format = Format::Text;
};

// Above this many objects, progress goes to stderr.
constexpr std::size_t kProgressThreshold = 1000;

enum class Status { Rendered, Written, Unchanged, Removed };

struct Entry {
  std::string path;
  std::string kind;
  std::string name;
  std::string ns;
  std::vector<std::string> sources;
  Status status = Status::Rendered;
};

std::string status_name(Status s, bool check) {
  switch (s) {
    case Status::Rendered: return "rendered";
    case Status::Written: return check ? "would-write" : "written";
    case Status::Unchanged: return "unchanged";
    case Status::Removed: return check ? "would-remove" : "removed";
  }
  return "?";
}

std::optional<std::string> read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string errno_text() { return std::strerror(errno); }

// The documents of a file under --out; empty when it does not parse (then it is not ours).
std::vector<doc::Document> read_documents(const fs::path& file, const std::string& text) {
  std::vector<doc::Document> docs;
  Diagnostics ignored;
  if (file.extension() == ".json") {
    doc::read_json(text, file.string(), docs, ignored);
  } else {
    doc::read_yaml(text, file.string(), docs, ignored);
  }
  return has_errors(ignored) ? std::vector<doc::Document>{} : docs;
}

// Files under `out` that gpubank wrote before (the managed-by label) and this render no
// longer produces. Files without the label are never touched.
std::vector<Entry> stale_files(const fs::path& out, const std::set<std::string>& rendered) {
  std::vector<Entry> stale;
  std::error_code ec;
  if (!fs::is_directory(out, ec)) return stale;
  for (auto it = fs::recursive_directory_iterator(out, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const fs::path& file = it->path();
    const std::string ext = file.extension().string();
    if (ext != ".yaml" && ext != ".yml" && ext != ".json") continue;
    const std::string rel = fs::relative(file, out, ec).generic_string();
    if (rendered.contains(rel)) continue;
    const auto text = read_text(file);
    if (!text) continue;
    for (const auto& d : read_documents(file, *text)) {
      const doc::Node* meta = d.root.find("metadata");
      const doc::Node* labels = meta != nullptr ? meta->find("labels") : nullptr;
      if (labels == nullptr || labels->string_at(render::kLabelManagedBy) != render::kManagedBy) continue;
      stale.push_back(Entry{rel, std::string(d.root.string_at("kind")), std::string(meta->string_at("name")),
                            std::string(meta->string_at("namespace")), {}, Status::Removed});
      break;
    }
  }
  std::sort(stale.begin(), stale.end(), [](const Entry& a, const Entry& b) { return a.path < b.path; });
  return stale;
}

// Writes `text` to a new temporary file beside `target`; returns its path.
Expected<fs::path> write_temporary(const fs::path& target, const std::string& text) {
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) return Unexpected{"cannot create " + target.parent_path().string() + ": " + ec.message()};
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".gpubank-tmp");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Unexpected{"cannot create " + tmp.string() + ": " + errno_text()};
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = errno_text();
      ::close(fd);
      fs::remove(tmp, ec);
      return Unexpected{"cannot write " + tmp.string() + ": " + why};
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) return Unexpected{"cannot write " + tmp.string() + ": " + errno_text()};
  return tmp;
}

// Flushes the file system that holds `dir` (one syncfs instead of an fsync per file).
bool sync_file_system(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::syncfs(fd) == 0;
  ::close(fd);
  return ok;
}

struct Progress {
  bool on = false;
  std::size_t total = 0;
  void step(std::size_t done, std::string_view what) const {
    if (on && (done % kProgressThreshold == 0 || done == total)) {
      std::cerr << "gpubank render: " << what << ' ' << done << '/' << total << '\n';
    }
  }
};

// Writes the changed files and removes the stale ones; false (after a message) on failure.
bool apply(const fs::path& out, const std::vector<render::RenderedObject>& objects,
           const std::vector<std::string>& texts, std::vector<Entry>& entries, const std::vector<Entry>& stale,
           const Progress& progress) {
  std::vector<std::pair<fs::path, fs::path>> renames;  // temporary -> target
  auto discard = [&] {
    std::error_code ec;
    for (const auto& [tmp, target] : renames) fs::remove(tmp, ec);
  };
  for (std::size_t i = 0; i < objects.size(); ++i) {
    progress.step(i + 1, "writing");
    if (entries[i].status != Status::Written) continue;
    const fs::path target = out / objects[i].path;
    auto tmp = write_temporary(target, texts[i]);
    if (!tmp) {
      std::cerr << "gpubank render: " << tmp.error() << "; nothing changed under " << out.string() << '\n';
      discard();
      return false;
    }
    renames.emplace_back(*tmp, target);
  }
  if (!renames.empty() && !sync_file_system(out)) {
    std::cerr << "gpubank render: cannot sync " << out.string() << ": " << errno_text() << "; nothing changed\n";
    discard();
    return false;
  }
  for (const auto& [tmp, target] : renames) {
    std::error_code ec;
    fs::rename(tmp, target, ec);
    if (ec) {
      std::cerr << "gpubank render: cannot rename " << tmp.string() << " to " << target.string() << ": "
                << ec.message() << '\n';
      discard();
      return false;
    }
  }
  for (const auto& s : stale) {
    std::error_code ec;
    fs::remove(out / s.path, ec);
    if (ec) {
      std::cerr << "gpubank render: cannot remove " << (out / s.path).string() << ": " << ec.message() << '\n';
      return false;
    }
  }
  // The renames and removals themselves (directory entries) are durable once synced too.
  if ((!renames.empty() || !stale.empty()) && !sync_file_system(out)) {
    std::cerr << "gpubank render: cannot sync " << out.string() << ": " << errno_text() << '\n';
    return false;
  }
  return true;
}

Json to_json(const std::vector<Entry>& entries, const RenderCommandOptions& opt) {
  Json list = Json::array();
  std::map<std::string, int> counts;
  for (const auto& e : entries) {
    Json item = Json::object();
    item["path"] = e.path;
    item["kind"] = e.kind;
    item["name"] = e.name;
    if (!e.ns.empty()) item["namespace"] = e.ns;
    if (e.status != Status::Removed) item["sources"] = e.sources;
    item["status"] = status_name(e.status, opt.check);
    ++counts[status_name(e.status, opt.check)];
    list.push_back(std::move(item));
  }
  Json summary = Json::object();
  for (const auto& [status, n] : counts) summary[status] = n;
  Json out = Json::object();
  out["backend"] = opt.backend;
  if (!opt.out.empty()) out["out"] = opt.out;
  out["check"] = opt.check;
  out["summary"] = std::move(summary);
  out["objects"] = std::move(list);
  return out;
}

void print_text(const std::vector<Entry>& entries, const RenderCommandOptions& opt) {
  std::map<Status, int> counts;
  for (const auto& e : entries) {
    ++counts[e.status];
    // Unchanged files are only counted: a re-run lists what it changed.
    if (e.status == Status::Unchanged) continue;
    std::cout << status_name(e.status, opt.check) << "  " << e.path << "  " << e.kind << '/'
              << (e.ns.empty() ? "" : e.ns + "/") << e.name << '\n';
  }
  const std::size_t rendered = entries.size() - static_cast<std::size_t>(counts[Status::Removed]);
  std::cout << '\n' << rendered << " objects";
  if (opt.out.empty()) {
    std::cout << " rendered, nothing written (no --out)\n";
    return;
  }
  std::cout << ": " << counts[Status::Written] << (opt.check ? " to write, " : " written, ")
            << counts[Status::Unchanged] << " unchanged, " << counts[Status::Removed]
            << (opt.check ? " to remove (--check: nothing written)\n" : " removed\n");
}

int run_render(const RenderCommandOptions& opt) {
  const auto backend = render::backend_from_name(opt.backend);
  if (!backend) {
    std::cerr << "gpubank render: --backend: \"" << opt.backend << "\" is neither kueue nor volcano\n";
    return 2;
  }
  if (opt.out.empty() && !opt.check) {
    std::cerr << "gpubank render: --out is required (or --check to render without writing)\n";
    return 2;
  }
  const auto started = std::chrono::steady_clock::now();
  const policy::PolicySet set = policy::load_policy_set(opt.paths);
  const render::RenderResult result = render::render(set, render::RenderOptions{*backend});
  for (const auto& d : result.diagnostics) std::cerr << d.to_string() << '\n';
  // --check shows the four-layer capacity tables (and a failed check shows why).
  std::optional<render::ConsistencyReport> capacity;
  if (opt.check || !result.ok()) capacity = render::check_consistency(set);
  if (!result.ok()) {
    if (capacity && opt.format == Format::Text) std::cerr << capacity->to_text();
    std::size_t errors = 0;
    for (const auto& d : result.diagnostics) errors += d.severity == Severity::Error ? 1 : 0;
    std::cerr << "gpubank render: " << errors << (errors == 1 ? " error" : " errors") << "; nothing rendered\n";
    return 1;
  }
  const Progress progress{result.objects.size() >= kProgressThreshold, result.objects.size()};
  if (progress.on) {
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    std::cerr << "gpubank render: " << result.objects.size() << " objects rendered in " << ms << " ms\n";
  }

  const fs::path out(opt.out);
  std::vector<Entry> entries;
  std::set<std::string> rendered;
  const std::vector<std::string> texts = render::to_file_texts(result.objects);
  for (std::size_t i = 0; i < result.objects.size(); ++i) {
    const auto& o = result.objects[i];
    // Dashboards are Grafana's models, without kind or metadata: named by their title.
    const auto meta = o.manifest.find("metadata");
    const bool k8s = meta != o.manifest.end() && meta->is_object();
    Entry e{o.path, o.manifest.value("kind", "GrafanaDashboard"),
            k8s ? meta->value("name", "") : o.manifest.value("title", ""), k8s ? meta->value("namespace", "") : "",
            {}, Status::Rendered};
    for (const auto* p : o.sources) e.sources.push_back(p->ref());
    if (!opt.out.empty()) {
      const auto existing = read_text(out / o.path);
      e.status = existing && *existing == texts[i] ? Status::Unchanged : Status::Written;
    }
    rendered.insert(o.path);
    entries.push_back(std::move(e));
  }
  const std::vector<Entry> stale = opt.out.empty() ? std::vector<Entry>{} : stale_files(out, rendered);
  if (!opt.check && !opt.out.empty() && !apply(out, result.objects, texts, entries, stale, progress)) return 1;

  entries.insert(entries.end(), stale.begin(), stale.end());
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.path < b.path; });
  if (opt.format == Format::Text) {
    if (capacity) std::cout << capacity->to_text() << '\n';
    print_text(entries, opt);
  } else {
    Json listing = to_json(entries, opt);
    if (capacity) listing["capacity"] = capacity->to_json();
    print_structured(std::cout, listing, opt.format);
  }
  return 0;
}

}  // namespace

Command add_render_command(CLI::App& app) {
  auto opt = std::make_shared<RenderCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "render",
      "Render a policy set into the objects of the engines that enforce it (Kueue or Volcano queues, "
      "PriorityClasses), one file per object under --out. Exits 1 when the set is invalid or a check fails "
      "(nothing is written then), 2 on usage errors.");
  cmd->footer(
      "Files are <area>/<kind>-<name>.yaml (kueue/, volcano/, scheduling/), byte-identical for the same policies. "
      "Every object carries the label app.kubernetes.io/managed-by=gpubank and the annotations "
      "platform.gpubank.dev/source-policy and platform.gpubank.dev/source-hash. A file is rewritten only when its "
      "content changes, through a temporary file and a rename. Files under --out with the managed-by label that "
      "this render no longer produces are removed. The text output lists what changed; -o json|yaml lists every "
      "object with its sources and status. Mapping decisions: docs/render.md.");
  cmd->add_option("-f,--filename", opt->paths, "policy files and directories (.yaml, .yml, .json)")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--backend", opt->backend, "queueing engine: kueue or volcano")->required();
  cmd->add_option("--out", opt->out, "directory to write the objects to (created when missing)");
  cmd->add_flag("--check", opt->check,
                "validate, check and render, and report what would change under --out, without writing");
  add_output_option(*cmd, opt->format);
  return {cmd, [opt] { return run_render(*opt); }};
}

}  // namespace gpubank::cli
