// samples tier: the drawing samples windowed under Xvfb on their CPU paths (Mesa lavapipe for
// Vulkan, llvmpipe for GL), each writing --screenshot (the window's last presented image); the
// screenshot must show the overlay (its panel and text in the top-left corner) and the scene.
#include "demo_process.hpp"       // samples/01_particles/tests: child processes with a time limit
#include "screenshot_check.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace membridge::testing {
namespace {

using namespace std::chrono_literals;
namespace pt = particles::testing;
using pt::process_result;

/// The window's size in every run: small, so lavapipe and llvmpipe draw quickly.
constexpr std::uint32_t width = 480;
constexpr std::uint32_t height = 320;

std::string describe(const process_result& r) {
  return "exit " + std::to_string(r.exit_status) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

/// Runs `argv` under xvfb-run (a fresh X server) with the environment plus `set` ("NAME=VALUE") and
/// returns what it did; fails the test when xvfb-run is missing (Debian: xvfb, xauth) or the process
/// cannot start.
std::optional<process_result> run_under_xvfb(std::vector<std::string> argv, const std::string& label,
                                             const std::vector<std::string>& set = {}) {
  const auto xvfb_run = pt::find_in_path("xvfb-run");
  if (xvfb_run.empty()) {
    ADD_FAILURE() << "xvfb-run is not installed (Debian: xvfb, xauth)";
    return std::nullopt;
  }
  argv.insert(argv.begin(), {xvfb_run.string(), "-a", "-s", "-screen 0 1024x768x24"});
  auto r = pt::run_process(argv, label, 120s, {"MEMBRIDGE_WINDOW_PRESENT"}, set);
  if (!r) {
    ADD_FAILURE() << r.error().message();
    return std::nullopt;
  }
  return *r;
}

void expect_overlay_and_scene(const std::filesystem::path& png, std::array<std::uint8_t, 3> scene_background,
                              const std::string& output) {
  const screenshot_counts c = check_screenshot(png, scene_background);
  ASSERT_TRUE(c.error.empty()) << c.error << '\n' << output;
  EXPECT_EQ(c.width, width) << "the screenshot is the window's image";
  EXPECT_EQ(c.height, height);
  EXPECT_GT(c.panel_background, 1500U) << "the overlay's panel in the top-left corner";
  EXPECT_GT(c.panel_text, 150U) << "the overlay's text";
  EXPECT_GT(c.scene_lit, 1000U) << "the scene below the overlay";
}

TEST(sample_windows, particles_cpu_path_shows_the_overlay_and_the_disc) {
  const auto shot = pt::output_dir() / "particles-window.png";
  std::filesystem::remove(shot);
  const auto r = run_under_xvfb({MEMBRIDGE_PARTICLES_BINARY, "--cpu", "--validation", "--particles", "50000",
                                 "--frames", "20", "--width", std::to_string(width), "--height",
                                 std::to_string(height), "--screenshot", shot.string()},
                                "particles-window");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->exit_status, 0) << describe(*r);
  EXPECT_NE(r->out.find("wrote " + shot.string() + " (the window's last image, overlay included)"), std::string::npos)
      << r->out;
  EXPECT_NE(r->out.find("\nvalidation: 0 messages\n"), std::string::npos) << r->out;
  expect_overlay_and_scene(shot, {3, 3, 5}, describe(*r));  // the renderer's clear colour
}

/// Sample 01's CPU path windowed for 20 frames with a screenshot, relayed when `relay`.
std::optional<process_result> run_particles_window(const std::filesystem::path& shot, bool relay) {
  std::filesystem::remove(shot);
  return run_under_xvfb({MEMBRIDGE_PARTICLES_BINARY, "--cpu", "--validation", "--particles", "50000", "--frames", "20",
                         "--width", std::to_string(width), "--height", std::to_string(height), "--screenshot",
                         shot.string()},
                        relay ? "particles-window-relay" : "particles-window-direct",
                        relay ? std::vector<std::string>{"MEMBRIDGE_WINDOW_PRESENT=relay"} : std::vector<std::string>{});
}

// The relay (samples/common/window.hpp: a rendering device that cannot present hands each frame through
// host memory to one that can), forced onto lavapipe, the only device here: the window shows the very
// pixels the direct window shows (the CPU simulation is deterministic), overlay included.
TEST(sample_windows, relayed_window_shows_the_same_image_as_the_direct_one) {
  const auto direct_shot = pt::output_dir() / "particles-window-direct.png";
  const auto relay_shot = pt::output_dir() / "particles-window-relay.png";
  const auto direct = run_particles_window(direct_shot, false);
  const auto relayed = run_particles_window(relay_shot, true);
  ASSERT_TRUE(direct && relayed);
  ASSERT_EQ(direct->exit_status, 0) << describe(*direct);
  ASSERT_EQ(relayed->exit_status, 0) << describe(*relayed);
  EXPECT_EQ(direct->out.find("relayed through"), std::string::npos) << direct->out;
  EXPECT_NE(relayed->out.find("; relayed through llvmpipe"), std::string::npos) << relayed->out;
  EXPECT_NE(relayed->out.find("(MEMBRIDGE_WINDOW_PRESENT=relay)"), std::string::npos) << relayed->out;
  EXPECT_NE(relayed->out.find("\nvalidation: 0 messages\n"), std::string::npos) << relayed->out;
  expect_overlay_and_scene(relay_shot, {3, 3, 5}, describe(*relayed));
  auto a = apps::read_png(direct_shot);
  auto b = apps::read_png(relay_shot);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->width, b->width);
  ASSERT_EQ(a->height, b->height);
  // Below the overlay panel (its text holds the frame rate, which differs) every pixel is the same.
  const std::size_t from = std::size_t{screenshot_scene_top} * a->width * 4;
  ASSERT_EQ(a->pixels.size(), b->pixels.size());
  std::size_t differing = 0;
  for (std::size_t i = from; i < a->pixels.size(); ++i) if (a->pixels[i] != b->pixels[i]) ++differing;
  EXPECT_EQ(differing, 0U) << "bytes below row " << screenshot_scene_top << " that differ between direct and relayed";
}

