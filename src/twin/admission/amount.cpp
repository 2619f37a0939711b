#include "twin/admission/amount.hpp"

#include <array>
#include <cstdint>
#include <limits>

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
  // Every pending head's message prints amounts in every cycle. Decimal SI without the
  // 128-bit Quantity: strip factors of 1000 and name the power (the same text as
  // Quantity::to_string, compared in the tests over the whole int64 range).
  if (!binary_formatted(resource) && amount != std::numeric_limits<Amount>::min()) {
    if (amount == 0) return "0";
    std::uint64_t magnitude = amount < 0 ? static_cast<std::uint64_t>(-amount) : static_cast<std::uint64_t>(amount);
    int exponent = resource == "cpu" ? -3 : 0;
    while (magnitude % 1000 == 0) {
      magnitude /= 1000;
      exponent += 3;
    }
    static constexpr std::array<std::string_view, 8> kSuffixes{"m", "", "k", "M", "G", "T", "P", "E"};  // 10^-3 .. 10^18
    std::string out = amount < 0 ? "-" : "";
    out += std::to_string(magnitude);
    out += kSuffixes[static_cast<std::size_t>((exponent + 3) / 3)];
    return out;
  }
  return resource_quantity(resource, amount).to_string();
}

}  // namespace gpubank::twin
