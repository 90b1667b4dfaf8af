// The CPU simulation: deterministic, independent of threads and step batching, and physically sane
// (free flight, conserved angular momentum in a central field, bounded, damped).
#include "particle_sim_cpu.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace particles {
namespace {

bool same_bytes(const std::vector<particle>& a, const std::vector<particle>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(particle)) == 0;
}

double angular_momentum_z(const std::vector<particle>& ps) {
  double l = 0.0;
  for (const particle& p : ps)
    l += double{p.position.x} * double{p.velocity.y} - double{p.position.y} * double{p.velocity.x};
  return l;
}

/// No force at all: no swirl, no damping, no attractor, and the boundary far away (radius 1000).
sim_params force_free_params() {
  sim_params s;
  s.swirl_strength = 0.0f;
  s.damping = 0.0f;
  s.boundary_radius = 1000.0f;
  s.attractor_count = 0;
  return s;
}

/// A single attractor at the origin and nothing else: a central force field.
sim_params central_params() {
  sim_params s = force_free_params();
  s.attractor_count = 1;
  s.attractors[0] = {0.0f, 0.0f, 0.0f, 1.0f};
  return s;
}

TEST(particle_sim, layout_matches_the_vertex_binding) {
  EXPECT_EQ(sizeof(particle), 32u);
  EXPECT_EQ(offsetof(particle, position), 0u);
  EXPECT_EQ(offsetof(particle, velocity), 16u);
  EXPECT_TRUE(std::is_standard_layout_v<particle>);
  EXPECT_TRUE(std::is_trivially_copyable_v<sim_params>);
}

TEST(particle_sim, initial_state_is_deterministic_and_depends_on_the_seed) {
  const auto a = initial_particles(10000, 42);
  const auto b = initial_particles(10000, 42);
  const auto c = initial_particles(10000, 43);
  EXPECT_TRUE(same_bytes(a, b));
  EXPECT_FALSE(same_bytes(a, c));
  // Particle i depends on (i, seed) only: a shorter run is a prefix.
  const auto prefix = initial_particles(100, 42);
  EXPECT_EQ(std::memcmp(prefix.data(), a.data(), prefix.size() * sizeof(particle)), 0);
}

TEST(particle_sim, initial_state_is_a_thin_rotating_disc) {
  const auto ps = initial_particles(20000, 7);
  for (const particle& p : ps) {
    const float r = std::hypot(p.position.x, p.position.y);
    ASSERT_GE(r, 0.049f);
    ASSERT_LE(r, 2.51f);
    ASSERT_LE(std::abs(p.position.z), 0.11f);
    ASSERT_GE(p.position.w, 0.5f);
    ASSERT_LT(p.position.w, 1.5f);
    ASSERT_EQ(p.velocity.w, 0.0f);
    // Counter-clockwise seen from +z: positive angular momentum, close to the circular speed.
    ASSERT_GT(p.position.x * p.velocity.y - p.position.y * p.velocity.x, 0.0f);
  }
}

TEST(particle_sim, steps_are_deterministic_and_independent_of_threads_and_batching) {
  const sim_params params = default_params();
  auto one_thread = initial_particles(50000, 1);
  auto many_threads = one_thread;
  auto in_batches = one_thread;
  step_cpu(one_thread, params, 40, 1);
  step_cpu(many_threads, params, 40, 7);
  for (int i = 0; i < 4; ++i) step_cpu(in_batches, params, 10, 3);
  EXPECT_TRUE(same_bytes(one_thread, many_threads));
  EXPECT_TRUE(same_bytes(one_thread, in_batches));
  auto again = initial_particles(50000, 1);
  step_cpu(again, params, 40);
  EXPECT_TRUE(same_bytes(one_thread, again));
  EXPECT_FALSE(same_bytes(one_thread, initial_particles(50000, 1)));  // it moved
}

