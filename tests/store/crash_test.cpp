// Crash safety: tests/store/crash_writer appends bursts of decisions (two threads, single and
// batched appends) and reports each acknowledged append; it is SIGKILLed at seeded random
// points, restarted (it then closes what the killed run left open and continues), and at the
// end the store must hold every acknowledged entry exactly as acknowledged, with gapless
// seqs, an unbroken audit chain and a ledger whose positions equal the last ones reported.
//
// When to kill is decided by counting acknowledged lines, never by time. The writer is given
// far more commits than it can make before its stdout pipe fills up, so it is always still
// running (blocked or appending) when the kill comes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <sstream>

#include "core/sha256.hpp"
#include "store/backends.hpp"
#include "store/store.hpp"
#include "support/paths.hpp"

namespace gpubank::store {
namespace {

struct Ack {
  std::int64_t ledger_first = 0, ledger_last = -1, audit_first = 0, audit_last = -1;
  std::string digest;
};

struct Reported {
  std::int64_t through_seq = 0;
  std::string positions;  // compact JSON
};

struct Run {
  std::vector<Ack> acks;
  std::optional<Reported> last_positions;
  int status = 0;
};

std::string writer_path() { return testing::binary_dir() + "/tests/store/crash_writer"; }

struct Child {
  pid_t pid = -1;
  int out = -1;
};

Child spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  const std::string path = writer_path();
  argv.push_back(const_cast<char*>(path.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

// Reads the child's report to the end, SIGKILLing it once `kill_after` acks were read (0:
// never). Lines are whole or absent: the writer writes each with one write(2).
Run collect(Child child, std::size_t kill_after) {
  Run run;
  std::string buffer;
  char chunk[65536];
  bool killed = false;
  while (true) {
    const ssize_t n = ::read(child.out, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::istringstream line(buffer.substr(start, nl - start));
      std::string tag;
      line >> tag;
      if (tag == "ack") {
        Ack a;
        line >> a.ledger_first >> a.ledger_last >> a.audit_first >> a.audit_last >> a.digest;
        run.acks.push_back(a);
        if (kill_after > 0 && run.acks.size() == kill_after && !killed) {
          ::kill(child.pid, SIGKILL);
          killed = true;
        }
      } else if (tag == "pos") {
        Reported r;
        line >> r.through_seq;
        line.get();  // the space
        std::getline(line, r.positions);
        run.last_positions = r;
      }
    }
    buffer.erase(0, start);
  }
  ::close(child.out);
  ::waitpid(child.pid, &run.status, 0);
  return run;
}

std::string digest(const std::vector<bank::LedgerEntry>& ledger, const std::vector<bank::AuditEntry>& audit) {
  std::string text;
  for (const auto& e : ledger) text += bank::to_json(e).dump() + "\n";
  for (const auto& e : audit) text += bank::to_json(e).dump() + "\n";
  return sha256_hex(text);
}

std::string positions_json(const bank::LedgerBook& book) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& p : book.positions()) out.push_back(bank::to_json(p));
  return out.dump();
}

template <class Backend>
class CrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto location = Backend::fresh_location();
    ASSERT_TRUE(location) << location.error();
    location_ = *location;
    ASSERT_EQ(::access(writer_path().c_str(), X_OK), 0) << writer_path() << " is missing (build crash_writer)";
  }
  void TearDown() override { Backend::remove(location_); }

