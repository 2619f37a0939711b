// gpubank token: API tokens for the portal and the HTTP API (src/auth/tokens.hpp).
//
//   gpubank token create --subject NAME --role viewer|group-admin|finops|platform-admin
//                        [--group GROUP] [--ttl 30d] [--issuer NAME] --store LOCATION [-o ...]
//   gpubank token list --store LOCATION [-o text|json|yaml]
//   gpubank token revoke ID [--by NAME] --store LOCATION
//
// The token is printed once, by create; the store keeps its SHA-256 only. --store is the
// store of the server that checks the tokens. Exit codes: 0 done, 1 refused (the message
// names the field and the rule) or the store failed, 2 usage.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "auth/tokens.hpp"
#include "cli/command.hpp"
#include "core/duration.hpp"
#include "core/escape.hpp"
#include "core/timestamp.hpp"

namespace gpubank::cli {
namespace {

struct TokenOptions {
  std::string store, subject, role, group, ttl, issuer, id;
  Format format = Format::Text;
};

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string default_user() {
  const char* user = std::getenv("USER");
  return user != nullptr && *user != '\0' ? std::string(user) : std::string("unknown");
}

std::string at(std::int64_t ms) { return format_rfc3339(Timestamp(std::chrono::milliseconds(ms))); }

nlohmann::ordered_json describe(const auth::Grant& g) {
  nlohmann::ordered_json j{{"id", g.id},       {"subject", g.subject},      {"role", auth::role_name(g.role)},
                           {"group", g.group}, {"issuedBy", g.issued_by}, {"issued", at(g.issued_ms)}};
  if (g.expires_ms) j["expires"] = at(*g.expires_ms);
  return j;
}

struct Opened {
  std::unique_ptr<store::Store> store;
  auth::TokenBook book;
};
Expected<Opened> open(const TokenOptions& opt, bool create) {
  store::OpenOptions options;
  options.create = create;
  auto s = store::Store::open(opt.store, options);
  if (!s) return Unexpected{"--store: " + s.error()};
  Opened o{std::move(*s), {}};
  if (auto read = auth::refresh(*o.store, o.book); !read) return Unexpected{"--store: " + read.error()};
  return o;
}

int run_create(const TokenOptions& opt) {
  const char* me = "gpubank token create";
  const auto role = auth::parse_role(opt.role);
  if (!role) return std::cerr << me << ": --role: one of viewer, group-admin, finops, platform-admin\n", 2;
  std::optional<std::int64_t> ttl;
  if (!opt.ttl.empty()) {
    // Days too (30d): a token's lifetime is counted in them; Duration stops at hours.
    const std::string_view digits = std::string_view(opt.ttl).substr(0, opt.ttl.size() - 1);
    const bool days = opt.ttl.size() > 1 && opt.ttl.size() <= 6 && opt.ttl.back() == 'd' &&
                      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    auto d = Duration::parse(days ? std::to_string(std::stoll(std::string(digits)) * 24) + "h" : opt.ttl);
    if (!d || d->milliseconds() <= 0) return std::cerr << me << ": --ttl: " << (d ? "must be positive" : d.error()) << '\n', 2;
    ttl = d->milliseconds();
  }
  auto issued = auth::issue({opt.subject, *role, opt.group, opt.issuer.empty() ? default_user() : opt.issuer, ttl}, now_ms());
  if (!issued) return std::cerr << me << ": " << escape_text(issued.error()) << '\n', 1;
  auto opened = open(opt, true);
  if (!opened) return std::cerr << me << ": " << opened.error() << '\n', 1;
  if (auto recorded = auth::record_grant(*opened->store, opened->book, issued->grant); !recorded) {
    return std::cerr << me << ": " << recorded.error() << '\n', 1;
  }
  if (opt.format != Format::Text) {
    nlohmann::ordered_json j = describe(issued->grant);
    j["token"] = issued->token;
    print_structured(std::cout, j, opt.format);
  } else {
    std::cout << issued->token << '\n';
    std::cerr << me << ": token " << issued->grant.id << " for " << escape_text(issued->grant.subject) << " ("
              << auth::role_name(issued->grant.role)
              << (issued->grant.group.empty() ? std::string() : ", business group " + issued->grant.group)
              << "); it is shown only now\n";
  }
  return 0;
}

int run_list(const TokenOptions& opt) {
  auto opened = open(opt, false);
  if (!opened) return std::cerr << "gpubank token list: " << opened.error() << '\n', 1;
  const std::int64_t now = now_ms();
  if (opt.format != Format::Text) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& [id, g] : opened->book.grants) {
      nlohmann::ordered_json j = describe(g);
      j["expired"] = g.expires_ms && now >= *g.expires_ms;
      out.push_back(std::move(j));
    }
    print_structured(std::cout, out, opt.format);
    return 0;
  }
  std::cout << opened->book.grants.size() << " tokens in force or expired, " << opened->book.revoked.size()
            << " revoked\n";
  for (const auto& [id, g] : opened->book.grants) {
    std::cout << "  " << id << "  " << escape_text(g.subject) << "  " << auth::role_name(g.role)
              << (g.group.empty() ? "" : "  " + g.group) << "  issued " << at(g.issued_ms) << " by "
              << escape_text(g.issued_by)
              << (g.expires_ms ? (now >= *g.expires_ms ? "  expired " : "  expires ") + at(*g.expires_ms) : "") << '\n';
  }
  return 0;
}

