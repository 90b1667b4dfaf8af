#include "options.hpp"

#include <view_cli.hpp>

#include <charconv>
#include <cstdio>

namespace membridge_view {

namespace {

/// Parses `a:b` (floats, a < b).
std::optional<std::pair<float, float>> parse_range(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  float a = 0, b = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto ra = std::from_chars(first, first + colon, a);
  const auto rb = std::from_chars(first + colon + 1, last, b);
  if (ra.ec != std::errc() || ra.ptr != first + colon || rb.ec != std::errc() || rb.ptr != last || !(a < b))
    return std::nullopt;
  return std::pair{a, b};
}

}  // namespace

parsed_options parse_options(int argc, const char* const* argv) {
  view_options o;
  CLI::App app{"membridge-view: attaches to a membridge publisher by name and draws every buffer it publishes by "
               "the layout it declares (points, image, heightfield; docs/viewer.md)",
               "membridge-view"};
  app.add_option("name", o.name, "The publisher's socket name")->type_name("NAME");
  app.add_option("--path", o.path, "An explicit socket path instead of the name's")->type_name("PATH");
  app.add_flag("--observer", o.observer, "Watch without pacing the publisher (never signal frames.consumed)");
  CLI::Option* headless = app.add_flag("--headless", o.headless, "No window: draw offscreen (implied by --out)");
  app.add_option("--frames", o.frames, "Frames to draw, then exit (headless default 100; windowed 0 = until closed)");
  app.add_option("--out", o.out, "Write the last frame to this PNG (headless)")->type_name("PNG");
  samples::add_image_size(app, o.width, o.height);
  samples::add_screenshot(app, o.screenshot, headless);
  std::string range;
  app.add_option("--range", range, "r32f values drawn from the colour map's first to its last colour (default: "
                                   "the min and max of a sample of each frame)")
      ->type_name("A:B");
  std::string map = "turbo";
  app.add_option("--colour-map", map, "Colour map for r32f values")
      ->check(CLI::IsMember({"turbo", "viridis"}))
      ->capture_default_str();
  app.add_option("--distance", o.distance, "Camera distance from the scene's centre")
      ->check(CLI::Range(0.01f, 1e6f))
      ->capture_default_str();
  app.add_option("--yaw", o.yaw_degrees, "Camera yaw at the first frame (degrees)")->capture_default_str();
  app.add_option("--pitch", o.pitch_degrees, "Camera pitch (degrees)")->check(CLI::Range(-89.0f, 89.0f))->capture_default_str();
  app.add_option("--spin", o.spin, "Yaw added per drawn frame (degrees; 0: a still camera)")->capture_default_str();
  app.add_option("--timeout-ms", o.timeout_ms, "How long connecting and the first drawable buffer may take")
      ->capture_default_str();
  app.add_option("--min-run-ms", o.min_run_ms, "Keep drawing at least this long, even after --frames")
      ->capture_default_str();
  app.add_flag("--validation", o.validation, "Vulkan validation layers on (any message fails the run)");
  if (const auto status = samples::parse(app, argc, argv)) return {std::nullopt, *status};
  if (o.name.empty() && o.path.empty()) {
    std::fprintf(stderr, "membridge-view: give the publisher's name (or --path)\nRun with --help for more information.\n");
    return {std::nullopt, 2};
  }
  if (!range.empty()) {
    o.range = parse_range(range);
    if (!o.range) {
      std::fprintf(stderr, "membridge-view: --range '%s' is not A:B with numbers A < B\n", range.c_str());
      return {std::nullopt, 2};
    }
  }
  o.map = map == "viridis" ? colour_map::viridis : colour_map::turbo;
  if (!o.screenshot.empty() && !o.out.empty()) {
    std::fprintf(stderr, "membridge-view: --screenshot needs a window, --out draws offscreen: give one of them\n");
    return {std::nullopt, 2};
  }
  if (!o.out.empty()) o.headless = true;
  if (o.headless && o.frames == 0) o.frames = 100;
  return {o, 0};
}

}  // namespace membridge_view
