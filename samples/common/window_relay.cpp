// The relayed window (window_relay.hpp): choosing the presenting device, the rendering side's
// read-back, and per presented frame the host copy and the presenting side's upload + blit.
#include "window.hpp"  // first: its Vulkan types come before GLFW's Vulkan declarations

#include "vk_error.hpp"
#include "vk_image.hpp"
#include "window_relay.hpp"

#include <membridge/core/log.hpp>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

namespace apps {

using membridge::errc;
using membridge::error;
using membridge::result;

namespace {

constexpr const char* present_variable = "MEMBRIDGE_WINDOW_PRESENT";
constexpr std::uint64_t frame_timeout_ns = 10'000'000'000ull;

/// A device that can present to the window, found on the rendering context's instance.
struct presenter_choice {
  membridge::device_uuid uuid;
  std::string name;
};

/// True when some graphics queue family of `device` can present to `s.surface` and the surface's
/// present modes can be read there (NVIDIA under Xvfb fails the latter).
bool presents(const window::state& s, PFN_vkGetPhysicalDeviceQueueFamilyProperties families_of,
              VkPhysicalDevice device) {
  std::uint32_t count = 0;
  families_of(device, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  families_of(device, &count, families.data());
  bool any = false;
  for (std::uint32_t f = 0; f < count && !any; ++f) {
    VkBool32 supported = VK_FALSE;
    any = (families[f].queueFlags & VK_QUEUE_GRAPHICS_BIT) != 0 &&
          s.surface_fns.surface_support(device, f, s.surface, &supported) == VK_SUCCESS && supported == VK_TRUE;
  }
  std::uint32_t modes = 0;
  return any && s.surface_fns.present_modes(device, s.surface, &modes, nullptr) == VK_SUCCESS && modes > 0;
}

/// The first device other than the rendering one that presents to the window; the rendering one
/// when `allow_same_device` and no other does. Other devices are asked first, and the rendering one
/// only when none can: NVIDIA's driver 580 calls through a null pointer in its surface queries on an X
/// display without GLX, so a forced relay (MEMBRIDGE_WINDOW_PRESENT=relay) avoids asking it at all.
std::optional<presenter_choice> choose_presenter(const window::state& s,
                                                 const membridge::vulkan::device_context& render,
                                                 bool allow_same_device) {
  const PFN_vkGetInstanceProcAddr gipa = render.get_instance_proc_addr();
  const auto enumerate =
      reinterpret_cast<PFN_vkEnumeratePhysicalDevices>(gipa(s.instance, "vkEnumeratePhysicalDevices"));
  const auto properties =
      reinterpret_cast<PFN_vkGetPhysicalDeviceProperties2>(gipa(s.instance, "vkGetPhysicalDeviceProperties2"));
  const auto families = reinterpret_cast<PFN_vkGetPhysicalDeviceQueueFamilyProperties>(
      gipa(s.instance, "vkGetPhysicalDeviceQueueFamilyProperties"));
  if (enumerate == nullptr || properties == nullptr || families == nullptr) return std::nullopt;
  std::uint32_t count = 0;
  if (enumerate(s.instance, &count, nullptr) != VK_SUCCESS) return std::nullopt;
  std::vector<VkPhysicalDevice> devices(count);
  if (enumerate(s.instance, &count, devices.data()) != VK_SUCCESS) return std::nullopt;
  std::optional<std::pair<VkPhysicalDevice, presenter_choice>> rendering;
  for (VkPhysicalDevice device : devices) {
    VkPhysicalDeviceIDProperties id{};
    id.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
    VkPhysicalDeviceProperties2 props{};
    props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    props.pNext = &id;
    properties(device, &props);
    presenter_choice c{membridge::device_uuid::from_bytes(id.deviceUUID), props.properties.deviceName};
    if (c.uuid == render.uuid()) {
      rendering.emplace(device, std::move(c));
      continue;
    }
    if (presents(s, families, device)) return c;
  }
  if (allow_same_device && rendering && presents(s, families, rendering->first)) return rendering->second;
  return std::nullopt;
}

/// Makes the rendering side's pool, per-slot copy commands and semaphores, and its fence.
result<void> make_render_side(window_relay& r, std::uint32_t slots) {
  MEMBRIDGE_TRY(make_command_buffers(r.render, r.render_queue.family, slots, r.pool, r.copies,
                                     "the relay's read-back commands"));
  MEMBRIDGE_TRY(make_semaphores(r.render, slots, r.acquired, "the relay's acquire semaphores"));
  MEMBRIDGE_TRY(make_semaphores(r.render, slots, r.rendered, "the relay's render-done semaphores"));
  VkFenceCreateInfo fence{};
  fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  if (const VkResult rc = r.render.vk->vkCreateFence(r.render.device, &fence, nullptr, &r.render_done);
      rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateFence", "the relay's frame fence");
  return membridge::ok();
}

/// Waits for `fence` (at most 10 s) and resets it.
result<void> wait_and_reset(const device_side& d, VkFence fence, const char* what) {
  if (const VkResult rc = d.vk->vkWaitForFences(d.device, 1, &fence, VK_TRUE, frame_timeout_ns); rc != VK_SUCCESS)
    return vk_error(rc, "vkWaitForFences", what);
  if (const VkResult rc = d.vk->vkResetFences(d.device, 1, &fence); rc != VK_SUCCESS)
    return vk_error(rc, "vkResetFences", what);
  return membridge::ok();
}

void destroy_staging(const device_side& d, window_relay& r) noexcept {
  if (r.staging != VK_NULL_HANDLE) d.vk->vkDestroyImage(d.device, r.staging, nullptr);
  if (r.staging_memory != VK_NULL_HANDLE) d.vk->vkFreeMemory(d.device, r.staging_memory, nullptr);
  r.staging = VK_NULL_HANDLE;
  r.staging_memory = VK_NULL_HANDLE;
  r.staging_extent = {0, 0};
}

/// (Re)makes the presenting side's upload buffer and staging image for `extent` (nothing in flight).
result<void> fit_presenting_side(const device_side& d, window_relay& r, VkExtent2D extent) {
  const VkDeviceSize bytes = VkDeviceSize{extent.width} * extent.height * 4;
  if (r.upload.size != bytes) {
    destroy_host_buffer(d, r.upload);
    MEMBRIDGE_TRY_ASSIGN(r.upload, make_host_buffer(d, bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, "the relay's upload"));
  }
  if (r.staging_extent.width == extent.width && r.staging_extent.height == extent.height) return membridge::ok();
  destroy_staging(d, r);
  const VkImageCreateInfo info = colour_image_info(VK_FORMAT_R8G8B8A8_UNORM, extent,
                                                   VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT);
  if (const VkResult rc = d.vk->vkCreateImage(d.device, &info, nullptr, &r.staging); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateImage", "the relay's staging image");
  VkMemoryRequirements req{};
  d.vk->vkGetImageMemoryRequirements(d.device, r.staging, &req);
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = memory_type(d, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (alloc.memoryTypeIndex == UINT32_MAX) alloc.memoryTypeIndex = memory_type(d, req.memoryTypeBits, 0);
  if (alloc.memoryTypeIndex == UINT32_MAX) {
    destroy_staging(d, r);
    return error(errc::unsupported, "window relay", "no memory type for the staging image");
  }
  VkResult rc = d.vk->vkAllocateMemory(d.device, &alloc, nullptr, &r.staging_memory);
  if (rc == VK_SUCCESS) rc = d.vk->vkBindImageMemory(d.device, r.staging, r.staging_memory, 0);
  if (rc != VK_SUCCESS) {
    destroy_staging(d, r);
    return vk_error(rc, "vkAllocateMemory/vkBindImageMemory", "the relay's staging image");
  }
  r.staging_extent = extent;
  return membridge::ok();
}

}  // namespace

result<present_choice> present_choice_from_environment() {
  const char* value = std::getenv(present_variable);
  const std::string_view v = value == nullptr ? std::string_view{} : std::string_view{value};
  if (v.empty() || v == "auto") return present_choice::automatic;
  if (v == "direct") return present_choice::direct;
  if (v == "relay") return present_choice::relay;
  return error(errc::invalid_argument, "window::create",
               std::string(present_variable) + "=" + std::string(v) + ": expected auto, direct or relay");
}

result<void> start_relay(window::state& s, const window_system& system, const membridge::vulkan::device_context& render,
                         std::uint32_t slots, bool allow_same_device, const std::string& reason) {
  const std::optional<presenter_choice> chosen = choose_presenter(s, render, allow_same_device);
  if (!chosen)
    return error(errc::unsupported, "window::create",
                 "the rendering device cannot present to this window (" + reason +
                     ") and no other Vulkan device can (e.g. Mesa's lavapipe, Debian: mesa-vulkan-drivers)");
  s.surface_fns.destroy_surface(s.instance, s.surface, nullptr);  // the rendering instance's
  s.surface = VK_NULL_HANDLE;
  auto relay = std::make_unique<window_relay>();
  relay->presenter_name = chosen->name;
  relay->reason = reason;
  relay->render = s.side();
  relay->render_keep_alive = s.keep_alive;
  relay->render_queue = s.queue;
  window_relay& r = *relay;
  s.relay = std::move(relay);  // from here on the state's destructor releases what is made
  MEMBRIDGE_TRY(make_render_side(r, slots));
  membridge::vulkan::create_options options = system.relay_options();
  options.uuid = chosen->uuid;
  options.sparse = false;
  options.allow_missing_extensions = true;  // it presents; it imports nothing
  MEMBRIDGE_TRY_ASSIGN(r.presenter, membridge::vulkan::device_context::create(options).with_context(
                                        "the relay's presenting device " + chosen->name));
  MEMBRIDGE_TRY(s.use_context(r.presenter));
  MEMBRIDGE_TRY(s.make_surface());
  MEMBRIDGE_TRY(s.check_presentation().with_context("presenting through " + chosen->name));
  VkFenceCreateInfo fence{};
  fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  if (const VkResult rc = s.vk->vkCreateFence(s.device, &fence, nullptr, &r.present_done); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateFence", "the relay's present fence");
  return membridge::ok();
}

result<present_job> relay_begin(window::state& s, std::uint32_t slot, std::uint32_t index, VkImage source,
                                std::uint32_t width, std::uint32_t height) {
  window_relay& r = *s.relay;
  const VolkDeviceTable& vk = *r.render.vk;
  // No read-back is in flight here: present() waited for the last one.
  const VkDeviceSize bytes = VkDeviceSize{width} * height * 4;
  if (r.readback.size != bytes) {
    destroy_host_buffer(r.render, r.readback);
    MEMBRIDGE_TRY_ASSIGN(r.readback,
                         make_host_buffer(r.render, bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT, "the relay's read-back"));
  }
  const VkCommandBuffer cmd = r.copies[slot];
  MEMBRIDGE_TRY(begin_one_time(vk, cmd));
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {width, height, 1};
  vk.vkCmdCopyImageToBuffer(cmd, source, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, r.readback.buffer, 1, &region);
  const VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_TRANSFER_WRITE_BIT,
                                VK_ACCESS_HOST_READ_BIT};
  vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr,
                          0, nullptr);
  if (const VkResult rc = vk.vkEndCommandBuffer(cmd); rc != VK_SUCCESS) return vk_error(rc, "vkEndCommandBuffer");
  // The caller's submission waits for job.acquired; the swapchain image was acquired on the
  // presenting device, so there is nothing to wait for here: signal it now.
  VkSubmitInfo signal{};
  signal.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  signal.signalSemaphoreCount = 1;
  signal.pSignalSemaphores = &r.acquired[slot];
  if (const VkResult rc = vk.vkQueueSubmit(r.render_queue.queue, 1, &signal, VK_NULL_HANDLE); rc != VK_SUCCESS)
    return vk_error(rc, "vkQueueSubmit", "the relay's acquire signal");
  r.frame = {width, height};
  r.frame_slot = slot;
  r.frame_index = index;
  return present_job{r.acquired[slot], r.rendered[slot], cmd, index};
}

result<void> relay_present(window::state& s, const present_job& job) {
  window_relay& r = *s.relay;
  // 1. The rendering side: wait for the caller's submission (its read-back copy) on the host.
  const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  VkSubmitInfo wait{};
  wait.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  wait.waitSemaphoreCount = 1;
  wait.pWaitSemaphores = &job.rendered;
  wait.pWaitDstStageMask = &stage;
  if (const VkResult rc = r.render.vk->vkQueueSubmit(r.render_queue.queue, 1, &wait, r.render_done); rc != VK_SUCCESS)
    return vk_error(rc, "vkQueueSubmit", "the relay's wait for the frame");
  MEMBRIDGE_TRY(wait_and_reset(r.render, r.render_done, "the relayed frame on the rendering device"));
  // 2. The presenting side: its last submission must be done with the upload buffer and staging image.
  const device_side d = s.side();
  if (r.present_pending) {
    MEMBRIDGE_TRY(wait_and_reset(d, r.present_done, "the relay's last presentation"));
    r.present_pending = false;
  }
  MEMBRIDGE_TRY(fit_presenting_side(d, r, r.frame));
  std::memcpy(r.upload.mapped, r.readback.mapped, static_cast<std::size_t>(r.upload.size));
  const VolkDeviceTable& vk = *s.vk;
  const VkCommandBuffer cmd = s.blits[r.frame_slot];
  MEMBRIDGE_TRY(begin_one_time(vk, cmd));
  image_barrier(s, cmd, r.staging, 0, VK_ACCESS_TRANSFER_WRITE_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
                VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_PIPELINE_STAGE_TRANSFER_BIT);
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {r.frame.width, r.frame.height, 1};
  vk.vkCmdCopyBufferToImage(cmd, r.upload.buffer, r.staging, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
  image_barrier(s, cmd, r.staging, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_TRANSFER_READ_BIT,
                VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                VK_PIPELINE_STAGE_TRANSFER_BIT);
  record_present(s, cmd, r.frame_slot, r.staging, r.frame.width, r.frame.height, s.images[r.frame_index]);
  if (const VkResult rc = vk.vkEndCommandBuffer(cmd); rc != VK_SUCCESS) return vk_error(rc, "vkEndCommandBuffer");
  const VkPipelineStageFlags at_transfer = VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.waitSemaphoreCount = 1;
  submit.pWaitSemaphores = &s.acquired[r.frame_slot];
  submit.pWaitDstStageMask = &at_transfer;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  submit.signalSemaphoreCount = 1;
  submit.pSignalSemaphores = &s.rendered[r.frame_index];
  if (const VkResult rc = vk.vkQueueSubmit(s.queue.queue, 1, &submit, r.present_done); rc != VK_SUCCESS)
    return vk_error(rc, "vkQueueSubmit", "the relayed frame on the presenting device");
  r.present_pending = true;
  return queue_present(s, s.rendered[r.frame_index], r.frame_index);
}

std::string relay_description(const window::state& s) {
  if (!s.relay) return {};
  return "; relayed through " + s.relay->presenter_name + " (" + s.relay->reason + ")";
}

void destroy_relay(window::state& s) noexcept {
  window_relay& r = *s.relay;
  const device_side& render = r.render;
  if (render.device != VK_NULL_HANDLE) {
    if (const VkResult rc = render.vk->vkDeviceWaitIdle(render.device); rc != VK_SUCCESS)
      membridge::log(membridge::log_level::warning, "window relay: vkDeviceWaitIdle: " + vk_result_name(rc));
    for (std::vector<VkSemaphore>* list : {&r.acquired, &r.rendered})
      for (VkSemaphore sem : *list) render.vk->vkDestroySemaphore(render.device, sem, nullptr);
    if (r.render_done != VK_NULL_HANDLE) render.vk->vkDestroyFence(render.device, r.render_done, nullptr);
    if (r.pool != VK_NULL_HANDLE) render.vk->vkDestroyCommandPool(render.device, r.pool, nullptr);
    destroy_host_buffer(render, r.readback);
  }
  r.acquired.clear();
  r.rendered.clear();
  r.render_done = VK_NULL_HANDLE;
  r.pool = VK_NULL_HANDLE;
  if (!r.presenter.valid() || s.device != r.presenter.device()) return;  // the presenting side was never taken
  const device_side present = s.side();
  if (const VkResult rc = present.vk->vkDeviceWaitIdle(present.device); rc != VK_SUCCESS)
    membridge::log(membridge::log_level::warning, "window relay: vkDeviceWaitIdle: " + vk_result_name(rc));
  destroy_host_buffer(present, r.upload);
  destroy_staging(present, r);
  if (r.present_done != VK_NULL_HANDLE) present.vk->vkDestroyFence(present.device, r.present_done, nullptr);
  r.present_done = VK_NULL_HANDLE;
}

}  // namespace apps
