#include "twin/live/interventions.hpp"

#include <algorithm>
#include <tuple>

#include <nlohmann/json.hpp>

namespace gpubank::twin::live {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kDecision = "Journalled";

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;  // clang 14 does not deduce aggregates' arguments

// Reads numbers[key] as a string of 1..max bytes (0..max when `empty_ok`).
Expected<std::string> text(const Json& numbers, const char* key, std::size_t max, bool empty_ok = false) {
  const auto it = numbers.find(key);
  if (it == numbers.end() || !it->is_string()) return Unexpected{"numbers." + std::string(key) + ": a string is required"};
  std::string value = it->get<std::string>();
  if ((value.empty() && !empty_ok) || value.size() > max) {
    return Unexpected{"numbers." + std::string(key) + ": " + (empty_ok ? "at most " : "1 to ") + std::to_string(max) + " bytes"};
  }
  return value;
}

Expected<std::int64_t> integer(const Json& numbers, const char* key, std::int64_t lo, std::int64_t hi) {
  const auto it = numbers.find(key);
  if (it == numbers.end() || !it->is_number_integer()) return Unexpected{"numbers." + std::string(key) + ": an integer is required"};
  const std::int64_t v = it->get<std::int64_t>();
  if (v < lo || v > hi) {
    return Unexpected{"numbers." + std::string(key) + ": an integer from " + std::to_string(lo) + " to " + std::to_string(hi)};
  }
  return v;
}

Expected<bool> boolean(const Json& numbers, const char* key) {
  const auto it = numbers.find(key);
  if (it == numbers.end() || !it->is_boolean()) return Unexpected{"numbers." + std::string(key) + ": true or false is required"};
  return it->get<bool>();
}

Expected<bool> only(const Json& numbers, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : numbers.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Unexpected{"numbers." + key.substr(0, 64) + ": not a field of this intervention"};
    }
  }
  return true;
}

}  // namespace

std::string_view intervention_kind(const Intervention& i) {
  return std::visit(Overloaded{[](const GpuHealthChange&) { return std::string_view("GpuHealth"); },
                               [](const TidalFreeze&) { return std::string_view("TidalFreeze"); },
                               [](const ModelLoadFaults&) { return std::string_view("ModelLoadFaults"); },
                               [](const ReclaimDecisionRequest&) { return std::string_view("ReclaimDecision"); },
                               [](const PolicyChange&) { return std::string_view("PolicyChange"); }},
                    i.action);
}

Expected<bool> check_intervention(const Intervention& i) {
  // The encoder writes exactly what the decoder accepts: checking is decoding the entry.
  auto back = intervention_from_entry(intervention_entry(i, 0));
  if (!back) return Unexpected{back.error()};
  return true;
}

bank::AuditEntry intervention_entry(const Intervention& i, std::int64_t time_ms) {
  bank::AuditEntry e;
  e.time_ms = time_ms;
  e.actor = i.actor;
  e.action = "Intervention." + std::string(intervention_kind(i));
  e.decision = std::string(kDecision);
  Json numbers{{"virtualMs", i.t}};
  std::visit(Overloaded{[&](const GpuHealthChange& a) {
                          e.object = "GPU/" + a.uuid;
                          e.reason = a.healthy ? "GPU " + a.uuid + " is healthy again"
                                               : "GPU " + a.uuid + " reports XID " + std::to_string(a.xid);
                          numbers["uuid"] = a.uuid;
                          numbers["healthy"] = a.healthy;
                          numbers["xid"] = a.xid;
                          numbers["eccDoubleBit"] = a.ecc_double_bit;
                        },
                        [&](const TidalFreeze& a) {
                          e.object = "TidalPolicy/" + a.policy;
                          e.reason = (a.freeze ? "freeze: " : "unfreeze: ") + a.reason;
                          numbers["policy"] = a.policy;
                          numbers["freeze"] = a.freeze;
                          numbers["reason"] = a.reason;
                        },
                        [&](const ModelLoadFaults& a) {
                          e.object = "InferenceScalingPolicy/" + a.policy;
                          e.reason = "the next " + std::to_string(a.count) + " replicas fail to load their model";
                          numbers["policy"] = a.policy;
                          numbers["count"] = a.count;
                        },
                        [&](const ReclaimDecisionRequest& a) {
                          e.object = "Workload/" + a.workload_uid;
                          e.reason = (a.approve ? "approve: " : "reject: ") + a.reason;
                          numbers["workloadUid"] = a.workload_uid;
                          numbers["approve"] = a.approve;
                          numbers["reason"] = a.reason;
                          if (!a.downgrade_to.empty()) numbers["downgradeTo"] = a.downgrade_to;
                        },
                        [&](const PolicyChange& a) {
                          e.object = "Proposal/" + a.proposal_id;
                          e.reason = "proposal " + a.proposal_id + " in force";
                          numbers["proposalId"] = a.proposal_id;
                          numbers["document"] = a.document;
                        }},
             i.action);
  e.numbers = numbers.dump();
  return e;
}

