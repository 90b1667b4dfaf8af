// samples/02_heightfield_gl/wave_sim_cuda.hpp: the wave field stepped by CUDA kernels (wave_sim.cu),
// on any device memory (here: a membridge growable_buffer). Asynchronous on the caller's stream.
#pragma once

#include "wave_sim.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>

namespace heightfield {

/// Adds `count` drops (at most max_drops_per_frame) to the n x n fields `u_prev` and `u`.
cudaError_t add_drops_cuda(float* u_prev, float* u, int n, const drop* drops, std::size_t count, cudaStream_t stream);

/// Runs `steps` steps of the n x n field whose current step is `u` and previous `u_prev`; each step
/// writes the new field over `u_prev` and the two pointers are swapped, so on return `u` is the
/// current field again. The last step also writes the new heights to `out` (with steps == 0 the
/// current field is copied there). Launch errors are returned; nothing waits.
cudaError_t step_cuda(float*& u_prev, float*& u, int n, const wave_params& params, int steps, float* out,
                      cudaStream_t stream);

}  // namespace heightfield
