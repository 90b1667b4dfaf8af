// PNG files round-trip exactly; failures are errors, not crashes; image_stats tells a blank image from
// a drawn one and finds its colours.
#include "png_writer.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

namespace apps {
namespace {

using membridge::errc;

/// A temporary directory removed at the end of the test.
class temp_dir {
 public:
  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "membridge-png-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// A background image with three coloured squares: red, green, blue.
std::vector<std::uint8_t> squares(std::uint32_t w, std::uint32_t h, std::array<std::uint8_t, 3> bg) {
  std::vector<std::uint8_t> rgba(std::size_t{w} * h * 4);
  for (std::uint32_t y = 0; y < h; ++y)
    for (std::uint32_t x = 0; x < w; ++x) {
      std::uint8_t* p = rgba.data() + (std::size_t{y} * w + x) * 4;
      p[0] = bg[0];
      p[1] = bg[1];
      p[2] = bg[2];
      p[3] = 255;
      if (y < 10) {
        if (x < 10) p[0] = 200;                     // red square
        else if (x >= 20 && x < 30) p[1] = 180;     // green square
        else if (x >= 40 && x < 50) p[2] = 250;     // blue square
      }
    }
  return rgba;
}

TEST(png_writer, writes_and_reads_back_exactly) {
  temp_dir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::uint32_t w = 67;  // odd sizes: no row padding assumptions
  const std::uint32_t h = 23;
  std::vector<std::uint8_t> rgba(std::size_t{w} * h * 4);
  for (std::size_t i = 0; i < rgba.size(); ++i) rgba[i] = static_cast<std::uint8_t>((i * 7919u) >> 3);
  const auto file = dir.path() / "pattern.png";
  const auto written = write_png(file, rgba, w, h);
  ASSERT_TRUE(written.has_value()) << written.error().message();
  auto image = read_png(file);
  ASSERT_TRUE(image.has_value()) << image.error().message();
  EXPECT_EQ(image->width, w);
  EXPECT_EQ(image->height, h);
  EXPECT_EQ(image->pixels, rgba);
}

TEST(png_writer, rejects_a_size_mismatch) {
  temp_dir dir;
  std::vector<std::uint8_t> rgba(16 * 16 * 4 - 1);
  const auto r = write_png(dir.path() / "bad.png", rgba, 16, 16);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), errc::invalid_argument);
  EXPECT_FALSE(write_png(dir.path() / "empty.png", {}, 0, 0).has_value());
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "bad.png"));
}

TEST(png_writer, reports_an_unwritable_path) {
  temp_dir dir;
  std::vector<std::uint8_t> rgba(4 * 4 * 4, 128);
  const auto r = write_png(dir.path() / "no-such-dir" / "x.png", rgba, 4, 4);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), errc::os_error);
  EXPECT_EQ(r.error().native_code(), ENOENT);
  EXPECT_NE(r.error().message().find("x.png"), std::string::npos) << r.error().message();
}

TEST(png_writer, reports_missing_and_corrupt_files) {
  temp_dir dir;
  const auto missing = read_png(dir.path() / "missing.png");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), errc::os_error);
  const auto text = dir.path() / "text.png";
  std::FILE* f = std::fopen(text.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("not a png", f);
  std::fclose(f);
  const auto corrupt = read_png(text);
  ASSERT_FALSE(corrupt.has_value());
  EXPECT_EQ(corrupt.error().code(), errc::invalid_argument);
}

TEST(image_stats, a_blank_image_has_no_lit_pixels) {
  const std::array<std::uint8_t, 3> bg{3, 3, 5};
  std::vector<std::uint8_t> rgba(64 * 32 * 4);
  for (std::size_t i = 0; i < rgba.size(); i += 4) {
    rgba[i] = 3 + static_cast<std::uint8_t>(i % 3);  // noise below the threshold
    rgba[i + 1] = 3;
    rgba[i + 2] = 5;
    rgba[i + 3] = 255;
  }
  const image_summary s = image_stats(rgba, 64, 32, bg);
  EXPECT_EQ(s.pixels, 64u * 32u);
  EXPECT_EQ(s.lit_pixels, 0u);
  EXPECT_EQ(s.colour_buckets, 0u);
  EXPECT_EQ(s.mean_rgb[0], 0.0);
}

TEST(image_stats, counts_lit_pixels_colours_and_dominant_channels) {
  const std::array<std::uint8_t, 3> bg{3, 3, 5};
  const auto rgba = squares(64, 32, bg);
  const image_summary s = image_stats(rgba, 64, 32, bg);
  EXPECT_EQ(s.lit_pixels, 300u);
  EXPECT_EQ(s.colour_buckets, 3u);
  EXPECT_EQ(s.dominant[0], 100u);
  EXPECT_EQ(s.dominant[1], 100u);
  EXPECT_EQ(s.dominant[2], 100u);
  EXPECT_NEAR(s.mean_rgb[0], (200.0 + 3 + 3) / 3.0, 1e-9);
  EXPECT_NEAR(s.mean_rgb[2], (5.0 + 5 + 250) / 3.0, 1e-9);
}

TEST(image_stats, a_size_mismatch_gives_an_empty_summary) {
  std::vector<std::uint8_t> rgba(10);
  const image_summary s = image_stats(rgba, 4, 4, {0, 0, 0});
  EXPECT_EQ(s.pixels, 0u);
  EXPECT_EQ(s.lit_pixels, 0u);
}

}  // namespace
}  // namespace apps
