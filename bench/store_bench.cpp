// The resource bank's durable store and ledger book.
//
//   Appending ledger entries, each append one committed transaction:
//   (a) sqlite_append_unbatched      1 entry per append, SQLite (WAL, synchronous=FULL: an
//                                    fsync per commit)                      baseline of (b)
//   (b) sqlite_append_batched_100    100 entries per append, SQLite
//   (c) postgres_append_unbatched    1 entry per append, PostgreSQL 15 (a private server
//                                    on a Unix socket, fsync and synchronous_commit on)
//                                                                           baseline of (d)
//   (d) postgres_append_batched_100  100 entries per append, PostgreSQL
//
//   Queries over one year of ledger for 50 business groups in one pool (generated from a
//   fixed seed: workloads starting and ending every 144 s on average, borrowing what their
//   guarantee does not cover from groups with unused guarantee, quota changes):
//   (e) positions_replay             baseline: fold the ledger from the start up to a random
//                                    time, then positions (what a book without history
//                                    would do)
//   (f) positions_at_random_time     LedgerBook::positions(t) at a random time of the year
//   (g) positions_now                LedgerBook::positions() after the last entry
//   (h) pair_totals_30_days          LedgerBook::pair_totals over a random 30-day window
//   (i) load_year_sqlite             read the whole year from an SQLite store and fold it
//
// The SQLite files and the PostgreSQL data directory live on the disk (--work-dir, default
// ./store-bench-work; PostgreSQL under /tmp). --summary=FILE also writes the markdown summary.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bank/ledger.hpp"
#include "store/store.hpp"
#include "summary_reporter.hpp"
#include "support/postgres_server.hpp"

