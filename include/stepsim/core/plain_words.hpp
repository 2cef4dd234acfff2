#pragma once
/// A few 32-bit words of plain data that one owner reads and writes through its own typed view:
/// the transport header a packet carries for the transport, the payload a timer carries for the
/// application. The carrier copies the words along and never reads them.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace stepsim {

/// N words; a view is a trivially copyable struct of at most 4 N bytes without padding.
template <std::size_t N>
struct PlainWords {
  std::uint32_t words[N] = {};

  /// The words read as the owner's view `V`.
  template <class V>
  [[nodiscard]] V as() const {
    static_assert(fits<V>(), "a view is plain data without padding, at most the words' size");
    V v;
    std::memcpy(&v, words, sizeof(V));
    return v;
  }
  /// Words holding the view `v` (the rest zero).
  template <class V>
  [[nodiscard]] static PlainWords of(const V& v) {
    static_assert(fits<V>(), "a view is plain data without padding, at most the words' size");
    PlainWords w;
    std::memcpy(w.words, &v, sizeof(V));
    return w;
  }

 private:
  template <class V>
  static constexpr bool fits() {
    return std::is_trivially_copyable_v<V> && std::has_unique_object_representations_v<V> &&
           sizeof(V) <= sizeof(words);
  }
};

}  // namespace stepsim
