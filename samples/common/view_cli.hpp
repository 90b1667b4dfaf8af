// samples/common/view_cli.hpp: the command-line pieces every drawing sample shares (image size,
// parsing with CLI11's help/usage exits, the headless-frames rule and the headless defaults).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace samples {

/// Adds --width and --height (16 to 16384 pixels, defaults shown in --help).
inline void add_image_size(CLI::App& app, std::uint32_t& width, std::uint32_t& height) {
  app.add_option("--width", width, "Image width in pixels")
      ->capture_default_str()
      ->check(CLI::Range(std::uint32_t{16}, std::uint32_t{16384}))
      ->type_name("PIXELS");
  app.add_option("--height", height, "Image height in pixels")
      ->capture_default_str()
      ->check(CLI::Range(std::uint32_t{16}, std::uint32_t{16384}))
      ->type_name("PIXELS");
}

/// Parses the command line. Empty when the options were read; else the status CLI11's exit gave
/// after printing the help (0, stdout) or the error and a hint (non-zero, stderr).
[[nodiscard]] inline std::optional<int> parse(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return std::nullopt;
}

/// False, with the reason on stderr, for --headless with --frames 0 ("until the window closes").
[[nodiscard]] inline bool frames_fit_the_mode(std::string_view program, bool headless, bool frames_given,
                                              std::uint64_t frames) {
  if (!headless || !frames_given || frames != 0) return true;
  std::fprintf(stderr,
               "%.*s: --frames 0 (until the window closes) needs a window; give --frames N >= 1 with --headless\n"
               "Run with --help for more information.\n",
               static_cast<int>(program.size()), program.data());
  return false;
}

/// Headless defaults: `frames` 0 becomes `default_frames`, an empty `out` becomes `default_png`.
inline void apply_headless_defaults(std::uint64_t& frames, std::string& out, std::uint64_t default_frames,
                                    std::string_view default_png) {
  if (frames == 0) frames = default_frames;
  if (out.empty()) out = std::string(default_png);
}

}  // namespace samples
