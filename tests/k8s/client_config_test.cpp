#include "k8s/client_config.hpp"

#include <gtest/gtest.h>

#include "fixture.hpp"

namespace gpubank::k8s {
namespace {

using namespace testing;
namespace fs = std::filesystem;

// A kubeconfig written into a scratch directory and resolved through the loading order.
class ClientConfigTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) { return put(dir_.path(), name, text); }

  // Resolves `file` (by --kubeconfig) and returns the errors; none expected.
  ClientConfig load_ok(const std::string& file, ResolveOptions resolve = {}) {
    LoadOptions options;
    options.kubeconfig = file;
    options.resolve = std::move(resolve);
    auto config = load_client_config(options, Environment{});
    EXPECT_TRUE(config.ok()) << (config.ok() ? "" : config.error());
    return config.ok() ? std::move(*config) : ClientConfig{};
  }

  // The findings of resolving the files in order (KUBECONFIG rules), or of loading them.
  Diagnostics errors(const std::vector<std::string>& files, ResolveOptions resolve = {}) {
    Diagnostics out;
    if (auto merged = load_kubeconfigs(files, true, out)) {
      auto config = resolve_kubeconfig(*merged, resolve, filesystem_reader(), out);
      EXPECT_FALSE(config.has_value());
    }
    EXPECT_FALSE(out.empty());
    return out;
  }
  Diagnostic error(const std::string& file, ResolveOptions resolve = {}) {
    Diagnostics out = errors({file}, std::move(resolve));
    EXPECT_EQ(out.size(), 1u);
    for (const auto& d : out) EXPECT_FALSE(d.path.empty()) << d.to_string();
    return out.empty() ? Diagnostic{} : out.front();
  }

  static std::string token(const ClientConfig& c) {
    if (c.token == nullptr) return "(none)";
    auto t = c.token->token();
    return t.ok() ? *t : "error: " + t.error();
  }

  // A one-context kubeconfig around a cluster body and a user body (flow mappings).
  static std::string config(const std::string& cluster, const std::string& user,
                            const std::string& context_extra = "") {
    return "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: " + cluster +
           "\nusers:\n- name: u\n  user: " + user + "\ncontexts:\n- name: x\n  context: {cluster: c, user: u" +
           context_extra + "}\ncurrent-context: x\n";
  }

  ScratchDir dir_;
};

TEST_F(ClientConfigTest, ResolvesCaAndClientCertificateFromData) {
  const std::string file =
      write("config", config("{server: \"https://api.example:6443\", certificate-authority-data: " +
                                 base64(ca_pem().cert) + ", tls-server-name: api.internal}",
                             "{client-certificate-data: " + base64(client_pem().cert) +
                                 ", client-key-data: " + base64(client_pem().key) + "}",
                             ", namespace: team-a"));
  const ClientConfig c = load_ok(file);
  EXPECT_EQ(c.server.to_string(), "https://api.example:6443");
  EXPECT_EQ(c.ca_pem, ca_pem().cert);
  EXPECT_EQ(c.client_certificate_pem, client_pem().cert);
  EXPECT_EQ(c.client_key_pem, client_pem().key);
  EXPECT_EQ(c.token, nullptr);
  EXPECT_EQ(c.namespace_name, "team-a");
  EXPECT_EQ(c.tls_server_name, "api.internal");
  EXPECT_FALSE(c.insecure_skip_tls_verify);
  EXPECT_EQ(c.context, "x");
  EXPECT_EQ(c.origin, "kubeconfig " + file + ", context \"x\"");
}

TEST_F(ClientConfigTest, ReadsFilesRelativeToTheKubeconfig) {
  write("sub/pki/ca.crt", ca_pem().cert);
  write("sub/pki/client.crt", client_pem().cert);
  write("sub/pki/client.key", client_pem().key);
  write("sub/token", "  file-token\n");
  const std::string file = write(
      "sub/config", config("{server: \"https://a\", certificate-authority: pki/ca.crt}",
                           "{client-certificate: pki/client.crt, client-key: ./pki/client.key, tokenFile: token}"));
  const ClientConfig c = load_ok(file);
  EXPECT_EQ(c.ca_pem, ca_pem().cert);
  EXPECT_EQ(c.client_certificate_pem, client_pem().cert);
  EXPECT_EQ(c.client_key_pem, client_pem().key);
  EXPECT_EQ(token(c), "file-token");
  const auto* source = dynamic_cast<const FileTokenSource*>(c.token.get());
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->path(), (dir_.path() / "sub/token").string());
  EXPECT_EQ(c.namespace_name, "default");
}

