// samples/03_ipc_producer/producer_options.hpp: the command line of membridge_ipc_producer (CLI11).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace particles::ipc_producer {

/// Exit statuses of membridge_ipc_producer.
enum class exit_status : int {
  ok = 0,               ///< Stopped by a signal or after --frames frames.
  usage_error = 1,      ///< The command line was invalid (the reason is printed).
  runtime_failure = 2,  ///< No CUDA device, or a driver, membridge or ipc call failed.
  // A --sim-device or --render-device that this machine does not have is usage_error (1), checked in
  // main() against the CUDA device count (device_problem()).
};

/// What the command line asked for.
struct producer_options {
  std::string name = "particles";                     ///< --name: socket name ($XDG_RUNTIME_DIR/membridge/<name>.sock).
  std::uint64_t particles = std::uint64_t{1} << 20;   ///< --particles: particles per frame at the start.
  std::uint64_t max_particles = std::uint64_t{8} << 20;  ///< --max-particles: the most it grows to (reserved).
  std::uint64_t grow_every = 300;                     ///< --grow-every: frames between growths (0 = never).
  double grow_factor = 2.0;                           ///< --grow-factor: particles x this per growth.
  std::uint64_t frames = 0;                           ///< --frames: frames to produce (0 = until stopped).
  std::uint32_t slots = 3;                            ///< --slots: the frame ring's slots.
  int steps = 1;                                      ///< --steps: simulation steps per frame.
  double idle_fps = 60.0;                             ///< --idle-fps: frame rate while no consumer is attached (0 = unlimited).
  std::uint64_t seed = 1;                             ///< --seed: the initial disc's random seed.
  int sim_device = 0;     ///< --sim-device: the CUDA device whose kernels simulate (B).
  int render_device = 0;  ///< --render-device: the CUDA device whose memory holds the published buffer and
                          ///< timeline (A, the viewers' GPU); another than sim_device: sync::cross_gpu_link.
};

/// Options to run with, or the status to exit with (--help: 0; invalid input: 1, reason on stderr).
struct parsed_command_line {
  std::optional<producer_options> options;  ///< Set when the program should run.
  exit_status status = exit_status::ok;      ///< Meaningful when options is empty.
};

/// Parses argv. Counts are rounded up to a multiple of 8 (ipc_layout::count_alignment).
[[nodiscard]] parsed_command_line parse_command_line(int argc, const char* const* argv);

/// Why `options` cannot run on a machine with `device_count` CUDA devices, e.g. `--sim-device 2: no
/// such CUDA device (this machine has 2: 0 to 1)`, or an empty string when both devices exist.
[[nodiscard]] std::string device_problem(const producer_options& options, int device_count);

}  // namespace particles::ipc_producer
