// samples/01_particles/app_options.hpp: the command line of membridge_particles (CLI11), and the
// defaults that depend on the mode (headless or windowed).
#pragma once

#include "render_method.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace particles::app {

/// Particles simulated by default: 1M (1048576).
inline constexpr std::uint64_t default_particle_count = std::uint64_t{1} << 20;
/// The most particles --particles accepts: 64M, i.e. 2 GiB per slot.
inline constexpr std::uint64_t max_particle_count = std::uint64_t{1} << 26;
/// Frames drawn headless when --frames is not given.
inline constexpr std::uint64_t default_headless_frames = 300;
/// The PNG written headless when --out is not given.
inline constexpr std::string_view default_png = "particles.png";
/// The most frame slots (the renderer's limit).
inline constexpr std::uint32_t max_slots = 8;

/// Exit statuses of membridge_particles.
enum class exit_status : int {
  ok = 0,               ///< The run finished (and the PNG, if any, was written).
  usage_error = 1,      ///< The command line was invalid (the reason is printed).
  runtime_failure = 2,  ///< A driver or membridge call failed, or --validation saw messages.
};

/// What the command line asked for.
struct app_options {
  bool headless = false;      ///< --headless: render offscreen, never open a window.
  std::uint64_t frames = 0;   ///< --frames: frames to draw; 0 = until the window closes (windowed only).
  bool frames_given = false;  ///< True when --frames was on the command line.
  std::string out;            ///< --out: PNG of the last frame; empty = none (windowed without --out).
  std::string screenshot;     ///< --screenshot: PNG of the last image the window presented; empty = none.
  std::uint64_t particles = default_particle_count;  ///< --particles.
  int steps = 1;                                     ///< --steps: simulation steps per drawn frame (0 = frozen).
  std::uint32_t slots = 3;                           ///< --slots: frames in flight (ring of particle slots and images).
  std::uint32_t width = 1280;                        ///< --width: image width in pixels.
  std::uint32_t height = 720;                        ///< --height: image height in pixels.
  bool cpu = false;                                  ///< --cpu: simulate on the CPU even when a CUDA device exists.
  render_method render = render_method::splat;       ///< --render: splat (compute) or points (graphics pipeline).
  bool validation = false;  ///< --validation: Khronos validation layer on; any message fails the run.
  std::uint64_t seed = 1;   ///< --seed: the initial disc's random seed.
  int render_device = 0;    ///< --render-device: the CUDA device whose GPU holds the slots and draws them.
  int sim_device = 0;       ///< --sim-device: the CUDA device that simulates (another one: sync::cross_gpu_link).
};

/// A particle count: digits with an optional binary suffix, K or k (x1024) or M or m (x1048576),
/// e.g. "200000", "256K", "1M", "4M". Nothing (nullopt) for anything else, 0, or above
/// max_particle_count.
[[nodiscard]] std::optional<std::uint64_t> parse_count(std::string_view text);

/// The result of parsing a command line: options to run with, or the status to exit with
/// (--help: 0; invalid input: 1, after the reason was printed to stderr).
struct parsed_command_line {
  std::optional<app_options> options;    ///< Set when the program should run.
  exit_status status = exit_status::ok;  ///< Meaningful when options is empty.
};

/// Parses argv. Prints --help to stdout and errors (with a hint to --help) to stderr.
[[nodiscard]] parsed_command_line parse_command_line(int argc, const char* const* argv);

/// Fills the defaults of the mode the run ended up in: headless runs draw default_headless_frames
/// unless --frames was given (or was 0) and write default_png unless --out was given.
void apply_mode_defaults(app_options& options, bool windowed);

/// Brightness per particle for `count` particles: the renderer's 0.15 (which suits 1M particles at
/// 1280x720) scaled so that the total light stays about the same, clamped to [0.0375, 1].
[[nodiscard]] float brightness_for(std::uint64_t count) noexcept;

}  // namespace particles::app
