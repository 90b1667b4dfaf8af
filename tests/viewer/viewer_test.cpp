// viewer tier: membridge-view headless against a publisher in this process. The publisher's buffers are
// exportable lavapipe memory (opaque fds; see tests/vulkan), filled with known patterns and published
// with ipc::publisher under each layout; membridge-view (a child process, validation layers on) draws
// them into a PNG whose pixels are checked: where the content must be, and its colours. One run is
// windowed under Xvfb: its --screenshot must show the overlay and the points.
#include "../vulkan/vulkan_test.hpp"
#include "../samples/screenshot_check.hpp"  // the overlay and scene in a windowed run's screenshot
#include "png_writer.hpp"                   // samples/common: read_png, image_stats

#include <membridge/ipc/layout.hpp>
#include <membridge/ipc/publisher.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace membridge::testing {
namespace {

using namespace std::chrono_literals;
constexpr std::uint32_t image_size = 256;
constexpr std::array<std::uint8_t, 3> background{5, 5, 10};  // the viewer's clear colour (0.02, 0.02, 0.04)

/// A temporary directory for the socket, the PNG and the viewer's output.
struct temp_dir {
  std::string path;
  temp_dir() {
    std::string tmpl = "/tmp/membridge-view-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path = tmpl;
  }
  ~temp_dir() {
    if (std::getenv("MEMBRIDGE_VIEW_TEST_KEEP") != nullptr) return;  // to look at the PNGs
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
};

/// One published buffer: its chunks (exported lavapipe memory) and description.
struct published {
  std::string name;
  ipc::element_format format;
  std::vector<exported_memory> chunks;
  std::uint64_t size = 0;

  ipc::buffer_description description(const vulkan::device_context& vk, std::uint64_t generation) const {
    ipc::buffer_description d;
    d.name = name;
    d.device = vk.uuid();
    d.format = format;
    d.size = size;
    d.generation = generation;
    std::uint64_t offset = 0;
    for (const auto& c : chunks) {
      d.chunks.push_back({offset, c.size()});
      offset += c.size();
    }
    d.reserved_size = std::max<std::uint64_t>(offset, 64ULL << 20);
    return d;
  }
};

class viewer_test : public vulkan_test {
 protected:
  /// The publisher and the memory go before the device that made it.
  void TearDown() override {
    publisher_ = ipc::publisher();
    buffers_.clear();
    vulkan_test::TearDown();
  }

  /// Adds a buffer of `bytes` in one chunk, filled by `fill(bytes pointer)`.
  published& add(const std::string& name, const std::string& layout, std::uint32_t stride, std::size_t bytes,
                 const std::function<void(std::uint8_t*)>& fill) {
    published p;
    p.name = name;
    p.format = {layout, stride};
    p.size = bytes;
    auto memory = exported_memory::allocate(vk.context, bytes);
    EXPECT_TRUE(memory) << memory.error().message();
    fill(reinterpret_cast<std::uint8_t*>(memory->words()));
    p.chunks.push_back(std::move(*memory));
    buffers_.push_back(std::move(p));
    return buffers_.back();
  }

  /// Starts the publisher with every buffer added so far.
  void publish() {
    ASSERT_FALSE(dir_.path.empty());
    ipc::publisher_options po;
    po.listen.path = socket();
    po.publisher_name = "viewer_test";
    po.on_event = [this](const ipc::publisher_event& e) {
      if (e.what == ipc::publisher_event::kind::joined) joined_.store(true);
    };
    auto started = ipc::publisher::start(po);
    ASSERT_TRUE(started) << started.error().message();
    publisher_ = std::move(*started);
    for (const published& p : buffers_) {
      std::vector<os::unique_fd> fds;
      for (const auto& c : p.chunks) {
        auto fd = c.export_fd();
        ASSERT_TRUE(fd) << fd.error().message();
        fds.push_back(std::move(*fd));
      }
      ASSERT_TRUE(publisher_.publish_buffer(p.description(vk.context, 1), std::move(fds)));
    }
  }

  [[nodiscard]] std::string socket() const { return dir_.path + "/view.sock"; }
  [[nodiscard]] std::string png() const { return dir_.path + "/out.png"; }

