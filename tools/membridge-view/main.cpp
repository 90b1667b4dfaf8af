// membridge-view: attaches by name to any membridge publisher and draws every buffer it publishes by
// the layout its element_format declares (ipc/layout.hpp): points, images and heightfields, windowed
// (GLFW) or headless (--frames N --out x.png). docs/viewer.md describes it.
#include "options.hpp"
#include "viewer.hpp"
#include "window.hpp"

#include <csignal>
#include <iostream>
#include <memory>

namespace {

/// Ctrl+C (or SIGTERM) ends the run after the current frame; a second one kills as usual.
void on_stop_signal(int signal_number) {
  membridge_view::request_stop();
  std::signal(signal_number, SIG_DFL);  // async-signal-safe
}

}  // namespace

int main(int argc, char** argv) {
  const membridge_view::parsed_options parsed = membridge_view::parse_options(argc, argv);
  if (!parsed.options) return parsed.status;
  const membridge_view::view_options& options = *parsed.options;
  std::unique_ptr<apps::window_system> windows;
  if (!options.headless) {
    auto opened = apps::window_system::open();
    if (!opened) {
      std::cerr << "membridge-view: no window (" << opened.error().context()
                << "); run with --headless or --out x.png to draw offscreen\n";
      return 1;
    }
    windows = std::move(*opened);
  }
  std::signal(SIGINT, &on_stop_signal);
  std::signal(SIGTERM, &on_stop_signal);
  std::signal(SIGPIPE, SIG_IGN);  // a publisher that vanishes must not kill the viewer
  const auto ran = membridge_view::run(options, std::cout, windows.get());
  std::cout << std::flush;
  if (!ran) {
    std::cerr << "membridge-view: error: " << ran.error().message() << '\n';
    return 1;
  }
  return 0;
}
