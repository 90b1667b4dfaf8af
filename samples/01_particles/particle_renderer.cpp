// The offscreen particle renderer: per-slot images and command buffers; for points a render pass and a
// point-list pipeline, for splat two compute pipelines (accumulate with atomics, resolve), descriptor
// sets and accumulation buffers; and blocking helpers for uploads and read-back. Every Vulkan call goes
// through the caller's VolkDeviceTable or a function loaded with the caller's vkGetInstanceProcAddr.
//
// Its state and the helpers its parts share: renderer_state.hpp/.cpp; its pipelines and the splat
// frame's commands: renderer_pipelines.cpp.
#include "renderer_state.hpp"

#include <membridge/core/log.hpp>

#include <glm/ext/matrix_clip_space.hpp>
#include <glm/ext/matrix_transform.hpp>
#include <glm/trigonometric.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

namespace particles {

using membridge::errc;
using membridge::error;
using namespace renderer_detail;

namespace {

std::uint8_t to_unorm8(float v) noexcept {
  return static_cast<std::uint8_t>(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f));
}

template <class F>
F load_instance_function(const renderer_device& d, const char* name) noexcept {
  return reinterpret_cast<F>(d.get_instance_proc_addr(d.instance, name));
}

}  // namespace

// ----------------------------------------------------------------------------------------- public ---

glm::mat4 orbit_view_proj(float aspect, float yaw, float pitch, float distance) {
  const glm::vec3 eye{distance * std::cos(pitch) * std::cos(yaw), distance * std::cos(pitch) * std::sin(yaw),
                      distance * std::sin(pitch)};
  const glm::mat4 view = glm::lookAtRH(eye, glm::vec3(0.0f), glm::vec3(0.0f, 0.0f, 1.0f));
  glm::mat4 proj = glm::perspectiveRH_ZO(glm::radians(45.0f), aspect, 0.05f, 100.0f);
  proj[1][1] *= -1.0f;  // Vulkan's clip space has y down
  return proj * view;
}

