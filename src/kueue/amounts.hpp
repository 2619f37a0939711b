// Quantities to the admission core's Amounts and back, as Kueue converts them
// (pkg/resources: amount.go, requests.go, resource_formatter.go).
#pragma once

#include <string>
#include <string_view>

#include "core/quantity.hpp"
#include "twin/admission/model.hpp"

namespace gpubank::kueue {

// Kueue's resources.Unlimited: a quota too large for an int64 Amount.
inline constexpr twin::Amount kUnlimited = twin::kUnlimitedAmount;

// A request, as resources.ResourceValue reduces it: "cpu" in millicores, every other
// resource in its base unit, rounded up (away from zero) like Quantity.MilliValue() and
// Value(), clamped to the int64 range.
[[nodiscard]] twin::Amount resource_value(std::string_view resource, const Quantity& q);

// A quota (nominalQuota, borrowingLimit, lendingLimit), as resources.AmountFromQuantity:
// like resource_value, but kUnlimited once the value would not fit (cpu from
// 9223372036854775 cores, anything else from 2^63-1).
[[nodiscard]] twin::Amount quota_amount(std::string_view resource, const Quantity& q);

// An Amount as Kueue writes it in statuses (ResourceFormatter.ResourceQuantity): cpu as
// millicores ("1500m", "2"), memory, ephemeral-storage and hugepages-* in binary SI when
// exact ("1Gi", else decimal as "1500M"), everything else in decimal SI ("4", "1k").
[[nodiscard]] Quantity resource_quantity(std::string_view resource, twin::Amount value);
[[nodiscard]] std::string format_amount(std::string_view resource, twin::Amount value);

}  // namespace gpubank::kueue