TEST(particle_sim, zero_or_negative_steps_change_nothing) {
  auto ps = initial_particles(1000, 3);
  const auto before = ps;
  step_cpu(ps, default_params(), 0);
  step_cpu(ps, default_params(), -5);
  step_cpu(std::span<particle>{}, default_params(), 10);
  EXPECT_TRUE(same_bytes(ps, before));
}

TEST(particle_sim, without_forces_particles_fly_straight) {
  sim_params s = force_free_params();
  s.dt = 0.01f;
  std::vector<particle> ps(1);
  ps[0].position = {0.5f, -0.25f, 0.125f, 1.0f};
  ps[0].velocity = {1.0f, 2.0f, -0.5f, 0.0f};
  step_cpu(ps, s, 100);
  EXPECT_NEAR(ps[0].position.x, 0.5f + 1.0f, 1e-4f);
  EXPECT_NEAR(ps[0].position.y, -0.25f + 2.0f, 1e-4f);
  EXPECT_NEAR(ps[0].position.z, 0.125f - 0.5f, 1e-4f);
  EXPECT_EQ(ps[0].velocity.x, 1.0f);
  EXPECT_EQ(ps[0].velocity.y, 2.0f);
}

TEST(particle_sim, a_central_field_conserves_angular_momentum_and_keeps_orbits) {
  // Semi-implicit Euler conserves angular momentum exactly in a central field (up to rounding).
  const sim_params s = central_params();
  auto ps = initial_particles(10000, 11, s);
  const double before = angular_momentum_z(ps);
  step_cpu(ps, s, 2000);
  const double after = angular_momentum_z(ps);
  EXPECT_NEAR(after / before, 1.0, 1e-4);
  // Near-circular orbits stay near their radius: no particle escapes or falls in.
  for (const particle& p : ps) {
    const float r = std::hypot(p.position.x, p.position.y, p.position.z);
    ASSERT_TRUE(std::isfinite(r));
    ASSERT_LT(r, 4.0f);
  }
}

TEST(particle_sim, the_default_field_stays_bounded_and_finite) {
  const sim_params s = default_params();
  auto ps = initial_particles(10000, 5);
  step_cpu(ps, s, 3000);
  std::size_t outside = 0;
  for (const particle& p : ps) {
    ASSERT_TRUE(std::isfinite(p.position.x) && std::isfinite(p.position.y) && std::isfinite(p.position.z));
    ASSERT_TRUE(std::isfinite(p.velocity.x) && std::isfinite(p.velocity.y) && std::isfinite(p.velocity.z));
    const float r = std::hypot(p.position.x, p.position.y, p.position.z);
    ASSERT_LT(r, 2.0f * s.boundary_radius);
    if (r > s.boundary_radius) ++outside;
  }
  EXPECT_LT(outside, ps.size() / 20);  // the soft boundary holds nearly everything inside
}

TEST(particle_sim, the_boundary_pulls_particles_back) {
  sim_params s;
  s.swirl_strength = 0.0f;
  s.damping = 0.0f;
  s.attractor_count = 0;
  std::vector<particle> ps(1);
  ps[0].position = {s.boundary_radius + 0.5f, 0.0f, 0.0f, 1.0f};
  step_cpu(ps, s, 1);
  EXPECT_LT(ps[0].velocity.x, 0.0f);
  EXPECT_EQ(ps[0].velocity.y, 0.0f);
}

TEST(particle_sim, damping_slows_particles) {
  sim_params s = force_free_params();
  s.damping = 0.5f;
  std::vector<particle> ps(1);
  ps[0].velocity = {1.0f, 0.0f, 0.0f, 0.0f};
  step_cpu(ps, s, 1000);  // t = 2: v = (1 - 0.5 dt)^1000 ~ exp(-1)
  EXPECT_NEAR(ps[0].velocity.x, std::exp(-1.0f), 1e-3f);
}

}  // namespace
}  // namespace particles
