// bench/gl/viewed.hpp: part (v) of the GL benchmark, the simulation viewed by GL in the same process
// (issue 12 (c), GL half; the Vulkan half is bench/frame_loop's viewed part, whose design this copies).
// A CUDA "sim" steps as fast as the GPU runs it while the render thread, paced at 60 and 144 Hz, takes
// the newest completed step through a 3-slot mailbox in one growable_buffer imported into GL
// (sync::mirror_in_gl), ordered by a frame timeline's semaphores (sync::frame_timeline +
// sync::gl_frame_consumer); sim steps per second with the viewer against the sim alone.
#pragma once

#include "parts.hpp"
#include "stats.hpp"

#include <ostream>

namespace membridge::bench::gl_bench {

/// Runs part (v): the sim alone, with the GL viewer at 60 Hz and at 144 Hz, the sim alone again;
/// prints its table to `out` and returns its JSON, whose "goal" is gl_sim_throughput_viewed_144hz (sim
/// steps/s with the viewer at 144 Hz / alone; informative, target 0.97 as for Vulkan). Every drawn
/// frame's stamp is checked. Throws bench_failure on errors or wrong data, and without the timeline
/// semaphore ordering.
[[nodiscard]] json run_viewed(const bench_env& env, std::ostream& out);

}  // namespace membridge::bench::gl_bench
