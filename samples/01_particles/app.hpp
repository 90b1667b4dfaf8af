// samples/01_particles/app.hpp: the two paths of membridge_particles (GPU: CUDA writes, Vulkan draws
// the same memory; CPU: the same step on the CPU, uploaded) and what they share.
#pragma once

#include "app_options.hpp"
#include "frame_loop.hpp"
#include "window.hpp"

#include <membridge/core/result.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <iosfwd>
#include <string>

namespace particles::app {

/// What main() hands a path.
struct run_environment {
  app_options options;               ///< With the mode's defaults applied.
  window_system* windows = nullptr;  ///< Set in windowed mode (GLFW loaded, a display found).
  std::ostream* out = nullptr;       ///< Header, progress, statistics.
  std::string cpu_reason;            ///< Why the CPU path runs ("--cpu", "no CUDA device"); empty on the GPU path.
};

/// How a path describes itself in the header lines.
struct path_description {
  std::string path;    ///< "GPU (CUDA -> Vulkan, zero copy)" or "CPU (fallback)".
  std::string device;  ///< The GPU's name.
  std::string memory;  ///< One line on where the particles live and how frames are handed over.
};

/// Vulkan context options for a run: validation (messages printed to stderr and counted by the
/// context) and, windowed, GLFW's instance extensions and VK_KHR_swapchain.
[[nodiscard]] membridge::vulkan::create_options context_options(const run_environment& env);

/// The part of a run after a path made its context and particle source: the window (windowed),
/// the renderer (options.slots frame slots), the header, the frames, the statistics, the PNG of the
/// last frame (when options.out is set) and, with --validation, the message count (any message is
/// an error).
[[nodiscard]] membridge::result<void> render(const membridge::vulkan::device_context& context, frame_source& source,
                                             const path_description& description, run_environment& env);

/// With --validation: prints `validation: N messages` and fails when N > 0 (call it last, when
/// everything but the context is destroyed, so teardown is checked too). Without: does nothing.
[[nodiscard]] membridge::result<void> check_validation(const membridge::vulkan::device_context& context,
                                                       const run_environment& env);

/// The GPU path (needs a CUDA device; built only with MEMBRIDGE_CUDA_KERNELS).
[[nodiscard]] membridge::result<void> run_gpu(run_environment& env);

/// Why the GPU path cannot run on this machine (no CUDA device, no driver, built without kernels),
/// or an empty string when it can. Initialises the CUDA runtime on device 0 when it succeeds.
[[nodiscard]] std::string gpu_unavailable_reason();

/// The CPU path: particles in host memory, stepped by step_cpu and uploaded each frame.
[[nodiscard]] membridge::result<void> run_cpu(run_environment& env);

}  // namespace particles::app
