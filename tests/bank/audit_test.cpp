#include "bank/audit.hpp"

#include <gtest/gtest.h>

#include "core/sha256.hpp"
#include "support/ledger_builder.hpp"

namespace gpubank::bank {
namespace {

using testing::audit_entry;

std::vector<AuditEntry> chain(int n) {
  std::vector<AuditEntry> out;
  std::string prev;
  for (int i = 0; i < n; ++i) {
    AuditEntry e = audit_entry(1000 * i, "Workload/ns/w" + std::to_string(i));
    chain_audit_entry(e, i, prev);
    prev = e.hash;
    out.push_back(e);
  }
  return out;
}

TEST(AuditHash, IsTheSha256OfTheDocumentedText) {
  AuditEntry e;
  e.seq = 1;
  e.time_ms = 42;
  e.actor = "user:alice";
  e.action = "LeaseApproved";
  e.object = "CapacityLease/ads/holiday";
  e.policy_version = "v7";
  e.decision = "Approved";
  e.reason = "fits";
  e.numbers = "{}";
  const std::string text =
      "gpubank-audit-v1\nseq:1:1\ntimeMs:2:42\nactor:10:user:alice\naction:13:LeaseApproved\n"
      "object:25:CapacityLease/ads/holiday\npolicyVersion:2:v7\ndecision:8:Approved\nreason:4:fits\nnumbers:2:{}\n"
      "prevHash:0:\n";
  EXPECT_EQ(canonical_audit_text(e), text);
  EXPECT_EQ(audit_hash(e), sha256_hex(text));
}

TEST(AuditHash, LengthPrefixesKeepFieldBoundariesApart) {
  AuditEntry a = audit_entry(0, "x");
  AuditEntry b = a;
  a.actor = "ab";
  a.action = "c";
  b.actor = "a";
  b.action = "bc";
  EXPECT_NE(audit_hash(a), audit_hash(b));
}

TEST(AuditChain, VerifiesAnIntactChain) {
  const auto entries = chain(5);
  EXPECT_EQ(entries[0].prev_hash, "");
  EXPECT_EQ(entries[3].prev_hash, entries[2].hash);
  const ChainReport r = verify_chain(entries);
  EXPECT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.entries, 5);
  EXPECT_EQ(r.last_seq, 5);
  EXPECT_EQ(r.head, entries[4].hash);
  EXPECT_TRUE(verify_chain({}).ok);
}

TEST(AuditChain, AChangedFieldBreaksAtItsSeq) {
  auto entries = chain(5);
  entries[2].reason = "edited afterwards";
  const ChainReport r = verify_chain(entries);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.broken_seq, 3);
  EXPECT_EQ(r.last_seq, 2);
  EXPECT_NE(r.problem.find("hash mismatch"), std::string::npos) << r.problem;
}

TEST(AuditChain, ARecomputedHashBreaksAtTheNextEntry) {
  auto entries = chain(5);
  entries[2].numbers = R"({"requested":400})";
  entries[2].hash = audit_hash(entries[2]);  // the forger fixes this entry's hash...
  const ChainReport r = verify_chain(entries);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.broken_seq, 4);  // ...but seq 4 still points at the old one
  EXPECT_NE(r.problem.find("does not match the hash of seq 3"), std::string::npos) << r.problem;
}

TEST(AuditChain, ARemovedEntryBreaksAtItsSeq) {
  auto entries = chain(5);
  entries.erase(entries.begin() + 1);
  const ChainReport r = verify_chain(entries);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.broken_seq, 2);
  EXPECT_EQ(r.problem, "gap in seq: expected 2, found 3 (an entry was removed or moved)");
}

TEST(AuditChain, AReorderedPairBreaksAtTheFirstOfThem) {
  auto entries = chain(5);
  std::swap(entries[2], entries[3]);
  const ChainReport r = verify_chain(entries);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.broken_seq, 3);
  EXPECT_EQ(r.problem, "gap in seq: expected 3, found 4 (an entry was removed or moved)");
  // Renumbered to hide the swap, the prevHash links still give it away.
  std::swap(entries[2].seq, entries[3].seq);
  const ChainReport renumbered = verify_chain(entries);
  EXPECT_FALSE(renumbered.ok);
  EXPECT_EQ(renumbered.broken_seq, 3);
  EXPECT_NE(renumbered.problem.find("prevHash"), std::string::npos) << renumbered.problem;
}