TEST_F(ClientConfigTest, TokensAndTheirPrecedence) {
  EXPECT_EQ(token(load_ok(write("a", config("{server: \"https://a\"}", "{token: abc}")))), "abc");
  write("t", "from-file");
  // tokenFile wins over an inline token, as in client-go.
  EXPECT_EQ(token(load_ok(write("b", config("{server: \"https://a\"}", "{token: abc, tokenFile: t}")))), "from-file");
  // A user may present a client certificate and a token together.
  const ClientConfig both = load_ok(write("c", config("{server: \"https://a\"}", "{token: abc, client-certificate-data: " +
                                                                                 base64(client_pem().cert) + ", client-key-data: " +
                                                                                 base64(client_pem().key) + "}")));
  EXPECT_EQ(token(both), "abc");
  EXPECT_EQ(both.client_key_pem, client_pem().key);
  // No user at all: anonymous.
  const std::string anonymous = write("d", "clusters: [{name: c, cluster: {server: \"https://a\"}}]\n"
                                           "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n");
  EXPECT_EQ(load_ok(anonymous).token, nullptr);

  Diagnostic d = error(write("e", config("{server: \"https://a\"}", "{token: \"abc def\"}")));
  EXPECT_EQ(d.rule, kRuleCredentials);
  EXPECT_EQ(d.path, "users[0].user.token");
  d = error(write("f", config("{server: \"https://a\"}", "{tokenFile: missing-token}")));
  EXPECT_EQ(d.path, "users[0].user.tokenFile");
  EXPECT_EQ(d.message, "cannot read " + (dir_.path() / "missing-token").string() + ": no such file or directory");
}

TEST_F(ClientConfigTest, ContextSelectionAndNamespace) {
  const std::string file = write("config", "clusters:\n- name: a\n  cluster: {server: \"https://a\"}\n"
                                           "- name: b\n  cluster: {server: \"https://b\"}\n"
                                           "contexts:\n- name: ca\n  context: {cluster: a, namespace: na}\n"
                                           "- name: cb\n  context: {cluster: b}\ncurrent-context: ca\n");
  EXPECT_EQ(load_ok(file).server.host, "a");
  EXPECT_EQ(load_ok(file).namespace_name, "na");
  ResolveOptions pick_b;
  pick_b.context = "cb";
  EXPECT_EQ(load_ok(file, pick_b).server.host, "b");
  EXPECT_EQ(load_ok(file, pick_b).namespace_name, "default");
  EXPECT_EQ(load_ok(file, pick_b).context, "cb");
  ResolveOptions ns;
  ns.namespace_override = "override";
  EXPECT_EQ(load_ok(file, ns).namespace_name, "override");

  ResolveOptions missing;
  missing.context = "nope";
  Diagnostic d = error(file, missing);
  EXPECT_EQ(d.rule, kRuleContext);
  EXPECT_EQ(d.path, "--context");
  EXPECT_EQ(d.file, file);
  EXPECT_EQ(d.message, "context \"nope\" is not defined (contexts defined: \"ca\", \"cb\")");

  d = error(write("dangling", "contexts: [{name: a, context: {cluster: c}}]\ncurrent-context: gone\n"));
  EXPECT_EQ(d.path, "current-context");
  EXPECT_EQ(d.pos.line, 2);
  EXPECT_EQ(d.message, "context \"gone\" is not defined (contexts defined: \"a\")");

  d = error(write("unset", "contexts: [{name: a, context: {cluster: c}}]\n"));
  EXPECT_EQ(d.rule, kRuleContext);
  EXPECT_EQ(d.message, "no context selected: no file sets current-context and no context was asked for (--context)");
}

