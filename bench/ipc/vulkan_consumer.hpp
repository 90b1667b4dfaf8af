// bench/ipc/vulkan_consumer.hpp: the Vulkan frame consumer of (c), one class for both pipelines: in
// this process it reads the producer's slots through sync::mirror_in_vulkan and the producer's own
// frame_timeline; in the child process through sync::import_into_vulkan and frame_timeline::import
// of the published semaphores. The code that records, submits and checks is the same.
#pragma once

#include "ipc/parts.hpp"

#include <membridge/sync/frame_timeline.hpp>
#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <vulkan/vulkan_core.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace membridge::bench::ipc_bench {

/// Per frame m, one command buffer on the context's graphics queue, submitted with
/// frame_timeline::submit (waits produced >= m + 1 at the transfer stage, signals consumed = m + 1):
/// vkCmdCopyBuffer of slot m % slots' header {frame, producer's %globaltimer stamp} and of its
/// first, middle and last 32-bit words into entry m of a host-visible history buffer, then a
/// timestamp (bottom of pipe; when the queue family has timestamps). finish() checks every entry
/// (the frame number in the header and the three words, stamps not older than the frame before),
/// and takes the GPU interval from the timestamps.
///
/// Command buffers and fences form a ring of `ring` entries: consume(m) first waits (host, at most
/// wait_timeout) for the fence of frame m - ring, as a renderer waits for its frame in flight.
/// consume(m) reads CLOCK_MONOTONIC first ("told"); a done_monitor polls the timeline's
/// `consumed` for m + 1 (the value the frame's submit signals) and reads it when that wait returns
/// ("done"); finish() returns both per frame.
/// The caller owns the queue meanwhile. Destruction waits (bounded) for the submitted frames; if
/// they do not finish it leaves the Vulkan objects alive (leaked) rather than destroy them in use.
class vulkan_frame_consumer {
 public:
  static constexpr std::uint32_t ring = 8;

  /// `slots` holds timeline.slots() slots of slot_bytes from offset 0; `timeline` is the consumer's
  /// view of the producer's timeline. Both must outlive this object.
  vulkan_frame_consumer(const vulkan::device_context& vk, const vulkan::chunked_buffer& slots,
                        const sync::frame_timeline& timeline, std::uint64_t total, std::uint64_t warmup);
  vulkan_frame_consumer(const vulkan_frame_consumer&) = delete;
  vulkan_frame_consumer& operator=(const vulkan_frame_consumer&) = delete;
  ~vulkan_frame_consumer();

  /// Records and submits frame `m`'s copy (frames in increasing order, m < total).
  void consume(std::uint64_t m);
  /// Waits (at most wait_timeout) for every submitted frame, then checks the history.
  [[nodiscard]] consumer_result finish();

 private:
  /// Where byte `offset` of the slots lies: the VkBuffer and the offset in it (`size` bytes must
  /// not cross a segment).
  [[nodiscard]] VkBufferCopy source(std::size_t offset, std::size_t size, VkBuffer& buffer) const;
  void wait_fence(std::uint32_t index, const char* what);
  void submit_once(VkCommandBuffer cb);
  /// The done_monitor's wait: until the timeline's `consumed` reaches m + 1 (false when `stop` is set).
  [[nodiscard]] bool wait_consumed(std::uint64_t m, const std::atomic<bool>& stop) const;
  [[nodiscard]] bool wait_all_quietly() noexcept;

  const vulkan::device_context* vk_ = nullptr;
  const vulkan::chunked_buffer* slots_ = nullptr;
  const sync::frame_timeline* timeline_ = nullptr;
  const VolkDeviceTable* fn_ = nullptr;  // the context's device functions
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::array<VkCommandBuffer, ring> cbs_{};
  std::array<VkFence, ring> fences_{};
  std::array<bool, ring> in_flight_{};
  VkQueryPool queries_ = VK_NULL_HANDLE;  // VK_NULL_HANDLE when the queue family has no timestamps
  double timestamp_period_ns_ = 1.0;
  std::uint64_t timestamp_mask_ = ~std::uint64_t{0};
  VkBuffer history_ = VK_NULL_HANDLE;
  VkDeviceMemory history_memory_ = VK_NULL_HANDLE;
  const std::byte* history_mapped_ = nullptr;
  consumer_result r_;
  std::uint64_t total_ = 0;
  std::uint64_t warmup_ = 0;
  std::vector<std::int64_t> told_;
  std::optional<done_monitor> done_;  // last: stopped and joined before the rest goes
};

}  // namespace membridge::bench::ipc_bench