namespace {

using namespace gpubank;
using gpubank::bench::fixed;
using gpubank::bench::SummaryReporter;

constexpr int kGroups = 50;
constexpr std::int64_t kYearMs = 365LL * 24 * 3600 * 1000;

std::string work_dir = "store-bench-work";
std::unique_ptr<testing::PostgresServer> postgres;

// ---- one year of ledger -------------------------------------------------------------------

struct Year {
  std::vector<bank::LedgerEntry> entries;
  std::int64_t workloads = 0;
  std::int64_t records = 0;
};

Year generate_year(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  struct Borrow {
    std::string id;
    int lender;
    std::int64_t gpus;
  };
  struct Job {
    std::string workload;
    std::int64_t gpus;
    std::vector<Borrow> borrows;
  };
  struct Group {
    std::string name;
    std::int64_t guaranteed = 0, lending_limit = -1, borrowing_limit = -1;
    std::int64_t used = 0, borrowed = 0, lent = 0;
    std::vector<Job> jobs;
  };
  Year year;
  std::vector<Group> groups(kGroups);
  std::int64_t t = 0;
  const auto add = [&](bank::LedgerEntry e) {
    e.seq = static_cast<std::int64_t>(year.entries.size()) + 1;
    e.time_ms = t;
    e.pool = "h100-train";
    year.entries.push_back(std::move(e));
  };
  const auto quota = [&](int i, const char* reason) {
    bank::LedgerEntry e;
    e.kind = bank::LedgerKind::QuotaSet;
    e.business_group = groups[i].name;
    e.gpus = groups[i].guaranteed;
    e.lending_limit = groups[i].lending_limit;
    e.borrowing_limit = groups[i].borrowing_limit;
    e.reason = reason;
    add(e);
  };
  for (int i = 0; i < kGroups; ++i) {
    Group& g = groups[i];
    g.name = "group-" + std::to_string(i);
    g.guaranteed = 8 + static_cast<std::int64_t>(rng() % 57);
    if (rng() % 3 == 0) g.lending_limit = g.guaranteed * 3 / 4;
    if (rng() % 3 == 0) g.borrowing_limit = g.guaranteed;
    quota(i, "Policy");
  }
  std::int64_t n = 0;
  while (true) {
    t += static_cast<std::int64_t>(rng() % 288'001);
    if (t >= kYearMs) break;
    const int gi = static_cast<int>(rng() % kGroups);
    Group& g = groups[gi];
    const std::uint64_t roll = rng() % 1000;
    if (roll < 2) {  // a lease comes or goes
      g.guaranteed = 8 + static_cast<std::int64_t>(rng() % 57);
      if (g.lending_limit >= 0) g.lending_limit = g.guaranteed * 3 / 4;
      quota(gi, roll == 0 ? "LeaseActivated" : "LeaseExpired");
      continue;
    }
    if (!g.jobs.empty() && roll % 2 == 0) {
      const std::size_t k = rng() % g.jobs.size();
      const Job job = g.jobs[k];
      g.jobs.erase(g.jobs.begin() + static_cast<std::ptrdiff_t>(k));
      for (const Borrow& b : job.borrows) {
        bank::LedgerEntry e;
        e.kind = bank::LedgerKind::BorrowClosed;
        e.flavor = "h100-80gb";
        e.business_group = g.name;
        e.lender = groups[b.lender].name;
        e.workload = job.workload;
        e.record = b.id;
        e.gpus = b.gpus;
        e.reason = rng() % 4 == 0 ? "Reclaimed" : "Finished";
        add(e);
        groups[b.lender].lent -= b.gpus;
        g.borrowed -= b.gpus;
      }
      bank::LedgerEntry e;
      e.kind = bank::LedgerKind::UsageEnded;
      e.flavor = "h100-80gb";
      e.business_group = g.name;
      e.workload = job.workload;
      e.gpus = job.gpus;
      e.reason = "Finished";
      add(e);
      g.used -= job.gpus;
      continue;
    }
    // Start a workload; what the group's unused guarantee does not cover is borrowed.
    Job job;
    job.workload = "ns-" + std::to_string(gi) + "/job-" + std::to_string(++n);
    job.gpus = 1 + static_cast<std::int64_t>(rng() % 16);
    std::int64_t need = job.gpus - std::clamp<std::int64_t>(g.guaranteed - g.used, 0, job.gpus);
    if (g.borrowing_limit >= 0 && g.borrowed + need > g.borrowing_limit) continue;
    const int first = static_cast<int>(rng() % kGroups);
    for (int k = 0; k < kGroups && need > 0; ++k) {
      const int li = (first + k) % kGroups;
      if (li == gi) continue;
      const Group& l = groups[li];
      const std::int64_t lendable = l.lending_limit < 0 ? l.guaranteed : l.lending_limit;
      const std::int64_t spare = std::max<std::int64_t>(0, std::min(l.guaranteed - l.used, lendable) - l.lent);
      const std::int64_t take = std::min(spare, need);
      if (take == 0) continue;
      job.borrows.push_back({"rec-" + std::to_string(n) + "-" + std::to_string(li), li, take});
      need -= take;
    }
    if (need > 0) continue;  // not enough capacity: the workload waits (nothing is written)
    bank::LedgerEntry start;
    start.kind = bank::LedgerKind::UsageStarted;
    start.flavor = "h100-80gb";
    start.business_group = g.name;
    start.workload = job.workload;
    start.gpus = job.gpus;
    add(start);
    g.used += job.gpus;
    for (const Borrow& b : job.borrows) {
      bank::LedgerEntry e;
      e.kind = bank::LedgerKind::BorrowOpened;
      e.flavor = "h100-80gb";
      e.business_group = g.name;
      e.lender = groups[b.lender].name;
      e.workload = job.workload;
      e.record = b.id;
      e.gpus = b.gpus;
      add(e);
      groups[b.lender].lent += b.gpus;
      g.borrowed += b.gpus;
      ++year.records;
    }
    ++year.workloads;
    g.jobs.push_back(std::move(job));
  }
  return year;
}

struct Fixture {
  Year year;
  bank::LedgerBook book;
  std::vector<std::int64_t> times;  // random query times
  std::string year_store;           // an SQLite store holding the year
};

Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    x.year = generate_year(20260401);
    auto ok = x.book.apply_all(x.year.entries);
    if (!ok) {
      std::cerr << "store_bench: the generated year does not fold: " << ok.error() << '\n';
      std::exit(1);
    }
    std::mt19937_64 rng(7);
    for (int i = 0; i < 4096; ++i) x.times.push_back(static_cast<std::int64_t>(rng() % kYearMs));
    return x;
  }();
  return f;
}

// ---- appends ------------------------------------------------------------------------------

std::unique_ptr<store::Store> fresh_store(const std::string& backend) {
  static int counter = 0;
  std::string location;
  if (backend == "sqlite") {
    location = work_dir + "/append-" + std::to_string(++counter) + ".db";
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(location + suffix);
  } else {
    auto db = postgres->fresh_url();
    if (!db) {
      std::cerr << "store_bench: " << db.error() << '\n';
      std::exit(1);
    }
    location = *db;
  }
  auto s = store::Store::open(location);
  if (!s) {
    std::cerr << "store_bench: " << s.error() << '\n';
    std::exit(1);
  }
  return std::move(*s);
}

