// PNG files through stb, and image statistics.
#include "png_writer.hpp"

// Debian's libstb-dev ships the stb headers and a libstb.so; the implementation is compiled here
// instead (static functions, private to this file), so binaries need no libstb on the GPU machine and
// cannot clash with another copy of stb. /usr/include is a system directory: no warnings from stb.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <bitset>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace apps {

namespace {

using membridge::errc;
using membridge::error;

struct file_closer {
  void operator()(std::FILE* f) const noexcept { (void)std::fclose(f); }
};

struct png_bytes {
  std::vector<std::uint8_t> bytes;
};

void append_bytes(void* context, void* data, int size) {
  auto* out = static_cast<png_bytes*>(context);
  const auto* p = static_cast<const std::uint8_t*>(data);
  out->bytes.insert(out->bytes.end(), p, p + size);
}

}  // namespace

membridge::result<void> write_png(const std::filesystem::path& path, std::span<const std::uint8_t> rgba,
                                  std::uint32_t width, std::uint32_t height) {
  const std::size_t expected = std::size_t{width} * height * 4;
  if (width == 0 || height == 0 || rgba.size() != expected || width > 1u << 16 || height > 1u << 16)
    return error(errc::invalid_argument, "write_png",
                 std::to_string(width) + "x" + std::to_string(height) + " RGBA8 needs " + std::to_string(expected) +
                     " bytes, got " + std::to_string(rgba.size()) + ": writing " + path.string());
  png_bytes png;
  const int w = static_cast<int>(width);
  const int h = static_cast<int>(height);
  if (stbi_write_png_to_func(&append_bytes, &png, w, h, 4, rgba.data(), w * 4) == 0 || png.bytes.empty())
    return error(errc::internal, "stbi_write_png_to_func", "encoding " + path.string());

  errno = 0;
  std::unique_ptr<std::FILE, file_closer> file(std::fopen(path.c_str(), "wb"));
  if (!file) return error::from_errno(errno, "fopen", "writing " + path.string());
  if (std::fwrite(png.bytes.data(), 1, png.bytes.size(), file.get()) != png.bytes.size())
    return error::from_errno(errno != 0 ? errno : EIO, "fwrite", "writing " + path.string());
  if (std::fclose(file.release()) != 0) return error::from_errno(errno, "fclose", "writing " + path.string());
  return membridge::ok();
}

membridge::result<rgba_image> read_png(const std::filesystem::path& path) {
  errno = 0;
  std::unique_ptr<std::FILE, file_closer> file(std::fopen(path.c_str(), "rb"));
  if (!file) return error::from_errno(errno, "fopen", "reading " + path.string());
  int w = 0;
  int h = 0;
  int channels = 0;
  std::unique_ptr<stbi_uc, decltype(&stbi_image_free)> data(stbi_load_from_file(file.get(), &w, &h, &channels, 4),
                                                            &stbi_image_free);
  if (!data || w <= 0 || h <= 0)
    return error(errc::invalid_argument, "stbi_load_from_file",
                 std::string(stbi_failure_reason() ? stbi_failure_reason() : "unknown") + ": reading " + path.string());
  rgba_image image;
  image.width = static_cast<std::uint32_t>(w);
  image.height = static_cast<std::uint32_t>(h);
  image.pixels.assign(data.get(), data.get() + std::size_t{image.width} * image.height * 4);
  return image;
}

image_summary image_stats(std::span<const std::uint8_t> rgba, std::uint32_t width, std::uint32_t height,
                          std::array<std::uint8_t, 3> background, int threshold) {
  image_summary s;
  const std::size_t pixels = std::size_t{width} * height;
  if (rgba.size() != pixels * 4) return s;
  s.pixels = pixels;
  std::bitset<512> buckets;
  std::array<double, 3> sum{};
  for (std::size_t i = 0; i < pixels; ++i) {
    const std::uint8_t* px = rgba.data() + i * 4;
    bool lit = false;
    for (int c = 0; c < 3; ++c) lit = lit || std::abs(int{px[c]} - int{background[static_cast<std::size_t>(c)]}) > threshold;
    if (!lit) continue;
    ++s.lit_pixels;
    buckets.set(static_cast<std::size_t>((px[0] >> 5) << 6 | (px[1] >> 5) << 3 | (px[2] >> 5)));
    for (std::size_t c = 0; c < 3; ++c) sum[c] += px[c];
    const std::size_t top = px[0] >= px[1] && px[0] >= px[2] ? 0 : (px[1] >= px[2] ? 1 : 2);
    ++s.dominant[top];
  }
  s.colour_buckets = buckets.count();
  if (s.lit_pixels > 0)
    for (std::size_t c = 0; c < 3; ++c) s.mean_rgb[c] = sum[c] / static_cast<double>(s.lit_pixels);
  return s;
}

}  // namespace apps
