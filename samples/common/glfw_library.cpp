// GLFW through dlopen (membridge::os::dynamic_library): the windowed samples' common part.
#include "glfw_library.hpp"

#include <cstdlib>
#include <utility>

namespace samples {

using membridge::errc;
using membridge::error;
using membridge::result;

namespace {

/// The soname the samples open (GLFW 3).
constexpr const char* library_name = "libglfw.so.3";

/// True when the environment variable `name` is set and not empty.
bool env_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

/// Loads the functions every windowed sample calls into `glfw`.
result<void> load_common(glfw_library& glfw) {
  MEMBRIDGE_TRY(glfw.load("glfwInit", glfw.init));
  MEMBRIDGE_TRY(glfw.load("glfwTerminate", glfw.terminate));
  MEMBRIDGE_TRY(glfw.load("glfwGetError", glfw.get_error));
  MEMBRIDGE_TRY(glfw.load("glfwWindowHint", glfw.window_hint));
  MEMBRIDGE_TRY(glfw.load("glfwCreateWindow", glfw.create_window));
  MEMBRIDGE_TRY(glfw.load("glfwDestroyWindow", glfw.destroy_window));
  MEMBRIDGE_TRY(glfw.load("glfwWindowShouldClose", glfw.window_should_close));
  MEMBRIDGE_TRY(glfw.load("glfwPollEvents", glfw.poll_events));
  MEMBRIDGE_TRY(glfw.load("glfwGetFramebufferSize", glfw.get_framebuffer_size));
  return membridge::ok();
}

/// Opens libglfw.so.3 into `glfw.library`. Errors: unsupported (named `call`) when it cannot be loaded.
result<void> open_library(glfw_library& glfw, const char* call) {
  auto library = membridge::os::dynamic_library::open(library_name);
  if (!library)
    return error(errc::unsupported, call,
                 "GLFW cannot be loaded (Debian: libglfw3): " + std::string(library.error().native_name()));
  glfw.library = std::move(*library);
  return membridge::ok();
}

/// Loads the common functions, then `load_extra`'s. Errors: unsupported (named `call`) when one is
/// missing: the library is older than GLFW 3.3.
result<void> load_functions(glfw_library& glfw, const char* call, const glfw_library::load_extra_fn& load_extra) {
  result<void> loaded = load_common(glfw);
  if (loaded && load_extra) loaded = load_extra();
  if (!loaded)
    return error(errc::unsupported, call,
                 std::string(library_name) + " is too old (GLFW 3.3 or later is needed): " + loaded.error().message());
  return membridge::ok();
}

}  // namespace

bool display_set() { return env_set("DISPLAY") || env_set("WAYLAND_DISPLAY"); }

glfw_library::~glfw_library() {
  if (initialised) terminate();
}

result<void> glfw_library::open(const char* call, const load_extra_fn& load_extra) {
  if (!display_set()) return error(errc::unsupported, call, "DISPLAY and WAYLAND_DISPLAY are not set");
  MEMBRIDGE_TRY(open_library(*this, call));
  MEMBRIDGE_TRY(load_functions(*this, call, load_extra));
  if (init() != GLFW_TRUE)
    return error(errc::unsupported, call, "GLFW could not open the display: " + last_error("glfwInit failed"));
  initialised = true;
  return membridge::ok();
}

std::string glfw_library::last_error(const char* fallback) const {
  const char* description = nullptr;
  if (get_error != nullptr && get_error(&description) != GLFW_NO_ERROR && description != nullptr) return description;
  return fallback;
}

}  // namespace samples
