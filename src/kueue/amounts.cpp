#include "kueue/amounts.hpp"

#include "twin/admission/amount.hpp"

namespace gpubank::kueue {
namespace {

bool is_cpu(std::string_view resource) { return resource == "cpu"; }

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
  return twin::resource_quantity(resource, value);
}

std::string format_amount(std::string_view resource, twin::Amount value) {
  return twin::format_amount(resource, value);
}

}  // namespace gpubank::kueue
