// Kubeconfig files (apiVersion v1, kind Config) as kubectl reads them: parsing one file
// into named clusters, users and contexts, and merging several the way the KUBECONFIG
// list is merged. Pure: the caller reads the files (see client_config.hpp).
//
// What kubectl does and this follows:
// - Unknown fields are ignored (kubectl decodes kubeconfigs leniently, so files written by
//   newer tools still load); apiVersion and kind may be left out, but when present must be
//   v1 and Config. A field of the wrong type (a number for `server`) is an error.
// - A name defined twice in one list of one file is an error, as kubectl reports
//   ("duplicate name ... in list").
// - Empty strings mean "not set", as in Go.
// - Relative paths (certificate-authority, client-certificate, client-key, tokenFile)
//   resolve against the directory of the file that names them.
// - *-data fields are base64 (see base64.hpp) and decoded here, so a bad one fails the file
//   as it fails kubectl's loading; whether the bytes are PEM is checked only for the
//   entries a context actually uses (resolve_kubeconfig), like kubectl.
//
// Differences, on purpose: YAML is read with gpubank's own reader (YAML 1.2 core schema;
// rejects NUL and other non-printable bytes with their position) where kubectl uses YAML
// 1.1, so an unquoted `name: y` or `name: off` is the string "y" here and a boolean (an
// error) in kubectl. A YAML stream of several documents and a mapping with a key written
// twice are errors here.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"

namespace gpubank::k8s {

// Rule ids of kubeconfig findings.
inline constexpr std::string_view kRuleWrongType = "kubeconfig.wrong-type";
inline constexpr std::string_view kRuleVersion = "kubeconfig.version";
inline constexpr std::string_view kRuleRequired = "kubeconfig.required";
inline constexpr std::string_view kRuleDuplicateName = "kubeconfig.duplicate-name";
inline constexpr std::string_view kRuleDuplicateKey = "kubeconfig.duplicate-key";
inline constexpr std::string_view kRuleBase64 = "kubeconfig.base64";
inline constexpr std::string_view kRuleTooMany = "kubeconfig.too-many-entries";
inline constexpr std::string_view kRuleDocuments = "kubeconfig.documents";

struct KubeconfigLimits {
  std::size_t max_bytes = std::size_t{16} << 20;  // per file
  std::size_t max_entries = 10'000;               // per list (clusters, users, contexts)
  int max_depth = 32;                             // nesting (extensions may nest freely)
  std::size_t max_nodes = 500'000;                // YAML nodes after alias expansion
};

// Where a named entry was defined: for messages about it after merging.
struct Origin {
  std::string file;
  std::string path;  // "users[2]"
  SourcePos pos;
  // Positions of the keys present in the entry's body ("client-key-data").
  std::map<std::string, SourcePos, std::less<>> fields;

  // "users[2].user.client-key-data" for body = "user", key = "client-key-data".
  [[nodiscard]] std::string field_path(std::string_view body, std::string_view key) const;
  // The key's position, else (a missing field) the entry's.
  [[nodiscard]] SourcePos field_pos(std::string_view key) const;
};

struct Cluster {
  std::string server;
  std::string certificate_authority;       // path (resolved), or empty
  std::string certificate_authority_data;  // decoded bytes, or empty
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  std::string proxy_url;  // parsed so it can be refused when used (not supported yet)
};

struct User {
  std::string client_certificate;       // path (resolved)
  std::string client_certificate_data;  // decoded
  std::string client_key;               // path (resolved)
  std::string client_key_data;          // decoded
  std::string token;
  std::string token_file;  // path (resolved)
  std::string username;
  std::string password;
  // Present but not supported in this slice; refused when a context uses the user.
  bool exec = false;
  bool auth_provider = false;
  std::vector<std::string> impersonation;  // the keys given: "as", "as-uid", "as-groups", "as-user-extra"
};

struct Context {
  std::string cluster;
  std::string user;
  std::string namespace_name;
};

template <class T>
struct Named {
  std::string name;
  T value;
  Origin origin;
};

struct Kubeconfig {
  std::string file;
  std::vector<Named<Cluster>> clusters;
  std::vector<Named<User>> users;
  std::vector<Named<Context>> contexts;
  std::string current_context;
  SourcePos current_context_pos;
};

// Parses one kubeconfig file's text. `base_dir` is the directory relative paths resolve
// against (the file's own). Empty text is an empty config. On error, nothing is returned
// and every finding is in `out` with the file, the field path and a rule.
[[nodiscard]] std::optional<Kubeconfig> parse_kubeconfig(std::string_view text, const std::string& file,
                                                         const std::string& base_dir, Diagnostics& out,
                                                         const KubeconfigLimits& limits = {});

// Several files merged as kubectl merges the KUBECONFIG list: for clusters, users and
// contexts, the first file that defines a name wins (whole entries, never field by field);
// current-context comes from the first file that sets it.
struct MergedKubeconfig {
  std::vector<std::string> files;  // in order
  std::map<std::string, Named<Cluster>, std::less<>> clusters;
  std::map<std::string, Named<User>, std::less<>> users;
  std::map<std::string, Named<Context>, std::less<>> contexts;
  std::string current_context;
  std::string current_context_file;  // which file set it
  SourcePos current_context_pos;
};

[[nodiscard]] MergedKubeconfig merge_kubeconfigs(const std::vector<Kubeconfig>& in_order);

}  // namespace gpubank::k8s
