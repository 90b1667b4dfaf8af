#include <membridge/sync/vulkan_mirror.hpp>

#include <string>

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
  constexpr const char* call = "follow_growth";
  if (!view.valid() || !buffer.valid()) return error(errc::invalid_argument, call, "the view or buffer is empty");
  if (buffer.max_size() > view.reserved_size())
    return error(errc::invalid_argument, call, "the view reserves fewer bytes than the buffer");
  // The chunks the view has must be the buffer's first chunks (compared by their total size).
  if (view.chunk_count() <= buffer.chunk_count()) {
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < view.chunk_count(); ++i) bytes += buffer.chunk(i).size;
    if (bytes != view.size())
      return error(errc::invalid_argument, call,
                   "the view's chunks are not the buffer's (was it made from another buffer?)");
  }

  bool changed = false;
  if (view.chunk_count() > buffer.chunk_count()) {
    MEMBRIDGE_TRY(view.truncate(buffer.chunk_count()));
    changed = true;
  }
  for (std::size_t i = view.chunk_count(); i < buffer.chunk_count(); ++i) {
    MEMBRIDGE_TRY_ASSIGN(auto exported, buffer.export_chunk(i));
    MEMBRIDGE_TRY(view.append(exported.fd, exported.offset, exported.size)
                      .with_context("chunk " + std::to_string(i) + " of " + std::to_string(buffer.chunk_count())));
    changed = true;  // `exported.fd` closes here; Vulkan holds its own duplicate
  }
  return changed;
}

}  // namespace membridge::sync
