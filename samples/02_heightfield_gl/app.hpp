// samples/02_heightfield_gl/app.hpp: the two paths of membridge_heightfield_gl (GPU: CUDA steps the
// field in a membridge buffer that GL draws from; CPU: the field stepped on the CPU into memory GL
// imports) and the frame loop they share.
#pragma once

#include "gl_window.hpp"
#include "heightfield_options.hpp"
#include "heightfield_renderer.hpp"

#include <membridge/core/error.hpp>
#include <membridge/core/result.hpp>
#include <membridge/gl/context.hpp>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace heightfield {

// The membridge names every part of the sample uses, said once here.
using membridge::errc;
using membridge::error;
using membridge::result;

/// What main() hands a path.
struct run_environment {
  app_options options;          ///< With the mode's defaults applied.
  bool windowed = false;        ///< A window is wanted and a display exists (the path opens the window).
  std::ostream* out = nullptr;  ///< Header, progress, statistics.
  std::string cpu_reason;       ///< Why the CPU path runs ("--cpu", "no CUDA device"); empty on the GPU path.
};

/// How a path describes itself in the header lines.
struct path_description {
  std::string path;      ///< "GPU path (CUDA -> GL, zero copy)" or "CPU path (...)".
  std::string device;    ///< The device that steps the field.
  std::string memory;    ///< Where the heights live and how GL sees them.
  std::string ordering;  ///< How frames are handed over.
  double import_ms = 0;  ///< The time GL's import of the heights took.
};

/// The producer side of the frame loop: what fills slot n % S, and how GL is ordered after it.
class frame_source {
 public:
  virtual ~frame_source() = default;
  /// Frame `frame`'s heights, ready for GL work submitted after this call (on the GPU or the host).
  /// Called once GL finished frame - S (the slot's previous reader).
  [[nodiscard]] virtual membridge::result<draw_input> acquire(std::uint64_t frame) = 0;
  /// After GL submitted frame `frame`'s draw.
  [[nodiscard]] virtual membridge::result<void> release(std::uint64_t frame) = 0;
  /// GL has finished frame `frame` (its fence signalled): host ordering tells the producer here.
  [[nodiscard]] virtual membridge::result<void> retired(std::uint64_t frame) = 0;
  /// An error of a producer thread, if one happened (polled while GL waits).
  [[nodiscard]] virtual std::optional<membridge::error> failure() const { return std::nullopt; }
  /// After a failure: makes every GPU wait GL submitted for frames below `submitted` satisfiable.
  virtual void unblock(std::uint64_t /*submitted*/) {}
  /// After the loop (every submitted frame retired): stops the producer. Returns its error, if any.
  [[nodiscard]] virtual membridge::result<void> finish(std::uint64_t submitted) = 0;
  /// Simulation time of each produced frame, in ms (CUDA events or the CPU clock).
  [[nodiscard]] virtual std::vector<double> sim_times_ms() const = 0;
  /// How the simulation time was measured ("CUDA events", "CPU clock").
  [[nodiscard]] virtual std::string sim_clock() const = 0;
};

/// The frame loop: draws options.frames frames (or until the window closes / a stop is requested)
/// with GL fences keeping S frames in flight, prints the header, progress and statistics, writes the
/// PNG of the last frame and checks it is not blank (options.check). `window` is null when headless.
/// Returns blank_image through `status` when the check fails.
[[nodiscard]] membridge::result<void> run_frames(const membridge::gl::context& gl, heightfield_renderer& renderer,
                                                 frame_source& source, const path_description& description,
                                                 gl_window* window, run_environment& env, exit_status& status);

/// Asks the frame loop to stop after the current frame (signal handler).
void request_stop() noexcept;

/// The GPU path (needs a CUDA device; built only with MEMBRIDGE_CUDA_KERNELS).
[[nodiscard]] membridge::result<void> run_gpu(run_environment& env, exit_status& status);
/// Why the GPU path cannot run here (no CUDA device, no driver, built without kernels), or "".
[[nodiscard]] std::string gpu_unavailable_reason();
/// The CPU path: the field on the CPU, written into Vulkan-exported memory that GL imports.
[[nodiscard]] membridge::result<void> run_cpu(run_environment& env, exit_status& status);

/// "1280x720" etc.
[[nodiscard]] std::string size_text(std::uint64_t w, std::uint64_t h);

}  // namespace heightfield
