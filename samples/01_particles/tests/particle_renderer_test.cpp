// particle_renderer on a real Vulkan driver (lavapipe in CI) with validation on: both render methods
// draw the same picture, splat does not depend on the order of the particles, an empty frame is the
// background, and splat's argument checks (offset alignment, storage range). Label vulkan.
#include "particle_renderer.hpp"
#include "particle_sim.hpp"
#include "png_writer.hpp"

#include <membridge/vulkan/device_context.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace particles {
namespace {

constexpr std::uint32_t width = 640;
constexpr std::uint32_t height = 360;

/// A validated device_context; validation messages are printed and make the test fail at the end.
class particle_renderer_test : public ::testing::Test {
 protected:
  void SetUp() override {
    membridge::vulkan::create_options options;
    options.validation = true;
    options.on_validation_message = [](std::string_view message) {
      std::fprintf(stderr, "validation: %.*s\n", static_cast<int>(message.size()), message.data());
    };
    auto created = membridge::vulkan::device_context::create(options);
    if (!created) GTEST_SKIP() << "no Vulkan device with validation: " << created.error().message();
    context_ = std::make_unique<membridge::vulkan::device_context>(std::move(created).value());
  }

  void TearDown() override {
    if (context_) {
      EXPECT_EQ(context_->validation_message_count(), 0U) << "validation messages (printed above)";
    }
  }

  [[nodiscard]] renderer_device device() const {
    renderer_device d;
    d.get_instance_proc_addr = context_->get_instance_proc_addr();
    d.instance = context_->instance();
    d.physical_device = context_->physical_device();
    d.device = context_->device();
    d.functions = &context_->functions();
    d.queue_family = context_->graphics_queue().family;
    d.queue = context_->graphics_queue().queue;
    return d;
  }

  [[nodiscard]] static renderer_options options(render_method method) {
    renderer_options o;
    o.width = width;
    o.height = height;
    o.frame_slots = 2;
    o.method = method;
    o.brightness = 0.5f;
    return o;
  }

  /// Uploads `particles`, draws them into slot `slot` and reads the image back.
  static std::vector<std::uint8_t> draw(particle_renderer& r, const std::vector<particle>& particles,
                                        std::uint32_t slot = 0) {
    std::vector<std::uint8_t> rgba;
    const auto uploaded = r.upload_particles(particles);
    EXPECT_TRUE(uploaded) << uploaded.error().message();
    const float aspect = static_cast<float>(width) / static_cast<float>(height);
    const glm::mat4 view_proj = orbit_view_proj(aspect, 0.35f, 0.6f, 6.5f);
    const auto recorded = r.record(slot, r.particle_buffer(), 0, r.uploaded_count(), view_proj);
    EXPECT_TRUE(recorded) << recorded.error().message();
    const auto submitted = r.submit(slot);
    EXPECT_TRUE(submitted) << submitted.error().message();
    const auto read = r.read_back(rgba);
    EXPECT_TRUE(read) << read.error().message();
    return rgba;
  }

