// membridge/sync/follow_plan.hpp: the policy that keeps a graphics API's view of a growable buffer
// ahead of the buffer's size, one bounded step at a time (sync::follow_step).
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/chunk_policy.hpp>

#include <cstddef>
#include <cstdint>

namespace membridge::sync {

/// How far ahead of need follow_step() prepares memory.
///
/// Growth that reaches a renderer costs an import (and, in Vulkan, a sparse bind) per chunk, and mapping
/// the chunk in CUDA; done at the moment the simulation needs the bytes, that work lands in the frame
/// that needs them. With headroom, follow_step() maps the next chunk in CUDA (growable_buffer::reserve)
/// and imports it into the view while the renderer still draws the old size, so a later
/// growable_buffer::grow() within the headroom makes no driver call and the view already covers it.
/// The cost is memory: up to `headroom` (or `headroom_fraction` of the size) mapped but unused.
struct follow_options {
  /// Bytes past growable_buffer::size() to keep mapped and imported (0: none).
  std::size_t headroom = 0;
  /// The same as a fraction of growable_buffer::size() (1.0: the next doubling is ready); the larger of
  /// the two applies. Must be finite and >= 0.
  double headroom_fraction = 0.0;
};

/// What one follow_step() did (or, from plan_follow_step, should do).
enum class follow_action : std::uint8_t {
  none = 0,  ///< The view covers every mapped chunk and the headroom is mapped: nothing to do.
  dropped,   ///< The view dropped the chunks the buffer no longer has (after a shrink).
  imported,  ///< The view imported the next chunk the buffer has mapped.
  reserved,  ///< The buffer mapped one more chunk ahead of need (growable_buffer::reserve).
};

/// The sizes plan_follow_step() decides from.
struct follow_state {
  std::size_t size = 0;          ///< growable_buffer::size().
  std::size_t capacity = 0;      ///< growable_buffer::capacity().
  std::size_t max_size = 0;      ///< growable_buffer::max_size().
  std::size_t granularity = 0;   ///< growable_buffer::granularity().
  std::size_t buffer_chunks = 0; ///< growable_buffer::chunk_count().
  std::size_t view_chunks = 0;   ///< The view's chunk_count().
};

/// The next step: the action, and for `reserved` the capacity to reserve.
struct follow_decision {
  follow_action action = follow_action::none;  ///< What to do.
  std::size_t reserve_to = 0;                  ///< For `reserved`: the new capacity (one chunk more).
};

/// Decides one bounded step, in this order: drop chunks the buffer no longer has; import the next
/// mapped chunk the view lacks (what is needed now comes first); map one more chunk when capacity is
/// below size + headroom (its size as the buffer's chunk `policy` would add it, capped at max_size).
/// Pure: no driver call.
/// Errors: invalid_argument for a negative or non-finite headroom_fraction, or a bad policy (as
/// cuda::plan_growth).
[[nodiscard]] result<follow_decision> plan_follow_step(const follow_state& state, const follow_options& options,
                                                       const cuda::chunk_policy& policy);

}  // namespace membridge::sync
