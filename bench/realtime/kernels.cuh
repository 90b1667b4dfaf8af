// bench/realtime/kernels.cuh: the growth benchmark's CUDA work besides the particle step.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace membridge::bench::realtime {

/// Gives particles [begin, end) of `particles` (32-byte particles::particle) a deterministic start
/// on a disc (mass 1), so the step has sane data in memory a growth just added.
cudaError_t seed_particles(void* particles, std::size_t begin, std::size_t end, cudaStream_t stream);

/// Writes `stamp` into velocity.w (byte 28) of particles [0, count): what the renderer's probe reads.
cudaError_t stamp_particles(void* particles, std::size_t count, std::uint32_t stamp, cudaStream_t stream);

}  // namespace membridge::bench::realtime
