// bench/gl/paced_growth.hpp: part (p) of the GL benchmark, growth while GL draws at a paced rate.
#pragma once

#include "parts.hpp"
#include "realtime/growth.hpp"
#include "stats.hpp"

#include <ostream>

namespace membridge::bench::gl_bench {

/// Runs part (p) (at need and ahead of need, per chunk cap, 1M -> 16M particles and 64 MiB -> 2 GiB),
/// prints its table to `out` and returns its JSON, whose "goal" is gl_growth_worst_over_median for the
/// configuration ahead with max_chunk `goal_chunk_mib`. Throws bench_failure on errors or wrong data.
[[nodiscard]] json run_paced_growth(const bench_env& env, std::ostream& out, double hz, std::size_t goal_chunk_mib);

}  // namespace membridge::bench::gl_bench