TEST_F(ClientConfigTest, ContextsMustNameDefinedEntries) {
  Diagnostic d = error(write("a", "contexts: [{name: x, context: {namespace: n}}]\ncurrent-context: x\n"));
  EXPECT_EQ(d.rule, kRuleReference);
  EXPECT_EQ(d.path, "contexts[0].context.cluster");
  EXPECT_EQ(d.message, "context \"x\" names no cluster");
  const Diagnostics both = errors({write("b", "clusters: [{name: c1}]\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                                              "current-context: x\n")});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].path, "contexts[0].context.cluster");
  EXPECT_EQ(both[0].message, "context \"x\" names cluster \"c\", which no file defines (clusters defined: \"c1\")");
  EXPECT_EQ(both[0].pos.line, 4);
  EXPECT_EQ(both[1].path, "contexts[0].context.user");
  EXPECT_EQ(both[1].message, "context \"x\" names user \"u\", which no file defines (users defined: none)");
}

TEST_F(ClientConfigTest, ClusterErrors) {
  struct Case {
    std::string cluster, path, rule, message;
    int line = 5;  // the field's key; a missing field: the entry's "- name" line
  };
  write("ca.pem", ca_pem().cert);
  write("not-pem", "hello");
  for (const auto& c : std::vector<Case>{
           {"{certificate-authority-data: " + base64(ca_pem().cert) + "}", "clusters[0].cluster.server",
            std::string(kRuleRequired), "cluster \"c\" has no server", 4},
           {"{server: \"http://api.example\"}", "clusters[0].cluster.server", std::string(kRuleServer),
            "server \"http://api.example\" uses plain http: only https is supported (plain http is allowed only for a "
            "loopback test server, when the caller asks for it)"},
           {"{server: \"https://a\", proxy-url: \"http://proxy:3128\"}", "clusters[0].cluster.proxy-url",
            std::string(kRuleUnsupported), "proxies are not supported yet: gpubank would connect directly"},
           {"{server: \"https://a\", insecure-skip-tls-verify: true, certificate-authority: ca.pem}",
            "clusters[0].cluster.insecure-skip-tls-verify", std::string(kRuleConflict),
            "insecure-skip-tls-verify is true and a certificate authority is given: set one of them"},
           {"{server: \"https://a\", certificate-authority: not-pem}", "clusters[0].cluster.certificate-authority",
            std::string(kRuleCredentials),
            "certificate authority: no PEM certificate found (expected \"-----BEGIN CERTIFICATE-----\")"},
           {"{server: \"https://a\", certificate-authority-data: " + base64("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n") + "}",
            "clusters[0].cluster.certificate-authority-data", std::string(kRuleCredentials),
            "certificate authority: PEM certificate 1 is not a valid X.509 certificate"},
           {"{server: \"https://a\", certificate-authority: missing.pem}", "clusters[0].cluster.certificate-authority",
            std::string(kRuleUnreadable), "cannot read " + (dir_.path() / "missing.pem").string() + ": no such file or directory"},
       }) {
    const Diagnostic d = error(write("config", config(c.cluster, "{}")));
    EXPECT_EQ(d.path, c.path) << c.cluster;
    EXPECT_EQ(d.rule, c.rule) << c.cluster;
    EXPECT_EQ(d.message, c.message) << c.cluster;
    EXPECT_EQ(d.file, dir_.path() / "config");
    EXPECT_EQ(d.pos.line, c.line) << c.cluster;
  }
}

TEST_F(ClientConfigTest, CertificateAuthorityDataWinsOverTheFileAsInClientGo) {
  write("ca.pem", other_pem().cert);
  const ClientConfig c = load_ok(write("config", config("{server: \"https://a\", certificate-authority: ca.pem, "
                                                        "certificate-authority-data: " + base64(ca_pem().cert) + "}", "{}")));
  EXPECT_EQ(c.ca_pem, ca_pem().cert);
  // A bundle of several certificates is fine; insecure without a CA too.
  EXPECT_EQ(load_ok(write("bundle", config("{server: \"https://a\", certificate-authority-data: " +
                                           base64(ca_pem().cert + other_pem().cert) + "}", "{}"))).ca_pem,
            ca_pem().cert + other_pem().cert);
  EXPECT_TRUE(load_ok(write("insecure", config("{server: \"https://a\", insecure-skip-tls-verify: true}", "{}")))
                  .insecure_skip_tls_verify);
}

TEST_F(ClientConfigTest, LoopbackHttpOnlyWhenAsked) {
  const std::string file = write("config", config("{server: \"http://127.0.0.1:8080\"}", "{token: t}"));
  ResolveOptions fake;
  fake.allow_loopback_http = true;
  EXPECT_EQ(load_ok(file, fake).server.to_string(), "http://127.0.0.1:8080");
  EXPECT_EQ(error(file).rule, kRuleServer);
}

TEST_F(ClientConfigTest, UserErrors) {
  struct Case {
    std::string user, key, rule, message;
    int line = 8;  // the field's key; a missing field: the entry's "- name" line
  };
  const std::string cert = base64(client_pem().cert);
  const std::string key = base64(client_pem().key);
  write("client.crt", client_pem().cert);
  write("client.key", client_pem().key);
  for (const auto& c : std::vector<Case>{
           {"{exec: {command: aws}}", "exec", std::string(kRuleUnsupported),
            "user \"u\" uses an exec credential plugin: exec plugins are not supported yet"},
           {"{auth-provider: {name: oidc}}", "auth-provider", std::string(kRuleUnsupported),
            "user \"u\" uses an auth-provider plugin: auth providers are not supported yet"},
           {"{as-uid: \"1\"}", "as-uid", std::string(kRuleUnsupported),
            "user \"u\" impersonates (as-uid): impersonation is not supported yet"},
           {"{username: admin, password: pw}", "username", std::string(kRuleUnsupported),
            "user \"u\" uses basic authentication (username/password), which Kubernetes removed in 1.19"},
           {"{client-certificate-data: " + cert + "}", "client-certificate", std::string(kRuleRequired),
            "user \"u\": a client certificate needs its key and a key its certificate (set both, or neither)", 7},
           {"{client-key-data: " + key + "}", "client-key", std::string(kRuleRequired),
            "user \"u\": a client certificate needs its key and a key its certificate (set both, or neither)", 7},
           {"{client-certificate: client.crt, client-certificate-data: " + cert + ", client-key-data: " + key + "}",
            "client-certificate-data", std::string(kRuleConflict),
            "client-certificate and client-certificate-data are both set: set one"},
           {"{client-certificate-data: " + cert + ", client-key: client.key, client-key-data: " + key + "}",
            "client-key-data", std::string(kRuleConflict), "client-key and client-key-data are both set: set one"},
           {"{client-certificate-data: " + cert + ", client-key-data: " + base64(other_pem().key) + "}",
            "client-key-data", std::string(kRuleCredentials), "the client key does not belong to the client certificate"},
           {"{client-certificate-data: " + base64("not a certificate") + ", client-key-data: " + key + "}",
            "client-certificate-data", std::string(kRuleCredentials),
            "client certificate: no PEM certificate found (expected \"-----BEGIN CERTIFICATE-----\")"},
           {"{client-certificate: client.crt, client-key-data: " + base64("junk") + "}", "client-key-data",
            std::string(kRuleCredentials),
            "no PEM private key found (expected \"-----BEGIN PRIVATE KEY-----\", RSA or EC)"},
           {"{client-certificate: client.crt, client-key-data: " +
                base64("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n") + "}",
            "client-key-data", std::string(kRuleCredentials),
            "the client key is encrypted: a kubeconfig key must be unencrypted"},
       }) {
    const Diagnostic d = error(write("config", config("{server: \"https://a\"}", c.user)));
    EXPECT_EQ(d.path, "users[0].user." + c.key) << c.user;
    EXPECT_EQ(d.rule, c.rule) << c.user;
    EXPECT_EQ(d.message, c.message) << c.user;
    EXPECT_EQ(d.pos.line, c.line) << c.user;
  }
}

TEST_F(ClientConfigTest, OnlyTheUsedEntriesAreChecked) {
  // An exec user, a proxied cluster and non-PEM data elsewhere in the file do not matter.
  const std::string file = write(
      "config", "clusters:\n- name: good\n  cluster: {server: \"https://a\"}\n"
                "- name: proxied\n  cluster: {server: \"https://b\", proxy-url: \"http://p\", certificate-authority-data: " +
                    base64("junk") + "}\nusers:\n- name: plain\n  user: {token: t}\n"
                                     "- name: cloud\n  user: {exec: {command: gke-gcloud-auth-plugin}}\n"
                                     "contexts:\n- name: ok\n  context: {cluster: good, user: plain}\n"
                                     "- name: bad\n  context: {cluster: proxied, user: cloud}\ncurrent-context: ok\n");
  EXPECT_EQ(token(load_ok(file)), "t");
  ResolveOptions bad;
  bad.context = "bad";
  const Diagnostics all = errors({file}, bad);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].path, "clusters[1].cluster.proxy-url");
  EXPECT_EQ(all[1].path, "clusters[1].cluster.certificate-authority-data");
  EXPECT_EQ(all[2].path, "users[1].user.exec");
  EXPECT_EQ(all[2].to_string(), file + ":10:10: error: users[1].user.exec: user \"cloud\" uses an exec credential plugin: "
                                       "exec plugins are not supported yet [kubeconfig.unsupported]");
}

TEST(KubeconfigList, SplitsDropsEmptiesAndRepeats) {
  EXPECT_EQ(split_kubeconfig_list("a:b::a:c:"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_kubeconfig_list(""), std::vector<std::string>{});
  EXPECT_EQ(split_kubeconfig_list(":::"), std::vector<std::string>{});
}

TEST_F(ClientConfigTest, KubeconfigListMergesAndSkipsMissingFiles) {
  const std::string one = write("one", "clusters: [{name: c, cluster: {server: \"https://one\"}}]\n");
  const std::string two = write("two", "clusters: [{name: c, cluster: {server: \"https://two\"}}]\n"
                                       "contexts: [{name: x, context: {cluster: c, namespace: two}}]\ncurrent-context: x\n");
  const std::string missing = (dir_.path() / "missing").string();
  Environment env;
  env.kubeconfig = missing + ":" + one + "::" + two;
  env.service_host = "10.0.0.1";  // KUBECONFIG comes first
  env.service_port = "443";
  auto c = load_client_config({}, env);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->server.host, "one");
  EXPECT_EQ(c->namespace_name, "two");
  EXPECT_EQ(c->origin, "kubeconfig " + one + ":" + two + ", context \"x\"");

  env.kubeconfig = missing + ":" + missing + "2";
  c = load_client_config({}, env);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), missing + ":" + missing + "2: error: (file): none of the kubeconfig files exists "
                       "[kubeconfig.not-found]");

  // A broken file in the list fails the load, naming that file.
  const std::string broken = write("broken", "clusters: 5\n");
  env.kubeconfig = one + ":" + broken;
  c = load_client_config({}, env);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), broken + ":1:11: error: clusters: expected a list, got an integer 5 [kubeconfig.wrong-type]");
}

