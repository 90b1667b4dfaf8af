#include "ipc/vulkan_consumer.hpp"

#include <volk.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace membridge::bench::ipc_bench {

namespace {

/// One history entry per frame: the slot's header, then its first, middle and last words.
struct history_entry {
  std::uint64_t frame = 0;
  std::uint64_t stamp = 0;
  std::uint32_t first_word = 0;
  std::uint32_t middle_word = 0;
  std::uint32_t last_word = 0;
  std::uint32_t pad = 0;
};
static_assert(sizeof(history_entry) == 32);

constexpr std::uint64_t wait_timeout_ns =
    static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(wait_timeout).count());

void check_vk(VkResult rc, const std::string& call) {
  if (rc != VK_SUCCESS) throw bench_failure(call + " failed: VkResult " + std::to_string(static_cast<int>(rc)));
}

}  // namespace

vulkan_frame_consumer::vulkan_frame_consumer(const vulkan::device_context& vk, const vulkan::chunked_buffer& slots,
                                             const sync::frame_timeline& timeline, std::uint64_t total,
                                             std::uint64_t warmup)
    : vk_(&vk), slots_(&slots), timeline_(&timeline), fn_(&vk.functions()), total_(total), warmup_(warmup) {
  if (!timeline.valid() || timeline.slots() == 0) throw bench_failure("Vulkan consumer: no frame timeline");
  if (slots.size() < static_cast<std::size_t>(timeline.slots()) * slot_bytes)
    throw bench_failure("Vulkan consumer: the slots buffer holds fewer than " + std::to_string(timeline.slots()) +
                        " slots");
  const VkDevice d = vk.device();
  const auto& queue = vk.graphics_queue();
  queue_ = queue.queue;
  try {
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = queue.family;
    check_vk(fn_->vkCreateCommandPool(d, &pci, nullptr, &pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = pool_;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = ring;
    check_vk(fn_->vkAllocateCommandBuffers(d, &cai, cbs_.data()), "vkAllocateCommandBuffers");
    for (VkFence& f : fences_) {
      VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      check_vk(fn_->vkCreateFence(d, &fci, nullptr, &f), "vkCreateFence");
    }

    // The history: host-visible, coherent, poisoned (0xFF: no entry holds a frame yet).
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = total * sizeof(history_entry);
    bci.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    check_vk(fn_->vkCreateBuffer(d, &bci, nullptr, &history_), "vkCreateBuffer (history)");
    VkMemoryRequirements req{};
    fn_->vkGetBufferMemoryRequirements(d, history_, &req);
    const std::uint32_t type = value_or_fail(
        vk.find_memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT),
        "Vulkan consumer: a host-visible memory type for the history");
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = type;
    check_vk(fn_->vkAllocateMemory(d, &mai, nullptr, &history_memory_), "vkAllocateMemory (history)");
    check_vk(fn_->vkBindBufferMemory(d, history_, history_memory_, 0), "vkBindBufferMemory (history)");
    void* mapped = nullptr;
    check_vk(fn_->vkMapMemory(d, history_memory_, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory (history)");
    history_mapped_ = static_cast<const std::byte*>(mapped);
    std::memset(mapped, 0xFF, static_cast<std::size_t>(bci.size));

    // Timestamps, when the queue family writes them.
    std::uint32_t families = 0;
    const auto props_fn = reinterpret_cast<PFN_vkGetPhysicalDeviceQueueFamilyProperties>(
        vk.get_instance_proc_addr()(vk.instance(), "vkGetPhysicalDeviceQueueFamilyProperties"));
    std::uint32_t valid_bits = 0;
    if (props_fn != nullptr) {
      props_fn(vk.physical_device(), &families, nullptr);
      std::vector<VkQueueFamilyProperties> props(families);
      props_fn(vk.physical_device(), &families, props.data());
      if (queue.family < families) valid_bits = props[queue.family].timestampValidBits;
    }
    VkCommandBuffer init = cbs_[0];
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check_vk(fn_->vkBeginCommandBuffer(init, &begin), "vkBeginCommandBuffer (init)");
    if (valid_bits > 0) {
      timestamp_period_ns_ = static_cast<double>(vk.properties().limits.timestampPeriod);
      timestamp_mask_ = valid_bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << valid_bits) - 1;
      VkQueryPoolCreateInfo qci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qci.queryCount = static_cast<std::uint32_t>(total);
      check_vk(fn_->vkCreateQueryPool(d, &qci, nullptr, &queries_), "vkCreateQueryPool");
      fn_->vkCmdResetQueryPool(init, queries_, 0, static_cast<std::uint32_t>(total));
    }
    check_vk(fn_->vkEndCommandBuffer(init), "vkEndCommandBuffer (init)");
    submit_once(init);
    told_.assign(total, 0);
    // Frames before this consumer's first are `consumed` already (the publisher counted them): their
    // waits return at once and their times are not used (no told time).
    done_.emplace(0, total, [this](std::uint64_t m, const std::atomic<bool>& stop) { return wait_consumed(m, stop); });
  } catch (...) {
    if (wait_all_quietly()) {
      // Nothing in flight: destroy what was made (the destructor does not run after a throwing constructor).
      if (queries_ != VK_NULL_HANDLE) fn_->vkDestroyQueryPool(d, queries_, nullptr);
      if (history_ != VK_NULL_HANDLE) fn_->vkDestroyBuffer(d, history_, nullptr);
      if (history_memory_ != VK_NULL_HANDLE) fn_->vkFreeMemory(d, history_memory_, nullptr);
      for (VkFence f : fences_)
        if (f != VK_NULL_HANDLE) fn_->vkDestroyFence(d, f, nullptr);
      if (pool_ != VK_NULL_HANDLE) fn_->vkDestroyCommandPool(d, pool_, nullptr);
    }
    throw;
  }
}

vulkan_frame_consumer::~vulkan_frame_consumer() {
  if (!wait_all_quietly()) {
    std::fprintf(stderr, "membridge_bench_ipc: the Vulkan consumer's frames did not finish; leaving its objects\n");
    return;
  }
  const VkDevice d = vk_->device();
  if (queries_ != VK_NULL_HANDLE) fn_->vkDestroyQueryPool(d, queries_, nullptr);
  fn_->vkDestroyBuffer(d, history_, nullptr);
  fn_->vkFreeMemory(d, history_memory_, nullptr);
  for (VkFence f : fences_) fn_->vkDestroyFence(d, f, nullptr);
  fn_->vkDestroyCommandPool(d, pool_, nullptr);
}

bool vulkan_frame_consumer::wait_all_quietly() noexcept {
  std::vector<VkFence> pending;
  for (std::uint32_t i = 0; i < ring; ++i)
    if (in_flight_[i]) pending.push_back(fences_[i]);
  if (pending.empty()) return true;
  // One bounded wait for all of them (5 s): a frame whose `produced` never comes never finishes.
  if (fn_->vkWaitForFences(vk_->device(), static_cast<std::uint32_t>(pending.size()), pending.data(), VK_TRUE,
                          5'000'000'000ULL) != VK_SUCCESS)
    return false;
  in_flight_.fill(false);
  return true;
}

void vulkan_frame_consumer::wait_fence(std::uint32_t index, const char* what) {
  if (!in_flight_[index]) return;
  const VkResult rc = fn_->vkWaitForFences(vk_->device(), 1, &fences_[index], VK_TRUE, wait_timeout_ns);
  if (rc == VK_TIMEOUT)
    throw bench_failure(std::string("Vulkan consumer: ") + what + " did not finish within " +
                        std::to_string(wait_timeout.count()) + " s");
  check_vk(rc, std::string("vkWaitForFences (") + what + ")");
  in_flight_[index] = false;
  check_vk(fn_->vkResetFences(vk_->device(), 1, &fences_[index]), "vkResetFences");
}

void vulkan_frame_consumer::submit_once(VkCommandBuffer cb) {
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  check_vk(fn_->vkQueueSubmit(queue_, 1, &si, fences_[0]), "vkQueueSubmit (init)");
  in_flight_[0] = true;
  wait_fence(0, "the initial submit");
}

VkBufferCopy vulkan_frame_consumer::source(std::size_t offset, std::size_t size, VkBuffer& buffer) const {
  for (const vulkan::buffer_segment& s : slots_->segments()) {
    if (offset < s.offset || offset + size > s.offset + s.size) continue;
    buffer = s.buffer;
    VkBufferCopy c{};
    c.srcOffset = s.buffer_offset + (offset - s.offset);
    c.size = size;
    return c;
  }
  throw bench_failure("Vulkan consumer: no segment of the slots buffer holds bytes " + std::to_string(offset) + " + " +
                      std::to_string(size));
}

bool vulkan_frame_consumer::wait_consumed(std::uint64_t m, const std::atomic<bool>& stop) const {
  // Polls `consumed` (vkGetSemaphoreCounterValue) as the CUDA consumer's monitor polls its event:
  // "done" is when the host can first see the frame's signal, not when a blocking wait's wake-up
  // got round to it (vkWaitSemaphores sleeps and its wake-up adds the scheduler's latency).
  const vulkan::timeline_semaphore& consumed = timeline_->consumed();
  auto deadline = std::chrono::steady_clock::now() + wait_timeout;
  std::uint64_t seen = 0;
  for (std::uint32_t i = 0;; ++i) {
    const std::uint64_t now = value_or_fail(consumed.value(), "reading 'consumed'");
    if (now >= m + 1) return true;
    if ((i & 255U) != 0) continue;
    if (stop.load()) return false;
    if (now != seen) {
      seen = now;
      deadline = std::chrono::steady_clock::now() + wait_timeout;
    } else if (std::chrono::steady_clock::now() >= deadline) {
      throw bench_failure("'consumed' stayed at " + std::to_string(now) + " for " +
                          std::to_string(wait_timeout.count()) + " s waiting for frame " + std::to_string(m));
    }
  }
}

void vulkan_frame_consumer::consume(std::uint64_t m) {
  if (m >= total_) throw bench_failure("Vulkan consumer: frame " + std::to_string(m) + " was never asked for");
  told_[m] = monotonic_ns();
  const auto index = static_cast<std::uint32_t>(m % ring);
  wait_fence(index, "the frame submitted ring frames earlier");
  const VkCommandBuffer cb = cbs_[index];
  check_vk(fn_->vkResetCommandBuffer(cb, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check_vk(fn_->vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");

  const std::size_t slot = static_cast<std::size_t>(timeline_->slot(m)) * slot_bytes;
  const std::size_t words = slot + slot_header_bytes;
  const std::size_t entry = static_cast<std::size_t>(m) * sizeof(history_entry);
  const struct {
    std::size_t from;
    std::size_t size;
    std::size_t to;
  } parts[] = {
      {slot, 16, offsetof(history_entry, frame)},
      {words, 4, offsetof(history_entry, first_word)},
      {words + (slot_words / 2) * 4, 4, offsetof(history_entry, middle_word)},
      {words + (slot_words - 1) * 4, 4, offsetof(history_entry, last_word)},
  };
  for (const auto& p : parts) {
    VkBuffer from = VK_NULL_HANDLE;
    VkBufferCopy c = source(p.from, p.size, from);
    c.dstOffset = entry + p.to;
    fn_->vkCmdCopyBuffer(cb, from, history_, 1, &c);
  }
  if (queries_ != VK_NULL_HANDLE)
    fn_->vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, static_cast<std::uint32_t>(m));
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  fn_->vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr,
                           0, nullptr);
  check_vk(fn_->vkEndCommandBuffer(cb), "vkEndCommandBuffer");

  ok_or_fail(timeline_->submit(queue_, std::span<const VkCommandBuffer>(&cb, 1), m, VK_PIPELINE_STAGE_TRANSFER_BIT,
                               fences_[index]),
             "Vulkan consumer: frame_timeline::submit of frame " + std::to_string(m));
  in_flight_[index] = true;
  r_.note(m);
}

consumer_result vulkan_frame_consumer::finish() {
  for (std::uint32_t i = 0; i < ring; ++i) wait_fence(i, "the last frames");
  consumer_result r = std::move(r_);
  r.done_ns = done_->take();
  r.told_ns = told_;
  std::vector<std::int64_t> gpu_ns(total_, 0);
  if (queries_ != VK_NULL_HANDLE && r.first_frame >= 0) {
    const auto first = static_cast<std::uint32_t>(r.first_frame);
    const auto count = static_cast<std::uint32_t>(r.last_frame - r.first_frame + 1);
    std::vector<std::uint64_t> values(2 * static_cast<std::size_t>(count));  // {timestamp, availability}
    const VkResult rc = fn_->vkGetQueryPoolResults(
        vk_->device(), queries_, first, count, values.size() * sizeof(std::uint64_t), values.data(),
        2 * sizeof(std::uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    if (rc != VK_SUCCESS && rc != VK_NOT_READY) check_vk(rc, "vkGetQueryPoolResults");
    for (std::uint32_t i = 0; i < count; ++i) {
      if (values[2 * i + 1] == 0) continue;
      const double ns = static_cast<double>(values[2 * i] & timestamp_mask_) * timestamp_period_ns_;
      gpu_ns[first + i] = static_cast<std::int64_t>(ns);
    }
  }
  r.set_span(gpu_ns, warmup_);

  // The data check: every consumed frame's entry holds that frame (header and words), and the
  // producer's stamps never go back.
  std::uint64_t previous_stamp = 0;
  for (std::int64_t m = r.first_frame; m >= 0 && m <= r.last_frame; ++m) {
    history_entry e;
    std::memcpy(&e, history_mapped_ + static_cast<std::size_t>(m) * sizeof e, sizeof e);
    const auto frame = static_cast<std::uint64_t>(m);
    const auto word = static_cast<std::uint32_t>(frame);
    if (e.frame != frame) ++r.wrong;
    if (e.first_word != word) ++r.wrong;
    if (e.middle_word != word) ++r.wrong;
    if (e.last_word != word) ++r.wrong;
    if (e.stamp == 0 || e.stamp == ~std::uint64_t{0} || e.stamp < previous_stamp) {
      ++r.wrong;
      r.increasing = false;
    }
    previous_stamp = std::max(previous_stamp, e.stamp);
  }
  return r;
}

}  // namespace membridge::bench::ipc_bench