TEST(sample_windows, an_unknown_present_choice_is_refused) {
  const auto r = run_under_xvfb({MEMBRIDGE_PARTICLES_BINARY, "--cpu", "--particles", "1000", "--frames", "2"},
                                "particles-window-bad-present", {"MEMBRIDGE_WINDOW_PRESENT=sideways"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_status, 2) << describe(*r);
  EXPECT_NE(r->err.find("MEMBRIDGE_WINDOW_PRESENT=sideways: expected auto, direct or relay"), std::string::npos)
      << describe(*r);
}

TEST(sample_windows, particles_screenshot_needs_a_window) {
  const auto r = pt::run_process({MEMBRIDGE_PARTICLES_BINARY, "--headless", "--screenshot", "x.png"}, "particles-shot-headless",
                             30s);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_status, 1) << describe(*r);
  EXPECT_NE(r->err.find("--headless excludes --screenshot"), std::string::npos) << r->err;
}

#ifdef MEMBRIDGE_HEIGHTFIELD_BINARY
TEST(sample_windows, heightfield_cpu_path_shows_the_overlay_and_the_field) {
  const auto shot = pt::output_dir() / "heightfield-window.png";
  std::filesystem::remove(shot);
  const auto r = run_under_xvfb({MEMBRIDGE_HEIGHTFIELD_BINARY, "--cpu", "--grid", "128", "--frames", "20", "--width",
                                 std::to_string(width), "--height", std::to_string(height), "--screenshot",
                                 shot.string()},
                                "heightfield-window");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->exit_status, 0) << describe(*r);
  EXPECT_NE(r->out.find("wrote " + shot.string() + " (the window's last image, overlay included)"), std::string::npos)
      << r->out;
  expect_overlay_and_scene(shot, {10, 13, 18}, describe(*r));  // heightfield::background_rgb
}
#endif

}  // namespace
}  // namespace membridge::testing