TEST_F(ClientConfigTest, LoadingOrder) {
  const std::string explicit_file = write("explicit", config("{server: \"https://explicit\"}", "{}"));
  const std::string env_file = write("env", config("{server: \"https://env\"}", "{}"));
  write("home/.kube/config", config("{server: \"https://home\"}", "{}"));
  Environment env;
  env.kubeconfig = env_file;
  env.home = (dir_.path() / "home").string();
  LoadOptions flag;
  flag.kubeconfig = explicit_file;
  EXPECT_EQ(load_client_config(flag, env)->server.host, "explicit");
  EXPECT_EQ(load_client_config({}, env)->server.host, "env");
  env.kubeconfig.reset();
  EXPECT_EQ(load_client_config({}, env)->server.host, "home");
  env.kubeconfig = "";  // set but empty: as if unset
  EXPECT_EQ(load_client_config({}, env)->server.host, "home");

  // --kubeconfig must exist.
  flag.kubeconfig = (dir_.path() / "nope").string();
  auto c = load_client_config(flag, env);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), flag.kubeconfig + ": error: (file): kubeconfig file does not exist [kubeconfig.not-found]");

  env.home = (dir_.path() / "empty-home").string();
  c = load_client_config({}, env);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("no cluster configuration: --kubeconfig not given, KUBECONFIG not set, not in a cluster"),
            std::string::npos);
  env.home.reset();
  c = load_client_config({}, env);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("(environment): error: HOME: no cluster configuration"), std::string::npos) << c.error();
}

