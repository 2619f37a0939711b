#include "tidal/controller.hpp"

#include <gtest/gtest.h>

#include <map>

#include "core/cron.hpp"
#include "core/timestamp.hpp"
#include "core/timezone.hpp"
#include "policy/policy_set.hpp"
#include "support/paths.hpp"

namespace gpubank::tidal {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

sys_seconds at(const char* rfc3339) { return std::chrono::floor<seconds>(*parse_rfc3339(rfc3339)); }

// The mission's example: examples/policies/30-tidal.yaml targeting customer-service-llm
// (20-inference.yaml: minReplicas 1, maxReplicas 8, TP=4 on 4 GPUs, modelLoadTime 6m).
TidalController example_controller() {
  const policy::PolicySet set = policy::load_policy_set({testing::examples_dir() + "/policies"});
  const auto* tidal = set.find(policy::Kind::TidalPolicy, "weekday-serving-training");
  const auto* llm = set.find(policy::Kind::InferenceScalingPolicy, "customer-service-llm");
  EXPECT_NE(tidal, nullptr);
  EXPECT_NE(llm, nullptr);
  auto c = TidalController::create(tidal->name(), tidal->as<policy::TidalPolicySpec>(),
                                   {{llm->name(), llm->as<policy::InferenceScalingPolicySpec>()}});
  EXPECT_TRUE(c) << c.error();
  return std::move(c).value();
}

struct WindowArgs {
  const char* name;
  const char* start;
  const char* end;
  std::optional<int> floor;
  std::optional<Duration> prewarm;
  std::optional<int> limit;
};

policy::TidalWindow window(const WindowArgs& a) {
  policy::TidalWindow w;
  w.name = a.name;
  w.start = *CronSchedule::parse(a.start);
  w.end = *CronSchedule::parse(a.end);
  if (a.floor) w.inference_replica_floor = policy::ReplicaFloor{a.floor, {}};
  w.prewarm_before = a.prewarm;
  w.training_borrow_limit = a.limit;
  return w;
}

Duration mins(int n) { return Duration(minutes(n)); }

// A service "svc": minReplicas 1, maxReplicas 8, 4 GPUs per replica, modelLoadTime 5m.
TidalController controller(const char* zone, std::vector<policy::TidalWindow> windows, std::optional<Duration> checkpoint) {
  policy::TidalPolicySpec spec;
  spec.timezone = {zone, *find_time_zone(zone)};
  spec.windows = std::move(windows);
  spec.reclaim = policy::TidalReclaim{checkpoint, mins(10)};
  spec.targets = {{"svc"}, {"research"}, "pool-a"};
  policy::InferenceScalingPolicySpec svc;
  svc.min_replicas = 1;
  svc.max_replicas = 8;
  svc.replica_shape.gpu_per_replica = 4;
  svc.model_load_time = mins(5);
  auto c = TidalController::create("t", spec, {{"svc", svc}});
  EXPECT_TRUE(c) << c.error();
  return std::move(c).value();
}

struct Seen {
  sys_seconds at;
  BoundaryKind kind;
  std::string window;
  int floor;
  std::optional<int> limit;
  bool hold;
};

std::vector<Seen> seen(const std::vector<TidalAction>& actions, const std::string& policy) {
  std::vector<Seen> out;
  for (const auto& a : actions) {
    out.push_back({a.at, a.kind, a.occurrence.window, a.floors.at(policy), a.training_borrow_limit, a.admission_hold});
  }
  return out;
}

void expect_seen(const std::vector<Seen>& got, const std::vector<Seen>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("action " + std::to_string(i) + " at " + format_rfc3339(Timestamp{want[i].at}));
    EXPECT_EQ(got[i].at, want[i].at);
    EXPECT_EQ(event_kind(got[i].kind), event_kind(want[i].kind));
    EXPECT_EQ(got[i].window, want[i].window);
    EXPECT_EQ(got[i].floor, want[i].floor);
    EXPECT_EQ(got[i].limit, want[i].limit);
    EXPECT_EQ(got[i].hold, want[i].hold);
  }
}

constexpr auto kEnded = BoundaryKind::WindowEnded;
constexpr auto kApproaching = BoundaryKind::Approaching;
constexpr auto kPrewarm = BoundaryKind::PrewarmStarted;
constexpr auto kStarted = BoundaryKind::WindowStarted;
const std::string kLlm = "customer-service-llm";

TEST(TidalExample, LeadTimesComeFromTheWindowOrTheLargestModelLoadTimePlusTheMargin) {
  const auto c = example_controller();
  EXPECT_EQ(c.prewarm_before(0), minutes(30));     // daytime-serving: prewarmBefore 30m
  EXPECT_EQ(c.prewarm_before(1), minutes(6 + 2));  // nighttime-training: modelLoadTime 6m + margin 2m
  EXPECT_EQ(c.checkpoint_before(), minutes(30));
}

