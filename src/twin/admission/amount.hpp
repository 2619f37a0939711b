// Printing Amounts the way Kueue's ResourceFormatter does in messages and status:
// cpu as a milli quantity (DecimalSI), memory, ephemeral-storage and hugepages-* in
// canonical BinarySI, everything else as a DecimalSI integer (pkg/resources/resource_formatter.go).
#pragma once

#include <string>
#include <string_view>

#include "core/quantity.hpp"
#include "twin/admission/model.hpp"

namespace gpubank::twin {

// ResourceFormatter.ResourceQuantity: the Quantity Kueue prints for an Amount.
[[nodiscard]] Quantity resource_quantity(std::string_view resource, Amount amount);
[[nodiscard]] std::string format_amount(std::string_view resource, Amount amount);

}  // namespace gpubank::twin
