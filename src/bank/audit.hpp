// Audit entries and their hash chain. Every entry stores the hash of the previous one, so
// changing, removing, inserting or reordering an entry breaks the chain from there on and
// verify_chain() names where.
//
// The hash (hex sha256) is taken over this text, one line per field in this order, each
// line "<name>:<byte length>:<bytes>\n" (the length makes the text unambiguous whatever the
// bytes are):
//
//   gpubank-audit-v1\n
//   seq:<n>:<decimal seq>\n
//   timeMs:<n>:<decimal timeMs>\n
//   actor:<n>:<actor>\n
//   action:<n>:<action>\n
//   object:<n>:<object>\n
//   policyVersion:<n>:<policyVersion>\n
//   decision:<n>:<decision>\n
//   reason:<n>:<reason>\n
//   numbers:<n>:<numbers, exactly as stored>\n
//   prevHash:<n>:<prevHash>\n
//
// A chain proves that nothing changed after an entry was hashed, relative to its head: an
// attacker who rewrites the database can recompute every hash after the entry changed.
// Keep the head hash (gpubank audit verify prints it) somewhere else to catch that too.
//
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "bank/ledger.hpp"
#include "core/expected.hpp"

namespace gpubank::bank {

struct AuditEntry {
  std::int64_t seq = 0;        // assigned by the store
  std::int64_t time_ms = 0;
  std::string actor;           // who: "gpubank-bank", "user:alice", "group:platform-admins"
  std::string action;          // what: event kind, e.g. "ReclaimStarted", "LeaseApproved"
  std::string object;          // "<Kind>/<namespace>/<name>"
  std::string policy_version;  // sha256 or resourceVersion of the policy that decided
  std::string decision;        // e.g. "Admitted", "Rejected", "Stopped"
  std::string reason;          // the reason in words
  std::string numbers;         // JSON object text with the figures behind it ("{}" if none)
  std::string prev_hash;       // hex sha256 of the previous entry ("" before the first)
  std::string hash;            // hex sha256 of canonical_audit_text(entry)

  friend bool operator==(const AuditEntry&, const AuditEntry&) = default;
};

inline constexpr std::size_t kMaxAuditFieldLength = 512;     // actor, action, object, decision, policy version
inline constexpr std::size_t kMaxAuditReasonLength = 8192;
inline constexpr std::size_t kMaxAuditNumbersLength = 65536;

// Checks what the producer fills in (seq, prevHash and hash are the store's): actor,
// action, object, decision and reason required; policyVersion optional; numbers a JSON
// object (text); 0 <= timeMs <= kMaxTimeMs; every text valid UTF-8 without control
// characters (reason and numbers may hold line breaks) within its length limit. Returns the
// first problem as "<field>: <rule>", or nullopt.
[[nodiscard]] std::optional<std::string> validate_audit_entry(const AuditEntry& entry);

// The text the hash is taken over (see the top of this file).
[[nodiscard]] std::string canonical_audit_text(const AuditEntry& entry);
// sha256 hex of canonical_audit_text(entry): what entry.hash must be.
[[nodiscard]] std::string audit_hash(const AuditEntry& entry);

// Sets seq, prev_hash and hash so the entry follows (prev_seq, prev_hash): what the store
// does on append.
void chain_audit_entry(AuditEntry& entry, std::int64_t prev_seq, const std::string& prev_hash);

// Where a chain breaks, if it does.
struct ChainReport {
  bool ok = true;
  std::int64_t entries = 0;      // entries checked
  std::int64_t last_seq = 0;     // of the last intact entry
  std::string head;              // hash of the last intact entry
  std::int64_t broken_seq = 0;   // the first seq that is not intact (when !ok)
  std::string problem;           // why, in words
};

// Checks entries one at a time, so a long chain can be verified page by page: seqs must run
// 1, 2, 3, ... without gaps (a missing entry or a reordered pair breaks at the seq that
// should have come), each prev_hash must equal the previous entry's hash ("" for seq 1),
// and each hash must equal audit_hash(entry). After the first break, feed() changes
// nothing.
class ChainVerifier {
 public:
  ChainVerifier() = default;
  // Continues a chain whose entries up to prev_seq were verified before.
  ChainVerifier(std::int64_t prev_seq, std::string prev_hash);
  // False once the chain is broken.
  bool feed(const AuditEntry& entry);
  [[nodiscard]] const ChainReport& report() const { return report_; }

 private:
  ChainReport report_;
};

[[nodiscard]] ChainReport verify_chain(std::span<const AuditEntry> entries);

// ---- the ledger's hash chain ------------------------------------------------------------
//
// Every stored ledger entry carries prevHash, auditSeq/auditHash (the audit head at the end
// of the append that stored it: the two chains name each other, so cutting one tail
// without the other shows) and hash, the hex sha256 of:
//
//   gpubank-ledger-v1\n
//   seq:<n>:<seq>\n  timeMs:<n>:<timeMs>\n  kind:<n>:<kind>\n  pool:<n>:...\n  flavor:<n>:...\n
//   businessGroup:<n>:...\n  lender:<n>:...\n  workload:<n>:...\n  record:<n>:...\n
//   gpus:<n>:<gpus>\n  lendingLimit:<n>:...\n  borrowingLimit:<n>:...\n  reason:<n>:...\n
//   auditSeq:<n>:...\n  auditHash:<n>:...\n  prevHash:<n>:...\n
//
// one line per field in that order, as for the audit chain.
[[nodiscard]] std::string canonical_ledger_text(const LedgerEntry& entry);
[[nodiscard]] std::string ledger_hash(const LedgerEntry& entry);
// Sets seq, prev_hash, audit_seq, audit_hash and hash: what the store does on append.
void chain_ledger_entry(LedgerEntry& entry, std::int64_t prev_seq, const std::string& prev_hash,
                        std::int64_t audit_seq, const std::string& audit_hash);

// The ledger's counterpart of ChainVerifier: gapless seqs, prevHash the previous hash, hash
// recomputed, and auditSeq never going back (it is the audit head when the entry was
// stored). Whether auditSeq/auditHash name a real audit entry needs the audit log: see
// store::verify_store.
class LedgerChainVerifier {
 public:
  bool feed(const LedgerEntry& entry);
  [[nodiscard]] const ChainReport& report() const { return report_; }
  [[nodiscard]] std::int64_t last_audit_seq() const { return last_audit_seq_; }

 private:
  ChainReport report_;
  std::int64_t last_audit_seq_ = 0;
};

// An anchor: a chain entry and its hash, kept outside the store ("SEQ:HASH").
struct Anchor {
  std::int64_t seq = 0;
  std::string hash;
};
// Parses "SEQ:HASH" (seq >= 1, hash 64 lowercase hex digits); the error names the rule.
[[nodiscard]] Expected<Anchor> parse_anchor(std::string_view text);

// JSON with camelCase fields: seq, timeMs, actor, action, object, policyVersion, decision,
// reason, numbers (the text, as a string: the hash covers its exact bytes), prevHash, hash.
// Decoding refuses unknown fields and wrong types; missing fields keep their defaults.
[[nodiscard]] nlohmann::ordered_json to_json(const AuditEntry& entry);
[[nodiscard]] Expected<AuditEntry> audit_entry_from_json(const nlohmann::json& json);
[[nodiscard]] nlohmann::ordered_json to_json(const ChainReport& report);

}  // namespace gpubank::bank
