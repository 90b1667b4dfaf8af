// tools/membridge-view/options.hpp: membridge-view's command line.
#pragma once

#include "renderer.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace membridge_view {

/// What the user asked for.
struct view_options {
  std::string name;                  ///< The publisher's socket name (`$XDG_RUNTIME_DIR/membridge/<name>.sock`).
  std::string path;                  ///< An explicit socket path (overrides the name's).
  bool observer = false;             ///< Watch without pacing the publisher (never signal `frames.consumed`).
  bool headless = false;             ///< No window (implied by --out).
  std::uint64_t frames = 0;          ///< Frames to draw, then exit (0: until the window closes).
  std::string out;                   ///< PNG of the last frame (headless).
  std::string screenshot;            ///< PNG of the window's last image, overlay included (windowed).
  std::uint32_t width = 1280;        ///< Image width.
  std::uint32_t height = 720;        ///< Image height.
  std::optional<std::pair<float, float>> range;  ///< r32f range for the colour map (default: sampled).
  colour_map map = colour_map::turbo;            ///< The colour map.
  float distance = 3.0f;             ///< Camera distance from the orbit's centre.
  float yaw_degrees = 35.0f;         ///< Camera yaw at frame 0.
  float pitch_degrees = 30.0f;       ///< Camera pitch.
  float spin = 0.25f;                ///< Degrees of yaw added per drawn frame (the orbit).
  std::uint32_t timeout_ms = 5000;   ///< Connecting, and waiting for a drawable buffer.
  std::uint32_t min_run_ms = 0;      ///< Keep drawing at least this long (headless growth tests).
  bool validation = false;           ///< Vulkan validation layers (any message fails the run).
};

/// Parsed options, or the exit status (help printed: 0; bad option: 2, message on stderr).
struct parsed_options {
  std::optional<view_options> options;  ///< Set when the run should go on.
  int status = 0;                       ///< The exit status otherwise.
};

/// Parses argv.
[[nodiscard]] parsed_options parse_options(int argc, const char* const* argv);

}  // namespace membridge_view
