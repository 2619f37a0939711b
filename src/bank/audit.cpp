#include "bank/audit.hpp"

#include <limits>

#include "bank/ledger.hpp"
#include "bank/text_check.hpp"
#include "core/quote.hpp"
#include "core/sha256.hpp"

namespace gpubank::bank {
namespace {

using Json = nlohmann::ordered_json;

void add_line(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += ':';
  out += std::to_string(value.size());
  out += ':';
  out += value;
  out += '\n';
}

bool is_json_object(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{') return false;
  return nlohmann::json::accept(text);
}

// What breaks the link of the entry with `seq`, `prev_hash` and `hash` to the chain so far
// (`report`): a seq that is not the next one, a prevHash that is not the head, or a hash
// that is not `computed_hash()` (called only when the rest holds). Empty: it links.
template <class ComputeHash>
std::string link_problem(const ChainReport& report, std::int64_t seq, const std::string& prev_hash,
                         const std::string& hash, ComputeHash computed_hash) {
  const std::int64_t expected = report.last_seq + 1;
  if (seq > expected) {
    return "gap in seq: expected " + std::to_string(expected) + ", found " + std::to_string(seq) +
           " (an entry was removed or moved)";
  }
  if (seq < expected) return "seq out of order: expected " + std::to_string(expected) + ", found " + std::to_string(seq);
  if (prev_hash != report.head) {
    return "prevHash " + quote(prev_hash) + " does not match the hash of " +
           (expected == 1 ? std::string("nothing (the first entry's prevHash is empty)")
                          : "seq " + std::to_string(report.last_seq) + " (" + quote(report.head) + ")");
  }
  if (const std::string actual = computed_hash(); actual != hash) {
    return "hash mismatch: stored " + quote(hash) + ", computed " + quote(actual) + " (a field of this entry was changed)";
  }
  return {};
}

// Records the entry in the report: broken at the next seq with `problem`, or its new head.
bool settle(ChainReport& report, std::string problem, std::int64_t seq, const std::string& hash) {
  if (!problem.empty()) {
    report.ok = false;
    report.broken_seq = report.last_seq + 1;
    report.problem = std::move(problem);
    return false;
  }
  ++report.entries;
  report.last_seq = seq;
  report.head = hash;
  return true;
}

}  // namespace

std::optional<std::string> validate_audit_entry(const AuditEntry& e) {
  using detail::check_field;
  if (e.time_ms < 0 || e.time_ms > kMaxTimeMs) {
    return "timeMs: must be between 0 and " + std::to_string(kMaxTimeMs) + " (is " + std::to_string(e.time_ms) + ")";
  }
  if (auto p = check_field("actor", e.actor, true, kMaxAuditFieldLength)) return p;
  if (auto p = check_field("action", e.action, true, kMaxAuditFieldLength)) return p;
  if (auto p = check_field("object", e.object, true, kMaxAuditFieldLength)) return p;
  if (auto p = check_field("policyVersion", e.policy_version, false, kMaxAuditFieldLength)) return p;
  if (auto p = check_field("decision", e.decision, true, kMaxAuditFieldLength)) return p;
  if (auto p = check_field("reason", e.reason, true, kMaxAuditReasonLength, true)) return p;
  if (auto p = check_field("numbers", e.numbers, true, kMaxAuditNumbersLength, true)) return p;
  if (!is_json_object(e.numbers)) return "numbers: must be the text of a JSON object (\"{}\" when there are none)";
  return std::nullopt;
}

std::string canonical_audit_text(const AuditEntry& e) {
  std::string out;
  out.reserve(256 + e.actor.size() + e.action.size() + e.object.size() + e.policy_version.size() + e.decision.size() +
              e.reason.size() + e.numbers.size() + e.prev_hash.size());
  out += "gpubank-audit-v1\n";
  add_line(out, "seq", std::to_string(e.seq));
  add_line(out, "timeMs", std::to_string(e.time_ms));
  add_line(out, "actor", e.actor);
  add_line(out, "action", e.action);
  add_line(out, "object", e.object);
  add_line(out, "policyVersion", e.policy_version);
  add_line(out, "decision", e.decision);
  add_line(out, "reason", e.reason);
  add_line(out, "numbers", e.numbers);
  add_line(out, "prevHash", e.prev_hash);
  return out;
}

std::string audit_hash(const AuditEntry& entry) { return sha256_hex(canonical_audit_text(entry)); }

void chain_audit_entry(AuditEntry& entry, std::int64_t prev_seq, const std::string& prev_hash) {
  entry.seq = prev_seq + 1;
  entry.prev_hash = prev_hash;
  entry.hash = audit_hash(entry);
}

ChainVerifier::ChainVerifier(std::int64_t prev_seq, std::string prev_hash) {
  report_.last_seq = prev_seq;
  report_.head = std::move(prev_hash);
}

bool ChainVerifier::feed(const AuditEntry& e) {
  if (!report_.ok) return false;
  return settle(report_, link_problem(report_, e.seq, e.prev_hash, e.hash, [&] { return audit_hash(e); }), e.seq, e.hash);
}

ChainReport verify_chain(std::span<const AuditEntry> entries) {
  ChainVerifier verifier;
  for (const AuditEntry& e : entries) {
    if (!verifier.feed(e)) break;
  }
  return verifier.report();
}

std::string canonical_ledger_text(const LedgerEntry& e) {
  std::string out;
  out.reserve(400 + e.pool.size() + e.flavor.size() + e.business_group.size() + e.lender.size() + e.workload.size() +
              e.record.size() + e.reason.size());
  out += "gpubank-ledger-v1\n";
  add_line(out, "seq", std::to_string(e.seq));
  add_line(out, "timeMs", std::to_string(e.time_ms));
  add_line(out, "kind", kind_name(e.kind));
  add_line(out, "pool", e.pool);
  add_line(out, "flavor", e.flavor);
  add_line(out, "businessGroup", e.business_group);
  add_line(out, "lender", e.lender);
  add_line(out, "workload", e.workload);
  add_line(out, "record", e.record);
  add_line(out, "gpus", std::to_string(e.gpus));
  add_line(out, "lendingLimit", std::to_string(e.lending_limit));
  add_line(out, "borrowingLimit", std::to_string(e.borrowing_limit));
  add_line(out, "reason", e.reason);
  add_line(out, "auditSeq", std::to_string(e.audit_seq));
  add_line(out, "auditHash", e.audit_hash);
  add_line(out, "prevHash", e.prev_hash);
  return out;
}

std::string ledger_hash(const LedgerEntry& entry) { return sha256_hex(canonical_ledger_text(entry)); }

void chain_ledger_entry(LedgerEntry& entry, std::int64_t prev_seq, const std::string& prev_hash,
                        std::int64_t audit_seq, const std::string& audit_hash) {
  entry.seq = prev_seq + 1;
  entry.prev_hash = prev_hash;
  entry.audit_seq = audit_seq;
  entry.audit_hash = audit_hash;
  entry.hash = ledger_hash(entry);
}

bool LedgerChainVerifier::feed(const LedgerEntry& e) {
  if (!report_.ok) return false;
  std::string problem = link_problem(report_, e.seq, e.prev_hash, e.hash, [&] { return ledger_hash(e); });
  if (problem.empty() && e.audit_seq < last_audit_seq_) {
    problem = "auditSeq " + std::to_string(e.audit_seq) + " is before the previous entry's " +
              std::to_string(last_audit_seq_);
  }
  if (!settle(report_, std::move(problem), e.seq, e.hash)) return false;
  last_audit_seq_ = e.audit_seq;
  return true;
}

Expected<Anchor> parse_anchor(std::string_view text) {
  const auto colon = text.find(':');
  const std::string rule = " (expected SEQ:HASH, e.g. 42:<64 hex digits>, as `gpubank audit head` prints)";
  if (colon == std::string_view::npos) return Unexpected{"anchor " + quote(text) + ": no ':'" + rule};
  Anchor a;
  const std::string_view seq = text.substr(0, colon);
  if (seq.empty() || seq.size() > 18 || seq.find_first_not_of("0123456789") != std::string_view::npos) {
    return Unexpected{"anchor " + quote(text) + ": seq must be a positive decimal number" + rule};
  }
  a.seq = std::stoll(std::string(seq));
  if (a.seq < 1) return Unexpected{"anchor " + quote(text) + ": seq must be at least 1" + rule};
  a.hash = std::string(text.substr(colon + 1));
  if (a.hash.size() != 64 || a.hash.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Unexpected{"anchor " + quote(text) + ": hash must be 64 lowercase hex digits" + rule};
  }
  return a;
}

Json to_json(const AuditEntry& e) {
  return Json{{"seq", e.seq},
              {"timeMs", e.time_ms},
              {"actor", e.actor},
              {"action", e.action},
              {"object", e.object},
              {"policyVersion", e.policy_version},
              {"decision", e.decision},
              {"reason", e.reason},
              {"numbers", e.numbers},
              {"prevHash", e.prev_hash},
              {"hash", e.hash}};
}

Expected<AuditEntry> audit_entry_from_json(const nlohmann::json& json) {
  if (!json.is_object()) return Unexpected{"audit entry: must be a JSON object"};
  AuditEntry e;
  for (const auto& [key, value] : json.items()) {
    std::int64_t* number = nullptr;
    std::string* text = nullptr;
    if (key == "seq") number = &e.seq;
    else if (key == "timeMs") number = &e.time_ms;
    else if (key == "actor") text = &e.actor;
    else if (key == "action") text = &e.action;
    else if (key == "object") text = &e.object;
    else if (key == "policyVersion") text = &e.policy_version;
    else if (key == "decision") text = &e.decision;
    else if (key == "reason") text = &e.reason;
    else if (key == "numbers") text = &e.numbers;
    else if (key == "prevHash") text = &e.prev_hash;
    else if (key == "hash") text = &e.hash;
    else return Unexpected{"audit entry: unknown field " + quote(key)};
    if (number != nullptr) {
      if (value.is_number_unsigned()) {
        const auto u = value.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
          return Unexpected{"audit entry: field " + quote(key) + ": integer out of range"};
        }
        *number = static_cast<std::int64_t>(u);
      } else if (value.is_number_integer()) {
        *number = value.get<std::int64_t>();
      } else {
        return Unexpected{"audit entry: field " + quote(key) + ": must be an integer"};
      }
    } else {
      if (!value.is_string()) return Unexpected{"audit entry: field " + quote(key) + ": must be a string"};
      *text = value.get<std::string>();
    }
  }
  return e;
}

Json to_json(const ChainReport& r) {
  Json out{{"intact", r.ok}, {"entries", r.entries}, {"lastSeq", r.last_seq}, {"head", r.head}};
  if (!r.ok) {
    out["brokenSeq"] = r.broken_seq;
    out["problem"] = r.problem;
  }
  return out;
}

}  // namespace gpubank::bank
