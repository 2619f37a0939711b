// An append-only JSON-lines audit log that loses nothing it acknowledged. append()
// returns only after the line is on disk (fdatasync); concurrent appends share one sync
// (group commit), so durability costs one disk flush per batch, not per decision: the
// batch goes out with one write(2) on an O_APPEND descriptor, so a crash leaves at most
// one torn last line.
//
// Hash-chained like the store's audit log: every line is the entry's JSON object with the
// chain around it,
//
//   {"seq":<n>,"prevHash":"<hex or empty>",<the entry's fields>,"hash":"<hex>"}
//
// seq 1, 2, 3, ...; prevHash the previous line's hash ("" on the first); hash the hex
// sha256 of
//
//   gpubank-audit-jsonl-v1\n  seq:<n>:<seq>\n  prevHash:<n>:<prevHash>\n  entry:<n>:<the entry's JSON text>\n
//
// where the entry's text is the line's bytes between the prevHash and the hash fields, in
// braces ({} for an entry without fields): the exact bytes written, never re-serialised.
//
// open() continues the chain after the file's last line. A torn last line (no newline: a
// crash during a write, never acknowledged) is cut off, and torn_bytes_cut() says how much
// so the caller can log it. A last line that is not a chained line whose hash recomputes
// (tampered, corrupted, or written by a gpubank before the chain) makes open() fail: the
// log is never continued from a head it cannot trust. Move such a file aside and start a
// new one.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <string>

#include <nlohmann/json.hpp>

#include "bank/audit.hpp"
#include "core/expected.hpp"

namespace gpubank::api {

// The hash of one line (see the top of this file).
[[nodiscard]] std::string audit_line_hash(std::int64_t seq, const std::string& prev_hash, std::string_view entry);

// What verify_audit_log found.
struct AuditLogReport {
  bank::ChainReport chain;     // lines checked like store audit entries (seq order, prevHash, hash)
  std::string torn_tail;       // a last line without a newline (a crash mid-write), in words; not a break
  std::string anchor_problem;  // the anchor missing (truncated) or with another hash (rewritten)
  [[nodiscard]] bool ok() const { return chain.ok && anchor_problem.empty(); }
};

// Reads the file (never writes it) and checks every line: JSON of the layout above, seqs
// 1, 2, 3, ..., each prevHash the previous hash, each hash recomputed; and the anchor when
// given. An error only when the file cannot be read.
[[nodiscard]] Expected<AuditLogReport> verify_audit_log(const std::string& path,
                                                        const std::optional<bank::Anchor>& anchor = std::nullopt);

// The last complete line's seq and hash (0 and "" for an empty file), after checking that
// line's own hash. Reads only the tail of the file.
[[nodiscard]] Expected<bank::Anchor> audit_log_head(const std::string& path);

class AuditLog {
 public:
  static Expected<std::unique_ptr<AuditLog>> open(const std::string& path);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Appends one entry (a JSON object without the fields seq, prevHash and hash: they are the
  // log's) as a single chained line. An error means the entry may not be durable; after a
  // write error the log refuses further appends (fail closed).
  Expected<bool> append(const nlohmann::ordered_json& entry);

  [[nodiscard]] const std::string& path() const { return path_; }
  // Bytes of a torn last line open() cut off (0 when the file ended with a newline).
  [[nodiscard]] std::uint64_t torn_bytes_cut() const { return torn_bytes_cut_; }

 private:
  AuditLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_;
  std::mutex mu_;
  std::condition_variable flushed_;
  std::string pending_;
  std::uint64_t appended_ = 0;  // sequence of the last appended entry
  std::uint64_t durable_ = 0;   // sequence of the last entry on disk
  bool flushing_ = false;
  std::string broken_;          // the write error that closed the log, if any
  std::string last_hash_;       // the chain's head: hash of the line with seq appended_
  std::uint64_t torn_bytes_cut_ = 0;
};

}  // namespace gpubank::api
