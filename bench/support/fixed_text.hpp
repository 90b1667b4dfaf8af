// bench/support/fixed_text.hpp: text in the fixed char arrays of the messages a benchmark exchanges
// with its second process (plain structs sent as bytes). Header-only.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

namespace membridge::bench {

/// Copies `text` into a fixed char array (truncating; always NUL-terminated).
template <std::size_t N>
void copy_text(char (&to)[N], std::string_view text) noexcept {
  static_assert(N > 0, "no room for the NUL");
  const std::size_t n = text.size() < N - 1 ? text.size() : N - 1;
  std::memcpy(to, text.data(), n);
  to[n] = '\0';
}

}  // namespace membridge::bench
