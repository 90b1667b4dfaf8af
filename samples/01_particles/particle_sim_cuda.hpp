// samples/01_particles/particle_sim_cuda.hpp: the simulation step on a CUDA device (CUDA runtime API).
//
// GPU and CPU agree: the kernel runs particles::advance, the function step_cpu runs, built with
// --fmad=false and IEEE division and square root (no fast-math), so every operation rounds as on the
// CPU. Expected difference: none (bitwise equal). Tolerance a test should allow, for a toolchain that
// still fuses a multiply-add somewhere: 1e-5 relative to the largest |coordinate| per 100 steps of
// default_params() (errors grow slowly: the field is smooth and damped).
#pragma once

#include "particle_sim.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>

namespace particles {

/// Enqueues `steps` steps of `params` for `count` particles at `device_particles` (device memory, e.g.
/// a membridge growable_buffer) on `stream`; one kernel launch that keeps each particle in registers
/// for all steps. Returns the launch status (cudaGetLastError()); errors of the kernel itself show up at
/// the next synchronising call. count == 0 or steps <= 0 enqueue nothing.
/// Speed: one step of 4M particles reads and writes 256 MB: about 0.1 ms at an H100's bandwidth
/// (membridge_particles_gpu_tests measures it).
/// Errors: cudaErrorInvalidValue for a null pointer with count > 0.
cudaError_t step_cuda(particle* device_particles, std::size_t count, const sim_params& params, int steps,
                      cudaStream_t stream = nullptr);

}  // namespace particles
