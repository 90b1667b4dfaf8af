// The sample's parameters and its deterministic initial disc.
#include "particle_sim.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace particles {

namespace {

/// splitmix64: a full-period 64-bit mixer (Steele, Lea, Flood 2014); the same on every platform.
std::uint64_t mix(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Uniform doubles in [0, 1) for one particle: a counter-based stream keyed by (seed, index).
class particle_random {
 public:
  particle_random(std::uint64_t seed, std::uint64_t index) noexcept : state_(mix(seed ^ mix(index))) {}

  double next() noexcept {
    state_ = mix(state_);
    return static_cast<double>(state_ >> 11) * 0x1.0p-53;
  }

  /// Roughly normal (mean 0, deviation 1): the sum of four uniforms, rescaled. Bounded by +-3.46.
  double normal() noexcept { return (next() + next() + next() + next() - 2.0) * std::sqrt(3.0); }

 private:
  std::uint64_t state_;
};

/// The inward acceleration at radius r if all attractors of `s` sat at the origin (their monopole):
/// the circular speed it gives keeps the disc near equilibrium without singular speeds near an
/// off-centre attractor.
double monopole_acceleration(const sim_params& s, double r) noexcept {
  double strength = 0.0;
  for (int i = 0; i < std::min(s.attractor_count, max_attractors); ++i) strength += static_cast<double>(s.attractors[i].strength);
  const double soft = static_cast<double>(s.softening);
  const double soft2 = soft * soft;
  const double d2 = r * r + soft2;
  return strength * r / (d2 * std::sqrt(d2));
}

}  // namespace

sim_params default_params() noexcept {
  sim_params s;
  s.attractor_count = 3;
  s.attractors[0] = {0.0f, 0.0f, 0.0f, 1.0f};
  s.attractors[1] = {1.3f, 0.0f, 0.0f, 0.06f};
  s.attractors[2] = {-1.3f, 0.0f, 0.0f, 0.06f};
  return s;
}

std::vector<particle> initial_particles(std::size_t count, std::uint64_t seed, const sim_params& params) {
  constexpr double scale = 0.6;  // exponential disc scale length
  constexpr double r_min = 0.05;
  constexpr double r_max = 2.5;
  constexpr double thickness = 0.03;
  constexpr double dispersion = 0.03;  // random velocity, relative to the circular speed
  const double tail = 1.0 - std::exp(-(r_max - r_min) / scale);

  std::vector<particle> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    particle_random rnd(seed, i);
    const double r = r_min - scale * std::log(1.0 - rnd.next() * tail);  // truncated exponential
    const double angle = 2.0 * std::numbers::pi * rnd.next();
    const double x = r * std::cos(angle);
    const double y = r * std::sin(angle);
    const double z = thickness * rnd.normal();
    const double speed = std::sqrt(std::max(0.0, monopole_acceleration(params, r) * r));
    const double vx = -speed * std::sin(angle) + dispersion * speed * rnd.normal();
    const double vy = speed * std::cos(angle) + dispersion * speed * rnd.normal();
    const double vz = dispersion * speed * rnd.normal();
    const double mass = 0.5 + rnd.next();
    out[i].position = {static_cast<float>(x), static_cast<float>(y), static_cast<float>(z), static_cast<float>(mass)};
    out[i].velocity = {static_cast<float>(vx), static_cast<float>(vy), static_cast<float>(vz), 0.0f};
  }
  return out;
}

}  // namespace particles
