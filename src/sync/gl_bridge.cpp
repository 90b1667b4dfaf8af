#include <membridge/sync/gl_bridge.hpp>

#include "detail/follow_chunks.hpp"

#include <string>

namespace membridge::sync {

result<void> require_same_gpu(const cuda::device& cuda_device, const gl::context& gl_context) {
  constexpr const char* call = "require_same_gpu";
  if (!cuda_device.valid() || !gl_context.valid())
    return error(errc::invalid_argument, call, "the CUDA device or the GL context is empty");
  if (gl_context.is_on(cuda_device.uuid())) return ok();
  const auto& caps = gl_context.capabilities();
  return error(errc::invalid_argument, call,
               "CUDA device " + std::to_string(cuda_device.ordinal()) + " (" + cuda_device.name() + ", UUID " +
                   cuda_device.uuid().to_string() + ") and the GL context (" + caps.renderer + ", UUID " +
                   (caps.device_uuids.empty() ? std::string("none reported") : gl_context.uuid().to_string()) +
                   ") are different GPUs: memory can only be shared on one GPU; make the GL context on the "
                   "CUDA device's GPU (sync::create_gl_context_for)");
}

result<gl::headless_context> create_gl_context_for(const cuda::device& cuda_device) {
  if (!cuda_device.valid()) return error(errc::invalid_argument, "create_gl_context_for", "the CUDA device is empty");
  gl::headless_options options;
  options.uuid = cuda_device.uuid();
  options.cuda_device = cuda_device.ordinal();
  return gl::headless_context::create(options);
}

result<gl::chunked_buffer> mirror_in_gl(const gl::context& context, const cuda::growable_buffer& buffer,
                                        gl::growth_mode mode) {
  if (!buffer.valid()) return error(errc::invalid_argument, "mirror_in_gl", "the CUDA buffer is empty");
  MEMBRIDGE_TRY_ASSIGN(auto view, gl::chunked_buffer::create(context, buffer.max_size(), mode));
  MEMBRIDGE_TRY(follow_growth(view, buffer).with_context("importing the buffer's chunks into GL"));
  return view;
}

result<bool> follow_growth(gl::chunked_buffer& view, const cuda::growable_buffer& buffer) {
  return detail::follow_chunks(view, buffer);
}

result<follow_action> follow_step(gl::chunked_buffer& view, cuda::growable_buffer& buffer,
                                  const follow_options& options) {
  return detail::follow_one_step(view, buffer, options);
}

}  // namespace membridge::sync
