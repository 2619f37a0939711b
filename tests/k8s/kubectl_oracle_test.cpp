// The loader against the real kubectl: for generated kubeconfig sets (single files,
// KUBECONFIG merges with missing entries, --context, relative paths), what
// `kubectl config view --minify --flatten -o json` shows for the selected context must be
// what load_client_config resolves: context name, server, CA bytes, client certificate
// and key, token (or token file), namespace, tls-server-name and the insecure flag. Sets
// kubectl refuses must be refused here too. --flatten is --raw plus the referenced files
// read and embedded, relative to each kubeconfig's directory: kubectl's own resolution.
//
// CI without kubectl skips these with a message; scripts/bootstrap.sh does not install it.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "fixture.hpp"
#include "k8s/base64.hpp"
#include "k8s/client_config.hpp"
#include "k8s/credentials.hpp"
#include "support/process.hpp"

namespace gpubank::k8s {
// The alias src/k8s/watch_event.hpp declares (a unity build may include it after this file).
using Json = nlohmann::json;
namespace {

using namespace testing;

struct Invocation {
  std::optional<std::string> kubeconfig_env;  // KUBECONFIG
  std::string kubeconfig_flag;                // --kubeconfig
  std::string context;                        // --context
};

class KubectlOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    kubectl_ = gpubank::testing::find_on_path("kubectl");
    if (!kubectl_) GTEST_SKIP() << "kubectl is not on PATH: the kubeconfig oracle tests need the real kubectl (v1.32)";
  }

  std::string write(const std::string& name, const std::string& text) { return put(dir_.path(), name, text); }

  // kubectl's view of the selected context, or its error.
  gpubank::testing::ProcessResult kubectl_view(const Invocation& in) {
    std::vector<std::string> argv{kubectl_->string(), "config", "view", "--minify", "--flatten", "-o", "json"};
    if (!in.kubeconfig_flag.empty()) argv.push_back("--kubeconfig=" + in.kubeconfig_flag);
    if (!in.context.empty()) argv.push_back("--context=" + in.context);
    // HOME points into the scratch directory: the developer's ~/.kube/config stays out.
    return gpubank::testing::run_process(argv, {{"KUBECONFIG", in.kubeconfig_env},
                                                {"HOME", (dir_.path() / "home").string()}});
  }

  Expected<ClientConfig> ours(const Invocation& in) {
    LoadOptions options;
    options.kubeconfig = in.kubeconfig_flag;
    options.resolve.context = in.context;
    Environment env;
    env.kubeconfig = in.kubeconfig_env;
    env.home = (dir_.path() / "home").string();
    return load_client_config(options, env);
  }

  static std::string decoded(const Json& object, const char* key) {
    if (!object.contains(key)) return "";
    auto bytes = decode_base64(object.at(key).get<std::string>());
    EXPECT_TRUE(bytes.ok()) << key;
    return bytes.ok() ? *bytes : "";
  }

  // Both accept and agree on every field, or both refuse.
  void agree(const Invocation& in, const std::string& what) {
    SCOPED_TRACE(what);
    const auto view = kubectl_view(in);
    const auto mine = ours(in);
    if (view.status != 0) {
      EXPECT_FALSE(mine.ok()) << "kubectl refused (" << view.err << ") but gpubank resolved it";
      return;
    }
    ASSERT_TRUE(mine.ok()) << mine.error() << "\nkubectl showed: " << view.out;
    const Json v = Json::parse(view.out);
    const std::string name = v.at("current-context").get<std::string>();
    EXPECT_EQ(mine->context, name);
    ASSERT_EQ(v.at("contexts").size(), 1u);
    const Json context = v.at("contexts")[0].at("context");
    EXPECT_EQ(mine->namespace_name, context.value("namespace", "default"));
    ASSERT_EQ(v.at("clusters").size(), 1u);
    const Json cluster = v.at("clusters")[0].at("cluster");
    auto server = parse_server_url(cluster.at("server").get<std::string>());
    ASSERT_TRUE(server.ok()) << server.error();
    EXPECT_EQ(mine->server, *server);
    EXPECT_EQ(mine->ca_pem, decoded(cluster, "certificate-authority-data"));
    EXPECT_EQ(mine->tls_server_name, cluster.value("tls-server-name", ""));
    EXPECT_EQ(mine->insecure_skip_tls_verify, cluster.value("insecure-skip-tls-verify", false));
    const Json user = v.contains("users") && v.at("users").is_array() && !v.at("users").empty()
                          ? v.at("users")[0].at("user")
                          : Json::object();
    EXPECT_EQ(mine->client_certificate_pem, decoded(user, "client-certificate-data"));
    EXPECT_EQ(mine->client_key_pem, decoded(user, "client-key-data"));
    if (user.contains("tokenFile")) {
      // --flatten leaves tokenFile as written: relative to the file that defined the user.
      const auto* source = dynamic_cast<const FileTokenSource*>(mine->token.get());
      ASSERT_NE(source, nullptr);
      const std::string written = user.at("tokenFile").get<std::string>();
      EXPECT_TRUE(source->path() == written || source->path().ends_with("/" + written)) << source->path();
      EXPECT_EQ(*mine->token->token(), std::string(trim_whitespace(read_file(source->path()))));
    } else if (user.contains("token")) {
      ASSERT_NE(mine->token, nullptr);
      EXPECT_EQ(*mine->token->token(), user.at("token").get<std::string>());
    } else {
      EXPECT_EQ(mine->token, nullptr);
    }
    ++compared_;
  }

