// samples/01_particles/particle_sim.hpp: the particle layout, the simulation parameters and the
// per-particle step shared by the CPU reference (particle_sim_cpu.cpp) and the CUDA kernel
// (particle_sim.cu).
//
// C++17 on purpose: nvcc compiles this header (CMake 3.25 offers CUDA_STANDARD 17 at most), so it uses
// no <span>, concepts or other C++20 headers.
//
// The model is O(N) per step: every particle moves independently in a fixed external field (a few
// softened point attractors, a swirl around the z axis, a soft spherical boundary) with linear damping,
// integrated with semi-implicit (symplectic) Euler. Particles do not attract each other, so a step of
// 1M-4M particles is a pure streaming kernel (32 bytes read and written per particle).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

/// MEMBRIDGE_PARTICLES_HD marks the functions that both the host compiler and nvcc compile (host and
/// device); MEMBRIDGE_PARTICLES_UNROLL unrolls a loop in device code (constant indices keep the
/// kernel's parameters out of local memory).
#if defined(__CUDACC__)
#define MEMBRIDGE_PARTICLES_HD __host__ __device__
#else
#define MEMBRIDGE_PARTICLES_HD
#endif
#if defined(__CUDA_ARCH__)  // nvcc's device pass only (its host pass would warn about the pragma)
#define MEMBRIDGE_PARTICLES_UNROLL _Pragma("unroll")
#else
#define MEMBRIDGE_PARTICLES_UNROLL
#endif

