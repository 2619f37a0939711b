#include "kueue/amounts.hpp"

namespace gpubank::kueue {
namespace {

bool is_cpu(std::string_view resource) { return resource == "cpu"; }

bool is_binary(std::string_view resource) {
  return resource == "memory" || resource == "ephemeral-storage" || resource.starts_with("hugepages-");
}

}  // namespace

twin::Amount resource_value(std::string_view resource, const Quantity& q) {
  return is_cpu(resource) ? q.milli_value() : q.value();
}

twin::Amount quota_amount(std::string_view resource, const Quantity& q) {
  if (is_cpu(resource)) {
    if (q >= Quantity::from_int(INT64_MAX / 1000)) return kUnlimited;
    return q.milli_value();
  }
  if (q >= Quantity::from_int(INT64_MAX)) return kUnlimited;
  return q.value();
}

Quantity resource_quantity(std::string_view resource, twin::Amount value) {
  if (is_cpu(resource)) return Quantity::from_milli(value, Quantity::Format::DecimalSI);
  if (is_binary(resource)) {
    // newCanonicalQuantity: print in binary SI, then read that text back, so a value
    // binary SI cannot print exactly ends up in decimal SI.
    const Quantity binary = Quantity::from_int(value, Quantity::Format::BinarySI);
    auto reparsed = Quantity::parse(binary.to_string());
    return reparsed ? *reparsed : binary;
  }
  return Quantity::from_int(value, Quantity::Format::DecimalSI);
}

std::string format_amount(std::string_view resource, twin::Amount value) {
  return resource_quantity(resource, value).to_string();
}

}  // namespace gpubank::kueue