TEST(TidalExample, AWeekdayFromMondayEveningToTuesdayEvening) {
  const auto c = example_controller();
  // Tuesday 2026-12-01 in Asia/Shanghai (+08:00, no DST).
  //   daytime-serving [08:30, 20:00): prewarm 08:30 - 30m = 08:00, approaching 08:00 - 30m = 07:30
  //   nighttime-training [20:00, 07:30 next day): prewarm 20:00 - 8m = 19:52, approaching 19:22,
  //   both inside the daytime window, whose floor 6 and limit 8 are stricter than 1 and 40:
  //   nothing moves there, no hold.
  const auto actions = c.timeline(at("2026-11-30T19:00:00+08:00"), at("2026-12-01T21:00:00+08:00"));
  expect_seen(seen(actions, kLlm),
              {
                  {at("2026-11-30T19:22:00+08:00"), kApproaching, "nighttime-training", 6, 8, false},
                  {at("2026-11-30T19:52:00+08:00"), kPrewarm, "nighttime-training", 6, 8, false},
                  // The night floor 1 takes over at the daytime end; the limit loosens to 40.
                  {at("2026-11-30T20:00:00+08:00"), kEnded, "daytime-serving", 1, 40, false},
                  {at("2026-11-30T20:00:00+08:00"), kStarted, "nighttime-training", 1, 40, false},
                  // 07:30 local = 23:30 UTC the day before: the night ends and the day approaches
                  // at once; the limit tightens from 40 to 8 and admission is held.
                  {at("2026-11-30T23:30:00Z"), kEnded, "nighttime-training", 1, 8, true},
                  {at("2026-11-30T23:30:00Z"), kApproaching, "daytime-serving", 1, 8, true},
                  {at("2026-12-01T08:00:00+08:00"), kPrewarm, "daytime-serving", 6, 8, true},
                  {at("2026-12-01T08:30:00+08:00"), kStarted, "daytime-serving", 6, 8, false},
                  {at("2026-12-01T19:22:00+08:00"), kApproaching, "nighttime-training", 6, 8, false},
                  {at("2026-12-01T19:52:00+08:00"), kPrewarm, "nighttime-training", 6, 8, false},
                  {at("2026-12-01T20:00:00+08:00"), kEnded, "daytime-serving", 1, 40, false},
                  {at("2026-12-01T20:00:00+08:00"), kStarted, "nighttime-training", 1, 40, false},
              });

  // The morning approach orders the reclaim: floor 1 -> 6 is 5 replicas x 4 GPUs = 20 GPUs,
  // needed at the prewarm (08:00), borrowing tightened to 8, grace 10m.
  const TidalAction& approach = actions[5];
  ASSERT_TRUE(approach.reclaim);
  EXPECT_EQ(approach.reason, "WindowNeedsCapacity");
  EXPECT_EQ(approach.reclaim->resource_pool, "h100-inference");
  EXPECT_EQ(approach.reclaim->training_groups, (std::vector<std::string>{"search", "ads", "research"}));
  EXPECT_EQ(approach.reclaim->borrow_limit, 8);
  EXPECT_EQ(approach.reclaim->gpus_needed, 20);
  EXPECT_EQ(approach.reclaim->grace, minutes(10));
  EXPECT_EQ(approach.reclaim->needed_at, at("2026-12-01T08:00:00+08:00"));
  EXPECT_EQ(approach.message,
            "daytime-serving starts 2026-12-01 08:30 CST and needs capacity on h100-inference by 2026-12-01 08:00 CST "
            "(prewarm 30m, checkpoint 30m before that): 20 GPUs for its floors, training borrowing tightened from 40 "
            "GPUs to 8 GPUs; new long low-priority training held, borrowers search, ads, research told to checkpoint "
            "within 10m");
  // The evening approach of the night window orders nothing.
  EXPECT_FALSE(actions[0].reclaim);
  EXPECT_EQ(actions[0].reason, "NoCapacityNeeded");
  EXPECT_EQ(actions[1].reason, "FloorAlreadyInForce");
  EXPECT_EQ(actions[6].reason, "FloorRaised");
  EXPECT_EQ(actions[6].message,
            "daytime-serving prewarm, 30m before its start 2026-12-01 08:30 CST: floor customer-service-llm 1 -> 6 so "
            "replicas are ready by then");

  const TidalRecord r = c.record_of(approach);
  EXPECT_EQ(r.kind, "TidalWindowApproaching");
  EXPECT_EQ(r.object, "TidalPolicy/weekday-serving-training");
  EXPECT_EQ(r.pool, "h100-inference");
  EXPECT_EQ(r.related, (std::vector<std::string>{"InferenceScalingPolicy/customer-service-llm"}));
  EXPECT_EQ(r.numbers.dump(),
            R"({"window":"daytime-serving","start":"2026-12-01T00:30:00Z","end":"2026-12-01T12:00:00Z",)"
            R"("floors":{"customer-service-llm":1},"trainingBorrowLimit":8,"admissionHold":true,)"
            R"("prewarmBeforeSeconds":1800,"checkpointBeforeSeconds":1800,)"
            R"("reclaim":{"borrowLimit":8,"gpusNeeded":20,"graceSeconds":600,"neededAt":"2026-12-01T00:00:00Z"}})");
}