void append(benchmark::State& state, const std::string& backend, std::size_t batch) {
  auto store = fresh_store(backend);
  std::vector<bank::LedgerEntry> entries(batch);
  std::int64_t t = 0;
  std::int64_t appended = 0;
  for (auto _ : state) {
    for (auto& e : entries) {
      e = bank::LedgerEntry{};
      e.time_ms = ++t;
      e.kind = bank::LedgerKind::UsageStarted;
      e.pool = "h100-train";
      e.flavor = "h100-80gb";
      e.business_group = "group-" + std::to_string(t % kGroups);
      e.workload = "ns/job-" + std::to_string(t);
      e.gpus = 1 + t % 8;
    }
    auto r = store->append(entries, {});
    if (!r) {
      state.SkipWithError(r.error().c_str());
      break;
    }
    appended += static_cast<std::int64_t>(batch);
  }
  state.counters["entries/s"] = benchmark::Counter(static_cast<double>(appended), benchmark::Counter::kIsRate);
}

void sqlite_append_unbatched(benchmark::State& state) { append(state, "sqlite", 1); }
void sqlite_append_batched_100(benchmark::State& state) { append(state, "sqlite", 100); }
void postgres_append_unbatched(benchmark::State& state) { append(state, "postgresql", 1); }
void postgres_append_batched_100(benchmark::State& state) { append(state, "postgresql", 100); }

// ---- queries ------------------------------------------------------------------------------

