// samples/01_particles/renderer_state.cpp: the renderer state's resources: teardown (after its
// frames finish), memory types, buffers, command buffers, frame slots and fence waits.
#include "renderer_state.hpp"

#include "vk_image.hpp"  // samples/common

#include <membridge/core/log.hpp>

#include <string>
#include <utility>

namespace particles {

using membridge::errc;
using membridge::error;
using namespace renderer_detail;

particle_renderer::state::~state() {
  const auto warn = [](const result<void>& r) {
    if (!r) membridge::log(membridge::log_level::warning, "particle_renderer: " + r.error().message());
  };
  for (const frame_slot& slot : slots)
    if (slot.in_flight) warn(wait_fence(slot.fence, frame_timeout_ns, "destroying the renderer"));
  if (transfer_in_flight) warn(wait_fence(transfer_fence, frame_timeout_ns, "destroying the renderer"));
  const VkDevice d = device.device;
  for (frame_slot& slot : slots) {
    vk->vkDestroyFramebuffer(d, slot.framebuffer, nullptr);
    vk->vkDestroyImageView(d, slot.view, nullptr);
    vk->vkDestroyImage(d, slot.image, nullptr);
    vk->vkFreeMemory(d, slot.memory, nullptr);
    vk->vkDestroyFence(d, slot.fence, nullptr);
    vk->vkDestroyCommandPool(d, slot.pool, nullptr);  // frees its command buffer
    destroy_buffer(slot.accumulation);
  }
  vk->vkDestroyDescriptorPool(d, descriptor_pool, nullptr);  // frees the sets
  vk->vkDestroyPipeline(d, splat_pipeline, nullptr);
  vk->vkDestroyPipeline(d, resolve_pipeline, nullptr);
  vk->vkDestroyPipelineLayout(d, splat_layout, nullptr);
  vk->vkDestroyDescriptorSetLayout(d, set_layout, nullptr);
  vk->vkDestroyFence(d, transfer_fence, nullptr);
  vk->vkDestroyCommandPool(d, transfer_pool, nullptr);
  destroy_buffer(readback);
  destroy_buffer(staging);
  destroy_buffer(vertices);
  vk->vkDestroyPipeline(d, pipeline, nullptr);
  vk->vkDestroyPipelineLayout(d, layout, nullptr);
  vk->vkDestroyRenderPass(d, render_pass, nullptr);
}

result<std::uint32_t> particle_renderer::state::memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                                                            VkMemoryPropertyFlags preferred) const {
  std::optional<std::uint32_t> fallback;
  for (std::uint32_t i = 0; i < memory_properties.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags flags = memory_properties.memoryTypes[i].propertyFlags;
    if ((type_bits & (1u << i)) == 0 || (flags & required) != required) continue;
    if ((flags & preferred) == preferred) return i;
    if (!fallback) fallback = i;
  }
  if (fallback) return *fallback;
  return error(errc::unsupported, "particle_renderer::memory_type",
               "no memory type with property flags " + std::to_string(required) + " among types " +
                   std::to_string(type_bits));
}

