// samples/03_ipc_producer/particle_layout.hpp: how membridge_ipc_producer lays its frames out in the
// buffer it publishes, so that a viewer (membridge_ipc_viewer, or anyone's) can draw them knowing only
// what the publisher sent: the buffer's description and the frame semaphores' parameter.
//
// Format "membridge.particles.v1" (element_format::name), stride 32 (particles::particle):
//
//   S = the `frames.produced` / `frames.consumed` semaphores' parameter (the frame ring's slots)
//   N = description.size / (S * 32)            particles per frame (size is always a multiple of S * 32)
//   frame f lies at byte (f % S) * N * 32, N particles, written when `produced` reaches f + 1
//
// i.e. the slots are packed back to back, each exactly N particles. N is the one of the description in
// effect when frame f was announced: the producer publishes a growth (new size) before it announces the
// first frame with the new N, and a subscriber applies buffer changes in message order, so
// "the subscriber's buffer description when the frame event arrives" gives that frame's layout. Growth
// re-lays the slots out (slot k moves from k * N to k * N'); the producer does that only after every
// frame announced so far was consumed. N is a multiple of 8 (`count_alignment`), so every slot starts
// on a 256-byte boundary (Vulkan's largest minStorageBufferOffsetAlignment).
#pragma once

#include "particle_sim.hpp"

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string_view>

namespace particles::ipc_layout {

/// element_format::name of the published buffer.
inline constexpr std::string_view format_name = "membridge.particles.v1";
/// element_format::stride: bytes per particle.
inline constexpr std::uint32_t stride = sizeof(particle);
/// The buffer's resource name.
inline constexpr std::string_view buffer_name = "particles";
/// The frame timeline's name: semaphores `frames.produced` and `frames.consumed`.
inline constexpr std::string_view timeline_name = "frames";
/// The produced semaphore's resource name.
inline constexpr std::string_view produced_name = "frames.produced";
/// The consumed semaphore's resource name.
inline constexpr std::string_view consumed_name = "frames.consumed";
/// Particle counts are multiples of this, so slots start 256-byte aligned.
inline constexpr std::uint64_t count_alignment = 8;

/// Bytes in use for `count` particles per slot and `slots` slots.
[[nodiscard]] constexpr std::uint64_t bytes_for(std::uint64_t count, std::uint32_t slots) noexcept {
  return count * slots * stride;
}

/// Where frame `frame`'s particles start, in bytes.
[[nodiscard]] constexpr std::uint64_t frame_offset(std::uint64_t frame, std::uint64_t count,
                                                   std::uint32_t slots) noexcept {
  return (frame % slots) * count * stride;
}

/// Particles per slot in a buffer of `size` bytes: nothing when `size` is not a positive multiple of
/// slots * stride (then it is not this layout).
[[nodiscard]] constexpr std::optional<std::uint64_t> count_for(std::uint64_t size, std::uint32_t slots) noexcept {
  const std::uint64_t per_count = std::uint64_t{slots} * stride;
  if (slots == 0 || size == 0 || size % per_count != 0) return std::nullopt;
  return size / per_count;
}

/// True for a socket name (ipc::listen_options::name): 1 to 64 letters, digits, '-', '_' or '.'.
[[nodiscard]] constexpr bool is_valid_socket_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

/// The particle counts a producer on another GPU than its buffer uses (--sim-device B --render-device A):
/// multiples of `granularity / gcd(granularity, slots * stride)` and of count_alignment, so that the
/// slots (slots * N * 32 bytes) are a whole number of `granularity` bytes and end where the buffer's
/// mapped memory does: sync::cross_gpu_link grants B access to the slots per whole allocation.
/// 65536 for 3 slots and 2 MiB pages; 16384 for 4 slots.
[[nodiscard]] constexpr std::uint64_t cross_gpu_count_alignment(std::size_t granularity, std::uint32_t slots) noexcept {
  const std::uint64_t row = std::uint64_t{slots == 0 ? 1U : slots} * stride;  // bytes per particle, all slots
  const std::uint64_t g = granularity == 0 ? 1 : granularity;
  return std::lcm(count_alignment, g / std::gcd(g, row));
}

/// `count` rounded up to count_alignment.
[[nodiscard]] constexpr std::uint64_t align_count(std::uint64_t count) noexcept {
  return (count + count_alignment - 1) / count_alignment * count_alignment;
}

}  // namespace particles::ipc_layout
