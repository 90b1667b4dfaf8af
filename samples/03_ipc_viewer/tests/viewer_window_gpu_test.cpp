// Sample 03's viewer in a window (gpu tier; issue 16's windowed run of each sample): the producer
// simulates on the GPU, the viewer attaches and draws 120 frames in a window on the display in
// DISPLAY (scripts/gpu-window starts Xvfb for it), and its --screenshot, the window's last presented
// image, must show the overlay and the particles. On the H100 machine NVIDIA's driver cannot present
// to Xvfb, so the window relays through another Vulkan device (lavapipe; samples/common/window.hpp):
// the test prints which path ran. Without a display it fails (it needs one; nothing is skipped).
#include "demo_process.hpp"
#include "ipc_sample_process.hpp"
#include "screenshot_check.hpp"  // tests/samples

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace particles::testing {
namespace {

TEST(ipc_sample_window, viewer_window_shows_the_overlay_and_the_particles) {
  const char* display = std::getenv("DISPLAY");
  ASSERT_TRUE(display != nullptr && *display != '\0')
      << "needs a display: DISPLAY is not set (scripts/gpu-window starts Xvfb and sets it)";
  ASSERT_TRUE(std::filesystem::exists(producer_binary())) << producer_binary() << " is missing";
  ASSERT_TRUE(std::filesystem::exists(viewer_binary())) << viewer_binary() << " is missing";
  const auto shot = output_dir() / "ipc_viewer_window.png";
  std::error_code ec;
  std::filesystem::remove(shot, ec);
  // Growth every 60 frames: the window follows a growth too (1M -> 2M particles).
  const process_result r =
      run_both("window", "--frames 0 --grow-every 60 --max-particles 2M",
               "--frames 120 --width 480 --height 320 --reconnect-ms 15000 --screenshot " + shot.string());
  std::printf("%s", r.out.c_str());
  ASSERT_EQ(r.exit_status, 0) << describe(r);
  EXPECT_NE(r.out.find("window: swapchain 480x320"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("followed growth to 2097152 particles"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote " + shot.string() + " (the window's last image, overlay included)"), std::string::npos)
      << r.out;
  const bool relayed = r.out.find("; relayed through ") != std::string::npos;
  std::printf("viewer window: %s\n", relayed ? "relayed through another device" : "presented directly");

  const membridge::testing::screenshot_counts c = membridge::testing::check_screenshot(shot, {3, 3, 5});
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::printf("screenshot %ux%u: panel %zu, text %zu, scene lit %zu pixels\n", c.width, c.height, c.panel_background,
              c.panel_text, c.scene_lit);
  EXPECT_EQ(c.width, 480U) << "the screenshot is the window's image";
  EXPECT_EQ(c.height, 320U);
  EXPECT_GT(c.panel_background, 1500U) << "the overlay's panel in the top-left corner";
  EXPECT_GT(c.panel_text, 150U) << "the overlay's text";
  EXPECT_GT(c.scene_lit, 1000U) << "the particles below the overlay";
}

}  // namespace
}  // namespace particles::testing