  /// Runs membridge-view headless on the publisher; returns its exit status, its output in `output_`.
  /// `during` runs while the viewer does (after it joined).
  int view(std::vector<std::string> extra, const std::function<void()>& during = {}) {
    return run_viewer({MEMBRIDGE_VIEW_PATH, "--out", png()}, std::move(extra), during);
  }

  /// Runs membridge-view windowed under xvfb-run (a fresh X server), its --screenshot written to png().
  int view_windowed(std::vector<std::string> extra) {
    return run_viewer({"xvfb-run", "-a", "-s", "-screen 0 1024x768x24", MEMBRIDGE_VIEW_PATH, "--screenshot", png()},
                      std::move(extra), {});
  }

  /// Runs `command` (looked up in PATH) with the publisher's path, the image size, --validation and `extra`.
  int run_viewer(std::vector<std::string> args, std::vector<std::string> extra, const std::function<void()>& during) {
    const std::string log = dir_.path + "/view.log";
    args.insert(args.end(), {"--path", socket(), "--width", std::to_string(image_size), "--height",
                             std::to_string(image_size), "--validation"});
    const auto given = [&](const char* option) { return std::find(extra.begin(), extra.end(), option) != extra.end(); };
    if (!given("--frames")) args.insert(args.end(), {"--frames", "3"});
    if (!given("--timeout-ms")) args.insert(args.end(), {"--timeout-ms", "10000"});
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    const int spawned = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(spawned, 0) << "cannot start " << argv[0] << ": " << std::strerror(spawned);
    if (spawned != 0) return -1;
    if (during) {
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      while (!joined_.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(2ms);
      EXPECT_TRUE(joined_.load()) << "the viewer never connected";
      during();
    }
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        (void)::waitpid(pid, &status, 0);
        ADD_FAILURE() << "membridge-view did not finish within 60 s";
        break;
      }
      std::this_thread::sleep_for(5ms);
    }
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    output_ = text.str();
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  /// The PNG the viewer wrote (fails the test when missing).
  apps::rgba_image image() const {
    auto img = apps::read_png(png());
    EXPECT_TRUE(img) << img.error().message() << "\nviewer output:\n" << output_;
    if (!img) return {};
    EXPECT_EQ(img->width, image_size);
    EXPECT_EQ(img->height, image_size);
    return *img;
  }

  static std::array<std::uint8_t, 3> pixel(const apps::rgba_image& img, std::uint32_t x, std::uint32_t y) {
    const std::size_t i = (std::size_t{y} * img.width + x) * 4;
    if (x >= img.width || i + 3 >= img.pixels.size()) return {0, 0, 0};  // no image (the failure is reported)
    return {img.pixels[i], img.pixels[i + 1], img.pixels[i + 2]};
  }

  /// Lit pixels in the rectangle whose largest channel is `channel` (0 R, 1 G, 2 B) by a margin.
  static std::size_t count_dominant(const apps::rgba_image& img, int channel, std::uint32_t x0 = 0,
                                    std::uint32_t y0 = 0, std::uint32_t x1 = image_size, std::uint32_t y1 = image_size) {
    std::size_t n = 0;
    for (std::uint32_t y = y0; y < y1; ++y)
      for (std::uint32_t x = x0; x < x1; ++x) {
        const auto p = pixel(img, x, y);
        const int c = p[static_cast<std::size_t>(channel)];
        bool wins = c > 60;
        for (int o = 0; o < 3; ++o)
          if (o != channel && p[static_cast<std::size_t>(o)] + 40 > c) wins = false;
        n += wins ? 1U : 0U;
      }
    return n;
  }

  /// Pixels of exactly `rgb`.
  static std::size_t count_exact(const apps::rgba_image& img, std::array<std::uint8_t, 3> rgb, std::uint32_t x0 = 0,
                                 std::uint32_t y0 = 0, std::uint32_t x1 = image_size, std::uint32_t y1 = image_size) {
    std::size_t n = 0;
    for (std::uint32_t y = y0; y < y1; ++y)
      for (std::uint32_t x = x0; x < x1; ++x) n += pixel(img, x, y) == rgb ? 1U : 0U;
    return n;
  }