TEST(TidalExample, StateThroughTheDay) {
  const auto c = example_controller();
  // 07:29 Tuesday: still night (floor 1, limit 40); next: the night ends at 07:30.
  auto s = c.state_at(at("2026-12-01T07:29:00+08:00"));
  ASSERT_TRUE(s.active);
  EXPECT_EQ(s.active->window, "nighttime-training");
  EXPECT_EQ(s.active->start, at("2026-11-30T20:00:00+08:00"));
  EXPECT_EQ(s.active->end, at("2026-12-01T07:30:00+08:00"));
  EXPECT_EQ(s.floors.at(kLlm), 1);
  EXPECT_EQ(s.training_borrow_limit, 40);
  EXPECT_FALSE(s.admission_hold);
  ASSERT_TRUE(s.next);
  EXPECT_EQ(s.next->at, at("2026-12-01T07:30:00+08:00"));
  EXPECT_EQ(s.next->kind, kEnded);

  // 08:15: between windows, the daytime one prewarming: floor 6 already, limit 8, held.
  s = c.state_at(at("2026-12-01T08:15:00+08:00"));
  EXPECT_FALSE(s.active);
  ASSERT_TRUE(s.prewarming);
  ASSERT_TRUE(s.approaching);
  EXPECT_EQ(s.prewarming->window, "daytime-serving");
  EXPECT_EQ(s.prewarming->approaching, at("2026-12-01T07:30:00+08:00"));
  EXPECT_EQ(s.floors.at(kLlm), 6);
  EXPECT_EQ(s.training_borrow_limit, 8);
  EXPECT_TRUE(s.admission_hold);
  EXPECT_EQ(s.next->at, at("2026-12-01T08:30:00+08:00"));

  // 19:30: daytime, the night approaching: its limit 40 does not loosen the 8, no hold.
  s = c.state_at(at("2026-12-01T19:30:00+08:00"));
  EXPECT_EQ(s.active->window, "daytime-serving");
  EXPECT_EQ(s.approaching->window, "nighttime-training");
  EXPECT_FALSE(s.prewarming);
  EXPECT_EQ(s.floors.at(kLlm), 6);
  EXPECT_EQ(s.training_borrow_limit, 8);
  EXPECT_FALSE(s.admission_hold);
  EXPECT_EQ(s.next->at, at("2026-12-01T19:52:00+08:00"));
  EXPECT_EQ(s.next->kind, kPrewarm);
}

TEST(TidalExample, WeekendHasNoWindowFromSaturdayMorningUntilMondaysApproach) {
  const auto c = example_controller();
  // Friday 2026-12-04 20:00 the night window starts; "30 7 * * 2-6" ends it Saturday 07:30.
  // No daytime window on Saturday or Sunday ("1-5"), no night start on either evening: from
  // Saturday 07:30 the floor is minReplicas 1, training borrowing is uncapped, admission
  // open, until Monday 07:30 (Sunday 23:30 UTC) when the daytime window approaches and the
  // limit tightens from none to 8.
  const auto actions = c.timeline(at("2026-12-05T00:00:00+08:00"), at("2026-12-07T09:00:00+08:00"));
  expect_seen(seen(actions, kLlm),
              {
                  {at("2026-12-05T07:30:00+08:00"), kEnded, "nighttime-training", 1, std::nullopt, false},
                  {at("2026-12-06T23:30:00Z"), kApproaching, "daytime-serving", 1, 8, true},
                  {at("2026-12-07T08:00:00+08:00"), kPrewarm, "daytime-serving", 6, 8, true},
                  {at("2026-12-07T08:30:00+08:00"), kStarted, "daytime-serving", 6, 8, false},
              });
  ASSERT_TRUE(actions[1].reclaim);
  EXPECT_EQ(actions[1].message.find("training borrowing tightened from unlimited to 8 GPUs") != std::string::npos, true)
      << actions[1].message;

  for (const char* t : {"2026-12-05T12:00:00+08:00", "2026-12-06T12:00:00+08:00"}) {
    SCOPED_TRACE(t);
    const auto s = c.state_at(at(t));
    EXPECT_FALSE(s.active);
    EXPECT_FALSE(s.approaching);
    EXPECT_EQ(s.floors.at(kLlm), 1);
    EXPECT_EQ(s.training_borrow_limit, std::nullopt);
    EXPECT_FALSE(s.admission_hold);
    ASSERT_TRUE(s.next);
    EXPECT_EQ(s.next->at, at("2026-12-06T23:30:00Z"));
    EXPECT_EQ(s.next->kind, kApproaching);
    EXPECT_EQ(s.next->occurrence.window, "daytime-serving");
  }
}

TEST(TidalWindows, AWindowSpanningMidnightIsOneOccurrence) {
  // Berlin in January (+01:00): 22:00 to 06:00 with prewarm 10m and checkpoint 20m.
  const auto c = controller("Europe/Berlin", {window({"night", "0 22 * * *", "0 6 * * *", 3, mins(10), 16})}, mins(20));
  for (const char* t : {"2026-01-15T23:59:00+01:00", "2026-01-16T00:01:00+01:00"}) {
    const auto s = c.state_at(at(t));
    ASSERT_TRUE(s.active) << t;
    EXPECT_EQ(s.active->start, at("2026-01-15T21:00:00Z"));
    EXPECT_EQ(s.active->end, at("2026-01-16T05:00:00Z"));
    EXPECT_EQ(s.active->prewarm, at("2026-01-15T20:50:00Z"));      // 21:50 local
    EXPECT_EQ(s.active->approaching, at("2026-01-15T20:30:00Z"));  // 21:30 local
    EXPECT_EQ(s.floors.at("svc"), 3);
    EXPECT_EQ(s.training_borrow_limit, 16);
  }
  expect_seen(seen(c.timeline(at("2026-01-15T12:00:00Z"), at("2026-01-16T12:00:00Z")), "svc"),
              {
                  {at("2026-01-15T20:30:00Z"), kApproaching, "night", 1, 16, true},
                  {at("2026-01-15T20:50:00Z"), kPrewarm, "night", 3, 16, true},
                  {at("2026-01-15T21:00:00Z"), kStarted, "night", 3, 16, false},
                  {at("2026-01-16T05:00:00Z"), kEnded, "night", 1, std::nullopt, false},
              });
}

