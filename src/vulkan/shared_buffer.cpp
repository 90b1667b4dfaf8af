#include <membridge/vulkan/shared_buffer.hpp>

#include "detail/context_state.hpp"
#include "detail/external_handle.hpp"
#include "detail/external_support.hpp"
#include "detail/vk_error.hpp"

#include <string>

namespace membridge::vulkan {

namespace {
constexpr const char* import_call = "shared_buffer::import";
}  // namespace

result<shared_buffer> shared_buffer::import(const device_context& context, os::borrowed_shareable_handle handle,
                                            const buffer_import_info& info) {
  if (!context.valid()) return error(errc::invalid_argument, import_call, "the device context is empty");
  const std::size_t size = info.size == 0 ? info.allocation_size : info.size;
  if (info.allocation_size == 0) return error(errc::invalid_argument, import_call, "allocation_size is 0");
  if (size > info.allocation_size)
    return error(errc::invalid_argument, import_call,
                 "buffer size " + std::to_string(size) + " exceeds the allocation (" +
                     std::to_string(info.allocation_size) + " bytes)");
  if (!context.capabilities().external_memory)
    return error(errc::unsupported, import_call, std::string(detail::memory_extension) + " is not enabled on the device");
  const auto& state = context.state();
  const auto support = detail::query_external_buffer(*state, 0, info.usage);
  if (!support.importable)
    return error(errc::unsupported, import_call,
                 std::string("the driver cannot import ") + detail::handle_name + "s for buffers with this usage");

  shared_buffer out;
  out.context_ = state;
  out.size_ = size;
  VkExternalMemoryBufferCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  external.handleTypes = detail::memory_handle_type;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.pNext = &external;
  bci.size = size;
  bci.usage = info.usage;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (const VkResult rc = state->table.vkCreateBuffer(state->device, &bci, nullptr, &out.buffer_); rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkCreateBuffer", "a " + std::to_string(size) + "-byte external buffer");

  VkMemoryDedicatedRequirements dedicated{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_REQUIREMENTS};
  VkMemoryRequirements2 requirements{VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2};
  requirements.pNext = &dedicated;
  VkBufferMemoryRequirementsInfo2 query{VK_STRUCTURE_TYPE_BUFFER_MEMORY_REQUIREMENTS_INFO_2};
  query.buffer = out.buffer_;
  state->table.vkGetBufferMemoryRequirements2(state->device, &query, &requirements);
  if (requirements.memoryRequirements.size > info.allocation_size)
    return error(errc::invalid_argument, import_call,
                 "the buffer needs " + std::to_string(requirements.memoryRequirements.size) +
                     " bytes of memory, more than the allocation's " + std::to_string(info.allocation_size));

  memory_import_info import_info;
  import_info.size = info.allocation_size;
  import_info.memory_type_bits = requirements.memoryRequirements.memoryTypeBits;
  import_info.dedicated = dedicated.requiresDedicatedAllocation == VK_TRUE || support.dedicated_only;
  import_info.buffer = import_info.dedicated ? out.buffer_ : VK_NULL_HANDLE;
  MEMBRIDGE_TRY_ASSIGN(out.memory_, imported_memory::import(context, handle, import_info));
  if (const VkResult rc = state->table.vkBindBufferMemory(state->device, out.buffer_, out.memory_.get(), 0);
      rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkBindBufferMemory");
  return out;
}

shared_buffer::shared_buffer(shared_buffer&& other) noexcept
    : context_(std::move(other.context_)),
      buffer_(std::exchange(other.buffer_, VK_NULL_HANDLE)),
      memory_(std::move(other.memory_)),
      size_(std::exchange(other.size_, 0)) {}

shared_buffer& shared_buffer::operator=(shared_buffer&& other) noexcept {
  if (this != &other) {
    reset();
    context_ = std::move(other.context_);
    buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    memory_ = std::move(other.memory_);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

shared_buffer::~shared_buffer() { reset(); }

void shared_buffer::reset() noexcept {
  if (buffer_ != VK_NULL_HANDLE && context_) context_->table.vkDestroyBuffer(context_->device, buffer_, nullptr);
  buffer_ = VK_NULL_HANDLE;
  memory_ = imported_memory();  // freed after the buffer that was bound to it
  size_ = 0;
  context_.reset();
}

}  // namespace membridge::vulkan
