// The pools and groups views of the HTTP API (`gpubank up`'s and the controller's portal),
// from positions: the twin's run::Position or the ledger's bank::Position, any type with
// pool, business_group, guaranteed, used, borrowed, lent, borrowable and lending_floor.
// Header-only so the twin and the controller share one shape without a link between them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "document/decode.hpp"
#include "policy/schema.hpp"
#include "policy/types.hpp"

namespace gpubank::bank {

// Each pool of the guardrails: its model, partition, role and capacity, the guarantees in it
// and the GPUs in use; none without guardrails.
template <class Position>
nlohmann::ordered_json pools_json(const policy::PlatformGuardrailsSpec* guardrails, const std::vector<Position>& positions) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  if (guardrails == nullptr) return list;
  for (const auto& pool : guardrails->pools) {
    std::int64_t used = 0, guaranteed = 0;
    for (const auto& p : positions) {
      if (p.pool != pool.name) continue;
      used += p.used;
      guaranteed += p.guaranteed;
    }
    std::string role;
    for (const auto& [value, name] : doc::EnumNames<policy::PoolRole>::values) {
      if (value == pool.role) role = name;
    }
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    j["name"] = pool.name;
    j["gpuModel"] = pool.gpu_model;
    j["partition"] = pool.partition;
    j["role"] = role;
    j["capacity"] = pool.capacity;
    j["guaranteed"] = guaranteed;
    j["used"] = used;
    j["free"] = std::max<std::int64_t>(0, pool.capacity - used);
    list.push_back(std::move(j));
  }
  return list;
}

// Each group of the guardrails with its position in every pool it has one in.
template <class Position>
nlohmann::ordered_json groups_json(const policy::PlatformGuardrailsSpec* guardrails, const std::vector<Position>& positions) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  if (guardrails == nullptr) return list;
  for (const auto& group : guardrails->groups) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    j["name"] = group.name;
    j["costCenter"] = group.cost_center;
    j["namespaces"] = group.effective_namespaces();
    nlohmann::ordered_json pools = nlohmann::ordered_json::array();
    for (const auto& p : positions) {
      if (p.business_group != group.name) continue;
      pools.push_back({{"pool", p.pool},
                       {"guaranteed", p.guaranteed},
                       {"used", p.used},
                       {"borrowed", p.borrowed},
                       {"lent", p.lent},
                       {"borrowable", p.borrowable},
                       {"lendingFloor", p.lending_floor}});
    }
    j["positions"] = std::move(pools);
    list.push_back(std::move(j));
  }
  return list;
}

}  // namespace gpubank::bank