TEST(TidalWindows, SpringForwardDuringAWindowInNewYork) {
  // 2026-03-08 02:00 EST becomes 03:00 EDT. The window opens Saturday 22:00 EST (03:00Z)
  // and closes Sunday 06:00 EDT (10:00Z): 7 hours. Prewarm 30m and checkpoint 15m count
  // back from 03:00Z in absolute time: 02:30Z and 02:15Z.
  const auto c =
      controller("America/New_York", {window({"night", "0 22 * * *", "0 6 * * *", 4, mins(30), 8})}, mins(15));
  const auto s = c.state_at(at("2026-03-08T04:00:00-04:00"));  // 08:00Z, after the change
  ASSERT_TRUE(s.active);
  EXPECT_EQ(s.active->start, at("2026-03-08T03:00:00Z"));
  EXPECT_EQ(s.active->end, at("2026-03-08T10:00:00Z"));
  EXPECT_EQ(s.active->end - s.active->start, std::chrono::hours(7));
  EXPECT_EQ(s.active->prewarm, at("2026-03-08T02:30:00Z"));
  EXPECT_EQ(s.active->approaching, at("2026-03-08T02:15:00Z"));
  EXPECT_EQ(s.floors.at("svc"), 4);
  // The next evening is in EDT: 22:00-04:00 = 02:00Z.
  ASSERT_TRUE(s.next);
  EXPECT_EQ(s.next->at, at("2026-03-08T10:00:00Z"));
  const auto later = c.state_at(at("2026-03-08T12:00:00Z"));
  EXPECT_EQ(later.next->at, at("2026-03-09T01:15:00Z"));  // approaching: 02:00Z - 45m
}

TEST(TidalWindows, FallBackDuringAWindowInNewYork) {
  // 2026-11-01 02:00 EDT becomes 01:00 EST. Saturday 22:00 EDT (02:00Z) to Sunday
  // 06:00 EST (11:00Z): 9 hours.
  const auto c =
      controller("America/New_York", {window({"night", "0 22 * * *", "0 6 * * *", 4, mins(30), 8})}, mins(15));
  const auto s = c.state_at(at("2026-11-01T01:30:00-05:00"));  // the second 01:30
  ASSERT_TRUE(s.active);
  EXPECT_EQ(s.active->start, at("2026-11-01T02:00:00Z"));
  EXPECT_EQ(s.active->end, at("2026-11-01T11:00:00Z"));
  EXPECT_EQ(s.active->end - s.active->start, std::chrono::hours(9));
}

TEST(TidalWindows, AStartInTheRepeatedHourOpensTheWindowAtItsSecondFiring) {
  // robfig fires "30 1 * * *" twice on 2026-11-01 in New York: 01:30 EDT (05:30Z) and
  // 01:30 EST (06:30Z). KEDA's cron scaler is active only once the next end (04:00 EST =
  // 09:00Z) comes before the next start, so the window opens at the second firing; the
  // prewarm (30m) and approaching (15m more) count back from 06:30Z.
  const auto c =
      controller("America/New_York", {window({"late", "30 1 * * *", "0 4 * * *", 4, mins(30), std::nullopt})}, mins(15));
  expect_seen(seen(c.timeline(at("2026-11-01T04:00:00Z"), at("2026-11-01T12:00:00Z")), "svc"),
              {
                  {at("2026-11-01T05:45:00Z"), kApproaching, "late", 1, std::nullopt, true},
                  {at("2026-11-01T06:00:00Z"), kPrewarm, "late", 4, std::nullopt, true},
                  {at("2026-11-01T06:30:00Z"), kStarted, "late", 4, std::nullopt, false},
                  {at("2026-11-01T09:00:00Z"), kEnded, "late", 1, std::nullopt, false},
              });
}

TEST(TidalWindows, PrewarmAcrossTheBerlinSpringChangeCountsAbsoluteTime) {
  // 2026-03-29 02:00 CET becomes 03:00 CEST. A window from 03:00 CEST (01:00Z) with a
  // 90m prewarm starts prewarming at 23:30Z (00:30 CET), a wall-clock distance of 2.5 h,
  // so the replicas get their full 90 minutes; checkpoint 30m before that: 23:00Z.
  const auto c =
      controller("Europe/Berlin", {window({"early", "0 3 * * *", "0 9 * * *", 5, mins(90), std::nullopt})}, mins(30));
  const auto s = c.state_at(at("2026-03-29T00:45:00+01:00"));
  ASSERT_TRUE(s.prewarming);
  EXPECT_EQ(s.prewarming->start, at("2026-03-29T01:00:00Z"));
  EXPECT_EQ(s.prewarming->prewarm, at("2026-03-28T23:30:00Z"));
  EXPECT_EQ(s.prewarming->approaching, at("2026-03-28T23:00:00Z"));
  EXPECT_EQ(s.prewarming->end, at("2026-03-29T07:00:00Z"));  // 09:00 CEST
  EXPECT_EQ(s.floors.at("svc"), 5);
}

