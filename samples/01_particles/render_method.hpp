// samples/01_particles/render_method.hpp: how particle_renderer turns particles into pixels, and the
// names the command lines (membridge_particles, membridge_bench_frame_loop) use for it. No
// dependencies, so the command-line parser includes it without Vulkan.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace particles {

/// How particle_renderer draws (particle_renderer.hpp describes both).
enum class render_method : std::uint8_t {
  /// Compute shaders (the default): one thread per particle adds its colour in fixed point to its
  /// pixel with atomicAdd into a buffer, then a resolve pass writes background + sum (clamped) to
  /// the image. Runs on the compute units, so it does not depend on the GPU's primitive rate (an
  /// H100 has little graphics hardware), and integer sums make the image independent of order.
  splat,
  /// The graphics pipeline: one point primitive per particle, blended additively (ONE, ONE) into
  /// the colour attachment.
  points,
};

/// "splat" or "points".
[[nodiscard]] constexpr std::string_view render_method_name(render_method m) noexcept {
  return m == render_method::points ? "points" : "splat";
}

/// The method named `name` ("splat" or "points"); nothing for anything else.
[[nodiscard]] constexpr std::optional<render_method> parse_render_method(std::string_view name) noexcept {
  if (name == "splat") return render_method::splat;
  if (name == "points") return render_method::points;
  return std::nullopt;
}

}  // namespace particles