  ScratchDir dir_;
  std::optional<std::filesystem::path> kubectl_;
  int compared_ = 0;
};

TEST_F(KubectlOracle, SingleFileWithEmbeddedCredentials) {
  const std::string file = write(
      "single", "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster:\n    server: https://prod.example:6443\n"
                "    certificate-authority-data: " + base64(ca_pem().cert) + "\n    tls-server-name: api.internal\n"
                "users:\n- name: admin\n  user:\n    client-certificate-data: " + base64(client_pem().cert) +
                "\n    client-key-data: " + base64(client_pem().key) + "\n    token: bearer-abc\n"
                "contexts:\n- name: prod-admin\n  context: {cluster: prod, user: admin, namespace: ops}\n"
                "- name: prod-anon\n  context: {cluster: prod}\ncurrent-context: prod-admin\n");
  agree({std::nullopt, file, ""}, "--kubeconfig");
  agree({file, "", ""}, "KUBECONFIG");
  agree({file, "", "prod-anon"}, "--context without user or namespace");
  EXPECT_EQ(compared_, 3);
}

TEST_F(KubectlOracle, KubeconfigMergesWithRelativePathsAndMissingFiles) {
  write("a/pki/ca.crt", ca_pem().cert);
  write("a/pki/client.crt", client_pem().cert);
  write("a/pki/client.key", client_pem().key);
  write("b/ca.crt", other_pem().cert);
  write("b/tokens/dev", "dev-token\n");
  // a: no current-context; defines "shared" with a relative CA and a cert user.
  const std::string a = write("a/config", "apiVersion: v1\nkind: Config\nclusters:\n"
                                          "- name: shared\n  cluster: {server: \"https://a.example\", certificate-authority: pki/ca.crt}\n"
                                          "users:\n- name: alice\n  user: {client-certificate: pki/client.crt, client-key: pki/client.key}\n"
                                          "contexts:\n- name: a-ctx\n  context: {cluster: shared, user: alice, namespace: from-a}\n");
  // b: redefines "shared" (loses to a), sets current-context, a tokenFile user.
  const std::string b = write("b/config", "apiVersion: v1\nkind: Config\nclusters:\n"
                                          "- name: shared\n  cluster: {server: \"https://b.example\", certificate-authority: ca.crt}\n"
                                          "- name: dev\n  cluster: {server: \"https://[fd00::1]:8443\", certificate-authority: ca.crt}\n"
                                          "users:\n- name: alice\n  user: {token: loses}\n- name: bob\n  user: {tokenFile: tokens/dev}\n"
                                          "contexts:\n- name: a-ctx\n  context: {cluster: dev, user: bob}\n"
                                          "- name: b-ctx\n  context: {cluster: shared, user: bob, namespace: from-b}\n"
                                          "- name: dev-ctx\n  context: {cluster: dev, user: alice}\n"
                                          "current-context: b-ctx\n");
  // c: insecure cluster, a current-context that comes too late to count.
  const std::string c = write("c/config", "apiVersion: v1\nkind: Config\nclusters:\n"
                                          "- name: lab\n  cluster: {server: \"https://10.1.2.3:6443\", insecure-skip-tls-verify: true, tls-server-name: lab}\n"
                                          "users:\n- name: carol\n  user: {token: carol-token}\n"
                                          "contexts:\n- name: lab-ctx\n  context: {cluster: lab, user: carol}\n"
                                          "current-context: lab-ctx\n");
  const std::string missing = (dir_.path() / "missing/config").string();
  const std::string list = missing + ":" + a + "::" + b + ":" + c + ":" + a;
  agree({list, "", ""}, "current-context from b, cluster from a");
  agree({list, "", "a-ctx"}, "a-ctx from a, not b");
  agree({list, "", "dev-ctx"}, "dev-ctx: IPv6 server, alice from a");
  agree({list, "", "lab-ctx"}, "lab-ctx from c");
  agree({c + ":" + b, "", ""}, "c first: its current-context wins");
  agree({b + ":" + a, "", "a-ctx"}, "b first");
  agree({list, "", "no-such-context"}, "unknown --context");
  EXPECT_EQ(compared_, 6);
}