namespace particles {

/// Four floats, 16-byte aligned: the layout of CUDA's float4, GLSL's vec4 and
/// VK_FORMAT_R32G32B32A32_SFLOAT.
struct alignas(16) vec4 {
  float x = 0.0f;  ///< First component.
  float y = 0.0f;  ///< Second component.
  float z = 0.0f;  ///< Third component.
  float w = 0.0f;  ///< Fourth component.
};

/// One particle, 32 bytes, tightly packed in one array that CUDA writes and Vulkan reads as a vertex
/// buffer (binding stride 32: position at offset 0, velocity at offset 16).
struct particle {
  vec4 position;  ///< xyz: position; w: mass (a per-particle weight the renderer uses for brightness;
                  ///< the dynamics do not depend on it).
  vec4 velocity;  ///< xyz: velocity; w: unused (0).
};

static_assert(sizeof(vec4) == 16 && alignof(vec4) == 16, "vec4 must match float4");
static_assert(sizeof(particle) == 32, "particle must be 32 bytes (the vertex binding stride)");
static_assert(offsetof(particle, velocity) == 16, "velocity must start at byte 16");
static_assert(std::is_standard_layout_v<particle> && std::is_trivially_copyable_v<particle>,
              "particle is shared with CUDA and Vulkan as raw bytes");

/// A fixed point attractor: softened gravity `strength * d / (|d|^2 + softening^2)^(3/2)`.
struct attractor {
  float x = 0.0f;         ///< Position, x.
  float y = 0.0f;         ///< Position, y.
  float z = 0.0f;         ///< Position, z.
  float strength = 0.0f;  ///< G*M: the acceleration at unit distance (negative repels).
};

/// The most attractors a sim_params holds.
inline constexpr int max_attractors = 4;

/// Simulation parameters. Trivially copyable: passed by value to the CUDA kernel. The particle count is
/// not a parameter: it is the size of the array a step function is given.
struct sim_params {
  float dt = 0.002f;                  ///< Time step.
  float softening = 0.05f;            ///< Plummer softening length of the attractors.
  float swirl_strength = 0.02f;       ///< Tangential acceleration around +z: strength / (r_xy^2 + core^2) * r_xy.
  float swirl_core = 0.3f;            ///< Core radius of the swirl.
  float damping = 0.02f;              ///< Linear velocity damping per unit time (v *= 1 - damping*dt).
  float boundary_radius = 3.0f;       ///< Beyond this distance from the origin a spring pulls particles back.
  float boundary_stiffness = 20.0f;   ///< Spring constant of the boundary (per unit overshoot).
  int attractor_count = 0;            ///< How many of `attractors` are used (0..max_attractors).
  attractor attractors[max_attractors] = {};  ///< The attractors; the first attractor_count are used.
};

/// The parameters of the sample: a heavy attractor at the origin and two lighter ones on the x axis,
/// a weak swirl and light damping, so a disc (initial_particles) winds into arms and stays bounded.
[[nodiscard]] sim_params default_params() noexcept;

/// `count` particles in a thin disc around the origin (exponential radial profile, scale length 0.6,
/// radii 0.05..2.5, thickness ~0.03) on near-circular orbits (counter-clockwise seen from +z) around
/// the attractors of `params` (their total strength taken at the origin), with a 3% random velocity
/// dispersion; masses in [0.5, 1.5).
/// Deterministic: the same (count, seed, params) always give the same bytes on a machine, and particle
/// i depends only on (i, seed, params), not on count.
[[nodiscard]] std::vector<particle> initial_particles(std::size_t count, std::uint64_t seed,
                                                     const sim_params& params = default_params());

/// Advances one particle by one step of `s` (semi-implicit Euler):
///   a = sum over attractors of strength * d / (|d|^2 + softening^2)^(3/2)   (d = attractor - p)
///     + swirl_strength / (x^2 + y^2 + swirl_core^2) * (-y, x, 0)
///     - boundary_stiffness * (|p| - boundary_radius) * p / |p|             (only when |p| > radius)
///   v = (v + a*dt) * (1 - damping*dt);  p = p + v*dt
///
/// The CPU reference and the CUDA kernel run this very function. It uses only +, -, *, / and sqrtf,
/// which IEEE 754 rounds exactly on both (the kernel is built with --fmad=false and without fast-math,
/// the CPU code with -ffp-contract=off), in this fixed order, so both give the same result; the
/// documented tolerance (particle_sim_cuda.hpp) only allows for compilers that still contract.
MEMBRIDGE_PARTICLES_HD inline void advance(particle& p, const sim_params& s) {
  const float px = p.position.x;
  const float py = p.position.y;
  const float pz = p.position.z;
  float ax = 0.0f;
  float ay = 0.0f;
  float az = 0.0f;
  const float soft2 = s.softening * s.softening;
  MEMBRIDGE_PARTICLES_UNROLL
  for (int i = 0; i < max_attractors; ++i) {
    if (i >= s.attractor_count) break;
    const attractor& a = s.attractors[i];
    const float dx = a.x - px;
    const float dy = a.y - py;
    const float dz = a.z - pz;
    const float r2 = dx * dx + dy * dy + dz * dz + soft2;
    const float inv_r = 1.0f / sqrtf(r2);
    const float f = a.strength * (inv_r * inv_r * inv_r);
    ax += f * dx;
    ay += f * dy;
    az += f * dz;
  }
  const float swirl = s.swirl_strength / (px * px + py * py + s.swirl_core * s.swirl_core);
  ax -= swirl * py;
  ay += swirl * px;
  const float r2 = px * px + py * py + pz * pz;
  if (r2 > s.boundary_radius * s.boundary_radius) {
    const float r = sqrtf(r2);
    const float pull = s.boundary_stiffness * (r - s.boundary_radius) / r;
    ax -= pull * px;
    ay -= pull * py;
    az -= pull * pz;
  }
  const float keep = 1.0f - s.damping * s.dt;
  const float vx = (p.velocity.x + ax * s.dt) * keep;
  const float vy = (p.velocity.y + ay * s.dt) * keep;
  const float vz = (p.velocity.z + az * s.dt) * keep;
  p.velocity.x = vx;
  p.velocity.y = vy;
  p.velocity.z = vz;
  p.position.x = px + vx * s.dt;
  p.position.y = py + vy * s.dt;
  p.position.z = pz + vz * s.dt;
}

}  // namespace particles