Expected<Intervention> intervention_from_entry(const bank::AuditEntry& e) {
  if (e.decision != kDecision) return Unexpected{"decision: \"" + std::string(kDecision) + "\" is required"};
  if (e.actor.empty() || e.actor.size() > bank::kMaxAuditFieldLength) {
    return Unexpected{"actor: 1 to " + std::to_string(bank::kMaxAuditFieldLength) + " bytes"};
  }
  const Json numbers = Json::parse(e.numbers, nullptr, false);
  if (!numbers.is_object()) return Unexpected{std::string("numbers: a JSON object is required")};
  Intervention i;
  i.seq = e.seq;
  i.actor = e.actor;
  auto t = integer(numbers, "virtualMs", 0, std::int64_t{1} << 52);
  if (!t) return Unexpected{t.error()};
  i.t = *t;
  const std::string& kind = e.action;
  if (kind == "Intervention.GpuHealth") {
    if (auto k = only(numbers, {"virtualMs", "uuid", "healthy", "xid", "eccDoubleBit"}); !k) return Unexpected{k.error()};
    GpuHealthChange a;
    auto uuid = text(numbers, "uuid", kMaxInterventionName);
    if (!uuid) return Unexpected{uuid.error()};
    a.uuid = *uuid;
    auto healthy = boolean(numbers, "healthy");
    if (!healthy) return Unexpected{healthy.error()};
    a.healthy = *healthy;
    auto xid = a.healthy ? integer(numbers, "xid", 0, 0) : integer(numbers, "xid", 1, kMaxXid);
    if (!xid) return Unexpected{xid.error() + (a.healthy ? " when healthy" : " when unhealthy")};
    a.xid = static_cast<int>(*xid);
    auto ecc = integer(numbers, "eccDoubleBit", 0, a.healthy ? 0 : kMaxEccDoubleBit);
    if (!ecc) return Unexpected{ecc.error()};
    a.ecc_double_bit = *ecc;
    if (e.object != "GPU/" + a.uuid) return Unexpected{"object: GPU/" + a.uuid + " is required"};
    i.action = a;
  } else if (kind == "Intervention.TidalFreeze") {
    if (auto k = only(numbers, {"virtualMs", "policy", "freeze", "reason"}); !k) return Unexpected{k.error()};
    TidalFreeze a;
    auto policy = text(numbers, "policy", kMaxInterventionName);
    if (!policy) return Unexpected{policy.error()};
    a.policy = *policy;
    auto freeze = boolean(numbers, "freeze");
    if (!freeze) return Unexpected{freeze.error()};
    a.freeze = *freeze;
    auto reason = text(numbers, "reason", kMaxInterventionReason, true);
    if (!reason) return Unexpected{reason.error()};
    a.reason = *reason;
    if (e.object != "TidalPolicy/" + a.policy) return Unexpected{"object: TidalPolicy/" + a.policy + " is required"};
    i.action = a;
  } else if (kind == "Intervention.ModelLoadFaults") {
    if (auto k = only(numbers, {"virtualMs", "policy", "count"}); !k) return Unexpected{k.error()};
    ModelLoadFaults a;
    auto policy = text(numbers, "policy", kMaxInterventionName);
    if (!policy) return Unexpected{policy.error()};
    a.policy = *policy;
    auto count = integer(numbers, "count", 1, kMaxModelLoadFaults);
    if (!count) return Unexpected{count.error()};
    a.count = static_cast<int>(*count);
    if (e.object != "InferenceScalingPolicy/" + a.policy) {
      return Unexpected{"object: InferenceScalingPolicy/" + a.policy + " is required"};
    }
    i.action = a;
  } else if (kind == "Intervention.ReclaimDecision") {
    if (auto k = only(numbers, {"virtualMs", "workloadUid", "approve", "reason", "downgradeTo"}); !k) {
      return Unexpected{k.error()};
    }
    ReclaimDecisionRequest a;
    auto uid = text(numbers, "workloadUid", kMaxInterventionName);
    if (!uid) return Unexpected{uid.error()};
    a.workload_uid = *uid;
    auto approve = boolean(numbers, "approve");
    if (!approve) return Unexpected{approve.error()};
    a.approve = *approve;
    auto reason = text(numbers, "reason", kMaxInterventionReason, true);
    if (!reason) return Unexpected{reason.error()};
    a.reason = *reason;
    if (numbers.contains("downgradeTo")) {
      auto to = text(numbers, "downgradeTo", kMaxInterventionName);
      if (!to) return Unexpected{to.error()};
      if (!a.approve) return Unexpected{std::string("numbers.downgradeTo: only on an approval")};
      a.downgrade_to = *to;
    }
    if (e.object != "Workload/" + a.workload_uid) return Unexpected{"object: Workload/" + a.workload_uid + " is required"};
    i.action = a;
  } else if (kind == "Intervention.PolicyChange") {
    if (auto k = only(numbers, {"virtualMs", "proposalId", "document"}); !k) return Unexpected{k.error()};
    PolicyChange a;
    auto id = text(numbers, "proposalId", kMaxInterventionName);
    if (!id) return Unexpected{id.error()};
    a.proposal_id = *id;
    auto document = text(numbers, "document", kMaxInterventionDocument);
    if (!document) return Unexpected{document.error()};
    a.document = *document;
    if (e.object != "Proposal/" + a.proposal_id) return Unexpected{"object: Proposal/" + a.proposal_id + " is required"};
    i.action = a;
  } else {
    return Unexpected{"action: \"" + kind.substr(0, 64) +
                      "\" is not an intervention (Intervention.GpuHealth, .TidalFreeze, .ModelLoadFaults, "
                      ".ReclaimDecision, .PolicyChange)"};
  }
  return i;
}

