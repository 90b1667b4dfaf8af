// The windowed mode: GLFW through dlopen (samples/common/glfw_library.hpp), an EGL-made GL context.
#include "gl_window.hpp"

#include "glfw_library.hpp"  // samples/common: GLFW's header (prototypes only) and the common functions

#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

namespace heightfield {

using membridge::errc;
using membridge::error;
using membridge::result;

/// The common GLFW functions, the context ones only this sample calls, and the window.
struct gl_window::functions : samples::glfw_library {
  decltype(&::glfwMakeContextCurrent) make_context_current = nullptr;  ///< glfwMakeContextCurrent.
  decltype(&::glfwGetProcAddress) get_proc_address = nullptr;          ///< glfwGetProcAddress.
  decltype(&::glfwSwapInterval) swap_interval = nullptr;               ///< glfwSwapInterval.
  decltype(&::glfwSwapBuffers) swap_buffers = nullptr;                 ///< glfwSwapBuffers.
  GLFWwindow* window = nullptr;                                        ///< The window, once created.

  /// Loads the context functions (glfw_library::open's `load_extra`).
  result<void> load_context() {
    MEMBRIDGE_TRY(load("glfwMakeContextCurrent", make_context_current));
    MEMBRIDGE_TRY(load("glfwGetProcAddress", get_proc_address));
    MEMBRIDGE_TRY(load("glfwSwapInterval", swap_interval));
    MEMBRIDGE_TRY(load("glfwSwapBuffers", swap_buffers));
    return membridge::ok();
  }
};

gl_window::gl_window(std::unique_ptr<functions> f) noexcept : f_(std::move(f)) {}

gl_window::~gl_window() {
  // The window goes here; then f_'s glfw_library terminates GLFW.
  if (!f_ || f_->window == nullptr) return;
  f_->make_context_current(nullptr);
  f_->destroy_window(f_->window);
}

result<std::unique_ptr<gl_window>> gl_window::open(std::uint32_t width, std::uint32_t height, const char* title) {
  constexpr const char* call = "gl_window::open";
  auto f = std::make_unique<functions>();
  MEMBRIDGE_TRY(f->open(call, [&f] { return f->load_context(); }));
  f->window_hint(GLFW_CLIENT_API, GLFW_OPENGL_API);
  f->window_hint(GLFW_CONTEXT_CREATION_API, GLFW_EGL_CONTEXT_API);
  f->window_hint(GLFW_CONTEXT_VERSION_MAJOR, 4);
  f->window_hint(GLFW_CONTEXT_VERSION_MINOR, 5);
  f->window_hint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  f->window_hint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  f->window = f->create_window(static_cast<int>(width), static_cast<int>(height), title, nullptr, nullptr);
  if (f->window == nullptr)  // f goes: GLFW is terminated
    return error(errc::unsupported, call,
                 "no GL 4.5 core window through EGL: " + f->last_error("glfwCreateWindow failed"));
  f->make_context_current(f->window);
  f->swap_interval(0);
  return std::unique_ptr<gl_window>(new gl_window(std::move(f)));
}

// GLFWglproc (*)(const char*) is exactly gl::get_proc_address_fn: void (*(*)(const char*))().
static_assert(std::is_same_v<decltype(&::glfwGetProcAddress), membridge::gl::get_proc_address_fn>);

membridge::gl::get_proc_address_fn gl_window::get_proc_address() const noexcept { return f_->get_proc_address; }

bool gl_window::should_close() const { return f_->window_should_close(f_->window) == GLFW_TRUE; }

void gl_window::framebuffer_size(int& width, int& height) const {
  f_->get_framebuffer_size(f_->window, &width, &height);
}

void gl_window::present() {
  f_->swap_buffers(f_->window);
  f_->poll_events();
}

membridge::result<void> open_window(gl_target& target, std::uint32_t width, std::uint32_t height, const char* title,
                                    const membridge::gl::adopt_options& adopt, const std::string& adopt_context,
                                    std::ostream& out) {
  auto opened = gl_window::open(width, height, title);
  if (!opened) {
    out << "membridge_heightfield_gl: no usable window (" << opened.error().context() << "); running headless\n";
    return membridge::ok();
  }
  target.window = std::move(*opened);
  MEMBRIDGE_TRY_ASSIGN(target.adopted, membridge::gl::context::adopt_current(target.window->get_proc_address(), adopt)
                                           .with_context(adopt_context));
  return membridge::ok();
}

}  // namespace heightfield
