// A value or an error message: the error-as-value type used at module edges.
// (std::expected arrives with C++23; this is the small subset gpubank needs.)
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace gpubank {

struct Unexpected {
  std::string message;
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(Unexpected error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  const T& value() const& { return std::get<0>(state_); }
  T& value() & { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // Only valid when !ok().
  [[nodiscard]] const std::string& error() const { return std::get<1>(state_).message; }

 private:
  std::variant<T, Unexpected> state_;
};

}  // namespace gpubank