  /// True when `p` is within 2 of the background in every channel.
  static bool is_background(std::array<std::uint8_t, 3> p) {
    for (std::size_t c = 0; c < 3; ++c)
      if (std::abs(int{p[c]} - int{background[c]}) > 2) return false;
    return true;
  }

  static apps::image_summary stats(const apps::rgba_image& img) {
    return apps::image_stats(img.pixels, img.width, img.height, background);
  }

  temp_dir dir_;
  std::vector<published> buffers_;
  ipc::publisher publisher_;
  std::atomic<bool> joined_{false};
  std::string output_;
};

void put_f(std::uint8_t* base, std::size_t offset, float v) { std::memcpy(base + offset, &v, 4); }
void put_u(std::uint8_t* base, std::size_t offset, std::uint32_t v) { std::memcpy(base + offset, &v, 4); }

/// Points on a grid of side `side` in the plane y = 0, x and z in -0.9..0.9 (x from left to right in
/// the first frame's view).
std::array<float, 3> grid_point(std::size_t i, std::size_t side) {
  const float u = static_cast<float>(i % side) / static_cast<float>(side - 1);
  const float v = static_cast<float>(i / side) / static_cast<float>(side - 1);
  return {u * 1.8f - 0.9f, 0.0f, v * 1.8f - 0.9f};
}

constexpr std::size_t side = 96;
constexpr std::size_t points = side * side;
constexpr std::uint32_t red = 0xFF0000FFU;    // rgba8 little-endian: R in the low byte
constexpr std::uint32_t green = 0xFF00FF00U;
constexpr std::uint32_t blue = 0xFFFF0000U;

/// Fills float3/float4 grid positions at stride `stride` and calls `extra(base, element, i)` for the rest.
std::function<void(std::uint8_t*)> grid(std::uint32_t stride, std::uint32_t position_floats,
                                        const std::function<void(std::uint8_t*, std::size_t)>& extra = {}) {
  return [=](std::uint8_t* base) {
    for (std::size_t i = 0; i < points; ++i) {
      const auto p = grid_point(i, side);
      std::uint8_t* e = base + i * stride;
      for (std::uint32_t k = 0; k < position_floats; ++k) put_f(e, k * 4, k < 3 ? p[k] : 1.0f);
      if (extra) extra(e, i);
    }
  };
}

TEST_F(viewer_test, points_float4_are_drawn) {
  add("pts", "points:float4", 16, points * 16, grid(16, 4));
  publish();
  ASSERT_EQ(view({"--pitch", "60"}), 0) << output_;
  const auto s = stats(image());
  EXPECT_GT(s.lit_pixels, 2000U) << output_;
  EXPECT_GT(s.mean_rgb[0], 150.0) << "uncoloured points are drawn near white";
  EXPECT_NE(output_.find("\"frames_drawn\":3"), std::string::npos) << output_;
}

TEST_F(viewer_test, points_float3_rgba8_take_their_colours) {
  // Red for x < 0, green for x >= 0.
  add("pts", "points:float3,rgba8", 16, points * 16,
      grid(16, 3, [](std::uint8_t* e, std::size_t i) { put_u(e, 12, grid_point(i, side)[0] < 0 ? red : green); }));
  publish();
  ASSERT_EQ(view({"--pitch", "60", "--yaw", "0", "--spin", "0"}), 0) << output_;
  const auto img = image();
  EXPECT_GT(count_exact(img, {255, 0, 0}), 800U) << "red points";
  EXPECT_GT(count_exact(img, {0, 255, 0}), 800U) << "green points";
  EXPECT_LT(count_dominant(img, 2), 50U) << "no blue";
}

TEST_F(viewer_test, points_float4_r32f_go_through_the_colour_map) {
  // The scalar is x: the turbo map goes from blue-ish (low) to red (high) across the grid.
  add("pts", "points:float4,r32f", 20, points * 20,
      grid(20, 4, [](std::uint8_t* e, std::size_t i) { put_f(e, 16, grid_point(i, side)[0]); }));
  publish();
  ASSERT_EQ(view({"--pitch", "60", "--yaw", "0", "--spin", "0"}), 0) << output_;
  const auto img = image();
  const auto s = stats(img);
  EXPECT_GT(s.lit_pixels, 2000U);
  EXPECT_GE(s.colour_buckets, 12U) << "a colour map shows many colours";
  EXPECT_GT(count_dominant(img, 1), 200U) << "turbo's green middle";
  EXPECT_GT(count_dominant(img, 0), 200U) << "turbo's red end";
}

TEST_F(viewer_test, windowed_under_xvfb_shows_the_overlay_and_the_points) {
  add("pts", "points:float4", 16, points * 16, grid(16, 4));
  publish();
  ASSERT_EQ(view_windowed({"--pitch", "60", "--frames", "5"}), 0) << output_;
  EXPECT_NE(output_.find("(the window's last image, overlay included)"), std::string::npos) << output_;
  const screenshot_counts c = check_screenshot(png(), background);
  ASSERT_TRUE(c.error.empty()) << c.error << '\n' << output_;
  EXPECT_EQ(c.width, image_size);
  EXPECT_GT(c.panel_background, 1500U) << "the overlay's panel in the top-left corner";
  EXPECT_GT(c.panel_text, 150U) << "the overlay's text";
  EXPECT_GT(c.scene_lit, 1000U) << "the points below the overlay";
}

TEST_F(viewer_test, membridge_particles_v1_is_drawn_as_points) {
  add("particles", "membridge.particles.v1", 32, points * 32, grid(32, 4, [](std::uint8_t* e, std::size_t) {
        for (int k = 4; k < 8; ++k) put_f(e, static_cast<std::size_t>(k) * 4, 0.5f);
      }));
  publish();
  ASSERT_EQ(view({"--pitch", "60"}), 0) << output_;
  EXPECT_GT(stats(image()).lit_pixels, 2000U) << output_;
}

constexpr std::uint32_t image_w = 64, image_h = 32;

/// Left half red, right half blue.
void halves(std::uint8_t* base) {
  for (std::uint32_t y = 0; y < image_h; ++y)
    for (std::uint32_t x = 0; x < image_w; ++x) put_u(base, (y * image_w + x) * 4, x < image_w / 2 ? red : blue);
}

TEST_F(viewer_test, image_rgba8_fills_the_frame_with_its_texels) {
  add("img", "image:rgba8:64x32", 4, image_w * image_h * 4, halves);
  publish();
  ASSERT_EQ(view({}), 0) << output_;
  const auto img = image();
  // 64x32 scaled into 256x256 (aspect kept): rows 64..192, two halves.
  EXPECT_EQ(pixel(img, 60, 128), (std::array<std::uint8_t, 3>{255, 0, 0}));
  EXPECT_EQ(pixel(img, 196, 128), (std::array<std::uint8_t, 3>{0, 0, 255}));
  EXPECT_TRUE(is_background(pixel(img, 128, 10))) << "above the image: background";
  EXPECT_GT(count_dominant(img, 0), 10000U);
  EXPECT_GT(count_dominant(img, 2), 10000U);
}

TEST_F(viewer_test, image_r32f_uses_the_range_and_colour_map) {
  // value = x / (W - 1): 0 at the left (turbo: near black), 0.5 bright green, 1 at the right (dark red).
  add("scalar", "image:r32f:64x32", 4, image_w * image_h * 4, [](std::uint8_t* base) {
    for (std::uint32_t y = 0; y < image_h; ++y)
      for (std::uint32_t x = 0; x < image_w; ++x)
        put_f(base, (y * image_w + x) * 4, static_cast<float>(x) / static_cast<float>(image_w - 1));
  });
  publish();
  ASSERT_EQ(view({"--range", "0:1"}), 0) << output_;
  const auto img = image();
  const auto left = pixel(img, 8, 128), middle = pixel(img, 128, 128), right = pixel(img, 248, 128);
  EXPECT_LT(*std::max_element(left.begin(), left.end()), 60) << "turbo(0) is dark";
  EXPECT_GT(right[0], 100) << "turbo(1) is red";
  EXPECT_GT(right[0], 2 * right[2]) << "turbo(1) is red over blue";
  EXPECT_GT(middle[1], 150) << "turbo(0.5) is bright green";
  // The sampled range (no --range) gives the same picture: the data spans 0..1.
  ASSERT_EQ(view({}), 0) << output_;
  const auto sampled = image();
  EXPECT_EQ(pixel(sampled, 128, 128), middle);
  EXPECT_EQ(pixel(sampled, 248, 128), right);
}

TEST_F(viewer_test, heightfield_is_a_shaded_coloured_mesh) {
  constexpr std::uint32_t n = 48;
  add("terrain", "heightfield:r32f:48x48", 4, n * n * 4, [](std::uint8_t* base) {
    for (std::uint32_t y = 0; y < n; ++y)
      for (std::uint32_t x = 0; x < n; ++x)
        put_f(base, (y * n + x) * 4, std::sin(static_cast<float>(x) * 0.25f) * std::cos(static_cast<float>(y) * 0.2f));
  });
  publish();
  ASSERT_EQ(view({}), 0) << output_;
  const auto s = stats(image());
  EXPECT_GT(s.lit_pixels, 10000U) << "a mesh covers an area, not points";
  EXPECT_GE(s.colour_buckets, 20U) << "colour map and shading";
}

TEST_F(viewer_test, several_buffers_at_once_images_as_insets_over_the_scene) {
  add("pts", "points:float3,rgba8", 16, points * 16,
      grid(16, 3, [](std::uint8_t* e, std::size_t) { put_u(e, 12, green); }));
  add("img", "image:rgba8:64x32", 4, image_w * image_h * 4, halves);
  add("terrain", "heightfield:r32f:8x8", 4, 8 * 8 * 4, [](std::uint8_t* base) {
    for (std::uint32_t i = 0; i < 64; ++i) put_f(base, i * 4, static_cast<float>(i % 8));
  });
  publish();
  ASSERT_EQ(view({"--pitch", "60"}), 0) << output_;
  const auto img = image();
  // The image is a quarter-size inset at the bottom right (192..256 x 192..256, 64x32 inside).
  EXPECT_GT(count_dominant(img, 0, 192, 192, 256, 256), 300U) << "the inset's red half";
  EXPECT_GT(count_dominant(img, 2, 192, 192, 256, 256), 300U) << "the inset's blue half";
  EXPECT_GT(count_exact(img, {0, 255, 0}, 0, 0, 256, 190), 500U) << "the green points in the scene";
  EXPECT_EQ(count_exact(img, {0, 255, 0}, 193, 209, 254, 239), 0U) << "the inset is drawn over the scene";
  EXPECT_NE(output_.find("3 buffers drawn"), std::string::npos) << output_;
}

TEST_F(viewer_test, growth_while_drawing_is_followed) {
  // One chunk of red points (x < 0), then a second chunk of green ones (x >= 0) while the viewer draws.
  constexpr std::size_t half = points / 2;
  add("pts", "points:float3,rgba8", 16, half * 16, [](std::uint8_t* base) {
    for (std::size_t i = 0; i < half; ++i) {
      const auto q = grid_point(i, side);
      for (int k = 0; k < 3; ++k) put_f(base + i * 16, static_cast<std::size_t>(k) * 4, q[static_cast<std::size_t>(k)] * 0.5f - 0.5f);
      put_u(base + i * 16, 12, red);
    }
  });
  publish();
  const int status = view({"--frames", "5", "--min-run-ms", "1500", "--pitch", "70", "--yaw", "0", "--spin", "0"}, [&] {
    std::this_thread::sleep_for(200ms);
    auto memory = exported_memory::allocate(vk.context, half * 16);
    ASSERT_TRUE(memory);
    auto* base = reinterpret_cast<std::uint8_t*>(memory->words());
    for (std::size_t i = 0; i < half; ++i) {
      const auto q = grid_point(i, side);
      for (int k = 0; k < 3; ++k) put_f(base + i * 16, static_cast<std::size_t>(k) * 4, q[static_cast<std::size_t>(k)] * 0.5f + 0.5f);
      put_u(base + i * 16, 12, green);
    }
    auto fd = memory->export_fd();
    ASSERT_TRUE(fd);
    published& grown = buffers_.back();
    grown.chunks.push_back(std::move(*memory));
    grown.size = points * 16;
    std::vector<os::unique_fd> fds;
    fds.push_back(std::move(*fd));
    ASSERT_TRUE(publisher_.update_buffer(grown.description(vk.context, 2), std::move(fds)));
  });
  ASSERT_EQ(status, 0) << output_;
  EXPECT_NE(output_.find("followed growth of 'pts'"), std::string::npos) << output_;
  const auto img = image();
  EXPECT_GT(count_exact(img, {255, 0, 0}), 300U) << "the first chunk's red points";
  EXPECT_GT(count_exact(img, {0, 255, 0}), 300U) << "the grown chunk's green points\n" << output_;
}

TEST_F(viewer_test, a_timeline_it_cannot_import_is_reported_and_slot_zero_drawn) {
  // Two slots (frames.produced parameter 2): slot 0 red points, slot 1 green ones. lavapipe has no
  // semaphore fd import, so the viewer says it cannot follow the timeline and draws slot 0 as it is.
  add("pts", "points:float3,rgba8", 16, 2 * points * 16, [](std::uint8_t* base) {
    for (std::size_t slot = 0; slot < 2; ++slot)
      grid(16, 3, [slot](std::uint8_t* e, std::size_t) { put_u(e, 12, slot == 0 ? red : green); })(base + slot * points * 16);
  });
  publish();
  ipc::semaphore_description sd;
  sd.name = "frames.produced";
  sd.device = vk.context.uuid();
  sd.parameter = 2;
  const int memfd = ::memfd_create("not-a-semaphore", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  ASSERT_TRUE(publisher_.publish_semaphore(sd, os::unique_fd::from_native(memfd)));
  ASSERT_TRUE(publisher_.announce_frame(0));
  ASSERT_EQ(view({"--pitch", "60"}), 0) << output_;
  EXPECT_NE(output_.find("cannot follow the frame timeline"), std::string::npos) << output_;
  EXPECT_NE(output_.find("drawing slot 0 of each buffer without synchronisation"), std::string::npos) << output_;
  const auto img = image();
  EXPECT_GT(count_exact(img, {255, 0, 0}), 800U) << "slot 0's red points";
  EXPECT_EQ(count_exact(img, {0, 255, 0}), 0U) << "slot 1 is not drawn";
}

TEST_F(viewer_test, undrawable_layouts_are_reported_and_the_rest_drawn) {
  add("voxels", "voxels:r32f:4x4x4", 4, 256, [](std::uint8_t* b) { std::memset(b, 0, 256); });
  add("short", "image:rgba8:64x64", 4, 64 * 4, [](std::uint8_t* b) { std::memset(b, 0, 256); });
  add("img", "image:rgba8:64x32", 4, image_w * image_h * 4, halves);
  publish();
  ASSERT_EQ(view({}), 0) << output_;
  EXPECT_NE(output_.find("cannot draw buffer 'voxels': layout 'voxels:r32f:4x4x4': unknown kind 'voxels'"),
            std::string::npos)
      << output_;
  EXPECT_NE(output_.find("cannot draw buffer 'short': a slot of 256 bytes is smaller than 64x64 texels"),
            std::string::npos)
      << output_;
  EXPECT_EQ(pixel(image(), 60, 128), (std::array<std::uint8_t, 3>{255, 0, 0}));
}

TEST_F(viewer_test, nothing_drawable_exits_non_zero_and_says_why) {
  add("voxels", "voxels:r32f:4x4x4", 4, 256, [](std::uint8_t* b) { std::memset(b, 0, 256); });
  publish();
  EXPECT_NE(view({"--timeout-ms", "300"}), 0) << output_;
  EXPECT_NE(output_.find("no buffer with a layout membridge-view can draw ('voxels': layout 'voxels:r32f:4x4x4': "
                         "unknown kind 'voxels'"),
            std::string::npos)
      << output_;
}

}  // namespace
}  // namespace membridge::testing
