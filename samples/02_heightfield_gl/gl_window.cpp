// The windowed mode: GLFW through dlopen (membridge::os::dynamic_library), an EGL-made GL context.
#include "gl_window.hpp"

#include <membridge/os/dynamic_library.hpp>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>  // types, constants and prototypes only: the functions come from dlsym

#include <cstdlib>
#include <string>
#include <type_traits>

namespace heightfield {

using membridge::errc;
using membridge::error;
using membridge::result;

struct gl_window::functions {
  membridge::os::dynamic_library library;
  decltype(&::glfwInit) init = nullptr;
  decltype(&::glfwTerminate) terminate = nullptr;
  decltype(&::glfwGetError) get_error = nullptr;
  decltype(&::glfwWindowHint) window_hint = nullptr;
  decltype(&::glfwCreateWindow) create_window = nullptr;
  decltype(&::glfwDestroyWindow) destroy_window = nullptr;
  decltype(&::glfwMakeContextCurrent) make_context_current = nullptr;
  decltype(&::glfwGetProcAddress) get_proc_address = nullptr;
  decltype(&::glfwSwapInterval) swap_interval = nullptr;
  decltype(&::glfwSwapBuffers) swap_buffers = nullptr;
  decltype(&::glfwPollEvents) poll_events = nullptr;
  decltype(&::glfwWindowShouldClose) window_should_close = nullptr;
  decltype(&::glfwGetFramebufferSize) get_framebuffer_size = nullptr;
  bool initialised = false;
  GLFWwindow* window = nullptr;

  [[nodiscard]] std::string last_error(const char* fallback) const {
    const char* description = nullptr;
    if (get_error != nullptr && get_error(&description) != GLFW_NO_ERROR && description != nullptr) return description;
    return fallback;
  }
};

namespace {

template <class F>
result<void> load(const membridge::os::dynamic_library& library, const char* name, F& fn) {
  MEMBRIDGE_TRY_ASSIGN(void* symbol, library.symbol(name));
  fn = reinterpret_cast<F>(symbol);
  return membridge::ok();
}

bool env_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

}  // namespace

gl_window::gl_window(std::unique_ptr<functions> f) noexcept : f_(std::move(f)) {}

gl_window::~gl_window() {
  if (!f_) return;
  if (f_->window != nullptr) {
    f_->make_context_current(nullptr);
    f_->destroy_window(f_->window);
  }
  if (f_->initialised) f_->terminate();
}

result<std::unique_ptr<gl_window>> gl_window::open(std::uint32_t width, std::uint32_t height, const char* title) {
  constexpr const char* call = "gl_window::open";
  if (!env_set("DISPLAY") && !env_set("WAYLAND_DISPLAY"))
    return error(errc::unsupported, call, "DISPLAY and WAYLAND_DISPLAY are not set");
  auto f = std::make_unique<functions>();
  auto library = membridge::os::dynamic_library::open("libglfw.so.3");
  if (!library)
    return error(errc::unsupported, call,
                 "GLFW cannot be loaded (Debian: libglfw3): " + std::string(library.error().native_name()));
  f->library = std::move(*library);
  auto loaded = [&]() -> result<void> {
    MEMBRIDGE_TRY(load(f->library, "glfwInit", f->init));
    MEMBRIDGE_TRY(load(f->library, "glfwTerminate", f->terminate));
    MEMBRIDGE_TRY(load(f->library, "glfwGetError", f->get_error));
    MEMBRIDGE_TRY(load(f->library, "glfwWindowHint", f->window_hint));
    MEMBRIDGE_TRY(load(f->library, "glfwCreateWindow", f->create_window));
    MEMBRIDGE_TRY(load(f->library, "glfwDestroyWindow", f->destroy_window));
    MEMBRIDGE_TRY(load(f->library, "glfwMakeContextCurrent", f->make_context_current));
    MEMBRIDGE_TRY(load(f->library, "glfwGetProcAddress", f->get_proc_address));
    MEMBRIDGE_TRY(load(f->library, "glfwSwapInterval", f->swap_interval));
    MEMBRIDGE_TRY(load(f->library, "glfwSwapBuffers", f->swap_buffers));
    MEMBRIDGE_TRY(load(f->library, "glfwPollEvents", f->poll_events));
    MEMBRIDGE_TRY(load(f->library, "glfwWindowShouldClose", f->window_should_close));
    MEMBRIDGE_TRY(load(f->library, "glfwGetFramebufferSize", f->get_framebuffer_size));
    return membridge::ok();
  }();
  if (!loaded)
    return error(errc::unsupported, call,
                 "libglfw.so.3 is too old (GLFW 3.3 or later is needed): " + loaded.error().message());
  if (f->init() != GLFW_TRUE)
    return error(errc::unsupported, call, "GLFW could not open the display: " + f->last_error("glfwInit failed"));
  f->initialised = true;
  f->window_hint(GLFW_CLIENT_API, GLFW_OPENGL_API);
  f->window_hint(GLFW_CONTEXT_CREATION_API, GLFW_EGL_CONTEXT_API);
  f->window_hint(GLFW_CONTEXT_VERSION_MAJOR, 4);
  f->window_hint(GLFW_CONTEXT_VERSION_MINOR, 5);
  f->window_hint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  f->window_hint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  f->window = f->create_window(static_cast<int>(width), static_cast<int>(height), title, nullptr, nullptr);
  if (f->window == nullptr) {
    std::string why = f->last_error("glfwCreateWindow failed");
    f->terminate();
    f->initialised = false;
    return error(errc::unsupported, call, "no GL 4.5 core window through EGL: " + why);
  }
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

}  // namespace heightfield
