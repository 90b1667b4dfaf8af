// samples/03_ipc_viewer/viewer.hpp: the viewer process: attach to a producer, import its buffer and
// frame timeline into Vulkan, draw its frames as they come, follow its growth, survive its departure.
#pragma once

#include "viewer_options.hpp"
#include "window.hpp"

#include <membridge/core/result.hpp>

#include <iosfwd>

namespace particles::ipc_viewer {

/// What main() hands the viewer.
struct run_environment {
  viewer_options options;                 ///< With the mode's defaults applied.
  apps::window_system* windows = nullptr;  ///< Set in windowed mode (GLFW loaded, a display found).
  std::ostream* out = nullptr;            ///< Attach lines, progress, statistics.
};

/// Asks run() to stop after the frame it is drawing (async-signal-safe, for SIGINT/SIGTERM).
void request_stop() noexcept;

/// Connects (retrying for --reconnect-ms), makes a Vulkan device on the producer's GPU, imports the
/// buffer and the frame timeline and draws frames until --frames were drawn, the window closes or
/// request_stop(); reconnects when the producer goes (windowed: keeps its last image meanwhile). Then
/// prints the statistics, writes the PNG (--out) and, with --validation, the message count.
/// Errors: no producer within --reconnect-ms; headless: the producer gone for good before --frames
/// frames were drawn; membridge's, Vulkan's and the renderer's errors; validation messages.
[[nodiscard]] membridge::result<void> run(run_environment& env);

}  // namespace particles::ipc_viewer