TEST(TidalWindows, AHigherNextFloorRisesEarlyInsideThePreviousWindowAndALowerOneWaitsForItsEnd) {
  // UTC. "low" 08:00-12:00 floor 2, then "high" 12:00-18:00 floor 5 (prewarm 30m, limit 4),
  // then "tail" 18:00-20:00 floor 3. Checkpoint 30m.
  const auto c = controller("UTC",
                            {window({"low", "0 8 * * *", "0 12 * * *", 2, mins(30), std::nullopt}),
                             window({"high", "0 12 * * *", "0 18 * * *", 5, mins(30), 4}),
                             window({"tail", "0 18 * * *", "0 20 * * *", 3, mins(30), std::nullopt})},
                            mins(30));
  const auto actions = c.timeline(at("2026-06-01T07:00:00Z"), at("2026-06-01T21:00:00Z"));
  expect_seen(seen(actions, "svc"),
              {
                  {at("2026-06-01T07:00:00Z"), kApproaching, "low", 1, std::nullopt, true},
                  {at("2026-06-01T07:30:00Z"), kPrewarm, "low", 2, std::nullopt, true},
                  {at("2026-06-01T08:00:00Z"), kStarted, "low", 2, std::nullopt, false},
                  // high's approaching inside low: its limit 4 tightens at once, admission held
                  // (it needs (5 - 2) x 4 = 12 GPUs and a tighter limit).
                  {at("2026-06-01T11:00:00Z"), kApproaching, "high", 2, 4, true},
                  // Its floor 5 is higher than low's 2: it rises at its prewarm, inside low.
                  {at("2026-06-01T11:30:00Z"), kPrewarm, "high", 5, 4, true},
                  {at("2026-06-01T12:00:00Z"), kEnded, "low", 5, 4, false},
                  {at("2026-06-01T12:00:00Z"), kStarted, "high", 5, 4, false},
                  // tail's floor 3 is lower: nothing at its approaching or prewarm...
                  {at("2026-06-01T17:00:00Z"), kApproaching, "tail", 5, 4, false},
                  {at("2026-06-01T17:30:00Z"), kPrewarm, "tail", 5, 4, false},
                  // ...it applies when high ends, and the limit falls away with high.
                  {at("2026-06-01T18:00:00Z"), kEnded, "high", 3, std::nullopt, false},
                  {at("2026-06-01T18:00:00Z"), kStarted, "tail", 3, std::nullopt, false},
                  {at("2026-06-01T20:00:00Z"), kEnded, "tail", 1, std::nullopt, false},
              });
  ASSERT_TRUE(actions[3].reclaim);
  EXPECT_EQ(actions[3].reclaim->gpus_needed, 12);
  EXPECT_EQ(actions[3].reclaim->borrow_limit, 4);
  EXPECT_FALSE(actions[7].reclaim);
}

TEST(TidalWindows, AStartInASpringForwardGapKeepsTheWindowActiveForADayAsKedaDoes) {
  // "30 2 * * *" never fires on 2026-03-08 in New York (02:00-03:00 does not exist). KEDA's
  // cron scaler is active while the next end comes before the next start: when Saturday's
  // window (02:30-05:00 EST = 07:30Z-10:00Z) ends, the next end is Sunday 05:00 EDT (09:00Z)
  // and the next start Monday 02:30 EDT, so it stays active: one occurrence from Saturday
  // 07:30Z to Sunday 09:00Z, the floor held for a day. The controller agrees with the
  // ScaledObject rendered from the same policy. (Worth a validation warning; not the
  // controller's to change.)
  const auto c =
      controller("America/New_York", {window({"gap", "30 2 * * *", "0 5 * * *", 4, mins(30), std::nullopt})}, mins(15));
  const auto s = c.state_at(at("2026-03-07T12:00:00-05:00"));
  ASSERT_TRUE(s.active);
  EXPECT_EQ(s.active->start, at("2026-03-07T07:30:00Z"));
  EXPECT_EQ(s.active->end, at("2026-03-08T09:00:00Z"));
  EXPECT_EQ(s.floors.at("svc"), 4);
}

// The stateful part on the example: one observation per step.
Observed obs(int ready, int realtime, bool failed = false) { return {{kLlm, {ready, realtime, failed}}}; }

std::vector<std::string> kinds(const TidalStep& s) {
  std::vector<std::string> out;
  for (const auto& r : s.records) out.push_back(r.kind);
  return out;
}

const TidalRecord& only(const TidalStep& s, const std::string& kind) {
  const TidalRecord* found = nullptr;
  for (const auto& r : s.records) {
    if (r.kind == kind) {
      EXPECT_EQ(found, nullptr) << "two " << kind;
      found = &r;
    }
  }
  EXPECT_NE(found, nullptr) << "no " << kind;
  static const TidalRecord none;
  return found != nullptr ? *found : none;
}

