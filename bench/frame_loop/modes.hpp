// bench/frame_loop/modes.hpp: the three frame loops (membridge pipelined, naive, host staging copy)
// and the floor they are compared with (sim GPU time + draw GPU time + one CUDA<->Vulkan round trip),
// and the handoff floor: the pipelined loop with no work.
#pragma once

#include "scene.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace membridge::bench::frame_loop {

inline constexpr int floor_frames = 100;            ///< Frames back to back per sim/draw floor sample.
inline constexpr int floor_repeats = 3;             ///< Samples per floor component (median taken).
inline constexpr int round_trip_warmup = 20;        ///< Untimed round trips first.
inline constexpr int round_trip_iterations = 500;   ///< Timed round trips.
inline constexpr std::uint64_t handoff_floor_warmup = 60;   ///< Untimed frames of the handoff floor loop.
inline constexpr std::uint64_t handoff_floor_frames = 600;  ///< Timed frames of the handoff floor loop.

/// How long each run is.
struct loop_config {
  std::uint64_t warmup = 60;   ///< Frames run first and not measured (>= ring_slots).
  std::uint64_t frames = 600;  ///< Frames measured.
  int steps = 1;               ///< Simulation steps (kernel launches) per drawn frame.
  /// warmup + frames.
  [[nodiscard]] std::uint64_t total() const noexcept { return warmup + frames; }
};

/// The three ways to run the frame loop.
enum class mode : std::uint8_t {
  pipelined = 0,  ///< membridge: producer thread + render thread, frame_timeline waits on the GPU.
  naive = 1,      ///< One thread: sim, cudaStreamSynchronize, draw, vkQueueWaitIdle.
  staging = 2,    ///< One thread: sim, copy to pinned host memory, upload through Vulkan staging, draw, wait.
};
inline constexpr int mode_count = 3;

/// One run of one mode, per measured frame (the warm-up frames are dropped).
struct mode_run {
  std::vector<double> frame_ms;            ///< Frame time (pipelined: between consumed signals; others: wall).
  std::vector<double> gpu_frame_ms;        ///< Pipelined: between consecutive frames' sim ends (CUDA events).
  std::vector<double> thread_cpu_us;       ///< CPU of the thread that records and submits (pipelined: the
                                           ///< render thread including its throttling fence wait).
  std::vector<double> render_work_cpu_us;  ///< Pipelined: the render thread without the fence wait.
  std::vector<double> producer_cpu_us;     ///< Pipelined: the producer thread (enqueueing CUDA work).
  std::uint64_t cuda_waits = 0;            ///< Pipelined: CUDA waits on Vulkan enqueued (cuda_acquire).
  std::uint64_t vulkan_waits = 0;          ///< Pipelined: Vulkan submits that wait on CUDA.
  std::uint64_t measured_frames = 0;       ///< Frames the counts are over.
};

/// membridge's pipelined loop: a producer thread enqueues, per frame, cuda_acquire, the sim and
/// cuda_release (with a CUDA event after it); the calling thread records and submits the draw with
/// frame_timeline's wait (at the renderer's particle stage) and signal; a monitor thread timestamps each frame's
/// `consumed` value (wait_consumed). No host wait except the renderer's per-slot fence (throttling).
[[nodiscard]] mode_run run_pipelined(session& s, const scene& sc, const loop_config& cfg);

/// The naive loop: sim, cudaStreamSynchronize, record + submit without semaphores, vkQueueWaitIdle.
[[nodiscard]] mode_run run_naive(session& s, const scene& sc, const loop_config& cfg);

/// The host staging loop: sim, cudaMemcpyAsync to pinned memory, cudaStreamSynchronize,
/// renderer::upload_particles, record + submit from the renderer's own buffer, wait_idle.
[[nodiscard]] mode_run run_staging(session& s, const scene& sc, const loop_config& cfg);

/// Waits (at most wait_timeout each) for the session's stream and the renderer's frames; `what`
/// names the work in messages.
void drain(session& s, std::string_view what);

/// The floor's parts, each measured alone in this round.
struct floor_parts {
  double sim_ms = 0.0;         ///< GPU time of one frame's copy + steps (CUDA events, 100 frames back to back).
  double draw_ms = 0.0;        ///< One draw, 100 submitted back to back without semaphores (wall / 100).
  double round_trip_ms = 0.0;  ///< One CUDA->Vulkan->CUDA handoff with no work (frame_timeline, 1 slot).
  /// The pipelined loop (run_pipelined's threads, ring_slots slots and frame_timeline calls) with no
  /// work: the sim is one step of one particle (one kernel launch of one block, no copy) and the draw
  /// an empty command buffer submitted with the same wait on `produced` and signal of `consumed`.
  /// Its mean frame period (between consumed signals, monitor thread) over handoff_floor_frames:
  /// what the driver costs per pipelined CUDA->Vulkan->CUDA handoff. Not part of total().
  double handoff_floor_ms = 0.0;
  double handoff_floor_median_ms = 0.0;  ///< The same loop's median frame interval.
  /// The same loop (mean interval) with the handoffs made by raw driver calls on the same semaphores
  /// instead of membridge's: cuWaitExternalSemaphoresAsync / cuSignalExternalSemaphoresAsync through the
  /// driver table and vkQueueSubmit with VkTimelineSemaphoreSubmitInfo. Not part of total().
  double handoff_floor_raw_ms = 0.0;
  /// sim + draw + round trip.
  [[nodiscard]] double total() const noexcept { return sim_ms + draw_ms + round_trip_ms; }
};

/// Measures the floor's parts for `steps` steps per frame on `sc`, then the handoff floor and its raw
/// driver call twin (leaves the particles stepped).
[[nodiscard]] floor_parts measure_floor(session& s, const scene& sc, int steps);

}  // namespace membridge::bench::frame_loop
