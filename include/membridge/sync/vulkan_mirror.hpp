// membridge/sync/vulkan_mirror.hpp: a cuda::growable_buffer seen by Vulkan, following its growth.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/device_context.hpp>

namespace membridge::sync {

/// Makes Vulkan's view of `buffer`: a chunked_buffer over buffer.max_size() bytes with every chunk
/// mapped now imported (sparse: one VkBuffer whose bytes are the CUDA buffer's, at the same offsets).
/// `info.reserved_size` 0 means buffer.max_size().
/// Ownership: each chunk's fd is exported, imported (Vulkan takes a duplicate) and closed; the view
/// keeps the memory alive on its own.
/// Errors: as vulkan::chunked_buffer::create and append, and cuda::growable_buffer::export_chunk.
[[nodiscard]] result<vulkan::chunked_buffer> mirror_in_vulkan(const vulkan::device_context& context,
                                                              const cuda::growable_buffer& buffer,
                                                              vulkan::chunked_buffer_info info = {});

/// Brings `view` in step with `buffer` after it grew or shrank: imports and binds the new chunks,
/// or drops chunks the buffer no longer has. Returns true when the view changed. Call it off the
/// render thread (an import of a 1 GiB chunk takes ~10 ms); when it shrinks the view, the GPU must
/// be done with the dropped range.
/// Errors: invalid_argument when `view` was not made from `buffer` (its chunks differ); the
/// import's errors (the view then holds the chunks imported before the failure).
[[nodiscard]] result<bool> follow_growth(vulkan::chunked_buffer& view, const cuda::growable_buffer& buffer);

}  // namespace membridge::sync
