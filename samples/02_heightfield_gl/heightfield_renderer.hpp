// samples/02_heightfield_gl/heightfield_renderer.hpp: the heightfield drawn by OpenGL 4.5 core as a
// lit mesh, from heights in a shader storage buffer, into a framebuffer object of its own.
#pragma once

#include <membridge/core/result.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace heightfield {

/// The colour of pixels no triangle covers (RGB, 0..255): what a blank image is made of.
inline constexpr std::array<std::uint8_t, 3> background_rgb{10, 13, 18};

/// How to draw.
struct renderer_options {
  std::uint32_t width = 1280;  ///< Image width in pixels.
  std::uint32_t height = 720;  ///< Image height in pixels.
  int grid = 256;              ///< Cells per side of the field.
  int samples = 4;             ///< MSAA samples (clamped to GL_MAX_SAMPLES; 1 = none).
};

/// Which heights a frame draws: `bytes` bytes at `offset` in GL buffer `buffer` (grid * grid floats).
struct draw_input {
  unsigned int buffer = 0;  ///< GL buffer name. Ownership: borrowed.
  std::size_t offset = 0;   ///< Byte offset (a multiple of GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT).
  std::size_t bytes = 0;    ///< grid * grid * 4.
};

/// Shaders, an empty vertex array (vertices come from gl_VertexID / gl_InstanceID: one triangle strip
/// per row, instanced), a multisampled FBO and a resolved one. Needs a current GL 4.5 core context
/// whose functions libepoxy can reach (EGL or GLX) for its whole life, destruction included.
class heightfield_renderer {
 public:
  /// Compiles the shaders and makes the framebuffers.
  /// Errors: unsupported for GL older than 4.5; internal with the compile/link log or the GL error.
  [[nodiscard]] static membridge::result<heightfield_renderer> create(const renderer_options& options);

  heightfield_renderer() noexcept = default;
  heightfield_renderer(const heightfield_renderer&) = delete;
  heightfield_renderer& operator=(const heightfield_renderer&) = delete;
  heightfield_renderer(heightfield_renderer&& other) noexcept;
  heightfield_renderer& operator=(heightfield_renderer&& other) noexcept;
  ~heightfield_renderer();

  /// GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT: the offsets draw() accepts are multiples of it.
  [[nodiscard]] std::size_t storage_offset_alignment() const noexcept { return ssbo_alignment_; }
  /// MSAA samples in use.
  [[nodiscard]] int samples() const noexcept { return samples_; }

  /// Draws the field in `input` into the framebuffer (clears it first). Queues GL work only.
  /// Errors: invalid_argument for a misaligned offset or a range of the wrong size; GL errors.
  [[nodiscard]] membridge::result<void> draw(const draw_input& input);
  /// Blits the last image into the default framebuffer of a `width` x `height` window, scaled with
  /// its aspect ratio kept (black bars).
  void blit_to_default(int width, int height) const;
  /// Reads the last image back (waits for GL): RGBA8, rows top to bottom.
  [[nodiscard]] membridge::result<std::vector<std::uint8_t>> read_pixels() const;

  /// Image size.
  [[nodiscard]] std::uint32_t width() const noexcept { return options_.width; }
  [[nodiscard]] std::uint32_t height() const noexcept { return options_.height; }

 private:
  void reset() noexcept;
  void take(heightfield_renderer& other) noexcept;
  renderer_options options_{};
  unsigned int program_ = 0;
  unsigned int vertex_array_ = 0;
  unsigned int msaa_fbo_ = 0;
  unsigned int resolve_fbo_ = 0;
  std::array<unsigned int, 3> renderbuffers_{};  // msaa colour, msaa depth, resolved colour
  int mvp_location_ = -1;
  int grid_location_ = -1;
  int scale_location_ = -1;
  int light_location_ = -1;
  int eye_location_ = -1;
  std::size_t ssbo_alignment_ = 1;
  int samples_ = 1;
};

}  // namespace heightfield
