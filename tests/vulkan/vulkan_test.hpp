// Vulkan tier support: contexts with validation (any message fails the test), memory another device
// exports, host-visible staging buffers and one-shot command submission.
#pragma once

#include <membridge/vulkan/device_context.hpp>
#include <membridge/os/unique_fd.hpp>

#include <gtest/gtest.h>
#include <volk.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace membridge::testing {

/// A device_context made by create() with validation on; messages are collected.
struct validated_context {
  vulkan::device_context context;
  std::shared_ptr<std::vector<std::string>> messages = std::make_shared<std::vector<std::string>>();
  std::shared_ptr<std::mutex> lock = std::make_shared<std::mutex>();
};

/// Creates a validated context (fails the test via the returned result if it cannot).
[[nodiscard]] result<validated_context> make_validated_context(vulkan::create_options options = {});

/// Memory allocated and exported (opaque fd) by one device, host-visible so tests fill and read it.
class exported_memory {
 public:
  /// Allocates `size` bytes on `exporter` of a HOST_VISIBLE type in `type_bits` (all if ~0), exportable.
  [[nodiscard]] static result<exported_memory> allocate(const vulkan::device_context& exporter, std::size_t size,
                                                        std::uint32_t type_bits = ~0U);
  exported_memory() = default;
  exported_memory(const exported_memory&) = delete;
  exported_memory& operator=(const exported_memory&) = delete;
  exported_memory(exported_memory&& other) noexcept;
  exported_memory& operator=(exported_memory&&) = delete;
  ~exported_memory();

  /// A new fd for the memory. Ownership: the caller owns it.
  [[nodiscard]] result<os::unique_fd> export_fd() const;
  /// The mapped bytes.
  [[nodiscard]] std::uint32_t* words() const noexcept { return static_cast<std::uint32_t*>(mapped_); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  const vulkan::device_context* context_ = nullptr;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  std::size_t size_ = 0;
};

/// Memory allocated on an exporter and an fd exported for it.
struct exported_memory_fd {
  exported_memory memory;
  os::unique_fd fd;
};

/// exported_memory::allocate(exporter, size) and an fd exported for the memory.
/// Errors: as allocate and export_fd. Ownership: the caller owns the memory and the fd.
[[nodiscard]] result<exported_memory_fd> allocate_and_export(const vulkan::device_context& exporter,
                                                             std::size_t size);

/// A host-visible, coherent buffer for copies to and from the GPU.
class staging_buffer {
 public:
  [[nodiscard]] static result<staging_buffer> create(const vulkan::device_context& context, std::size_t size);
  staging_buffer() = default;
  staging_buffer(const staging_buffer&) = delete;
  staging_buffer& operator=(const staging_buffer&) = delete;
  staging_buffer(staging_buffer&& other) noexcept;
  staging_buffer& operator=(staging_buffer&&) = delete;
  ~staging_buffer();

  [[nodiscard]] VkBuffer get() const noexcept { return buffer_; }
  [[nodiscard]] std::uint32_t* words() const noexcept { return static_cast<std::uint32_t*>(mapped_); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  const vulkan::device_context* context_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  std::size_t size_ = 0;
};

/// Records commands with `record`, submits them to the graphics queue and waits.
/// The handles of `c` as an engine would pass them to device_context::adopt: its loader, instance,
/// physical device, device and API version (no extensions, features or queues yet).
/// Ownership: the handles stay `c`'s.
[[nodiscard]] inline vulkan::adopt_info handles_of_context(const vulkan::device_context& c) {
  vulkan::adopt_info info;
  info.get_instance_proc_addr = c.get_instance_proc_addr();
  info.instance = c.instance();
  info.physical_device = c.physical_device();
  info.device = c.device();
  info.api_version = c.api_version();
  return info;
}

/// A command pool and primary command buffers allocated from it.
struct command_buffers {
  VkCommandPool pool = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> buffers;
};

/// A command pool on the context's graphics queue family and `count` primary command buffers from it.
/// Errors: internal (the failing call named); nothing is left made then.
/// Ownership: the caller destroys `pool` (which frees its buffers) with vkDestroyCommandPool.
[[nodiscard]] result<command_buffers> allocate_command_buffers(const vulkan::device_context& context,
                                                               std::size_t count);

/// allocate_command_buffers(context, count), each begun, recorded by record(buffer, index) and ended.
/// Errors: internal (the failing call named; nothing is left made then).
/// Ownership: the caller destroys `pool` (which frees its buffers) with vkDestroyCommandPool.
[[nodiscard]] result<command_buffers> record_command_buffers(
    const vulkan::device_context& context, std::size_t count,
    const std::function<void(VkCommandBuffer, std::uint64_t)>& record);

[[nodiscard]] result<void> run_commands(const vulkan::device_context& context,
                                        const std::function<void(VkCommandBuffer)>& record);

/// A full memory barrier (all commands, all memory access), for tests.
void full_barrier(const vulkan::device_context& context, VkCommandBuffer cb);

/// A barrier on the colour subresource of `image` from layout `from` to `to`: all stages, all memory.
void image_barrier(const vulkan::device_context& context, VkCommandBuffer cb, VkImage image, VkImageLayout from,
                   VkImageLayout to);

/// A buffer <-> image copy region covering a whole width x height colour image (buffer offset 0, tight rows).
[[nodiscard]] VkBufferImageCopy whole_image(std::uint32_t width, std::uint32_t height) noexcept;

/// The pattern value of word `i` for `seed` (never 0).
[[nodiscard]] constexpr std::uint32_t pattern(std::uint32_t seed, std::size_t i) noexcept {
  return (static_cast<std::uint32_t>(i) * 2654435761U) ^ (seed * 40503U) ^ 0x9e3779b9U;
}
/// Index of the first word that differs from pattern(seed, i), or SIZE_MAX.
[[nodiscard]] std::size_t first_mismatch(const std::uint32_t* words, std::size_t count, std::uint32_t seed) noexcept;

/// Base fixture: makes `vk` (validated) and checks at the end that no validation message came.
class vulkan_test : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  validated_context vk;
};

}  // namespace membridge::testing
