// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it,
// so that of several controller replicas exactly one acts.
//
//   - The Lease's spec is the record: holderIdentity, leaseDurationSeconds, acquireTime and
//     renewTime (MicroTime: RFC 3339 with microseconds), leaseTransitions.
//   - Each try reads the Lease, decides (decide_lease, a pure function) and writes: POST
//     when there is none (409 AlreadyExists: another replica won the race), else PUT with
//     the metadata.resourceVersion read (409 Conflict: someone wrote in between; the next
//     try reads again). Nothing is retried inside a try: the loop is the retry.
//   - Expiry is judged by the LOCAL time at which this replica saw the record CHANGE, plus
//     the holder's leaseDurationSeconds, never by renewTime: renewTime was written with the
//     holder's clock, and clocks of two nodes may disagree by more than a lease. Each
//     replica only measures intervals on its own monotonic clock. (client-go does the same.)
//   - A leader renews every retry_period; when renew_deadline passes since its last
//     successful renewal it steps down (on_stopped_leading) and must stop acting: is_leader()
//     turns false at that moment by the clock, even while a request is still pending. Since
//     renew_deadline < lease_duration, the leader stops before any other replica can take
//     over (others wait lease_duration from when they saw the last renewal).
//   - On a clean stop the leader releases the Lease (holderIdentity "", leaseDurationSeconds
//     1), so another replica takes over at its next try instead of a lease duration later.
//   - Defaults are client-go's: lease 15 s, renew deadline 10 s, retry period 2 s, and
//     acquisition retries jittered by up to 1.2 retry periods (replicas do not retry in step).
//   - Time is injected (ElectionClock): tests run two electors on one fake clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <string_view>

#include "core/expected.hpp"
#include "k8s/transport.hpp"
#include "k8s/watch_event.hpp"

namespace gpubank::k8s {

// A Lease's spec.
struct LeaseRecord {
  std::string holder_identity;  // "": nobody holds it (released)
  int lease_duration_seconds = 0;
  std::optional<std::chrono::system_clock::time_point> acquire_time;  // microsecond precision
  std::optional<std::chrono::system_clock::time_point> renew_time;
  int lease_transitions = 0;
  friend bool operator==(const LeaseRecord&, const LeaseRecord&) = default;
};

// The record in a Lease object's spec (missing fields are zero or empty); an error names a
// field of the wrong type or a time that does not parse.
[[nodiscard]] Expected<LeaseRecord> lease_record(const Json& lease);
// The spec for a record: {"holderIdentity": ..., "leaseDurationSeconds": ..., ...}.
[[nodiscard]] Json lease_spec(const LeaseRecord& record);
// RFC 3339 ("2026-01-01T00:00:00.000000Z", a fraction of up to 9 digits or none, "Z" or an
// offset), as MicroTime and Time are written; nullopt when malformed or outside what
// system_clock holds (the years 1678 to 2261).
[[nodiscard]] std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text);

struct LeaderElectionOptions {
  std::string namespace_name;  // of the Lease
  std::string name;            // of the Lease: "gpubank-controller"
  std::string identity;        // this replica, unique: the pod name
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
  // Acquisition retries wait retry_period * (1 + jitter * r), r uniform in [0, 1), as
  // client-go's JitterUntil with JitterFactor 1.2. Renewals are not jittered.
  double jitter = 1.2;
  std::uint64_t seed = 0x6c65'6164'6572;
  bool release_on_stop = true;
};

// client-go's rules: a name and an identity; lease_duration > renew_deadline >
// retry_period * jitter (at least retry_period); all positive.
[[nodiscard]] Expected<bool> validate(const LeaderElectionOptions& options);

// What an elector knows of the Lease: the record last read or written and the local time at
// which it last CHANGED (not when it was last read).
struct LeaseObservation {
  bool exists = false;  // false: no Lease (a 404), or not read yet
  LeaseRecord record;
  std::string resource_version;
  Json object;  // the Lease as last read or written (a PUT sends it back, labels kept)
  std::chrono::steady_clock::time_point observed_at{};
};

// The observation after reading `record` at `now`: observed_at moves only when the record
// differs from the previous one (a Lease read again unchanged does not look fresh).
[[nodiscard]] LeaseObservation observe(const LeaseObservation& previous, bool exists, LeaseRecord record,
                                       std::string resource_version, Json object,
                                       std::chrono::steady_clock::time_point now);

enum class LeaseAction {
  kCreate,  // no Lease: POST one naming us
  kUpdate,  // ours (renew), released, or expired: PUT naming us
  kWait,    // another holder's lease is still valid by our observation
};