result<particle_renderer> particle_renderer::create(const renderer_device& device, const renderer_options& options) {
  if (device.get_instance_proc_addr == nullptr || device.instance == VK_NULL_HANDLE ||
      device.physical_device == VK_NULL_HANDLE || device.device == VK_NULL_HANDLE || device.functions == nullptr ||
      device.queue == VK_NULL_HANDLE)
    return error(errc::invalid_argument, "particle_renderer::create", "a handle or the function table is null");
  if (device.functions->vkCreateRenderPass == nullptr || device.functions->vkQueueSubmit == nullptr)
    return error(errc::invalid_argument, "particle_renderer::create",
                 "the VolkDeviceTable has no functions (load it with volkLoadDeviceTable or device_context)");
  if (options.frame_slots == 0 || options.frame_slots > max_frame_slots)
    return error(errc::invalid_argument, "particle_renderer::create",
                 "frame_slots must be 1.." + std::to_string(max_frame_slots) + ", not " +
                     std::to_string(options.frame_slots));
  if (options.method != render_method::splat && options.method != render_method::points)
    return error(errc::invalid_argument, "particle_renderer::create",
                 "unknown render method " + std::to_string(static_cast<int>(options.method)));
  const bool splat = options.method == render_method::splat;

  const auto get_properties = load_instance_function<PFN_vkGetPhysicalDeviceProperties>(device, "vkGetPhysicalDeviceProperties");
  const auto get_features = load_instance_function<PFN_vkGetPhysicalDeviceFeatures>(device, "vkGetPhysicalDeviceFeatures");
  const auto get_memory =
      load_instance_function<PFN_vkGetPhysicalDeviceMemoryProperties>(device, "vkGetPhysicalDeviceMemoryProperties");
  if (get_properties == nullptr || get_features == nullptr || get_memory == nullptr)
    return error(errc::driver_unavailable, "vkGetInstanceProcAddr",
                 "vkGetPhysicalDeviceProperties/Features/MemoryProperties did not load");
  VkPhysicalDeviceProperties properties{};
  get_properties(device.physical_device, &properties);
  VkPhysicalDeviceFeatures features{};
  get_features(device.physical_device, &features);
  const VkPhysicalDeviceLimits& limits = properties.limits;
  if (options.width == 0 || options.height == 0 || options.width > limits.maxFramebufferWidth ||
      options.height > limits.maxFramebufferHeight || options.width > limits.maxImageDimension2D ||
      options.height > limits.maxImageDimension2D)
    return error(errc::invalid_argument, "particle_renderer::create",
                 "image size " + std::to_string(options.width) + "x" + std::to_string(options.height) +
                     " is zero or above the device's limit " + std::to_string(limits.maxFramebufferWidth) + "x" +
                     std::to_string(limits.maxFramebufferHeight));
  if (splat) {
    if (!(options.point_size >= 1.0f) || options.point_size > max_splat_point_size)
      return error(errc::unsupported, "particle_renderer::create",
                   "point size " + std::to_string(options.point_size) + " is not drawable by the splat method (1 to " +
                       std::to_string(static_cast<int>(max_splat_point_size)) + " pixels)");
  } else if (!(options.point_size >= 1.0f) || (options.point_size > 1.0f && features.largePoints == VK_FALSE) ||
             options.point_size > limits.pointSizeRange[1]) {
    return error(errc::unsupported, "particle_renderer::create",
                 "point size " + std::to_string(options.point_size) + " is not drawable (largePoints " +
                     (features.largePoints ? "supported" : "unsupported") + ", range up to " +
                     std::to_string(limits.pointSizeRange[1]) + ")");
  }
  if (splat) {
    // The splat method needs compute on the renderer's queue, storage images of the colour format and
    // an accumulation buffer that one storage-buffer descriptor covers.
    const auto get_format =
        load_instance_function<PFN_vkGetPhysicalDeviceFormatProperties>(device, "vkGetPhysicalDeviceFormatProperties");
    const auto get_queues = load_instance_function<PFN_vkGetPhysicalDeviceQueueFamilyProperties>(
        device, "vkGetPhysicalDeviceQueueFamilyProperties");
    if (get_format == nullptr || get_queues == nullptr)
      return error(errc::driver_unavailable, "vkGetInstanceProcAddr",
                   "vkGetPhysicalDeviceFormatProperties/QueueFamilyProperties did not load");
    VkFormatProperties format{};
    get_format(device.physical_device, colour_format, &format);
    if ((format.optimalTilingFeatures & VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT) == 0)
      return error(errc::unsupported, "particle_renderer::create",
                   "the splat method writes the image as a storage image, but the device does not support "
                   "STORAGE_IMAGE for VK_FORMAT_R8G8B8A8_UNORM (optimal tiling): use render_method::points");
    std::uint32_t family_count = 0;
    get_queues(device.physical_device, &family_count, nullptr);
    std::vector<VkQueueFamilyProperties> families(family_count);
    get_queues(device.physical_device, &family_count, families.data());
    if (device.queue_family >= family_count ||
        (families[device.queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT) == 0)
      return error(errc::unsupported, "particle_renderer::create",
                   "the splat method dispatches compute shaders, but queue family " +
                       std::to_string(device.queue_family) + " has no compute: use render_method::points");
    const VkDeviceSize accumulation_bytes = VkDeviceSize{options.width} * options.height * 3 * sizeof(std::uint32_t);
    if (accumulation_bytes > limits.maxStorageBufferRange)
      return error(errc::unsupported, "particle_renderer::create",
                   "the splat accumulation buffer of " + std::to_string(options.width) + "x" +
                       std::to_string(options.height) + " (" + std::to_string(accumulation_bytes) +
                       " bytes) exceeds maxStorageBufferRange (" + std::to_string(limits.maxStorageBufferRange) +
                       "): use a smaller image or render_method::points");
  }

  auto s = std::make_unique<state>(device, options);
  get_memory(device.physical_device, &s->memory_properties);
  s->storage_offset_alignment = std::max<VkDeviceSize>(limits.minStorageBufferOffsetAlignment, 1);
  s->max_storage_range = limits.maxStorageBufferRange;
  s->max_group_count = {limits.maxComputeWorkGroupCount[0], limits.maxComputeWorkGroupCount[1]};
  const VolkDeviceTable& vk = *s->vk;
  if (splat) {
    MEMBRIDGE_TRY(s->make_splat_pipelines());
  } else {
    MEMBRIDGE_TRY(s->make_render_pass());
    MEMBRIDGE_TRY(s->make_pipeline());
  }

  MEMBRIDGE_TRY(s->make_commands(s->transfer_pool, s->transfer_commands));
  VkFenceCreateInfo fence{};
  fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  if (const VkResult rc = vk.vkCreateFence(device.device, &fence, nullptr, &s->transfer_fence); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateFence", "the renderer's transfer fence");

  s->slots.resize(options.frame_slots);
  for (frame_slot& slot : s->slots) MEMBRIDGE_TRY(s->make_slot(slot));
  if (splat) MEMBRIDGE_TRY(s->make_descriptors());
  MEMBRIDGE_TRY_ASSIGN(s->readback,
                       s->make_buffer(VkDeviceSize{options.width} * options.height * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                                      "read-back buffer"));
  return particle_renderer(std::move(s));
}

particle_renderer::particle_renderer() noexcept = default;
particle_renderer::particle_renderer(std::unique_ptr<state> s) noexcept : state_(std::move(s)) {}
particle_renderer::particle_renderer(particle_renderer&& other) noexcept = default;
particle_renderer& particle_renderer::operator=(particle_renderer&& other) noexcept = default;
particle_renderer::~particle_renderer() = default;

std::uint32_t particle_renderer::width() const noexcept { return state_ ? state_->options.width : 0; }
std::uint32_t particle_renderer::height() const noexcept { return state_ ? state_->options.height : 0; }
std::uint32_t particle_renderer::frame_slots() const noexcept {
  return state_ ? static_cast<std::uint32_t>(state_->slots.size()) : 0;
}

std::array<std::uint8_t, 3> particle_renderer::background_rgb8() const noexcept {
  if (!state_) return {};
  const auto& c = state_->options.clear_colour;
  return {to_unorm8(c[0]), to_unorm8(c[1]), to_unorm8(c[2])};
}

VkImage particle_renderer::colour_image(std::uint32_t slot) const noexcept {
  return state_ && slot < state_->slots.size() ? state_->slots[slot].image : VK_NULL_HANDLE;
}

VkFence particle_renderer::fence(std::uint32_t slot) const noexcept {
  return state_ && slot < state_->slots.size() ? state_->slots[slot].fence : VK_NULL_HANDLE;
}

render_method particle_renderer::method() const noexcept {
  return state_ ? state_->options.method : render_method::splat;
}

VkPipelineStageFlags particle_renderer::particle_stages() const noexcept {
  if (!state_) return VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  return state_->particle_stages();
}

void particle_renderer::forget_particle_buffers() noexcept {
  if (!state_) return;
  for (frame_slot& f : state_->slots) {
    f.bound_buffer = VK_NULL_HANDLE;
    f.bound_offset = 0;
    f.bound_count = 0;
  }
}

VkBuffer particle_renderer::particle_buffer() const noexcept { return state_ ? state_->vertices.buffer : VK_NULL_HANDLE; }
std::uint32_t particle_renderer::uploaded_count() const noexcept { return state_ ? state_->uploaded : 0; }

result<VkCommandBuffer> particle_renderer::record(std::uint32_t slot, VkBuffer particles, VkDeviceSize offset,
                                                  std::uint32_t count, const glm::mat4& view_proj) {
  if (!state_) return error(errc::invalid_argument, "particle_renderer::record", "empty renderer");
  state& s = *state_;
  if (slot >= s.slots.size())
    return error(errc::invalid_argument, "particle_renderer::record",
                 "slot " + std::to_string(slot) + " of " + std::to_string(s.slots.size()));
  if (count > 0 && particles == VK_NULL_HANDLE)
    return error(errc::invalid_argument, "particle_renderer::record", "no particle buffer for " + std::to_string(count) + " particles");
  const bool splat = s.options.method == render_method::splat;
  const VkDeviceSize range = VkDeviceSize{count} * sizeof(particle);
  if (splat && count > 0) {
    if (offset % s.storage_offset_alignment != 0)
      return error(errc::invalid_argument, "particle_renderer::record",
                   "offset " + std::to_string(offset) + " is not a multiple of minStorageBufferOffsetAlignment (" +
                       std::to_string(s.storage_offset_alignment) + "), which the splat method's storage buffer needs");
    if (range > s.max_storage_range)
      return error(errc::unsupported, "particle_renderer::record",
                   std::to_string(count) + " particles (" + std::to_string(range) +
                       " bytes) exceed maxStorageBufferRange (" + std::to_string(s.max_storage_range) +
                       ") of the splat method's storage buffer: use render_method::points");
    const std::uint64_t groups = (std::uint64_t{count} + splat_group_size - 1) / splat_group_size;
    const std::uint64_t groups_x = std::min<std::uint64_t>(groups, s.max_group_count[0]);
    if ((groups + groups_x - 1) / groups_x > s.max_group_count[1])
      return error(errc::unsupported, "particle_renderer::record",
                   std::to_string(count) + " particles need more workgroups than maxComputeWorkGroupCount allows");
  }
  frame_slot& f = s.slots[slot];
  const VolkDeviceTable& vk = *s.vk;
  if (f.in_flight) {
    MEMBRIDGE_TRY(s.wait_fence(f.fence, frame_timeout_ns, "waiting for the slot's previous frame"));
    if (const VkResult rc = vk.vkResetFences(s.device.device, 1, &f.fence); rc != VK_SUCCESS)
      return vk_error(rc, "vkResetFences", "recording a frame");
    f.in_flight = false;
  }
  f.recorded = false;
  const VkCommandBuffer cmd = f.commands;
  if (const VkResult rc = vk.vkResetCommandPool(s.device.device, f.pool, 0); rc != VK_SUCCESS)
    return vk_error(rc, "vkResetCommandPool", "recording a frame");
  if (splat && count > 0 && (f.bound_buffer != particles || f.bound_offset != offset || f.bound_count != count)) {
    // The slot's previous frame has finished (its fence) and its command buffer was just reset: the set
    // is in use nowhere.
    const VkDescriptorBufferInfo info{particles, offset, range};
    VkWriteDescriptorSet write{};
    write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    write.dstSet = f.set;
    write.dstBinding = 0;
    write.descriptorCount = 1;
    write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    write.pBufferInfo = &info;
    vk.vkUpdateDescriptorSets(s.device.device, 1, &write, 0, nullptr);
    f.bound_buffer = particles;
    f.bound_offset = offset;
    f.bound_count = count;
  }
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (const VkResult rc = vk.vkBeginCommandBuffer(cmd, &begin); rc != VK_SUCCESS)
    return vk_error(rc, "vkBeginCommandBuffer", "recording a frame");
  if (splat) {
    s.record_splat(cmd, f, count, view_proj);
    if (const VkResult rc = vk.vkEndCommandBuffer(cmd); rc != VK_SUCCESS)
      return vk_error(rc, "vkEndCommandBuffer", "recording a frame");
    f.recorded = true;
    return cmd;
  }
  VkClearValue clear{};
  for (std::size_t i = 0; i < 4; ++i) clear.color.float32[i] = s.options.clear_colour[i];
  VkRenderPassBeginInfo pass{};
  pass.sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO;
  pass.renderPass = s.render_pass;
  pass.framebuffer = f.framebuffer;
  pass.renderArea = {{0, 0}, {s.options.width, s.options.height}};
  pass.clearValueCount = 1;
  pass.pClearValues = &clear;
  vk.vkCmdBeginRenderPass(cmd, &pass, VK_SUBPASS_CONTENTS_INLINE);
  if (count > 0) {
    vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, s.pipeline);
    const push_constants push{view_proj, glm::vec4(s.options.point_size, s.options.brightness, s.options.hot_speed, 0.0f)};
    vk.vkCmdPushConstants(cmd, s.layout, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof push, &push);
    vk.vkCmdBindVertexBuffers(cmd, 0, 1, &particles, &offset);
    vk.vkCmdDraw(cmd, count, 1, 0, 0);
  }
  vk.vkCmdEndRenderPass(cmd);
  if (const VkResult rc = vk.vkEndCommandBuffer(cmd); rc != VK_SUCCESS)
    return vk_error(rc, "vkEndCommandBuffer", "recording a frame");
  f.recorded = true;
  return cmd;
}

result<void> particle_renderer::submit(std::uint32_t slot, const submit_sync& sync) {
  if (!state_) return error(errc::invalid_argument, "particle_renderer::submit", "empty renderer");
  state& s = *state_;
  if (slot >= s.slots.size() || !s.slots[slot].recorded)
    return error(errc::invalid_argument, "particle_renderer::submit",
                 "slot " + std::to_string(slot) + " was not recorded since its last submit");
  frame_slot& f = s.slots[slot];
  std::vector<VkSemaphore> wait_semaphores;
  std::vector<VkPipelineStageFlags> wait_stages;
  std::vector<std::uint64_t> wait_values;
  std::vector<VkSemaphore> signal_semaphores;
  std::vector<std::uint64_t> signal_values;
  bool timeline = false;
  for (const semaphore_wait& w : sync.waits) {
    if (w.semaphore == VK_NULL_HANDLE || w.stages == 0)
      return error(errc::invalid_argument, "particle_renderer::submit", "a wait has no semaphore or no stages");
    wait_semaphores.push_back(w.semaphore);
    // splat reads the particles in a compute shader: a wait written for points (VERTEX_INPUT) covers it too.
    const bool widen = s.options.method == render_method::splat && (w.stages & VK_PIPELINE_STAGE_VERTEX_INPUT_BIT) != 0;
    wait_stages.push_back(widen ? (w.stages | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT) : w.stages);
    wait_values.push_back(w.value);
    timeline = timeline || w.value != 0;
  }
  for (const semaphore_signal& sig : sync.signals) {
    if (sig.semaphore == VK_NULL_HANDLE)
      return error(errc::invalid_argument, "particle_renderer::submit", "a signal has no semaphore");
    signal_semaphores.push_back(sig.semaphore);
    signal_values.push_back(sig.value);
    timeline = timeline || sig.value != 0;
  }
  std::vector<VkCommandBuffer> commands{f.commands};
  commands.insert(commands.end(), sync.extra_commands.begin(), sync.extra_commands.end());

  VkTimelineSemaphoreSubmitInfo values{};
  values.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
  values.waitSemaphoreValueCount = static_cast<std::uint32_t>(wait_values.size());
  values.pWaitSemaphoreValues = wait_values.data();
  values.signalSemaphoreValueCount = static_cast<std::uint32_t>(signal_values.size());
  values.pSignalSemaphoreValues = signal_values.data();
  VkSubmitInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  info.pNext = timeline ? &values : nullptr;
  info.waitSemaphoreCount = static_cast<std::uint32_t>(wait_semaphores.size());
  info.pWaitSemaphores = wait_semaphores.data();
  info.pWaitDstStageMask = wait_stages.data();
  info.commandBufferCount = static_cast<std::uint32_t>(commands.size());
  info.pCommandBuffers = commands.data();
  info.signalSemaphoreCount = static_cast<std::uint32_t>(signal_semaphores.size());
  info.pSignalSemaphores = signal_semaphores.data();
  if (const VkResult rc = s.vk->vkQueueSubmit(s.device.queue, 1, &info, f.fence); rc != VK_SUCCESS)
    return vk_error(rc, "vkQueueSubmit", "submitting frame slot " + std::to_string(slot));
  f.recorded = false;
  f.in_flight = true;
  s.last_submitted = slot;
  return membridge::ok();
}

result<void> particle_renderer::wait_idle(std::uint64_t timeout_ns) {
  if (!state_) return membridge::ok();
  return state_->wait_frames(timeout_ns);
}

result<void> particle_renderer::upload_particles(std::span<const particle> particles) {
  if (!state_) return error(errc::invalid_argument, "particle_renderer::upload_particles", "empty renderer");
  state& s = *state_;
  if (particles.size() > std::numeric_limits<std::uint32_t>::max())
    return error(errc::invalid_argument, "particle_renderer::upload_particles",
                 std::to_string(particles.size()) + " particles is more than one draw takes");
  const VkDeviceSize bytes = particles.size_bytes();
  if (bytes == 0) {
    s.uploaded = 0;
    return membridge::ok();
  }
  if (s.vertices.size < bytes) {
    // Frames submitted earlier may still read the old buffer; recorded ones would refer to it.
    MEMBRIDGE_TRY(s.wait_frames(frame_timeout_ns));
    for (frame_slot& f : s.slots) f.recorded = false;
    s.uploaded = 0;
    s.destroy_buffer(s.vertices);
    s.destroy_buffer(s.staging);
    forget_particle_buffers();  // the new buffer may get the old handle
    // Vertex input (points) and storage buffer (splat).
    const VkBufferUsageFlags usage =
        VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    MEMBRIDGE_TRY_ASSIGN(s.vertices,
                         s.make_buffer(bytes, usage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, "particle buffer"));
    MEMBRIDGE_TRY_ASSIGN(s.staging, s.make_buffer(bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                                  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, "particle staging buffer"));
  }
  std::memcpy(s.staging.mapped, particles.data(), bytes);
  if (!s.staging.coherent) {
    const VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, s.staging.memory, 0, VK_WHOLE_SIZE};
    if (const VkResult rc = s.vk->vkFlushMappedMemoryRanges(s.device.device, 1, &range); rc != VK_SUCCESS)
      return vk_error(rc, "vkFlushMappedMemoryRanges", "uploading particles");
  }
  const VolkDeviceTable& vk = *s.vk;
  MEMBRIDGE_TRY(s.one_shot("uploading particles", [&](VkCommandBuffer cmd) {
    // Earlier frames finish reading the buffer (vertex input or compute) before the copy overwrites it.
    vk.vkCmdPipelineBarrier(cmd, s.particle_stages(), VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0, nullptr, 0,
                            nullptr);
    const VkBufferCopy region{0, 0, bytes};
    vk.vkCmdCopyBuffer(cmd, s.staging.buffer, s.vertices.buffer, 1, &region);
    // The copy is visible to the particle reads (vertex input or compute) of every later submission.
    const VkBufferMemoryBarrier after =
        buffer_barrier(s.vertices.buffer, VK_ACCESS_TRANSFER_WRITE_BIT, s.particle_access(), bytes);
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, s.particle_stages(), 0, 0, nullptr, 1, &after, 0,
                            nullptr);
  }));
  s.uploaded = static_cast<std::uint32_t>(particles.size());
  return membridge::ok();
}

