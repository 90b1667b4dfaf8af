// tests/samples/screenshot_check.hpp: what a windowed run's screenshot (--screenshot: the window's last
// presented image) must show: the overlay panel in the top-left corner (its background and text
// colours, samples/common/overlay_text.hpp) and the scene drawn below it.
#pragma once

#include "overlay_text.hpp"  // samples/common
#include "png_writer.hpp"    // samples/common

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace membridge::testing {

/// The first screenshot row below the overlay panel: the scene is counted (and compared) from here.
inline constexpr std::uint32_t screenshot_scene_top = 96;

/// What check_screenshot() counted.
struct screenshot_counts {
  std::uint32_t width = 0;          ///< The screenshot's size.
  std::uint32_t height = 0;
  std::size_t panel_background = 0;  ///< Overlay-background pixels in the panel's corner.
  std::size_t panel_text = 0;        ///< Text-coloured pixels there.
  std::size_t scene_lit = 0;         ///< Pixels below the panel that are neither the scene's background nor black.
  std::string error;                 ///< Why the PNG could not be read (empty when read).
};

/// Reads `png` and counts, in the corner [margin, margin + 160) x [margin, margin + 40), the overlay's
/// background and text pixels, and below row 96 the pixels lit against `scene_background`.
inline screenshot_counts check_screenshot(const std::filesystem::path& png, std::array<std::uint8_t, 3> scene_background) {
  screenshot_counts c;
  auto image = apps::read_png(png);
  if (!image) {
    c.error = image.error().message();
    return c;
  }
  c.width = image->width;
  c.height = image->height;
  const auto at = [&](std::uint32_t x, std::uint32_t y) {
    const std::size_t i = (std::size_t{y} * image->width + x) * 4;
    return std::array<std::uint8_t, 3>{image->pixels[i], image->pixels[i + 1], image->pixels[i + 2]};
  };
  const std::uint32_t m = apps::overlay_margin;
  for (std::uint32_t y = m; y < std::min(image->height, m + 40); ++y)
    for (std::uint32_t x = m; x < std::min(image->width, m + 160); ++x) {
      const auto p = at(x, y);
      c.panel_background += p == apps::overlay_background ? 1U : 0U;
      c.panel_text += p == apps::overlay_text_colour ? 1U : 0U;
    }
  constexpr std::uint32_t scene_top = screenshot_scene_top;
  if (image->height > scene_top) {
    const std::size_t first = std::size_t{scene_top} * image->width * 4;
    const std::span<const std::uint8_t> below(image->pixels.data() + first, image->pixels.size() - first);
    c.scene_lit = apps::image_stats(below, image->width, image->height - scene_top, scene_background).lit_pixels;
  }
  return c;
}

}  // namespace membridge::testing
