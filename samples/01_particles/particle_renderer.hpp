// samples/01_particles/particle_renderer.hpp: an offscreen Vulkan renderer that draws particles as
// additive glowing points from any buffer (a CUDA buffer imported by membridge, or its own buffer
// filled from the CPU), into RGBA8 images it owns, one per frame slot. Two methods
// (render_method.hpp): `splat` (the default) adds each particle's colour to its pixel with compute
// shaders and atomics; `points` draws point primitives through the graphics pipeline with additive
// blending. Both give the same picture (camera, palette, brightness, clamping).
//
// It borrows the device: it never creates an instance or device and never calls a global vk* function.
// Device functions come from the caller's VolkDeviceTable, instance functions through the caller's
// vkGetInstanceProcAddr (the target defines VK_NO_PROTOTYPES).
#pragma once

#include "particle_sim.hpp"
#include "render_method.hpp"

#include <membridge/core/result.hpp>

#include <glm/mat4x4.hpp>
#include <vulkan/vulkan_core.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

struct VolkDeviceTable;  // volk's per-device function table (<volk.h>)

namespace particles {

/// The device the renderer draws with. Every handle is borrowed: the caller (e.g. membridge's
/// vulkan::device_context) owns them and keeps them, and the function table, alive longer than the
/// renderer.
struct renderer_device {
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;  ///< Loads the physical-device queries.
  VkInstance instance = VK_NULL_HANDLE;                         ///< The instance of physical_device.
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;            ///< The GPU of `device`.
  VkDevice device = VK_NULL_HANDLE;                             ///< The device every object is made on.
  const VolkDeviceTable* functions = nullptr;                   ///< Device functions loaded for `device`.
  std::uint32_t queue_family = 0;                               ///< A graphics queue family of `device`.
  /// A queue of `queue_family`. Vulkan queues are externally synchronised: no other thread may submit
  /// to it while a renderer call that submits (submit, upload_particles, read_back) runs.
  VkQueue queue = VK_NULL_HANDLE;
};

/// How the renderer draws.
struct renderer_options {
  std::uint32_t width = 1280;       ///< Image width in pixels.
  std::uint32_t height = 720;       ///< Image height in pixels.
  std::uint32_t frame_slots = 2;    ///< Frames that may be in flight at once (1..8), each with its own image.
  /// splat (compute, the default: fast where the primitive rate is low, e.g. on an H100, whose draw of
  /// 1M points takes ~5 ms) or points (graphics pipeline). See particle_renderer.
  render_method method = render_method::splat;
  /// Point size in pixels. points: above 1 the caller must have enabled
  /// VkPhysicalDeviceFeatures::largePoints (create() checks that the device supports it and that the
  /// size is within pointSizeRange). splat: 1 to 64, no feature needed (each particle adds to the
  /// pixels whose centres lie in its square, as a point rasterises).
  float point_size = 1.0f;
  /// Colour each particle adds (times its mass; additive, clamped at 1). 0.15 suits ~1M particles at
  /// 1280x720; raise it for fewer particles.
  float brightness = 0.15f;
  float hot_speed = 2.0f;           ///< Speed drawn in the hottest colour; slow particles are blue.
  std::array<float, 4> clear_colour = {0.01f, 0.01f, 0.02f, 1.0f};  ///< Background (linear RGBA).
};

/// A semaphore the slot's submission waits for.
struct semaphore_wait {
  VkSemaphore semaphore = VK_NULL_HANDLE;  ///< Binary or timeline semaphore.
  std::uint64_t value = 0;                 ///< Timeline value to wait for (ignored for binary semaphores).
  /// Stages that wait: particle_renderer::particle_stages() (VERTEX_INPUT for points, COMPUTE_SHADER
  /// for splat) when the semaphore guards the particle buffer (e.g. CUDA's step), TRANSFER for a
  /// swapchain acquire that guards a blit. With splat, submit() adds COMPUTE_SHADER to a wait that
  /// names VERTEX_INPUT, so a caller written for points still waits before the particles are read.
  VkPipelineStageFlags stages = VK_PIPELINE_STAGE_VERTEX_INPUT_BIT;
};

/// A semaphore the slot's submission signals when its commands complete.
struct semaphore_signal {
  VkSemaphore semaphore = VK_NULL_HANDLE;  ///< Binary or timeline semaphore.
  std::uint64_t value = 0;                 ///< Timeline value to signal (ignored for binary semaphores).
};

/// Extra synchronisation and work for one submit(). The spans are read during the call only.
struct submit_sync {
  std::span<const semaphore_wait> waits;              ///< Waited for before the slot's commands run.
  std::span<const semaphore_signal> signals;          ///< Signalled when they complete.
  std::span<const VkCommandBuffer> extra_commands;    ///< Caller's command buffers run after the slot's (e.g. a blit).
};

/// A world-to-clip matrix for Vulkan (y down, depth 0..1) looking at the origin from `distance`, at
/// `yaw` radians around +z and `pitch` radians above the xy plane, with a 45 degree vertical field of
/// view and +z up.
[[nodiscard]] glm::mat4 orbit_view_proj(float aspect, float yaw, float pitch, float distance);

/// Draws particles into its own colour images (VK_FORMAT_R8G8B8A8_UNORM), one per frame slot.
///
/// Per frame: record(slot, ...) waits until the slot's previous submission finished (its fence), then
/// records a command buffer that clears the slot's image and draws `count` particles from the buffer;
/// submit(slot, sync) submits it with the caller's semaphores and the slot's fence. Using slots
/// round-robin (frame % frame_slots()) keeps frame_slots() frames in flight with no host wait on the
/// newest. After a submission the slot's image is in TRANSFER_SRC_OPTIMAL layout, its writes visible
/// to transfer reads of later submissions on the same queue (read_back, or a caller's blit), whatever
/// the method.
///
/// The methods (renderer_options::method):
/// - splat (default): the slot's command buffer fills an accumulation buffer of the slot's own
///   (width * height * 3 uint32, device-local) with 0; shaders/particles_splat.comp runs one thread per
///   particle, projects it with view_proj, and adds its colour (speed palette * brightness * mass,
///   clamped at 1) as fixed point (x 4096) with atomicAdd to the 3 channels of its pixel;
///   shaders/particles_resolve.comp writes background + sum / 4096, clamped at 1, to the image as a
///   storage image (GENERAL layout), which then goes to TRANSFER_SRC_OPTIMAL. The work runs on the
///   compute units: on a compute GPU such as the H100, whose graphics pipeline draws only about 200
///   million points per second (4.8 ms for 1M points, 18.7 ms for 4M at 1280x720, while the CUDA step
///   takes 0.05 / 0.19 ms), this is the fast path. Integer sums are exact, so the image does not depend on the order particles are added in
///   (the GPU and CPU paths of the sample give identical images). The particle buffer is read as a
///   storage buffer (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT; offset a multiple of
///   minStorageBufferOffsetAlignment; 32 * count bytes at most maxStorageBufferRange) at
///   COMPUTE_SHADER; the images get VK_IMAGE_USAGE_STORAGE_BIT (R8G8B8A8_UNORM must support
///   STORAGE_IMAGE with optimal tiling) and the queue family must support compute.
/// - points: a render pass clears the image and a graphics pipeline (shaders/particles.{vert,frag})
///   draws one point per particle, blended additively (ONE, ONE) into the UNORM image (so every add
///   rounds to 8 bits: very faint particles, below half a step, vanish). The particle buffer is
///   read as a vertex buffer (VK_BUFFER_USAGE_VERTEX_BUFFER_BIT) at VERTEX_INPUT.
///
/// Not thread-safe: use a renderer from one thread at a time. Move-only. The destructor waits for the
/// renderer's own submissions, then destroys what it created.
class particle_renderer {
 public:
  /// The colour format of the images.
  static constexpr VkFormat colour_format = VK_FORMAT_R8G8B8A8_UNORM;

