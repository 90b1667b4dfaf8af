// The overlay's text panel: its size follows the text, the text is drawn in its colour on the
// panel's background, and the frame line summarises the latest frames.
#include "overlay_text.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace apps {
namespace {

std::size_t count_rgb(const rgba_image& image, std::array<std::uint8_t, 3> rgb) {
  std::size_t n = 0;
  for (std::size_t i = 0; i + 3 < image.pixels.size(); i += 4)
    if (image.pixels[i] == rgb[0] && image.pixels[i + 1] == rgb[1] && image.pixels[i + 2] == rgb[2]) ++n;
  return n;
}

TEST(overlay_text, panel_holds_the_text_on_its_background) {
  const std::vector<std::string> lines{"60.0 FPS  median 16.67 ms", "65536 particles  2.0 MiB"};
  const rgba_image panel = render_overlay(lines, 2);
  ASSERT_GT(panel.width, 100u);
  EXPECT_EQ(panel.height, 2u * 12u * 2u + 2u * 8u);
  ASSERT_EQ(panel.pixels.size(), std::size_t{panel.width} * panel.height * 4);
  const std::size_t text = count_rgb(panel, overlay_text_colour);
  const std::size_t background = count_rgb(panel, overlay_background);
  EXPECT_GT(text, 300u);  // the strokes of ~50 glyphs plus the top rule
  EXPECT_GT(background, text);
  EXPECT_EQ(text + background, std::size_t{panel.width} * panel.height);
  // Longer text makes a wider panel; a limit cuts it.
  const std::vector<std::string> longer{lines[0] + lines[0]};
  EXPECT_GT(render_overlay(longer, 2).width, panel.width);
  EXPECT_EQ(render_overlay(longer, 2, 64, 20).width, 64u);
  EXPECT_EQ(render_overlay(longer, 2, 64, 20).height, 20u);
  EXPECT_TRUE(render_overlay({}, 2).pixels.empty());
}

TEST(overlay_text, frame_line_summarises_the_latest_frames) {
  frame_stats stats;
  EXPECT_EQ(overlay_frame_line(stats), "no frames yet");
  for (int i = 0; i < 100; ++i) stats.add(100.0);  // old, slow frames outside the window
  for (int i = 0; i < 10; ++i) stats.add(10.0);
  EXPECT_EQ(overlay_frame_line(stats, 10), "100.0 FPS  median 10.00 ms  p99 10.00 ms");
}

TEST(overlay_text, clock_and_byte_text) {
  overlay_clock clock(std::chrono::milliseconds(250));
  const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::seconds(5);
  EXPECT_TRUE(clock.due(t0));
  EXPECT_FALSE(clock.due(t0 + std::chrono::milliseconds(100)));
  EXPECT_TRUE(clock.due(t0 + std::chrono::milliseconds(260)));
  EXPECT_EQ(byte_text(100), "100 B");
  EXPECT_EQ(byte_text(2048), "2 KiB");
  EXPECT_EQ(byte_text(3u << 20), "3.0 MiB");
  EXPECT_EQ(byte_text(3ull << 30), "3.00 GiB");
}

}  // namespace
}  // namespace apps
