// gpubank render: a policy set in, one file per engine object out (src/render). Writing
// is all or nothing per file: each file goes to a temporary name beside it, the file
// system is synced once, then every file is renamed into place, so a crash leaves each
// file either old or new, never half written.
//
// --out holds Kubernetes objects only, so that the directory is itself appliable: with
// `kubectl apply -k DIR` through a generated kustomization (named `Kustomization`, which
// kustomize reads and `kubectl apply -R -f DIR` does not), and with `kubectl apply -R -f
// DIR`, which reads every .json, .yaml and .yml file. Grafana's raw dashboard models are
// not objects: they go to --dashboards-out (their ConfigMaps, for Grafana's sidecar, are
// objects and stay under --out).
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
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
  std::string dashboards_out;
  bool check = false;
  Format format = Format::Text;
};

// The kustomization under --out. kustomize reads the first of kustomization.yaml,
// kustomization.yml and Kustomization it finds; this one has no manifest extension, so
// `kubectl apply -R -f` (which reads .json, .yaml, .yml) never takes it for an object.
constexpr std::string_view kKustomizationFile = "Kustomization";
// Written under --out but not meant to be applied (docs/render.md): left out of the
// kustomization.
constexpr std::string_view kNotApplied = "volcano/templates/";

// Above this many objects, progress goes to stderr.
constexpr std::size_t kProgressThreshold = 1000;

enum class Status { Rendered, Written, Unchanged, Removed };

