// membridge/sync/gl_bridge.hpp: a cuda::growable_buffer seen by OpenGL (following its growth), the
// same-GPU check for GL, and a headless GL context on a CUDA device's GPU.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/gl/chunked_buffer.hpp>
#include <membridge/gl/context.hpp>
#include <membridge/gl/headless_context.hpp>
#include <membridge/sync/follow_plan.hpp>

namespace membridge::sync {

/// Succeeds when the GL context renders on `cuda_device`'s GPU (one of its GL_DEVICE_UUID_EXT values
/// equals the CUDA UUID). Errors: invalid_argument naming both UUIDs otherwise.
[[nodiscard]] result<void> require_same_gpu(const cuda::device& cuda_device, const gl::context& gl_context);

/// A headless GL 4.5 context (EGL) on the GPU that `cuda_device` is: gl::headless_context::create with
/// the CUDA device's UUID and ordinal. The context is current on the calling thread.
/// Errors: as gl::headless_context::create. Ownership: the caller owns the returned context.
[[nodiscard]] result<gl::headless_context> create_gl_context_for(const cuda::device& cuda_device);

/// Makes GL's view of `buffer`: a gl::chunked_buffer over buffer.max_size() bytes with every chunk
/// mapped now imported (sparse: one GL buffer whose bytes are the CUDA buffer's at the same offsets;
/// per-chunk: one GL buffer per chunk). The context must be current.
/// Ownership: each chunk's fd is exported, imported (GL takes a duplicate) and closed.
/// Errors: as gl::chunked_buffer::create / append and cuda::growable_buffer::export_chunk.
[[nodiscard]] result<gl::chunked_buffer> mirror_in_gl(const gl::context& context, const cuda::growable_buffer& buffer,
                                                      gl::growth_mode mode = gl::growth_mode::automatic);

/// Brings `view` in step with `buffer` after it grew or shrank: imports and commits the new chunks, or
/// drops chunks the buffer no longer has. Returns true when the view changed. The context must be
/// current; when it shrinks the view, GL must be done with the dropped range.
/// Errors: invalid_argument when `view` was not made from `buffer`; the import's errors.
[[nodiscard]] result<bool> follow_growth(gl::chunked_buffer& view, const cuda::growable_buffer& buffer);

/// One bounded step of keeping `view` in step with `buffer`, ahead of need: as the Vulkan overload
/// (drop chunks, import ONE chunk, or map ONE chunk ahead), for GL. The context must be current (the
/// render thread between frames, or a thread with a context sharing its objects, whose work the
/// render thread then orders with a GL fence). With the per-chunk path each imported chunk is a new GL
/// buffer: take segments() again when generation() changed.
/// Thread use and errors: as the Vulkan overload.
[[nodiscard]] result<follow_action> follow_step(gl::chunked_buffer& view, cuda::growable_buffer& buffer,
                                                const follow_options& options = {});

}  // namespace membridge::sync