  /// Creates one image, command buffer and fence per slot, a host-visible buffer for read_back(), and
  /// for points: the render pass, pipeline (embedded SPIR-V of shaders/particles.{vert,frag}) and a
  /// framebuffer per slot; for splat: the two compute pipelines (shaders/particles_{splat,resolve}.comp),
  /// a descriptor pool with one set per slot and an accumulation buffer per slot.
  /// Errors: invalid_argument for null handles, a table without functions, a zero or too large size,
  /// or frame_slots outside 1..8; unsupported for a point size the method cannot draw, or (splat) a
  /// queue family without compute, R8G8B8A8_UNORM without STORAGE_IMAGE, or an accumulation buffer
  /// (width * height * 12 bytes) above maxStorageBufferRange (use render_method::points);
  /// driver_unavailable when vkGetInstanceProcAddr cannot load the physical-device queries; Vulkan
  /// errors (out_of_memory, device_lost...) of the creating calls.
  [[nodiscard]] static membridge::result<particle_renderer> create(const renderer_device& device,
                                                                   const renderer_options& options = {});

  /// An empty renderer.
  particle_renderer() noexcept;
  particle_renderer(const particle_renderer&) = delete;
  particle_renderer& operator=(const particle_renderer&) = delete;
  /// Takes over `other`'s objects; `other` becomes empty.
  particle_renderer(particle_renderer&& other) noexcept;
  /// Destroys this renderer's objects (as the destructor does), then takes over `other`'s.
  particle_renderer& operator=(particle_renderer&& other) noexcept;
  /// Waits for the renderer's submissions, then destroys every object it created; failures go to
  /// membridge's log.
  ~particle_renderer();

