#include "k8s/kubeconfig.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gpubank::k8s {
namespace {

struct Parsed {
  std::optional<Kubeconfig> config;
  Diagnostics diagnostics;
};

Parsed parse(std::string_view text, const KubeconfigLimits& limits = {}) {
  Parsed p;
  p.config = parse_kubeconfig(text, "/home/a/.kube/config", "/home/a/.kube", p.diagnostics, limits);
  return p;
}

Kubeconfig parse_ok(std::string_view text) {
  Parsed p = parse(text);
  EXPECT_TRUE(p.config.has_value());
  for (const auto& d : p.diagnostics) ADD_FAILURE() << d.to_string();
  return p.config.value_or(Kubeconfig{});
}

// The one error of a rejected file.
Diagnostic parse_error(std::string_view text, const KubeconfigLimits& limits = {}) {
  Parsed p = parse(text, limits);
  EXPECT_FALSE(p.config.has_value());
  EXPECT_EQ(p.diagnostics.size(), 1u);
  for (const auto& d : p.diagnostics) EXPECT_EQ(d.file, "/home/a/.kube/config");
  return p.diagnostics.empty() ? Diagnostic{} : p.diagnostics.front();
}

constexpr std::string_view kFull = R"(apiVersion: v1
kind: Config
preferences: {colors: true}
clusters:
- name: prod
  cluster:
    server: https://prod.example:6443
    certificate-authority: ../certs/ca.pem
    certificate-authority-data: SGVsbG8=
    insecure-skip-tls-verify: false
    tls-server-name: api.internal
    proxy-url: socks5://proxy:1080
    disable-compression: true
    extensions: [{name: x, extension: {deep: {deeper: [1, 2]}}}]
users:
- name: alice
  user:
    client-certificate: /etc/alice.crt
    client-certificate-data: Y2VydA==
    client-key: alice.key
    client-key-data: a2V5
    token: t0k
    tokenFile: tokens/alice
    username: alice
    password: secret
    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}
    auth-provider: {name: oidc}
    as: bob
    as-groups: [admins]
contexts:
- name: prod-alice
  context: {cluster: prod, user: alice, namespace: team-a}
current-context: prod-alice
)";

TEST(Kubeconfig, ReadsEveryField) {
  const Kubeconfig k = parse_ok(kFull);
  EXPECT_EQ(k.file, "/home/a/.kube/config");
  ASSERT_EQ(k.clusters.size(), 1u);
  const Named<Cluster>& c = k.clusters[0];
  EXPECT_EQ(c.name, "prod");
  EXPECT_EQ(c.value.server, "https://prod.example:6443");
  EXPECT_EQ(c.value.certificate_authority, "/home/a/certs/ca.pem");  // relative to the file's directory
  EXPECT_EQ(c.value.certificate_authority_data, "Hello");
  EXPECT_FALSE(c.value.insecure_skip_tls_verify);
  EXPECT_EQ(c.value.tls_server_name, "api.internal");
  EXPECT_EQ(c.value.proxy_url, "socks5://proxy:1080");
  EXPECT_EQ(c.origin.path, "clusters[0]");
  EXPECT_EQ(c.origin.pos.line, 5);
  EXPECT_EQ(c.origin.field_path("cluster", "server"), "clusters[0].cluster.server");
  EXPECT_EQ(c.origin.field_pos("server").line, 7);
  EXPECT_EQ(c.origin.field_pos("server").column, 5);  // the key
  EXPECT_EQ(c.origin.field_pos("not-there").line, 5);  // else the entry

  ASSERT_EQ(k.users.size(), 1u);
  const User& u = k.users[0].value;
  EXPECT_EQ(u.client_certificate, "/etc/alice.crt");  // absolute paths stay
  EXPECT_EQ(u.client_certificate_data, "cert");
  EXPECT_EQ(u.client_key, "/home/a/.kube/alice.key");
  EXPECT_EQ(u.client_key_data, "key");
  EXPECT_EQ(u.token, "t0k");
  EXPECT_EQ(u.token_file, "/home/a/.kube/tokens/alice");
  EXPECT_EQ(u.username, "alice");
  EXPECT_EQ(u.password, "secret");
  EXPECT_TRUE(u.exec);
  EXPECT_TRUE(u.auth_provider);
  EXPECT_EQ(u.impersonation, (std::vector<std::string>{"as", "as-groups"}));

  ASSERT_EQ(k.contexts.size(), 1u);
  EXPECT_EQ(k.contexts[0].name, "prod-alice");
  EXPECT_EQ(k.contexts[0].value.cluster, "prod");
  EXPECT_EQ(k.contexts[0].value.user, "alice");
  EXPECT_EQ(k.contexts[0].value.namespace_name, "team-a");
  EXPECT_EQ(k.current_context, "prod-alice");
  EXPECT_EQ(k.current_context_pos.line, 33);
}

