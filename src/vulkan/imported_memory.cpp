#include <membridge/vulkan/imported_memory.hpp>

#include "detail/context_state.hpp"
#include "detail/external_handle.hpp"
#include "detail/vk_error.hpp"

#include <string>
#include <vector>

namespace membridge::vulkan {

namespace {

constexpr const char* import_call = "imported_memory::import";

// Device-local types without host visibility first, then other device-local types.
std::vector<std::uint32_t> candidate_types(const VkPhysicalDeviceMemoryProperties& mem, std::uint32_t bits) {
  std::vector<std::uint32_t> out;
  for (int pass = 0; pass < 2; ++pass)
    for (std::uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
      if ((bits & (1U << i)) == 0) continue;
      const VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
      if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) == 0) continue;
      const bool pure = (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) == 0;
      if ((pass == 0) == pure) out.push_back(i);
    }
  return out;
}

}  // namespace

result<imported_memory> imported_memory::import(const device_context& context, os::borrowed_shareable_handle handle,
                                                const memory_import_info& info) {
  if (!context.valid()) return error(errc::invalid_argument, import_call, "the device context is empty");
  if (info.size == 0) return error(errc::invalid_argument, import_call, "size is 0");
  if (!handle.valid()) return error(errc::invalid_argument, import_call, std::string("the ") + detail::handle_name + " is invalid");
  if (!context.capabilities().external_memory)
    return error(errc::unsupported, import_call, std::string(detail::memory_extension) + " is not enabled on the device");
  const auto& state = context.state();
  const auto types = candidate_types(state->memory, info.memory_type_bits);
  if (types.empty())
    return error(errc::unsupported, import_call, "no device-local memory type among the resource's types");

  VkResult last = VK_ERROR_UNKNOWN;
  std::string tried;
  for (const std::uint32_t type : types) {
    VkMemoryDedicatedAllocateInfo dedicated{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO};
    dedicated.buffer = info.buffer;
    dedicated.image = info.image;
    VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    allocate.pNext = info.dedicated ? &dedicated : nullptr;
    allocate.allocationSize = info.size;
    allocate.memoryTypeIndex = type;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    // Each try imports afresh: a duplicated fd that Vulkan takes on success, or the caller's NT handle.
    MEMBRIDGE_TRY_ASSIGN(last, detail::allocate_imported(*state, handle, allocate, memory));
    if (last == VK_SUCCESS) {
      imported_memory out;
      out.context_ = state;
      out.memory_ = memory;
      out.size_ = info.size;
      out.type_ = type;
      out.dedicated_ = info.dedicated;
      return out;
    }
    tried += (tried.empty() ? "type " : ", type ") + std::to_string(type) + ": " +
             std::string(vulkan::detail::result_name(last));
    if (last != VK_ERROR_INVALID_EXTERNAL_HANDLE && last != VK_ERROR_OUT_OF_DEVICE_MEMORY) break;
  }
  auto e = vulkan::detail::make_error(last, "vkAllocateMemory",
                                      std::string("importing an ") + detail::handle_name + " of " + std::to_string(info.size) +
                                          " bytes (" + tried + ")");
  if (last == VK_ERROR_INVALID_EXTERNAL_HANDLE)
    e.add_context(std::string("Vulkan rejected the handle: not an ") + detail::handle_name +
                  " export of this GPU's memory, or the size is wrong");
  return e;
}

imported_memory::imported_memory(imported_memory&& other) noexcept
    : context_(std::move(other.context_)),
      memory_(std::exchange(other.memory_, VK_NULL_HANDLE)),
      size_(std::exchange(other.size_, 0)),
      type_(other.type_),
      dedicated_(other.dedicated_) {}

imported_memory& imported_memory::operator=(imported_memory&& other) noexcept {
  if (this != &other) {
    reset();
    context_ = std::move(other.context_);
    memory_ = std::exchange(other.memory_, VK_NULL_HANDLE);
    size_ = std::exchange(other.size_, 0);
    type_ = other.type_;
    dedicated_ = other.dedicated_;
  }
  return *this;
}

imported_memory::~imported_memory() { reset(); }

void imported_memory::reset() noexcept {
  if (memory_ != VK_NULL_HANDLE && context_) context_->table.vkFreeMemory(context_->device, memory_, nullptr);
  memory_ = VK_NULL_HANDLE;
  size_ = 0;
  context_.reset();
}

}  // namespace membridge::vulkan
