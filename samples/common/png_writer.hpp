// samples/common/png_writer.hpp: RGBA8 images to and from PNG files (stb_image_write /
// stb_image), and the statistics tests use to check that a rendered image is not blank.
#pragma once

#include <membridge/core/result.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace apps {

/// An RGBA8 image, rows top to bottom, 4 bytes per pixel, no padding.
struct rgba_image {
  std::uint32_t width = 0;            ///< Pixels per row.
  std::uint32_t height = 0;           ///< Rows.
  std::vector<std::uint8_t> pixels;   ///< width * height * 4 bytes.
};

/// Writes `rgba` (width * height * 4 bytes, rows top to bottom) to `path` as a PNG.
/// Errors: invalid_argument when the size does not match or is 0; os_error (errno) when the file cannot
/// be written; internal when the PNG encoder fails.
[[nodiscard]] membridge::result<void> write_png(const std::filesystem::path& path, std::span<const std::uint8_t> rgba,
                                                std::uint32_t width, std::uint32_t height);

/// Reads a PNG (any colour type; converted to RGBA8).
/// Errors: os_error when the file cannot be read; invalid_argument when it is not a PNG stb can decode.
[[nodiscard]] membridge::result<rgba_image> read_png(const std::filesystem::path& path);

/// What image_stats() finds in an image.
struct image_summary {
  std::size_t pixels = 0;             ///< width * height.
  std::size_t lit_pixels = 0;         ///< Pixels that differ from the background by more than the threshold.
  std::size_t colour_buckets = 0;     ///< Distinct colours among lit pixels, quantised to 3 bits per channel (max 512).
  std::array<double, 3> mean_rgb{};   ///< Mean R, G, B (0..255) over lit pixels (0 when none).
  std::array<std::size_t, 3> dominant{};  ///< Lit pixels whose largest channel is R, G, B (ties go to the first).
};

/// Counts the pixels of `rgba` (width * height * 4 bytes) that are not `background` (a pixel is lit when
/// some channel of R, G, B differs from it by more than `threshold`), the distinct colours among them,
/// their mean colour and dominant channels. A size mismatch yields an all-zero summary.
[[nodiscard]] image_summary image_stats(std::span<const std::uint8_t> rgba, std::uint32_t width, std::uint32_t height,
                                        std::array<std::uint8_t, 3> background, int threshold = 24);

}  // namespace apps
