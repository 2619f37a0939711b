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
  // Errors say what is wrong (`quantity "1.5x": unknown suffix "x"`). As in Kubernetes, a
  // non-zero value finer than 1n becomes +-1n (rounded away from zero), a BinarySI value
  // is capped at 2^63-1 ("8Ei" is 9223372036854775807) and one below 1 becomes DecimalSI.
  // A decimal magnitude above about 1.7e29 does not fit and is an error.
  static Expected<Quantity> parse(std::string_view text);

  // Canonical form as Kubernetes prints it: integer mantissa with the largest suffix of
  // the quantity's format that keeps it exact ("1500m", "1536Mi", "1k"); a BinarySI value
  // that is not a whole number prints as DecimalSI, as Kubernetes does.
  [[nodiscard]] std::string to_string() const;

  // Rounded up to a whole number, as Quantity.Value() does: away from zero, so 1.5 gives 2
  // and -1.5 gives -2. Clamped to the int64 range (Kubernetes leaves overflow undefined).
  [[nodiscard]] std::int64_t value() const;
  // Rounded up to thousandths, as Quantity.MilliValue() does; same rounding and clamping.
  [[nodiscard]] std::int64_t milli_value() const;
  [[nodiscard]] Format format() const { return format_; }
  [[nodiscard]] bool is_zero() const { return nano_ == 0; }
  [[nodiscard]] bool negative() const { return nano_ < 0; }

  // Exact; results saturate at the storage limit (about +-1.7e29). The left side keeps its
  // format, except that a zero takes the other's, as Quantity.Add and Sub do in Kubernetes.
  Quantity& operator+=(const Quantity& other);
  Quantity& operator-=(const Quantity& other);
  friend Quantity operator+(Quantity a, const Quantity& b) { return a += b; }
  friend Quantity operator-(Quantity a, const Quantity& b) { return a -= b; }

  // The exact product, as inf.Dec multiplies two quantities' values, rounded away from
  // zero to 1n (every Amount read from it rounds up further, so the result is the same);
  // saturates like the sum. The result keeps this quantity's format.
  [[nodiscard]] Quantity multiplied_by(const Quantity& factor) const;

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