TEST_F(KubectlOracle, BothRefuseBrokenSets) {
  const std::string dup = write("dup", "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://a\"}\n"
                                       "- name: c\n  cluster: {server: \"https://b\"}\n"
                                       "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n");
  const std::string no_user = write("no-user", "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://a\"}}]\n"
                                               "contexts: [{name: x, context: {cluster: c, user: ghost}}]\ncurrent-context: x\n");
  const std::string no_cluster = write("no-cluster", "apiVersion: v1\nkind: Config\n"
                                                     "contexts: [{name: x, context: {cluster: ghost}}]\ncurrent-context: x\n");
  const std::string bad_base64 = write("bad-base64", "apiVersion: v1\nkind: Config\n"
                                                     "clusters: [{name: c, cluster: {server: \"https://a\", certificate-authority-data: \"@@@@\"}}]\n"
                                                     "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n");
  const std::string wrong_kind = write("pod", "apiVersion: v1\nkind: Pod\n");
  for (const auto& file : {dup, no_user, no_cluster, bad_base64, wrong_kind}) {
    const auto view = kubectl_view({file, "", ""});
    EXPECT_NE(view.status, 0) << file << ": kubectl accepted it: " << view.out;
    EXPECT_FALSE(ours({file, "", ""}).ok()) << file;
  }
  // A missing file in KUBECONFIG is skipped by both.
  agree({(dir_.path() / "nope").string() + ":" + write("ok", "apiVersion: v1\nkind: Config\n"
                                                             "clusters: [{name: c, cluster: {server: \"https://a\"}}]\n"
                                                             "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n"),
         "", ""},
        "missing file skipped");
  EXPECT_EQ(compared_, 1);
}

// `config view` does not check that a context is usable; a request does, before it
// connects. Against a port where nothing listens, kubectl either refuses the kubeconfig or
// reaches the network ("connection refused"): an oracle for client-go's usability checks.
TEST_F(KubectlOracle, UsabilityChecksMatchThoseOfARequest) {
  const auto with = [&](const std::string& name, const std::string& cluster, const std::string& user) {
    return write(name, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: " + cluster +
                           "\nusers:\n- name: u\n  user: " + user +
                           "\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n");
  };
  write("client.crt", client_pem().cert);
  const std::string nowhere = "{server: \"https://127.0.0.1:1\"";
  struct Case {
    std::string file;
    bool usable;
  };
  for (const auto& c : std::vector<Case>{
           {with("insecure-with-ca", nowhere + ", insecure-skip-tls-verify: true, certificate-authority-data: " +
                                         base64(ca_pem().cert) + "}", "{token: t}"), false},
           {with("cert-file-and-data", nowhere + "}", "{client-certificate: client.crt, client-certificate-data: " +
                                                          base64(client_pem().cert) + ", client-key-data: " +
                                                          base64(client_pem().key) + "}"), false},
           {with("plain", nowhere + ", certificate-authority-data: " + base64(ca_pem().cert) + "}", "{token: t}"), true},
           {with("insecure", nowhere + ", insecure-skip-tls-verify: true}", "{token: t}"), true},
       }) {
    const auto request = gpubank::testing::run_process(
        {kubectl_->string(), "get", "--raw", "/version", "--request-timeout=5s", "--kubeconfig=" + c.file},
        {{"KUBECONFIG", std::nullopt}, {"HOME", (dir_.path() / "home").string()}});
    const bool reached_network = request.err.find("refused") != std::string::npos;
    EXPECT_EQ(reached_network, c.usable) << c.file << ": " << request.err;
    EXPECT_EQ(ours({std::nullopt, c.file, ""}).ok(), c.usable) << c.file;
  }
}

}  // namespace
}  // namespace gpubank::k8s
