#include "auth/tokens.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "core/sha256.hpp"
#include "document/decode.hpp"

namespace gpubank::auth {
namespace {

using nlohmann::json;

constexpr std::size_t kIdBytes = 8;
constexpr std::size_t kSecretBytes = 32;

std::string hex(const unsigned char* data, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[data[i] >> 4]);
    out.push_back(kDigits[data[i] & 0xf]);
  }
  return out;
}

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Printable text without control characters (the audit log's rule is UTF-8 without them;
// a subject is an identifier, so ASCII printable and no spaces).
bool is_identifier(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

json to_json(const Grant& g) {
  json j{{"id", g.id},         {"subject", g.subject},     {"role", role_name(g.role)},
         {"group", g.group},   {"sha256", g.digest},       {"issuedMs", g.issued_ms},
         {"issuedBy", g.issued_by}};
  if (g.expires_ms) j["expiresMs"] = *g.expires_ms;
  return j;
}

Expected<Grant> grant_from_json(const json& j) {
  if (j.is_discarded()) return Unexpected{std::string("grant: not JSON")};
  if (!j.is_object()) return Unexpected{std::string("grant: must be an object")};
  Grant g;
  for (const auto& [key, into] : {std::pair{"id", &g.id}, std::pair{"subject", &g.subject}, std::pair{"group", &g.group},
                                  std::pair{"sha256", &g.digest}, std::pair{"issuedBy", &g.issued_by}}) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return Unexpected{std::string("grant.") + key + ": required, a string"};
    *into = it->get<std::string>();
  }
  const auto role = j.find("role");
  if (role == j.end() || !role->is_string() || !parse_role(role->get<std::string>())) {
    return Unexpected{std::string("grant.role: required, one of viewer, group-admin, finops, platform-admin")};
  }
  g.role = *parse_role(role->get<std::string>());
  const auto issued = j.find("issuedMs");
  if (issued == j.end() || !issued->is_number_integer()) return Unexpected{std::string("grant.issuedMs: required, an integer")};
  g.issued_ms = issued->get<std::int64_t>();
  if (const auto e = j.find("expiresMs"); e != j.end()) {
    if (!e->is_number_integer()) return Unexpected{std::string("grant.expiresMs: an integer")};
    g.expires_ms = e->get<std::int64_t>();
  }
  if (g.id.size() != 2 * kIdBytes || !is_hex(g.id)) return Unexpected{std::string("grant.id: 16 lower-case hex digits")};
  if (g.digest.size() != 64 || !is_hex(g.digest)) return Unexpected{std::string("grant.sha256: 64 lower-case hex digits")};
  return g;
}

}  // namespace

std::string grant_json(const Grant& grant) { return to_json(grant).dump(); }

Expected<Grant> parse_grant(std::string_view numbers) { return grant_from_json(json::parse(numbers, nullptr, false)); }

std::string_view role_name(Role role) {
  switch (role) {
    case Role::Viewer: return "viewer";
    case Role::GroupAdmin: return "group-admin";
    case Role::FinOps: return "finops";
    case Role::PlatformAdmin: return "platform-admin";
  }
  return "unknown";
}

std::optional<Role> parse_role(std::string_view name) {
  for (Role r : {Role::Viewer, Role::GroupAdmin, Role::FinOps, Role::PlatformAdmin}) {
    if (role_name(r) == name) return r;
  }
  return std::nullopt;
}

Expected<Issued> issue(const GrantRequest& request, std::int64_t now_ms) {
  if (!is_identifier(request.subject) || request.subject.size() > kMaxSubjectLength) {
    return Unexpected{"subject: required, at most " + std::to_string(kMaxSubjectLength) +
                      " printable ASCII characters without spaces"};
  }
  if (!is_identifier(request.issued_by) || request.issued_by.size() > kMaxSubjectLength) {
    return Unexpected{std::string("issuedBy: required, printable ASCII without spaces (who issues the token)")};
  }
  const bool grouped = request.role == Role::Viewer || request.role == Role::GroupAdmin;
  if (grouped) {
    if (request.group.empty()) {
      return Unexpected{"group: required for role " + std::string(role_name(request.role)) + " (the business group it sees)"};
    }
    if (auto bad = doc::DnsLabel{}(request.group)) return Unexpected{"group: " + *bad};
  } else if (!request.group.empty()) {
    return Unexpected{"group: role " + std::string(role_name(request.role)) + " spans every group; name none"};
  }
  constexpr std::int64_t kMaxTtlMs = 10LL * 366 * 86'400'000;  // ten years: beyond it, revoke instead
  if (request.ttl_ms && *request.ttl_ms <= 0) return Unexpected{std::string("ttl: must be positive")};
  if (request.ttl_ms && *request.ttl_ms > kMaxTtlMs) {
    return Unexpected{std::string("ttl: at most ten years (leave it out for a token that lasts until revoked)")};
  }
  const auto id = random_hex(kIdBytes);
  const auto secret = random_hex(kSecretBytes);
  if (!id || !secret) return Unexpected{std::string("token: the system's random source failed")};
  Issued out;
  out.token = std::string(kTokenPrefix) + *id + "_" + *secret;
  out.grant = Grant{*id,          request.subject, request.role, request.group, sha256_hex(out.token), now_ms,
                    std::nullopt, request.issued_by};
  if (request.ttl_ms) out.grant.expires_ms = now_ms + *request.ttl_ms;
  return out;
}

