// membridge_particles run the way users run it (a child process): headless on the CPU path with
// validation on, the image it writes checked against what the renderer draws; command-line errors;
// the fallback without a display; and windowed mode under Xvfb (fails without xvfb-run).
// Label vulkan: needs a Vulkan driver (lavapipe in CI).
#include "demo_process.hpp"
#include "png_writer.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

namespace particles::testing {
namespace {

using namespace std::chrono_literals;

/// The renderer's default background (clear colour 0.01, 0.01, 0.02 as UNORM8).
constexpr std::array<std::uint8_t, 3> background = {3, 3, 5};

/// Runs membridge_particles with `args`; fails the test if it cannot be started.
process_result run_demo(const std::vector<std::string>& args, const std::string& label,
                        std::chrono::seconds limit = 240s, const std::vector<std::string>& unset = {},
                        const std::vector<std::string>& set = {}) {
  std::vector<std::string> argv{demo_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_process(argv, label, limit, unset, set);
  EXPECT_TRUE(r) << (r ? "" : r.error().message());
  return r ? *r : process_result{};
}

std::string describe(const process_result& r) {
  return "exit status " + std::to_string(r.exit_status) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Checks that `png` holds the particle disc as the renderer draws 200000 particles at 1280x720 with
/// the sample's settings, with either render method (they draw the same picture: splat sums exactly,
/// points rounds every blend to 8 bits and snaps positions to the rasteriser's grid, so ~3% of the
/// pixels differ, nearly all by 1-2 levels). Measured on lavapipe (CPU path, seed 1, 20 and 60 frames):
/// splat (the default): 59260-59377 lit pixels (6.4% of the image), 122-124 of 512 colour buckets,
/// mean RGB (132, 208, 182), dominant channel G 64% (the cyan middle of the speed palette), R 32%
/// (the white/orange core and fast particles), B 4.1% (slow particles at the rim); points: 59280-59385
/// lit, 123-126 buckets, mean RGB (132, 208, 182), dominant G 64%, R 32%, B 3.8-3.9%. Asserted with
/// wide margins: a blank, flat, shifted or channel-swapped image fails.
void expect_disc(const std::filesystem::path& png) {
  auto image = apps::read_png(png);
  ASSERT_TRUE(image) << image.error().message();
  ASSERT_EQ(image->width, 1280U);
  ASSERT_EQ(image->height, 720U);
  const apps::image_summary s = apps::image_stats(image->pixels, image->width, image->height, background);
  std::printf("image: %zu lit of %zu pixels, %zu colour buckets, mean RGB %.1f %.1f %.1f, dominant R/G/B %zu/%zu/%zu\n",
              s.lit_pixels, s.pixels, s.colour_buckets, s.mean_rgb[0], s.mean_rgb[1], s.mean_rgb[2], s.dominant[0],
              s.dominant[1], s.dominant[2]);
  EXPECT_GT(s.lit_pixels, s.pixels * 3 / 100) << "the disc should cover 3-12% of the image";
  EXPECT_LT(s.lit_pixels, s.pixels * 12 / 100) << "the disc should cover 3-12% of the image";
  EXPECT_GE(s.colour_buckets, 60U) << "the speed palette and additive blending give many colours";
  const auto lit = static_cast<double>(s.lit_pixels);
  EXPECT_GT(static_cast<double>(s.dominant[1]), 0.40 * lit) << "most lit pixels are cyan (green-dominant)";
  EXPECT_GT(static_cast<double>(s.dominant[0]), 0.15 * lit) << "the core and fast particles are white/orange";
  EXPECT_GT(static_cast<double>(s.dominant[2]), 0.005 * lit) << "slow particles at the rim are blue";
  EXPECT_GT(s.mean_rgb[1], s.mean_rgb[2]) << "mean colour: green > blue > red";
  EXPECT_GT(s.mean_rgb[2], s.mean_rgb[0]) << "mean colour: green > blue > red";
  EXPECT_GT(s.mean_rgb[1], 150.0);
}

TEST(particles_demo, headless_cpu_run_writes_the_disc_with_no_validation_message) {
  const auto png = output_dir() / "headless_cpu.png";
  std::filesystem::remove(png);
  const process_result r = run_demo(
      {"--headless", "--cpu", "--validation", "--particles", "200000", "--frames", "20", "--out", png.string()},
      "headless_cpu");
  ASSERT_EQ(r.exit_status, 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "membridge_particles: CPU path (--cpu) on ")) << r.out;
  EXPECT_TRUE(contains(r.out, ": 200000 particles, 1 step/frame, 3 slots, 1280x720, headless, 20 frames")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nrender: splat (compute: ")) << "splat is the default\n" << r.out;
  EXPECT_TRUE(contains(r.out, "\nframes 10  median ")) << r.out;
  EXPECT_TRUE(contains(r.out, "(first 10 frames not counted)")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nwrote " + png.string() + " (1280x720, frame 19)")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nvalidation: 0 messages\n")) << r.out;
  EXPECT_EQ(r.err, "") << "validation messages or errors on stderr";
  expect_disc(png);
}

TEST(particles_demo, render_points_draws_the_same_disc_with_no_validation_message) {
  const auto png = output_dir() / "headless_cpu_points.png";
  std::filesystem::remove(png);
  const process_result r = run_demo({"--headless", "--cpu", "--validation", "--particles", "200000", "--frames", "20",
                                     "--render", "points", "--out", png.string()},
                                    "headless_cpu_points");
  ASSERT_EQ(r.exit_status, 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "\nrender: points (graphics pipeline: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nwrote " + png.string() + " (1280x720, frame 19)")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nvalidation: 0 messages\n")) << r.out;
  EXPECT_EQ(r.err, "") << "validation messages or errors on stderr";
  expect_disc(png);
}

TEST(particles_demo, a_bad_render_method_is_a_usage_error) {
  const process_result r = run_demo({"--headless", "--render", "triangles"}, "bad_render", 60s);
  EXPECT_EQ(r.exit_status, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "--render")) << r.err;
  EXPECT_FALSE(contains(r.out, "membridge_particles:")) << "nothing may run: " << r.out;
}

TEST(particles_demo, a_bad_particle_count_is_a_usage_error) {
  for (const char* bad : {"12x", "0", "-5", "65M", "1.5M", ""}) {
    const process_result r = run_demo({"--headless", "--particles", bad}, "bad_count", 60s);
    EXPECT_EQ(r.exit_status, 1) << "--particles '" << bad << "'\n" << describe(r);
    EXPECT_TRUE(contains(r.err, "--particles")) << r.err;
    EXPECT_TRUE(contains(r.err, "Run with --help")) << r.err;
    EXPECT_FALSE(contains(r.out, "membridge_particles:")) << "nothing may run: " << r.out;
  }
}

TEST(particles_demo, an_unknown_flag_is_a_usage_error) {
  const process_result r = run_demo({"--headless", "--bogus"}, "unknown_flag", 60s);
  EXPECT_EQ(r.exit_status, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "--bogus")) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(particles_demo, out_of_range_values_are_usage_errors) {
  const std::vector<std::vector<std::string>> cases = {
      {"--slots", "0"}, {"--slots", "9"}, {"--steps", "-1"}, {"--width", "8"}, {"--headless", "--frames", "0"}};
  for (const auto& args : cases) {
    const process_result r = run_demo(args, "out_of_range", 60s);
    EXPECT_EQ(r.exit_status, 1) << args[0] << " " << args[1] << "\n" << describe(r);
    EXPECT_FALSE(r.err.empty());
  }
}

TEST(particles_demo, help_lists_the_options_and_exits_0) {
  const process_result r = run_demo({"--help"}, "help", 60s);
  EXPECT_EQ(r.exit_status, 0) << describe(r);
  for (const char* option : {"--headless", "--frames", "--out", "--particles", "--steps", "--slots", "--width",
                             "--height", "--cpu", "--render", "--validation", "--seed", "--render-device", "--sim-device"})
    EXPECT_TRUE(contains(r.out, option)) << option;
}

TEST(particles_demo, without_a_display_it_says_so_and_runs_headless) {
  const auto png = output_dir() / "no_display.png";
  std::filesystem::remove(png);
  const process_result r =
      run_demo({"--cpu", "--validation", "--particles", "50000", "--frames", "3", "--out", png.string()}, "no_display",
               120s, {"DISPLAY", "WAYLAND_DISPLAY"});
  ASSERT_EQ(r.exit_status, 0) << describe(r);
  EXPECT_TRUE(contains(r.out,
                       "membridge_particles: no usable display (DISPLAY and WAYLAND_DISPLAY are not set); "
                       "running headless\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "headless, 3 frames")) << r.out;
  EXPECT_TRUE(std::filesystem::exists(png));
}

TEST(particles_demo, without_a_cuda_device_it_says_so_and_runs_the_cpu_path_unless_a_gpu_is_required) {
  const auto png = output_dir() / "fallback.png";
  const process_result r = run_demo({"--headless", "--particles", "4K", "--frames", "2", "--out", png.string()},
                                    "fallback", 120s, {"MEMBRIDGE_REQUIRE_GPU"});
  ASSERT_EQ(r.exit_status, 0) << describe(r);
  if (contains(r.out, "GPU path (CUDA -> Vulkan, zero copy)")) GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_TRUE(contains(r.out, "membridge_particles: no CUDA device (")) << r.out;
  EXPECT_TRUE(contains(r.out, "); running the CPU simulation so the renderer still works\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "membridge_particles: CPU path (no CUDA device) on ")) << r.out;

  // scripts/gpu-run sets MEMBRIDGE_REQUIRE_GPU=1: there the fallback would hide a broken GPU setup.
  const process_result required = run_demo({"--headless", "--particles", "4K", "--frames", "2", "--out", png.string()},
                                           "fallback_required", 120s, {}, {"MEMBRIDGE_REQUIRE_GPU=1"});
  EXPECT_EQ(required.exit_status, 2) << describe(required);
  EXPECT_TRUE(contains(required.err, "and MEMBRIDGE_REQUIRE_GPU=1")) << required.err;
}

TEST(particles_demo, windowed_under_xvfb_presents_60_frames_with_no_validation_message) {
  const auto xvfb_run = find_in_path("xvfb-run");
  ASSERT_FALSE(xvfb_run.empty()) << "xvfb-run is not installed (Debian: xvfb, xauth)";
  const auto png = output_dir() / "windowed.png";
  std::filesystem::remove(png);
  const auto r = run_process({xvfb_run.string(), "-a", "-s", "-screen 0 1280x1024x24", demo_binary().string(), "--cpu",
                              "--validation", "--particles", "200000", "--frames", "60", "--out", png.string()},
                             "windowed", 240s);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->exit_status, 0) << describe(*r);
  EXPECT_FALSE(contains(r->out, "no usable display")) << r->out;
  EXPECT_TRUE(contains(r->out, "1280x720, window, 60 frames\n")) << r->out;
  EXPECT_TRUE(contains(r->out, "\nwindow: swapchain 1280x720 ")) << r->out;
  EXPECT_TRUE(contains(r->out, "\nframes 50  median ")) << r->out;
  EXPECT_TRUE(contains(r->out, "\nvalidation: 0 messages\n")) << r->out;
  EXPECT_FALSE(contains(r->err, "validation")) << r->err;
  expect_disc(png);
}

}  // namespace
}  // namespace particles::testing
