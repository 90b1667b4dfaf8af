// samples/01_particles/renderer_state.hpp: what a particle_renderer owns (its state: slots, pipelines,
// buffers) and the helpers its parts share: buffers with their own memory, memory barriers, pipeline
// layouts and shader modules, command buffers, fence waits and blocking one-shot submissions.
// Internal to the renderer (renderer_state.cpp, renderer_pipelines.cpp, particle_renderer.cpp); not
// for the sample's other files.
#pragma once

#include "particle_renderer.hpp"
#include "vk_error.hpp"

#include <glm/ext/vector_uint4.hpp>
#include <glm/vec4.hpp>
#include <volk.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace particles::renderer_detail {

inline constexpr std::uint64_t frame_timeout_ns = 10'000'000'000ull;
inline constexpr std::uint32_t max_frame_slots = 8;

/// The vertex shader's push constants (shaders/particles.vert).
struct push_constants {
  glm::mat4 view_proj;
  glm::vec4 style;  // point size, brightness, hot speed, unused
};
static_assert(sizeof(push_constants) == 80, "push constants must match shaders/particles.vert");

/// The compute shaders' push constants (shaders/particles_splat.comp and particles_resolve.comp).
struct splat_push_constants {
  glm::mat4 view_proj;
  glm::vec4 style;   // point size, brightness, hot speed, unused
  glm::vec4 clear;   // background colour
  glm::uvec4 extent; // width, height, particle count, unused
};
static_assert(sizeof(splat_push_constants) == 112, "push constants must match shaders/particles_*.comp");

/// particles_splat.comp's workgroup width and particles_resolve.comp's tile size.
inline constexpr std::uint32_t splat_group_size = 256;
inline constexpr std::uint32_t resolve_tile = 8;
/// The most pixels one splatted particle may cover per side (renderer_options::point_size).
inline constexpr float max_splat_point_size = 64.0f;

/// A buffer with its own memory, optionally mapped.
struct buffer_allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  std::uint8_t* mapped = nullptr;
  bool coherent = true;
};

/// A barrier from `src` to `dst` accesses on the first `size` bytes of `buffer`, within one queue family.
inline VkBufferMemoryBarrier buffer_barrier(VkBuffer buffer, VkAccessFlags src, VkAccessFlags dst,
                                            VkDeviceSize size = VK_WHOLE_SIZE) noexcept {
  return {VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER, nullptr, src, dst, VK_QUEUE_FAMILY_IGNORED, VK_QUEUE_FAMILY_IGNORED,
          buffer, 0, size};
}

