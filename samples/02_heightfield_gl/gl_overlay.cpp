// The overlay in GL: the panel (RGBA8, top row first) in a texture attached to a framebuffer, blitted
// upside down (GL's rows go bottom to top) into the window's top-left corner.
#include "gl_overlay.hpp"

#include "overlay_text.hpp"

#include <membridge/core/error.hpp>

#include <algorithm>
#include <cstring>
#include <utility>

namespace heightfield {

gl_overlay::~gl_overlay() {
  if (fbo_ != 0) glDeleteFramebuffers(1, &fbo_);
  if (texture_ != 0) glDeleteTextures(1, &texture_);
}

void gl_overlay::set_lines(std::vector<std::string> lines) {
  if (lines == lines_) return;
  lines_ = std::move(lines);
  const apps::rgba_image panel = apps::render_overlay(lines_);
  if (fbo_ != 0) glDeleteFramebuffers(1, &fbo_);
  if (texture_ != 0) glDeleteTextures(1, &texture_);
  fbo_ = 0;
  texture_ = 0;
  width_ = static_cast<GLint>(panel.width);
  height_ = static_cast<GLint>(panel.height);
  if (panel.pixels.empty()) return;
  glCreateTextures(GL_TEXTURE_2D, 1, &texture_);
  glTextureStorage2D(texture_, 1, GL_RGBA8, width_, height_);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTextureSubImage2D(texture_, 0, 0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, panel.pixels.data());
  glCreateFramebuffers(1, &fbo_);
  glNamedFramebufferTexture(fbo_, GL_COLOR_ATTACHMENT0, texture_, 0);
}

void gl_overlay::draw(int width, int height) const {
  if (fbo_ == 0 || width <= 0 || height <= 0) return;
  const auto margin = static_cast<GLint>(apps::overlay_margin);
  const GLint top = height - margin;
  // Texture row 0 is the panel's top row: it goes to the top of the destination (a flipped blit).
  glBlitNamedFramebuffer(fbo_, 0, 0, 0, width_, height_, margin, top, margin + width_, top - height_, GL_COLOR_BUFFER_BIT, GL_NEAREST);
}

membridge::result<std::vector<std::uint8_t>> read_window_pixels(int width, int height) {
  if (width <= 0 || height <= 0)
    return membridge::error(membridge::errc::invalid_argument, "read_window_pixels", "the window has no size");
  const std::size_t row = static_cast<std::size_t>(width) * 4;
  std::vector<std::uint8_t> pixels(row * static_cast<std::size_t>(height));
  glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadnPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, static_cast<GLsizei>(pixels.size()), pixels.data());
  if (const GLenum e = glGetError(); e != GL_NO_ERROR)
    return membridge::error::from_native(membridge::errc::internal, membridge::error_source::gl,
                                         static_cast<std::int64_t>(e), "GL error", "glReadnPixels",
                                         "reading the window back");
  std::vector<std::uint8_t> flipped(pixels.size());  // GL's rows go bottom to top; PNG's top to bottom
  for (int y = 0; y < height; ++y)
    std::memcpy(&flipped[static_cast<std::size_t>(y) * row], &pixels[static_cast<std::size_t>(height - 1 - y) * row],
                row);
  for (std::size_t i = 3; i < flipped.size(); i += 4) flipped[i] = 255;  // opaque, as shown
  return flipped;
}

}  // namespace heightfield
