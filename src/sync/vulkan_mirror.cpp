#include <membridge/sync/vulkan_mirror.hpp>

#include "detail/follow_chunks.hpp"

namespace membridge::sync {

result<vulkan::chunked_buffer> mirror_in_vulkan(const vulkan::device_context& context,
                                                const cuda::growable_buffer& buffer, vulkan::chunked_buffer_info info) {
  if (!buffer.valid()) return error(errc::invalid_argument, "mirror_in_vulkan", "the CUDA buffer is empty");
  if (info.reserved_size == 0) info.reserved_size = buffer.max_size();
  MEMBRIDGE_TRY_ASSIGN(auto view, vulkan::chunked_buffer::create(context, info));
  MEMBRIDGE_TRY(follow_growth(view, buffer).with_context("importing the buffer's chunks into Vulkan"));
  return view;
}

result<bool> follow_growth(vulkan::chunked_buffer& view, const cuda::growable_buffer& buffer) {
  return detail::follow_chunks(view, buffer);
}

result<follow_action> follow_step(vulkan::chunked_buffer& view, cuda::growable_buffer& buffer,
                                  const follow_options& options) {
  return detail::follow_one_step(view, buffer, options);
}

}  // namespace membridge::sync
