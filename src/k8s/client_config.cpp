#include "k8s/client_config.hpp"

#include <cstdlib>
#include <filesystem>
#include <set>
#include <utility>

#include "document/loader.hpp"
#include "k8s/credentials.hpp"

namespace gpubank::k8s {
namespace {

namespace fs = std::filesystem;

void report(Diagnostics& out, std::string_view rule, std::string file, SourcePos pos, std::string path,
            std::string message) {
  out.push_back(Diagnostic{Severity::Error, std::string(rule), std::move(file), pos, {}, {}, std::move(path),
                           std::move(message)});
}

std::string join_files(const std::vector<std::string>& files) {
  std::string out;
  for (const auto& f : files) out += (out.empty() ? "" : ":") + f;
  return out;
}

template <class Map>
std::string defined_names(const Map& map) {
  if (map.empty()) return "none";
  std::string out;
  for (const auto& [name, entry] : map) out += (out.empty() ? "\"" : ", \"") + name + "\"";
  return out;
}

// Reports problems of one entry's fields: file, "users[2].user.<key>", the key's position.
struct EntryReporter {
  Diagnostics& out;
  const Origin& origin;
  std::string_view body;  // "cluster" or "user"
  std::size_t errors = 0;

  void operator()(std::string_view rule, std::string_view key, std::string message) {
    ++errors;
    report(out, rule, origin.file, origin.field_pos(key), origin.field_path(body, key), std::move(message));
  }
};

// Data given inline (already decoded), else read from the file the entry names.
std::optional<std::string> data_or_file(const std::string& data, const std::string& file, std::string_view file_key,
                                        const FileReader& read, EntryReporter& error) {
  if (!data.empty()) return data;
  if (file.empty()) return std::string();
  auto text = read(file);
  if (!text) {
    error(kRuleUnreadable, file_key, text.error());
    return std::nullopt;
  }
  return std::move(*text);
}

void resolve_cluster(const Named<Cluster>& entry, const ResolveOptions& options, const FileReader& read,
                     ClientConfig& config, Diagnostics& out) {
  const Cluster& c = entry.value;
  EntryReporter error{out, entry.origin, "cluster"};
  if (c.server.empty()) {
    error(kRuleRequired, "server", "cluster \"" + entry.name + "\" has no server");
  } else if (auto url = parse_server_url(c.server, options.allow_loopback_http)) {
    config.server = std::move(*url);
  } else {
    error(kRuleServer, "server", url.error());
  }
  if (!c.proxy_url.empty()) {
    error(kRuleUnsupported, "proxy-url", "proxies are not supported yet: gpubank would connect directly");
  }
  if (c.insecure_skip_tls_verify && (!c.certificate_authority.empty() || !c.certificate_authority_data.empty())) {
    // client-go refuses this combination too: which one was meant is not knowable.
    error(kRuleConflict, "insecure-skip-tls-verify",
          "insecure-skip-tls-verify is true and a certificate authority is given: set one of them");
  }
  config.insecure_skip_tls_verify = c.insecure_skip_tls_verify;
  config.tls_server_name = c.tls_server_name;
  // Both given: the data wins, as in client-go.
  const std::string_view ca_key = c.certificate_authority_data.empty() ? "certificate-authority" : "certificate-authority-data";
  if (auto ca = data_or_file(c.certificate_authority_data, c.certificate_authority, ca_key, read, error)) {
    if (!ca->empty()) {
      if (auto bad = check_certificates_pem(*ca)) {
        error(kRuleCredentials, ca_key, "certificate authority: " + *bad);
      } else {
        config.ca_pem = std::move(*ca);
      }
    }
  }
}

void resolve_user(const Named<User>& entry, const ResolveOptions& options, const FileReader& read,
                  ClientConfig& config, Diagnostics& out) {
  const User& u = entry.value;
  EntryReporter error{out, entry.origin, "user"};
  const std::string who = "user \"" + entry.name + "\"";
  if (u.exec) error(kRuleUnsupported, "exec", who + " uses an exec credential plugin: exec plugins are not supported yet");
  if (u.auth_provider) {
    error(kRuleUnsupported, "auth-provider", who + " uses an auth-provider plugin: auth providers are not supported yet");
  }
  for (const auto& key : u.impersonation) {
    error(kRuleUnsupported, key, who + " impersonates (" + key + "): impersonation is not supported yet");
  }
  if (!u.username.empty() || !u.password.empty()) {
    error(kRuleUnsupported, u.username.empty() ? "password" : "username",
          who + " uses basic authentication (username/password), which Kubernetes removed in 1.19");
  }
  if (!u.client_certificate.empty() && !u.client_certificate_data.empty()) {
    error(kRuleConflict, "client-certificate-data", "client-certificate and client-certificate-data are both set: set one");
  }
  if (!u.client_key.empty() && !u.client_key_data.empty()) {
    error(kRuleConflict, "client-key-data", "client-key and client-key-data are both set: set one");
  }
  const bool has_cert = !u.client_certificate.empty() || !u.client_certificate_data.empty();
  const bool has_key = !u.client_key.empty() || !u.client_key_data.empty();
  const std::string_view cert_key = u.client_certificate_data.empty() ? "client-certificate" : "client-certificate-data";
  const std::string_view key_key = u.client_key_data.empty() ? "client-key" : "client-key-data";
  if (has_cert != has_key) {
    error(kRuleRequired, has_cert ? "client-certificate" : "client-key",
          who + ": a client certificate needs its key and a key its certificate (set both, or neither)");
  }
  if (error.errors > 0) return;
  if (has_cert) {
    auto cert = data_or_file(u.client_certificate_data, u.client_certificate, cert_key, read, error);
    auto key = data_or_file(u.client_key_data, u.client_key, key_key, read, error);
    if (cert && key) {
      if (auto bad = check_certificates_pem(*cert)) {
        error(kRuleCredentials, cert_key, "client certificate: " + *bad);
      } else if (auto mismatch = check_key_pair_pem(*cert, *key)) {
        error(kRuleCredentials, key_key, *mismatch);
      } else {
        config.client_certificate_pem = std::move(*cert);
        config.client_key_pem = std::move(*key);
      }
    }
  }
  if (!u.token_file.empty()) {
    // The file wins over an inline token, as in client-go once the file is readable.
    auto source = std::make_shared<FileTokenSource>(u.token_file, FileTokenSource::kDefaultReread, options.clock, read);
    if (auto first = source->token()) {
      config.token = std::move(source);
    } else {
      error(kRuleCredentials, "tokenFile", first.error());
    }
  } else if (!u.token.empty()) {
    if (auto bad = check_bearer_token(u.token)) {
      error(kRuleCredentials, "token", *bad);
    } else {
      config.token = std::make_shared<StaticTokenSource>(std::string(trim_whitespace(u.token)));
    }
  }
}

std::optional<std::string> non_empty_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

bool non_empty(const std::optional<std::string>& v) { return v && !v->empty(); }

}  // namespace

FileReader filesystem_reader(std::size_t max_bytes) {
  return [max_bytes](const std::string& path) { return doc::read_file(path, max_bytes); };
}

std::optional<ClientConfig> resolve_kubeconfig(const MergedKubeconfig& merged, const ResolveOptions& options,
                                               const FileReader& read, Diagnostics& out) {
  const std::string all_files = join_files(merged.files);
  const bool by_flag = !options.context.empty();
  const std::string& name = by_flag ? options.context : merged.current_context;
  if (name.empty()) {
    report(out, kRuleContext, all_files, {}, "current-context",
           "no context selected: no file sets current-context and no context was asked for (--context)");
    return std::nullopt;
  }
  const auto context = merged.contexts.find(name);
  if (context == merged.contexts.end()) {
    const std::string message = "context \"" + name + "\" is not defined (contexts defined: " +
                                defined_names(merged.contexts) + ")";
    if (by_flag) {
      report(out, kRuleContext, all_files, {}, "--context", message);
    } else {
      report(out, kRuleContext, merged.current_context_file, merged.current_context_pos, "current-context", message);
    }
    return std::nullopt;
  }
  const Named<Context>& ctx = context->second;
  const std::size_t errors_before = out.size();
  ClientConfig config;
  config.context = name;
  config.origin = "kubeconfig " + all_files + ", context \"" + name + "\"";
  const auto reference_error = [&](std::string_view key, std::string message) {
    report(out, kRuleReference, ctx.origin.file, ctx.origin.field_pos(key), ctx.origin.field_path("context", key),
           std::move(message));
  };
  if (ctx.value.cluster.empty()) {
    reference_error("cluster", "context \"" + name + "\" names no cluster");
  } else if (const auto cluster = merged.clusters.find(ctx.value.cluster); cluster == merged.clusters.end()) {
    reference_error("cluster", "context \"" + name + "\" names cluster \"" + ctx.value.cluster +
                                   "\", which no file defines (clusters defined: " + defined_names(merged.clusters) + ")");
  } else {
    resolve_cluster(cluster->second, options, read, config, out);
  }
  if (!ctx.value.user.empty()) {  // no user: anonymous, which kubectl allows too
    if (const auto user = merged.users.find(ctx.value.user); user == merged.users.end()) {
      reference_error("user", "context \"" + name + "\" names user \"" + ctx.value.user +
                                  "\", which no file defines (users defined: " + defined_names(merged.users) + ")");
    } else {
      resolve_user(user->second, options, read, config, out);
    }
  }
  config.namespace_name = !options.namespace_override.empty() ? options.namespace_override
                          : !ctx.value.namespace_name.empty() ? ctx.value.namespace_name
                                                              : "default";
  if (out.size() != errors_before) return std::nullopt;
  return config;
}

Environment Environment::from_process() {
  Environment env;
  env.kubeconfig = non_empty_env("KUBECONFIG");
  env.home = non_empty_env("HOME");
  env.service_host = non_empty_env("KUBERNETES_SERVICE_HOST");
  env.service_port = non_empty_env("KUBERNETES_SERVICE_PORT");
  env.pod_namespace = non_empty_env("POD_NAMESPACE");
  return env;
}

std::vector<std::string> split_kubeconfig_list(std::string_view value) {
  std::vector<std::string> files;
  std::set<std::string, std::less<>> seen;
  while (true) {
    const auto colon = value.find(':');
    const std::string_view item = value.substr(0, colon);
    if (!item.empty() && seen.emplace(item).second) files.emplace_back(item);
    if (colon == std::string_view::npos) break;
    value.remove_prefix(colon + 1);
  }
  return files;
}

std::optional<MergedKubeconfig> load_kubeconfigs(const std::vector<std::string>& paths, bool skip_missing,
                                                 Diagnostics& out, const KubeconfigLimits& limits) {
  std::vector<Kubeconfig> configs;
  const std::size_t errors_before = out.size();
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      if (skip_missing) continue;  // kubectl skips a missing file in the KUBECONFIG list
      report(out, kRuleNotFound, path, {}, "(file)", "kubeconfig file does not exist");
      continue;
    }
    auto text = doc::read_file(path, limits.max_bytes);
    if (!text) {
      report(out, kRuleUnreadable, path, {}, "(file)", text.error());
      continue;
    }
    const std::string base_dir = fs::absolute(path, ec).parent_path().string();
    if (auto config = parse_kubeconfig(*text, path, base_dir, out, limits)) configs.push_back(std::move(*config));
  }
  if (out.size() != errors_before) return std::nullopt;
  if (configs.empty()) {
    report(out, kRuleNotFound, join_files(paths), {}, "(file)", "none of the kubeconfig files exists");
    return std::nullopt;
  }
  return merge_kubeconfigs(configs);
}

