#include "k8s/kubeconfig.hpp"

#include <filesystem>
#include <set>
#include <utility>

#include "document/node.hpp"
#include "document/reader.hpp"
#include "k8s/base64.hpp"

namespace gpubank::k8s {
namespace {

namespace fs = std::filesystem;
using doc::Node;
using doc::NodeType;

std::string join(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return std::string(path) + "." + std::string(key);
}

// One file's parse: every finding goes to `out` with the file and the field path.
class Parser {
 public:
  Parser(const std::string& file, const std::string& base_dir, Diagnostics& out, const KubeconfigLimits& limits)
      : file_(file), base_dir_(base_dir), out_(out), limits_(limits) {}

  std::optional<Kubeconfig> parse(const Node& root) {
    Kubeconfig config;
    config.file = file_;
    if (root.type == NodeType::Null) return config;
    if (!expect_mapping(root, "")) return std::nullopt;
    std::string api_version;
    std::string kind;
    if (read_string(root.find("apiVersion"), "apiVersion", api_version) && !api_version.empty() &&
        api_version != "v1") {
      error(kRuleVersion, root.find("apiVersion")->pos, "apiVersion",
            "unsupported apiVersion \"" + api_version + "\": kubeconfig files are apiVersion v1");
    }
    if (read_string(root.find("kind"), "kind", kind) && !kind.empty() && kind != "Config") {
      error(kRuleVersion, root.find("kind")->pos, "kind", "kind is \"" + kind + "\", not Config: not a kubeconfig file");
    }
    read_list(root, "clusters", "cluster", config.clusters, [&](const Node& body, const std::string& path, Cluster& c) {
      read_string(body.find("server"), join(path, "server"), c.server);
      read_path(body.find("certificate-authority"), join(path, "certificate-authority"), c.certificate_authority);
      read_base64(body.find("certificate-authority-data"), join(path, "certificate-authority-data"),
                  c.certificate_authority_data);
      read_bool(body.find("insecure-skip-tls-verify"), join(path, "insecure-skip-tls-verify"), c.insecure_skip_tls_verify);
      read_string(body.find("tls-server-name"), join(path, "tls-server-name"), c.tls_server_name);
      read_string(body.find("proxy-url"), join(path, "proxy-url"), c.proxy_url);
    });
    read_list(root, "users", "user", config.users, [&](const Node& body, const std::string& path, User& u) {
      read_path(body.find("client-certificate"), join(path, "client-certificate"), u.client_certificate);
      read_base64(body.find("client-certificate-data"), join(path, "client-certificate-data"),
                  u.client_certificate_data);
      read_path(body.find("client-key"), join(path, "client-key"), u.client_key);
      read_base64(body.find("client-key-data"), join(path, "client-key-data"), u.client_key_data);
      read_string(body.find("token"), join(path, "token"), u.token);
      read_path(body.find("tokenFile"), join(path, "tokenFile"), u.token_file);
      read_string(body.find("username"), join(path, "username"), u.username);
      read_string(body.find("password"), join(path, "password"), u.password);
      u.exec = present(body.find("exec"));
      u.auth_provider = present(body.find("auth-provider"));
      for (std::string_view key : {"as", "as-uid", "as-groups", "as-user-extra"}) {
        if (present(body.find(key))) u.impersonation.emplace_back(key);
      }
    });
    read_list(root, "contexts", "context", config.contexts, [&](const Node& body, const std::string& path, Context& c) {
      read_string(body.find("cluster"), join(path, "cluster"), c.cluster);
      read_string(body.find("user"), join(path, "user"), c.user);
      read_string(body.find("namespace"), join(path, "namespace"), c.namespace_name);
    });
    if (const Node* current = root.find("current-context")) {
      read_string(current, "current-context", config.current_context);
      config.current_context_pos = current->pos;
    }
    if (failed_) return std::nullopt;
    return config;
  }

 private:
  void error(std::string_view rule, SourcePos pos, std::string path, std::string message) {
    failed_ = true;
    out_.push_back(Diagnostic{Severity::Error, std::string(rule), file_, pos, {}, {}, std::move(path), std::move(message)});
  }

  void wrong_type(const Node& n, const std::string& path, std::string_view expected) {
    error(kRuleWrongType, n.pos, path, "expected " + std::string(expected) + ", got " + doc::describe(n.type) +
                                           (n.is_scalar() ? " " + doc::preview(n) : std::string()));
  }

  static bool present(const Node* n) { return n != nullptr && n->type != NodeType::Null; }

  // A mapping whose keys are each written once (kubectl keeps the last of a repeated key
  // silently; a reviewer reading the file may see the first, so it is refused).
  bool expect_mapping(const Node& n, const std::string& path) {
    if (n.type != NodeType::Mapping) {
      wrong_type(n, path.empty() ? "(document)" : path, "a mapping");
      return false;
    }
    std::set<std::string_view> seen;
    for (const auto& e : n.entries) {
      if (!seen.insert(e.key).second) {
        error(kRuleDuplicateKey, e.key_pos, join(path, e.key), "key \"" + e.key + "\" is written twice in this mapping");
      }
    }
    return true;
  }

  // The string at `n` (absent or null: empty, as Go leaves it). False on a wrong type.
  bool read_string(const Node* n, const std::string& path, std::string& out) {
    if (!present(n)) return true;
    if (n->type != NodeType::String) {
      wrong_type(*n, path, "a string");
      return false;
    }
    out = n->text;
    return true;
  }

