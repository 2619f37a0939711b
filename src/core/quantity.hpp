// Kubernetes resource quantities ("500m", "2", "1.5Gi", "1e3"), as resource.Quantity in
// k8s.io/apimachinery parses and prints them. Values are kept exactly at nano precision
// (Kubernetes rounds anything finer up to 1n).
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/expected.hpp"

namespace gpubank {

class Quantity {
 public:
  enum class Format { DecimalSI, BinarySI, DecimalExponent };

  Quantity() = default;
  static Quantity from_int(std::int64_t value, Format format = Format::DecimalSI);
  static Quantity from_milli(std::int64_t milli, Format format = Format::DecimalSI);

  // Grammar of Kubernetes: <signedNumber><suffix>, suffix one of
  // Ki Mi Gi Ti Pi Ei | n u m "" k M G T P E | e<int> E<int>.
  // Errors say what is wrong (`quantity "1.5x": unknown suffix "x"`).
  static Expected<Quantity> parse(std::string_view text);

  // Canonical form as Kubernetes prints it: integer mantissa with the largest suffix of
  // the quantity's format that keeps it exact ("1500m", "1536Mi", "1k"); a BinarySI value
  // that is not a whole number prints as DecimalSI, as Kubernetes does.
  [[nodiscard]] std::string to_string() const;

  // Rounded up to a whole number, as Quantity.Value() does.
  [[nodiscard]] std::int64_t value() const;
  // Rounded up to thousandths, as Quantity.MilliValue() does.
  [[nodiscard]] std::int64_t milli_value() const;
  [[nodiscard]] Format format() const { return format_; }
  [[nodiscard]] bool is_zero() const { return nano_ == 0; }
  [[nodiscard]] bool negative() const { return nano_ < 0; }

  Quantity& operator+=(const Quantity& other);
  Quantity& operator-=(const Quantity& other);
  friend Quantity operator+(Quantity a, const Quantity& b) { return a += b; }
  friend Quantity operator-(Quantity a, const Quantity& b) { return a -= b; }

  // Compares values; the format does not take part.
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    return a.nano_ <=> b.nano_;
  }
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nano_ == b.nano_; }

 private:
  __extension__ using Int128 = __int128;
  Int128 nano_ = 0;  // value * 10^9
  Format format_ = Format::DecimalSI;
};

}  // namespace gpubank