  std::unique_ptr<membridge::vulkan::device_context> context_;
};

TEST_F(particle_renderer_test, splat_is_the_default_and_reads_particles_in_compute) {
  EXPECT_EQ(renderer_options{}.method, render_method::splat);
  auto splat = particle_renderer::create(device(), options(render_method::splat));
  ASSERT_TRUE(splat) << splat.error().message();
  EXPECT_EQ(splat->method(), render_method::splat);
  EXPECT_EQ(splat->particle_stages(), VkPipelineStageFlags{VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT});
  auto points = particle_renderer::create(device(), options(render_method::points));
  ASSERT_TRUE(points) << points.error().message();
  EXPECT_EQ(points->method(), render_method::points);
  EXPECT_EQ(points->particle_stages(), VkPipelineStageFlags{VK_PIPELINE_STAGE_VERTEX_INPUT_BIT});
  EXPECT_EQ(render_method_name(render_method::splat), "splat");
  EXPECT_EQ(parse_render_method("points"), render_method::points);
  EXPECT_FALSE(parse_render_method("Points").has_value());
}

TEST_F(particle_renderer_test, both_methods_draw_the_same_disc) {
  const std::vector<particle> disc = initial_particles(50000, 3, default_params());
  auto splat = particle_renderer::create(device(), options(render_method::splat));
  ASSERT_TRUE(splat) << splat.error().message();
  auto points = particle_renderer::create(device(), options(render_method::points));
  ASSERT_TRUE(points) << points.error().message();
  const std::vector<std::uint8_t> a = draw(*splat, disc);
  const std::vector<std::uint8_t> b = draw(*points, disc);
  ASSERT_EQ(a.size(), std::size_t{width} * height * 4);
  ASSERT_EQ(b.size(), a.size());
  const auto background = splat->background_rgb8();
  const apps::image_summary sa = apps::image_stats(a, width, height, background);
  const apps::image_summary sb = apps::image_stats(b, width, height, background);
  std::size_t differ = 0;
  std::size_t differ_much = 0;
  for (std::size_t i = 0; i < a.size(); i += 4) {
    int most = 0;
    for (std::size_t c = 0; c < 3; ++c) most = std::max(most, std::abs(int{a[i + c]} - int{b[i + c]}));
    differ += most > 0 ? 1 : 0;
    differ_much += most > 16 ? 1 : 0;
  }
  std::printf("splat: %zu lit, points: %zu lit; %zu pixels differ, %zu by more than 16 levels\n", sa.lit_pixels,
              sb.lit_pixels, differ, differ_much);
  EXPECT_GT(sa.lit_pixels, sa.pixels / 50) << "the splat image is (nearly) blank";
  // Points rounds every blend to 8 bits and snaps positions to the rasteriser's sub-pixel grid: many
  // pixels differ by a level or two, a few particles on pixel edges land in the neighbouring pixel.
  EXPECT_LT(differ, sa.pixels / 10);
  EXPECT_LT(differ_much, sa.lit_pixels / 50);
  const double lit_ratio =
      static_cast<double>(sa.lit_pixels) / static_cast<double>(std::max<std::size_t>(sb.lit_pixels, 1));
  EXPECT_GT(lit_ratio, 0.97);
  EXPECT_LT(lit_ratio, 1.03);
  for (std::size_t c = 0; c < 3; ++c) EXPECT_NEAR(sa.mean_rgb[c], sb.mean_rgb[c], 4.0) << "channel " << c;
  // The alpha is the background's in both.
  for (std::size_t i = 3; i < a.size(); i += 4 * 997) EXPECT_EQ(a[i], b[i]);
}

TEST_F(particle_renderer_test, splat_does_not_depend_on_the_order_of_the_particles) {
  std::vector<particle> disc = initial_particles(50000, 5, default_params());
  auto r = particle_renderer::create(device(), options(render_method::splat));
  ASSERT_TRUE(r) << r.error().message();
  const std::vector<std::uint8_t> forward = draw(*r, disc, 0);
  std::reverse(disc.begin(), disc.end());
  const std::vector<std::uint8_t> backward = draw(*r, disc, 1);
  std::rotate(disc.begin(), disc.begin() + 12345, disc.end());
  const std::vector<std::uint8_t> rotated = draw(*r, disc, 0);
  EXPECT_TRUE(forward == backward) << "integer sums are exact: the order must not matter";
  EXPECT_TRUE(forward == rotated) << "integer sums are exact: the order must not matter";
}

TEST_F(particle_renderer_test, an_empty_frame_is_the_background) {
  for (const render_method m : {render_method::splat, render_method::points}) {
    auto r = particle_renderer::create(device(), options(m));
    ASSERT_TRUE(r) << r.error().message();
    const glm::mat4 view_proj = orbit_view_proj(1.0f, 0.0f, 0.5f, 6.0f);
    ASSERT_TRUE(r->record(0, VK_NULL_HANDLE, 0, 0, view_proj));
    ASSERT_TRUE(r->submit(0));
    std::vector<std::uint8_t> rgba;
    ASSERT_TRUE(r->read_back(rgba));
    const auto bg = r->background_rgb8();
    const apps::image_summary s = apps::image_stats(rgba, width, height, bg, 0);
    EXPECT_EQ(s.lit_pixels, 0U) << render_method_name(m);
  }
}

TEST_F(particle_renderer_test, splat_checks_the_offset_alignment_and_the_storage_range) {
  auto r = particle_renderer::create(device(), options(render_method::splat));
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_TRUE(r->upload_particles(initial_particles(1000, 1, default_params())));
  const glm::mat4 view_proj = orbit_view_proj(1.0f, 0.0f, 0.5f, 6.0f);
  // minStorageBufferOffsetAlignment is 16 on lavapipe and NVIDIA (more than 1 on every real device).
  const auto misaligned = r->record(0, r->particle_buffer(), 1, 10, view_proj);
  ASSERT_FALSE(misaligned);
  EXPECT_EQ(misaligned.error().code(), membridge::errc::invalid_argument) << misaligned.error().message();
  // 2^32 - 1 particles are 128 GiB: above any maxStorageBufferRange (at most 4 GiB - 1).
  const auto too_many = r->record(0, r->particle_buffer(), 0, 0xFFFFFFFFu, view_proj);
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error().code(), membridge::errc::unsupported) << too_many.error().message();
  // The renderer still works after refusing.
  ASSERT_TRUE(r->record(0, r->particle_buffer(), 0, r->uploaded_count(), view_proj));
  ASSERT_TRUE(r->submit(0));
  ASSERT_TRUE(r->wait_idle());
}

TEST_F(particle_renderer_test, a_splatted_point_covers_point_size_squared_pixels) {
  particle p{};
  p.position = {0.3f, 0.2f, 0.1f, 1.0f};  // mass 1, at rest: deep blue at full brightness
  for (const float size : {1.0f, 2.0f, 3.0f, 5.0f}) {
    renderer_options o = options(render_method::splat);
    o.point_size = size;
    o.brightness = 1.0f;
    auto r = particle_renderer::create(device(), o);
    ASSERT_TRUE(r) << r.error().message();
    const std::vector<std::uint8_t> rgba = draw(*r, {p});
    const apps::image_summary s = apps::image_stats(rgba, width, height, r->background_rgb8());
    EXPECT_EQ(s.lit_pixels, static_cast<std::size_t>(size * size)) << "point size " << size;
    EXPECT_EQ(s.dominant[2], s.lit_pixels) << "a particle at rest is blue";
  }
}

TEST_F(particle_renderer_test, splat_refuses_a_point_size_it_cannot_draw) {
  renderer_options o = options(render_method::splat);
  o.point_size = 100.0f;
  const auto r = particle_renderer::create(device(), o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), membridge::errc::unsupported);
}

}  // namespace
}  // namespace particles
