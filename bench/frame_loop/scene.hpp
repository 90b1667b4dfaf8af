// bench/frame_loop/scene.hpp: the devices the frame loop benchmark runs on (CUDA device, Vulkan
// context on the same GPU, the particle sample's renderer, one CUDA stream) and, per particle count,
// the particles: a ring of slots in one growable_buffer that Vulkan sees as one buffer.
#pragma once

#include "support.hpp"

#include "particle_renderer.hpp"
#include "particle_sim.hpp"

#include <membridge/core/device_uuid.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <glm/mat4x4.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace membridge::bench::frame_loop {

inline constexpr std::uint32_t ring_slots = 3;       ///< Particle slots, renderer slots and timeline slots.
inline constexpr std::uint32_t image_width = 1280;   ///< Rendered image size.
inline constexpr std::uint32_t image_height = 720;
inline constexpr std::uint64_t particle_seed = 2024; ///< initial_particles' seed (the same for every run).

/// The devices and what every run shares.
struct session {
  cuda::device device;             ///< membridge's CUDA device (primary context, shared with the runtime).
  int ordinal = 0;                 ///< CUDA ordinal.
  int driver_version = 0;          ///< cudaDriverGetVersion.
  int runtime_version = 0;         ///< cudaRuntimeGetVersion.
  vulkan::device_context context;  ///< Vulkan on the same GPU (no validation).
  particles::particle_renderer renderer;  ///< ring_slots images of image_width x image_height.
  particles::render_method method = particles::render_method::splat;  ///< How the renderer draws.
  cuda_stream stream;              ///< Every CUDA operation of the frame loops.
  glm::mat4 view_proj{1.0F};       ///< The camera of every frame (fixed, so images compare).
  particles::sim_params params{};  ///< particles::default_params().

  /// The graphics queue the renderer submits to.
  [[nodiscard]] VkQueue queue() const noexcept { return context.graphics_queue().queue; }
};

/// Opens CUDA device `ordinal` (runtime first, then membridge in the same primary context), a Vulkan
/// context on that GPU and the renderer (drawing with `method`). Throws device_unavailable without a
/// usable CUDA device or Vulkan device on it, bench_failure for other errors.
[[nodiscard]] session open_session(int ordinal, particles::render_method method);

/// A session without CUDA (for a viewer process): `device` empty, `ordinal` -1, `stream` none; a
/// Vulkan context on the GPU whose UUID is `uuid` and the renderer (drawing with `method`). Throws
/// device_unavailable without a usable Vulkan device of that UUID, bench_failure for other errors.
/// Ownership: the session owns its context and renderer.
[[nodiscard]] session open_vulkan_session(const device_uuid& uuid, particles::render_method method);

/// "13.0" for a CUDA version number such as 13000 (cuda_support.hpp), named here too.
using bench::cuda_version_text;

/// The particles of one size: ring_slots slots of `count` particles, back to back, in one
/// growable_buffer, and Vulkan's view of it. Frame n writes slot n % ring_slots: it copies the slot
/// of frame n - 1 into its own and steps it in place (the sample's step works in place). The
/// initial particles go into the slot of frame -1.
struct scene {
  std::size_t count = 0;                          ///< Particles.
  std::size_t slot_bytes = 0;                     ///< count * 32.
  std::vector<particles::particle> initial;       ///< initial_particles(count, particle_seed).
  cuda::growable_buffer buffer;                   ///< The slots (CUDA).
  vulkan::chunked_buffer view;                    ///< The slots (Vulkan), one VkBuffer.
  VkBuffer vk_buffer = VK_NULL_HANDLE;            ///< view's buffer (covers every slot).
  VkDeviceSize vk_base = 0;                       ///< Where byte 0 of `buffer` lies in vk_buffer.
  pinned_memory host;                             ///< count particles: the staging mode's copy.

  /// The slot frame `frame` writes.
  [[nodiscard]] static std::uint32_t slot_of(std::uint64_t frame) noexcept {
    return static_cast<std::uint32_t>(frame % ring_slots);
  }
  /// Device address of slot `slot`.
  [[nodiscard]] particles::particle* slot_data(std::uint32_t slot) const noexcept;
  /// Offset of slot `slot` in vk_buffer.
  [[nodiscard]] VkDeviceSize slot_offset(std::uint32_t slot) const noexcept { return vk_base + slot * slot_bytes; }
};

/// Makes the scene of `count` particles (checks free device memory first; throws device_unavailable
/// when it does not fit).
[[nodiscard]] scene make_scene(const session& s, std::size_t count);

/// Puts the initial particles into the slot of frame -1 and waits (not timed).
void reset_particles(const session& s, const scene& sc);

/// Enqueues frame `frame`'s simulation on `stream`: cudaMemcpyAsync of the previous frame's slot into
/// this frame's, then `steps` launches of particles::step_cuda (one step each) on it.
void enqueue_sim(const session& s, const scene& sc, std::uint64_t frame, int steps, cudaStream_t stream);

/// Copies the particles of the slot frame `last_frame` wrote into `out` (resized to count), after
/// the work already on the session's stream; waits.
void read_particles(const session& s, const scene& sc, std::uint64_t last_frame,
                    std::vector<particles::particle>& out);

/// What the last drawn image looks like.
struct image_check {
  std::size_t lit_pixels = 0;   ///< Pixels with a channel more than 24 levels above the background.
  std::size_t pixels = 0;       ///< width * height.
  std::uint64_t hash = 0;       ///< FNV-1a of the RGBA bytes (to compare modes).
};

/// Reads back the renderer's last submitted frame (renderer::read_back) and summarises it.
[[nodiscard]] image_check check_last_image(session& s);

}  // namespace membridge::bench::frame_loop
