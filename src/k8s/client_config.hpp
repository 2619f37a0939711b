// How a client finds and trusts a cluster: the resolved ClientConfig a transport uses, and
// the loading order of client-go's defaults (what controller-runtime's GetConfig does):
//
//   1. --kubeconfig FILE (LoadOptions::kubeconfig): that file, which must exist;
//   2. else KUBECONFIG: a ':'-separated list, merged (kubeconfig.hpp); empty entries and
//      repeats are dropped, missing files skipped, as kubectl does; at least one must exist;
//   3. else, when KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are set, in-cluster:
//      https://host:port with the service account's token, ca.crt and namespace;
//   4. else ~/.kube/config.
//
// Then --context (else current-context) picks the context, and --namespace overrides its
// namespace (else the context's, else "default"). Only what that context uses is checked
// and read: its cluster, its user and their files. Every error is a Diagnostic naming the
// file, the field path ("users[2].user.client-key-data") and a rule id.
//
// Not supported in this slice, and refused with an error naming the entry when a context
// uses it: exec credential plugins and auth-provider (users[].user.exec / auth-provider),
// proxies (clusters[].cluster.proxy-url: a silent direct connection could bypass a
// required proxy), impersonation (as, as-uid, as-groups, as-user-extra), and basic
// authentication (username/password: Kubernetes removed it in 1.19).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/expected.hpp"
#include "k8s/kubeconfig.hpp"
#include "k8s/server_url.hpp"
#include "k8s/token_source.hpp"

namespace gpubank::k8s {

inline constexpr std::string_view kRuleContext = "kubeconfig.context";
inline constexpr std::string_view kRuleReference = "kubeconfig.reference";
inline constexpr std::string_view kRuleUnsupported = "kubeconfig.unsupported";
inline constexpr std::string_view kRuleConflict = "kubeconfig.conflict";
inline constexpr std::string_view kRuleServer = "kubeconfig.server";
inline constexpr std::string_view kRuleCredentials = "kubeconfig.credentials";
inline constexpr std::string_view kRuleUnreadable = "kubeconfig.unreadable";
inline constexpr std::string_view kRuleNotFound = "kubeconfig.not-found";
inline constexpr std::string_view kRuleInCluster = "in-cluster.config";

inline constexpr std::string_view kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
inline constexpr std::size_t kMaxFileBytes = std::size_t{16} << 20;

struct ClientConfig {
  ServerUrl server;
  std::string ca_pem;                  // PEM certificates to trust; empty: the system's roots
  std::string client_certificate_pem;  // with client_key_pem, or both empty
  std::string client_key_pem;
  std::shared_ptr<TokenSource> token;  // null: no bearer token
  std::string namespace_name;          // never empty ("default" at least)
  std::string tls_server_name;         // SNI and verification name when not the host's
  bool insecure_skip_tls_verify = false;
  std::string context;                 // the kubeconfig context used; empty in-cluster
  std::string origin;                  // where it came from, for logs (no secrets)
};

// Reads a whole file, or says why not (naming the file).
using FileReader = std::function<Expected<std::string>(const std::string& path)>;
[[nodiscard]] FileReader filesystem_reader(std::size_t max_bytes = kMaxFileBytes);

struct ResolveOptions {
  std::string context;             // --context; empty: current-context
  std::string namespace_override;  // --namespace; empty: the context's
  bool allow_loopback_http = false;  // plain http to a loopback fake API server (tests)
  FileTokenSource::Clock clock;    // for token files; empty: the steady clock
};

// The ClientConfig of one context of merged kubeconfigs. Pure apart from `read`, which
// reads the files the context's cluster and user name.
[[nodiscard]] std::optional<ClientConfig> resolve_kubeconfig(const MergedKubeconfig& config,
                                                             const ResolveOptions& options, const FileReader& read,
                                                             Diagnostics& out);

// The process environment the loading order reads; tests build their own.
struct Environment {
  std::optional<std::string> kubeconfig;     // KUBECONFIG
  std::optional<std::string> home;           // HOME
  std::optional<std::string> service_host;   // KUBERNETES_SERVICE_HOST
  std::optional<std::string> service_port;   // KUBERNETES_SERVICE_PORT
  std::optional<std::string> pod_namespace;  // POD_NAMESPACE (client-go reads it first)
  std::string service_account_dir = std::string(kServiceAccountDir);

  [[nodiscard]] static Environment from_process();
};

// The KUBECONFIG list: split at ':', empty entries and repeats dropped, order kept.
[[nodiscard]] std::vector<std::string> split_kubeconfig_list(std::string_view value);

// Parses and merges kubeconfig files in order. Missing files are skipped when
// `skip_missing` (the KUBECONFIG list), else an error; when no file exists at all, an
// error. Relative paths inside resolve against each file's directory.
[[nodiscard]] std::optional<MergedKubeconfig> load_kubeconfigs(const std::vector<std::string>& paths,
                                                               bool skip_missing, Diagnostics& out,
                                                               const KubeconfigLimits& limits = {});

// The in-cluster config from the environment and the service account directory.
[[nodiscard]] std::optional<ClientConfig> load_in_cluster(const Environment& env, const ResolveOptions& options,
                                                          Diagnostics& out);

struct LoadOptions {
  std::string kubeconfig;  // --kubeconfig; empty: the loading order decides
  ResolveOptions resolve;
  KubeconfigLimits limits;
};

// The loading order above. The error is every finding, one per line.
[[nodiscard]] Expected<ClientConfig> load_client_config(const LoadOptions& options, const Environment& env);

}  // namespace gpubank::k8s
