// samples/01_particles/frame_loop.hpp: the render loop both paths share (record, submit, present,
// frame statistics and progress) and the output every run ends with (statistics, PNG).
#pragma once

#include "app_options.hpp"
#include "frame_stats.hpp"
#include "overlay_text.hpp"
#include "particle_renderer.hpp"
#include "window.hpp"

#include <membridge/core/result.hpp>

#include <vulkan/vulkan_core.h>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace particles::app {

// The apps layer's names (samples/common) this sample uses, said once here.
using apps::frame_stats;
using apps::frame_summary;
using apps::present_job;
using apps::progress_printer;
using apps::window;
using apps::window_system;

/// What the renderer draws for one frame, and the semaphores its submission waits for and signals.
struct frame_input {
  VkBuffer buffer = VK_NULL_HANDLE;       ///< The particle buffer (stride 32).
  VkDeviceSize offset = 0;                ///< Byte offset of the frame's particles in `buffer`.
  std::uint32_t count = 0;                ///< Particles to draw.
  std::vector<semaphore_wait> waits;      ///< E.g. the timeline's `produced` at renderer.particle_stages().
  std::vector<semaphore_signal> signals;  ///< E.g. the timeline's `consumed`.
};

/// Where a path's particles come from: the CUDA producer thread, or the CPU step plus upload.
class frame_source {
 public:
  frame_source() = default;
  frame_source(const frame_source&) = delete;
  frame_source& operator=(const frame_source&) = delete;
  virtual ~frame_source() = default;

  /// Makes frame `frame`'s particles available to `renderer` (CPU: step, then upload through the
  /// renderer; GPU: nothing to do here, the producer thread runs ahead) and says what to draw.
  /// Errors end the run.
  [[nodiscard]] virtual membridge::result<frame_input> prepare(std::uint64_t frame, particle_renderer& renderer) = 0;

  /// Called once after the loop, whether it succeeded or not, with the number of frames submitted:
  /// waits until Vulkan consumed them (every wait has a timeout), stops and joins helper threads.
  /// Errors: the first error of a helper thread, or a timeout.
  [[nodiscard]] virtual membridge::result<void> finish(std::uint64_t submitted) = 0;
};

/// What the loop measured.
struct loop_result {
  std::uint64_t frames = 0;    ///< Frames drawn.
  std::size_t warm_up = 0;     ///< Frames left out of `summary`.
  frame_summary summary;       ///< Frame times after the warm-up.
  bool window_closed = false;  ///< The user closed the window before `frames` were drawn.
  bool interrupted = false;    ///< request_stop() (Ctrl+C) ended the run early.
};

/// Asks run_frames() to stop after the frame it is drawing (async-signal-safe: main() calls it from
/// its SIGINT/SIGTERM handler, so Ctrl+C still prints the statistics and writes the PNG).
void request_stop() noexcept;

/// Frames left out of the statistics at the start of a run (pipelines fill, caches warm).
inline constexpr std::size_t warm_up_frames = 10;

/// The camera's yaw (radians) for frame `frame`: a slow orbit, the same on every path and run.
[[nodiscard]] float camera_yaw(std::uint64_t frame) noexcept;

/// The window overlay's lines: the frame statistics of the latest frames, then the particles drawn,
/// their bytes and the image size (`1048576 particles  32.0 MiB  1280x720 image`).
[[nodiscard]] std::vector<std::string> overlay_lines(const frame_stats& stats, std::uint32_t count,
                                                     const particle_renderer& renderer);

/// Draws frames 0, 1, ... (options.frames of them, or until the window closes when 0): per frame
/// source.prepare(), renderer.record(frame % slots), the window's blit (if any), renderer.submit()
/// with the source's and the window's semaphores, present; request_stop() ends it early. A frame's time is the interval
/// between the ends of consecutive frames on this thread; a progress line goes to `out` every 2 s. Calls
/// source.finish() at the end, also after an error. The loop's error is returned (with the source's, if it failed too,
/// in its context), else the source's.
[[nodiscard]] membridge::result<loop_result> run_frames(particle_renderer& renderer, frame_source& source, window* win,
                                                        const app_options& options, std::ostream& out);

/// The statistics line: `frames 290  median 1.92 ms  p99 2.40 ms  520.3 FPS  (first 10 frames not counted)`.
[[nodiscard]] std::string statistics_line(const loop_result& result);

/// Reads the last frame back and writes it to `path` as a PNG.
[[nodiscard]] membridge::result<void> write_last_frame(particle_renderer& renderer, const std::string& path);

}  // namespace particles::app
