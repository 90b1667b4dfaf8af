// The offscreen renderer of membridge-view: vertex pulling from the published buffers' storage
// buffers (no vertex input), one pipeline per kind, a depth buffer for the 3D scene.
#include "renderer.hpp"

#include "renderer_state.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace membridge_view {

renderer::renderer() noexcept = default;
renderer::renderer(std::unique_ptr<state> s) noexcept : state_(std::move(s)) {}
renderer::renderer(renderer&&) noexcept = default;
renderer& renderer::operator=(renderer&&) noexcept = default;
renderer::~renderer() = default;

result<renderer> renderer::create(const membridge::vulkan::device_context& context, std::uint32_t width,
                                  std::uint32_t height, colour_map map) {
  auto s = std::make_unique<state>();
  s->context = &context;
  s->fn = &context.functions();
  s->device = context.device();
  s->width = width;
  s->height = height;
  s->map = map;
  MEMBRIDGE_TRY(s->make_image(colour_format, VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                              VK_IMAGE_ASPECT_COLOR_BIT, s->colour, s->colour_memory, s->colour_view));
  MEMBRIDGE_TRY(s->make_image(depth_format, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, VK_IMAGE_ASPECT_DEPTH_BIT,
                              s->depth, s->depth_memory, s->depth_view));
  MEMBRIDGE_TRY(s->make_pass());
  MEMBRIDGE_TRY(s->make_pipelines());
  MEMBRIDGE_TRY(s->make_frame_objects());
  return renderer(std::move(s));
}

namespace {

/// Where image inset `index` of `count` goes: a grid over the whole frame when nothing is 3D, else a
/// row of quarter-size insets along the bottom; the image's aspect ratio kept inside its cell.
VkViewport inset(std::uint32_t index, std::uint32_t count, bool scene, std::uint32_t width, std::uint32_t height,
                 const membridge::ipc::layout& l) {
  float cx = 0, cy = 0, cw = 0, ch = 0;
  if (scene) {
    cw = static_cast<float>(width) / 4.0f;
    ch = static_cast<float>(height) / 4.0f;
    cx = static_cast<float>(width) - cw * static_cast<float>((index % 4) + 1);
    cy = static_cast<float>(height) - ch * static_cast<float>((index / 4) + 1);
  } else {
    const auto cols = static_cast<std::uint32_t>(std::ceil(std::sqrt(static_cast<double>(count))));
    const std::uint32_t rows = (count + cols - 1) / cols;
    cw = static_cast<float>(width) / static_cast<float>(cols);
    ch = static_cast<float>(height) / static_cast<float>(rows);
    cx = cw * static_cast<float>(index % cols);
    cy = ch * static_cast<float>(index / cols);
  }
  const float scale = std::min(cw / static_cast<float>(l.width), ch / static_cast<float>(l.height)) * 0.96f;
  const float w = std::max(1.0f, std::floor(static_cast<float>(l.width) * scale));
  const float h = std::max(1.0f, std::floor(static_cast<float>(l.height) * scale));
  return VkViewport{std::floor(cx + (cw - w) / 2), std::floor(cy + (ch - h) / 2), w, h, 0.0f, 1.0f};
}

}  // namespace

