// The drop schedule and the CPU field (wave_sim.hpp, wave_sim_cpu.hpp).
#include "wave_sim.hpp"
#include "wave_sim_cpu.hpp"

#include <algorithm>
#include <utility>

namespace heightfield {

namespace {

/// splitmix64: a good 64-bit mix for deterministic pseudo-random numbers.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// A float in [0, 1) from the top 24 bits.
float unit(std::uint64_t bits) { return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f); }

drop make_drop(std::uint64_t seed, std::uint64_t index, int n) {
  const std::uint64_t a = mix(seed * 0x100000001b3ull + index);
  const std::uint64_t b = mix(a);
  const std::uint64_t c = mix(b);
  const float size = static_cast<float>(n);
  drop d;
  // Radius 1/40 to 1/20 of the field: the same picture at every grid size.
  d.radius = std::max(2.0f, size * (0.025f + 0.025f * unit(c)));
  d.x = d.radius + unit(a) * (size - 2.0f * d.radius);
  d.y = d.radius + unit(b) * (size - 2.0f * d.radius);
  d.amplitude = (c & 1u) != 0 ? 1.0f : -0.8f;  // raindrops and dips
  return d;
}

}  // namespace

std::size_t drops_for_frame(std::uint64_t seed, std::uint64_t frame, int n, drop* out, std::size_t capacity) {
  std::size_t count = 0;
  if (frame == 0) {
    for (std::size_t i = 0; i < initial_drops && count < capacity; ++i) out[count++] = make_drop(seed, i, n);
  } else if (frame % drop_interval == 0 && count < capacity) {
    out[count++] = make_drop(seed, initial_drops + frame / drop_interval, n);
  }
  return count;
}

cpu_wave::cpu_wave(int n, const wave_params& params)
    : n_(n),
      params_(params),
      prev_(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0.0f),
      curr_(prev_.size(), 0.0f) {}

void cpu_wave::add_drops(std::span<const drop> drops) {
  for (const drop& d : drops) {
    const int x0 = std::max(0, static_cast<int>(d.x - d.radius));
    const int x1 = std::min(n_ - 1, static_cast<int>(d.x + d.radius) + 1);
    const int y0 = std::max(0, static_cast<int>(d.y - d.radius));
    const int y1 = std::min(n_ - 1, static_cast<int>(d.y + d.radius) + 1);
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x) {
        const float h = drop_height(d, x, y);
        const std::size_t i = index(x, y);
        curr_[i] += h;
        prev_[i] += h;
      }
  }
}

void cpu_wave::step(int steps) {
  for (int s = 0; s < steps; ++s) {
    // The new field overwrites the previous one (each cell reads only its own previous value).
    for (int y = 0; y < n_; ++y)
      for (int x = 0; x < n_; ++x) prev_[index(x, y)] = step_cell(prev_.data(), curr_.data(), n_, x, y, params_);
    std::swap(prev_, curr_);
  }
}

}  // namespace heightfield
