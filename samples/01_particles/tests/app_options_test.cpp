// The command line of membridge_particles, parsed in process: counts with suffixes, defaults per
// mode, ranges, and the brightness scaling.
#include "app_options.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace particles::app {
namespace {

parsed_command_line parse(std::vector<const char*> args) {
  args.insert(args.begin(), "membridge_particles");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

/// Every field of `got` equals that of `want`.
void expect_options(const app_options& got, const app_options& want) {
  EXPECT_EQ(got.headless, want.headless);
  EXPECT_EQ(got.frames, want.frames);
  EXPECT_EQ(got.frames_given, want.frames_given);
  EXPECT_EQ(got.out, want.out);
  EXPECT_EQ(got.screenshot, want.screenshot);
  EXPECT_EQ(got.particles, want.particles);
  EXPECT_EQ(got.steps, want.steps);
  EXPECT_EQ(got.slots, want.slots);
  EXPECT_EQ(got.width, want.width);
  EXPECT_EQ(got.height, want.height);
  EXPECT_EQ(got.cpu, want.cpu);
  EXPECT_EQ(got.render, want.render);
  EXPECT_EQ(got.validation, want.validation);
  EXPECT_EQ(got.seed, want.seed);
  EXPECT_EQ(got.render_device, want.render_device);
  EXPECT_EQ(got.sim_device, want.sim_device);
}

TEST(particles_options, counts_take_binary_suffixes) {
  EXPECT_EQ(parse_count("1"), 1U);
  EXPECT_EQ(parse_count("200000"), 200000U);
  EXPECT_EQ(parse_count("256K"), 262144U);
  EXPECT_EQ(parse_count("256k"), 262144U);
  EXPECT_EQ(parse_count("1M"), 1048576U);
  EXPECT_EQ(parse_count("4m"), 4194304U);
  EXPECT_EQ(parse_count("64M"), max_particle_count);
  EXPECT_EQ(parse_count(std::to_string(max_particle_count)), max_particle_count);
}

TEST(particles_options, bad_counts_are_refused) {
  for (const char* bad : {"", "0", "0M", "M", "-1", "+5", "1.5M", "12x", "1MB", "1 M", " 1", "65M", "67108865",
                          "99999999999999999999999"})
    EXPECT_FALSE(parse_count(bad).has_value()) << "'" << bad << "'";
}

TEST(particles_options, defaults_follow_the_design) {
  const auto p = parse({});
  ASSERT_TRUE(p.options);
  const app_options& o = *p.options;
  // Compute splatting is the default, and one GPU unless asked.
  expect_options(o, {.headless = false, .frames = 0, .frames_given = false, .out = "", .screenshot = "",
                     .particles = 1048576, .steps = 1, .slots = 3, .width = 1280, .height = 720, .cpu = false,
                     .render = render_method::splat, .validation = false, .seed = 1, .render_device = 0,
                     .sim_device = 0});

  app_options windowed = o;
  apply_mode_defaults(windowed, true);
  EXPECT_EQ(windowed.frames, 0U) << "windowed: until the window closes";
  EXPECT_TRUE(windowed.out.empty()) << "windowed: no PNG unless asked";
  app_options headless = o;
  apply_mode_defaults(headless, false);
  EXPECT_EQ(headless.frames, default_headless_frames);
  EXPECT_EQ(headless.out, "particles.png");
}

TEST(particles_options, every_option_is_read) {
  const auto p = parse({"--headless", "--frames", "12", "--out", "x.png", "--particles", "4M", "--steps", "3",
                        "--slots", "2", "--width", "640", "--height", "360", "--cpu", "--render", "points",
                        "--validation", "--seed", "42", "--render-device", "1", "--sim-device", "2"});
  ASSERT_TRUE(p.options);
  const app_options& o = *p.options;
  expect_options(o, {.headless = true, .frames = 12, .frames_given = true, .out = "x.png", .screenshot = "",
                     .particles = 4194304, .steps = 3, .slots = 2, .width = 640, .height = 360, .cpu = true,
                     .render = render_method::points, .validation = true, .seed = 42, .render_device = 1,
                     .sim_device = 2});
  app_options resolved = o;
  apply_mode_defaults(resolved, false);
  EXPECT_EQ(resolved.frames, 12U) << "a given --frames stays";
  EXPECT_EQ(resolved.out, "x.png") << "a given --out stays";
}

TEST(particles_options, a_later_option_wins) {
  const auto p = parse({"--frames", "300", "--frames", "5", "--particles", "1M", "--particles", "2K", "--render",
                        "points", "--render", "splat"});
  ASSERT_TRUE(p.options);
  EXPECT_EQ(p.options->frames, 5U);
  EXPECT_EQ(p.options->particles, 2048U);
  EXPECT_EQ(p.options->render, render_method::splat);
}

TEST(particles_options, invalid_input_is_a_usage_error) {
  const std::vector<std::vector<const char*>> cases = {
      {"--particles", "lots"}, {"--particles", "0"}, {"--slots", "0"},  {"--slots", "9"},
      {"--steps", "-1"},       {"--steps", "1001"},  {"--width", "15"}, {"--height", "20000"},
      {"--frames", "-3"},      {"--seed", "x"},      {"--bogus"},       {"--headless", "--frames", "0"},
      {"--render", "triangles"}, {"--render", "Splat"}, {"--render"},  {"positional"},
      {"--sim-device", "-1"},  {"--render-device", "x"}};
  for (const auto& args : cases) {
    const auto p = parse(args);
    EXPECT_FALSE(p.options) << args[0];
    EXPECT_EQ(p.status, exit_status::usage_error) << args[0];
  }
}

TEST(particles_options, help_exits_0_without_running) {
  const auto p = parse({"--help"});
  EXPECT_FALSE(p.options);
  EXPECT_EQ(p.status, exit_status::ok);
}

TEST(particles_options, brightness_keeps_the_total_light_of_1m_particles) {
  EXPECT_FLOAT_EQ(brightness_for(1U << 20), 0.15f);
  EXPECT_FLOAT_EQ(brightness_for(1U << 19), 0.30f);
  EXPECT_FLOAT_EQ(brightness_for(1000), 1.0f) << "clamped at 1";
  EXPECT_FLOAT_EQ(brightness_for(64U << 20), 0.0375f) << "clamped at a quarter of 0.15";
}

}  // namespace
}  // namespace particles::app
