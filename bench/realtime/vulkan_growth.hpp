// bench/realtime/vulkan_growth.hpp: part (b) for Vulkan (sparse view, particle renderer, paced).
#pragma once

#include "frame_loop/scene.hpp"
#include "growth.hpp"

namespace membridge::bench::realtime {

using bench::bench_failure;
using bench::check_cuda;

/// Runs one paced growth configuration on the session's device and renderer; throws bench_failure on
/// an error or a wrong probe.
[[nodiscard]] growth_run run_vulkan_growth(frame_loop::session& s, const growth_config& c);

}  // namespace membridge::bench::realtime