result<device_memory> particle_renderer::state::allocate_memory(const VkMemoryRequirements& needs,
                                                               VkMemoryPropertyFlags required,
                                                               VkMemoryPropertyFlags preferred,
                                                               const std::string& context) const {
  MEMBRIDGE_TRY_ASSIGN(const std::uint32_t type,
                       memory_type(needs.memoryTypeBits, required, preferred).with_context(context));
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.allocationSize = needs.size;
  alloc.memoryTypeIndex = type;
  device_memory m;
  m.coherent = (memory_properties.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  if (const VkResult rc = vk->vkAllocateMemory(device.device, &alloc, nullptr, &m.memory); rc != VK_SUCCESS)
    return vk_error(rc, "vkAllocateMemory", context);
  return m;
}

result<buffer_allocation> particle_renderer::state::make_buffer(VkDeviceSize size, VkBufferUsageFlags usage,
                                                                VkMemoryPropertyFlags required,
                                                                VkMemoryPropertyFlags preferred, const char* what) {
  const VkDevice d = device.device;
  const std::string context = std::string("creating the ") + what + " (" + std::to_string(size) + " bytes)";
  buffer_allocation b;
  b.size = size;
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = size;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (const VkResult rc = vk->vkCreateBuffer(d, &info, nullptr, &b.buffer); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateBuffer", context);
  auto memory = allocate_memory(requirements_of(b.buffer), required, preferred, context);
  if (!memory) {
    destroy_buffer(b);
    return std::move(memory).error();
  }
  b.memory = memory->memory;
  b.coherent = memory->coherent;
  if (const VkResult rc = vk->vkBindBufferMemory(d, b.buffer, b.memory, 0); rc != VK_SUCCESS) {
    destroy_buffer(b);
    return vk_error(rc, "vkBindBufferMemory", context);
  }
  if ((required & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0) {
    void* p = nullptr;
    if (const VkResult rc = vk->vkMapMemory(d, b.memory, 0, VK_WHOLE_SIZE, 0, &p); rc != VK_SUCCESS) {
      destroy_buffer(b);
      return vk_error(rc, "vkMapMemory", context);
    }
    b.mapped = static_cast<std::uint8_t*>(p);
  }
  return b;
}

void particle_renderer::state::destroy_buffer(buffer_allocation& b) noexcept {
  vk->vkDestroyBuffer(device.device, b.buffer, nullptr);
  vk->vkFreeMemory(device.device, b.memory, nullptr);  // unmaps implicitly
  b = {};
}

result<void> particle_renderer::state::make_commands(VkCommandPool& pool, VkCommandBuffer& commands) {
  VkCommandPoolCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  info.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  info.queueFamilyIndex = device.queue_family;
  if (const VkResult rc = vk->vkCreateCommandPool(device.device, &info, nullptr, &pool); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateCommandPool", "queue family " + std::to_string(device.queue_family));
  VkCommandBufferAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  alloc.commandPool = pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  if (const VkResult rc = vk->vkAllocateCommandBuffers(device.device, &alloc, &commands); rc != VK_SUCCESS)
    return vk_error(rc, "vkAllocateCommandBuffers", "the renderer's command buffers");
  return membridge::ok();
}

result<void> particle_renderer::state::make_slot(frame_slot& slot) {
  MEMBRIDGE_TRY(make_commands(slot.pool, slot.commands));
  const VkDevice d = device.device;
  const std::string context = "creating a " + std::to_string(options.width) + "x" + std::to_string(options.height) +
                              " colour image for a frame slot";
  // splat writes the image from a compute shader; points draws into it as a colour attachment.
  const VkImageCreateInfo image = apps::colour_image_info(
      colour_format, {options.width, options.height},
      (options.method == render_method::splat ? VK_IMAGE_USAGE_STORAGE_BIT : VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT) |
          VK_IMAGE_USAGE_TRANSFER_SRC_BIT);
  if (const VkResult rc = vk->vkCreateImage(d, &image, nullptr, &slot.image); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateImage", context);
  MEMBRIDGE_TRY_ASSIGN(const device_memory memory,
                       allocate_memory(requirements_of(slot.image), VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, context));
  slot.memory = memory.memory;
  if (const VkResult rc = vk->vkBindImageMemory(d, slot.image, slot.memory, 0); rc != VK_SUCCESS)
    return vk_error(rc, "vkBindImageMemory", context);
  VkImageViewCreateInfo view{};
  view.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO;
  view.image = slot.image;
  view.viewType = VK_IMAGE_VIEW_TYPE_2D;
  view.format = colour_format;
  view.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  if (const VkResult rc = vk->vkCreateImageView(d, &view, nullptr, &slot.view); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateImageView", context);
  VkFenceCreateInfo fence{};
  fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  if (const VkResult rc = vk->vkCreateFence(d, &fence, nullptr, &slot.fence); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateFence", context);
  if (options.method == render_method::splat) {
    MEMBRIDGE_TRY_ASSIGN(slot.accumulation,
                         make_buffer(VkDeviceSize{options.width} * options.height * 3 * sizeof(std::uint32_t),
                                     VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                     VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, "splat accumulation buffer"));
    return membridge::ok();
  }
  VkFramebufferCreateInfo fb{};
  fb.sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO;
  fb.renderPass = render_pass;
  fb.attachmentCount = 1;
  fb.pAttachments = &slot.view;
  fb.width = options.width;
  fb.height = options.height;
  fb.layers = 1;
  if (const VkResult rc = vk->vkCreateFramebuffer(d, &fb, nullptr, &slot.framebuffer); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateFramebuffer", context);
  return membridge::ok();
}

result<void> particle_renderer::state::wait_fence(VkFence fence, std::uint64_t timeout_ns, const char* what) const {
  const VkResult rc = vk->vkWaitForFences(device.device, 1, &fence, VK_TRUE, timeout_ns);
  if (rc == VK_SUCCESS) return membridge::ok();
  if (rc == VK_TIMEOUT)
    return error::from_native(errc::timeout, membridge::error_source::vulkan, rc, vk_result_name(rc), "vkWaitForFences",
                              std::string("the GPU did not finish within ") + std::to_string(timeout_ns / 1'000'000) +
                                  " ms: " + what);
  return vk_error(rc, "vkWaitForFences", what);
}

result<void> particle_renderer::state::wait_frames(std::uint64_t timeout_ns) {
  for (const frame_slot& slot : slots)
    if (slot.in_flight) MEMBRIDGE_TRY(wait_fence(slot.fence, timeout_ns, "waiting for the renderer's frames"));
  return membridge::ok();
}

}  // namespace particles
