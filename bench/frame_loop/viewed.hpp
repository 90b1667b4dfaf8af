// bench/frame_loop/viewed.hpp: the "viewed" part of the frame loop benchmark. The particle sim runs
// as fast as it can on a thread of its own while a viewer on another thread takes the newest step
// at a paced rate (60 Hz, 144 Hz) and draws it; how many sim steps per second remain, against the
// same sim alone.
//
// The handoff is a mailbox of ring_slots (3) slots: the sim writes each step into a slot that is
// neither its source nor held by the viewer. At each tick the viewer asks for a frame; the sim's
// next step answers once the viewer released the frame before (else a later step does: the viewer
// holds at most one slot, so the sim always has a free one and never waits for the viewer; a CUDA
// wait on `released` remains as the counted fallback). After that step it signals `ready` = frame + 1 (a CUDA signal of a Vulkan timeline
// semaphore, once per drawn frame, not per step) and publishes (frame, step, slot). The viewer's
// submit waits for `ready` on the GPU, reads the slot and signals `released` = frame + 1 after the
// slot's last read; the sim writes that slot again only once `released` reached it (checked on the
// host with vkGetSemaphoreCounterValue; a CUDA wait on `released` only when no other slot is free).
//
// viewer_kind::ipc keeps all of this but puts the viewer in another process (ipc_viewer.hpp): a
// thread here forwards its requests to the sim and announces the publications through an
// ipc::publisher that also published the ring and both semaphores.
#pragma once

#include "viewer.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace membridge::bench::frame_loop {

/// What the viewed part runs.
struct viewed_options {
  std::size_t count = std::size_t{1} << 20U;  ///< Particles.
  double seconds = 2.0;                       ///< Measured window per viewed run (sim alone: 0.6x, >= 0.5 s).
  double warmup_seconds = 0.5;                ///< Run before the window (not measured).
  std::vector<int> rates_hz = {60, 144};      ///< Viewer rates.
  std::vector<viewer_kind> kinds = {viewer_kind::handoff,     viewer_kind::direct,    viewer_kind::direct_host,
                                    viewer_kind::copy,        viewer_kind::idle_vulkan, viewer_kind::idle_cuda,
                                    viewer_kind::idle_cuda_context, viewer_kind::ipc};
  int depth = 16;                             ///< Sim steps in flight at most (the sim's own throttle).
  /// The sim's stream waits on the GPU for the viewer's `released` = frame + 1 right after each step
  /// it publishes: the viewer's GPU work then runs while the sim's context has nothing runnable, so
  /// the switch to the graphics context preempts no running kernel (the sim pauses for the draw
  /// instead). Off: the sim never waits for the viewer (the mailbox above).
  bool sim_yields = false;
};

/// Back-to-back draws for the draw's GPU time alone.
inline constexpr int draw_alone_frames = 100;
/// Particles sampled into the viewer's history per drawn frame (the data check).
inline constexpr std::size_t viewed_samples = 8;

/// One run: the sim alone (rate_hz 0) or with one viewer at one rate.
struct viewed_run {
  viewer_kind kind = viewer_kind::handoff;  ///< The viewer (unused when rate_hz is 0).
  int rate_hz = 0;                          ///< 0: the sim alone.
  std::uint64_t steps = 0;                  ///< Sim steps in the measured window.
  double window_ms = 0.0;                   ///< The window on the GPU's clock (CUDA events).
  std::uint64_t frames = 0;                 ///< Frames published (and drawn) in the window; control
                                            ///< kinds: their submits in the window (host clock).
  std::uint64_t frames_total = 0;           ///< Frames drawn in the whole run (all checked).
  std::vector<double> frame_gpu_us;         ///< Per frame in the window: the viewer's graphics work (timestamps).
  std::vector<double> tick_to_submit_us;    ///< Per frame in the window: the tick to the submit (host).
  std::uint64_t missed_ticks = 0;           ///< Ticks the viewer fell behind by a whole period.
  std::uint64_t sim_gpu_waits = 0;          ///< CUDA waits on `released` (no free slot).
  std::uint64_t sim_host_checks = 0;        ///< vkGetSemaphoreCounterValue reads of `released` by the sim.
  std::uint64_t sim_deferred = 0;           ///< Steps that left the viewer's request for a later step
                                            ///< (the viewer still held the frame published before).
  std::uint64_t last_step = 0;              ///< Steps run in all.

  /// Sim steps per second in the window.
  [[nodiscard]] double steps_per_s() const noexcept {
    return window_ms > 0.0 ? static_cast<double>(steps) * 1e3 / window_ms : 0.0;
  }
};

/// Everything the viewed part measured.
struct viewed_result {
  viewed_options options;                 ///< What ran.
  std::vector<viewed_run> alone;          ///< The sim alone: first, then after every viewer kind.
  std::vector<viewed_run> runs;           ///< With a viewer, in order.
  std::vector<double> draw_alone_gpu_us;  ///< Back-to-back draws of one slot (timestamps).
  std::vector<std::uint64_t> samples;     ///< The particle indices checked.
  std::uint64_t frames_checked = 0;       ///< Drawn frames whose sampled particles were compared.
  std::size_t last_image_lit_pixels = 0;  ///< After the last drawing run.
  std::vector<std::string> data_failures; ///< Wrong data (each a message).
};

/// Runs the sim alone and with each viewer kind at each rate (the sim alone again after each kind),
/// then the back-to-back draws, on a scene of options.count particles, into `out` as the runs
/// complete; checks every drawn frame's sampled particles bitwise against particles::step_cpu and
/// the last image. Throws bench_failure on errors (`out` keeps the runs done before),
/// device_unavailable when the scene does not fit.
void run_viewed(session& s, const viewed_options& options, viewed_result& out);

}  // namespace membridge::bench::frame_loop
