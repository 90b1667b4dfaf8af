// membridge_ipc_viewer: sample 03's viewer. Attaches to a membridge_ipc_producer over its Unix socket,
// imports the producer's particle buffer and frame semaphores into Vulkan (no copy) and draws every
// frame it can with sample 01's renderer, windowed with GLFW or headless with a PNG of the last frame;
// follows the buffer's growth live and reconnects when the producer goes. Prints the attach and import
// times and frame statistics. README.md beside this file describes the options and the output.
#include "viewer.hpp"
#include "viewer_options.hpp"
#include "window.hpp"

#include <csignal>
#include <iostream>
#include <memory>

namespace {

/// Ctrl+C (or SIGTERM) ends the run after the current frame: statistics and PNG still come out. A
/// second one kills the process as usual (the handler restores the default action).
void on_stop_signal(int signal_number) {
  particles::ipc_viewer::request_stop();
  std::signal(signal_number, SIG_DFL);  // async-signal-safe
}

}  // namespace

int main(int argc, char** argv) {
  using namespace particles::ipc_viewer;
  const parsed_command_line parsed = parse_command_line(argc, argv);
  if (!parsed.options) return static_cast<int>(parsed.status);

  run_environment env{.options = *parsed.options, .out = &std::cout};

  // Windowed unless --headless or there is no display (then headless, with the headless defaults).
  const std::unique_ptr<apps::window_system> windows =
      apps::open_windows_or_headless("membridge_ipc_viewer", env.options.headless, std::cout);
  env.windows = windows.get();
  apply_mode_defaults(env.options, windows != nullptr);

  std::signal(SIGINT, &on_stop_signal);
  std::signal(SIGTERM, &on_stop_signal);
  std::signal(SIGPIPE, SIG_IGN);  // a producer that vanishes must not kill the viewer
  const membridge::result<void> ran = run(env);
  std::cout << std::flush;
  if (!ran) {
    std::cerr << "membridge_ipc_viewer: error: " << ran.error().message() << '\n';
    return static_cast<int>(exit_status::runtime_failure);
  }
  return static_cast<int>(exit_status::ok);
}
