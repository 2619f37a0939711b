#include "twin/admission/amount.hpp"

namespace gpubank::twin {

namespace {
bool binary_formatted(std::string_view resource) {
  return resource == "memory" || resource == "ephemeral-storage" || resource.starts_with("hugepages-");
}
}  // namespace

Quantity resource_quantity(std::string_view resource, Amount amount) {
  if (resource == "cpu") return Quantity::from_milli(amount, Quantity::Format::DecimalSI);
  if (binary_formatted(resource)) {
    // newCanonicalQuantity: print in binary SI and read that back, so a value binary SI
    // cannot print exactly ends up in decimal SI.
    const Quantity binary = Quantity::from_int(amount, Quantity::Format::BinarySI);
    auto reparsed = Quantity::parse(binary.to_string());
    return reparsed ? *reparsed : binary;
  }
  return Quantity::from_int(amount, Quantity::Format::DecimalSI);
}

std::string format_amount(std::string_view resource, Amount amount) {
  return resource_quantity(resource, amount).to_string();
}

}  // namespace gpubank::twin
