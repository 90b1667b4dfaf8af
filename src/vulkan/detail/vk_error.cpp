#include "vk_error.hpp"

namespace membridge::vulkan::detail {

std::string_view result_name(VkResult result) noexcept {
  switch (result) {
#define MEMBRIDGE_VK_RESULT(name) \
  case name:                      \
    return #name;
    MEMBRIDGE_VK_RESULT(VK_SUCCESS)
    MEMBRIDGE_VK_RESULT(VK_NOT_READY)
    MEMBRIDGE_VK_RESULT(VK_TIMEOUT)
    MEMBRIDGE_VK_RESULT(VK_EVENT_SET)
    MEMBRIDGE_VK_RESULT(VK_EVENT_RESET)
    MEMBRIDGE_VK_RESULT(VK_INCOMPLETE)
    MEMBRIDGE_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    MEMBRIDGE_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    MEMBRIDGE_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    MEMBRIDGE_VK_RESULT(VK_ERROR_DEVICE_LOST)
    MEMBRIDGE_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    MEMBRIDGE_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    MEMBRIDGE_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    MEMBRIDGE_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    MEMBRIDGE_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    MEMBRIDGE_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    MEMBRIDGE_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    MEMBRIDGE_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    MEMBRIDGE_VK_RESULT(VK_ERROR_UNKNOWN)
    MEMBRIDGE_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    MEMBRIDGE_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    MEMBRIDGE_VK_RESULT(VK_ERROR_FRAGMENTATION)
    MEMBRIDGE_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    MEMBRIDGE_VK_RESULT(VK_ERROR_SURFACE_LOST_KHR)
    MEMBRIDGE_VK_RESULT(VK_ERROR_OUT_OF_DATE_KHR)
    MEMBRIDGE_VK_RESULT(VK_SUBOPTIMAL_KHR)
#undef MEMBRIDGE_VK_RESULT
    default:
      return "VK_RESULT_UNKNOWN";
  }
}

errc category_of(VkResult result) noexcept {
  switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
    case VK_ERROR_FRAGMENTATION:
      return errc::out_of_memory;
    case VK_ERROR_DEVICE_LOST:
      return errc::device_lost;
    case VK_ERROR_INVALID_EXTERNAL_HANDLE:
      return errc::invalid_argument;
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
    case VK_ERROR_LAYER_NOT_PRESENT:
      return errc::unsupported;
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_INITIALIZATION_FAILED:
      return errc::driver_unavailable;
    case VK_TIMEOUT:
      return errc::timeout;
    default:
      return errc::internal;
  }
}

error make_error(VkResult result, std::string call, std::string context, std::source_location where) {
  return error::from_native(category_of(result), error_source::vulkan, static_cast<std::int64_t>(result),
                            std::string(result_name(result)), std::move(call), std::move(context), where);
}

}  // namespace membridge::vulkan::detail