TEST(Kubeconfig, EmptyAndMinimalFilesAreEmptyConfigs) {
  for (std::string_view text : {"", "\n", "# only a comment\n", "apiVersion: v1\nkind: Config\n",
                                "clusters:\nusers: null\ncontexts: []\n", "current-context: \"\"\n"}) {
    const Kubeconfig k = parse_ok(text);
    EXPECT_TRUE(k.clusters.empty() && k.users.empty() && k.contexts.empty() && k.current_context.empty()) << text;
  }
  // Entries without a body, and null fields, are empty (Go's zero values).
  const Kubeconfig k = parse_ok("users:\n- name: anonymous\n- name: nulls\n  user: {token: null, exec: null}\n");
  ASSERT_EQ(k.users.size(), 2u);
  EXPECT_TRUE(k.users[1].value.token.empty());
  EXPECT_FALSE(k.users[1].value.exec);
}

TEST(Kubeconfig, IgnoresUnknownFieldsAsKubectlDoes) {
  const Kubeconfig k = parse_ok("clusters:\n- name: a\n  cluster: {server: https://a, Server: 5, future-field: [1]}\n"
                                "  extra: true\nnewTopLevel: {x: 1}\n");
  EXPECT_EQ(k.clusters.at(0).value.server, "https://a");
}

TEST(Kubeconfig, RefusesOtherVersionsAndKinds) {
  Diagnostic d = parse_error("apiVersion: v2\nkind: Config\n");
  EXPECT_EQ(d.rule, kRuleVersion);
  EXPECT_EQ(d.path, "apiVersion");
  EXPECT_EQ(d.message, "unsupported apiVersion \"v2\": kubeconfig files are apiVersion v1");
  EXPECT_EQ(d.pos.line, 1);
  d = parse_error("apiVersion: v1\nkind: Pod\n");
  EXPECT_EQ(d.path, "kind");
  EXPECT_EQ(d.message, "kind is \"Pod\", not Config: not a kubeconfig file");
}

TEST(Kubeconfig, WrongTypesNameTheField) {
  struct Case {
    std::string text, path, message;
  };
  for (const auto& c : std::vector<Case>{
           {"clusters:\n- name: a\n  cluster: {server: 6443}\n", "clusters[0].cluster.server",
            "expected a string, got an integer 6443"},
           {"clusters:\n- name: a\n  cluster: {insecure-skip-tls-verify: \"true\"}\n",
            "clusters[0].cluster.insecure-skip-tls-verify", "expected true or false, got a string \"true\""},
           {"users:\n- name: a\n- name: b\n- name: c\n  user: {client-key-data: [a]}\n", "users[2].user.client-key-data",
            "expected a string, got a list"},
           {"users:\n- name: a\n  user: [token]\n", "users[0].user", "expected a mapping, got a list"},
           {"contexts:\n- name: 7\n", "contexts[0].name", "expected a string, got an integer 7"},
           {"contexts:\n- name: a\n  context: {namespace: {a: b}}\n", "contexts[0].context.namespace",
            "expected a string, got an object"},
           {"clusters: {name: a}\n", "clusters", "expected a list, got an object"},
           {"clusters:\n- just-a-string\n", "clusters[0]", "expected a mapping, got a string \"just-a-string\""},
           {"current-context: [a]\n", "current-context", "expected a string, got a list"},
           {"- a\n- b\n", "(document)", "expected a mapping, got a list"},
           {"just text\n", "(document)", "expected a mapping, got a string \"just text\""},
       }) {
    const Diagnostic d = parse_error(c.text);
    EXPECT_EQ(d.rule, kRuleWrongType) << c.text;
    EXPECT_EQ(d.path, c.path) << c.text;
    EXPECT_EQ(d.message, c.message) << c.text;
    EXPECT_GT(d.pos.line, 0) << c.text;
  }
}