int run_revoke(const TokenOptions& opt) {
  const char* me = "gpubank token revoke";
  auto opened = open(opt, false);
  if (!opened) return std::cerr << me << ": " << opened.error() << '\n', 1;
  auto done = auth::revoke(*opened->store, opened->book, opt.id, opt.issuer.empty() ? default_user() : opt.issuer, now_ms());
  if (!done) return std::cerr << me << ": " << escape_text(done.error()) << '\n', 1;
  std::cout << "revoked token " << opt.id << '\n';
  return 0;
}

}  // namespace

Command add_token_command(CLI::App& app) {
  auto opt = std::make_shared<TokenOptions>();
  CLI::App* cmd = app.add_subcommand("token", "Issue, list and revoke API tokens (stored hashed) for the portal and the API");
  cmd->require_subcommand(1);
  enum class Chosen { Create, List, Revoke };
  auto chosen = std::make_shared<Chosen>(Chosen::List);
  auto store = [&](CLI::App* sub) {
    sub->add_option("--store", opt->store, "The store of the server that checks the tokens: a SQLite file or a "
                                           "postgresql:// URL")->required();
  };
  CLI::App* create = cmd->add_subcommand("create", "Issue a token; it is printed once, the store keeps its SHA-256");
  create->add_option("--subject", opt->subject, "Who the token speaks for (a user or service name)")->required();
  create->add_option("--role", opt->role, "viewer, group-admin, finops or platform-admin")->required();
  create->add_option("--group", opt->group, "The business group (viewer and group-admin only)");
  create->add_option("--ttl", opt->ttl, "Lifetime: days (30d) or a duration (12h, 90m); default: until revoked");
  create->add_option("--issuer", opt->issuer, "Who issues it, for the audit log (default $USER)");
  store(create);
  add_output_option(*create, opt->format);
  create->callback([chosen] { *chosen = Chosen::Create; });
  CLI::App* list = cmd->add_subcommand("list", "List the tokens in force (never their text)");
  store(list);
  add_output_option(*list, opt->format);
  list->callback([chosen] { *chosen = Chosen::List; });
  CLI::App* revoke = cmd->add_subcommand("revoke", "Revoke a token by id");
  revoke->add_option("id", opt->id, "The token's id (gpubank token list)")->required();
  revoke->add_option("--by", opt->issuer, "Who revokes it, for the audit log (default $USER)");
  store(revoke);
  revoke->callback([chosen] { *chosen = Chosen::Revoke; });
  return {cmd, [opt, chosen] {
            switch (*chosen) {
              case Chosen::Create: return run_create(*opt);
              case Chosen::Revoke: return run_revoke(*opt);
              case Chosen::List: break;
            }
            return run_list(*opt);
          }};
}

}  // namespace gpubank::cli
