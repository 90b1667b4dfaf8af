// The CPU path of membridge_particles: no CUDA device (or --cpu). The same simulation step runs on the
// CPU (step_cpu, the function the CUDA kernel runs) and the renderer uploads the particles every frame
// through a staging buffer, so the renderer still works; nothing is shared, no semaphores are needed.
#include "app.hpp"
#include "particle_sim_cpu.hpp"

#include <membridge/core/units.hpp>

#include <algorithm>
#include <ostream>
#include <thread>
#include <vector>

namespace particles::app {

using membridge::result;

namespace {

/// Particles in host memory, stepped and uploaded in prepare().
class cpu_source final : public frame_source {
 public:
  cpu_source(const app_options& o, const sim_params& params)
      : particles_(initial_particles(static_cast<std::size_t>(o.particles), o.seed, params)),
        params_(params),
        steps_(o.steps) {}

  result<frame_input> prepare(std::uint64_t /*frame*/, particle_renderer& renderer) override {
    step_cpu(particles_, params_, steps_);
    // Blocks until the copy is done, which also waits for the frames already submitted: the next
    // frame's step then overlaps nothing, but the CPU path is the fallback, not the point.
    MEMBRIDGE_TRY(renderer.upload_particles(particles_));
    frame_input input;
    input.buffer = renderer.particle_buffer();
    input.offset = 0;
    input.count = renderer.uploaded_count();
    return input;
  }

  result<void> finish(std::uint64_t /*submitted*/) override { return membridge::ok(); }  // the renderer waits

 private:
  std::vector<particle> particles_;
  sim_params params_;
  int steps_;
};

}  // namespace

result<void> run_cpu(run_environment& env) {
  const app_options& o = env.options;
  MEMBRIDGE_TRY_ASSIGN(
      auto context,
      membridge::vulkan::device_context::create(context_options(env)).with_context("creating the Vulkan device"));
  {
    cpu_source source(o, default_params());
    const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
    path_description d;
    d.path = "CPU path (" + (env.cpu_reason.empty() ? std::string("fallback") : env.cpu_reason) + ")";
    d.device = context.name();
    d.memory = "host memory (" + membridge::format_bytes(o.particles * sizeof(particle)) +
               "), stepped by step_cpu on up to " + std::to_string(threads) +
               " threads and uploaded every frame through a staging buffer (no CUDA: nothing is shared)";
    MEMBRIDGE_TRY(render(context, source, d, env));
  }
  return check_validation(context, env);
}

#if !MEMBRIDGE_PARTICLES_CUDA
std::string gpu_unavailable_reason() { return "this build has no CUDA kernels (MEMBRIDGE_CUDA_KERNELS=OFF)"; }

result<void> run_gpu(run_environment& /*env*/) {
  return membridge::error(membridge::errc::unsupported, "run_gpu", "built without CUDA kernels");
}
#endif

}  // namespace particles::app
