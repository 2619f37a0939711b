// The platform emits nothing of an instant before its ledger and audit entries were
// persisted (RunOptions::on_instant returned): when persisting fails, the run stops and the
// views (events, ledger, audit), the metrics and the events the services follow end at the
// last instant that was persisted.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "policy/policy_set.hpp"
#include "support/paths.hpp"
#include "twin/cluster/inventory.hpp"
#include "twin/live/platform.hpp"

namespace gpubank::twin::live {
namespace {

// An hour of the example day, light serving load: a second or two under the sanitizers.
DayOptions short_day() {
  DayOptions o;
  o.seed = 1;
  o.hours = 1;
  o.serving_load = 0.05;
  o.start = *parse_rfc3339("2026-11-30T16:00:00Z");
  return o;
}

run::RunOptions with_cluster() {
  Diagnostics d;
  auto inventory = cluster::load_inventory(testing::source_dir() + "/examples/inventory/example.yaml", d);
  EXPECT_TRUE(inventory.has_value());
  run::RunOptions run;
  run.inventory = std::make_shared<const cluster::Inventory>(std::move(*inventory));
  return run;
}

policy::PolicySet policies() { return policy::load_policy_set({testing::source_dir() + "/examples/policies"}); }

void run_day(Platform& p) {
  while (p.now() < p.end()) {
    if (!p.advance_to(std::min(p.end(), p.now() + 60'000))) return;
  }
}

// Every item of a paged view, from the start.
std::vector<Json> all_items(const std::function<Json(const Page&)>& view) {
  std::vector<Json> out;
  Page page;
  page.limit = 1000;
  while (true) {
    const Json j = view(page);
    for (const auto& item : j["items"]) out.push_back(item);
    if (!j["more"].get<bool>()) return out;
    page.after = j["next"].get<std::int64_t>();
  }
}

struct Persisted {
  int calls = 0;
  std::vector<std::int64_t> ledger_per_call, audit_per_call;
  std::vector<std::int64_t> time_of_call;  // of the call's first entry
};

// The persisting callback: records what it is handed; fails from call `fail_at` on (0: never).
run::RunOptions persisting(const std::shared_ptr<Persisted>& log, int fail_at) {
  run::RunOptions run = with_cluster();
  run.on_instant = [log, fail_at](std::span<const bank::LedgerEntry> ledger,
                                  std::span<const bank::AuditEntry> audit) -> Expected<bool> {
    ++log->calls;
    if (fail_at > 0 && log->calls >= fail_at) return Unexpected{std::string("disk full")};
    log->ledger_per_call.push_back(static_cast<std::int64_t>(ledger.size()));
    log->audit_per_call.push_back(static_cast<std::int64_t>(audit.size()));
    log->time_of_call.push_back(!ledger.empty() ? ledger.front().time_ms : audit.front().time_ms);
    return true;
  };
  return run;
}

TEST(PlatformCommit, AFailedAppendShowsNothingOfItsInstant) {
  // The whole hour persisted: how many instants were handed over.
  auto full_log = std::make_shared<Persisted>();
  auto full = Platform::create(policies(), short_day(), persisting(full_log, 0));
  ASSERT_TRUE(full) << full.error();
  const int at_create = full_log->calls;  // instants of virtual time 0, persisted by create
  run_day(**full);
  ASSERT_EQ((*full)->error(), "");
  ASSERT_GT(full_log->calls - at_create, 6) << "too few instants with entries to fail one in the middle";

  // The same hour, persisting failing from the middle instant after the start on.
  const int fail_at = at_create + (full_log->calls - at_create) / 2 + 1;
  auto log = std::make_shared<Persisted>();
  auto created = Platform::create(policies(), short_day(), persisting(log, fail_at));
  ASSERT_TRUE(created) << created.error();
  Platform& p = **created;
  run_day(p);
  EXPECT_NE(p.error().find("could not be persisted"), std::string::npos) << p.error();
  EXPECT_FALSE(p.advance_to(p.end()));
  const std::int64_t failed_at = full_log->time_of_call[static_cast<std::size_t>(fail_at - 1)];

  std::int64_t persisted_ledger = 0, persisted_audit = 0;
  for (const auto n : log->ledger_per_call) persisted_ledger += n;
  for (const auto n : log->audit_per_call) persisted_audit += n;
  // The engine holds the failed instant's entries; the views stop before them.
  ASSERT_GT(p.result().ledger.size() + p.result().audit.size(),
            static_cast<std::size_t>(persisted_ledger + persisted_audit));
  const auto ledger = all_items([&](const Page& page) { return p.ledger_json(page); });
  const auto audit = all_items([&](const Page& page) { return p.audit_json(page); });
  EXPECT_EQ(static_cast<std::int64_t>(ledger.size()), persisted_ledger);
  EXPECT_EQ(static_cast<std::int64_t>(audit.size()), persisted_audit);

  // Events: all of the earlier instants, none of the failed one (the engine's last events)
  // nor later.
  const auto events = all_items([&](const Page& page) {
    EventFilter f;
    f.page = page;
    return p.events_json(f);
  });
  std::size_t before = 0;
  for (const auto& e : p.result().events) before += e.t < failed_at ? 1 : 0;
  ASSERT_LT(before, p.result().events.size()) << "the failed instant made no event: pick another";
  EXPECT_GE(events.size(), before);
  EXPECT_LT(events.size(), p.result().events.size());
  for (const auto& e : events) EXPECT_LE(e["t"].get<std::int64_t>(), failed_at) << e.dump();

  // Metrics would show the engine's state and counters past the commit.
  auto metrics = p.metrics_text();
  ASSERT_FALSE(metrics);
  EXPECT_NE(metrics.error().find("could not be persisted"), std::string::npos) << metrics.error();
}

TEST(PlatformCommit, ASuccessfulRunShowsEverything) {
  auto log = std::make_shared<Persisted>();
  auto created = Platform::create(policies(), short_day(), persisting(log, 0));
  ASSERT_TRUE(created) << created.error();
  Platform& p = **created;
  run_day(p);
  ASSERT_EQ(p.error(), "");
  const auto ledger = all_items([&](const Page& page) { return p.ledger_json(page); });
  EXPECT_EQ(ledger.size(), p.result().ledger.size());
  const auto events = all_items([&](const Page& page) {
    EventFilter f;
    f.page = page;
    return p.events_json(f);
  });
  EXPECT_EQ(events.size(), p.result().events.size());
  EXPECT_TRUE(p.metrics_text());
}

}  // namespace
}  // namespace gpubank::twin::live