Expected<std::unique_ptr<InterventionJournal>> InterventionJournal::open(const std::string& location) {
  auto store = store::Store::open(location);
  if (!store) return Unexpected{"interventions " + location + ": " + store.error()};
  // Small and read once per start: its chain is checked whole, so an edited, removed or
  // reordered entry stops the start instead of silently changing the replayed run.
  auto chain = store::verify_audit(**store);
  if (!chain) return Unexpected{"interventions " + location + ": " + chain.error()};
  if (!chain->ok) {
    return Unexpected{"interventions " + location + ": the journal's chain is broken at entry " +
                      std::to_string(chain->broken_seq) + ": " + chain->problem};
  }
  std::unique_ptr<InterventionJournal> journal(new InterventionJournal(std::move(*store)));
  std::int64_t after = 0;
  auto read = store::read_audit_after(*journal->store_, after, [&](const bank::AuditEntry& e) -> std::optional<std::string> {
    auto i = intervention_from_entry(e);
    if (!i) return i.error();
    journal->recorded_.push_back(std::move(*i));
    return std::nullopt;
  });
  if (!read) return Unexpected{"interventions " + location + ": " + read.error()};
  return journal;
}

std::vector<Intervention> InterventionJournal::recorded() const {
  std::vector<Intervention> out = recorded_;
  std::stable_sort(out.begin(), out.end(),
                   [](const Intervention& a, const Intervention& b) { return std::tie(a.t, a.seq) < std::tie(b.t, b.seq); });
  return out;
}

Expected<bool> InterventionJournal::append(Intervention& i, std::int64_t now_ms) {
  if (auto ok = check_intervention(i); !ok) return ok;
  const bank::AuditEntry entry = intervention_entry(i, now_ms);
  auto stored = store_->append({}, std::span<const bank::AuditEntry>(&entry, 1));
  if (!stored) return Unexpected{"interventions: " + stored.error()};
  i.seq = stored->audit.front().seq;
  recorded_.push_back(i);
  return true;
}

}  // namespace gpubank::twin::live
