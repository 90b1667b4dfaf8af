// The window's frame end: the overlay panel copied into the swapchain image's top-left corner, the
// screenshot copy of the whole image into host memory, and the transition to PRESENT_SRC; plus the
// host-visible buffers both use and save_screenshot().
#include "window.hpp"  // first: its Vulkan types come before GLFW's Vulkan declarations

#include "overlay_text.hpp"
#include "vk_error.hpp"
#include "window_state.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace apps {

using membridge::errc;
using membridge::error;
using membridge::result;

namespace {

/// True when the swapchain stores B, G, R, A (else R, G, B, A).
bool bgra(VkFormat f) noexcept { return f == VK_FORMAT_B8G8R8A8_UNORM || f == VK_FORMAT_B8G8R8A8_SRGB; }
/// True for the 4-byte colour formats the overlay and screenshots handle.
bool four_bytes(VkFormat f) noexcept {
  return bgra(f) || f == VK_FORMAT_R8G8B8A8_UNORM || f == VK_FORMAT_R8G8B8A8_SRGB;
}

/// Copies `n` pixels from `from` to `to`, swapping R and B when `swap`, with opaque alpha.
void copy_pixels(const std::uint8_t* from, std::uint8_t* to, std::size_t n, bool swap) noexcept {
  for (std::size_t i = 0; i < n; ++i, from += 4, to += 4) {
    to[0] = swap ? from[2] : from[0];
    to[1] = from[1];
    to[2] = swap ? from[0] : from[2];
    to[3] = 255;
  }
}

/// Records the copy of the overlay panel (refilling the slot's buffer first if the panel changed).
void record_overlay(window::state& s, VkCommandBuffer cmd, std::uint32_t slot, VkImage target) {
  if (s.panel.pixels.empty() || slot >= s.panel_buffers.size() || !four_bytes(s.format.format)) return;
  if (s.extent.width <= overlay_margin || s.extent.height <= overlay_margin) return;
  host_buffer& b = s.panel_buffers[slot];
  if (s.panel_buffer_versions[slot] != s.panel_version) {  // the slot's previous frame has finished
    copy_pixels(s.panel.pixels.data(), static_cast<std::uint8_t*>(b.mapped),
                static_cast<std::size_t>(s.panel.width) * s.panel.height, bgra(s.format.format));
    s.panel_buffer_versions[slot] = s.panel_version;
  }
  image_barrier(s, cmd, target, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                VK_PIPELINE_STAGE_TRANSFER_BIT);  // after the blit
  VkBufferImageCopy region{};
  region.bufferRowLength = s.panel.width;  // a clipped panel keeps its row pitch
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageOffset = {static_cast<std::int32_t>(overlay_margin), static_cast<std::int32_t>(overlay_margin), 0};
  region.imageExtent = {std::min(s.panel.width, s.extent.width - overlay_margin),
                        std::min(s.panel.height, s.extent.height - overlay_margin), 1};
  s.vk->vkCmdCopyBufferToImage(cmd, b.buffer, target, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
}

}  // namespace

void image_barrier(const window::state& s, VkCommandBuffer cmd, VkImage image, VkAccessFlags src, VkAccessFlags dst,
                   VkImageLayout from, VkImageLayout to, VkPipelineStageFlags dst_stage) {
  const VkImageMemoryBarrier b{.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, .pNext = nullptr,
                               .srcAccessMask = src, .dstAccessMask = dst, .oldLayout = from, .newLayout = to,
                               .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                               .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .image = image,
                               .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
  // The memory barrier orders this frame's buffer copies after earlier frames' (and host reads after them).
  const bool to_transfer = dst_stage == VK_PIPELINE_STAGE_TRANSFER_BIT;
  const VkMemoryBarrier m{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_TRANSFER_WRITE_BIT,
                          to_transfer ? VK_ACCESS_TRANSFER_WRITE_BIT : VK_ACCESS_HOST_READ_BIT};
  const VkPipelineStageFlags stages = to_transfer ? dst_stage : (dst_stage | VK_PIPELINE_STAGE_HOST_BIT);
  s.vk->vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, stages, 0, 1, &m, 0, nullptr, 1, &b);
}

std::uint32_t memory_type(const device_side& d, std::uint32_t allowed, VkMemoryPropertyFlags want) {
  for (std::uint32_t i = 0; i < d.memory_types.memoryTypeCount; ++i)
    if ((allowed & (1u << i)) != 0 && (d.memory_types.memoryTypes[i].propertyFlags & want) == want) return i;
  return UINT32_MAX;
}

result<host_buffer> make_host_buffer(const device_side& d, VkDeviceSize size, VkBufferUsageFlags usage,
                                     const char* what) {
  const VolkDeviceTable& vk = *d.vk;
  host_buffer b;
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = size;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (const VkResult rc = vk.vkCreateBuffer(d.device, &info, nullptr, &b.buffer); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateBuffer", what);
  VkMemoryRequirements req{};
  vk.vkGetBufferMemoryRequirements(d.device, b.buffer, &req);
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = memory_type(
      d, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  if (alloc.memoryTypeIndex == UINT32_MAX) {
    destroy_host_buffer(d, b);
    return error(errc::unsupported, "window", std::string("no host-visible, coherent memory for ") + what);
  }
  VkResult rc = vk.vkAllocateMemory(d.device, &alloc, nullptr, &b.memory);
  if (rc == VK_SUCCESS) rc = vk.vkBindBufferMemory(d.device, b.buffer, b.memory, 0);
  if (rc == VK_SUCCESS) rc = vk.vkMapMemory(d.device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped);
  if (rc != VK_SUCCESS) {
    destroy_host_buffer(d, b);
    return vk_error(rc, "vkAllocateMemory/vkBindBufferMemory/vkMapMemory", what);
  }
  b.size = size;
  return b;
}

void destroy_host_buffer(const device_side& d, host_buffer& b) noexcept {
  if (b.buffer != VK_NULL_HANDLE) d.vk->vkDestroyBuffer(d.device, b.buffer, nullptr);
  if (b.memory != VK_NULL_HANDLE) d.vk->vkFreeMemory(d.device, b.memory, nullptr);  // unmaps
  b = host_buffer{};
}

result<void> make_overlay_buffers(window::state& s) {
  const VkDeviceSize bytes = VkDeviceSize{overlay_max_width} * overlay_max_height * 4;
  for (std::size_t i = 0; i < s.blits.size(); ++i) {
    MEMBRIDGE_TRY_ASSIGN(host_buffer b,
                         make_host_buffer(s.side(), bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, "the overlay panel"));
    s.panel_buffers.push_back(b);
    s.panel_buffer_versions.push_back(0);
  }
  return membridge::ok();
}

result<void> make_capture_buffer(window::state& s) {
  destroy_host_buffer(s.side(), s.capture);
  s.captured = {0, 0};
  if (!s.screenshots || s.extent.width == 0 || s.extent.height == 0) return membridge::ok();
  MEMBRIDGE_TRY_ASSIGN(s.capture, make_host_buffer(s.side(), VkDeviceSize{s.extent.width} * s.extent.height * 4,
                                                   VK_BUFFER_USAGE_TRANSFER_DST_BIT, "the screenshot"));
  return membridge::ok();
}

void record_frame_end(window::state& s, VkCommandBuffer cmd, std::uint32_t slot, VkImage target) {
  record_overlay(s, cmd, slot, target);
  VkImageLayout layout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
  if (s.capture.buffer != VK_NULL_HANDLE && four_bytes(s.format.format)) {
    image_barrier(s, cmd, target, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_TRANSFER_READ_BIT, layout,
                  VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_PIPELINE_STAGE_TRANSFER_BIT);
    layout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    VkBufferImageCopy region{};
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {s.extent.width, s.extent.height, 1};
    s.vk->vkCmdCopyImageToBuffer(cmd, target, layout, s.capture.buffer, 1, &region);
    s.captured = s.extent;
  }
  // Presentation is ordered by the render-done semaphore; the host reads the screenshot after an idle wait.
  image_barrier(s, cmd, target, VK_ACCESS_TRANSFER_WRITE_BIT, 0, layout, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
                VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
}

void window::set_overlay(std::vector<std::string> lines) {
  if (!state_ || lines == state_->overlay_lines) return;
  state& s = *state_;
  s.overlay_lines = std::move(lines);
  s.panel = render_overlay(s.overlay_lines, 2, overlay_max_width, overlay_max_height);
  ++s.panel_version;
}

result<void> window::save_screenshot(const std::filesystem::path& path) {
  constexpr const char* call = "window::save_screenshot";
  if (!state_ || !state_->screenshots) return error(errc::invalid_argument, call, "the window takes no screenshots");
  state& s = *state_;
  if (s.captured.width == 0 || s.capture.buffer == VK_NULL_HANDLE)
    return error(errc::invalid_argument, call, "no frame was presented yet");
  if (const VkResult rc = s.vk->vkDeviceWaitIdle(s.device); rc != VK_SUCCESS)
    return vk_error(rc, "vkDeviceWaitIdle", "before reading the screenshot");
  const std::size_t n = static_cast<std::size_t>(s.captured.width) * s.captured.height;
  std::vector<std::uint8_t> rgba(n * 4);
  copy_pixels(static_cast<const std::uint8_t*>(s.capture.mapped), rgba.data(), n, bgra(s.format.format));
  return write_png(path, rgba, s.captured.width, s.captured.height);
}

}  // namespace apps