std::optional<ClientConfig> load_in_cluster(const Environment& env, const ResolveOptions& options, Diagnostics& out) {
  const std::size_t errors_before = out.size();
  const auto env_error = [&](std::string variable, std::string message) {
    report(out, kRuleInCluster, "(environment)", {}, std::move(variable), std::move(message));
  };
  if (!non_empty(env.service_host)) env_error("KUBERNETES_SERVICE_HOST", "not set: not running in a cluster");
  if (!non_empty(env.service_port)) env_error("KUBERNETES_SERVICE_PORT", "not set: not running in a cluster");
  if (out.size() != errors_before) return std::nullopt;
  if (!options.context.empty()) {
    env_error("--context", "a context was asked for, but there is no kubeconfig: in-cluster config has no contexts");
    return std::nullopt;
  }
  ClientConfig config;
  // An IPv6 service address comes without brackets ("fd00::1"); a URL needs them.
  std::string host = *env.service_host;
  if (host.find(':') != std::string::npos && !host.starts_with('[')) host = "[" + host + "]";
  if (auto url = parse_server_url("https://" + host + ":" + *env.service_port)) {
    config.server = std::move(*url);
  } else {
    env_error("KUBERNETES_SERVICE_HOST", url.error() + " (from KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT)");
  }
  const fs::path dir(env.service_account_dir);
  const FileReader read = filesystem_reader();
  auto token = std::make_shared<FileTokenSource>((dir / "token").string(), FileTokenSource::kDefaultReread,
                                                 options.clock, read);
  if (auto first = token->token()) {
    config.token = std::move(token);
  } else {
    report(out, kRuleInCluster, (dir / "token").string(), {}, "(service account token)", first.error());
  }
  const std::string ca_file = (dir / "ca.crt").string();
  if (auto ca = read(ca_file); !ca) {
    report(out, kRuleInCluster, ca_file, {}, "(service account ca.crt)", ca.error());
  } else if (auto bad = check_certificates_pem(*ca)) {
    report(out, kRuleInCluster, ca_file, {}, "(service account ca.crt)", "certificate authority: " + *bad);
  } else {
    config.ca_pem = std::move(*ca);
  }
  if (!options.namespace_override.empty()) {
    config.namespace_name = options.namespace_override;
  } else if (non_empty(env.pod_namespace)) {
    config.namespace_name = *env.pod_namespace;
  } else if (auto ns = read((dir / "namespace").string()); ns && !trim_whitespace(*ns).empty()) {
    config.namespace_name = std::string(trim_whitespace(*ns));
  } else {
    config.namespace_name = "default";
  }
  config.origin = "in-cluster (service account " + dir.string() + ")";
  if (out.size() != errors_before) return std::nullopt;
  return config;
}

