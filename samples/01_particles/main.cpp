// membridge_particles: the flagship sample. A CUDA particle simulation (1M particles by default)
// written into a membridge buffer and drawn by Vulkan from the same memory, windowed with GLFW when a
// display exists, or headless (--headless) writing a PNG of the last frame. Prints frame-time
// statistics. Without a CUDA device the same simulation runs on the CPU so the renderer still works.
// README.md beside this file describes the options and the output.
#include "app.hpp"
#include "app_options.hpp"
#include "window.hpp"

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

namespace {

/// Ctrl+C (or SIGTERM) ends the run after the current frame: statistics and PNG still come out. A
/// second one kills the process as usual (the handler restores the default action).
void on_stop_signal(int signal_number) {
  particles::app::request_stop();
  std::signal(signal_number, SIG_DFL);  // async-signal-safe
}

void install_stop_handler() {
  std::signal(SIGINT, &on_stop_signal);
  std::signal(SIGTERM, &on_stop_signal);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace particles::app;
  const parsed_command_line parsed = parse_command_line(argc, argv);
  if (!parsed.options) return static_cast<int>(parsed.status);

  run_environment env;
  env.options = *parsed.options;
  env.out = &std::cout;

  // Windowed unless --headless or there is no display (then headless, with the headless defaults).
  const std::unique_ptr<window_system> windows =
      apps::open_windows_or_headless("membridge_particles", env.options.headless, std::cout);
  env.windows = windows.get();
  apply_mode_defaults(env.options, windows != nullptr);

  std::string why_cpu;
  if (env.options.cpu) {
    env.cpu_reason = "--cpu";
  } else if (why_cpu = gpu_unavailable_reason(); !why_cpu.empty()) {
    // On a GPU machine (scripts/gpu-run) the fallback would hide a broken setup: fail instead.
    if (const char* required = std::getenv("MEMBRIDGE_REQUIRE_GPU");
        required != nullptr && std::string(required) == "1") {
      std::cerr << "membridge_particles: error: no CUDA device (" << why_cpu << ") and MEMBRIDGE_REQUIRE_GPU=1\n";
      return static_cast<int>(exit_status::runtime_failure);
    }
    env.cpu_reason = "no CUDA device";
    std::cout << "membridge_particles: no CUDA device (" << why_cpu
              << "); running the CPU simulation so the renderer still works\n";
  }
  std::cout << std::flush;

  install_stop_handler();
  const membridge::result<void> ran = env.cpu_reason.empty() ? run_gpu(env) : run_cpu(env);
  std::cout << std::flush;
  if (!ran) {
    std::cerr << "membridge_particles: error: " << ran.error().message() << '\n';
    return static_cast<int>(exit_status::runtime_failure);
  }
  return static_cast<int>(exit_status::ok);
}
