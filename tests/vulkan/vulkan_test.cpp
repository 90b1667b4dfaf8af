#include "vulkan_test.hpp"

#include <membridge/os/borrowed_fd.hpp>

#include <limits>

namespace membridge::testing {

result<validated_context> make_validated_context(vulkan::create_options options) {
  validated_context out;
  options.validation = true;
  auto messages = out.messages;
  auto lock = out.lock;
  options.on_validation_message = [messages, lock](std::string_view text) {
    const std::lock_guard<std::mutex> guard(*lock);
    messages->emplace_back(text);
  };
  MEMBRIDGE_TRY_ASSIGN(out.context, vulkan::device_context::create(options));
  return out;
}

result<exported_memory> exported_memory::allocate(const vulkan::device_context& exporter, std::size_t size,
                                                  std::uint32_t type_bits) {
  const auto& fn = exporter.functions();
  MEMBRIDGE_TRY_ASSIGN(const std::uint32_t type,
                       exporter.find_memory_type(type_bits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                                VK_MEMORY_PROPERTY_HOST_COHERENT_BIT));
  VkExportMemoryAllocateInfo export_info{VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO};
  export_info.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkMemoryAllocateInfo info{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  info.pNext = &export_info;
  info.allocationSize = size;
  info.memoryTypeIndex = type;
  exported_memory out;
  out.context_ = &exporter;
  out.size_ = size;
  if (fn.vkAllocateMemory(exporter.device(), &info, nullptr, &out.memory_) != VK_SUCCESS)
    return error(errc::out_of_memory, "vkAllocateMemory", "exportable test memory");
  if (fn.vkMapMemory(exporter.device(), out.memory_, 0, VK_WHOLE_SIZE, 0, &out.mapped_) != VK_SUCCESS)
    return error(errc::internal, "vkMapMemory", "exportable test memory");
  return out;
}

exported_memory::exported_memory(exported_memory&& other) noexcept
    : context_(other.context_),
      memory_(std::exchange(other.memory_, VK_NULL_HANDLE)),
      mapped_(std::exchange(other.mapped_, nullptr)),
      size_(other.size_) {}

exported_memory::~exported_memory() {
  if (memory_ == VK_NULL_HANDLE) return;
  context_->functions().vkFreeMemory(context_->device(), memory_, nullptr);
}

result<os::unique_fd> exported_memory::export_fd() const {
  VkMemoryGetFdInfoKHR info{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR};
  info.memory = memory_;
  info.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  int fd = -1;
  if (context_->functions().vkGetMemoryFdKHR(context_->device(), &info, &fd) != VK_SUCCESS)
    return error(errc::internal, "vkGetMemoryFdKHR", "exporting test memory");
  auto owned = os::unique_fd::from_native(fd);
  MEMBRIDGE_TRY(os::set_close_on_exec(owned));
  return owned;
}

result<exported_memory_fd> allocate_and_export(const vulkan::device_context& exporter, std::size_t size) {
  MEMBRIDGE_TRY_ASSIGN(auto memory, exported_memory::allocate(exporter, size));
  MEMBRIDGE_TRY_ASSIGN(auto fd, memory.export_fd());
  return exported_memory_fd{std::move(memory), std::move(fd)};
}

result<staging_buffer> staging_buffer::create(const vulkan::device_context& context, std::size_t size) {
  const auto& fn = context.functions();
  staging_buffer out;
  out.context_ = &context;
  out.size_ = size;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (fn.vkCreateBuffer(context.device(), &bci, nullptr, &out.buffer_) != VK_SUCCESS)
    return error(errc::internal, "vkCreateBuffer", "staging buffer");
  VkMemoryRequirements req{};
  fn.vkGetBufferMemoryRequirements(context.device(), out.buffer_, &req);
  MEMBRIDGE_TRY_ASSIGN(const std::uint32_t type,
                       context.find_memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                                        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT));
  VkMemoryAllocateInfo info{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  info.allocationSize = req.size;
  info.memoryTypeIndex = type;
  if (fn.vkAllocateMemory(context.device(), &info, nullptr, &out.memory_) != VK_SUCCESS)
    return error(errc::out_of_memory, "vkAllocateMemory", "staging memory");
  if (fn.vkBindBufferMemory(context.device(), out.buffer_, out.memory_, 0) != VK_SUCCESS ||
      fn.vkMapMemory(context.device(), out.memory_, 0, VK_WHOLE_SIZE, 0, &out.mapped_) != VK_SUCCESS)
    return error(errc::internal, "vkBindBufferMemory/vkMapMemory", "staging memory");
  return out;
}

staging_buffer::staging_buffer(staging_buffer&& other) noexcept
    : context_(other.context_),
      buffer_(std::exchange(other.buffer_, VK_NULL_HANDLE)),
      memory_(std::exchange(other.memory_, VK_NULL_HANDLE)),
      mapped_(std::exchange(other.mapped_, nullptr)),
      size_(other.size_) {}

staging_buffer::~staging_buffer() {
  if (context_ == nullptr) return;
  const auto& fn = context_->functions();
  if (buffer_ != VK_NULL_HANDLE) fn.vkDestroyBuffer(context_->device(), buffer_, nullptr);
  if (memory_ != VK_NULL_HANDLE) fn.vkFreeMemory(context_->device(), memory_, nullptr);
}

result<command_buffers> allocate_command_buffers(const vulkan::device_context& context, std::size_t count) {
  const auto& fn = context.functions();
  const VkDevice dev = context.device();
  command_buffers out;
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.queueFamilyIndex = context.graphics_queue().family;
  if (fn.vkCreateCommandPool(dev, &pci, nullptr, &out.pool) != VK_SUCCESS)
    return error(errc::internal, "vkCreateCommandPool");
  out.buffers.resize(count);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = out.pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = static_cast<std::uint32_t>(count);
  if (const VkResult rc = fn.vkAllocateCommandBuffers(dev, &ai, out.buffers.data()); rc != VK_SUCCESS) {
    fn.vkDestroyCommandPool(dev, out.pool, nullptr);
    return error(errc::internal, "vkAllocateCommandBuffers", "VkResult " + std::to_string(rc));
  }
  return out;
}

result<command_buffers> record_command_buffers(const vulkan::device_context& context, std::size_t count,
                                               const std::function<void(VkCommandBuffer, std::uint64_t)>& record) {
  MEMBRIDGE_TRY_ASSIGN(command_buffers out, allocate_command_buffers(context, count));
  const auto& fn = context.functions();
  for (std::size_t n = 0; n < count; ++n) {
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VkResult rc = fn.vkBeginCommandBuffer(out.buffers[n], &bi);
    if (rc == VK_SUCCESS) {
      record(out.buffers[n], n);
      rc = fn.vkEndCommandBuffer(out.buffers[n]);
    }
    if (rc != VK_SUCCESS) {
      fn.vkDestroyCommandPool(context.device(), out.pool, nullptr);
      return error(errc::internal, "record_command_buffers",
                   "VkResult " + std::to_string(rc) + " for command buffer " + std::to_string(n));
    }
  }
  return out;
}

result<void> run_commands(const vulkan::device_context& context, const std::function<void(VkCommandBuffer)>& record) {
  const auto& fn = context.functions();
  const VkDevice dev = context.device();
  MEMBRIDGE_TRY_ASSIGN(const command_buffers cbs, allocate_command_buffers(context, 1));
  const VkCommandPool pool = cbs.pool;
  const VkCommandBuffer cb = cbs.buffers[0];
  VkFence fence = VK_NULL_HANDLE;
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkResult rc = fn.vkCreateFence(dev, &fci, nullptr, &fence);
  if (rc == VK_SUCCESS) {
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    rc = fn.vkBeginCommandBuffer(cb, &bi);
  }
  if (rc == VK_SUCCESS) {
    record(cb);
    rc = fn.vkEndCommandBuffer(cb);
  }
  if (rc == VK_SUCCESS) {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    rc = fn.vkQueueSubmit(context.graphics_queue().queue, 1, &si, fence);
  }
  if (rc == VK_SUCCESS) rc = fn.vkWaitForFences(dev, 1, &fence, VK_TRUE, 60'000'000'000ULL);
  if (fence != VK_NULL_HANDLE) fn.vkDestroyFence(dev, fence, nullptr);
  fn.vkDestroyCommandPool(dev, pool, nullptr);
  if (rc != VK_SUCCESS) return error(errc::internal, "run_commands", "VkResult " + std::to_string(rc));
  return ok();
}

void full_barrier(const vulkan::device_context& context, VkCommandBuffer cb) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  context.functions().vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                                           VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                           &barrier, 0, nullptr, 0, nullptr);
}

void image_barrier(const vulkan::device_context& context, VkCommandBuffer cb, VkImage image, VkImageLayout from,
                   VkImageLayout to) {
  VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  b.oldLayout = from;
  b.newLayout = to;
  b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b.image = image;
  b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  context.functions().vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                                           0, 0, nullptr, 0, nullptr, 1, &b);
}

VkBufferImageCopy whole_image(std::uint32_t width, std::uint32_t height) noexcept {
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {width, height, 1};
  return region;
}

std::size_t first_mismatch(const std::uint32_t* words, std::size_t count, std::uint32_t seed) noexcept {
  for (std::size_t i = 0; i < count; ++i)
    if (words[i] != pattern(seed, i)) return i;
  return std::numeric_limits<std::size_t>::max();
}

void vulkan_test::SetUp() {
  auto made = make_validated_context();
  ASSERT_TRUE(made) << made.error().message();
  vk = std::move(made).value();
}

void vulkan_test::TearDown() {
  vk.context = vulkan::device_context();  // destroys the device: the layer reports leaked objects now
  const std::lock_guard<std::mutex> guard(*vk.lock);
  for (const auto& m : *vk.messages) ADD_FAILURE() << m;
}

}  // namespace membridge::testing
