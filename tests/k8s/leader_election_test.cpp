// Leader election: the pure decision (decide_lease, observe) and the Lease record; then two
// electors, each with its own Transport, against the fake API server on one fake clock:
// one leads, a silent leader is replaced after the lease duration and not before, a
// release hands over at once, concurrent acquisitions have one winner (POST and PUT races,
// forced in order), leaseTransitions counts, and the same through the run() loops on
// threads. kubectl shows the holder.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "fake_client.hpp"
#include "fake_clock.hpp"
#include "fixture.hpp"
#include "k8s/leader_election.hpp"
#include "kubectl_fixture.hpp"

namespace gpubank::k8s {
// The alias src/k8s/watch_event.hpp declares (a unity build may include it after this file).
using Json = nlohmann::json;
namespace {

using namespace testing;
using namespace std::chrono;

constexpr system_clock::time_point kWall{seconds(1'767'225'600)};  // 2026-01-01T00:00:00Z
const steady_clock::time_point kT0{};

LeaderElectionOptions options_for(const std::string& identity) {
  LeaderElectionOptions o;
  o.namespace_name = "gpubank-system";
  o.name = "gpubank-controller";
  o.identity = identity;
  o.jitter = 0;  // the tests step the clock by whole retry periods
  return o;
}

LeaseObservation held_by(const std::string& holder, steady_clock::time_point observed_at, int transitions = 0) {
  LeaseObservation o;
  o.exists = true;
  o.record.holder_identity = holder;
  o.record.lease_duration_seconds = 15;
  o.record.acquire_time = kWall;
  o.record.renew_time = kWall;
  o.record.lease_transitions = transitions;
  o.resource_version = "7";
  o.observed_at = observed_at;
  return o;
}

// ---- the pure half ----

TEST(LeaseDecision, NoLeaseIsCreatedNamingUs) {
  const auto d = decide_lease(LeaseObservation{}, kT0, kWall + microseconds(1) + nanoseconds(999), options_for("a"));
  EXPECT_EQ(d.action, LeaseAction::kCreate);
  EXPECT_EQ(d.record.holder_identity, "a");
  EXPECT_EQ(d.record.lease_duration_seconds, 15);
  EXPECT_EQ(d.record.acquire_time, kWall + microseconds(1));  // MicroTime: truncated
  EXPECT_EQ(d.record.renew_time, kWall + microseconds(1));
  EXPECT_EQ(d.record.lease_transitions, 0);
}

TEST(LeaseDecision, AnotherHoldersLeaseRunsFromWhenWeSawItChange) {
  const auto observed = held_by("b", kT0 + seconds(100));
  const auto opts = options_for("a");
  auto d = decide_lease(observed, kT0 + seconds(114), kWall, opts);
  EXPECT_EQ(d.action, LeaseAction::kWait);
  EXPECT_EQ(d.expires_in, seconds(1));
  EXPECT_EQ(decide_lease(observed, kT0 + seconds(115) - nanoseconds(1), kWall, opts).action, LeaseAction::kWait);
  d = decide_lease(observed, kT0 + seconds(115), kWall, opts);
  EXPECT_EQ(d.action, LeaseAction::kUpdate);
  EXPECT_FALSE(d.renewal);
  // renewTime is the holder's clock: a renewTime a day old (skew) or a day ahead changes
  // nothing, only our observation does.
  auto skewed = observed;
  skewed.record.renew_time = kWall - hours(24);
  EXPECT_EQ(decide_lease(skewed, kT0 + seconds(101), kWall, opts).action, LeaseAction::kWait);
  skewed.record.renew_time = kWall + hours(24);
  EXPECT_EQ(decide_lease(skewed, kT0 + seconds(116), kWall, opts).action, LeaseAction::kUpdate);
  // The holder's own duration counts, not ours.
  auto longer = observed;
  longer.record.lease_duration_seconds = 60;
  EXPECT_EQ(decide_lease(longer, kT0 + seconds(150), kWall, opts).action, LeaseAction::kWait);
}

TEST(LeaseDecision, TakingOverCountsATransitionAndRenewingKeepsTheAcquireTime) {
  const auto opts = options_for("a");
  const auto taken = decide_lease(held_by("b", kT0, 4), kT0 + seconds(20), kWall + seconds(20), opts);
  EXPECT_EQ(taken.action, LeaseAction::kUpdate);
  EXPECT_EQ(taken.record.holder_identity, "a");
  EXPECT_EQ(taken.record.lease_transitions, 5);
  EXPECT_EQ(taken.record.acquire_time, kWall + seconds(20));

  // A hand-edited count at the int32 limit stays there (no overflow).
  EXPECT_EQ(decide_lease(held_by("b", kT0, 2'147'483'647), kT0 + seconds(20), kWall, opts).record.lease_transitions,
            2'147'483'647);

  const auto renewed = decide_lease(held_by("a", kT0, 4), kT0 + seconds(2), kWall + seconds(2), opts);
  EXPECT_EQ(renewed.action, LeaseAction::kUpdate);
  EXPECT_TRUE(renewed.renewal);
  EXPECT_EQ(renewed.record.lease_transitions, 4);
  EXPECT_EQ(renewed.record.acquire_time, kWall);
  EXPECT_EQ(renewed.record.renew_time, kWall + seconds(2));
  // Ours even when our observation is old (a restarted replica with the same identity).
  EXPECT_EQ(decide_lease(held_by("a", kT0, 4), kT0 + hours(1), kWall, opts).action, LeaseAction::kUpdate);
}

TEST(LeaseDecision, AReleasedLeaseIsFreeAtOnce) {
  auto released = held_by("b", kT0, 3);
  released.record = released_record(released.record, kWall + seconds(5));
  EXPECT_EQ(released.record.holder_identity, "");
  EXPECT_EQ(released.record.lease_duration_seconds, 1);
  EXPECT_EQ(released.record.lease_transitions, 3);
  const auto d = decide_lease(released, kT0, kWall, options_for("a"));
  EXPECT_EQ(d.action, LeaseAction::kUpdate);
  EXPECT_EQ(d.record.lease_transitions, 4);
}

TEST(LeaseObservation, ObservedAtMovesOnlyWhenTheRecordChanges) {
  const auto first = observe({}, true, held_by("b", kT0).record, "7", Json::object(), kT0 + seconds(1));
  EXPECT_EQ(first.observed_at, kT0 + seconds(1));
  const auto again = observe(first, true, first.record, "8", Json::object(), kT0 + seconds(9));
  EXPECT_EQ(again.observed_at, kT0 + seconds(1));  // unchanged: the lease does not look fresh
  EXPECT_EQ(again.resource_version, "8");
  auto renewed = first.record;
  renewed.renew_time = kWall + seconds(2);
  EXPECT_EQ(observe(again, true, renewed, "9", Json::object(), kT0 + seconds(10)).observed_at, kT0 + seconds(10));
  EXPECT_EQ(observe(again, false, {}, "", Json(), kT0 + seconds(11)).observed_at, kT0 + seconds(11));
}

TEST(LeaseRecord, SpecRoundTripAndMicroTime) {
  LeaseRecord r;
  r.holder_identity = "gpubank-controller-7c9f";
  r.lease_duration_seconds = 15;
  r.acquire_time = kWall + microseconds(123'456);
  r.renew_time = kWall + seconds(2);
  r.lease_transitions = 3;
  const Json spec = lease_spec(r);
  EXPECT_EQ(spec, Json::parse(R"({"holderIdentity":"gpubank-controller-7c9f","leaseDurationSeconds":15,
    "acquireTime":"2026-01-01T00:00:00.123456Z","renewTime":"2026-01-01T00:00:02.000000Z","leaseTransitions":3})"));
  auto back = lease_record(Json{{"spec", spec}});
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, r);
  // A Lease without a spec, or with nulls, is an empty record.
  EXPECT_EQ(*lease_record(Json{{"metadata", Json::object()}}), LeaseRecord{});
  EXPECT_EQ(*lease_record(Json::parse(R"({"spec":{"holderIdentity":null}})")), LeaseRecord{});
  EXPECT_EQ(lease_record(Json::parse(R"({"spec":{"leaseDurationSeconds":"15"}})")).error(),
            "spec.leaseDurationSeconds: not an integer");
  EXPECT_EQ(lease_record(Json::parse(R"({"spec":{"renewTime":"yesterday"}})")).error(),
            "spec.renewTime: not an RFC 3339 time: \"yesterday\"");
}

TEST(LeaseRecord, Rfc3339Times) {
  EXPECT_EQ(parse_rfc3339("2026-01-01T00:00:00Z"), kWall);
  EXPECT_EQ(parse_rfc3339("2026-01-01T00:00:00.5Z"), kWall + milliseconds(500));
  EXPECT_EQ(parse_rfc3339("2026-01-01T00:00:00.000001Z"), kWall + microseconds(1));
  EXPECT_EQ(parse_rfc3339("2026-01-01T02:00:00+02:00"), kWall);
  EXPECT_EQ(parse_rfc3339("2025-12-31T19:30:00-04:30"), kWall);
  for (const char* bad : {"", "2026-01-01", "2026-01-01T00:00:00", "2026-01-01 00:00:00Z", "2026-02-30T00:00:00Z",
                          "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00.1234567890Z", "2026-01-01T24:00:00Z",
                          "2026-01-01T00:00:00+0200", "2026-01-01T00:00:00Zjunk",
                          "2300-01-01T00:00:00Z", "1600-01-01T00:00:00Z"}) {  // past system_clock's years
    EXPECT_FALSE(parse_rfc3339(bad).has_value()) << bad;
  }
}

TEST(LeaseOptions, ClientGosRules) {
  EXPECT_TRUE(validate(options_for("a")).ok());
  auto o = options_for("a");
  o.jitter = 1.2;  // client-go's: 10 s > 2.4 s
  EXPECT_TRUE(validate(o).ok());
  o.renew_deadline = seconds(15);
  EXPECT_EQ(validate(o).error(), "leader election: lease_duration (15 s) must be greater than renew_deadline (15 s)");
  o = options_for("a");
  o.jitter = 1.2;
  o.retry_period = seconds(9);
  EXPECT_FALSE(validate(o).ok());
  o = options_for("");
  EXPECT_EQ(validate(o).error(), "leader election: the identity is empty");
}

// ---- against the fake ----

// A token that a test can turn bad (the elector's requests then fail with 401), or that
// runs `hook` before the n-th request.
class TestToken final : public TokenSource {
 public:
  Expected<std::string> token() override {
    const int n = ++calls_;
    if (hook_at_ == n && hook_) hook_();
    return std::string(bad_ ? "revoked" : "fake-token");
  }
  std::atomic<bool> bad_{false};
  int hook_at_ = 0;
  std::function<void()> hook_;

 private:
  std::atomic<int> calls_{0};
};

struct Replica {
  std::shared_ptr<TestToken> token = std::make_shared<TestToken>();
  std::unique_ptr<LeaderElector> elector;
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::atomic<long> started_at{-1};  // the fake clock's milliseconds
  std::atomic<long> stopped_at{-1};
};

void make_replica(Replica& r, FakeApiServer& fake, FakeClock& clock, const std::string& identity,
                  LeaderElectionOptions opts = {}) {
  if (opts.identity.empty()) opts = options_for(identity);
  auto config = config_for(fake, "");
  config.token = r.token;
  LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&r, &clock] {
    ++r.started;
    r.started_at = clock.elapsed().count();
  };
  callbacks.on_stopped_leading = [&r, &clock] {
    ++r.stopped;
    r.stopped_at = clock.elapsed().count();
  };
  ElectionClock ec{[&clock] { return clock.now(); }, [&clock] { return clock.wall(); }, clock.sleeper()};
  TransportOptions transport;
  transport.sleep = [](milliseconds) {};
  auto e = LeaderElector::create(config, opts, callbacks, ec, transport);
  ASSERT_TRUE(e.ok()) << e.error();
  r.elector = std::move(e.value());
}

Json stored_lease(FakeApiServer& fake) {
  const auto leases = fake.objects("leases");
  return leases.empty() ? Json() : leases.front();
}

TEST(LeaderElector, OneLeadsAndASilentLeaderIsReplacedAfterTheLeaseDurationNotBefore) {
  FakeApiServer fake({});
  FakeClock clock;
  Replica a, b;
  make_replica(a, fake, clock, "replica-a");
  make_replica(b, fake, clock, "replica-b");
  auto won = a.elector->try_acquire_or_renew();
  ASSERT_TRUE(won.ok()) << won.error().describe();
  EXPECT_TRUE(*won);
  EXPECT_TRUE(a.elector->is_leader());
  EXPECT_EQ(a.started, 1);
  auto lost = b.elector->try_acquire_or_renew();
  ASSERT_TRUE(lost.ok()) << lost.error().describe();
  EXPECT_FALSE(*lost);
  EXPECT_FALSE(b.elector->is_leader());
  EXPECT_EQ(b.elector->leader(), "replica-a");
  const Json lease = stored_lease(fake);
  EXPECT_EQ(lease["spec"]["holderIdentity"], "replica-a");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ(lease["spec"]["acquireTime"], "2026-01-01T00:00:00.000000Z");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 0);

  // A renews for a while: B's view of the lease stays fresh.
  for (int i = 0; i < 10; ++i) {
    clock.advance(seconds(2));
    ASSERT_TRUE(*a.elector->try_acquire_or_renew());
    ASSERT_FALSE(*b.elector->try_acquire_or_renew());
  }
  EXPECT_EQ(stored_lease(fake)["spec"]["renewTime"], "2026-01-01T00:00:20.000000Z");
  EXPECT_EQ(stored_lease(fake)["spec"]["acquireTime"], "2026-01-01T00:00:00.000000Z");

  // A goes silent at 20 s. A stops acting at 30 s (its renew deadline), by the clock.
  clock.advance(seconds(9));
  EXPECT_TRUE(a.elector->is_leader());
  clock.advance(seconds(1));
  EXPECT_FALSE(a.elector->is_leader());
  // B saw the renewal at 20 s: still A's at 34.999 s, B's at 35 s.
  clock.advance(milliseconds(4'999));
  EXPECT_FALSE(*b.elector->try_acquire_or_renew());
  clock.advance(milliseconds(1));
  auto taken = b.elector->try_acquire_or_renew();
  ASSERT_TRUE(taken.ok()) << taken.error().describe();
  EXPECT_TRUE(*taken);
  EXPECT_TRUE(b.elector->is_leader());
  EXPECT_EQ(stored_lease(fake)["spec"]["holderIdentity"], "replica-b");
  EXPECT_EQ(stored_lease(fake)["spec"]["leaseTransitions"], 1);
  EXPECT_EQ(stored_lease(fake)["spec"]["acquireTime"], "2026-01-01T00:00:35.000000Z");
  // A comes back: it sees B and steps down.
  EXPECT_FALSE(*a.elector->try_acquire_or_renew());
  EXPECT_EQ(a.stopped, 1);
  EXPECT_EQ(a.elector->leader(), "replica-b");
}

TEST(LeaderElector, AReleaseHandsOverAtOnce) {
  FakeApiServer fake({});
  FakeClock clock;
  Replica a, b;
  make_replica(a, fake, clock, "replica-a");
  make_replica(b, fake, clock, "replica-b");
  ASSERT_TRUE(*a.elector->try_acquire_or_renew());
  ASSERT_FALSE(*b.elector->try_acquire_or_renew());
  clock.advance(seconds(1));
  auto released = a.elector->release();
  ASSERT_TRUE(released.ok()) << released.error().describe();
  EXPECT_TRUE(*released);
  EXPECT_FALSE(a.elector->is_leader());
  EXPECT_EQ(a.stopped, 1);
  EXPECT_EQ(stored_lease(fake)["spec"]["holderIdentity"], "");
  EXPECT_EQ(stored_lease(fake)["spec"]["leaseDurationSeconds"], 1);
  // No lease duration to wait: B takes it at the same instant.
  EXPECT_TRUE(*b.elector->try_acquire_or_renew());
  EXPECT_EQ(stored_lease(fake)["spec"]["holderIdentity"], "replica-b");
  EXPECT_EQ(stored_lease(fake)["spec"]["leaseTransitions"], 1);
  EXPECT_FALSE(*a.elector->release());  // not ours: nothing to give up
}

// B's write is held (its token source blocks before the request) until A has written: both
// read the same state, A writes first, B's write must lose.
void race(Replica& a, Replica& b) {
  Signal b_waiting, a_done;
  b.token->hook_at_ = 2;  // B's second request: its write, after its read
  b.token->hook_ = [&] {
    b_waiting.bump();
    a_done.wait_until([&] { return a_done.count() > 0; });
  };
  std::optional<ApiResult<bool>> b_result;
  std::thread bt([&] { b_result.emplace(b.elector->try_acquire_or_renew()); });
  b_waiting.wait_until([&] { return b_waiting.count() > 0; });
  auto a_result = a.elector->try_acquire_or_renew();
  a_done.bump();
  bt.join();
  ASSERT_TRUE(a_result.ok()) << a_result.error().describe();
  EXPECT_TRUE(*a_result);
  ASSERT_FALSE(b_result->ok());
  EXPECT_EQ(b_result->error().http_status, 409);
  b.token->hook_ = {};
}

TEST(LeaderElector, ConcurrentCreatesHaveOneWinner) {
  FakeApiServer fake({});
  FakeClock clock;
  Replica a, b;
  make_replica(a, fake, clock, "replica-a");
  make_replica(b, fake, clock, "replica-b");
  race(a, b);  // both read 404, both POST
  EXPECT_TRUE(a.elector->is_leader());
  EXPECT_FALSE(b.elector->is_leader());
  EXPECT_EQ(b.elector->failures(), 1u);
  EXPECT_EQ(fake.objects("leases").size(), 1u);
  EXPECT_EQ(stored_lease(fake)["spec"]["holderIdentity"], "replica-a");
}

TEST(LeaderElector, ConcurrentTakeoversHaveOneWinnerThroughTheResourceVersion) {
  FakeApiServer fake({});
  FakeClock clock;
  Replica a, b, old;
  make_replica(a, fake, clock, "replica-a");
  make_replica(b, fake, clock, "replica-b");
  make_replica(old, fake, clock, "replica-old");
  ASSERT_TRUE(*old.elector->try_acquire_or_renew());
  ASSERT_TRUE(*old.elector->release());
  race(a, b);  // both read the released lease at one resourceVersion, both PUT
  EXPECT_TRUE(a.elector->is_leader());
  EXPECT_FALSE(b.elector->is_leader());
  EXPECT_EQ(stored_lease(fake)["spec"]["holderIdentity"], "replica-a");
  EXPECT_EQ(stored_lease(fake)["spec"]["leaseTransitions"], 1);
  // B's next try reads again and sees A.
  EXPECT_FALSE(*b.elector->try_acquire_or_renew());
  EXPECT_EQ(b.elector->leader(), "replica-a");
}

TEST(LeaderElector, TheFakeAnswersAStalePutAsTheRealServerDoes) {
  FakeApiServer fake({});
  SleepLog sleeps;
  auto t = make_transport(config_for(fake), sleeps);
  const Json lease{{"apiVersion", "coordination.k8s.io/v1"}, {"kind", "Lease"},
                   {"metadata", {{"name", "x"}, {"namespace", "gpubank-system"}}}, {"spec", {{"holderIdentity", "a"}}}};
  auto created = t->create(lease_collection_path("gpubank-system"), lease.dump());
  ASSERT_TRUE(created.ok()) << created.error().describe();
  const std::string rv = Json::parse(created->body)["metadata"]["resourceVersion"];
  auto again = t->create(lease_collection_path("gpubank-system"), lease.dump());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().http_status, 409);
  EXPECT_EQ(again.error().reason, "AlreadyExists");
  EXPECT_EQ(again.error().message, "leases.coordination.k8s.io \"x\" already exists");
  Json update = Json::parse(created->body);
  update["spec"]["holderIdentity"] = "b";
  ASSERT_TRUE(t->replace(lease_path("gpubank-system", "x"), update.dump()).ok());
  update["spec"]["holderIdentity"] = "c";  // still the old resourceVersion
  auto stale = t->replace(lease_path("gpubank-system", "x"), update.dump());
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().http_status, 409);
  EXPECT_EQ(stale.error().reason, "Conflict");
  EXPECT_EQ(stale.error().message,
            "Operation cannot be fulfilled on leases.coordination.k8s.io \"x\": the object has been modified; please "
            "apply your changes to the latest version and try again");
  auto missing = t->get(lease_path("gpubank-system", "y"));
  EXPECT_EQ(missing.error().message, "leases.coordination.k8s.io \"y\" not found");
  EXPECT_TRUE(sleeps.get().empty());  // a 409 is an answer, not retried
}

// The run() loops on threads, the clock moved in retry periods once both are asleep.
class Loops {
 public:
  Loops(FakeApiServer& fake, FakeClock& clock, Replica& a, Replica& b) : clock_(clock) {
    threads_.emplace_back([&a](std::stop_token st) { a.elector->run(st); });
    threads_.emplace_back([&b](std::stop_token st) { b.elector->run(st); });
    (void)fake;
  }
  // Both asleep, then the time moves one retry period.
  void step() {
    ASSERT_TRUE(clock_.wait_for_sleepers(live_));
    clock_.advance(seconds(2));
  }
  void stop(std::size_t i) {
    threads_[i].request_stop();
    threads_[i].join();
    --live_;
  }

 private:
  FakeClock& clock_;
  std::size_t live_ = 2;
  std::vector<std::jthread> threads_;
};

TEST(LeaderElector, RunLoopsElectOneStepDownOnFailedRenewalsAndReleaseOnStop) {
  FakeApiServer fake({});
  FakeClock clock;
  Replica a, b;
  make_replica(a, fake, clock, "replica-a");
  make_replica(b, fake, clock, "replica-b");
  Loops loops(fake, clock, a, b);
  loops.step();  // both tried at 0 s; asleep now
  ASSERT_TRUE(clock.wait_for_sleepers(2));
  ASSERT_EQ(a.elector->is_leader() + b.elector->is_leader(), 1);
  Replica& leader = a.elector->is_leader() ? a : b;
  Replica& other = a.elector->is_leader() ? b : a;
  EXPECT_EQ(leader.started, 1);
  EXPECT_EQ(other.started, 0);
  for (int i = 0; i < 5; ++i) loops.step();  // renewals at 2..10 s
  ASSERT_TRUE(clock.wait_for_sleepers(2));
  EXPECT_TRUE(leader.elector->is_leader());
  EXPECT_EQ(stored_lease(fake)["spec"]["leaseTransitions"], 0);

  // The leader renewed at 12 s, its last: its credentials are revoked now, so every try
  // from 14 s on fails (401).
  const long last_renewal = clock.elapsed().count();
  EXPECT_EQ(last_renewal, 12'000);
  leader.token->bad_ = true;
  while (other.started == 0) loops.step();
  ASSERT_TRUE(clock.wait_for_sleepers(2));
  EXPECT_EQ(leader.stopped, 1);
  EXPECT_GE(leader.stopped_at - last_renewal, 10'000);  // the renew deadline...
  EXPECT_LT(leader.stopped_at - last_renewal, 12'000);  // ...at the first failed try past it
  // The other replica saw that renewal (within one retry period of it) and waited a lease
  // duration from its observation: never before 15 s after the renewal, and never while the
  // old leader still acted.
  EXPECT_GE(other.started_at - last_renewal, 15'000);
  EXPECT_LE(other.started_at - last_renewal, 19'000);
  EXPECT_GE(other.started_at, leader.stopped_at + 5'000);
  EXPECT_EQ(stored_lease(fake)["spec"]["leaseTransitions"], 1);

  // A clean stop of the new leader releases the lease; the first replica (its credentials
  // back) takes it at its next try, not a lease duration later.
  leader.token->bad_ = false;
  Replica& second = other;
  const std::size_t second_index = &second == &a ? 0 : 1;
  loops.stop(second_index);
  EXPECT_EQ(stored_lease(fake)["spec"]["holderIdentity"], "");
  const long released_at = clock.elapsed().count();
  while (leader.started < 2) loops.step();
  EXPECT_LE(leader.started_at - released_at, 2'000);
  EXPECT_EQ(stored_lease(fake)["spec"]["leaseTransitions"], 2);
  loops.stop(1 - second_index);
  EXPECT_EQ(stored_lease(fake)["spec"]["holderIdentity"], "");
}

class KubectlLease : public KubectlFixture {};

TEST_F(KubectlLease, GetLeaseShowsTheHolder) {
  if (!start({})) GTEST_SKIP() << "kubectl is not on PATH: this test runs the real kubectl against the fake API server";
  FakeClock clock;
  Replica a;
  make_replica(a, *fake_, clock, "replica-a");
  ASSERT_TRUE(*a.elector->try_acquire_or_renew());
  const auto r = kubectl({"get", "lease", "gpubank-controller", "-n", "gpubank-system", "-o",
                          "jsonpath={.spec.holderIdentity}"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "replica-a");
  // CapacityLease's shortName is "lease" too; kubectl 1.32 still takes the built-in Lease,
  // without a warning (checked here against the fake's legacy discovery only).
  EXPECT_EQ(r.err, "");
  ASSERT_TRUE(*a.elector->release());
  const auto released = kubectl({"get", "leases.coordination.k8s.io", "gpubank-controller", "-n", "gpubank-system",
                                 "-o", "jsonpath={.spec.holderIdentity}"});
  ASSERT_EQ(released.status, 0) << released.err;
  EXPECT_EQ(released.out, "");
}

}  // namespace
}  // namespace gpubank::k8s
