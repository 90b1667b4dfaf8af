// The CPU reference step: particles::advance over a split of the array, one std::thread per part.
// Built with -ffp-contract=off (see CMakeLists.txt) so no multiply-add is fused, as in the kernel.
#include "particle_sim_cpu.hpp"

#include <algorithm>
#include <thread>
#include <vector>

namespace particles {

namespace {

constexpr std::size_t min_particles_per_thread = 16384;
constexpr unsigned max_threads = 16;

void step_range(std::span<particle> part, const sim_params& params, int steps) {
  for (particle& p : part) {
    particle q = p;  // keep the particle in registers for all steps
    for (int k = 0; k < steps; ++k) advance(q, params);
    p = q;
  }
}

}  // namespace

void step_cpu(std::span<particle> particles, const sim_params& params, int steps, unsigned threads) {
  if (steps <= 0 || particles.empty()) return;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, max_threads);
  const std::size_t useful = std::max<std::size_t>(1, particles.size() / min_particles_per_thread);
  const std::size_t parts = std::min<std::size_t>(threads, useful);
  if (parts == 1) {
    step_range(particles, params, steps);
    return;
  }
  std::vector<std::jthread> workers;
  workers.reserve(parts - 1);
  const std::size_t per_part = (particles.size() + parts - 1) / parts;
  for (std::size_t first = per_part; first < particles.size(); first += per_part) {
    const auto part = particles.subspan(first, std::min(per_part, particles.size() - first));
    workers.emplace_back([part, &params, steps] { step_range(part, params, steps); });
  }
  step_range(particles.first(per_part), params, steps);
}  // the jthreads join here

}  // namespace particles
