// samples/02_heightfield_gl/heightfield_options.hpp: the command line of membridge_heightfield_gl.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace heightfield {

/// Exit status of the program.
enum class exit_status : int {
  ok = 0,               ///< The run finished (and the PNG was written and, with --check, is not blank).
  usage_error = 1,      ///< Invalid command line.
  runtime_failure = 2,  ///< A membridge, GL, CUDA or Vulkan error.
  blank_image = 3,      ///< --check (or headless): the written image is blank.
  skipped = 77,         ///< --gpu-or-skip without a CUDA device (CTest's skip code).
};

inline constexpr std::uint64_t default_headless_frames = 300;
inline constexpr int default_gpu_grid = 2048;
inline constexpr int default_cpu_grid = 256;
inline constexpr std::uint32_t max_slots = 8;
inline constexpr std::string_view default_png = "heightfield.png";

/// Everything the command line sets.
struct app_options {
  bool headless = false;       ///< --headless: EGL, no window; write a PNG of the last frame.
  std::uint64_t frames = 0;    ///< --frames: 0 = until the window closes (windowed only).
  std::string out;             ///< --out: PNG of the last frame.
  std::string screenshot;      ///< --screenshot: PNG of the window's last image (overlay included).
  int grid = 0;                ///< --grid: cells per side; 0 = the path's default (2048 GPU, 256 CPU).
  int steps = 1;               ///< --steps: simulation steps per drawn frame.
  std::uint32_t slots = 3;     ///< --slots: frames in flight (height slots in the ring).
  std::uint32_t width = 1280;  ///< --width: image width.
  std::uint32_t height = 720;  ///< --height: image height.
  bool cpu = false;            ///< --cpu: the CPU path even with a CUDA device.
  bool host_ordering = false;  ///< --host-ordering: order frames on the host even when GL has timeline semaphores.
  bool check = false;          ///< --check: fail (exit 3) when the PNG is blank (always on headless).
  bool gpu_or_skip = false;    ///< --gpu-or-skip: exit 77 instead of running the CPU path without a CUDA device.
  std::uint64_t seed = 1;      ///< --seed: where the drops fall.
};

/// The parse result: options, or the exit status when the program should stop (help: ok; error: usage).
struct parsed_command_line {
  std::optional<app_options> options;
  exit_status status = exit_status::ok;
};

/// Parses argv (CLI11). Prints help or the error itself.
[[nodiscard]] parsed_command_line parse_command_line(int argc, const char* const* argv);

/// Fills the defaults that depend on the mode: headless runs get default_headless_frames and
/// default_png when unset, and always check the image.
void apply_mode_defaults(app_options& options, bool windowed);

}  // namespace heightfield