void positions_replay(benchmark::State& state) {
  const Fixture& f = fixture();
  std::size_t i = 0;
  for (auto _ : state) {
    const std::int64_t at = f.times[i++ % f.times.size()];
    bank::LedgerBook book;
    for (const auto& e : f.year.entries) {
      if (e.time_ms > at) break;
      if (!book.apply(e)) std::abort();
    }
    benchmark::DoNotOptimize(book.positions(at));
  }
  state.counters["queries/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void positions_at_random_time(benchmark::State& state) {
  const Fixture& f = fixture();
  std::size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(f.book.positions(f.times[i++ % f.times.size()]));
  state.counters["queries/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void positions_now(benchmark::State& state) {
  const Fixture& f = fixture();
  for (auto _ : state) benchmark::DoNotOptimize(f.book.positions());
  state.counters["queries/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void pair_totals_30_days(benchmark::State& state) {
  const Fixture& f = fixture();
  constexpr std::int64_t kMonth = 30LL * 24 * 3600 * 1000;
  std::size_t i = 0;
  for (auto _ : state) {
    const std::int64_t from = f.times[i++ % f.times.size()] % (kYearMs - kMonth);
    benchmark::DoNotOptimize(f.book.pair_totals(from, from + kMonth));
  }
  state.counters["queries/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void load_year_sqlite(benchmark::State& state) {
  Fixture& f = fixture();
  if (f.year_store.empty()) {
    f.year_store = work_dir + "/year.db";
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(f.year_store + suffix);
    auto s = store::Store::open(f.year_store);
    if (!s) return state.SkipWithError(s.error().c_str());
    const std::span<const bank::LedgerEntry> all(f.year.entries);
    for (std::size_t i = 0; i < all.size(); i += 10'000) {
      auto r = (*s)->append(all.subspan(i, std::min<std::size_t>(10'000, all.size() - i)), {});
      if (!r) return state.SkipWithError(r.error().c_str());
    }
  }
  for (auto _ : state) {
    auto s = store::Store::open(f.year_store, {.create = false});
    if (!s) return state.SkipWithError(s.error().c_str());
    auto book = store::load_book(**s);
    if (!book) return state.SkipWithError(book.error().c_str());
    benchmark::DoNotOptimize(book->positions());
  }
  state.counters["entries/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(f.year.entries.size()), benchmark::Counter::kIsRate);
}

struct Case {
  const char* name;
  const char* what;
  void (*fn)(benchmark::State&);
  const char* rate;
};

const Case kCases[] = {
    {"sqlite_append_unbatched", "(a) 1 entry per commit, SQLite", sqlite_append_unbatched, "entries/s"},
    {"sqlite_append_batched_100", "(b) 100 entries per commit, SQLite", sqlite_append_batched_100, "entries/s"},
    {"postgres_append_unbatched", "(c) 1 entry per commit, PostgreSQL", postgres_append_unbatched, "entries/s"},
    {"postgres_append_batched_100", "(d) 100 entries per commit, PostgreSQL", postgres_append_batched_100, "entries/s"},
    {"positions_replay", "(e) fold up to a random time, then positions", positions_replay, "queries/s"},
    {"positions_at_random_time", "(f) positions(t), t random in the year", positions_at_random_time, "queries/s"},
    {"positions_now", "(g) positions() after the last entry", positions_now, "queries/s"},
    {"pair_totals_30_days", "(h) pair totals over a random 30 days", pair_totals_30_days, "queries/s"},
    {"load_year_sqlite", "(i) read the year from SQLite and fold it", load_year_sqlite, "entries/s"},
};

std::string summary(const SummaryReporter& reporter) {
  const Fixture& f = fixture();
  const auto& results = reporter.results();
  const auto get = [&](const char* name) -> const SummaryReporter::Result* {
    const auto it = results.find(name);
    return it == results.end() ? nullptr : &it->second;
  };
  std::ostringstream s;
  s << "Ledger of one year: " << f.year.entries.size() << " entries for " << kGroups << " groups in one pool ("
    << f.year.workloads << " workloads, " << f.year.records << " borrow records).\n\n";
  s << "| Benchmark | What is timed | Time per operation (ms) | Rate | vs baseline |\n";
  s << "|---|---|---:|---:|---:|\n";
  bool medians = true;
  for (const Case& c : kCases) {
    const auto* r = get(c.name);
    if (r == nullptr) continue;
    medians = medians && r->from_median;
    const std::string name = c.name;
    const char* base = name.starts_with("sqlite_append")     ? "sqlite_append_unbatched"
                       : name.starts_with("postgres_append") ? "postgres_append_unbatched"
                       : name == "load_year_sqlite"          ? nullptr
                                                             : "positions_replay";
    std::string ratio;
    if (base != nullptr && name != base) {
      const auto* b = get(base);
      if (b != nullptr && b->counter(c.rate) > 0) ratio = fixed(r->counter(c.rate) / b->counter(c.rate), 1) + "x " + c.rate;
    } else if (base != nullptr) {
      ratio = "baseline";
    }
    const double rate = r->counter(c.rate);
    s << "| " << c.name << " | " << c.what << " | " << fixed(r->ms_per_iteration, 3) << " | "
      << fixed(rate, rate >= 100 ? 0 : rate >= 10 ? 1 : 2) << " " << c.rate << " | " << ratio << " |\n";
  }
  s << "\nTimes are wall-clock (real) time per operation (an append of 1 or 100 entries, a query, a load)"
    << (medians ? ", medians of the repetitions" : ", one measurement each (no repetitions)")
    << "; ratios compare rates against the baseline of the same group in this run.\n";
  const auto* su = get("sqlite_append_unbatched");
  const auto* pu = get("postgres_append_unbatched");
  if (su != nullptr && pu != nullptr && su->counter("entries/s") > 0) {
    s << "PostgreSQL appends single entries at " << fixed(pu->counter("entries/s") / su->counter("entries/s"), 2)
      << "x the rate of SQLite on this machine.\n";
  }
  return s.str();
}


}  // namespace

int main(int argc, char** argv) {
  const std::string summary_path = gpubank::bench::take_summary_flag(argc, argv);
  if (auto dir = gpubank::bench::take_flag(argc, argv, "work-dir"); !dir.empty()) work_dir = dir;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  std::filesystem::create_directories(work_dir);

  auto server = testing::PostgresServer::start({.fsync = true});
  if (!server) {
    std::cerr << "store_bench: " << server.error() << '\n';
    return 1;
  }
  postgres = std::move(*server);
  (void)fixture();  // generated and folded before anything is timed

  for (const Case& c : kCases) {
    auto* b = benchmark::RegisterBenchmark(c.name, c.fn)->Unit(benchmark::kMillisecond)->UseRealTime();
    if (std::string(c.name) == "load_year_sqlite" || std::string(c.name) == "positions_replay") b->Iterations(5);
  }
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  postgres.reset();

  const std::string text = summary(reporter);
  if (!gpubank::bench::emit_summary(text, summary_path, "store_bench")) return 1;
  return 0;
}