struct LeaseDecision {
  LeaseAction action = LeaseAction::kWait;
  LeaseRecord record;  // to write (kCreate, kUpdate)
  bool renewal = false;  // kUpdate of a lease we hold: acquireTime and leaseTransitions kept
  // kWait: how long until the holder's lease expires by our observation.
  std::chrono::steady_clock::duration expires_in{};
};

// The decision of one try, pure: `now` is the local monotonic time (expiry), `wall_now` the
// time written into acquireTime/renewTime (truncated to microseconds).
[[nodiscard]] LeaseDecision decide_lease(const LeaseObservation& observed, std::chrono::steady_clock::time_point now,
                                         std::chrono::system_clock::time_point wall_now,
                                         const LeaderElectionOptions& options);

// The record that gives up a lease we hold: holder cleared, duration 1 s, acquireTime and
// renewTime now, leaseTransitions kept (client-go's release).
[[nodiscard]] LeaseRecord released_record(const LeaseRecord& held, std::chrono::system_clock::time_point wall_now);

// "/apis/coordination.k8s.io/v1/namespaces/<ns>/leases" (and "/<name>").
[[nodiscard]] std::string lease_collection_path(std::string_view namespace_name);
[[nodiscard]] std::string lease_path(std::string_view namespace_name, std::string_view name);

// Time for the election loop; each empty member falls back to the real clock.
struct ElectionClock {
  std::function<std::chrono::steady_clock::time_point()> now;   // expiry, renew deadline
  std::function<std::chrono::system_clock::time_point()> wall;  // acquireTime, renewTime
  // Waits `d` or until stop is requested, whichever comes first.
  std::function<void(std::chrono::milliseconds d, std::stop_token stop)> sleep;
};

struct LeaderCallbacks {
  std::function<void()> on_started_leading;  // on run()'s thread, after is_leader() turned true
  std::function<void()> on_stopped_leading;  // on run()'s thread, after is_leader() turned false
  // Another holder was observed ("" when the lease was released); on run()'s thread.
  std::function<void(const std::string& holder)> on_new_leader;
};

class LeaderElector {
 public:
  // The elector has its own Transport, built from `transport` with one attempt per request
  // (the loop retries) and connect and read timeouts no longer than renew_deadline. Give it
  // its own RateLimiter, not the controller's: a busy controller must not delay renewals.
  [[nodiscard]] static Expected<std::unique_ptr<LeaderElector>> create(ClientConfig config,
                                                                       LeaderElectionOptions options,
                                                                       LeaderCallbacks callbacks = {},
                                                                       ElectionClock clock = {},
                                                                       TransportOptions transport = {});
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Until stop is requested: try to acquire every retry period (jittered); once acquired,
  // lead and renew every retry period; step down when renew_deadline passes without a
  // successful renewal or another holder is seen; then try to acquire again. On stop, a
  // leader steps down and (release_on_stop) releases the Lease. Request failures are
  // retried by the loop and counted in failures().
  void run(std::stop_token stop);

  // One try: read the Lease, decide, write. True: this replica holds the lease now. An
  // error is the request's (a 409 included: someone else wrote, the next try reads again).
  [[nodiscard]] ApiResult<bool> try_acquire_or_renew();
  // Gives up the lease when this replica holds it by the last observation (PUT of
  // released_record); true when it released one.
  [[nodiscard]] ApiResult<bool> release();

  // Thread-safe. Leading and the last successful renewal is younger than renew_deadline by
  // the clock: the test for "may I act now".
  [[nodiscard]] bool is_leader() const;
  // The holder last observed ("" none). Thread-safe.
  [[nodiscard]] std::string leader() const;
  // Thread-safe copies.
  [[nodiscard]] LeaseObservation observation() const;
  [[nodiscard]] std::size_t failures() const;  // failed tries (request errors and 409s)
  [[nodiscard]] const LeaderElectionOptions& options() const { return options_; }

 private:
  LeaderElector(std::unique_ptr<Transport> transport, LeaderElectionOptions options, LeaderCallbacks callbacks,
                ElectionClock clock);
  [[nodiscard]] std::chrono::steady_clock::time_point now() const;
  [[nodiscard]] std::chrono::system_clock::time_point wall_now() const;
  void sleep(std::chrono::milliseconds d, const std::stop_token& stop);
  void set_observation(LeaseObservation next);
  void step_down();

  std::unique_ptr<Transport> transport_;
  LeaderElectionOptions options_;
  LeaderCallbacks callbacks_;
  ElectionClock clock_;
  std::mt19937_64 random_;

  mutable std::mutex m_;  // guards what other threads read
  LeaseObservation observed_;
  bool leading_ = false;
  std::chrono::steady_clock::time_point last_renewal_{};
  std::size_t failures_ = 0;
};

}  // namespace gpubank::k8s