TEST_F(ClientConfigTest, FilesAboveTheSizeLimitAreRefused) {
  const std::string big = write("big", "# " + std::string(kMaxFileBytes, 'x') + "\n");
  LoadOptions options;
  options.kubeconfig = big;
  auto c = load_client_config(options, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), big + ": error: (file): " + big + " is 16777219 bytes, above the limit of 16777216 "
                       "[kubeconfig.unreadable]");
}

// ---- in-cluster ---------------------------------------------------------------------

class InClusterTest : public ClientConfigTest {
 protected:
  InClusterTest() {
    env_.service_host = "10.96.0.1";
    env_.service_port = "443";
    env_.service_account_dir = (dir_.path() / "sa").string();
    write("sa/token", "sa-token-1\n");
    write("sa/ca.crt", ca_pem().cert);
    write("sa/namespace", "gpubank-system\n");
  }
  Environment env_;
};

TEST_F(InClusterTest, ReadsTheServiceAccount) {
  auto c = load_client_config({}, env_);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->server.to_string(), "https://10.96.0.1:443");
  EXPECT_EQ(c->ca_pem, ca_pem().cert);
  EXPECT_EQ(token(*c), "sa-token-1");
  EXPECT_EQ(c->namespace_name, "gpubank-system");
  EXPECT_EQ(c->context, "");
  EXPECT_EQ(c->origin, "in-cluster (service account " + env_.service_account_dir + ")");
  EXPECT_TRUE(c->client_certificate_pem.empty());
}

