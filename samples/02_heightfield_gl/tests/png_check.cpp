// membridge_heightfield_png_check FILE WIDTH HEIGHT: exit 0 when FILE is a WIDTH x HEIGHT PNG showing a
// lit heightfield (enough pixels off the background, many shades, blue-green water dominating), 1
// otherwise, with the reason. Used by the sample's CTest tests after a headless run.
#include "png_writer.hpp"  // samples/common
#include "heightfield_renderer.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s FILE WIDTH HEIGHT\n", argv[0]);
    return 2;
  }
  const auto image = apps::read_png(argv[1]);
  if (!image) {
    std::fprintf(stderr, "png_check: %s\n", image.error().message().c_str());
    return 1;
  }
  const auto width = static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10));
  const auto height = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10));
  if (image->width != width || image->height != height) {
    std::fprintf(stderr, "png_check: %s is %ux%u, expected %ux%u\n", argv[1], image->width, image->height, width,
                 height);
    return 1;
  }
  const apps::image_summary s =
      apps::image_stats(image->pixels, image->width, image->height, heightfield::background_rgb);
  std::printf("png_check: %s: %zu of %zu pixels lit, %zu colours, mean RGB %.0f %.0f %.0f, dominant R/G/B %zu/%zu/%zu\n",
              argv[1], s.lit_pixels, s.pixels, s.colour_buckets, s.mean_rgb[0], s.mean_rgb[1], s.mean_rgb[2],
              s.dominant[0], s.dominant[1], s.dominant[2]);
  // The field covers a large part of the image (the camera looks at it from above at an angle).
  if (s.lit_pixels < s.pixels / 5) {
    std::fprintf(stderr, "png_check: only %zu of %zu pixels differ from the background: blank\n", s.lit_pixels, s.pixels);
    return 1;
  }
  // Lighting and ripples give many shades; a flat or unlit mesh gives a handful.
  if (s.colour_buckets < 16) {
    std::fprintf(stderr, "png_check: only %zu distinct colours: the field is not lit or not rippled\n",
                 s.colour_buckets);
    return 1;
  }
  // Water: blue and green outweigh red.
  if (s.dominant[0] > s.dominant[1] + s.dominant[2]) {
    std::fprintf(stderr, "png_check: red dominates: not the water colour ramp\n");
    return 1;
  }
  return 0;
}
