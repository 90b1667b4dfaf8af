// The overlay's text: stb_easy_font turns text into axis-aligned quads (its "pixels"); each is filled
// here, scaled, into the RGBA8 panel.
#include "overlay_text.hpp"

#include <stb/stb_easy_font.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace apps {

namespace {

/// One stb_easy_font vertex: position and a colour the panel ignores.
struct easy_font_vertex {
  float x;
  float y;
  float z;
  std::uint8_t colour[4];
};

constexpr std::uint32_t line_height = 12;  ///< stb_easy_font's line advance, in font pixels.

void fill(rgba_image& image, std::int64_t x0, std::int64_t y0, std::int64_t x1, std::int64_t y1,
          std::array<std::uint8_t, 3> rgb) {
  x0 = std::clamp<std::int64_t>(x0, 0, image.width);
  x1 = std::clamp<std::int64_t>(x1, 0, image.width);
  y0 = std::clamp<std::int64_t>(y0, 0, image.height);
  y1 = std::clamp<std::int64_t>(y1, 0, image.height);
  for (std::int64_t y = y0; y < y1; ++y)
    for (std::int64_t x = x0; x < x1; ++x) {
      std::uint8_t* p = &image.pixels[(static_cast<std::size_t>(y) * image.width + static_cast<std::size_t>(x)) * 4];
      p[0] = rgb[0];
      p[1] = rgb[1];
      p[2] = rgb[2];
      p[3] = 255;
    }
}

}  // namespace

rgba_image render_overlay(std::span<const std::string> lines, std::uint32_t scale, std::uint32_t max_width,
                          std::uint32_t max_height) {
  if (lines.empty() || scale == 0) return {};
  const std::uint32_t border = 4 * scale;
  std::uint32_t text_width = 0;
  for (const std::string& line : lines) {
    std::string copy = line;  // stb_easy_font takes a mutable string
    text_width = std::max(text_width, static_cast<std::uint32_t>(stb_easy_font_width(copy.data())));
  }
  rgba_image image;
  image.width = std::min(max_width, text_width * scale + 2 * border);
  image.height = std::min(max_height, static_cast<std::uint32_t>(lines.size()) * line_height * scale + 2 * border);
  image.pixels.resize(static_cast<std::size_t>(image.width) * image.height * 4);
  fill(image, 0, 0, image.width, image.height, overlay_background);
  std::vector<easy_font_vertex> quads(4 * 1024);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string copy = lines[i];
    const int count = stb_easy_font_print(0, static_cast<float>(i) * static_cast<float>(line_height), copy.data(), nullptr, quads.data(),
                                          static_cast<int>(quads.size() * sizeof(easy_font_vertex)));
    for (int q = 0; q < count; ++q) {
      const easy_font_vertex& a = quads[static_cast<std::size_t>(q) * 4];      // top-left
      const easy_font_vertex& c = quads[static_cast<std::size_t>(q) * 4 + 2];  // bottom-right
      const auto at = [&](float v) { return static_cast<std::int64_t>(border) + static_cast<std::int64_t>(v * static_cast<float>(scale)); };
      fill(image, at(a.x), at(a.y), at(c.x), at(c.y), overlay_text_colour);
    }
  }
  fill(image, 0, 0, image.width, scale, overlay_text_colour);  // a rule along the top edge
  return image;
}

std::string overlay_frame_line(const frame_stats& stats, std::size_t window) {
  const std::size_t first = stats.count() > window ? stats.count() - window : 0;
  const frame_summary s = stats.summary(first);
  if (s.count == 0) return "no frames yet";
  char text[96];
  (void)std::snprintf(text, sizeof text, "%.1f FPS  median %.2f ms  p99 %.2f ms", s.fps, s.median_ms, s.p99_ms);
  return text;
}

bool overlay_clock::due(std::chrono::steady_clock::time_point now) noexcept {
  if (started_ && now - last_ < interval_) return false;
  started_ = true;
  last_ = now;
  return true;
}

std::string byte_text(std::uint64_t bytes) {
  char text[48];
  if (bytes >= (1ull << 30)) (void)std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  else if (bytes >= (1ull << 20)) (void)std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1ull << 20));
  else if (bytes >= 1024) (void)std::snprintf(text, sizeof text, "%llu KiB", static_cast<unsigned long long>(bytes / 1024));
  else (void)std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  return text;
}

}  // namespace apps