TEST(TidalStep, FloorInForceIsTheLargerOfTidalAndRealtimeCappedAtMaxReplicas) {
  auto c = example_controller();
  // Tuesday 12:00: daytime floor 6, traffic asks for 2: floor in force 6.
  auto s = *c.step(at("2026-12-01T12:00:00+08:00"), obs(6, 2));
  ASSERT_EQ(s.decisions.size(), 1u);
  EXPECT_EQ(s.decisions[0].tidal_floor, 6);
  EXPECT_EQ(s.decisions[0].floor_in_force, 6);
  EXPECT_EQ(only(s, "FloorChanged").numbers.dump(), R"({"tidal":6,"realtime":2,"effective":6})");
  EXPECT_EQ(only(s, "FloorChanged").reason, "TidalFloor");

  // Traffic asks for 7: 7 > 6.
  s = *c.step(at("2026-12-01T12:01:00+08:00"), obs(6, 7));
  EXPECT_EQ(s.decisions[0].floor_in_force, 7);
  EXPECT_EQ(only(s, "FloorChanged").reason, "RealtimeDesired");
  EXPECT_EQ(only(s, "FloorChanged").message,
            "customer-service-llm: floor in force 6 -> 7 = max(tidal floor 6, real-time desired 7)");

  // 10 is above maxReplicas 8.
  s = *c.step(at("2026-12-01T12:02:00+08:00"), obs(7, 10));
  EXPECT_EQ(s.decisions[0].floor_in_force, 8);
  EXPECT_EQ(only(s, "FloorChanged").numbers.dump(), R"({"tidal":6,"realtime":10,"effective":8})");
  EXPECT_EQ(only(s, "FloorChanged").reason, "MaxReplicas");

  // Unchanged: no record.
  s = *c.step(at("2026-12-01T12:03:00+08:00"), obs(8, 9));
  EXPECT_TRUE(s.records.empty());

  // 20:00: the night floor 1, but traffic still needs 7: the window never lowers it
  // below 7. Records: the day ends, the night starts, the floor 8 -> 7.
  s = *c.step(at("2026-12-01T20:00:00+08:00"), obs(8, 7));
  EXPECT_EQ(s.decisions[0].tidal_floor, 1);
  EXPECT_EQ(s.decisions[0].floor_in_force, 7);
  // 19:22 and 19:52 (the night's approaching and prewarm) were passed since 12:03 too.
  EXPECT_EQ(kinds(s), (std::vector<std::string>{"TidalWindowApproaching", "PrewarmStarted", "TidalWindowEnded",
                                                "TidalWindowStarted", "FloorChanged"}));
  EXPECT_EQ(s.records[0].at, at("2026-12-01T19:22:00+08:00"));
  EXPECT_EQ(s.records[2].message,
            "daytime-serving ended 2026-12-01 20:00 CST: floors customer-service-llm 1; training borrow limit on "
            "h100-inference 40 GPUs; admission open");
}

TEST(TidalStep, PrewarmFailureKeepsReplicasAndRetriesWithBackoff) {
  auto c = example_controller();
  auto s = *c.step(at("2026-12-01T07:59:00+08:00"), obs(1, 1));
  EXPECT_EQ(s.decisions[0].floor_in_force, 1);
  // 08:00: prewarm, floor 1 -> 6.
  s = *c.step(at("2026-12-01T08:00:00+08:00"), obs(1, 1));
  EXPECT_EQ(kinds(s), (std::vector<std::string>{"PrewarmStarted", "FloorChanged"}));
  EXPECT_EQ(s.decisions[0].floor_in_force, 6);
  EXPECT_TRUE(s.decisions[0].scale_down_allowed);

  // 08:10: 3 of 6 ready and the shell saw the attempt fail (no capacity for the shape):
  // alert, keep every replica, first retry 30s later.
  s = *c.step(at("2026-12-01T08:10:00+08:00"), obs(3, 1, true));
  const TidalRecord& failed = only(s, "PrewarmFailed");
  EXPECT_TRUE(failed.alert);
  EXPECT_EQ(failed.reason, "PrewarmAttemptFailed");
  EXPECT_EQ(failed.object, "InferenceScalingPolicy/customer-service-llm");
  EXPECT_EQ(failed.numbers.dump(),
            R"({"ready":3,"tidal":6,"missing":3,"attempt":1,"nextRetryAt":"2026-12-01T00:10:30Z"})");
  EXPECT_FALSE(s.decisions[0].scale_down_allowed);
  EXPECT_FALSE(s.decisions[0].retry_prewarm);
  EXPECT_EQ(s.decisions[0].floor_in_force, 6);

  // Retry waits: 30s, then doubling 60, 120, 240, 480, capped at 600.
  struct Retry {
    const char* now;
    int attempt;
    int backoff;
    const char* next;
  };
  const Retry retries[] = {
      {"2026-12-01T08:10:30+08:00", 2, 60, "2026-12-01T00:11:30Z"},
      {"2026-12-01T08:11:30+08:00", 3, 120, "2026-12-01T00:13:30Z"},
      {"2026-12-01T08:13:30+08:00", 4, 240, "2026-12-01T00:17:30Z"},
      {"2026-12-01T08:17:30+08:00", 5, 480, "2026-12-01T00:25:30Z"},
      {"2026-12-01T08:25:30+08:00", 6, 600, "2026-12-01T00:35:30Z"},
      {"2026-12-01T08:35:30+08:00", 7, 600, "2026-12-01T00:45:30Z"},
  };
  for (const auto& r : retries) {
    SCOPED_TRACE(r.now);
    // Between retries the attempt is reported failed once (an alert with its number).
    s = *c.step(at(r.now) - seconds(10), obs(3, 1, true));
    if (r.attempt > 2) {
      EXPECT_EQ(only(s, "PrewarmFailed").numbers["attempt"], r.attempt - 1);
    }
    s = *c.step(at(r.now), obs(3, 1, true));
    const TidalRecord& retry = only(s, "PrewarmRetried");
    EXPECT_EQ(retry.numbers["attempt"], r.attempt);
    EXPECT_EQ(retry.numbers["backoffSeconds"], r.backoff);
    EXPECT_EQ(retry.numbers["nextRetryAt"], r.next);
    EXPECT_TRUE(s.decisions[0].retry_prewarm);
    EXPECT_FALSE(s.decisions[0].scale_down_allowed);
  }
  // The window started at 08:30 meanwhile, with 3 of 6 ready: already failing, no second alert.
  // Real-time demand dropping to 1 never plans a scale-down while the failure is open.
  s = *c.step(at("2026-12-01T08:40:00+08:00"), obs(3, 1));
  EXPECT_FALSE(s.decisions[0].scale_down_allowed);
  // 08:44: all 6 ready: resolved after 7 attempts, scale-down allowed again.
  s = *c.step(at("2026-12-01T08:44:00+08:00"), obs(6, 1));
  EXPECT_EQ(only(s, "PrewarmResolved").numbers.dump(), R"({"ready":6,"tidal":6,"missing":0,"attempts":7})");
  EXPECT_TRUE(s.decisions[0].scale_down_allowed);
  EXPECT_FALSE(s.decisions[0].retry_prewarm);
}

