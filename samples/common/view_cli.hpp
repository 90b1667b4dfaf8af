// samples/common/view_cli.hpp: the command-line pieces every drawing sample shares (image size, run
// mode and screenshot, parsing with CLI11's help/usage exits, the headless-frames rule and the
// headless defaults).
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

/// Adds option `name` for `value` (its default shown in --help), checked to lie in [lo, hi], its
/// argument shown as `type_name`.
template <class T>
CLI::Option* add_ranged(CLI::App& app, const std::string& name, T& value, const std::string& help, T lo, T hi,
                        const std::string& type_name) {
  return app.add_option(name, value, help)->capture_default_str()->check(CLI::Range(lo, hi))->type_name(type_name);
}

/// Adds --screenshot PNG: a windowed run writes the last image its window presented (the scene and the
/// overlay) to that file. Refused together with `headless` (a flag's option; null: not checked).
inline void add_screenshot(CLI::App& app, std::string& path, CLI::Option* headless) {
  CLI::Option* o =
      app.add_option("--screenshot", path, "Windowed: write the last image the window presented (scene and overlay) to this PNG")
          ->type_name("PNG");
  if (headless != nullptr) o->excludes(headless);
}

/// Where a drawing sample's run-mode options go.
struct run_mode_fields {
  bool& headless;           ///< --headless.
  std::uint64_t& frames;    ///< --frames (0 = until the window closes).
  std::string& out;         ///< --out: PNG of the last frame.
  std::string& screenshot;  ///< --screenshot: PNG of the window's last image.
};

/// Adds --headless (`headless_help`), --frames (0 to 1e9; `default_frames` headless), --out (headless
/// default `default_png`) and --screenshot (windowed only). Returns the --frames option (to ask
/// whether it was given).
inline CLI::Option* add_run_mode(CLI::App& app, run_mode_fields f, std::uint64_t default_frames,
                                 std::string_view default_png, const std::string& headless_help) {
  CLI::Option* headless = app.add_flag("--headless", f.headless, headless_help);
  CLI::Option* frames = app.add_option("--frames", f.frames,
                                       "Frames to draw (headless default " + std::to_string(default_frames) +
                                           "; windowed default 0 = until the window closes)")
                            ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1'000'000'000}))
                            ->type_name("N");
  app.add_option("--out", f.out,
                 "PNG file for the last frame (headless default " + std::string(default_png) +
                     "; windowed: none unless given)")
      ->type_name("FILE");
  add_screenshot(app, f.screenshot, headless);
  return frames;
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