Expected<bool> refresh(store::Store& store, TokenBook& book) {
  return store::read_audit_after(store, book.last_seq, [&](const bank::AuditEntry& e) -> std::optional<std::string> {
    if (e.action == kIssuedAction) {
      auto g = parse_grant(e.numbers);
      if (!g) return g.error();
      // A grant is recorded under its issuer's name and for the object it names.
      if (g->issued_by != e.actor || e.object != "Token/" + g->id) {
        return "a token grant must name its issuer as actor and Token/<id> as object";
      }
      if (!book.revoked.contains(g->id)) book.grants[g->id] = std::move(*g);
    } else if (e.action == kRevokedAction && e.object.starts_with("Token/")) {
      const std::string id = e.object.substr(6);
      book.revoked.insert(id);
      book.grants.erase(id);
    }
    return std::nullopt;
  });
}

Expected<bool> record_grant(store::Store& store, TokenBook& book, const Grant& grant) {
  bank::AuditEntry e;
  e.time_ms = grant.issued_ms;
  e.actor = grant.issued_by;
  e.action = std::string(kIssuedAction);
  e.object = "Token/" + grant.id;
  e.decision = std::string(role_name(grant.role));
  e.reason = "a " + std::string(role_name(grant.role)) + " token for " + grant.subject +
             (grant.group.empty() ? std::string() : " of business group " + grant.group);
  e.numbers = grant_json(grant);
  if (auto appended = store.append({}, std::span(&e, 1)); !appended) return Unexpected{appended.error()};
  return refresh(store, book);
}

Expected<bool> revoke(store::Store& store, TokenBook& book, const std::string& id, const std::string& by,
                      std::int64_t now_ms) {
  if (auto read = refresh(store, book); !read) return read;
  if (book.revoked.contains(id)) return Unexpected{"id: token " + id + " is already revoked"};
  const auto it = book.grants.find(id);
  if (it == book.grants.end()) return Unexpected{"id: no token " + id + " was issued in this store"};
  if (!is_identifier(by)) return Unexpected{std::string("by: required (who revokes)")};
  bank::AuditEntry e;
  e.time_ms = now_ms;
  e.actor = by;
  e.action = std::string(kRevokedAction);
  e.object = "Token/" + id;
  e.decision = "Revoked";
  e.reason = "the token of " + it->second.subject + " is revoked";
  e.numbers = json{{"id", id}}.dump();
  if (auto appended = store.append({}, std::span(&e, 1)); !appended) return Unexpected{appended.error()};
  return refresh(store, book);
}

std::optional<std::string> random_hex(std::size_t bytes) {
  std::array<unsigned char, 64> buf{};
  if (bytes > buf.size() || RAND_bytes(buf.data(), static_cast<int>(bytes)) != 1) return std::nullopt;
  return hex(buf.data(), bytes);
}

std::optional<Principal> authenticate(const TokenBook& book, std::string_view token, std::int64_t now_ms) {
  if (token.starts_with("Bearer ")) token.remove_prefix(7);
  // gpb_ + 16 hex + _ + 64 hex
  if (token.size() != kTokenPrefix.size() + 2 * kIdBytes + 1 + 2 * kSecretBytes || !token.starts_with(kTokenPrefix) ||
      token[kTokenPrefix.size() + 2 * kIdBytes] != '_') {
    return std::nullopt;
  }
  const std::string_view id = token.substr(kTokenPrefix.size(), 2 * kIdBytes);
  const auto it = book.grants.find(id);
  if (it == book.grants.end()) return std::nullopt;
  const Grant& g = it->second;
  if (g.expires_ms && now_ms >= *g.expires_ms) return std::nullopt;
  const std::string digest = sha256_hex(token);
  if (digest.size() != g.digest.size() || CRYPTO_memcmp(digest.data(), g.digest.data(), digest.size()) != 0) {
    return std::nullopt;
  }
  return Principal{g.subject, g.role, g.group, g.id};
}

}  // namespace gpubank::auth