TEST(Kubeconfig, EveryEntryNeedsAName) {
  const Diagnostic d = parse_error("clusters:\n- cluster: {server: https://a}\n");
  EXPECT_EQ(d.rule, kRuleRequired);
  EXPECT_EQ(d.path, "clusters[0].name");
}

// kubectl: error converting *[]NamedCluster into *map[string]*api.Cluster: duplicate name "c1" in list
TEST(Kubeconfig, DuplicateNamesInOneFileAreErrorsAsInKubectl) {
  for (const auto& [list, body] : std::vector<std::pair<std::string, std::string>>{
           {"clusters", "cluster"}, {"users", "user"}, {"contexts", "context"}}) {
    const Diagnostic d = parse_error(list + ":\n- name: a\n- name: b\n- name: a\n  " + body + ": {}\n");
    EXPECT_EQ(d.rule, kRuleDuplicateName);
    EXPECT_EQ(d.path, list + "[2].name");
    EXPECT_EQ(d.message, "duplicate name \"a\": " + list + "[0] already has it (kubectl refuses such a file too)");
    EXPECT_EQ(d.pos.line, 4);
  }
  // The same name in different lists is fine.
  parse_ok("clusters: [{name: a}]\nusers: [{name: a}]\ncontexts: [{name: a}]\n");
}

TEST(Kubeconfig, KeysWrittenTwiceAreErrors) {
  Diagnostic d = parse_error("current-context: a\ncurrent-context: b\n");
  EXPECT_EQ(d.rule, kRuleDuplicateKey);
  EXPECT_EQ(d.path, "current-context");
  EXPECT_EQ(d.pos.line, 2);
  d = parse_error("users:\n- name: a\n  user:\n    token: x\n    token: y\n");
  EXPECT_EQ(d.path, "users[0].user.token");
}

TEST(Kubeconfig, BadBase64NamesTheField) {
  const Diagnostic d = parse_error("users:\n- name: a\n- name: b\n- name: c\n  user:\n    client-key-data: \"a2V5!!\"\n");
  EXPECT_EQ(d.rule, kRuleBase64);
  EXPECT_EQ(d.path, "users[2].user.client-key-data");
  EXPECT_EQ(d.message, "not valid base64: invalid base64 character '!' at offset 4");
  EXPECT_EQ(d.pos.line, 6);
  EXPECT_EQ(d.to_string(),
            "/home/a/.kube/config:6:22: error: users[2].user.client-key-data: not valid base64: invalid base64 "
            "character '!' at offset 4 [kubeconfig.base64]");
  EXPECT_EQ(parse_error("clusters:\n- name: a\n  cluster: {certificate-authority-data: QQ}\n").path,
            "clusters[0].cluster.certificate-authority-data");
  EXPECT_EQ(parse_error("users:\n- name: a\n  user: {client-certificate-data: \"Q Q==\"}\n").path,
            "users[0].user.client-certificate-data");
}

TEST(Kubeconfig, ReportsEveryProblemOfAFile) {
  Parsed p = parse("clusters:\n- name: a\n  cluster: {server: 1}\nusers:\n- name: b\n  user: {token: 2}\n");
  EXPECT_FALSE(p.config.has_value());
  ASSERT_EQ(p.diagnostics.size(), 2u);
  EXPECT_EQ(p.diagnostics[0].path, "clusters[0].cluster.server");
  EXPECT_EQ(p.diagnostics[1].path, "users[0].user.token");
}

