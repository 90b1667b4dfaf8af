// membridge/cuda/chunk_policy.hpp: how a growable_buffer sizes the physical chunks it adds.
#pragma once

#include <membridge/core/result.hpp>

#include <cstddef>
#include <vector>

namespace membridge::cuda {

/// How growth is split into physical chunks.
///
/// Each chunk is one cuMemCreate + cuMemMap + cuMemSetAccess, and cuMemSetAccess costs about 25 us
/// per physical allocation whatever its size (measured on an H100): growing to 4 GiB in 2 MiB chunks
/// took ~70 ms, in one chunk per doubling under 2 ms. So capacity grows geometrically, in as few
/// chunks as possible. Graphics APIs import chunk by chunk and their import time grows faster than
/// the size (1 GiB: ~10 ms in Vulkan), so buffers that Vulkan or GL will import should cap chunks
/// with max_chunk.
struct chunk_policy {
  /// When growing, capacity becomes at least `capacity * growth_factor` (>= 1.0; 1.0 maps exactly
  /// what is asked for). 2.0 gives one chunk per doubling and amortised O(log n) chunks.
  double growth_factor = 2.0;
  /// Smallest chunk added by a grow (0: the device granularity). Rounded up to the granularity.
  std::size_t min_chunk = 0;
  /// Largest single chunk (0: no cap). Must be a multiple of the granularity.
  std::size_t max_chunk = 0;
};

/// The sizes of the chunks to add so that capacity reaches `required` under `policy`, in order.
/// `capacity` is what is mapped now, `max_size` the reserved range, `granularity` the device's.
/// Each size is a positive multiple of `granularity` and at most max_chunk (when set); their sum
/// never takes capacity past max_size. An empty vector means nothing needs mapping.
/// Errors: invalid_argument for a bad policy (growth_factor < 1 or not finite, max_chunk or
/// granularity not a multiple/zero, min_chunk > max_chunk); out_of_memory when `required` exceeds
/// `max_size` (the reserved address range is full).
[[nodiscard]] result<std::vector<std::size_t>> plan_growth(const chunk_policy& policy, std::size_t capacity,
                                                           std::size_t required, std::size_t max_size,
                                                           std::size_t granularity);

/// Checks a policy against a granularity without planning anything (same rules as plan_growth).
[[nodiscard]] result<void> validate(const chunk_policy& policy, std::size_t granularity);

}  // namespace membridge::cuda
