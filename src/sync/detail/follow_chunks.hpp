// src/sync/detail/follow_chunks.hpp: brings a graphics API's chunked view (vulkan::chunked_buffer,
// gl::chunked_buffer) in step with a cuda::growable_buffer, all at once (follow_chunks) or one bounded
// step at a time, ahead of need (follow_one_step). Private to the sync module.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/follow_plan.hpp>

#include <string>

namespace membridge::sync::detail {

/// Checks that `view` can follow `buffer`: both valid, the view reserves at least the buffer's range,
/// and the chunks the view has are the buffer's first chunks (compared by their total size).
template <class View>
[[nodiscard]] result<void> check_follows(const View& view, const cuda::growable_buffer& buffer, const char* call) {
  if (!view.valid() || !buffer.valid()) return error(errc::invalid_argument, call, "the view or buffer is empty");
  if (buffer.max_size() > view.reserved_size())
    return error(errc::invalid_argument, call, "the view reserves fewer bytes than the buffer");
  if (view.chunk_count() <= buffer.chunk_count()) {
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < view.chunk_count(); ++i) bytes += buffer.chunk(i).size;
    if (bytes != view.size())
      return error(errc::invalid_argument, call, "the view's chunks are not the buffer's (was it made from another buffer?)");
  }
  return ok();
}

/// Imports the buffer's chunk `index` (the view's next) into `view`: the chunk's shareable handle (fd /
/// NT handle) is exported, the view imports it (borrowing it), the export is closed. On error the view is unchanged.
template <class View>
[[nodiscard]] result<void> import_chunk(View& view, const cuda::growable_buffer& buffer, std::size_t index) {
  MEMBRIDGE_TRY_ASSIGN(auto exported, buffer.export_chunk(index));
  return view.append(exported.fd, exported.offset, exported.size)
      .with_context("chunk " + std::to_string(index) + " of " + std::to_string(buffer.chunk_count()));
}

/// Drops the view's chunks the buffer no longer has, imports the ones it gained. Returns true when the
/// view changed. `View` has valid(), reserved_size(), chunk_count(), size(), truncate(n) and
/// append(fd, offset, size).
template <class View>
[[nodiscard]] result<bool> follow_chunks(View& view, const cuda::growable_buffer& buffer) {
  MEMBRIDGE_TRY(check_follows(view, buffer, "follow_growth"));
  bool changed = false;
  if (view.chunk_count() > buffer.chunk_count()) {
    MEMBRIDGE_TRY(view.truncate(buffer.chunk_count()));
    changed = true;
  }
  for (std::size_t i = view.chunk_count(); i < buffer.chunk_count(); ++i) {
    MEMBRIDGE_TRY(import_chunk(view, buffer, i));
    changed = true;
  }
  return changed;
}

/// One bounded step of following `buffer` ahead of need (sync::plan_follow_step decides): drop chunks,
/// import one chunk, or map one chunk ahead in the buffer. On error the view and the buffer are as
/// they were.
template <class View>
[[nodiscard]] result<follow_action> follow_one_step(View& view, cuda::growable_buffer& buffer,
                                                    const follow_options& options) {
  MEMBRIDGE_TRY(check_follows(view, buffer, "follow_step"));
  const follow_state state{.size = buffer.size(),
                           .capacity = buffer.capacity(),
                           .max_size = buffer.max_size(),
                           .granularity = buffer.granularity(),
                           .buffer_chunks = buffer.chunk_count(),
                           .view_chunks = view.chunk_count()};
  MEMBRIDGE_TRY_ASSIGN(const follow_decision next, plan_follow_step(state, options, buffer.policy()));
  switch (next.action) {
    case follow_action::dropped:
      MEMBRIDGE_TRY(view.truncate(buffer.chunk_count()));
      break;
    case follow_action::imported:
      MEMBRIDGE_TRY(import_chunk(view, buffer, view.chunk_count()));
      break;
    case follow_action::reserved:
      MEMBRIDGE_TRY(buffer.reserve(next.reserve_to).with_context("follow_step: mapping ahead of need"));
      break;
    case follow_action::none:
      break;
  }
  return next.action;
}

}  // namespace membridge::sync::detail