TEST(AuditChain, TheFirstEntryMustStartTheChain) {
  auto entries = chain(2);
  entries.erase(entries.begin());
  EXPECT_EQ(verify_chain(entries).broken_seq, 1);
  auto forged = chain(1);
  forged[0].prev_hash = std::string(64, '0');
  forged[0].hash = audit_hash(forged[0]);
  const ChainReport r = verify_chain(forged);
  EXPECT_EQ(r.broken_seq, 1);
  EXPECT_NE(r.problem.find("the first entry's prevHash is empty"), std::string::npos) << r.problem;
}

TEST(AuditChain, VerifiesPageByPage) {
  const auto entries = chain(6);
  ChainVerifier first;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(first.feed(entries[i]));
  ChainVerifier rest(first.report().last_seq, first.report().head);
  for (int i = 3; i < 6; ++i) ASSERT_TRUE(rest.feed(entries[i]));
  EXPECT_EQ(rest.report().head, entries[5].hash);
  EXPECT_FALSE(rest.feed(entries[0]));
  EXPECT_FALSE(rest.feed(entries[5]));  // stays broken
  EXPECT_EQ(rest.report().broken_seq, 7);
}

TEST(ValidateAuditEntry, ChecksRequiredFieldsAndNumbers) {
  AuditEntry e = audit_entry(0, "Workload/ns/w");
  EXPECT_EQ(validate_audit_entry(e), std::nullopt);
  e.policy_version.clear();  // optional
  EXPECT_EQ(validate_audit_entry(e), std::nullopt);
  e.actor.clear();
  EXPECT_EQ(validate_audit_entry(e), "actor: required");
  e = audit_entry(0, "Workload/ns/w");
  e.numbers = "[1, 2]";
  EXPECT_EQ(validate_audit_entry(e), "numbers: must be the text of a JSON object (\"{}\" when there are none)");
  e.numbers = "{\"a\": ";
  EXPECT_EQ(validate_audit_entry(e), "numbers: must be the text of a JSON object (\"{}\" when there are none)");
  e.numbers = "";
  EXPECT_EQ(validate_audit_entry(e), "numbers: required");
  e.numbers = "{}";
  e.reason = std::string(kMaxAuditReasonLength + 1, 'r');
  EXPECT_EQ(validate_audit_entry(e), "reason: longer than 8192 bytes (8193)");
  e.reason = "ok";
  e.object = "Workload/\x01";
  EXPECT_EQ(validate_audit_entry(e), "object: must not contain control characters (byte 1 at 9)");
}

TEST(AuditJson, RoundTripsAndKeepsNumbersAsText) {
  AuditEntry e = chain(1)[0];
  e.numbers = "{ \"b\": 1,  \"a\": 2 }";  // spacing and order are part of what is hashed
  const auto json = to_json(e);
  EXPECT_TRUE(json["numbers"].is_string());
  auto back = audit_entry_from_json(nlohmann::json::parse(json.dump()));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, e);
  EXPECT_EQ(audit_entry_from_json(nlohmann::json::parse(R"({"seq":"1"})")).error(),
            "audit entry: field \"seq\": must be an integer");
  EXPECT_EQ(audit_entry_from_json(nlohmann::json::parse(R"({"who":"me"})")).error(),
            "audit entry: unknown field \"who\"");
}

// ---- the ledger's chain ------------------------------------------------------------------

std::vector<LedgerEntry> ledger_chain() {
  testing::LedgerBuilder l;
  l.quota(0, "a", 10);
  l.quota(0, "b", 2);
  l.start(1000, "b", "ns/w", 6);
  l.open(1000, "r1", "a", "b", "ns/w", 4);
  std::string prev;
  for (std::size_t i = 0; i < l.entries.size(); ++i) {
    chain_ledger_entry(l.entries[i], static_cast<std::int64_t>(i), prev, 1 + static_cast<std::int64_t>(i / 2),
                       "audit-hash-" + std::to_string(i / 2));
    prev = l.entries[i].hash;
  }
  return l.entries;
}

