// samples/common/glfw_library.hpp: GLFW as the windowed samples load it: at run time from
// libglfw.so.3 (membridge::os::dynamic_library), so their binaries start where GLFW is missing (a
// headless GPU server). The display check, the library, the functions every windowed sample calls and
// GLFW's last error; each sample adds the functions only it needs (Vulkan surfaces, GL contexts).
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/dynamic_library.hpp>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>  // types, constants and prototypes only: the functions come from dlsym

#include <functional>
#include <string>

namespace samples {

/// True when DISPLAY or WAYLAND_DISPLAY is set and not empty (a window can be tried).
[[nodiscard]] bool display_set();

/// GLFW loaded from libglfw.so.3 and initialised, with the functions both windowed samples call.
/// A sample derives its own struct from this one for the functions only it calls, and loads them
/// with load() from open()'s `load_extra`. glfwTerminate()s when destroyed if open() initialised
/// GLFW: destroy the windows first. Not copyable or movable (GLFW is process-global, and windows
/// keep pointers to the functions).
struct glfw_library {
  /// Loads a sample's own functions with load(); open() calls it after the common ones.
  using load_extra_fn = std::function<membridge::result<void>()>;

  /// Nothing loaded yet.
  glfw_library() = default;
  glfw_library(const glfw_library&) = delete;
  glfw_library& operator=(const glfw_library&) = delete;
  /// glfwTerminate() when GLFW was initialised, then the library is closed.
  ~glfw_library();

  /// Checks for a display, opens libglfw.so.3, loads the common functions and then `load_extra`'s,
  /// and initialises GLFW (glfwInit). Call once.
  /// Errors, all unsupported and named `call`: no display (DISPLAY and WAYLAND_DISPLAY are not set),
  /// GLFW missing, a function missing (GLFW older than 3.3), glfwInit failing (with GLFW's reason).
  [[nodiscard]] membridge::result<void> open(const char* call, const load_extra_fn& load_extra);

  /// Loads the function `name` into `fn` (a decltype(&::glfwX) pointer).
  /// Errors: the library's, when the function is missing (driver_unavailable).
  template <class F>
  [[nodiscard]] membridge::result<void> load(const char* name, F& fn) const {
    MEMBRIDGE_TRY_ASSIGN(void* symbol, library.symbol(name));
    fn = reinterpret_cast<F>(symbol);
    return membridge::ok();
  }

  /// GLFW's description of its last error, or `fallback`.
  [[nodiscard]] std::string last_error(const char* fallback) const;

  membridge::os::dynamic_library library;                           ///< libglfw.so.3, open while GLFW is used.
  decltype(&::glfwInit) init = nullptr;                             ///< glfwInit.
  decltype(&::glfwTerminate) terminate = nullptr;                   ///< glfwTerminate.
  decltype(&::glfwGetError) get_error = nullptr;                    ///< glfwGetError (GLFW 3.3).
  decltype(&::glfwWindowHint) window_hint = nullptr;                ///< glfwWindowHint.
  decltype(&::glfwCreateWindow) create_window = nullptr;            ///< glfwCreateWindow.
  decltype(&::glfwDestroyWindow) destroy_window = nullptr;          ///< glfwDestroyWindow.
  decltype(&::glfwWindowShouldClose) window_should_close = nullptr;  ///< glfwWindowShouldClose.
  decltype(&::glfwPollEvents) poll_events = nullptr;                ///< glfwPollEvents.
  decltype(&::glfwGetFramebufferSize) get_framebuffer_size = nullptr;  ///< glfwGetFramebufferSize.
  bool initialised = false;                                         ///< glfwInit succeeded (terminate when destroyed).
};

}  // namespace samples
