// samples/01_particles/particle_renderer.hpp: an offscreen Vulkan renderer that draws particles as
// additive points from any vertex buffer (a CUDA buffer imported by membridge, or its own buffer filled
// from the CPU), into RGBA8 images it owns, one per frame slot.
//
// It borrows the device: it never creates an instance or device and never calls a global vk* function.
// Device functions come from the caller's VolkDeviceTable, instance functions through the caller's
// vkGetInstanceProcAddr (the target defines VK_NO_PROTOTYPES).
#pragma once

#include "particle_sim.hpp"

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
  /// Point size in pixels. Above 1 the caller must have enabled VkPhysicalDeviceFeatures::largePoints
  /// (create() checks that the device supports it and that the size is within pointSizeRange).
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
  /// Stages that wait: VERTEX_INPUT when the semaphore guards the particle buffer (e.g. CUDA's step),
  /// COLOR_ATTACHMENT_OUTPUT for a swapchain acquire.
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
/// records a command buffer that clears the slot's image and draws `count` points from the buffer;
/// submit(slot, sync) submits it with the caller's semaphores and the slot's fence. Using slots
/// round-robin (frame % frame_slots()) keeps frame_slots() frames in flight with no host wait on the
/// newest. After a submission the slot's image is in TRANSFER_SRC_OPTIMAL layout, its writes visible
/// to transfer reads of later submissions on the same queue (read_back, or a caller's blit).
///
/// Not thread-safe: use a renderer from one thread at a time. Move-only. The destructor waits for the
/// renderer's own submissions, then destroys what it created.
class particle_renderer {
 public:
  /// The colour format of the images.
  static constexpr VkFormat colour_format = VK_FORMAT_R8G8B8A8_UNORM;

  /// Creates the render pass, pipeline (embedded SPIR-V of shaders/particles.{vert,frag}), one image,
  /// framebuffer, command buffer and fence per slot, and a host-visible buffer for read_back().
  /// Errors: invalid_argument for null handles, a table without functions, a zero or too large size,
  /// or frame_slots outside 1..8; unsupported for a point size the device cannot draw;
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

  /// Waits for the slot's previous submission, then records its command buffer: clear, then draw
  /// `count` particles (particles::particle, stride 32) from `particles` at byte `offset` with
  /// `view_proj` (e.g. orbit_view_proj()). The buffer needs VK_BUFFER_USAGE_VERTEX_BUFFER_BIT and must
  /// hold offset + 32 * count bytes; make its writes visible with a semaphore_wait at VERTEX_INPUT (CUDA)
  /// or upload_particles() (CPU). count 0 records a clear only. Returns the command buffer (owned by
  /// the renderer), valid until the slot is recorded again.
  /// Errors: invalid_argument for a bad slot or a null buffer with count > 0; timeout when the slot's
  /// previous frame does not finish within 10 s; Vulkan errors.
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

  /// Copies `particles` into a device-local vertex buffer that the renderer owns (through a staging
  /// buffer; both grow when needed), for the CPU path. Blocks until the copy is done, which also waits
  /// for frames already submitted to the queue. Draw it with record(slot, particle_buffer(), 0,
  /// uploaded_count(), ...).
  /// Errors: invalid_argument above 2^32-1 particles; out_of_memory; Vulkan errors.
  [[nodiscard]] membridge::result<void> upload_particles(std::span<const particle> particles);
  /// The renderer's own particle buffer (VK_NULL_HANDLE before the first upload_particles()).
  [[nodiscard]] VkBuffer particle_buffer() const noexcept;
  /// Particles copied by the last upload_particles().
  [[nodiscard]] std::uint32_t uploaded_count() const noexcept;

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