TEST(TidalStep, ReplicasMissingAtTheWindowStartAreAPrewarmFailure) {
  auto c = example_controller();
  (void)*c.step(at("2026-12-01T08:00:00+08:00"), obs(1, 1));
  auto s = *c.step(at("2026-12-01T08:20:00+08:00"), obs(4, 1));
  EXPECT_EQ(kinds(s), std::vector<std::string>{});  // still loading: no failure before the start
  s = *c.step(at("2026-12-01T08:30:00+08:00"), obs(4, 1));
  EXPECT_EQ(kinds(s), (std::vector<std::string>{"TidalWindowStarted", "PrewarmFailed"}));
  const TidalRecord& failed = only(s, "PrewarmFailed");
  EXPECT_EQ(failed.reason, "NotReadyAtWindowStart");
  EXPECT_EQ(failed.message,
            "customer-service-llm: window started with 4 of 6 replicas (4 GPUs each) ready; keeping every replica (no "
            "scale-down), retrying at 2026-12-01T00:30:30Z");
  EXPECT_FALSE(s.decisions[0].scale_down_allowed);
}

TEST(TidalStep, FreezePinsReadyReplicasAndUnfreezeResumes) {
  auto c = example_controller();
  // Before any step nothing is known to pin.
  auto early = c.freeze("alice", at("2026-12-01T05:00:00+08:00"), "incident");
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error(),
            "TidalPolicy/weekday-serving-training cannot be frozen before its first step: no ready replicas have been "
            "observed");
  EXPECT_EQ(c.unfreeze("bob", at("2026-12-01T05:00:00+08:00")).error(),
            "TidalPolicy/weekday-serving-training is not frozen");

  auto s = *c.step(at("2026-12-01T06:00:00+08:00"), obs(2, 2));
  EXPECT_EQ(s.decisions[0].floor_in_force, 2);
  auto frozen = c.freeze("alice", at("2026-12-01T06:00:00+08:00"), "incident INC-42");
  ASSERT_TRUE(frozen) << frozen.error();
  EXPECT_EQ(frozen->kind, "TidalFrozen");
  EXPECT_EQ(frozen->actor, "alice");
  EXPECT_EQ(frozen->numbers.dump(), R"({"pinned":{"customer-service-llm":2}})");
  EXPECT_EQ(frozen->message,
            "TidalPolicy/weekday-serving-training frozen by alice: replicas pinned (customer-service-llm at 2), "
            "windows no longer move them, real-time demand may still scale up; reason: incident INC-42");
  auto twice = c.freeze("carol", at("2026-12-01T06:01:00+08:00"), "again");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error(),
            "TidalPolicy/weekday-serving-training is already frozen (by alice at 2026-11-30T22:00:00Z); unfreeze it "
            "first");

  // 08:00 prewarm: the window's floor 6 is recorded, but the pin 2 holds.
  s = *c.step(at("2026-12-01T08:00:00+08:00"), obs(2, 2));
  EXPECT_EQ(kinds(s), (std::vector<std::string>{"TidalWindowEnded", "TidalWindowApproaching", "PrewarmStarted"}));
  EXPECT_NE(s.records[2].message.find("(frozen by alice: replicas stay pinned)"), std::string::npos);
  EXPECT_EQ(s.decisions[0].tidal_floor, 6);
  EXPECT_EQ(s.decisions[0].pinned, 2);
  EXPECT_EQ(s.decisions[0].floor_in_force, 2);
  // 08:30: 2 of 6 ready at the start, but frozen: no prewarm failure.
  s = *c.step(at("2026-12-01T08:30:00+08:00"), obs(2, 2));
  EXPECT_EQ(kinds(s), std::vector<std::string>{"TidalWindowStarted"});
  EXPECT_TRUE(s.decisions[0].scale_down_allowed);
  // Real-time demand may still scale up above the pin (5)...
  s = *c.step(at("2026-12-01T09:00:00+08:00"), obs(2, 5));
  EXPECT_EQ(s.decisions[0].floor_in_force, 5);
  EXPECT_EQ(only(s, "FloorChanged").numbers.dump(), R"({"tidal":6,"realtime":5,"effective":5,"pinned":2})");
  // ...and back down to the pin, never below it.
  s = *c.step(at("2026-12-01T09:30:00+08:00"), obs(5, 1));
  EXPECT_EQ(s.decisions[0].floor_in_force, 2);
  EXPECT_EQ(only(s, "FloorChanged").reason, "Frozen");

  auto thawed = c.unfreeze("bob", at("2026-12-01T10:00:00+08:00"));
  ASSERT_TRUE(thawed) << thawed.error();
  EXPECT_EQ(thawed->kind, "TidalUnfrozen");
  EXPECT_EQ(thawed->actor, "bob");
  // 06:00 to 10:00 = 4 h = 14400 s.
  EXPECT_EQ(thawed->numbers.dump(), R"({"pinned":{"customer-service-llm":2},"frozenSeconds":14400})");
  EXPECT_EQ(thawed->message,
            "TidalPolicy/weekday-serving-training unfrozen by bob after 4h (frozen by alice): floors follow the "
            "windows again (tidal floor customer-service-llm 6)");
  s = *c.step(at("2026-12-01T10:00:00+08:00"), obs(2, 1));
  EXPECT_EQ(s.decisions[0].floor_in_force, 6);
  EXPECT_FALSE(s.decisions[0].pinned);
  EXPECT_EQ(only(s, "FloorChanged").numbers.dump(), R"({"tidal":6,"realtime":1,"effective":6})");
}

