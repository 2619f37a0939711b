#include "auth/gate.hpp"

#include <openssl/crypto.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/sha256.hpp"

namespace gpubank::auth {

namespace {
constexpr std::int64_t kForcedRefreshGapMs = 250;
constexpr std::size_t kSessionBytes = 32;
constexpr std::size_t kMaxBuckets = 100000;
}  // namespace

Gate::Gate(std::unique_ptr<store::Store> store, GateOptions options) : store_(std::move(store)), options_(options) {}

Expected<std::unique_ptr<Gate>> Gate::open(const std::string& location, GateOptions options) {
  auto opened = store::Store::open(location);
  if (!opened) return Unexpected{opened.error()};
  auto gate = std::make_unique<Gate>(std::move(*opened), options);
  if (auto read = refresh(*gate->store_, gate->book_); !read) return Unexpected{location + ": " + read.error()};
  return gate;
}

void Gate::refresh_locked(std::int64_t now_ms, bool force) {
  const std::int64_t since = now_ms - last_refresh_ms_;
  const bool due = last_refresh_ms_ < 0 || since >= options_.refresh_every_ms || since < 0;
  if (!due && !(force && since >= kForcedRefreshGapMs)) return;
  last_refresh_ms_ = now_ms;
  // A read that fails (the store is busy or gone) keeps the grants already read: tokens
  // issued since are not honoured until a read succeeds, revocations already read hold.
  (void)refresh(*store_, book_);
}

std::optional<Principal> Gate::by_token(std::string_view token, std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  refresh_locked(now_ms, false);
  if (auto p = authenticate(book_, token, now_ms)) return p;
  // Perhaps issued since the last read (by `gpubank token create` on the same store).
  refresh_locked(now_ms, true);
  return authenticate(book_, token, now_ms);
}

std::optional<Session> Gate::by_session(std::string_view id, std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  refresh_locked(now_ms, false);
  const auto grant = book_.grants.find(it->second.principal.token_id);
  const bool token_in_force = grant != book_.grants.end() && (!grant->second.expires_ms || now_ms < *grant->second.expires_ms);
  if (now_ms >= it->second.expires_ms || !token_in_force) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

Expected<Session> Gate::open_session(std::string_view token, std::int64_t now_ms) {
  auto principal = by_token(token, now_ms);
  if (!principal) return Unexpected{std::string("token: not a valid token (unknown, revoked, expired or malformed)")};
  const auto id = random_hex(kSessionBytes);
  const auto csrf = random_hex(kSessionBytes);
  if (!id || !csrf) return Unexpected{std::string("session: the system's random source failed")};
  Session s{*id, *csrf, *principal, now_ms + options_.session_ttl_ms};
  std::lock_guard lock(mu_);
  if (const auto grant = book_.grants.find(principal->token_id); grant != book_.grants.end() && grant->second.expires_ms) {
    s.expires_ms = std::min(s.expires_ms, *grant->second.expires_ms);
  }
  // Expired sessions go first; beyond the cap the one closest to expiry goes.
  std::erase_if(sessions_, [&](const auto& kv) { return kv.second.expires_ms <= now_ms; });
  while (sessions_.size() >= options_.max_sessions && !sessions_.empty()) {
    auto oldest = std::min_element(sessions_.begin(), sessions_.end(), [](const auto& a, const auto& b) {
      return a.second.expires_ms < b.second.expires_ms;
    });
    sessions_.erase(oldest);
  }
  sessions_.emplace(s.id, s);
  return s;
}

void Gate::close_session(std::string_view id) {
  std::lock_guard lock(mu_);
  if (const auto it = sessions_.find(id); it != sessions_.end()) sessions_.erase(it);
}

bool Gate::csrf_matches(const Session& session, std::string_view header) {
  return !session.csrf.empty() && header.size() == session.csrf.size() &&
         CRYPTO_memcmp(header.data(), session.csrf.data(), header.size()) == 0;
}

std::optional<double> Gate::throttle(const std::string& key, std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    if (buckets_.size() >= kMaxBuckets) buckets_.clear();  // only valid tokens get here: a bound, not a policy
    it = buckets_.emplace(key, Bucket{options_.burst, now_ms}).first;
  }
  Bucket& b = it->second;
  const double elapsed_s = std::max<std::int64_t>(0, now_ms - b.at_ms) / 1000.0;
  b.tokens = std::min(options_.burst, b.tokens + elapsed_s * options_.requests_per_second);
  b.at_ms = std::max(b.at_ms, now_ms);
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return std::nullopt;
  }
  return (1 - b.tokens) / options_.requests_per_second;
}

Expected<bool> Gate::record_write(const Principal& who, std::string_view method, std::string_view path,
                                  std::string_view body, std::int64_t now_ms) {
  bank::AuditEntry e;
  e.time_ms = now_ms;
  e.actor = who.subject;
  e.action = std::string(kWriteAction);
  e.object = std::string(path.substr(0, 512));
  e.decision = std::string(method.substr(0, 16));
  e.reason = std::string(method.substr(0, 16)) + " " + e.object + " by " + who.subject + " (" +
             std::string(role_name(who.role)) + (who.group.empty() ? "" : " of " + who.group) + ")";
  e.numbers = nlohmann::json{{"method", method.substr(0, 16)},
                             {"role", role_name(who.role)},
                             {"group", who.group},
                             {"tokenId", who.token_id},
                             {"bodySha256", sha256_hex(body)},
                             {"bodyBytes", body.size()}}
                  .dump();
  std::lock_guard lock(mu_);
  if (auto appended = store_->append({}, std::span(&e, 1)); !appended) return Unexpected{appended.error()};
  return true;
}

Expected<Issued> Gate::issue(const GrantRequest& request, std::int64_t now_ms) {
  auto issued = auth::issue(request, now_ms);
  if (!issued) return issued;
  std::lock_guard lock(mu_);
  if (auto recorded = record_grant(*store_, book_, issued->grant); !recorded) return Unexpected{recorded.error()};
  return issued;
}

Expected<int> Gate::revoke_issued(const std::string& issued_by, const std::string& subject, std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  if (auto read = refresh(*store_, book_); !read) return Unexpected{read.error()};
  std::vector<std::string> ids;
  for (const auto& [id, g] : book_.grants) {
    if (g.issued_by == issued_by && g.subject == subject) ids.push_back(id);
  }
  for (const std::string& id : ids) {
    if (auto done = revoke(*store_, book_, id, issued_by, now_ms); !done) return Unexpected{done.error()};
  }
  return static_cast<int>(ids.size());
}

std::size_t Gate::sessions() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

}  // namespace gpubank::auth
