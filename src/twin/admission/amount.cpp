#include "twin/admission/amount.hpp"

namespace gpubank::twin {

namespace {
bool binary_formatted(std::string_view resource) {
  return resource == "memory" || resource == "ephemeral-storage" || resource.starts_with("hugepages-");
}
}  // namespace

std::string format_amount(std::string_view resource, Amount amount) {
  if (resource == "cpu") return Quantity::from_milli(amount, Quantity::Format::DecimalSI).to_string();
  if (binary_formatted(resource)) {
    // Kueue re-parses the BinarySI print to get the canonical form.
    const auto printed = Quantity::from_int(amount, Quantity::Format::BinarySI).to_string();
    const auto reparsed = Quantity::parse(printed);
    return reparsed ? reparsed->to_string() : printed;
  }
  return Quantity::from_int(amount, Quantity::Format::DecimalSI).to_string();
}

Amount to_amount(std::string_view resource, const Quantity& quantity) {
  return resource == "cpu" ? quantity.milli_value() : quantity.value();
}

}  // namespace gpubank::twin