struct Entry {
  std::string path;  // as listed: relative to --out, or under --dashboards-out
  std::string kind;
  std::string name;
  std::string ns;
  std::vector<std::string> sources;
  Status status = Status::Rendered;
  fs::path file;  // where it is (or would be) written; empty when nowhere
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

// A dashboard model gpubank rendered (render/grafana.hpp): uid gpubank-<slug>, tag gpubank.
// Models carry no labels, so this is how a dashboard no longer rendered, or one an earlier
// gpubank wrote under --out, is recognised as gpubank's.
bool is_gpubank_dashboard(const doc::Node& root) {
  if (!root.string_at("uid").starts_with("gpubank-")) return false;
  const doc::Node* tags = root.find("tags");
  if (tags == nullptr || tags->type != doc::NodeType::Sequence) return false;
  return std::any_of(tags->items.begin(), tags->items.end(), [](const doc::Node& t) { return t.text == "gpubank"; });
}

// Files under `dir` that gpubank wrote before (the managed-by label, or a gpubank
// dashboard model) and this render no longer produces there; `listed_under` prefixes the
// paths reported. Files without either mark are never touched.
std::vector<Entry> stale_files(const fs::path& dir, const std::set<std::string>& rendered,
                               const std::string& listed_under = {}) {
  const fs::path& out = dir;
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
    const std::string listed = listed_under.empty() ? rel : (fs::path(listed_under) / rel).generic_string();
    for (const auto& d : read_documents(file, *text)) {
      if (ext == ".json" && is_gpubank_dashboard(d.root)) {
        stale.push_back(Entry{listed, "GrafanaDashboard", std::string(d.root.string_at("title")), {}, {},
                              Status::Removed, file});
        break;
      }
      const doc::Node* meta = d.root.find("metadata");
      const doc::Node* labels = meta != nullptr ? meta->find("labels") : nullptr;
      if (labels == nullptr || labels->string_at(render::kLabelManagedBy) != render::kManagedBy) continue;
      stale.push_back(Entry{listed, std::string(d.root.string_at("kind")), std::string(meta->string_at("name")),
                            std::string(meta->string_at("namespace")), {}, Status::Removed, file});
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

// Writes the entries marked Written (texts[i] for entries[i]) and removes the stale
// files; `roots` are the directories written to. False (after a message) on failure.
bool apply(const std::vector<fs::path>& roots, const std::vector<Entry>& entries, const std::vector<std::string>& texts,
           const std::vector<Entry>& stale, const Progress& progress) {
  std::vector<std::pair<fs::path, fs::path>> renames;  // temporary -> target
  auto discard = [&] {
    std::error_code ec;
    for (const auto& [tmp, target] : renames) fs::remove(tmp, ec);
  };
  auto sync_all = [&] {
    for (const auto& root : roots) {
      if (!sync_file_system(root)) {
        std::cerr << "gpubank render: cannot sync " << root.string() << ": " << errno_text() << '\n';
        return false;
      }
    }
    return true;
  };
  for (std::size_t i = 0; i < entries.size(); ++i) {
    progress.step(i + 1, "writing");
    if (entries[i].status != Status::Written) continue;
    auto tmp = write_temporary(entries[i].file, texts[i]);
    if (!tmp) {
      std::cerr << "gpubank render: " << tmp.error() << "; nothing changed\n";
      discard();
      return false;
    }
    renames.emplace_back(*tmp, entries[i].file);
  }
  if (!renames.empty() && !sync_all()) {
    std::cerr << "gpubank render: nothing changed\n";
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
    fs::remove(s.file, ec);
    if (ec) {
      std::cerr << "gpubank render: cannot remove " << s.file.string() << ": " << ec.message() << '\n';
      return false;
    }
  }
  // The renames and removals themselves (directory entries) are durable once synced too.
  return (renames.empty() && stale.empty()) || sync_all();
}

// The kustomization of the objects under --out (their paths): every one meant to be
// applied, sorted.
std::string kustomization_text(const std::set<std::string>& paths, std::size_t& resources) {
  std::string text =
      "# Generated by gpubank render: the objects of this directory, for `kubectl apply -k`.\n"
      "apiVersion: kustomize.config.k8s.io/v1beta1\n"
      "kind: Kustomization\n"
      "resources:\n";
  resources = 0;
  for (const auto& path : paths) {
    if (path.starts_with(kNotApplied)) continue;
    text += "- " + path + "\n";
    ++resources;
  }
  return text;
}

Json to_json(const std::vector<Entry>& entries, const std::optional<Entry>& kustomization, std::size_t resources,
             const RenderCommandOptions& opt) {
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
  if (!opt.dashboards_out.empty()) out["dashboardsOut"] = opt.dashboards_out;
  out["check"] = opt.check;
  out["summary"] = std::move(summary);
  out["objects"] = std::move(list);
  if (kustomization) {
    out["kustomization"] = {{"path", kustomization->path},
                            {"resources", resources},
                            {"status", status_name(kustomization->status, opt.check)}};
  }
  return out;
}

void print_text(const std::vector<Entry>& entries, const std::optional<Entry>& kustomization, std::size_t resources,
                const RenderCommandOptions& opt) {
  std::map<Status, int> counts;
  for (const auto& e : entries) {
    ++counts[e.status];
    // Unchanged files are only counted: a re-run lists what it changed.
    if (e.status == Status::Unchanged) continue;
    std::cout << status_name(e.status, opt.check) << "  " << e.path << "  " << e.kind << '/'
              << (e.ns.empty() ? "" : e.ns + "/") << e.name << '\n';
  }
  if (kustomization && kustomization->status != Status::Unchanged) {
    std::cout << status_name(kustomization->status, opt.check) << "  " << kustomization->path << "  " << resources
              << " resources for kubectl apply -k\n";
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
  if (opt.out.empty() && opt.dashboards_out.empty() && !opt.check) {
    std::cerr << "gpubank render: --out is required (or --check to render without writing)\n";
    return 2;
  }
  if (!opt.out.empty() && !opt.dashboards_out.empty()) {
    std::error_code ec_out;
    std::error_code ec_dashboards;
    const fs::path a = fs::weakly_canonical(opt.out, ec_out);
    const fs::path b = fs::weakly_canonical(opt.dashboards_out, ec_dashboards);
    // kubectl apply -R -f would read the models, and a prune of one would see the other's files.
    auto inside = [](const fs::path& dir, const fs::path& p) {
      const auto rel = p.lexically_relative(dir);
      return !rel.empty() && *rel.begin() != "..";
    };
    if (!ec_out && !ec_dashboards && (inside(a, b) || inside(b, a))) {
      std::cerr << "gpubank render: --dashboards-out must be outside --out (and --out outside it): kubectl apply -R -f "
                   "reads every .json file under --out\n";
      return 2;
    }
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
  const fs::path dashboards_out(opt.dashboards_out);
  std::vector<Entry> entries;
  std::vector<std::string> texts;
  std::set<std::string> rendered, rendered_dashboards;  // relative to out, to dashboards_out
  const std::vector<std::string> all_texts = render::to_file_texts(result.objects);
  const bool writes = !opt.out.empty() || !opt.dashboards_out.empty();
  for (std::size_t i = 0; i < result.objects.size(); ++i) {
    const auto& o = result.objects[i];
    // Dashboards are Grafana's models, without kind or metadata: named by their title.
    const auto meta = o.manifest.find("metadata");
    const bool k8s = meta != o.manifest.end() && meta->is_object();
    Entry e{o.path, o.manifest.value("kind", "GrafanaDashboard"),
            k8s ? meta->value("name", "") : o.manifest.value("title", ""), k8s ? meta->value("namespace", "") : "",
            {}, Status::Rendered, {}};
    for (const auto* p : o.sources) e.sources.push_back(p->ref());
    if (!k8s) {
      // A dashboard model goes to --dashboards-out only, flat, by its file name.
      const std::string name = fs::path(o.path).filename().string();
      if (writes && opt.dashboards_out.empty()) continue;
      if (!opt.dashboards_out.empty()) {
        e.file = dashboards_out / name;
        e.path = e.file.generic_string();
        rendered_dashboards.insert(name);
      }
    } else {
      if (writes && opt.out.empty()) continue;
      if (!opt.out.empty()) e.file = out / o.path;
      rendered.insert(o.path);
    }
    if (!e.file.empty()) {
      const auto existing = read_text(e.file);
      e.status = existing && *existing == all_texts[i] ? Status::Unchanged : Status::Written;
    }
    entries.push_back(std::move(e));
    texts.push_back(all_texts[i]);
  }
  std::optional<Entry> kustomization;
  std::size_t resources = 0;
  std::string kustomization_body;
  if (!opt.out.empty()) {
    kustomization_body = kustomization_text(rendered, resources);
    kustomization = Entry{std::string(kKustomizationFile), "Kustomization", {}, {}, {}, Status::Written,
                          out / kKustomizationFile};
    const auto existing = read_text(kustomization->file);
    if (existing && *existing == kustomization_body) kustomization->status = Status::Unchanged;
  }
  std::vector<Entry> stale;
  if (!opt.out.empty()) stale = stale_files(out, rendered);
  if (!opt.dashboards_out.empty()) {
    std::vector<Entry> more = stale_files(dashboards_out, rendered_dashboards, opt.dashboards_out);
    // Only dashboard models: --dashboards-out may be a directory with other files.
    for (auto& e : more) {
      if (e.kind == "GrafanaDashboard") stale.push_back(std::move(e));
    }
  }
  if (!opt.check && writes) {
    std::vector<Entry> to_write = entries;
    std::vector<std::string> to_write_texts = texts;
    if (kustomization) {
      to_write.push_back(*kustomization);
      to_write_texts.push_back(kustomization_body);
    }
    std::vector<fs::path> roots;
    if (!opt.out.empty()) roots.push_back(out);
    if (!opt.dashboards_out.empty()) roots.push_back(dashboards_out);
    const Progress writing{progress.on, to_write.size()};
    if (!apply(roots, to_write, to_write_texts, stale, writing)) return 1;
  }

  entries.insert(entries.end(), stale.begin(), stale.end());
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.path < b.path; });
  if (opt.format == Format::Text) {
    if (capacity) std::cout << capacity->to_text() << '\n';
    print_text(entries, kustomization, resources, opt);
  } else {
    Json listing = to_json(entries, kustomization, resources, opt);
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
      "Files are <area>/<kind>-<name>.yaml (kueue/, volcano/, scheduling/, ...), byte-identical for the same policies, "
      "with a generated Kustomization listing them: apply the directory with kubectl apply -k DIR (or kubectl apply "
      "-R -f DIR). Grafana's raw dashboard models go to --dashboards-out (<slug>.json), never under --out; their "
      "ConfigMaps are objects under --out. Every object carries the label app.kubernetes.io/managed-by=gpubank and the "
      "annotations platform.gpubank.dev/source-policy and platform.gpubank.dev/source-hash. A file is rewritten only "
      "when its content changes, through a temporary file and a rename. Files with the managed-by label (and gpubank "
      "dashboard models) that this render no longer produces are removed. The text output lists what changed; -o "
      "json|yaml lists every object with its sources and status. Mapping decisions: docs/render.md.");
  cmd->add_option("-f,--filename", opt->paths, "policy files and directories (.yaml, .yml, .json)")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--backend", opt->backend, "queueing engine: kueue or volcano")->required();
  cmd->add_option("--out", opt->out, "directory to write the objects to (created when missing)");
  cmd->add_option("--dashboards-out", opt->dashboards_out,
                  "directory to write Grafana's dashboard models to (<slug>.json; outside --out)");
  cmd->add_flag("--check", opt->check,
                "validate, check and render, and report what would change under --out, without writing");
  add_output_option(*cmd, opt->format);
  return {cmd, [opt] { return run_render(*opt); }};
}

}  // namespace gpubank::cli
