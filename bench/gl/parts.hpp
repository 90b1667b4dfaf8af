// bench/gl/parts.hpp: the three parts of the GL benchmark (steady frames, growth, several CUDA steps
// per drawn frame), what they share and what each measures.
#pragma once

#include "support.hpp"

#include <membridge/cuda/device.hpp>
#include <membridge/gl/headless_context.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace membridge::bench::gl_bench {

/// How the membridge path orders CUDA and GL.
enum class ordering : std::uint8_t {
  semaphores = 0,  ///< sync::frame_timeline + sync::gl_frame_consumer (timeline semaphores, no host wait).
  host = 1,        ///< No GL timeline semaphores: cudaStreamSynchronize before GL, a GL fence before CUDA reuses a slot.
};

/// The paths a frame can take.
enum class path : std::uint8_t {
  legacy = 0,       ///< cudaGraphicsMapResources / kernel(s) / Unmap around every CUDA step.
  legacy_once = 1,  ///< One map / all k kernels / one unmap per drawn frame (part c only).
  membridge = 2,    ///< VMM memory imported once into GL; frame_timeline ordering (or host ordering).
};

[[nodiscard]] const char* path_name(path p) noexcept;

/// What every part uses: the CUDA device, the GL context on it, Vulkan (for the frame timeline's
/// semaphores) and the run's settings.
struct bench_env {
  const cuda::device* cu = nullptr;
  const gl::headless_context* gl = nullptr;
  const vulkan::device_context* vk = nullptr;  ///< Null when Vulkan is unavailable (host ordering).
  ordering order = ordering::semaphores;
  std::uint32_t slots = 2;    ///< Frames in flight / ring slots, both paths.
  int frames = 200;           ///< Timed frames per block.
  int warmup = 10;            ///< Untimed frames at the start of every block.
  int blocks = 6;             ///< Interleaved blocks per path (parts a and c).
  int growth_rounds = 3;      ///< Interleaved rounds per path (part b).
  bool quick = false;         ///< Small sizes (smoke run).
  bool import_on_render_thread = false;  ///< Part b: import growth on the render thread (no shared context).
};

/// One block of frames of one lane.
struct frame_block {
  double gpu_frame_us = 0.0;              ///< Mean interval between the block's GL end-of-frame timestamps.
  std::vector<double> gpu_interval_us;    ///< Each interval.
  std::vector<double> host_us;            ///< Render thread, wall time of each frame's own calls.
  std::vector<double> host_cpu_us;        ///< Render thread, thread CPU time of the same region.
  std::vector<double> producer_us;        ///< membridge: the CUDA producer thread's calls per frame.
  std::uint64_t frames = 0;               ///< Timed frames.
  std::uint64_t gl_to_cuda = 0;           ///< Ownership transfers GL -> CUDA counted in the timed frames.
  std::uint64_t cuda_to_gl = 0;           ///< Ownership transfers CUDA -> GL counted in the timed frames.
};

/// Every block of one path at one size and k.
struct lane_result {
  path which = path::legacy;
  unsigned steps = 1;  ///< CUDA steps (kernels) per drawn frame.
  std::vector<frame_block> blocks;
};

/// One-time costs at one size, repeated.
struct one_time_costs {
  std::vector<double> register_us;      ///< cudaGraphicsGLRegisterBuffer of a frame-sized GL buffer.
  std::vector<double> unregister_us;    ///< cudaGraphicsUnregisterResource.
  std::vector<double> import_us;        ///< sync::mirror_in_gl of a frame-sized growable_buffer (export + GL import + storage).
  std::vector<double> timeline_us;      ///< sync::frame_timeline::create (membridge, semaphores only).
  std::vector<double> consumer_us;      ///< sync::gl_frame_consumer::import (membridge, semaphores only).
};

/// Part (a) at one frame size.
struct steady_size {
  std::string name;  ///< "1080p", "4K".
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::size_t frame_bytes = 0;
  lane_result legacy;
  lane_result membridge;
  one_time_costs once;
};

/// Part (c): k = 1, 2, 4, 8 at one size.
struct steps_result {
  std::string size_name;
  std::size_t frame_bytes = 0;
  std::vector<lane_result> lanes;  ///< Every path for every k.
};

/// Part (b): one round of one path.
struct growth_round {
  path which = path::legacy;
  std::vector<double> period_ms;       ///< Render thread: end of frame i-1 to end of frame i.
  std::vector<double> region_ms;       ///< Render thread: the frame's own calls (growth handling included).
  std::vector<double> gpu_interval_ms; ///< GL timestamps: frame i-1 to frame i.
  std::vector<double> step_ms;         ///< Per growth step: legacy: the re-allocate/copy/re-register calls;
                                       ///< membridge: growable_buffer::grow (producer thread).
  std::vector<double> import_ms;       ///< membridge: sync::follow_growth per step (importer or render thread).
  std::vector<double> apply_lag_frames;///< membridge: frames from the growth to GL using the new size.
  std::size_t peak_bytes = 0;          ///< Most device memory in use above the round's baseline.
  std::size_t final_bytes = 0;         ///< The buffer's final size.
  std::size_t gl_final_bytes = 0;      ///< The size GL used in the last frame (membridge: imports may lag).
  std::uint64_t frames = 0;
};

struct growth_result {
  std::size_t start_bytes = 0;
  std::size_t final_bytes = 0;
  int frames_per_step = 0;
  int steps = 0;
  bool import_off_render_thread = false;  ///< membridge imported on a thread with a shared GL context.
  std::string import_note;                ///< Why not, when not.
  bool sparse = false;                    ///< The GL view was one sparse buffer.
  std::vector<growth_round> legacy;
  std::vector<growth_round> membridge;
};

/// Frame sizes: 1080p and 4K RGBA8, or small ones with --quick.
struct frame_size {
  std::string name;
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  [[nodiscard]] std::size_t bytes() const noexcept { return std::size_t{width} * height * 4; }
};
[[nodiscard]] std::vector<frame_size> frame_sizes(bool quick);

/// Part (a).
[[nodiscard]] std::vector<steady_size> run_steady(const bench_env& env);
/// Part (c).
[[nodiscard]] steps_result run_steps(const bench_env& env);
/// Part (b).
[[nodiscard]] growth_result run_growth(const bench_env& env);

}  // namespace membridge::bench::gl_bench