TEST(LedgerHash, IsTheSha256OfTheDocumentedText) {
  LedgerEntry e;
  e.seq = 3;
  e.time_ms = 1000;
  e.kind = LedgerKind::BorrowOpened;
  e.pool = "h100";
  e.flavor = "h100-80gb";
  e.business_group = "b";
  e.lender = "a";
  e.workload = "ns/w";
  e.record = "r1";
  e.gpus = 4;
  e.audit_seq = 2;
  e.audit_hash = "ab";
  e.prev_hash = "cd";
  const std::string text =
      "gpubank-ledger-v1\nseq:1:3\ntimeMs:4:1000\nkind:12:BorrowOpened\npool:4:h100\nflavor:9:h100-80gb\n"
      "businessGroup:1:b\nlender:1:a\nworkload:4:ns/w\nrecord:2:r1\ngpus:1:4\nlendingLimit:2:-1\n"
      "borrowingLimit:2:-1\nreason:0:\nauditSeq:1:2\nauditHash:2:ab\nprevHash:2:cd\n";
  EXPECT_EQ(canonical_ledger_text(e), text);
  EXPECT_EQ(ledger_hash(e), sha256_hex(text));
}

TEST(LedgerChain, VerifiesAnIntactChainAndBreaksAtAChangedOrRemovedEntry) {
  auto entries = ledger_chain();
  LedgerChainVerifier intact;
  for (const auto& e : entries) ASSERT_TRUE(intact.feed(e)) << intact.report().problem;
  EXPECT_EQ(intact.report().entries, 4);
  EXPECT_EQ(intact.report().head, entries.back().hash);
  EXPECT_EQ(intact.last_audit_seq(), 2);

  auto changed = entries;
  changed[2].gpus = 7;
  LedgerChainVerifier v;
  for (const auto& e : changed) v.feed(e);
  EXPECT_FALSE(v.report().ok);
  EXPECT_EQ(v.report().broken_seq, 3);
  EXPECT_NE(v.report().problem.find("hash mismatch"), std::string::npos) << v.report().problem;

  auto relinked = entries;
  relinked[1].audit_hash = "another";  // the link to the audit log is covered too
  LedgerChainVerifier r;
  for (const auto& e : relinked) r.feed(e);
  EXPECT_EQ(r.report().broken_seq, 2);

  auto removed = entries;
  removed.erase(removed.begin() + 1);
  LedgerChainVerifier g;
  for (const auto& e : removed) g.feed(e);
  EXPECT_EQ(g.report().broken_seq, 2);
  EXPECT_EQ(g.report().problem, "gap in seq: expected 2, found 3 (an entry was removed or moved)");
}

TEST(LedgerJson, CarriesTheChainOnlyWhenSet) {
  const auto entries = ledger_chain();
  const auto json = to_json(entries[1]);
  EXPECT_EQ(json["hash"], entries[1].hash);
  EXPECT_EQ(json["auditSeq"], 1);
  auto back = ledger_entry_from_json(json);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, entries[1]);
  LedgerEntry unstored = entries[1];
  unstored.prev_hash.clear();
  unstored.audit_seq = 0;
  unstored.audit_hash.clear();
  unstored.hash.clear();
  EXPECT_FALSE(to_json(unstored).contains("hash"));
}

TEST(Anchor, ParsesSeqAndHashAndNamesTheRule) {
  const std::string hash(64, 'a');
  auto a = parse_anchor("42:" + hash);
  ASSERT_TRUE(a) << a.error();
  EXPECT_EQ(a->seq, 42);
  EXPECT_EQ(a->hash, hash);
  EXPECT_NE(parse_anchor(hash).error().find("no ':'"), std::string::npos);
  EXPECT_NE(parse_anchor("0:" + hash).error().find("seq must be at least 1"), std::string::npos);
  EXPECT_NE(parse_anchor("x:" + hash).error().find("seq must be a positive decimal number"), std::string::npos);
  EXPECT_NE(parse_anchor("1:ABC").error().find("hash must be 64 lowercase hex digits"), std::string::npos);
}

}  // namespace
}  // namespace gpubank::bank
