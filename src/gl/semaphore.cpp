#include <membridge/gl/semaphore.hpp>

#include "detail/functions.hpp"
#include "detail/handles.hpp"

#include <string>
#include <utility>
#include <vector>

namespace membridge::gl {

namespace {

constexpr const char* import_call = "gl::semaphore::import";

// The texture names and their layouts as two arrays, the form glWait/SignalSemaphoreEXT take.
struct texture_arrays {
  std::vector<GLuint> names;
  std::vector<GLenum> layouts;
};

texture_arrays split(std::span<const texture_barrier> textures) {
  texture_arrays out;
  out.names.reserve(textures.size());
  out.layouts.reserve(textures.size());
  for (const auto& t : textures) {
    out.names.push_back(t.texture);
    out.layouts.push_back(static_cast<GLenum>(t.layout));
  }
  return out;
}

// Names every extension `kind` needs that `caps` lacks (the error says which are missing).
result<void> check_import_support(const context_capabilities& caps, semaphore_kind kind) {
  std::string missing;
  auto need = [&missing](bool present, const char* extension) {
    if (!present) missing += (missing.empty() ? "" : ", ") + std::string(extension);
  };
  need(caps.semaphore, "GL_EXT_semaphore");
  need(caps.semaphore_handle, detail::semaphore_handle_extension);
  if (kind == semaphore_kind::timeline) need(caps.timeline_semaphore, "GL_NV_timeline_semaphore");
  if (missing.empty()) return ok();
  return error(errc::unsupported, import_call,
               std::string(kind == semaphore_kind::timeline ? "a timeline" : "a binary") +
                   " semaphore import needs what " + caps.renderer + " lacks: " + missing +
                   "; order GL work with a host wait (glFinish) instead");
}

// A new semaphore name of `kind` (a timeline is typed before anything else touches it).
result<GLuint> make_name(const detail::functions& fn, semaphore_kind kind) {
  GLuint name = 0;
  if (kind == semaphore_kind::binary) {
    fn.GenSemaphoresEXT(1, &name);
    MEMBRIDGE_TRY(detail::check_gl_error(fn, "glGenSemaphoresEXT"));
    return name;
  }
  fn.CreateSemaphoresNV(1, &name);
  MEMBRIDGE_TRY(detail::check_gl_error(fn, "glCreateSemaphoresNV"));
  const GLint type = GL_SEMAPHORE_TYPE_TIMELINE_NV;
  fn.SemaphoreParameterivNV(name, GL_SEMAPHORE_TYPE_NV, &type);
  if (auto typed = detail::check_gl_error(fn, "glSemaphoreParameterivNV", "GL_SEMAPHORE_TYPE_TIMELINE_NV"); !typed) {
    fn.DeleteSemaphoresEXT(1, &name);
    return std::move(typed).error();
  }
  return name;
}

}  // namespace

result<semaphore> semaphore::import(const context& context, os::borrowed_shareable_handle handle, semaphore_kind kind) {
  if (!context.valid()) return error(errc::invalid_argument, import_call, "the GL context is empty");
  if (!handle.valid())
    return error(errc::invalid_argument, import_call, std::string("the ") + detail::handle_name + " is invalid");
  MEMBRIDGE_TRY(check_import_support(context.capabilities(), kind));
  const auto& state = context.state();
  const auto& fn = state->fn;
  MEMBRIDGE_TRY(detail::check_gl_error(fn, import_call, "a GL error was pending before the import"));

  semaphore out;
  out.state_ = state;
  out.kind_ = kind;
  MEMBRIDGE_TRY_ASSIGN(out.name_, make_name(fn, kind));
  MEMBRIDGE_TRY(detail::import_semaphore(fn, out.name_, handle,
                                         kind == semaphore_kind::timeline ? "a timeline semaphore" : "a binary semaphore"));
  if (fn.IsSemaphoreEXT != nullptr && fn.IsSemaphoreEXT(out.name_) != GL_TRUE)
    return error(errc::internal, "glIsSemaphoreEXT",
                 "semaphore " + std::to_string(out.name_) + " does not exist after a successful import");
  return out;
}

result<void> semaphore::wait(std::uint64_t value, const semaphore_objects& objects) const {
  if (!valid()) return error(errc::invalid_argument, "gl::semaphore::wait", "the semaphore is empty");
  const auto& fn = state_->fn;
  if (kind_ == semaphore_kind::timeline) {
    const GLuint64 target = value;
    fn.SemaphoreParameterui64vEXT(name_, GL_TIMELINE_SEMAPHORE_VALUE_NV, &target);
    MEMBRIDGE_TRY(detail::check_gl_error(fn, "glSemaphoreParameterui64vEXT", "wait value " + std::to_string(value)));
  }
  const auto textures = split(objects.textures);
  fn.WaitSemaphoreEXT(name_, static_cast<GLuint>(objects.buffers.size()), objects.buffers.data(),
                      static_cast<GLuint>(textures.names.size()), textures.names.data(), textures.layouts.data());
  return detail::check_gl_error(fn, "glWaitSemaphoreEXT");
}

result<void> semaphore::signal(std::uint64_t value, const semaphore_objects& objects) const {
  if (!valid()) return error(errc::invalid_argument, "gl::semaphore::signal", "the semaphore is empty");
  const auto& fn = state_->fn;
  if (kind_ == semaphore_kind::timeline) {
    const GLuint64 target = value;
    fn.SemaphoreParameterui64vEXT(name_, GL_TIMELINE_SEMAPHORE_VALUE_NV, &target);
    MEMBRIDGE_TRY(detail::check_gl_error(fn, "glSemaphoreParameterui64vEXT", "signal value " + std::to_string(value)));
  }
  const auto textures = split(objects.textures);
  fn.SignalSemaphoreEXT(name_, static_cast<GLuint>(objects.buffers.size()), objects.buffers.data(),
                        static_cast<GLuint>(textures.names.size()), textures.names.data(), textures.layouts.data());
  MEMBRIDGE_TRY(detail::check_gl_error(fn, "glSignalSemaphoreEXT"));
  fn.Flush();  // the other API sees the signal only once GL has submitted it
  return detail::check_gl_error(fn, "glFlush", "after glSignalSemaphoreEXT");
}

result<std::uint64_t> semaphore::value() const {
  if (!valid()) return error(errc::invalid_argument, "gl::semaphore::value", "the semaphore is empty");
  if (kind_ != semaphore_kind::timeline)
    return error(errc::invalid_argument, "gl::semaphore::value", "a binary semaphore has no value");
  const auto& fn = state_->fn;
  if (fn.GetSemaphoreParameterui64vEXT == nullptr)
    return error(errc::unsupported, "gl::semaphore::value", "the context offers no glGetSemaphoreParameterui64vEXT");
  GLuint64 current = 0;
  fn.GetSemaphoreParameterui64vEXT(name_, GL_TIMELINE_SEMAPHORE_VALUE_NV, &current);
  MEMBRIDGE_TRY(detail::check_gl_error(fn, "glGetSemaphoreParameterui64vEXT", "GL_TIMELINE_SEMAPHORE_VALUE_NV"));
  return static_cast<std::uint64_t>(current);
}

semaphore::semaphore(semaphore&& other) noexcept
    : state_(std::move(other.state_)), name_(std::exchange(other.name_, 0)), kind_(other.kind_) {}

semaphore& semaphore::operator=(semaphore&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
    name_ = std::exchange(other.name_, 0);
    kind_ = other.kind_;
  }
  return *this;
}

semaphore::~semaphore() { reset(); }

// The context must be current: the name is deleted in it.
void semaphore::reset() noexcept {
  if (name_ != 0 && state_ && state_->fn.DeleteSemaphoresEXT != nullptr) state_->fn.DeleteSemaphoresEXT(1, &name_);
  name_ = 0;
  state_.reset();
}

}  // namespace membridge::gl
