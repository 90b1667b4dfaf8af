#include "window_input.hpp"

#include <algorithm>
#include <cmath>

namespace apps {

namespace {

/// Wheel steps since the last update() (GLFW calls back from glfwPollEvents, on the render thread).
double scrolled = 0.0;

void on_scroll(GLFWwindow*, double, double y) { scrolled += y; }

template <class F>
membridge::result<void> load(const membridge::os::dynamic_library& library, const char* name, F& fn) {
  MEMBRIDGE_TRY_ASSIGN(void* symbol, library.symbol(name));
  fn = reinterpret_cast<F>(symbol);
  return membridge::ok();
}

}  // namespace

membridge::result<window_input> window_input::attach(void* glfw_window) {
  window_input in;
  MEMBRIDGE_TRY_ASSIGN(in.library_, membridge::os::dynamic_library::open("libglfw.so.3"));
  decltype(&::glfwSetScrollCallback) set_scroll = nullptr;
  MEMBRIDGE_TRY(load(in.library_, "glfwGetCursorPos", in.get_cursor_pos_));
  MEMBRIDGE_TRY(load(in.library_, "glfwGetMouseButton", in.get_mouse_button_));
  MEMBRIDGE_TRY(load(in.library_, "glfwSetWindowTitle", in.set_title_));
  MEMBRIDGE_TRY(load(in.library_, "glfwSetScrollCallback", set_scroll));
  in.window_ = static_cast<GLFWwindow*>(glfw_window);
  (void)set_scroll(in.window_, &on_scroll);
  return in;
}

void window_input::update(orbit& camera) {
  if (window_ == nullptr) return;
  double x = 0.0, y = 0.0;
  get_cursor_pos_(window_, &x, &y);
  const bool down = get_mouse_button_(window_, GLFW_MOUSE_BUTTON_LEFT) == GLFW_PRESS;
  if (down && dragging_ && (x != last_x_ || y != last_y_)) {
    camera.yaw_degrees -= static_cast<float>(x - last_x_) * 0.3f;
    camera.pitch_degrees = std::clamp(camera.pitch_degrees + static_cast<float>(y - last_y_) * 0.3f, -89.0f, 89.0f);
    camera.moved = true;
  }
  dragging_ = down;
  last_x_ = x;
  last_y_ = y;
  if (scrolled != 0.0) {
    camera.distance *= static_cast<float>(std::pow(0.9, scrolled));
    camera.moved = true;
    scrolled = 0.0;
  }
}

void window_input::set_title(const std::string& title) const {
  if (window_ != nullptr) set_title_(window_, title.c_str());
}

}  // namespace apps
