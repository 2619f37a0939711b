// What decode.cpp and decode_workload.cpp share: readers of parts that more than one kind
// has. Internal to src/kueue.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kueue/objects.hpp"
#include "kueue/reader.hpp"

namespace gpubank::kueue::decode_parts {

// The name part of a qualified name (label keys, condition types) and a non-empty label
// value: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
[[nodiscard]] bool is_name_part(std::string_view s);

// A toleration and which of its fields were set (the CEL rules test presence).
struct ReadToleration {
  Toleration value;
  bool has_key = false, has_operator = false, has_value = false, has_effect = false;
};
[[nodiscard]] std::optional<ReadToleration> read_toleration(detail::Reader& r, const doc::Node& node,
                                                            const std::string& path, bool strict);

// metav1.Condition lists (Workload and AdmissionCheck status).
[[nodiscard]] std::vector<Condition> read_conditions(detail::Reader& r, const doc::Node* node, const std::string& path);

// A Workload's spec and status (decode_workload.cpp).
void read_workload(detail::MapReader& top, Workload& wl);

}  // namespace gpubank::kueue::decode_parts
