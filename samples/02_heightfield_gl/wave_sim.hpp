// samples/02_heightfield_gl/wave_sim.hpp: the damped 2D wave equation both paths step (CUDA kernel
// and CPU loop), the raindrops that keep it moving, and the layout of the height ring. C++17 and
// host/device: wave_sim.cu includes it too.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define HEIGHTFIELD_HD __host__ __device__
#else
#define HEIGHTFIELD_HD
#endif

namespace heightfield {

/// Parameters of the leapfrog scheme  u' = u + damping * (u - u_prev) + courant2 * laplacian(u).
struct wave_params {
  float courant2 = 0.25f;  ///< (c dt / dx)^2; stable up to 0.5 in 2D.
  float damping = 0.996f;  ///< Velocity kept per step (1 = no loss).
};

/// A raindrop: a smooth bump (1 - r^2/R^2)^2 added to the field (to the current and the previous
/// field alike, so it starts at rest and spreads as rings).
struct drop {
  float x = 0.0f;          ///< Centre, in cells.
  float y = 0.0f;          ///< Centre, in cells.
  float radius = 1.0f;     ///< Cells.
  float amplitude = 1.0f;  ///< Height at the centre.
};

/// The next height of cell (x, y) of an n x n field, from the current field `u` and the previous
/// one `u_prev`. Reflecting borders (the missing neighbour equals the cell).
HEIGHTFIELD_HD inline float step_cell(const float* u_prev, const float* u, int n, int x, int y,
                                      const wave_params& p) {
  const std::size_t i = static_cast<std::size_t>(y) * static_cast<std::size_t>(n) + static_cast<std::size_t>(x);
  const float c = u[i];
  const float l = x > 0 ? u[i - 1] : c;
  const float r = x + 1 < n ? u[i + 1] : c;
  const float d = y > 0 ? u[i - static_cast<std::size_t>(n)] : c;
  const float t = y + 1 < n ? u[i + static_cast<std::size_t>(n)] : c;
  const float laplacian = (l + r) + (d + t) - 4.0f * c;
  return c + p.damping * (c - u_prev[i]) + p.courant2 * laplacian;
}

/// What a drop adds to cell (x, y).
HEIGHTFIELD_HD inline float drop_height(const drop& d, int x, int y) {
  const float dx = static_cast<float>(x) - d.x;
  const float dy = static_cast<float>(y) - d.y;
  const float r2 = dx * dx + dy * dy;
  if (r2 >= d.radius * d.radius) return 0.0f;
  const float s = r2 / (d.radius * d.radius);
  const float q = 1.0f - s;
  return d.amplitude * q * q;
}

/// The drops that fall before frame `frame` is stepped (deterministic in seed and frame): a few at
/// frame 0, then one every `drop_interval` frames. Writes up to `capacity` drops into `out`, returns
/// how many.
std::size_t drops_for_frame(std::uint64_t seed, std::uint64_t frame, int n, drop* out, std::size_t capacity);

/// Frames between two drops after the first frame.
inline constexpr std::uint64_t drop_interval = 12;
/// Drops at frame 0.
inline constexpr std::size_t initial_drops = 6;
/// The most drops one frame gets.
inline constexpr std::size_t max_drops_per_frame = initial_drops;

}  // namespace heightfield
