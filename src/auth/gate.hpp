// The gate of an HTTP server that checks API tokens (tokens.hpp): who a request speaks for
// (a bearer token or a browser session), how fast it may ask, and the audit record of what
// it changes. One Gate per server, shared by its request threads (every member is
// thread-safe).
//
//   bearer     "Authorization: Bearer gpb_..." — checked against the grants folded from
//              the store, re-read at most once a second (a revocation by another process
//              takes effect within a second) and at once for an id not yet seen, at most
//              four times a second.
//   sessions   POST /api/v1/session trades a token for a session id (cookie, 32 random
//              bytes) and a CSRF token (32 random bytes) the page sends back in
//              X-CSRF-Token on every state-changing request. A session lives at most
//              `session_ttl_ms` and never beyond its token: each use re-checks the token's
//              grant (revoked or expired: the session ends). Kept in memory only: a
//              restart signs browsers out, never in.
//   throttle   a token bucket per token id (`requests_per_second`, `burst`); a refused
//              request learns how long to wait.
//   writes     record_write() appends an `ApiWrite` audit entry (actor the subject, object
//              the path, numbers the method, role, token id and the body's SHA-256) before
//              the write is carried out; a server refuses the write when it cannot.
//
// Times are wall-clock Unix milliseconds passed in by the caller (tests pass their own).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "auth/tokens.hpp"
#include "core/expected.hpp"
#include "store/store.hpp"

namespace gpubank::auth {

inline constexpr std::string_view kWriteAction = "ApiWrite";
inline constexpr std::string_view kSessionCookie = "gpubank_session";

struct GateOptions {
  double requests_per_second = 50;  // per token
  double burst = 200;
  std::int64_t session_ttl_ms = 12LL * 3600 * 1000;
  std::size_t max_sessions = 10000;  // the oldest is dropped beyond this
  std::int64_t refresh_every_ms = 1000;
};

struct Session {
  std::string id;    // the cookie's value
  std::string csrf;  // the X-CSRF-Token the page must send on writes
  Principal principal;
  std::int64_t expires_ms = 0;
};

class Gate {
 public:
  Gate(std::unique_ptr<store::Store> store, GateOptions options = {});
  // Opens the store at `location` (store::Store::open) and reads its grants.
  static Expected<std::unique_ptr<Gate>> open(const std::string& location, GateOptions options = {});

  // The principal of a token or of "Bearer <token>"; none when it authenticates nobody.
  [[nodiscard]] std::optional<Principal> by_token(std::string_view token, std::int64_t now_ms);
  // The session with this id while it and its token are in force.
  [[nodiscard]] std::optional<Session> by_session(std::string_view id, std::int64_t now_ms);
  // A new session for a valid token; the error says why not (never which part was wrong).
  [[nodiscard]] Expected<Session> open_session(std::string_view token, std::int64_t now_ms);
  void close_session(std::string_view id);
  // Constant-time comparison of the header with the session's CSRF token.
  [[nodiscard]] static bool csrf_matches(const Session& session, std::string_view header);

  // Admits one request of `key` (a token id) at now_ms; when refused, the seconds to wait.
  [[nodiscard]] std::optional<double> throttle(const std::string& key, std::int64_t now_ms);

  // The audit record of a write, appended before it is carried out.
  Expected<bool> record_write(const Principal& who, std::string_view method, std::string_view path,
                              std::string_view body, std::int64_t now_ms);

  // Issues and records a grant (what `gpubank up` does for its operator and its Prometheus).
  Expected<Issued> issue(const GrantRequest& request, std::int64_t now_ms);
  // Revokes every grant in force that `issued_by` issued to `subject`; how many.
  Expected<int> revoke_issued(const std::string& issued_by, const std::string& subject, std::int64_t now_ms);

  [[nodiscard]] std::size_t sessions() const;

 private:
  // Reads new grants when due (or `force`d and not done in the last 250 ms). Under mu_.
  void refresh_locked(std::int64_t now_ms, bool force);

  std::unique_ptr<store::Store> store_;
  GateOptions options_;
  mutable std::mutex mu_;
  TokenBook book_;
  std::int64_t last_refresh_ms_ = -1;
  std::map<std::string, Session, std::less<>> sessions_;
  struct Bucket {
    double tokens = 0;
    std::int64_t at_ms = 0;
  };
  std::map<std::string, Bucket, std::less<>> buckets_;
};

}  // namespace gpubank::auth