Expected<ClientConfig> load_client_config(const LoadOptions& options, const Environment& env) {
  Diagnostics out;
  std::optional<ClientConfig> config;
  const auto from_files = [&](const std::vector<std::string>& files, bool skip_missing) {
    if (auto merged = load_kubeconfigs(files, skip_missing, out, options.limits)) {
      config = resolve_kubeconfig(*merged, options.resolve, filesystem_reader(options.limits.max_bytes), out);
    }
  };
  if (!options.kubeconfig.empty()) {
    from_files({options.kubeconfig}, false);
  } else if (non_empty(env.kubeconfig)) {
    from_files(split_kubeconfig_list(*env.kubeconfig), true);
  } else if (non_empty(env.service_host) && non_empty(env.service_port)) {
    config = load_in_cluster(env, options.resolve, out);
  } else if (non_empty(env.home)) {
    const std::string file = (fs::path(*env.home) / ".kube" / "config").string();
    std::error_code ec;
    if (!fs::exists(file, ec)) {
      report(out, kRuleNotFound, file, {}, "(file)",
             "no cluster configuration: --kubeconfig not given, KUBECONFIG not set, not in a cluster "
             "(KUBERNETES_SERVICE_HOST not set), and this file does not exist");
    } else {
      from_files({file}, false);
    }
  } else {
    report(out, kRuleNotFound, "(environment)", {}, "HOME",
           "no cluster configuration: --kubeconfig not given, KUBECONFIG not set, not in a cluster, and HOME is "
           "not set (so there is no ~/.kube/config)");
  }
  if (config && !has_errors(out)) return std::move(*config);
  std::string message;
  for (const auto& d : out) message += (message.empty() ? "" : "\n") + d.to_string();
  return Unexpected{message};
}

}  // namespace gpubank::k8s
