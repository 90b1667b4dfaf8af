// membridge/sync/vulkan_mirror.hpp: a cuda::growable_buffer seen by Vulkan, following its growth.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/follow_plan.hpp>
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

/// One bounded step of keeping `view` in step with `buffer`, ahead of need (plan_follow_step decides):
/// drops the chunks the buffer no longer has, or imports and binds ONE chunk the buffer has mapped, or
/// maps ONE more chunk in CUDA while capacity is below size() + headroom (growable_buffer::reserve).
/// Call it repeatedly off the render thread (a worker, or between frames) until it returns
/// follow_action::none; each call costs at most one chunk's import + bind or one chunk's
/// cuMemCreate + cuMemMap + cuMemSetAccess, so cap the buffer's chunk size (chunk_policy::max_chunk)
/// to bound the work per call. The renderer draws min(view.size(), the size its frame was written
/// with): the view may cover more than the buffer's size() (the headroom) or, right after a grow
/// beyond the headroom, less.
/// Thread use: `buffer` must not be grown, shrunk or destroyed by another thread during the call (one
/// mutex around grow() and follow_step() is enough); the sparse queue is used as by append().
/// Errors: invalid_argument when `view` was not made from `buffer` or for bad options; the import's,
/// bind's or mapping's errors, after which the view and the buffer are as they were.
[[nodiscard]] result<follow_action> follow_step(vulkan::chunked_buffer& view, cuda::growable_buffer& buffer,
                                                const follow_options& options = {});

}  // namespace membridge::sync