  /// True unless empty.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  /// Image width in pixels.
  [[nodiscard]] std::uint32_t width() const noexcept;
  /// Image height in pixels.
  [[nodiscard]] std::uint32_t height() const noexcept;
  /// Number of frame slots.
  [[nodiscard]] std::uint32_t frame_slots() const noexcept;
  /// The background colour as 8-bit RGB (what an empty image reads back as).
  [[nodiscard]] std::array<std::uint8_t, 3> background_rgb8() const noexcept;
  /// The colour image of `slot` (owned by the renderer). VK_NULL_HANDLE for a bad slot.
  [[nodiscard]] VkImage colour_image(std::uint32_t slot) const noexcept;
  /// The fence submit() signals for `slot` (owned by the renderer). VK_NULL_HANDLE for a bad slot.
  [[nodiscard]] VkFence fence(std::uint32_t slot) const noexcept;
  /// The method the renderer draws with.
  [[nodiscard]] render_method method() const noexcept;
  /// The pipeline stages that read the particle buffer, for a semaphore_wait that guards it:
  /// COMPUTE_SHADER (splat) or VERTEX_INPUT (points).
  [[nodiscard]] VkPipelineStageFlags particle_stages() const noexcept;

  /// Waits for the slot's previous submission, then records its command buffer: clear, then draw
  /// `count` particles (particles::particle, stride 32) from `particles` at byte `offset` with
  /// `view_proj` (e.g. orbit_view_proj()). The buffer must hold offset + 32 * count bytes and have
  /// VK_BUFFER_USAGE_STORAGE_BUFFER_BIT (splat) or VK_BUFFER_USAGE_VERTEX_BUFFER_BIT (points);
  /// make its writes visible with a semaphore_wait at particle_stages() (CUDA) or upload_particles()
  /// (CPU). count 0 records a clear only. Returns the command buffer (owned by the renderer), valid
  /// until the slot is recorded again.
  /// Host time is small and allocation-free: splat rewrites the slot's descriptor set only when
  /// (particles, offset, count) differ from the slot's previous record() (a ring of slots that each
  /// draw their own part of one buffer never rewrites it). Destroying a buffer and creating another
  /// may give the same handle: call forget_particle_buffers() after destroying one the renderer drew.
  /// Errors: invalid_argument for a bad slot, a null buffer with count > 0, or (splat) an offset that is
  /// not a multiple of minStorageBufferOffsetAlignment; unsupported (splat) when 32 * count bytes
  /// exceed maxStorageBufferRange (use render_method::points); timeout when the slot's previous frame
  /// does not finish within 10 s; Vulkan errors.
  [[nodiscard]] membridge::result<VkCommandBuffer> record(std::uint32_t slot, VkBuffer particles, VkDeviceSize offset,
                                                          std::uint32_t count, const glm::mat4& view_proj);

  /// Submits the slot's recorded command buffer (then `sync.extra_commands`) to the queue, waiting for
  /// and signalling `sync`'s semaphores (timeline values through VkTimelineSemaphoreSubmitInfo, which
  /// needs the timelineSemaphore feature), and signals the slot's fence.
  /// Errors: invalid_argument when the slot was not recorded since its last submit; Vulkan errors.
  [[nodiscard]] membridge::result<void> submit(std::uint32_t slot, const submit_sync& sync = {});

  /// Waits until every submission of the renderer has finished (up to `timeout_ns`).
  /// Errors: timeout; Vulkan errors (device_lost).
  [[nodiscard]] membridge::result<void> wait_idle(std::uint64_t timeout_ns = 10'000'000'000ull);

  /// Copies `particles` into a device-local buffer that the renderer owns (vertex and storage usage;
  /// through a staging buffer; both grow when needed), for the CPU path. Blocks until the copy is
  /// done, which also waits for frames already submitted to the queue. Draw it with
  /// record(slot, particle_buffer(), 0, uploaded_count(), ...).
  /// Errors: invalid_argument above 2^32-1 particles; out_of_memory; Vulkan errors.
  [[nodiscard]] membridge::result<void> upload_particles(std::span<const particle> particles);
  /// The renderer's own particle buffer (VK_NULL_HANDLE before the first upload_particles()).
  [[nodiscard]] VkBuffer particle_buffer() const noexcept;
  /// Particles copied by the last upload_particles().
  [[nodiscard]] std::uint32_t uploaded_count() const noexcept;

  /// splat: forgets which buffer each slot's descriptor set refers to, so the next record() of every
  /// slot rewrites it. Call it after destroying a buffer passed to record() (a new buffer may reuse the
  /// handle); upload_particles() does it itself when it replaces its buffer. points: does nothing.
  void forget_particle_buffers() noexcept;

  /// Waits for the last submitted frame, copies its image to host memory and stores it in `rgba`
  /// (width * height * 4 bytes, rows top to bottom). Blocks.
  /// Errors: invalid_argument when nothing was submitted yet; timeout; Vulkan errors.
  [[nodiscard]] membridge::result<void> read_back(std::vector<std::uint8_t>& rgba);

 private:
  struct state;
  explicit particle_renderer(std::unique_ptr<state> s) noexcept;
  std::unique_ptr<state> state_;
};

}  // namespace particles