/// A barrier from `src` to `dst` accesses on the colour image `image` (one level, one layer), moving it
/// from layout `from` to `to`, within one queue family.
inline VkImageMemoryBarrier colour_barrier(VkImage image, VkAccessFlags src, VkAccessFlags dst, VkImageLayout from,
                                           VkImageLayout to) noexcept {
  return {VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, nullptr, src, dst, from, to, VK_QUEUE_FAMILY_IGNORED,
          VK_QUEUE_FAMILY_IGNORED, image, {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
}

/// Device memory for one buffer or image, and whether its type is host-coherent.
struct device_memory {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  bool coherent = false;
};

/// What one frame slot owns.
struct frame_slot {
  VkImage image = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkImageView view = VK_NULL_HANDLE;
  VkFramebuffer framebuffer = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;  // one pool per slot, reset whole each frame
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  bool recorded = false;   // recorded since its last submit
  bool in_flight = false;  // submitted and its fence not reset since
  // splat only
  buffer_allocation accumulation;          // width * height * 3 uint32 channel sums
  VkDescriptorSet set = VK_NULL_HANDLE;    // 0: particles, 1: accumulation, 2: the image (GENERAL)
  VkBuffer bound_buffer = VK_NULL_HANDLE;  // what binding 0 refers to (VK_NULL_HANDLE: nothing yet)
  VkDeviceSize bound_offset = 0;
  std::uint32_t bound_count = 0;
};

}  // namespace particles::renderer_detail

namespace particles {

using membridge::result;
using renderer_detail::buffer_allocation;
using renderer_detail::device_memory;
using renderer_detail::frame_slot;
using renderer_detail::frame_timeout_ns;

/// Everything a particle_renderer owns; destroyed in the destructor after its frames finish.
struct particle_renderer::state {
  renderer_device device;
  const VolkDeviceTable* vk = nullptr;
  renderer_options options;
  VkPhysicalDeviceMemoryProperties memory_properties{};
  // points
  VkRenderPass render_pass = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  // splat
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout splat_layout = VK_NULL_HANDLE;
  VkPipeline splat_pipeline = VK_NULL_HANDLE;
  VkPipeline resolve_pipeline = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
  VkDeviceSize storage_offset_alignment = 1;           // minStorageBufferOffsetAlignment
  VkDeviceSize max_storage_range = 0;                  // maxStorageBufferRange
  std::array<std::uint32_t, 2> max_group_count{};      // maxComputeWorkGroupCount[0], [1]
  std::vector<frame_slot> slots;
  VkCommandPool transfer_pool = VK_NULL_HANDLE;
  VkCommandBuffer transfer_commands = VK_NULL_HANDLE;
  VkFence transfer_fence = VK_NULL_HANDLE;
  bool transfer_in_flight = false;
  buffer_allocation readback;
  buffer_allocation staging;
  buffer_allocation vertices;
  std::uint32_t uploaded = 0;
  std::optional<std::uint32_t> last_submitted;

  state(const renderer_device& d, const renderer_options& o) : device(d), vk(d.functions), options(o) {}
  state(const state&) = delete;
  state& operator=(const state&) = delete;
  ~state();

  result<std::uint32_t> memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                                    VkMemoryPropertyFlags preferred) const;
  /// The memory `buffer` or `image` needs.
  [[nodiscard]] VkMemoryRequirements requirements_of(VkBuffer buffer) const noexcept {
    VkMemoryRequirements needs{};
    vk->vkGetBufferMemoryRequirements(device.device, buffer, &needs);
    return needs;
  }
  [[nodiscard]] VkMemoryRequirements requirements_of(VkImage image) const noexcept {
    VkMemoryRequirements needs{};
    vk->vkGetImageMemoryRequirements(device.device, image, &needs);
    return needs;
  }
  /// Allocates memory for `needs` of a type with `required` flags (and `preferred`, if a type has
  /// them); errors carry `context`. Ownership: the caller frees the memory.
  result<device_memory> allocate_memory(const VkMemoryRequirements& needs, VkMemoryPropertyFlags required,
                                        VkMemoryPropertyFlags preferred, const std::string& context) const;
  result<buffer_allocation> make_buffer(VkDeviceSize size, VkBufferUsageFlags usage, VkMemoryPropertyFlags required,
                                        VkMemoryPropertyFlags preferred, const char* what);
  void destroy_buffer(buffer_allocation& b) noexcept;
  /// A pipeline layout with push constants `push` and, unless VK_NULL_HANDLE, the set layout `sets`;
  /// errors carry `what`. Ownership: the caller destroys the layout.
  result<VkPipelineLayout> make_pipeline_layout(const VkPushConstantRange& push, VkDescriptorSetLayout sets,
                                                const char* what) const;
  /// A shader module of the SPIR-V `code` (`size` bytes), named `name` in errors. Ownership: the caller
  /// destroys the module.
  result<VkShaderModule> make_shader_module(const std::uint32_t* code, std::size_t size, const char* name) const;
  result<void> make_render_pass();
  result<void> make_pipeline();
  result<void> make_splat_pipelines();
  result<void> make_descriptors();
  [[nodiscard]] VkPipelineStageFlags particle_stages() const noexcept {
    return options.method == render_method::splat ? VkPipelineStageFlags{VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT}
                                                  : VkPipelineStageFlags{VK_PIPELINE_STAGE_VERTEX_INPUT_BIT};
  }
  [[nodiscard]] VkAccessFlags particle_access() const noexcept {
    return options.method == render_method::splat ? VkAccessFlags{VK_ACCESS_SHADER_READ_BIT}
                                                  : VkAccessFlags{VK_ACCESS_VERTEX_ATTRIBUTE_READ_BIT};
  }
  void record_splat(VkCommandBuffer cmd, const frame_slot& f, std::uint32_t count,
                    const glm::mat4& view_proj) const noexcept;
  result<void> make_commands(VkCommandPool& pool, VkCommandBuffer& commands);
  result<void> make_slot(frame_slot& slot);
  result<void> wait_fence(VkFence fence, std::uint64_t timeout_ns, const char* what) const;
  result<void> wait_frames(std::uint64_t timeout_ns);
  template <class Fill>
  result<void> one_shot(const char* what, Fill&& fill);
};

/// Records `fill(cmd)` into the transfer command buffer, submits it and waits for it.
template <class Fill>
result<void> particle_renderer::state::one_shot(const char* what, Fill&& fill) {
  const VkCommandBuffer cmd = transfer_commands;
  if (transfer_in_flight) {  // a previous wait failed: try again before reusing the command buffer
    MEMBRIDGE_TRY(wait_fence(transfer_fence, frame_timeout_ns, what));
    transfer_in_flight = false;
    if (const VkResult rc = vk->vkResetFences(device.device, 1, &transfer_fence); rc != VK_SUCCESS)
      return vk_error(rc, "vkResetFences", what);
  }
  if (const VkResult rc = vk->vkResetCommandPool(device.device, transfer_pool, 0); rc != VK_SUCCESS)
    return vk_error(rc, "vkResetCommandPool", what);
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (const VkResult rc = vk->vkBeginCommandBuffer(cmd, &begin); rc != VK_SUCCESS)
    return vk_error(rc, "vkBeginCommandBuffer", what);
  fill(cmd);
  if (const VkResult rc = vk->vkEndCommandBuffer(cmd); rc != VK_SUCCESS)
    return vk_error(rc, "vkEndCommandBuffer", what);
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  if (const VkResult rc = vk->vkQueueSubmit(device.queue, 1, &submit, transfer_fence); rc != VK_SUCCESS)
    return vk_error(rc, "vkQueueSubmit", what);
  transfer_in_flight = true;
  MEMBRIDGE_TRY(wait_fence(transfer_fence, frame_timeout_ns, what));
  transfer_in_flight = false;
  if (const VkResult rc = vk->vkResetFences(device.device, 1, &transfer_fence); rc != VK_SUCCESS)
    return vk_error(rc, "vkResetFences", what);
  return membridge::ok();
}

}  // namespace particles