TEST(Kubeconfig, HostileInputIsRefusedWithAPosition) {
  // NUL (yaml-cpp would read "\0x41" as an escape): refused before parsing.
  Diagnostic d = parse_error(std::string_view("current-context: a\0x41\n", 23));
  EXPECT_EQ(d.rule, "schema.syntax");
  EXPECT_EQ(d.pos.line, 1);
  EXPECT_EQ(d.pos.column, 19);
  EXPECT_NE(d.message.find("U+0000 (NUL)"), std::string::npos) << d.message;
  d = parse_error("current-context: \x1b[31mred\n");
  EXPECT_NE(d.message.find("U+001B (ESC)"), std::string::npos) << d.message;
  d = parse_error("current-context: \xff\xfe\n");
  EXPECT_EQ(d.rule, "schema.syntax");

  KubeconfigLimits limits;
  limits.max_bytes = 1000;
  d = parse_error(std::string(1001, '#'), limits);
  EXPECT_EQ(d.rule, "schema.too-large");
  EXPECT_EQ(d.message, "input is 1001 bytes, above the limit of 1000");

  std::string deep = "extensions: ";
  for (int i = 0; i < 100; ++i) deep += "[";
  for (int i = 0; i < 100; ++i) deep += "]";
  d = parse_error(deep);
  EXPECT_EQ(d.rule, "schema.too-large");
  EXPECT_EQ(d.message, "nesting deeper than 32 levels");

  // Billion laughs: aliases expand within the node budget only.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    laughs += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) laughs += std::string(i ? ", *" : "*") + static_cast<char>(c - 1);
    laughs += "]\n";
  }
  d = parse_error(laughs);
  EXPECT_EQ(d.rule, "schema.too-large");

  limits = {};
  limits.max_entries = 3;
  d = parse_error("contexts: [{name: a}, {name: b}, {name: c}, {name: d}]\n", limits);
  EXPECT_EQ(d.rule, kRuleTooMany);
  EXPECT_EQ(d.path, "contexts");
  EXPECT_EQ(d.message, "4 entries, above the limit of 3");

  d = parse_error("clusters:\n- name: a\n  cluster: {certificate-authority: \"ca\\0.pem\"}\n");
  EXPECT_EQ(d.path, "clusters[0].cluster.certificate-authority");
  EXPECT_EQ(d.message, "a file path must not contain NUL");
}

TEST(Kubeconfig, OneDocumentPerFile) {
  // kubectl reads the first document and drops the rest silently.
  const Diagnostic d = parse_error("current-context: a\n---\ncurrent-context: b\n");
  EXPECT_EQ(d.rule, kRuleDocuments);
  EXPECT_EQ(d.path, "(document 2)");
  EXPECT_EQ(d.pos.line, 3);
}

TEST(Kubeconfig, YamlOneDotTwoScalarsAreStrings) {
  // kubectl (YAML 1.1) reads these as booleans and fails; gpubank reads YAML 1.2.
  const Kubeconfig k = parse_ok("contexts:\n- name: y\n- name: off\ncurrent-context: yes\n");
  EXPECT_EQ(k.contexts.at(0).name, "y");
  EXPECT_EQ(k.current_context, "yes");
}

Kubeconfig file(std::string name, std::string text) {
  Diagnostics d;
  auto k = parse_kubeconfig(text, name, "/dir", d);
  EXPECT_TRUE(k.has_value()) << (d.empty() ? "" : d.front().to_string());
  return k.value_or(Kubeconfig{});
}

TEST(KubeconfigMerge, FirstFileToDefineANameWinsWholeEntries) {
  const MergedKubeconfig m = merge_kubeconfigs({
      file("one", "clusters:\n- name: shared\n  cluster: {server: https://one}\n"
                  "contexts:\n- name: ctx\n  context: {cluster: shared}\n"),
      file("two", "clusters:\n- name: shared\n  cluster: {server: https://two, tls-server-name: two}\n"
                  "- name: only-two\n  cluster: {server: https://only-two}\n"
                  "users:\n- name: u\n  user: {token: from-two}\n"
                  "contexts:\n- name: ctx\n  context: {cluster: only-two, namespace: two}\n"
                  "current-context: ctx\n"),
      file("three", "users:\n- name: u\n  user: {token: from-three}\n- name: v\n  user: {token: v}\n"
                    "current-context: other\n"),
  });
  EXPECT_EQ(m.files, (std::vector<std::string>{"one", "two", "three"}));
  ASSERT_EQ(m.clusters.size(), 2u);
  EXPECT_EQ(m.clusters.at("shared").value.server, "https://one");
  EXPECT_EQ(m.clusters.at("shared").value.tls_server_name, "");  // never merged field by field
  EXPECT_EQ(m.clusters.at("shared").origin.file, "one");
  EXPECT_EQ(m.clusters.at("only-two").origin.file, "two");
  EXPECT_EQ(m.users.at("u").value.token, "from-two");
  EXPECT_EQ(m.users.at("v").value.token, "v");
  EXPECT_EQ(m.contexts.at("ctx").value.cluster, "shared");
  EXPECT_EQ(m.contexts.at("ctx").value.namespace_name, "");
  // current-context from the first file that sets it: "one" does not.
  EXPECT_EQ(m.current_context, "ctx");
  EXPECT_EQ(m.current_context_file, "two");
  EXPECT_EQ(m.current_context_pos.line, 12);
}

}  // namespace
}  // namespace gpubank::k8s