  // Checks the store against every acknowledgement; returns the stored ledger in `stored`.
  void check_store(const std::vector<Ack>& acks, std::vector<bank::LedgerEntry>& stored) {
    auto store = Store::open(location_);
    ASSERT_TRUE(store) << store.error();
    auto ledger = (*store)->ledger(0, 1'000'000);
    auto audit = (*store)->audit(0, 1'000'000);
    ASSERT_TRUE(ledger && audit);
    // Gapless.
    for (std::size_t i = 0; i < ledger->size(); ++i) EXPECT_EQ((*ledger)[i].seq, static_cast<std::int64_t>(i) + 1);
    for (std::size_t i = 0; i < audit->size(); ++i) EXPECT_EQ((*audit)[i].seq, static_cast<std::int64_t>(i) + 1);
    // Every acknowledged entry is there, exactly as acknowledged, and acknowledged once.
    std::set<std::int64_t> acked_ledger, acked_audit;
    for (const Ack& a : acks) {
      ASSERT_LE(a.ledger_last, static_cast<std::int64_t>(ledger->size()));
      ASSERT_LE(a.audit_last, static_cast<std::int64_t>(audit->size()));
      std::vector<bank::LedgerEntry> l;
      for (auto s = a.ledger_first; s <= a.ledger_last; ++s) {
        EXPECT_TRUE(acked_ledger.insert(s).second) << "ledger seq " << s << " acknowledged twice";
        l.push_back((*ledger)[static_cast<std::size_t>(s - 1)]);
      }
      std::vector<bank::AuditEntry> au;
      for (auto s = a.audit_first; s <= a.audit_last; ++s) {
        EXPECT_TRUE(acked_audit.insert(s).second) << "audit seq " << s << " acknowledged twice";
        au.push_back((*audit)[static_cast<std::size_t>(s - 1)]);
      }
      EXPECT_EQ(digest(l, au), a.digest) << "ledger " << a.ledger_first << ".." << a.ledger_last << ", audit "
                                         << a.audit_first << ".." << a.audit_last;
    }
    // No decision stored twice (a writer makes each (object, action) once).
    std::set<std::string> decisions;
    for (const auto& e : *audit) {
      EXPECT_TRUE(decisions.insert(e.object + " " + e.action).second) << "duplicate " << e.action << " " << e.object;
    }
    // Both hash chains intact, each ledger entry linked to an audit entry that is there.
    auto chains = verify_store(**store);
    EXPECT_TRUE(chains && chains->ok()) << (chains ? chains->audit.problem + chains->ledger.problem : chains.error());
    if (chains) {
      EXPECT_EQ(chains->audit.entries, static_cast<std::int64_t>(audit->size()));
      EXPECT_EQ(chains->ledger.entries, static_cast<std::int64_t>(ledger->size()));
    }
    // The ledger folds (no usage or record opened twice, none closed without opening).
    auto book = load_book(**store);
    EXPECT_TRUE(book) << book.error();
    stored = *ledger;
  }

  std::string location_;
};

using Backends = ::testing::Types<testing::SqliteBackend, testing::PostgresBackend>;
TYPED_TEST_SUITE(CrashTest, Backends, testing::BackendNames);

TYPED_TEST(CrashTest, EveryAcknowledgedEntrySurvivesSigkill) {
  std::mt19937 rng(20260401);
  constexpr int kKilledRounds = 5;
  std::vector<Ack> acks;
  std::vector<Reported> reported;  // the last positions of each run
  for (int round = 0; round <= kKilledRounds; ++round) {
    const bool last = round == kKilledRounds;
    const std::size_t kill_after = last ? 0 : 1 + rng() % 30;
    const Run run = collect(spawn({"--store", this->location_, "--id", "r" + std::to_string(round), "--seed",
                                   std::to_string(rng()), "--time", std::to_string(1000 * (round + 1)), "--commits",
                                   last ? "20" : "2000"}),
                            kill_after);
    if (last) {
      ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << "status " << run.status;
    } else {
      ASSERT_TRUE(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL)
          << "round " << round << ": the writer ended before the kill, status " << run.status;
      ASSERT_GE(run.acks.size(), kill_after);
    }
    acks.insert(acks.end(), run.acks.begin(), run.acks.end());
    // (A run killed right after its first acknowledgement may not have reported positions.)
    if (run.last_positions) reported.push_back(*run.last_positions);
    if (last) {
      ASSERT_TRUE(run.last_positions.has_value());
    }
  }
  std::vector<bank::LedgerEntry> ledger;
  this->check_store(acks, ledger);
  ASSERT_FALSE(ledger.empty());
  // Positions recomputed from the stored ledger equal the last ones each run reported
  // (a run may have committed more after its last report; those come after through_seq).
  for (const Reported& r : reported) {
    ASSERT_LE(r.through_seq, static_cast<std::int64_t>(ledger.size()));
    bank::LedgerBook book;
    auto ok = book.apply_all({ledger.data(), static_cast<std::size_t>(r.through_seq)});
    ASSERT_TRUE(ok) << ok.error();
    EXPECT_EQ(positions_json(book), r.positions) << "through seq " << r.through_seq;
  }
  bank::LedgerBook full;
  ASSERT_TRUE(full.apply_all(ledger));
  EXPECT_EQ(positions_json(full), reported.back().positions);  // the last run ended cleanly
}

TYPED_TEST(CrashTest, ConcurrentProcessesAppendOneAfterAnother) {
  // Three writer processes at once (for PostgreSQL: three replicas), two threads each.
  std::vector<Child> children;
  for (int p = 0; p < 3; ++p) {
    children.push_back(spawn({"--store", this->location_, "--id", "p" + std::to_string(p), "--seed", std::to_string(p),
                              "--time", "0", "--commits", "25", "--no-recover", "--no-positions"}));
  }
  std::vector<Ack> acks;
  for (const Child& c : children) {
    const Run run = collect(c, 0);
    ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << "status " << run.status;
    EXPECT_EQ(run.acks.size(), 25u);
    acks.insert(acks.end(), run.acks.begin(), run.acks.end());
  }
  std::vector<bank::LedgerEntry> ledger;
  this->check_store(acks, ledger);
  EXPECT_FALSE(ledger.empty());
}

}  // namespace
}  // namespace gpubank::store