TEST_F(InClusterTest, BracketsIpv6Hosts) {
  env_.service_host = "fd00:10:96::1";
  auto c = load_client_config({}, env_);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->server.host, "fd00:10:96::1");
  EXPECT_EQ(c->server.to_string(), "https://[fd00:10:96::1]:443");
}

TEST_F(InClusterTest, NamespaceFromOverrideThenPodNamespaceThenFileThenDefault) {
  LoadOptions options;
  options.resolve.namespace_override = "flag";
  env_.pod_namespace = "pod";
  EXPECT_EQ(load_client_config(options, env_)->namespace_name, "flag");
  EXPECT_EQ(load_client_config({}, env_)->namespace_name, "pod");
  env_.pod_namespace.reset();
  EXPECT_EQ(load_client_config({}, env_)->namespace_name, "gpubank-system");
  fs::remove(dir_.path() / "sa/namespace");
  EXPECT_EQ(load_client_config({}, env_)->namespace_name, "default");
}

TEST_F(InClusterTest, RotatedTokensAreSeen) {
  std::chrono::steady_clock::time_point now{};
  LoadOptions options;
  options.resolve.clock = [&] { return now; };
  auto c = load_client_config(options, env_);
  ASSERT_TRUE(c.ok()) << c.error();
  write("sa/token", "sa-token-2\n");
  EXPECT_EQ(token(*c), "sa-token-1");
  now += FileTokenSource::kDefaultReread;
  EXPECT_EQ(token(*c), "sa-token-2");
}

TEST_F(InClusterTest, Errors) {
  Diagnostics out;
  Environment env = env_;
  env.service_port = "http";
  EXPECT_FALSE(load_in_cluster(env, {}, out).has_value());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_string(), "(environment): error: KUBERNETES_SERVICE_HOST: server \"https://10.96.0.1:http\": port "
                                "\"http\" is not a number in 1..65535 (from KUBERNETES_SERVICE_HOST and "
                                "KUBERNETES_SERVICE_PORT) [in-cluster.config]");

  out.clear();
  env = env_;
  env.service_host.reset();
  EXPECT_FALSE(load_in_cluster(env, {}, out).has_value());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].path, "KUBERNETES_SERVICE_HOST");

  out.clear();
  ResolveOptions with_context;
  with_context.context = "x";
  EXPECT_FALSE(load_in_cluster(env_, with_context, out).has_value());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].path, "--context");

  write("sa/ca.crt", "not a certificate");
  fs::remove(dir_.path() / "sa/token");
  auto c = load_client_config({}, env_);
  ASSERT_FALSE(c.ok());
  const std::string sa = env_.service_account_dir;
  EXPECT_EQ(c.error(), sa + "/token: error: (service account token): cannot read " + sa +
                           "/token: no such file or directory [in-cluster.config]\n" + sa +
                           "/ca.crt: error: (service account ca.crt): certificate authority: no PEM certificate found "
                           "(expected \"-----BEGIN CERTIFICATE-----\") [in-cluster.config]");
}

}  // namespace
}  // namespace gpubank::k8s
