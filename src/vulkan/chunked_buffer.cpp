#include <membridge/vulkan/chunked_buffer.hpp>

#include <membridge/core/chunk_append.hpp>

#include "detail/context_state.hpp"
#include "detail/external_handle.hpp"
#include "detail/external_support.hpp"
#include "detail/vk_error.hpp"

#include <string>

namespace membridge::vulkan {

namespace {

constexpr const char* create_call = "chunked_buffer::create";
constexpr const char* append_call = "chunked_buffer::append";
constexpr std::uint64_t bind_timeout_ns = 10'000'000'000ULL;
constexpr VkBufferCreateFlags sparse_flags = VK_BUFFER_CREATE_SPARSE_BINDING_BIT | VK_BUFFER_CREATE_SPARSE_RESIDENCY_BIT;

}  // namespace

result<chunked_buffer> chunked_buffer::create(const device_context& context, const chunked_buffer_info& info) {
  if (!context.valid()) return error(errc::invalid_argument, create_call, "the device context is empty");
  if (info.reserved_size == 0) return error(errc::invalid_argument, create_call, "reserved_size is 0");
  const auto& state = context.state();
  const bool can_sparse = state->caps.sparse_binding &&
                          detail::query_external_buffer(*state, sparse_flags, info.usage).importable;
  if (info.mode == growth_mode::sparse && !can_sparse)
    return error(errc::unsupported, create_call,
                 "sparse growth needs sparseBinding, sparseResidencyBuffer, a sparse queue and opaque fd / NT handle import of "
                 "sparse buffers; use growth_mode::automatic to fall back to one buffer per chunk");
  chunked_buffer out;
  out.context_ = state;
  out.reserved_size_ = info.reserved_size;
  out.usage_ = info.usage;
  if (info.mode == growth_mode::per_chunk || !can_sparse) return out;

  VkExternalMemoryBufferCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  external.handleTypes = detail::memory_handle_type;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.pNext = &external;
  bci.flags = sparse_flags;
  bci.size = info.reserved_size;
  bci.usage = info.usage;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (const VkResult rc = state->table.vkCreateBuffer(state->device, &bci, nullptr, &out.sparse_buffer_);
      rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkCreateBuffer",
                                      "a sparse buffer of " + std::to_string(info.reserved_size) + " bytes");
  VkMemoryRequirements req{};
  state->table.vkGetBufferMemoryRequirements(state->device, out.sparse_buffer_, &req);
  out.page_size_ = static_cast<std::size_t>(req.alignment);
  out.sparse_type_bits_ = req.memoryTypeBits;
  return out;
}

result<void> chunked_buffer::append(os::borrowed_shareable_handle handle, std::size_t offset, std::size_t size) {
  if (!valid()) return error(errc::invalid_argument, append_call, "the chunked_buffer is empty");
  MEMBRIDGE_TRY(check_chunk_append(append_call, size_, reserved_size_, offset, size));
  return is_sparse() ? append_sparse(handle, offset, size) : append_per_chunk(handle, offset, size);
}

result<void> chunked_buffer::append_sparse(os::borrowed_shareable_handle handle, std::size_t offset, std::size_t size) {
  const bool ends_buffer = offset + size == reserved_size_;
  if (offset % page_size_ != 0 || (size % page_size_ != 0 && !ends_buffer))
    return error(errc::invalid_argument, append_call,
                 "sparse chunks must be multiples of the sparse page size (" + std::to_string(page_size_) + " bytes)");
  memory_import_info import_info;
  import_info.size = size;
  import_info.memory_type_bits = sparse_type_bits_;
  MEMBRIDGE_TRY_ASSIGN(auto memory, imported_memory::import(context_from_state(), handle, import_info));
  MEMBRIDGE_TRY(bind_sparse(offset, size, memory.get()));
  add_chunk(detail::view_chunk{std::move(memory), shared_buffer(), offset, size});
  return ok();
}

result<void> chunked_buffer::append_per_chunk(os::borrowed_shareable_handle handle, std::size_t offset, std::size_t size) {
  buffer_import_info info;
  info.allocation_size = size;
  info.usage = usage_;
  MEMBRIDGE_TRY_ASSIGN(auto buffer, shared_buffer::import(context_from_state(), handle, info));
  add_chunk(detail::view_chunk{imported_memory(), std::move(buffer), offset, size});
  return ok();
}

result<void> chunked_buffer::bind_sparse(std::size_t offset, std::size_t size, VkDeviceMemory memory) const {
  const auto& s = *context_;
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence = VK_NULL_HANDLE;
  if (const VkResult rc = s.table.vkCreateFence(s.device, &fci, nullptr, &fence); rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkCreateFence");
  VkSparseMemoryBind bind{};
  bind.resourceOffset = offset;
  bind.size = size;
  bind.memory = memory;  // VK_NULL_HANDLE unbinds
  bind.memoryOffset = 0;
  VkSparseBufferMemoryBindInfo buffer_bind{sparse_buffer_, 1, &bind};
  VkBindSparseInfo info{VK_STRUCTURE_TYPE_BIND_SPARSE_INFO};
  info.bufferBindCount = 1;
  info.pBufferBinds = &buffer_bind;
  VkResult rc = s.table.vkQueueBindSparse(s.sparse.queue, 1, &info, fence);
  if (rc == VK_SUCCESS) rc = s.table.vkWaitForFences(s.device, 1, &fence, VK_TRUE, bind_timeout_ns);
  s.table.vkDestroyFence(s.device, fence, nullptr);
  if (rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, rc == VK_TIMEOUT ? "vkWaitForFences" : "vkQueueBindSparse",
                                      std::string(memory != VK_NULL_HANDLE ? "binding" : "unbinding") + " bytes " +
                                          std::to_string(offset) + ".." + std::to_string(offset + size));
  return ok();
}

VkBuffer chunked_buffer::buffer() const noexcept {
  if (is_sparse()) return sparse_buffer_;
  return chunks_.size() == 1 ? chunks_.front().buffer.get() : VK_NULL_HANDLE;
}

chunked_buffer::chunked_buffer(chunked_buffer&& other) noexcept
    : chunked_view(std::move(other)),
      context_(std::move(other.context_)),
      sparse_buffer_(std::exchange(other.sparse_buffer_, VK_NULL_HANDLE)),
      sparse_type_bits_(other.sparse_type_bits_),
      usage_(other.usage_) {}

chunked_buffer& chunked_buffer::operator=(chunked_buffer&& other) noexcept {
  if (this != &other) {
    reset();
    chunked_view::operator=(std::move(other));
    context_ = std::move(other.context_);
    sparse_buffer_ = std::exchange(other.sparse_buffer_, VK_NULL_HANDLE);
    sparse_type_bits_ = other.sparse_type_bits_;
    usage_ = other.usage_;
  }
  return *this;
}

chunked_buffer::~chunked_buffer() { reset(); }

void chunked_buffer::reset() noexcept {
  // The sparse buffer goes first, then the memory bound to it.
  if (sparse_buffer_ != VK_NULL_HANDLE && context_)
    context_->table.vkDestroyBuffer(context_->device, sparse_buffer_, nullptr);
  sparse_buffer_ = VK_NULL_HANDLE;
  clear_chunks();
  context_.reset();
}

}  // namespace membridge::vulkan
