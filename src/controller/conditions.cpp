#include "controller/conditions.hpp"

#include <set>

namespace gpubank::controller {

std::string cap_message(std::string message, std::size_t limit) {
  if (message.size() <= limit) return message;
  std::size_t cut = limit;
  // Back up over continuation bytes (10xxxxxx) to the start of the cut character.
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0U) == 0x80U) --cut;
  message.resize(cut);
  return message;
}

nlohmann::json merge_conditions(const nlohmann::json& existing, const std::vector<Condition>& desired,
                                std::int64_t observed_generation, std::string_view now) {
  auto encode = [&](const Condition& c, std::string_view transition) {
    return nlohmann::json{{"type", c.type},
                          {"status", c.status ? "True" : "False"},
                          {"observedGeneration", observed_generation},
                          {"lastTransitionTime", std::string(transition)},
                          {"reason", c.reason},
                          {"message", cap_message(c.message)}};
  };
  auto find_desired = [&](std::string_view type) -> const Condition* {
    for (const Condition& c : desired) {
      if (c.type == type) return &c;
    }
    return nullptr;
  };
  nlohmann::json out = nlohmann::json::array();
  std::set<std::string> placed;
  if (existing.is_array()) {
    for (const nlohmann::json& old : existing) {
      if (!old.is_object()) continue;
      const std::string type = old.value("type", "");
      const Condition* d = find_desired(type);
      if (d == nullptr) {
        out.push_back(old);
        continue;
      }
      const bool same_status = old.value("status", "") == (d->status ? "True" : "False");
      const std::string kept = old.value("lastTransitionTime", "");
      out.push_back(encode(*d, same_status && !kept.empty() ? std::string_view(kept) : now));
      placed.insert(type);
    }
  }
  for (const Condition& d : desired) {
    if (placed.insert(d.type).second) out.push_back(encode(d, now));
  }
  return out;
}

std::optional<nlohmann::json> status_update(const nlohmann::json& object, const std::vector<Condition>& desired,
                                            std::int64_t generation, std::string_view now) {
  static const nlohmann::json kNull;
  const nlohmann::json* status = &kNull;
  if (const auto s = object.find("status"); s != object.end() && s->is_object()) status = &*s;
  const nlohmann::json& existing = status->is_object() && status->contains("conditions") ? (*status)["conditions"] : kNull;
  nlohmann::json conditions = merge_conditions(existing, desired, generation, now);
  const bool same_generation =
      status->is_object() && status->contains("observedGeneration") && (*status)["observedGeneration"] == generation;
  if (same_generation && existing == conditions) return std::nullopt;
  return nlohmann::json{{"observedGeneration", generation}, {"conditions", std::move(conditions)}};
}

}  // namespace gpubank::controller
