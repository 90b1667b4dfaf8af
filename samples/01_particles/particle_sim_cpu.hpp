// samples/01_particles/particle_sim_cpu.hpp: the CPU reference step (and the sample's fallback when no
// CUDA device exists).
#pragma once

#include "particle_sim.hpp"

#include <span>

namespace particles {

/// Advances every particle by `steps` steps of `params` (particles::advance, the same function the CUDA
/// kernel runs). `threads` = 0 picks std::thread::hardware_concurrency() clamped to 1..16; small arrays
/// (under 16384 particles per thread) use fewer threads. The result does not depend on the thread count:
/// particles are independent and each is stepped by exactly one thread. steps <= 0 does nothing.
/// 1M particles take about 30 ms per step on one core (x86-64 baseline, scalar), 2-4 ms on 16.
void step_cpu(std::span<particle> particles, const sim_params& params, int steps, unsigned threads = 0);

}  // namespace particles
