// Windows: gl::headless_context is not offered. A windowless GL context on Windows takes EGL, which
// NVIDIA's Windows drivers generally do not ship, or a hidden window with a WGL context
// (RegisterClass + CreateWindow + SetPixelFormat + wglCreateContextAttribsARB for 4.5 core), which
// membridge does not make: create() and list_devices() say so (errc::unsupported) and name the way
// that works: make the context with GLFW or SDL (a hidden window is fine) and adopt it with
// gl::context::adopt_current_wgl() (docs/ownership.md, "Windows").
#include <membridge/gl/headless_context.hpp>

namespace membridge::gl {

namespace detail {
/// The platform state of a headless context; never made on Windows (create() is unsupported).
struct egl_state {};
}  // namespace detail

namespace {

constexpr const char* windows_reason =
    "a headless GL context is not available on Windows: EGL is generally not shipped by NVIDIA's Windows "
    "drivers, and membridge does not create hidden-window WGL contexts; create the context with GLFW or SDL "
    "(a hidden window works), make it current and call gl::context::adopt_current_wgl()";

}  // namespace

headless_context::headless_context() noexcept = default;
headless_context::headless_context(headless_context&&) noexcept = default;
headless_context& headless_context::operator=(headless_context&&) noexcept = default;
headless_context::~headless_context() = default;

result<headless_context> headless_context::create(const headless_options& /*options*/) {
  return error(errc::unsupported, "gl::headless_context::create", windows_reason);
}

result<std::vector<egl_device_info>> headless_context::list_devices(const std::string& /*library*/) {
  return error(errc::unsupported, "gl::headless_context::list_devices", windows_reason);
}

result<void> headless_context::make_current() const {
  return error(errc::invalid_argument, "gl::headless_context::make_current", "empty headless_context");
}

result<void> headless_context::release_current() const {
  return error(errc::invalid_argument, "gl::headless_context::release_current", "empty headless_context");
}

get_proc_address_fn headless_context::get_proc_address() const noexcept { return nullptr; }

const egl_device_info& headless_context::device() const noexcept {
  static const egl_device_info none{};
  return none;
}

}  // namespace membridge::gl
