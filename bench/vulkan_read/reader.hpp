// bench/vulkan_read/reader.hpp: the Vulkan side of the read benchmark: the peer buffer (a DEVICE_LOCAL
// VkBuffer on memory Vulkan allocates itself), the read-reduce compute pipeline (shaders/read_reduce.comp),
// one descriptor set per memory, and one dispatch at a time timed with timestamp queries.
#pragma once

#include "support.hpp"

#include <membridge/vulkan/device_context.hpp>

#include <vulkan/vulkan_core.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace membridge::bench::vulkan_read {

/// Which buffer a dispatch reads.
enum class memory : std::uint8_t {
  imported = 0,  ///< The CUDA growable_buffer seen through sync::mirror_in_vulkan (one sparse VkBuffer).
  own = 1,       ///< The VkBuffer on memory Vulkan allocated itself (DEVICE_LOCAL).
};

/// Number of `memory` values.
inline constexpr std::size_t memory_count = 2;

/// "imported" or "own".
[[nodiscard]] const char* memory_name(memory m) noexcept;

/// What the device says about timestamps and storage buffers (read when the reader is made).
struct device_limits {
  double timestamp_period_ns = 0.0;          ///< VkPhysicalDeviceLimits::timestampPeriod.
  std::uint32_t timestamp_valid_bits = 0;    ///< Of the graphics queue family.
  std::uint64_t max_storage_buffer_range = 0;///< VkPhysicalDeviceLimits::maxStorageBufferRange.
  std::uint32_t max_workgroups_x = 0;        ///< VkPhysicalDeviceLimits::maxComputeWorkGroupCount[0].
  std::uint32_t own_memory_type = 0;         ///< Memory type index of the own buffer.
  VkMemoryPropertyFlags own_memory_flags = 0;///< Its property flags.
};

/// Throws device_unavailable when the device cannot run the benchmark as configured: no timestamps
/// on the graphics queue family, maxStorageBufferRange below `bytes`, fewer than `groups` workgroups
/// in x. Returns the limits read.
[[nodiscard]] device_limits read_device_limits(const vulkan::device_context& vk, std::size_t bytes, std::uint32_t groups);

/// One dispatch's result.
struct dispatch_result {
  double ns = 0.0;                    ///< GPU time between the timestamps around the dispatch.
  const std::uint32_t* sums = nullptr;///< The workgroups' sums (host-visible, valid until the next dispatch).
};

/// The peer buffer, the pipeline and what each dispatch needs. Made once; every dispatch reuses a
/// command buffer recorded here: timestamp (top of pipe), dispatch of `groups` x 256 invocations
/// over the whole buffer, timestamp (bottom of pipe); then, outside the timed part, the sums are
/// copied to a host-visible buffer and the device buffer of sums is poisoned for the next dispatch.
/// Submitted to the context's graphics queue; each dispatch waits for its fence (at most
/// wait_timeout), so the GPU runs one dispatch at a time. The caller must not use that queue
/// meanwhile.
///
/// Not copyable or movable. Destruction waits (bounded) for the last submission and destroys
/// everything it made; if the GPU does not finish, it leaves the objects alive (leaked) rather than
/// destroy them in use.
class reader {
 public:
  /// `imported` is the VkBuffer of the imported memory, its bytes [imported_offset, imported_offset +
  /// bytes) being the CUDA buffer's. Ownership: borrowed; it must outlive this object. `vk` too.
  reader(const vulkan::device_context& vk, VkBuffer imported, VkDeviceSize imported_offset, std::size_t bytes,
         std::uint32_t groups, const device_limits& limits);
  reader(const reader&) = delete;
  reader& operator=(const reader&) = delete;
  reader(reader&&) = delete;
  reader& operator=(reader&&) = delete;
  ~reader();

  /// Fills the own buffer with vkCmdCopyBuffer from the imported one (the same pattern) and waits.
  void copy_imported_to_own();

  /// Runs one dispatch over `m`, waits for it and returns its time and sums.
  [[nodiscard]] dispatch_result dispatch(memory m);

  /// The limits read by read_device_limits(), with the own buffer's memory type filled in.
  [[nodiscard]] const device_limits& limits() const noexcept { return limits_; }

  /// The value the device buffer of sums holds before every dispatch (never a plausible sum to rely on:
  /// every sum is compared with the expected one).
  static constexpr std::uint32_t poison = 0xDEADBEEFU;
  /// What the host writes into the readback buffer before every dispatch (each byte 0x5A): a copy
  /// that did not happen leaves it there.
  static constexpr std::uint32_t host_poison = 0x5A5A5A5AU;

 private:
  void create_objects(VkBuffer imported, VkDeviceSize imported_offset);
  void record(memory m);
  void submit_and_wait(VkCommandBuffer cb, const std::string& what);
  void destroy() noexcept;
  [[nodiscard]] VkBuffer make_buffer(VkDeviceSize size, VkBufferUsageFlags usage, VkMemoryPropertyFlags required,
                                     VkMemoryPropertyFlags avoided, VkDeviceMemory& memory_out, const char* what,
                                     std::uint32_t* type_out = nullptr);

  const vulkan::device_context* vk_ = nullptr;
  std::size_t bytes_ = 0;
  std::uint32_t groups_ = 0;
  device_limits limits_{};
  std::uint64_t timestamp_mask_ = 0;
  bool in_flight_ = false;  // a submission was not waited for (a timeout): destroy() leaks

  VkBuffer imported_ = VK_NULL_HANDLE;
  VkDeviceSize imported_offset_ = 0;
  VkBuffer own_ = VK_NULL_HANDLE;
  VkDeviceMemory own_memory_ = VK_NULL_HANDLE;
  std::array<VkBuffer, memory_count> sums_{};            // device-local, written by the shader
  std::array<VkDeviceMemory, memory_count> sums_memory_{};
  std::array<VkBuffer, memory_count> readback_{};        // host-visible copies of the sums
  std::array<VkDeviceMemory, memory_count> readback_memory_{};
  std::array<std::uint32_t*, memory_count> readback_mapped_{};

  VkShaderModule shader_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  std::array<VkDescriptorSet, memory_count> sets_{};
  VkQueryPool queries_ = VK_NULL_HANDLE;  // 2 per memory: before and after its dispatch
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  std::array<VkCommandBuffer, memory_count> dispatch_cbs_{};
  VkCommandBuffer setup_cb_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
};

}  // namespace membridge::bench::vulkan_read
