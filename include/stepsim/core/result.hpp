#pragma once
/// Result<T>: a value or a user-facing error message (the user-error channel; see STYLE.md 9).

#include <string>
#include <utility>
#include <variant>

namespace stepsim {

/// A user-input error: one sentence that names what is wrong and what is allowed.
struct Error {
  std::string message;
};

/// Either a T or an Error. Minimal stand-in for std::expected (C++23).
template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  [[nodiscard]] const T& value() const& { return std::get<0>(v_); }
  [[nodiscard]] T&& value() && { return std::get<0>(std::move(v_)); }
  [[nodiscard]] const T& operator*() const& { return value(); }
  [[nodiscard]] const T* operator->() const { return &value(); }
  [[nodiscard]] const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace stepsim
