// API tokens for the portal and the HTTP API (issue 32's authentication): bearer tokens
// issued by `gpubank token create --subject --role`, kept hashed at rest.
//
//   token text  "gpb_" + id (16 hex, 8 random bytes) + "_" + secret (64 hex, 32 random
//               bytes from OpenSSL's RAND_bytes). Shown once, when issued.
//   at rest     the SHA-256 of the whole token text, never the token: a TokenIssued entry
//               of the store's append-only, hash-chained audit log (store/store.hpp), actor
//               the issuer, object "Token/<id>", numbers the grant as JSON; TokenRevoked
//               ends it. The grants in force are the fold of the log, as for alerts
//               (governance/alert_store.hpp): a crash leaves a grant recorded or not, never
//               half, and a revocation is never lost.
//   checking    the id picks the grant; the digests are compared in constant time
//               (CRYPTO_memcmp); expired or revoked grants authenticate nobody.
//
// Roles (the portal's): viewer (own group), group-admin (own group's policies and detail),
// finops (every cost, no policy writes), platform-admin (everything). viewer and
// group-admin name their group; finops and platform-admin name none.
//
// What this does not protect against: someone who can write the store can append a grant
// of their own with a valid chain, as they could any audit entry; the store's file (or
// database role) is the boundary, as for the ledger.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/expected.hpp"
#include "store/store.hpp"

namespace gpubank::auth {

enum class Role { Viewer, GroupAdmin, FinOps, PlatformAdmin };
[[nodiscard]] std::string_view role_name(Role role);  // "viewer", "group-admin", "finops", "platform-admin"
[[nodiscard]] std::optional<Role> parse_role(std::string_view name);

inline constexpr std::string_view kTokenPrefix = "gpb_";
inline constexpr std::size_t kMaxSubjectLength = 253;
inline constexpr std::string_view kIssuedAction = "TokenIssued";
inline constexpr std::string_view kRevokedAction = "TokenRevoked";

struct GrantRequest {
  std::string subject;  // who the token speaks for: a user name or a service
  Role role = Role::Viewer;
  std::string group;    // the business group, for viewer and group-admin
  std::string issued_by;
  std::optional<std::int64_t> ttl_ms;  // none: until revoked
};

struct Grant {
  std::string id;
  std::string subject;
  Role role = Role::Viewer;
  std::string group;
  std::string digest;  // hex SHA-256 of the token text
  std::int64_t issued_ms = 0;
  std::optional<std::int64_t> expires_ms;
  std::string issued_by;
  friend bool operator==(const Grant&, const Grant&) = default;
};

struct Issued {
  Grant grant;
  std::string token;  // the text to hand over, once
};

// A grant as the audit entry's numbers hold it, and back. parse_grant's errors name the
// field ("grant.<field>: <rule>").
[[nodiscard]] std::string grant_json(const Grant& grant);
[[nodiscard]] Expected<Grant> parse_grant(std::string_view numbers);

// Checks the request (each error names the field and the rule) and draws a new token.
[[nodiscard]] Expected<Issued> issue(const GrantRequest& request, std::int64_t now_ms);

// The grants in force, folded from the audit log; refresh() reads only what is new.
struct TokenBook {
  std::map<std::string, Grant, std::less<>> grants;  // by id, revoked ones removed
  std::set<std::string, std::less<>> revoked;
  std::int64_t last_seq = 0;
};
Expected<bool> refresh(store::Store& store, TokenBook& book);
// Appends the grant (one transaction) and folds it in.
Expected<bool> record_grant(store::Store& store, TokenBook& book, const Grant& grant);
// Revokes a grant in force by id: an error names an unknown or already revoked id.
Expected<bool> revoke(store::Store& store, TokenBook& book, const std::string& id, const std::string& by,
                      std::int64_t now_ms);

// `bytes` (at most 64) from OpenSSL's RAND_bytes as lowercase hex; none when the random
// source fails.
[[nodiscard]] std::optional<std::string> random_hex(std::size_t bytes);

struct Principal {
  std::string subject;
  Role role = Role::Viewer;
  std::string group;
  std::string token_id;
};
// The principal a token (or an "Authorization: Bearer <token>" value) speaks for at
// now_ms; none for anything malformed, unknown, revoked, expired or not matching.
[[nodiscard]] std::optional<Principal> authenticate(const TokenBook& book, std::string_view token, std::int64_t now_ms);

}  // namespace gpubank::auth
