// The command line of membridge_ipc_producer.
#include "producer_options.hpp"

#include "app_options.hpp"  // parse_count (sample 01)
#include "particle_layout.hpp"
#include "view_cli.hpp"  // samples/common: add_ranged

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <utility>

namespace particles::ipc_producer {

parsed_command_line parse_command_line(int argc, const char* const* argv) {
  CLI::App app(
      "Runs the CUDA particle simulation of membridge sample 01 in a membridge growable_buffer and publishes it\n"
      "to other processes (membridge sample 03): viewers (membridge_ipc_viewer) attach over a Unix socket,\n"
      "import the very memory and draw every frame with no copy, paced by one timeline-semaphore handoff per\n"
      "frame. The buffer grows every --grow-every frames, in place; viewers follow. Needs a CUDA device.\n"
      "With --sim-device B --render-device A (two GPUs) it simulates on B and moves each frame to the published\n"
      "buffer on A (sync::cross_gpu_link: peer copy, or pinned host memory when the GPUs cannot peer); viewers\n"
      "draw on A (membridge_ipc_viewer --render-device A).\n"
      "Runs until SIGINT/SIGTERM (or --frames). Exit status: 0 ok, 1 invalid command line, 2 runtime failure.",
      "membridge_ipc_producer");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  producer_options o;
  std::string particles_text;
  std::string max_text;
  const CLI::Validator name_check(
      [](std::string& text) -> std::string {
        if (ipc_layout::is_valid_socket_name(text)) return {};
        return "'" + text + "' is not a socket name (1 to 64 letters, digits, '-', '_', '.')";
      },
      "", "socket name");
  const CLI::Validator count_check(
      [](std::string& text) -> std::string {
        if (app::parse_count(text)) return {};
        return "'" + text + "' is not a particle count from 1 to 64M (e.g. 200000, 256K, 1M, 4M)";
      },
      "COUNT", "particle count");
  app.add_option("--name", o.name,
                 "Socket name: the socket is $XDG_RUNTIME_DIR/membridge/NAME.sock (viewers: --name NAME)")
      ->capture_default_str()
      ->check(name_check)
      ->type_name("NAME");
  app.add_option("--particles", particles_text, "Particles per frame at the start; K = 1024, M = 1048576 (default 1M)")
      ->check(count_check)
      ->type_name("N");
  app.add_option("--max-particles", max_text,
                 "The most particles the buffer grows to: its reserved size is slots x this x 32 bytes (default 8M)")
      ->check(count_check)
      ->type_name("N");
  samples::add_ranged(app, "--grow-every", o.grow_every, "Frames between growths (0 = never grow)",
                      std::uint64_t{0}, std::uint64_t{1'000'000'000}, "F");
  samples::add_ranged(app, "--grow-factor", o.grow_factor, "Particles are multiplied by this at each growth (1.25 to 16)",
                      1.25, 16.0, "X");
  samples::add_ranged(app, "--frames", o.frames, "Frames to produce (0 = until SIGINT or SIGTERM)", std::uint64_t{0},
                      std::uint64_t{1'000'000'000'000}, "F");
  samples::add_ranged(app, "--slots", o.slots,
                      "Frames in flight: slots of the ring in the buffer (published as the semaphores' parameter)",
                      std::uint32_t{1}, std::uint32_t{8}, "S");
  samples::add_ranged(app, "--steps", o.steps, "Simulation steps per frame (0 freezes the particles)", 0, 1000, "K");
  samples::add_ranged(app, "--idle-fps", o.idle_fps,
                      "Frame rate while no consumer is attached (a consumer paces the producer itself); 0 = unlimited",
                      0.0, 100000.0, "F");
  app.add_option("--seed", o.seed, "Random seed of the initial particle disc")->capture_default_str()->type_name("N");
  app.add_option("--render-device", o.render_device,
                 "CUDA device whose memory holds the published buffer and frame timeline: the GPU viewers draw on")
      ->check(CLI::Range(0, 1023))
      ->capture_default_str()
      ->type_name("A");
  app.add_option("--sim-device", o.sim_device,
                 "CUDA device that simulates; another than --render-device moves each frame to the render GPU's "
                 "buffer (peer copy, or pinned host memory when the GPUs cannot peer)")
      ->check(CLI::Range(0, 1023))
      ->capture_default_str()
      ->type_name("B");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help (stdout) or the error and a hint (stderr)
    return {std::nullopt, rc == 0 ? exit_status::ok : exit_status::usage_error};
  }
  if (!particles_text.empty()) o.particles = *app::parse_count(particles_text);  // checked by count_check
  if (!max_text.empty()) o.max_particles = *app::parse_count(max_text);
  o.particles = ipc_layout::align_count(o.particles);
  o.max_particles = ipc_layout::align_count(o.max_particles);
  if (o.max_particles < o.particles) {
    if (!max_text.empty()) {
      std::fprintf(stderr,
                   "membridge_ipc_producer: --max-particles %llu is below --particles %llu\n"
                   "Run with --help for more information.\n",
                   static_cast<unsigned long long>(o.max_particles), static_cast<unsigned long long>(o.particles));
      return {std::nullopt, exit_status::usage_error};
    }
    o.max_particles = o.particles;  // only --particles given, above the default maximum: no growth room
  }
  return {std::move(o), exit_status::ok};
}

std::string device_problem(const producer_options& options, int device_count) {
  std::string present;
  if (device_count <= 0)
    present = "this machine has none";
  else if (device_count == 1)
    present = "this machine has 1: 0";
  else
    present = "this machine has " + std::to_string(device_count) + ": 0 to " + std::to_string(device_count - 1);
  for (const auto& [flag, ordinal] : {std::pair{"--render-device", options.render_device},
                                      std::pair{"--sim-device", options.sim_device}}) {
    if (ordinal < 0 || ordinal >= device_count)
      return std::string(flag) + " " + std::to_string(ordinal) + ": no such CUDA device (" + present + ")";
  }
  return {};
}

}  // namespace particles::ipc_producer