result<void> renderer::draw(std::span<const draw_item> items, const glm::mat4& view_proj, const frame_sync& sync) {
  state& s = *state_;
  MEMBRIDGE_TRY(wait());
  const auto& fn = *s.fn;
  if (VkResult r = fn.vkResetCommandBuffer(s.cb, 0); r != VK_SUCCESS) return make_vulkan_error(r, "vkResetCommandBuffer");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (VkResult r = fn.vkBeginCommandBuffer(s.cb, &bi); r != VK_SUCCESS) return make_vulkan_error(r, "vkBeginCommandBuffer");
  std::vector<item_state*> states;
  for (const draw_item& it : items) {
    MEMBRIDGE_TRY_ASSIGN(item_state* prepared, s.prepare(it));
    states.push_back(prepared);
  }

  std::array<VkClearValue, 2> clear{};
  clear[0].color = {{0.02f, 0.02f, 0.04f, 1.0f}};
  clear[1].depthStencil = {1.0f, 0};
  VkRenderPassBeginInfo rp{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  rp.renderPass = s.pass;
  rp.framebuffer = s.framebuffer;
  rp.renderArea = {{0, 0}, {s.width, s.height}};
  rp.clearValueCount = 2;
  rp.pClearValues = clear.data();
  fn.vkCmdBeginRenderPass(s.cb, &rp, VK_SUBPASS_CONTENTS_INLINE);
  const bool scene = std::any_of(items.begin(), items.end(),
                                 [](const draw_item& it) { return it.layout.kind != membridge::ipc::layout_kind::image; });
  const std::uint32_t images = static_cast<std::uint32_t>(items.size()) -
                               static_cast<std::uint32_t>(std::count_if(items.begin(), items.end(), [](const draw_item& it) {
                                 return it.layout.kind != membridge::ipc::layout_kind::image;
                               }));
  // The 3D scene first, then the images over it (insets, no depth test).
  std::vector<std::size_t> order;
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < items.size(); ++i)
      if ((items[i].layout.kind == membridge::ipc::layout_kind::image) == (pass == 1)) order.push_back(i);
  std::uint32_t image_index = 0;
  for (const std::size_t i : order) {
    const draw_item& it = items[i];
    const membridge::ipc::layout& l = it.layout;
    push_constants pc{};
    pc.mvp = view_proj;
    pc.range = {it.range_min, it.range_max, s.map == colour_map::viridis ? 1.0f : 0.0f, 0.0f};
    pc.info = {l.stride / 4, l.colour_offset() / 4, l.width, l.height};
    pc.mode = {l.colour == membridge::ipc::field_type::rgba8 ? 1U : (l.colour == membridge::ipc::field_type::r32f ? 2U : 0U), 0, 0, 0};
    VkViewport vp{0.0f, 0.0f, static_cast<float>(s.width), static_cast<float>(s.height), 0.0f, 1.0f};
    VkPipeline p = s.points;
    std::uint64_t vertices = it.count;
    if (l.kind == membridge::ipc::layout_kind::image) {
      vp = inset(image_index++, images, scene, s.width, s.height, l);
      p = s.image;
      vertices = 3;
    } else if (l.kind == membridge::ipc::layout_kind::heightfield) {
      p = s.heightfield;
      vertices = std::uint64_t{l.width - 1} * (l.height - 1) * 6;
    }
    if (vertices == 0 || vertices > std::numeric_limits<std::uint32_t>::max()) continue;
    const VkRect2D scissor{{static_cast<std::int32_t>(vp.x), static_cast<std::int32_t>(vp.y)},
                           {static_cast<std::uint32_t>(vp.width), static_cast<std::uint32_t>(vp.height)}};
    fn.vkCmdSetViewport(s.cb, 0, 1, &vp);
    fn.vkCmdSetScissor(s.cb, 0, 1, &scissor);
    fn.vkCmdBindPipeline(s.cb, VK_PIPELINE_BIND_POINT_GRAPHICS, p);
    fn.vkCmdBindDescriptorSets(s.cb, VK_PIPELINE_BIND_POINT_GRAPHICS, s.layout, 0, 1, &states[i]->set, 0, nullptr);
    fn.vkCmdPushConstants(s.cb, s.layout, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof pc, &pc);
    fn.vkCmdDraw(s.cb, static_cast<std::uint32_t>(vertices), 1, 0, 0);
  }
  fn.vkCmdEndRenderPass(s.cb);
  // The sampled r32f values are read by the host after the fence.
  VkMemoryBarrier host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  fn.vkCmdPipelineBarrier(s.cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &host, 0, nullptr, 0,
                          nullptr);
  if (VkResult r = fn.vkEndCommandBuffer(s.cb); r != VK_SUCCESS) return make_vulkan_error(r, "vkEndCommandBuffer");

  std::vector<VkSemaphore> wait_semaphores, signal_semaphores;
  std::vector<std::uint64_t> wait_values, signal_values;
  std::vector<VkPipelineStageFlags> wait_stages;
  for (const semaphore_use& w : sync.waits) {
    wait_semaphores.push_back(w.semaphore);
    wait_values.push_back(w.value);
    wait_stages.push_back(w.stages);
  }
  for (const semaphore_use& g : sync.signals) {
    signal_semaphores.push_back(g.semaphore);
    signal_values.push_back(g.value);
  }
  std::vector<VkCommandBuffer> cbs{s.cb};
  cbs.insert(cbs.end(), sync.extra_commands.begin(), sync.extra_commands.end());
  VkTimelineSemaphoreSubmitInfo ti{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  ti.waitSemaphoreValueCount = static_cast<std::uint32_t>(wait_values.size());
  ti.pWaitSemaphoreValues = wait_values.data();
  ti.signalSemaphoreValueCount = static_cast<std::uint32_t>(signal_values.size());
  ti.pSignalSemaphoreValues = signal_values.data();
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  // Timeline values only when a timeline semaphore takes part (binary semaphores ignore them).
  const auto timeline = [](const semaphore_use& u) { return u.value != 0; };
  if (std::any_of(sync.waits.begin(), sync.waits.end(), timeline) ||
      std::any_of(sync.signals.begin(), sync.signals.end(), timeline))
    si.pNext = &ti;
  si.waitSemaphoreCount = static_cast<std::uint32_t>(wait_semaphores.size());
  si.pWaitSemaphores = wait_semaphores.data();
  si.pWaitDstStageMask = wait_stages.data();
  si.commandBufferCount = static_cast<std::uint32_t>(cbs.size());
  si.pCommandBuffers = cbs.data();
  si.signalSemaphoreCount = static_cast<std::uint32_t>(signal_semaphores.size());
  si.pSignalSemaphores = signal_semaphores.data();
  if (VkResult r = fn.vkQueueSubmit(s.context->graphics_queue().queue, 1, &si, s.fence); r != VK_SUCCESS)
    return make_vulkan_error(r, "vkQueueSubmit");
  s.in_flight = true;
  return membridge::ok();
}

result<void> renderer::wait(std::uint64_t timeout_ns) {
  state& s = *state_;
  if (!s.in_flight) return membridge::ok();
  const VkResult r = s.fn->vkWaitForFences(s.device, 1, &s.fence, VK_TRUE, timeout_ns);
  if (r == VK_TIMEOUT) return error(errc::timeout, "vkWaitForFences", "the frame in flight did not finish in time");
  if (r != VK_SUCCESS) return make_vulkan_error(r, "vkWaitForFences");
  (void)s.fn->vkResetFences(s.device, 1, &s.fence);
  s.in_flight = false;
  const auto* values = static_cast<const float*>(s.samples_memory.mapped);
  for (auto& [id, is] : s.items) {
    if (is.pending_samples == 0) continue;
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (std::uint32_t i = 0; i < is.pending_samples; ++i) {
      const float v = values[std::size_t{id} * samples_per_item + i];
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (lo <= hi) is.sampled = std::pair{lo, hi};
    is.pending_samples = 0;
  }
  return membridge::ok();
}

std::optional<std::pair<float, float>> renderer::sampled_range(std::uint32_t id) const {
  const auto it = state_->items.find(id);
  return it == state_->items.end() ? std::nullopt : it->second.sampled;
}

void renderer::forget(std::uint32_t id) {
  const auto it = state_->items.find(id);
  if (it == state_->items.end()) return;
  state_->destroy_buffer(it->second.scratch, it->second.scratch_memory);
  it->second.scratch_size = 0;
  it->second.sampled.reset();
}

result<std::vector<std::uint8_t>> renderer::read_back() {
  state& s = *state_;
  MEMBRIDGE_TRY(wait());
  const std::uint64_t bytes = std::uint64_t{s.width} * s.height * 4;
  VkBuffer buffer = VK_NULL_HANDLE;
  allocation memory;
  MEMBRIDGE_TRY(s.make_buffer(bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, buffer, memory));
  const auto& fn = *s.fn;
  auto copied = [&]() -> result<void> {
    if (VkResult r = fn.vkResetCommandBuffer(s.cb, 0); r != VK_SUCCESS) return make_vulkan_error(r, "vkResetCommandBuffer");
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (VkResult r = fn.vkBeginCommandBuffer(s.cb, &bi); r != VK_SUCCESS) return make_vulkan_error(r, "vkBeginCommandBuffer");
    VkBufferImageCopy region{};
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {s.width, s.height, 1};
    fn.vkCmdCopyImageToBuffer(s.cb, s.colour, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, buffer, 1, &region);
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    fn.vkCmdPipelineBarrier(s.cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
    if (VkResult r = fn.vkEndCommandBuffer(s.cb); r != VK_SUCCESS) return make_vulkan_error(r, "vkEndCommandBuffer");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &s.cb;
    if (VkResult r = fn.vkQueueSubmit(s.context->graphics_queue().queue, 1, &si, s.fence); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkQueueSubmit");
    s.in_flight = true;
    return wait();
  }();
  std::vector<std::uint8_t> pixels;
  if (copied) {
    pixels.resize(bytes);
    std::memcpy(pixels.data(), memory.mapped, bytes);
  }
  s.destroy_buffer(buffer, memory);
  if (!copied) return std::move(copied).error();
  return pixels;
}

VkImage renderer::image() const noexcept { return state_->colour; }
std::uint32_t renderer::width() const noexcept { return state_->width; }
std::uint32_t renderer::height() const noexcept { return state_->height; }

}  // namespace membridge_view
