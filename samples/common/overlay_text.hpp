// samples/common/overlay_text.hpp: the windows' overlay: a few lines of text (frame statistics and the
// sizes being drawn) drawn on the CPU into a small RGBA8 panel that the window copies into the top-left
// corner of each presented image. Only windows show it: headless PNGs never hold it.
#pragma once

#include "frame_stats.hpp"
#include "png_writer.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace apps {

/// The panel's background (opaque, so a screenshot test can find it) and its text colour, RGB.
inline constexpr std::array<std::uint8_t, 3> overlay_background{16, 20, 36};
inline constexpr std::array<std::uint8_t, 3> overlay_text_colour{240, 240, 160};
/// Pixels between the panel and the window's top-left corner.
inline constexpr std::uint32_t overlay_margin = 8;

/// `lines` drawn with stb_easy_font (glyphs of 1-pixel strokes, each stroke `scale` pixels wide) in
/// overlay_text_colour on an overlay_background panel with a `scale` * 4 pixel border; at most
/// `max_width` x `max_height` (longer lines and further lines are cut). Empty image for no lines.
[[nodiscard]] rgba_image render_overlay(std::span<const std::string> lines, std::uint32_t scale = 2,
                                        std::uint32_t max_width = 640, std::uint32_t max_height = 160);

/// The overlay's frame line over the last `window` frames of `stats`:
/// `61.2 FPS  median 16.31 ms  p99 18.02 ms`; `no frames yet` when there are none.
[[nodiscard]] std::string overlay_frame_line(const frame_stats& stats, std::size_t window = 120);

/// Decides when the overlay's text changes: at the first frame, then at most every `interval` (so the
/// figures stay readable instead of flickering every frame).
class overlay_clock {
 public:
  explicit overlay_clock(std::chrono::steady_clock::duration interval = std::chrono::milliseconds(250)) noexcept
      : interval_(interval) {}
  /// True when the text should be updated now (and remembers `now` as the update's time).
  bool due(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now()) noexcept;

 private:
  std::chrono::steady_clock::duration interval_;
  std::chrono::steady_clock::time_point last_{};
  bool started_ = false;
};

/// `bytes` as `12.0 MiB` / `512 KiB` / `100 B` for the overlay's size line.
[[nodiscard]] std::string byte_text(std::uint64_t bytes);

}  // namespace apps