result<void> particle_renderer::read_back(std::vector<std::uint8_t>& rgba) {
  if (!state_) return error(errc::invalid_argument, "particle_renderer::read_back", "empty renderer");
  state& s = *state_;
  if (!s.last_submitted)
    return error(errc::invalid_argument, "particle_renderer::read_back", "no frame was submitted yet");
  const VkImage image = s.slots[*s.last_submitted].image;
  const VolkDeviceTable& vk = *s.vk;
  MEMBRIDGE_TRY(s.one_shot("reading back the last frame", [&](VkCommandBuffer cmd) {
    // The frame (render pass or the splat's last barrier) made its writes visible to transfer reads;
    // the image is TRANSFER_SRC_OPTIMAL.
    VkBufferImageCopy region{};
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {s.options.width, s.options.height, 1};
    vk.vkCmdCopyImageToBuffer(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, s.readback.buffer, 1, &region);
    const VkBufferMemoryBarrier to_host =
        buffer_barrier(s.readback.buffer, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT);
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 0, nullptr, 1, &to_host,
                            0, nullptr);
  }));
  if (!s.readback.coherent) {
    const VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, s.readback.memory, 0, VK_WHOLE_SIZE};
    if (const VkResult rc = vk.vkInvalidateMappedMemoryRanges(s.device.device, 1, &range); rc != VK_SUCCESS)
      return vk_error(rc, "vkInvalidateMappedMemoryRanges", "reading back the last frame");
  }
  const std::size_t bytes = std::size_t{s.options.width} * s.options.height * 4;
  rgba.assign(s.readback.mapped, s.readback.mapped + bytes);
  return membridge::ok();
}

}  // namespace particles
