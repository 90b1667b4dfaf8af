// samples/02_heightfield_gl/gl_overlay.hpp: the window's overlay in GL (the apps layer's text panel,
// samples/common/overlay_text.hpp, uploaded to a texture and blitted into the window's top-left corner)
// and the screenshot of the window's back buffer. Windowed runs only: headless PNGs never hold it.
#pragma once

#include <membridge/core/result.hpp>

#include <epoxy/gl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace heightfield {

/// The overlay's texture and framebuffer, made on first use in the current GL context (which must be
/// current when it is destroyed). Move-less: one per frame loop.
class gl_overlay {
 public:
  gl_overlay() = default;
  gl_overlay(const gl_overlay&) = delete;
  gl_overlay& operator=(const gl_overlay&) = delete;
  ~gl_overlay();

  /// The text from now on: drawn into the panel and uploaded when it changed.
  void set_lines(std::vector<std::string> lines);
  /// Blits the panel into the default framebuffer (`width` x `height`), overlay_margin from its
  /// top-left corner; nothing before set_lines().
  void draw(int width, int height) const;

 private:
  GLuint texture_ = 0;
  GLuint fbo_ = 0;
  GLint width_ = 0;
  GLint height_ = 0;
  std::vector<std::string> lines_;
};

/// The default framebuffer's back buffer (`width` x `height`), RGBA8 rows top to bottom: what the
/// next swap shows. Errors: a GL error of the read.
[[nodiscard]] membridge::result<std::vector<std::uint8_t>> read_window_pixels(int width, int height);

}  // namespace heightfield
