#pragma once
/// An enum's user-facing names in one table: parsing, naming and the "allowed: ..." list of an
/// error all come from it, so a value added to the table is accepted, printed and listed.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace stepsim {

template <class E>
struct NamedValue {
  E value;
  std::string_view name;
  std::string_view meaning = {};  ///< said after the name in the allowed list, if not empty
};

/// The value named `name`, if the table has it.
template <class E, std::size_t N>
std::optional<E> find_named(const std::array<NamedValue<E>, N>& table, std::string_view name) {
  for (const NamedValue<E>& v : table) {
    if (v.name == name) return v.value;
  }
  return std::nullopt;
}

/// The name of `value` ("?" if the table lacks it).
template <class E, std::size_t N>
std::string name_of(const std::array<NamedValue<E>, N>& table, E value) {
  for (const NamedValue<E>& v : table) {
    if (v.value == value) return std::string(v.name);
  }
  return "?";
}

/// "a, b (meaning), c": every name, in the table's order, with its meaning where given.
template <class E, std::size_t N>
std::string allowed_names(const std::array<NamedValue<E>, N>& table) {
  std::string out;
  for (const NamedValue<E>& v : table) {
    if (!out.empty()) out += ", ";
    out += v.name;
    if (!v.meaning.empty()) out += " (" + std::string(v.meaning) + ")";
  }
  return out;
}

/// "1, 2, 4": the numbers of `values`, in order.
template <class T, std::size_t N>
std::string number_list(const T (&values)[N]) {
  std::string out;
  for (const T& v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

}  // namespace stepsim
