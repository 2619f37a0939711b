// crash_writer: a test-only program that appends a burst of bank decisions to a store from
// two threads, mixing single-entry and batched appends, and reports every acknowledged
// append on stdout as soon as append() has returned:
//
//   ack <ledger first> <ledger last> <audit first> <audit last> <sha256 of the stored entries>
//   pos <through ledger seq> <positions as compact JSON>
//
// (a range is "0 -1" when the append had no entries of that kind; "pos" follows each "ack"
// unless --no-positions, with the positions of the ledger folded up to the highest seq that
// has no gap before it). Each line is one write(2), so a SIGKILL never leaves half a line
// that could be mistaken for a whole one. The store tests kill it at random points and
// check the store against these lines.
//
//   crash_writer --store LOCATION --id NAME --seed N --time MS --commits N
//                [--no-recover] [--no-positions]
//
// At start it folds the stored ledger and (unless --no-recover) closes every usage and
// borrow record left open by a previous, killed run, in one batched append. Every entry it
// writes carries timeMs = --time, so the two threads' entries are in time order however
// they interleave. Names (workloads, records, audit objects) contain --id, which must be
// unique per run.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bank/ledger.hpp"
#include "core/sha256.hpp"
#include "store/store.hpp"

namespace {

using namespace gpubank;

struct Options {
  std::string store;
  std::string id;
  std::uint64_t seed = 1;
  std::int64_t time_ms = 0;
  int commits = 50;
  bool recover = true;
  bool positions = true;
};

constexpr const char* kGroups[] = {"g0", "g1", "g2", "g3", "g4"};
constexpr const char* kPool = "h100";
constexpr const char* kFlavor = "h100-80gb";

void write_line(const std::string& line) {
  const std::string text = line + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) std::_Exit(3);
    done += static_cast<std::size_t>(n);
  }
}

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "crash_writer: %s\n", message.c_str());
  std::_Exit(2);
}

std::string digest(const store::AppendResult& r) {
  std::string text;
  for (const auto& e : r.ledger) text += bank::to_json(e).dump() + "\n";
  for (const auto& e : r.audit) text += bank::to_json(e).dump() + "\n";
  return sha256_hex(text);
}

// Reports appends in the order they return; folds them in seq order.
class Reporter {
 public:
  Reporter(bank::LedgerBook book, bool positions) : book_(std::move(book)), positions_(positions) {}

  void acknowledged(const store::AppendResult& r) {
    std::lock_guard lock(mu_);
    const auto range = [](std::int64_t first, std::int64_t last) {
      return std::to_string(first) + " " + std::to_string(last);
    };
    write_line("ack " + (r.ledger.empty() ? range(0, -1) : range(r.ledger.front().seq, r.ledger.back().seq)) + " " +
               (r.audit.empty() ? range(0, -1) : range(r.audit.front().seq, r.audit.back().seq)) + " " + digest(r));
    if (!positions_) return;
    for (const auto& e : r.ledger) pending_.emplace(e.seq, e);
    while (!pending_.empty() && pending_.begin()->first == book_.last_seq() + 1) {
      auto applied = book_.apply(pending_.begin()->second);
      if (!applied) die("fold: " + applied.error());
      pending_.erase(pending_.begin());
    }
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& p : book_.positions()) out.push_back(bank::to_json(p));
    write_line("pos " + std::to_string(book_.last_seq()) + " " + out.dump());
  }

 private:
  std::mutex mu_;
  bank::LedgerBook book_;
  bool positions_;
  std::map<std::int64_t, bank::LedgerEntry> pending_;
};

bank::AuditEntry decision(const Options& opt, const std::string& object, const std::string& action,
                          const std::string& decision_text, std::int64_t gpus) {
  bank::AuditEntry a;
  a.time_ms = opt.time_ms;
  a.actor = "gpubank-bank";
  a.action = action;
  a.object = object;
  a.policy_version = "sha256:crash-writer";
  a.decision = decision_text;
  a.reason = action + " " + object + " with " + std::to_string(gpus) + " GPUs";
  a.numbers = "{\"gpus\":" + std::to_string(gpus) + "}";
  return a;
}

struct OpenUsage {
  std::string workload;
  std::string group;
  std::int64_t gpus = 0;
  std::optional<bank::LedgerEntry> record;  // the BorrowOpened, when part of it is borrowed
};

bank::LedgerEntry entry(const Options& opt, bank::LedgerKind kind, const std::string& group) {
  bank::LedgerEntry e;
  e.time_ms = opt.time_ms;
  e.kind = kind;
  e.pool = kPool;
  e.flavor = kFlavor;
  e.business_group = group;
  return e;
}

