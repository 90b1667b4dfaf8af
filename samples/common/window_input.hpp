// samples/common/window_input.hpp: the mouse and title of a window (membridge-view's, samples 01 and
// 03's): drag with the left button to orbit, the wheel to zoom. GLFW's functions are looked up in
// libglfw.so.3, which the window (window.hpp, loaded at run time) already opened.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/dynamic_library.hpp>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>  // types and constants only: the functions come from the library

#include <string>

namespace apps {

/// The orbit camera's state the mouse changes.
struct orbit {
  float yaw_degrees = 0.0f;    ///< Around the y axis.
  float pitch_degrees = 0.0f;  ///< Up from the xz plane (-89..89).
  float distance = 3.0f;       ///< From the origin.
  bool moved = false;          ///< The user moved the camera (the automatic spin stops).
};

/// Input of one GLFW window. Render thread only (GLFW's rule).
class window_input {
 public:
  /// Looks up the GLFW functions and installs the scroll callback on `glfw_window` (a GLFWwindow*).
  /// Errors: driver_unavailable when libglfw.so.3 or a function is missing.
  /// Ownership: borrows the window; it must outlive this object.
  [[nodiscard]] static membridge::result<window_input> attach(void* glfw_window);
  window_input() = default;

  /// Applies the mouse since the last call (after glfwPollEvents): a left-button drag turns the
  /// camera (0.3 degrees per pixel), each wheel step zooms by 10%.
  void update(orbit& camera);
  /// Sets the window's title.
  void set_title(const std::string& title) const;

 private:
  membridge::os::dynamic_library library_;
  GLFWwindow* window_ = nullptr;
  decltype(&::glfwGetCursorPos) get_cursor_pos_ = nullptr;
  decltype(&::glfwGetMouseButton) get_mouse_button_ = nullptr;
  decltype(&::glfwSetWindowTitle) set_title_ = nullptr;
  bool dragging_ = false;
  double last_x_ = 0.0, last_y_ = 0.0;
};

}  // namespace apps
