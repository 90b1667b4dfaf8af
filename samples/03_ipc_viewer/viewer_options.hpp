// samples/03_ipc_viewer/viewer_options.hpp: the command line of membridge_ipc_viewer (CLI11), and the
// defaults that depend on the mode (headless or windowed).
#pragma once

#include "render_method.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace particles::ipc_viewer {

/// Frames drawn headless when --frames is not given.
inline constexpr std::uint64_t default_headless_frames = 300;
/// The PNG written headless when --out is not given.
inline constexpr std::string_view default_png = "ipc.png";

/// Exit statuses of membridge_ipc_viewer.
enum class exit_status : int {
  ok = 0,               ///< The run finished (headless: --frames frames drawn, the PNG written).
  usage_error = 1,      ///< The command line was invalid (the reason is printed).
  runtime_failure = 2,  ///< No producer, a producer gone for good before the frames were drawn, a failed call,
                        ///< or (--validation) any validation message.
};

/// What the command line asked for.
struct viewer_options {
  std::string name = "particles";      ///< --name: the producer's socket name.
  bool headless = false;               ///< --headless: render offscreen, never open a window.
  std::uint64_t frames = 0;            ///< --frames: frames to draw; 0 = until the window closes (windowed only).
  bool frames_given = false;           ///< True when --frames was on the command line.
  std::string out;                     ///< --out: PNG of the last frame; empty = none.
  std::string screenshot;              ///< --screenshot: PNG of the window's last image; empty = none.
  bool observer = false;               ///< --observer: watch without pacing the producer.
  std::uint64_t reconnect_ms = 5000;   ///< --reconnect-ms: how long to keep trying to (re)connect.
  std::uint32_t width = 1280;          ///< --width: image width in pixels.
  std::uint32_t height = 720;          ///< --height: image height in pixels.
  render_method render = render_method::splat;  ///< --render: splat (compute) or points (graphics pipeline).
  bool validation = false;             ///< --validation: Khronos validation layer on; any message fails the run.
  /// --render-device: the CUDA device whose GPU the viewer renders on (it must hold the producer's
  /// buffer); empty = the buffer's own GPU, found by its UUID (no CUDA needed).
  std::optional<int> render_device;
};

/// Options to run with, or the status to exit with (--help: 0; invalid input: 1, reason on stderr).
struct parsed_command_line {
  std::optional<viewer_options> options;  ///< Set when the program should run.
  exit_status status = exit_status::ok;    ///< Meaningful when options is empty.
};

/// Parses argv. Prints --help to stdout and errors (with a hint to --help) to stderr.
[[nodiscard]] parsed_command_line parse_command_line(int argc, const char* const* argv);

/// Fills the defaults of the mode the run ended up in: headless runs draw default_headless_frames
/// unless --frames was given and write default_png unless --out was given.
void apply_mode_defaults(viewer_options& options, bool windowed);

}  // namespace particles::ipc_viewer
