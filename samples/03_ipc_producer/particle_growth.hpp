// samples/03_ipc_producer/particle_growth.hpp: the device work of a growth of the particle ring:
// moving the last frame's particles to its slot in the new layout, and making the new particles.
//
// C++17 on purpose: nvcc compiles this header (see particle_sim.hpp).
#pragma once

#include "particle_sim.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>

namespace particles {

/// Enqueues on `stream` a copy of `count` particles from `source` to `destination` that may overlap,
/// with destination >= source (a slot only ever moves up when the ring grows): cudaMemcpyAsync has no
/// memmove, so the range is copied from its end in pieces no longer than the distance between the two,
/// none of which overlaps its own source or a source still to be read. Returns the first failing
/// call's status. Errors: cudaErrorInvalidValue when destination < source.
cudaError_t move_particles(particle* destination, const particle* source, std::size_t count, cudaStream_t stream);

/// Enqueues on `stream` a kernel that writes `count` new particles at `destination`: particle i is
/// particle i % source_count of `source` turned by `angle` radians around the z axis (position and
/// velocity), so it starts on an orbit like the one it was copied from, elsewhere in the disc. The
/// ranges must not overlap. count == 0 enqueues nothing. Returns the launch status.
/// Errors: cudaErrorInvalidValue for null pointers or source_count 0 with count > 0.
cudaError_t spawn_particles(particle* destination, std::size_t count, const particle* source,
                            std::size_t source_count, float angle, cudaStream_t stream);

}  // namespace particles
