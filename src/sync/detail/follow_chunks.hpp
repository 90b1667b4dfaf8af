// src/sync/detail/follow_chunks.hpp: brings a graphics API's chunked view (vulkan::chunked_buffer,
// gl::chunked_buffer) in step with a cuda::growable_buffer. Private to the sync module.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/growable_buffer.hpp>

#include <string>

namespace membridge::sync::detail {

/// Drops the view's chunks the buffer no longer has, imports the ones it gained (each chunk's fd is
/// exported, the view takes a duplicate, the export is closed). Returns true when the view changed.
/// `View` has valid(), reserved_size(), chunk_count(), size(), truncate(n) and append(fd, offset, size).
template <class View>
[[nodiscard]] result<bool> follow_chunks(View& view, const cuda::growable_buffer& buffer) {
  constexpr const char* call = "follow_growth";
  if (!view.valid() || !buffer.valid()) return error(errc::invalid_argument, call, "the view or buffer is empty");
  if (buffer.max_size() > view.reserved_size())
    return error(errc::invalid_argument, call, "the view reserves fewer bytes than the buffer");
  // The chunks the view has must be the buffer's first chunks (compared by their total size).
  if (view.chunk_count() <= buffer.chunk_count()) {
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < view.chunk_count(); ++i) bytes += buffer.chunk(i).size;
    if (bytes != view.size())
      return error(errc::invalid_argument, call, "the view's chunks are not the buffer's (was it made from another buffer?)");
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
    changed = true;  // `exported.fd` closes here; the view holds its own duplicate
  }
  return changed;
}

}  // namespace membridge::sync::detail