TEST(TidalStep, StepsEveryFiveMinutesForAWeekRecordEachBoundaryOnce) {
  auto c = example_controller();
  // Monday 2026-11-30 00:00 to Monday 2026-12-07 00:00, Shanghai. Boundaries: five daytime
  // windows (Mon-Fri) x 4 = 20; five night windows starting Mon-Fri 20:00, each with its
  // approaching, prewarm, start and end (Tue-Sat 07:30) = 20. The floor in force with
  // real-time demand 1: set at the first step (1), then 1 -> 6 at 08:00 and 6 -> 1 at 20:00
  // on five days: 11 changes.
  std::map<std::string, int> count;
  int ready = 1;
  const auto begin = at("2026-11-30T00:00:00+08:00");
  for (auto t = begin; t < begin + std::chrono::days(7); t += minutes(5)) {
    auto s = c.step(t, obs(ready, 1));
    ASSERT_TRUE(s) << s.error();
    for (const auto& r : s->records) ++count[r.kind];
    ready = s->decisions[0].floor_in_force;  // replicas follow the floor a step later
  }
  EXPECT_EQ(count["TidalWindowApproaching"], 10);
  EXPECT_EQ(count["PrewarmStarted"], 10);
  EXPECT_EQ(count["TidalWindowStarted"], 10);
  EXPECT_EQ(count["TidalWindowEnded"], 10);
  EXPECT_EQ(count["FloorChanged"], 11);
  // Ready five minutes after each rise, before each 08:30 start: no prewarm failure.
  EXPECT_EQ(count.size(), 5u);
  EXPECT_FALSE(count.contains("PrewarmFailed"));
}

TEST(TidalStep, StepsCheckTimeAndObservations) {
  auto c = example_controller();
  EXPECT_EQ(c.step(at("2026-12-01T06:00:00+08:00"), {}).error(),
            "TidalPolicy/weekday-serving-training: no observation of InferenceScalingPolicy/customer-service-llm");
  ASSERT_TRUE(c.step(at("2026-12-01T06:00:00+08:00"), obs(1, 1)));
  EXPECT_EQ(c.step(at("2026-12-01T05:00:00+08:00"), obs(1, 1)).error(),
            "TidalPolicy/weekday-serving-training: step at 2026-11-30T21:00:00Z is before the last step at "
            "2026-11-30T22:00:00Z");
}

TEST(TidalController, RejectsAPolicyTargetingAnUnknownService) {
  policy::TidalPolicySpec spec;
  spec.timezone = {"UTC", *find_time_zone("UTC")};
  spec.targets.inference_policies = {"ghost"};
  auto c = TidalController::create("t", spec, {});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error(), "TidalPolicy/t: targets InferenceScalingPolicy/ghost, which was not given");
}

}  // namespace
}  // namespace gpubank::tidal
