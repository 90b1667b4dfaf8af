#include "viewer.hpp"

#include <volk.h>

#include <cstring>
#include <string>
#include <utility>

namespace membridge::bench::frame_loop {

namespace {

constexpr std::uint64_t timeout_ns() {
  return static_cast<std::uint64_t>(std::chrono::nanoseconds(wait_timeout).count());
}

/// A buffer and its own memory of `type_flags` (DEVICE_LOCAL, or HOST_VISIBLE | HOST_COHERENT).
/// `families` empty: exclusive; two families: concurrent.
std::pair<VkBuffer, VkDeviceMemory> make_buffer(const session& s, VkDeviceSize size, VkBufferUsageFlags usage,
                                                VkMemoryPropertyFlags type_flags,
                                                const std::vector<std::uint32_t>& families, std::string_view what) {
  const VolkDeviceTable& vk = s.context.functions();
  const VkDevice device = s.context.device();
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size;
  info.usage = usage;
  info.sharingMode = families.size() > 1 ? VK_SHARING_MODE_CONCURRENT : VK_SHARING_MODE_EXCLUSIVE;
  info.queueFamilyIndexCount = families.size() > 1 ? static_cast<std::uint32_t>(families.size()) : 0;
  info.pQueueFamilyIndices = families.size() > 1 ? families.data() : nullptr;
  VkBuffer buffer = VK_NULL_HANDLE;
  check_vk(vk.vkCreateBuffer(device, &info, nullptr, &buffer), "vkCreateBuffer (" + std::string(what) + ")");
  VkMemoryRequirements req{};
  vk.vkGetBufferMemoryRequirements(device, buffer, &req);
  const auto type = s.context.find_memory_type(req.memoryTypeBits, type_flags);
  if (!type) {
    vk.vkDestroyBuffer(device, buffer, nullptr);
    throw bench_failure("no memory type for " + std::string(what) + ": " + type.error().message());
  }
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = *type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  if (const VkResult rc = vk.vkAllocateMemory(device, &alloc, nullptr, &memory); rc != VK_SUCCESS) {
    vk.vkDestroyBuffer(device, buffer, nullptr);
    check_vk(rc, "vkAllocateMemory (" + std::string(what) + ")");
  }
  if (const VkResult rc = vk.vkBindBufferMemory(device, buffer, memory, 0); rc != VK_SUCCESS) {
    vk.vkDestroyBuffer(device, buffer, nullptr);
    vk.vkFreeMemory(device, memory, nullptr);
    check_vk(rc, "vkBindBufferMemory (" + std::string(what) + ")");
  }
  return {buffer, memory};
}

void begin_one_time(const VolkDeviceTable& vk, VkCommandBuffer cmd) {
  MEMBRIDGE_FRAME_LOOP_VK(vk.vkResetCommandBuffer(cmd, 0));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  MEMBRIDGE_FRAME_LOOP_VK(vk.vkBeginCommandBuffer(cmd, &begin));
}

/// A global memory barrier between `src` and `dst` stages/accesses.
void memory_barrier(const VolkDeviceTable& vk, VkCommandBuffer cmd, VkPipelineStageFlags src_stages,
                    VkAccessFlags src_access, VkPipelineStageFlags dst_stages, VkAccessFlags dst_access) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = src_access;
  barrier.dstAccessMask = dst_access;
  vk.vkCmdPipelineBarrier(cmd, src_stages, dst_stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

}  // namespace

std::string_view viewer_kind_name(viewer_kind kind) noexcept {
  switch (kind) {
    case viewer_kind::handoff: return "handoff";
    case viewer_kind::direct: return "direct";
    case viewer_kind::direct_host: return "direct_host";
    case viewer_kind::copy: return "copy";
    case viewer_kind::idle_vulkan: return "idle_vulkan";
    case viewer_kind::idle_cuda: return "idle_cuda";
    case viewer_kind::idle_cuda_context: return "idle_cuda_context";
    case viewer_kind::ipc: return "ipc";
  }
  return "?";
}

mailbox_viewer::mailbox_viewer(session& s, const scene& sc, std::vector<std::uint64_t> samples,
                               std::uint64_t capacity)
    : s_(&s), sc_(&sc), samples_(std::move(samples)), capacity_(capacity) {
  if (samples_.empty() || capacity_ == 0) throw bench_failure("mailbox_viewer: no samples or no capacity");
  for (const std::uint64_t i : samples_)
    if (i >= sc.count) throw bench_failure("mailbox_viewer: sample " + std::to_string(i) + " is past the particles");
  try {
    const VolkDeviceTable& vk = s.context.functions();
    const VkDevice device = s.context.device();
    const vulkan::queue_info& graphics = s.context.graphics_queue();
    const vulkan::queue_info& transfer = s.context.transfer_queue();

    // Timestamps on the graphics queue.
    std::uint32_t family_count = 0;
    const auto& inst = s.context.instance_functions();
    inst.vkGetPhysicalDeviceQueueFamilyProperties(s.context.physical_device(), &family_count, nullptr);
    std::vector<VkQueueFamilyProperties> families(family_count);
    inst.vkGetPhysicalDeviceQueueFamilyProperties(s.context.physical_device(), &family_count, families.data());
    const std::uint32_t valid_bits = graphics.family < family_count ? families[graphics.family].timestampValidBits : 0;
    if (valid_bits == 0) throw bench_failure("the graphics queue family has no timestamps (timestampValidBits 0)");
    timestamp_mask_ = valid_bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << valid_bits) - 1;
    timestamp_period_ns_ = static_cast<double>(s.context.properties().limits.timestampPeriod);

    VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = graphics.family;
    MEMBRIDGE_FRAME_LOOP_VK(vk.vkCreateCommandPool(device, &pool, nullptr, &graphics_pool_));
    pool.queueFamilyIndex = transfer.family;
    MEMBRIDGE_FRAME_LOOP_VK(vk.vkCreateCommandPool(device, &pool, nullptr, &transfer_pool_));

    VkQueryPoolCreateInfo query{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    query.queryType = VK_QUERY_TYPE_TIMESTAMP;
    query.queryCount = static_cast<std::uint32_t>(2 * capacity_);
    MEMBRIDGE_FRAME_LOOP_VK(vk.vkCreateQueryPool(device, &query, nullptr, &queries_));

    history_bytes_ = capacity_ * samples_.size() * sizeof(particles::particle);
    std::tie(history_buffer_, history_memory_) =
        make_buffer(s, history_bytes_, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, {}, "the history");
    MEMBRIDGE_FRAME_LOOP_VK(vk.vkMapMemory(device, history_memory_, 0, VK_WHOLE_SIZE, 0, &mapped_));
    begin_run();

    std::vector<std::uint32_t> copy_families;
    if (transfer.family != graphics.family) copy_families = {graphics.family, transfer.family};
    slots_.resize(ring_slots);
    for (slot_objects& o : slots_) {
      VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
      alloc.commandPool = graphics_pool_;
      alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      alloc.commandBufferCount = 1;
      MEMBRIDGE_FRAME_LOOP_VK(vk.vkAllocateCommandBuffers(device, &alloc, &o.pre));
      MEMBRIDGE_FRAME_LOOP_VK(vk.vkAllocateCommandBuffers(device, &alloc, &o.post));
      alloc.commandPool = transfer_pool_;
      MEMBRIDGE_FRAME_LOOP_VK(vk.vkAllocateCommandBuffers(device, &alloc, &o.transfer));
      VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      MEMBRIDGE_FRAME_LOOP_VK(vk.vkCreateFence(device, &fence, nullptr, &o.fence));
      std::tie(o.copy_buffer, o.copy_memory) =
          make_buffer(s, sc.slot_bytes,
                      VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                          VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_VERTEX_BUFFER_BIT,
                      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, copy_families, "the viewer's copy of a slot");
    }
  } catch (...) {
    destroy();
    throw;
  }
}

mailbox_viewer::~mailbox_viewer() { destroy(); }

void mailbox_viewer::destroy() noexcept {
  if (s_ == nullptr) return;
  const VolkDeviceTable& vk = s_->context.functions();
  const VkDevice device = s_->context.device();
  // Nothing may be destroyed while the GPU uses it: the renderer's frames read the copy buffers.
  for (slot_objects& o : slots_)
    if (o.in_flight && o.fence != VK_NULL_HANDLE) (void)vk.vkWaitForFences(device, 1, &o.fence, VK_TRUE, timeout_ns());
  (void)s_->renderer.wait_idle();
  (void)vk.vkQueueWaitIdle(s_->context.transfer_queue().queue);
  s_->renderer.forget_particle_buffers();  // the copy buffers' handles may come back for other buffers
  for (slot_objects& o : slots_) {
    if (o.fence != VK_NULL_HANDLE) vk.vkDestroyFence(device, o.fence, nullptr);
    if (o.copy_buffer != VK_NULL_HANDLE) vk.vkDestroyBuffer(device, o.copy_buffer, nullptr);
    if (o.copy_memory != VK_NULL_HANDLE) vk.vkFreeMemory(device, o.copy_memory, nullptr);
  }
  slots_.clear();
  if (history_buffer_ != VK_NULL_HANDLE) vk.vkDestroyBuffer(device, history_buffer_, nullptr);
  if (history_memory_ != VK_NULL_HANDLE) vk.vkFreeMemory(device, history_memory_, nullptr);  // unmaps
  if (queries_ != VK_NULL_HANDLE) vk.vkDestroyQueryPool(device, queries_, nullptr);
  if (graphics_pool_ != VK_NULL_HANDLE) vk.vkDestroyCommandPool(device, graphics_pool_, nullptr);
  if (transfer_pool_ != VK_NULL_HANDLE) vk.vkDestroyCommandPool(device, transfer_pool_, nullptr);
  history_buffer_ = VK_NULL_HANDLE;
  history_memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
  queries_ = VK_NULL_HANDLE;
  graphics_pool_ = VK_NULL_HANDLE;
  transfer_pool_ = VK_NULL_HANDLE;
  s_ = nullptr;
}

void mailbox_viewer::begin_run() {
  // Poison: a frame whose sampled copy never ran holds NaNs and cannot equal the reference.
  if (mapped_ != nullptr) std::memset(mapped_, 0xFF, history_bytes_);
}

void mailbox_viewer::wait_slot(slot_objects& o, std::string_view what) {
  if (!o.in_flight) return;
  const VolkDeviceTable& vk = s_->context.functions();
  const VkResult rc = vk.vkWaitForFences(s_->context.device(), 1, &o.fence, VK_TRUE, timeout_ns());
  if (rc == VK_TIMEOUT)
    throw bench_failure("timeout: " + std::string(what) + " did not finish within " +
                        std::to_string(wait_timeout.count()) + " s");
  check_vk(rc, "vkWaitForFences (" + std::string(what) + ")");
  MEMBRIDGE_FRAME_LOOP_VK(vk.vkResetFences(s_->context.device(), 1, &o.fence));
  o.in_flight = false;
}

void mailbox_viewer::record_samples(VkCommandBuffer cmd, VkBuffer from, VkDeviceSize base,
                                    std::uint64_t frame) const {
  const VolkDeviceTable& vk = s_->context.functions();
  constexpr VkDeviceSize stride = sizeof(particles::particle);
  std::vector<VkBufferCopy> regions;
  regions.reserve(samples_.size());
  for (std::size_t j = 0; j < samples_.size(); ++j)
    regions.push_back({base + samples_[j] * stride, (frame * samples_.size() + j) * stride, stride});
  vk.vkCmdCopyBuffer(cmd, from, history_buffer_, static_cast<std::uint32_t>(regions.size()), regions.data());
  memory_barrier(vk, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                 VK_ACCESS_HOST_READ_BIT);
  vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_,
                         static_cast<std::uint32_t>(2 * frame + 1));
}

void mailbox_viewer::submit_graphics(VkCommandBuffer cmd, timeline_op wait, timeline_op signal, VkFence fence) const {
  submit_to(s_->queue(), VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, cmd, wait, signal, fence);
}

void mailbox_viewer::submit_to(VkQueue queue, VkPipelineStageFlags stage, VkCommandBuffer cmd, timeline_op wait,
                               timeline_op signal, VkFence fence) const {
  VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  values.waitSemaphoreValueCount = wait.semaphore != VK_NULL_HANDLE ? 1 : 0;
  values.pWaitSemaphoreValues = &wait.value;
  values.signalSemaphoreValueCount = signal.semaphore != VK_NULL_HANDLE ? 1 : 0;
  values.pSignalSemaphoreValues = &signal.value;
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.pNext = &values;
  info.waitSemaphoreCount = values.waitSemaphoreValueCount;
  info.pWaitSemaphores = &wait.semaphore;
  info.pWaitDstStageMask = &stage;
  info.commandBufferCount = 1;
  info.pCommandBuffers = &cmd;
  info.signalSemaphoreCount = values.signalSemaphoreValueCount;
  info.pSignalSemaphores = &signal.semaphore;
  MEMBRIDGE_FRAME_LOOP_VK(s_->context.functions().vkQueueSubmit(queue, 1, &info, fence));
}

void mailbox_viewer::submit(viewer_kind kind, std::uint64_t frame, std::uint32_t slot, timeline_op ready,
                            timeline_op release) {
  if (frame >= capacity_)
    throw bench_failure("the viewer drew more frames than it has room for (" + std::to_string(capacity_) + ")");
  if (slot >= ring_slots) throw bench_failure("the viewer was given ring slot " + std::to_string(slot));
  const VolkDeviceTable& vk = s_->context.functions();
  const std::uint32_t r = scene::slot_of(frame);
  slot_objects& o = slots_[r];
  wait_slot(o, "the viewer's frame " + std::to_string(frame) + " - " + std::to_string(ring_slots));
  if (kind == viewer_kind::idle_cuda || kind == viewer_kind::ipc)
    throw bench_failure("mailbox_viewer::submit: " + std::string(viewer_kind_name(kind)) +
                        " is not a Vulkan viewer of this process");
  if (kind == viewer_kind::idle_vulkan) {  // the control: two timestamps, nothing else
    begin_one_time(vk, o.pre);
    const auto q = static_cast<std::uint32_t>(2 * frame);
    vk.vkCmdResetQueryPool(o.pre, queries_, q, 2);
    vk.vkCmdWriteTimestamp(o.pre, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, q);
    vk.vkCmdWriteTimestamp(o.pre, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, q + 1);
    MEMBRIDGE_FRAME_LOOP_VK(vk.vkEndCommandBuffer(o.pre));
    submit_graphics(o.pre, {}, {}, o.fence);
    o.in_flight = true;
    return;
  }

  const VkBuffer slot_buffer = sc_->vk_buffer;
  const VkDeviceSize slot_offset = sc_->slot_offset(slot);
  const bool draws = kind != viewer_kind::handoff;
  const VkBuffer draw_buffer = kind == viewer_kind::copy ? o.copy_buffer : slot_buffer;
  const VkDeviceSize draw_offset = kind == viewer_kind::copy ? 0 : slot_offset;
  if (draws)
    (void)value_or_fail(s_->renderer.record(r, draw_buffer, draw_offset, static_cast<std::uint32_t>(sc_->count),
                                            s_->view_proj),
                        "particle_renderer::record (viewer)");

  // copy: the transfer queue waits for the step, copies the slot and releases it.
  timeline_op graphics_wait = ready;
  if (kind == viewer_kind::copy) {
    if (release.semaphore == VK_NULL_HANDLE)
      throw bench_failure("the copy viewer needs a release semaphore (the draw waits for the copy through it)");
    begin_one_time(vk, o.transfer);
    const VkBufferCopy region{slot_offset, 0, sc_->slot_bytes};
    vk.vkCmdCopyBuffer(o.transfer, slot_buffer, o.copy_buffer, 1, &region);
    MEMBRIDGE_FRAME_LOOP_VK(vk.vkEndCommandBuffer(o.transfer));
    submit_to(s_->context.transfer_queue().queue, VK_PIPELINE_STAGE_TRANSFER_BIT, o.transfer, ready, release,
              VK_NULL_HANDLE);
    graphics_wait = release;  // Vulkan -> Vulkan: the draw waits for the copy, not for CUDA
  }

  // The first graphics submit: the wait, a start timestamp after it and a barrier that carries the
  // wait's memory dependency on to the later submits of the queue (the renderer's), which wait on nothing.
  begin_one_time(vk, o.pre);
  const auto q = static_cast<std::uint32_t>(2 * frame);
  vk.vkCmdResetQueryPool(o.pre, queries_, q, 2);
  memory_barrier(vk, o.pre, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                 VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
  vk.vkCmdWriteTimestamp(o.pre, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, q);
  if (!draws) record_samples(o.pre, slot_buffer, slot_offset, frame);
  MEMBRIDGE_FRAME_LOOP_VK(vk.vkEndCommandBuffer(o.pre));
  submit_graphics(o.pre, graphics_wait, draws ? timeline_op{} : release, o.fence);
  o.in_flight = true;
  if (!draws) return;

  // The draw, then the sampled particles of what it drew and the end timestamp.
  begin_one_time(vk, o.post);
  record_samples(o.post, draw_buffer, draw_offset, frame);
  MEMBRIDGE_FRAME_LOOP_VK(vk.vkEndCommandBuffer(o.post));
  const particles::semaphore_signal signals[] = {{release.semaphore, release.value}};
  const bool signal = kind != viewer_kind::copy && release.semaphore != VK_NULL_HANDLE;  // copy: the transfer signalled
  particles::submit_sync sync;
  if (signal) sync.signals = signals;
  sync.extra_commands = std::span<const VkCommandBuffer>(&o.post, 1);
  ok_or_fail(s_->renderer.submit(r, sync), "particle_renderer::submit (viewer)");
}

void mailbox_viewer::wait_idle() {
  for (slot_objects& o : slots_) wait_slot(o, "the viewer's last frames");
  ok_or_fail(s_->renderer.wait_idle(), "particle_renderer::wait_idle (viewer)");
}

std::vector<double> mailbox_viewer::frame_gpu_us(std::uint64_t first, std::uint64_t end) const {
  std::vector<double> out;
  if (end <= first) return out;
  if (end > capacity_) throw bench_failure("frame_gpu_us: frames past the viewer's capacity");
  const auto n = static_cast<std::uint32_t>(2 * (end - first));
  std::vector<std::uint64_t> ticks(n);
  MEMBRIDGE_FRAME_LOOP_VK(s_->context.functions().vkGetQueryPoolResults(
      s_->context.device(), queries_, static_cast<std::uint32_t>(2 * first), n, n * sizeof(std::uint64_t),
      ticks.data(), sizeof(std::uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  for (std::uint64_t i = 0; i < end - first; ++i) {
    const std::uint64_t start = ticks[2 * i] & timestamp_mask_;
    const std::uint64_t stop = ticks[2 * i + 1] & timestamp_mask_;
    const std::uint64_t delta = (stop - start) & timestamp_mask_;
    out.push_back(static_cast<double>(delta) * timestamp_period_ns_ / 1e3);
  }
  return out;
}

std::span<const particles::particle> mailbox_viewer::history(std::uint64_t frame) const {
  if (frame >= capacity_) throw bench_failure("history: frame past the viewer's capacity");
  return {static_cast<const particles::particle*>(mapped_) + frame * samples_.size(), samples_.size()};
}

}  // namespace membridge::bench::frame_loop