  void read_bool(const Node* n, const std::string& path, bool& out) {
    if (!present(n)) return;
    if (n->type != NodeType::Bool) return wrong_type(*n, path, "true or false");
    out = n->boolean;
  }

  void read_path(const Node* n, const std::string& path, std::string& out) {
    if (!read_string(n, path, out) || out.empty()) return;
    if (out.find('\0') != std::string::npos) {
      out.clear();
      return error(kRuleWrongType, n->pos, path, "a file path must not contain NUL");
    }
    const fs::path p(out);
    if (p.is_relative() && !base_dir_.empty()) out = (fs::path(base_dir_) / p).lexically_normal().string();
  }

  void read_base64(const Node* n, const std::string& path, std::string& out) {
    std::string text;
    if (!read_string(n, path, text) || text.empty()) return;
    auto decoded = decode_base64(text);
    if (!decoded) return error(kRuleBase64, n->pos, path, "not valid base64: " + decoded.error());
    out = std::move(*decoded);
  }

  // A list of {name, <body>} entries: "clusters: [{name: a, cluster: {...}}]".
  template <class T, class ReadBody>
  void read_list(const Node& root, std::string_view key, std::string_view body_key, std::vector<Named<T>>& out,
                 ReadBody read_body) {
    const Node* list = root.find(key);
    if (!present(list)) return;
    const std::string list_path(key);
    if (list->type != NodeType::Sequence) return wrong_type(*list, list_path, "a list");
    if (list->items.size() > limits_.max_entries) {
      return error(kRuleTooMany, list->pos, list_path,
                   std::to_string(list->items.size()) + " entries, above the limit of " +
                       std::to_string(limits_.max_entries));
    }
    std::map<std::string, std::size_t, std::less<>> first_index;
    for (std::size_t i = 0; i < list->items.size(); ++i) {
      const Node& item = list->items[i];
      const std::string path = list_path + "[" + std::to_string(i) + "]";
      if (!expect_mapping(item, path)) continue;
      Named<T> entry;
      entry.origin.file = file_;
      entry.origin.path = path;
      entry.origin.pos = item.pos;
      const Node* name = item.find("name");
      if (!present(name)) {
        error(kRuleRequired, item.pos, join(path, "name"), "every entry needs a name");
      } else if (read_string(name, join(path, "name"), entry.name)) {
        const auto [at, inserted] = first_index.emplace(entry.name, i);
        if (!inserted) {
          error(kRuleDuplicateName, name->pos, join(path, "name"),
                "duplicate name \"" + entry.name + "\": " + list_path + "[" + std::to_string(at->second) +
                    "] already has it (kubectl refuses such a file too)");
        }
      }
      const Node* body = item.find(body_key);
      const std::string body_path = join(path, body_key);
      if (present(body) && expect_mapping(*body, body_path)) {
        for (const auto& e : body->entries) entry.origin.fields.emplace(e.key, e.key_pos);
        read_body(*body, body_path, entry.value);
      }
      out.push_back(std::move(entry));
    }
  }

  const std::string& file_;
  const std::string& base_dir_;
  Diagnostics& out_;
  const KubeconfigLimits& limits_;
  bool failed_ = false;
};

}  // namespace

std::string Origin::field_path(std::string_view body, std::string_view key) const {
  return join(join(path, body), key);
}

SourcePos Origin::field_pos(std::string_view key) const {
  const auto it = fields.find(key);
  return it != fields.end() ? it->second : pos;
}

std::optional<Kubeconfig> parse_kubeconfig(std::string_view text, const std::string& file, const std::string& base_dir,
                                           Diagnostics& out, const KubeconfigLimits& limits) {
  doc::ReadLimits read_limits;
  read_limits.max_bytes = limits.max_bytes;
  read_limits.max_depth = limits.max_depth;
  read_limits.max_nodes = limits.max_nodes;
  std::vector<doc::Document> documents;
  const std::size_t before = out.size();
  doc::read_yaml(text, file, documents, out, read_limits);
  if (out.size() != before) return std::nullopt;
  if (documents.size() > 1) {
    // kubectl reads the first document and ignores the rest without a word.
    out.push_back(Diagnostic{Severity::Error, std::string(kRuleDocuments), file, documents[1].root.pos, {}, {},
                             "(document " + std::to_string(documents[1].index + 1) + ")",
                             "a kubeconfig file holds one YAML document; this one has several"});
    return std::nullopt;
  }
  Parser parser(file, base_dir, out, limits);
  return parser.parse(documents.empty() ? Node{} : documents.front().root);
}

MergedKubeconfig merge_kubeconfigs(const std::vector<Kubeconfig>& in_order) {
  MergedKubeconfig merged;
  for (const Kubeconfig& config : in_order) {
    merged.files.push_back(config.file);
    // emplace keeps what is there: the first file to define a name wins.
    for (const auto& c : config.clusters) merged.clusters.emplace(c.name, c);
    for (const auto& u : config.users) merged.users.emplace(u.name, u);
    for (const auto& c : config.contexts) merged.contexts.emplace(c.name, c);
    if (merged.current_context.empty() && !config.current_context.empty()) {
      merged.current_context = config.current_context;
      merged.current_context_file = config.file;
      merged.current_context_pos = config.current_context_pos;
    }
  }
  return merged;
}

}  // namespace gpubank::k8s
