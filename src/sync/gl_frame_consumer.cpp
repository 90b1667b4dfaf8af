#include <membridge/sync/gl_frame_consumer.hpp>

namespace membridge::sync {

result<gl_frame_consumer> gl_frame_consumer::import(const gl::context& context, const frame_timeline& timeline) {
  if (!timeline.valid()) return error(errc::invalid_argument, "gl_frame_consumer::import", "the frame timeline is empty");
  MEMBRIDGE_TRY_ASSIGN(auto fds, timeline.export_fds());
  return import(context, fds.produced, fds.consumed, timeline.slots());
}  // `fds` close here: GL holds duplicates

result<gl_frame_consumer> gl_frame_consumer::import(const gl::context& context, os::borrowed_shareable_handle produced,
                                                    os::borrowed_shareable_handle consumed, std::uint32_t slots) {
  constexpr const char* call = "gl_frame_consumer::import";
  if (slots == 0) return error(errc::invalid_argument, call, "a frame timeline has at least one slot");
  if (!context.valid()) return error(errc::invalid_argument, call, "the GL context is empty");
  if (!context.capabilities().semaphore_import() || !context.capabilities().timeline_semaphore)
    return error(errc::unsupported, call,
                 "GL as a frame consumer needs GL_EXT_semaphore, GL_EXT_semaphore_fd and GL_NV_timeline_semaphore (" +
                     context.capabilities().renderer + " lacks one)");
  gl_frame_consumer out;
  MEMBRIDGE_TRY_ASSIGN(out.produced_, gl::semaphore::import(context, produced, gl::semaphore_kind::timeline));
  MEMBRIDGE_TRY_ASSIGN(out.consumed_, gl::semaphore::import(context, consumed, gl::semaphore_kind::timeline));
  out.slots_ = slots;
  return out;
}

result<void> gl_frame_consumer::acquire(std::uint64_t frame, const gl::semaphore_objects& objects) const {
  if (!valid()) return error(errc::invalid_argument, "gl_frame_consumer::acquire", "not imported");
  return produced_.wait(frame_timeline::produced_value(frame), objects);
}

result<void> gl_frame_consumer::release(std::uint64_t frame, const gl::semaphore_objects& objects) const {
  if (!valid()) return error(errc::invalid_argument, "gl_frame_consumer::release", "not imported");
  return consumed_.signal(frame_timeline::consumed_value(frame), objects);
}

}  // namespace membridge::sync