void writer_thread(const Options& opt, int thread, store::Store& store, Reporter& reporter, std::atomic<int>& budget) {
  std::mt19937_64 rng(opt.seed * 1000003 + static_cast<std::uint64_t>(thread));
  std::vector<OpenUsage> open;
  int n = 0;
  while (budget.fetch_sub(1) > 0) {
    std::vector<bank::LedgerEntry> ledger;
    std::vector<bank::AuditEntry> audit;
    const std::string tag = opt.id + "-t" + std::to_string(thread) + "-" + std::to_string(n++);
    const int choice = static_cast<int>(rng() % 10);
    if (choice < 4 || open.empty()) {
      // Start a workload; sometimes part of it is borrowed (a batch), sometimes it is a
      // single entry.
      OpenUsage u;
      u.workload = "ns-" + opt.id + "/w-" + tag;
      u.group = kGroups[rng() % std::size(kGroups)];
      u.gpus = 1 + static_cast<std::int64_t>(rng() % 8);
      auto start = entry(opt, bank::LedgerKind::UsageStarted, u.group);
      start.workload = u.workload;
      start.gpus = u.gpus;
      ledger.push_back(start);
      if (rng() % 2 == 0) {
        auto borrow = entry(opt, bank::LedgerKind::BorrowOpened, u.group);
        // From what no group guarantees: the writers run concurrently, so none can tell
        // whether a group's unused guarantee covers it (ledger.over-lent).
        borrow.lender = std::string("cohort:") + kPool;
        borrow.workload = u.workload;
        borrow.record = "rec-" + tag;
        borrow.gpus = 1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(u.gpus));
        ledger.push_back(borrow);
        u.record = borrow;
        audit.push_back(decision(opt, "Workload/" + u.workload, "BorrowStarted", "Admitted", borrow.gpus));
      }
      open.push_back(u);
    } else if (choice < 8) {
      // End a workload: its usage and its record, with the decision.
      const std::size_t i = rng() % open.size();
      const OpenUsage u = open[i];
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
      if (u.record) {
        auto close = *u.record;
        close.kind = bank::LedgerKind::BorrowClosed;
        close.reason = rng() % 2 == 0 ? "Finished" : "Reclaimed";
        ledger.push_back(close);
      }
      auto end = entry(opt, bank::LedgerKind::UsageEnded, u.group);
      end.workload = u.workload;
      end.gpus = u.gpus;
      end.reason = "Finished";
      ledger.push_back(end);
      audit.push_back(decision(opt, "Workload/" + u.workload, "Finished", "Released", u.gpus));
    } else if (choice < 9) {
      // A quota change, alone.
      auto quota = entry(opt, bank::LedgerKind::QuotaSet, kGroups[rng() % std::size(kGroups)]);
      quota.flavor.clear();
      quota.gpus = 8 + static_cast<std::int64_t>(rng() % 24);
      quota.reason = "Policy";
      ledger.push_back(quota);
    } else {
      // An audit entry alone (a decision that changed no position).
      audit.push_back(decision(opt, "Decision/" + tag, "Pending", "Queued", 0));
    }
    auto r = store.append(ledger, audit);
    if (!r) die("append: " + r.error());
    reporter.acknowledged(*r);
  }
}

Options parse(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) die("missing value for " + arg);
      return argv[++i];
    };
    if (arg == "--store") opt.store = value();
    else if (arg == "--id") opt.id = value();
    else if (arg == "--seed") opt.seed = std::stoull(value());
    else if (arg == "--time") opt.time_ms = std::stoll(value());
    else if (arg == "--commits") opt.commits = std::stoi(value());
    else if (arg == "--no-recover") opt.recover = false;
    else if (arg == "--no-positions") opt.positions = false;
    else die("unknown argument " + arg);
  }
  if (opt.store.empty() || opt.id.empty()) die("--store and --id are required");
  return opt;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  auto opened = store::Store::open(opt.store);
  if (!opened) die(opened.error());
  store::Store& store = **opened;
  auto book = store::load_book(store);
  if (!book) die(book.error());

  // What a killed run left open.
  std::vector<bank::LedgerEntry> recovery;
  if (opt.recover) {
    std::map<std::tuple<std::string, std::string, std::string>, bank::LedgerEntry> usages;
    for (const auto& e : book->entries()) {
      const auto key = std::make_tuple(e.pool, e.flavor, e.workload);
      if (e.kind == bank::LedgerKind::UsageStarted) usages.emplace(key, e);
      if (e.kind == bank::LedgerKind::UsageEnded) usages.erase(key);
    }
    for (const auto& r : book->records(0, bank::kMaxTimeMs)) {
      if (r.end_ms) continue;
      bank::LedgerEntry close = entry(opt, bank::LedgerKind::BorrowClosed, r.borrower);
      close.pool = r.pool;
      close.flavor = r.flavor;
      close.lender = r.lender;
      close.workload = r.workload;
      close.record = r.id;
      close.gpus = r.gpus;
      close.reason = "Recovered";
      recovery.push_back(close);
    }
    for (const auto& [key, start] : usages) {
      bank::LedgerEntry end = start;
      end.seq = 0;
      end.time_ms = opt.time_ms;
      end.kind = bank::LedgerKind::UsageEnded;
      end.reason = "Recovered";
      recovery.push_back(end);
    }
  }
  Reporter reporter(std::move(*book), opt.positions);
  if (!recovery.empty()) {
    std::vector<bank::AuditEntry> audit{decision(opt, "Recovery/" + opt.id, "Recovered", "Released",
                                                 static_cast<std::int64_t>(recovery.size()))};
    auto r = store.append(recovery, audit);
    if (!r) die("recovery append: " + r.error());
    reporter.acknowledged(*r);
  }

  std::atomic<int> budget{opt.commits};
  std::thread a([&] { writer_thread(opt, 0, store, reporter, budget); });
  std::thread b([&] { writer_thread(opt, 1, store, reporter, budget); });
  a.join();
  b.join();
  return 0;
}
