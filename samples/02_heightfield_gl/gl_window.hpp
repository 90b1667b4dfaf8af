// samples/02_heightfield_gl/gl_window.hpp: the windowed mode. GLFW is loaded at run time
// (libglfw.so.3), so the binary starts where GLFW is missing (a headless GPU server).
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/gl/context.hpp>
#include <membridge/gl/headless_context.hpp>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

namespace heightfield {

/// A GLFW window with an OpenGL 4.5 core context made through EGL (GLFW_EGL_CONTEXT_API), so the
/// window uses the same EGL/GL stack as the headless mode. The context is current on the thread that
/// opened the window. Destruction destroys the window and terminates GLFW.
class gl_window {
 public:
  /// Loads GLFW, opens the display and a `width` x `height` window with a GL 4.5 core context on
  /// EGL, makes it current and turns vsync off (swap interval 0).
  /// Errors: unsupported when no display is set, GLFW is missing or cannot make the window/context.
  [[nodiscard]] static membridge::result<std::unique_ptr<gl_window>> open(std::uint32_t width, std::uint32_t height,
                                                                         const char* title);
  gl_window(const gl_window&) = delete;
  gl_window& operator=(const gl_window&) = delete;
  ~gl_window();

  /// glfwGetProcAddress, for gl::context::adopt_current.
  [[nodiscard]] membridge::gl::get_proc_address_fn get_proc_address() const noexcept;
  /// True once the user closed the window.
  [[nodiscard]] bool should_close() const;
  /// The framebuffer size now (0 x 0 while minimised).
  void framebuffer_size(int& width, int& height) const;
  /// Swaps the buffers and processes events.
  void present();

 private:
  struct functions;
  explicit gl_window(std::unique_ptr<functions> f) noexcept;
  std::unique_ptr<functions> f_;
};

/// Where a path draws: a window's adopted GL context, or a headless one.
struct gl_target {
  std::unique_ptr<gl_window> window;        ///< Set when windowed.
  membridge::gl::headless_context headless;  ///< The context when no window opened.
  membridge::gl::context adopted;            ///< The window's context.
  /// The context drawn with.
  [[nodiscard]] const membridge::gl::context& gl() const noexcept { return window ? adopted : headless.gl(); }
};

/// Opens the `width` x `height` window titled `title` into `target` and adopts its context with
/// `adopt` (errors get `adopt_context`). When no window can be opened: prints why to `out` as
/// `membridge_heightfield_gl: no usable window (...); running headless` and leaves `target.window`
/// empty (the caller goes headless). Errors: the adoption's.
[[nodiscard]] membridge::result<void> open_window(gl_target& target, std::uint32_t width, std::uint32_t height,
                                                  const char* title, const membridge::gl::adopt_options& adopt,
                                                  const std::string& adopt_context, std::ostream& out);

}  // namespace heightfield
