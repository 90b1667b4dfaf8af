// membridge/core/units.hpp: byte-size literals, alignment arithmetic and readable sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace membridge {

inline namespace literals {
/// `64_KiB` == 64 * 1024 bytes.
constexpr std::size_t operator""_KiB(unsigned long long n) noexcept { return static_cast<std::size_t>(n) << 10U; }
/// `64_MiB` == 64 * 1024 * 1024 bytes.
constexpr std::size_t operator""_MiB(unsigned long long n) noexcept { return static_cast<std::size_t>(n) << 20U; }
/// `4_GiB` == 4 * 1024^3 bytes.
constexpr std::size_t operator""_GiB(unsigned long long n) noexcept { return static_cast<std::size_t>(n) << 30U; }
}  // namespace literals

/// `value` rounded up to a multiple of `alignment`, or nullopt if alignment is 0 or the result would
/// overflow std::size_t.
[[nodiscard]] constexpr std::optional<std::size_t> round_up(std::size_t value, std::size_t alignment) noexcept {
  if (alignment == 0) return std::nullopt;
  const std::size_t rem = value % alignment;
  if (rem == 0) return value;
  const std::size_t add = alignment - rem;
  if (value > SIZE_MAX - add) return std::nullopt;
  return value + add;
}

/// True if `value` is a multiple of `alignment` (alignment 0: false).
[[nodiscard]] constexpr bool is_aligned(std::size_t value, std::size_t alignment) noexcept {
  return alignment != 0 && value % alignment == 0;
}

/// A size for people: "0 B", "512 B", "64 MiB", "1.5 GiB" (binary units, up to two decimals, exact
/// multiples printed without decimals).
[[nodiscard]] std::string format_bytes(std::uint64_t bytes);

}  // namespace membridge
