#include <membridge/vulkan/shared_image.hpp>

#include "detail/context_state.hpp"
#include "detail/external_handle.hpp"
#include "detail/vk_error.hpp"

#include <string>

namespace membridge::vulkan {

namespace {

constexpr const char* requirements_call = "shared_image::requirements";
constexpr const char* import_call = "shared_image::import";

image_info resolved(const image_info& info) {
  image_info out = info;
  if (out.usage == 0)
    out.usage = out.tiling == VK_IMAGE_TILING_LINEAR ? default_linear_image_usage : default_optimal_image_usage;
  return out;
}

struct format_support {
  bool importable = false;
  bool dedicated_only = false;
};

result<format_support> query_support(const detail::context_state& s, const image_info& info, const char* call) {
  if (info.width == 0 || info.height == 0)
    return error(errc::invalid_argument, call, "the image extent must be at least 1x1");
  VkPhysicalDeviceExternalImageFormatInfo external{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_IMAGE_FORMAT_INFO};
  external.handleType = detail::memory_handle_type;
  VkPhysicalDeviceImageFormatInfo2 format{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_FORMAT_INFO_2};
  format.pNext = &external;
  format.format = info.format;
  format.type = VK_IMAGE_TYPE_2D;
  format.tiling = info.tiling;
  format.usage = info.usage;
  VkExternalImageFormatProperties external_props{VK_STRUCTURE_TYPE_EXTERNAL_IMAGE_FORMAT_PROPERTIES};
  VkImageFormatProperties2 props{VK_STRUCTURE_TYPE_IMAGE_FORMAT_PROPERTIES_2};
  props.pNext = &external_props;
  const VkResult rc = s.instance_fns.vkGetPhysicalDeviceImageFormatProperties2(s.physical_device, &format, &props);
  if (rc == VK_ERROR_FORMAT_NOT_SUPPORTED)
    return error(errc::unsupported, call,
                 "format " + std::to_string(info.format) + " with this tiling and usage cannot be imported from an " +
                     detail::handle_name);
  if (rc != VK_SUCCESS) return vulkan::detail::make_error(rc, "vkGetPhysicalDeviceImageFormatProperties2");
  const auto& limits = props.imageFormatProperties.maxExtent;
  if (info.width > limits.width || info.height > limits.height)
    return error(errc::invalid_argument, call,
                 "extent " + std::to_string(info.width) + "x" + std::to_string(info.height) + " exceeds the limit " +
                     std::to_string(limits.width) + "x" + std::to_string(limits.height));
  const VkExternalMemoryFeatureFlags f = external_props.externalMemoryProperties.externalMemoryFeatures;
  if ((f & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT) == 0)
    return error(errc::unsupported, call, std::string("the driver cannot import ") + detail::handle_name + "s for this image");
  return format_support{true, (f & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT) != 0};
}

result<VkImage> create_image(const detail::context_state& s, const image_info& info) {
  VkExternalMemoryImageCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO};
  external.handleTypes = detail::memory_handle_type;
  VkImageCreateInfo ici{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  ici.pNext = &external;
  ici.imageType = VK_IMAGE_TYPE_2D;
  ici.format = info.format;
  ici.extent = {info.width, info.height, 1};
  ici.mipLevels = 1;
  ici.arrayLayers = 1;
  ici.samples = VK_SAMPLE_COUNT_1_BIT;
  ici.tiling = info.tiling;
  ici.usage = info.usage;
  ici.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  ici.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;  // required for external memory
  VkImage image = VK_NULL_HANDLE;
  if (const VkResult rc = s.table.vkCreateImage(s.device, &ici, nullptr, &image); rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkCreateImage", "an external-memory image");
  return image;
}

image_memory_requirements read_requirements(const detail::context_state& s, VkImage image, bool dedicated_only) {
  VkMemoryDedicatedRequirements dedicated{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_REQUIREMENTS};
  VkMemoryRequirements2 req{VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2};
  req.pNext = &dedicated;
  VkImageMemoryRequirementsInfo2 query{VK_STRUCTURE_TYPE_IMAGE_MEMORY_REQUIREMENTS_INFO_2};
  query.image = image;
  s.table.vkGetImageMemoryRequirements2(s.device, &query, &req);
  image_memory_requirements out;
  out.size = static_cast<std::size_t>(req.memoryRequirements.size);
  out.alignment = static_cast<std::size_t>(req.memoryRequirements.alignment);
  out.memory_type_bits = req.memoryRequirements.memoryTypeBits;
  out.dedicated_required = dedicated.requiresDedicatedAllocation == VK_TRUE || dedicated_only;
  return out;
}

}  // namespace

result<image_memory_requirements> shared_image::requirements(const device_context& context, const image_info& info) {
  if (!context.valid()) return error(errc::invalid_argument, requirements_call, "the device context is empty");
  const image_info full = resolved(info);
  const auto& s = *context.state();
  MEMBRIDGE_TRY_ASSIGN(const format_support support, query_support(s, full, requirements_call));
  MEMBRIDGE_TRY_ASSIGN(VkImage image, create_image(s, full));
  const auto out = read_requirements(s, image, support.dedicated_only);
  s.table.vkDestroyImage(s.device, image, nullptr);
  return out;
}

result<shared_image> shared_image::import(const device_context& context, os::borrowed_shareable_handle handle,
                                          std::size_t allocation_size, const image_info& info) {
  if (!context.valid()) return error(errc::invalid_argument, import_call, "the device context is empty");
  const auto& state = context.state();
  shared_image out;
  out.context_ = state;
  out.info_ = resolved(info);
  MEMBRIDGE_TRY_ASSIGN(const format_support support, query_support(*state, out.info_, import_call));
  MEMBRIDGE_TRY_ASSIGN(out.image_, create_image(*state, out.info_));
  const auto req = read_requirements(*state, out.image_, support.dedicated_only);
  if (allocation_size < req.size)
    return error(errc::invalid_argument, import_call,
                 "the image needs " + std::to_string(req.size) + " bytes; the allocation has " +
                     std::to_string(allocation_size));
  memory_import_info import_info;
  import_info.size = allocation_size;
  import_info.memory_type_bits = req.memory_type_bits;
  import_info.dedicated = req.dedicated_required;
  import_info.image = req.dedicated_required ? out.image_ : VK_NULL_HANDLE;
  MEMBRIDGE_TRY_ASSIGN(out.memory_, imported_memory::import(context, handle, import_info));
  if (const VkResult rc = state->table.vkBindImageMemory(state->device, out.image_, out.memory_.get(), 0);
      rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkBindImageMemory");
  if (out.info_.tiling == VK_IMAGE_TILING_LINEAR) {
    VkImageSubresource sub{VK_IMAGE_ASPECT_COLOR_BIT, 0, 0};
    VkSubresourceLayout layout{};
    state->table.vkGetImageSubresourceLayout(state->device, out.image_, &sub, &layout);
    out.layout_ = linear_layout{static_cast<std::size_t>(layout.offset), static_cast<std::size_t>(layout.rowPitch),
                                static_cast<std::size_t>(layout.size)};
  }
  return out;
}

shared_image::shared_image(shared_image&& other) noexcept
    : context_(std::move(other.context_)),
      image_(std::exchange(other.image_, VK_NULL_HANDLE)),
      memory_(std::move(other.memory_)),
      info_(other.info_),
      layout_(std::exchange(other.layout_, std::nullopt)) {}

shared_image& shared_image::operator=(shared_image&& other) noexcept {
  if (this != &other) {
    reset();
    context_ = std::move(other.context_);
    image_ = std::exchange(other.image_, VK_NULL_HANDLE);
    memory_ = std::move(other.memory_);
    info_ = other.info_;
    layout_ = std::exchange(other.layout_, std::nullopt);
  }
  return *this;
}

shared_image::~shared_image() { reset(); }

void shared_image::reset() noexcept {
  if (image_ != VK_NULL_HANDLE && context_) context_->table.vkDestroyImage(context_->device, image_, nullptr);
  image_ = VK_NULL_HANDLE;
  memory_ = imported_memory();
  layout_.reset();
  context_.reset();
}

}  // namespace membridge::vulkan
