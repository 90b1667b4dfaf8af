// membridge/vulkan/shared_image.hpp: a VkImage over memory another API exported (a CUDA VMM chunk).
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/shareable_handle.hpp>
#include <membridge/vulkan/device_context.hpp>
#include <membridge/vulkan/imported_memory.hpp>

#include <vulkan/vulkan_core.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace membridge::vulkan {

/// Usage for an optimal-tiling shared image unless the caller says otherwise.
inline constexpr VkImageUsageFlags default_optimal_image_usage =
    VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_SAMPLED_BIT |
    VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT;
/// Usage for a linear-tiling shared image (drivers allow little more than copies for linear images).
inline constexpr VkImageUsageFlags default_linear_image_usage =
    VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;

/// A 2D image's shape.
struct image_info {
  VkFormat format = VK_FORMAT_R8G8B8A8_UNORM;  ///< Texel format.
  std::uint32_t width = 0;                     ///< Width in texels (> 0).
  std::uint32_t height = 0;                    ///< Height in texels (> 0).
  VkImageTiling tiling = VK_IMAGE_TILING_OPTIMAL;  ///< OPTIMAL (driver layout) or LINEAR (row-major, pitched).
  VkImageUsageFlags usage = 0;                 ///< 0 means the default usage for the tiling.
};

/// How much memory an image needs; allocate at least `size` bytes (rounded to CUDA's granularity).
struct image_memory_requirements {
  std::size_t size = 0;            ///< Bytes the image occupies.
  std::size_t alignment = 0;       ///< Required alignment of the memory offset.
  std::uint32_t memory_type_bits = 0;  ///< Memory types the image accepts.
  bool dedicated_required = false; ///< The driver requires a dedicated import.
};

/// Where texels of a linear image lie in its memory (CUDA writes texel (x, y) at
/// offset + y * row_pitch + x * texel_size).
struct linear_layout {
  std::size_t offset = 0;     ///< Byte offset of texel (0, 0).
  std::size_t row_pitch = 0;  ///< Bytes from one row to the next.
  std::size_t size = 0;       ///< Bytes of the image's subresource.
};

/// A 2D VkImage bound to imported memory. It starts in VK_IMAGE_LAYOUT_UNDEFINED, as Vulkan requires for
/// external-memory images: the first barrier must come from UNDEFINED. Moving a linear image from
/// UNDEFINED to GENERAL keeps the bytes (drivers do not touch linear memory), so CUDA may write first.
///
/// CUDA side: a linear image is a pitched array at `address + linear_layout().offset`; an optimal
/// image's bytes are in the driver's tiled layout and are reached from CUDA through
/// cuda::external_memory::map_array() (see docs/ownership.md).
///
/// Move-only; destruction destroys the image, then frees its memory. The GPU must be done with it.
class shared_image {
 public:
  /// What an image of this shape needs (a throwaway image is created and destroyed to ask the driver).
  /// Errors: invalid_argument for zero extent; unsupported when the format, tiling and usage cannot be
  /// imported from an opaque fd (Linux) / opaque NT handle (Windows).
  [[nodiscard]] static result<image_memory_requirements> requirements(const device_context& context,
                                                                      const image_info& info);

  /// Creates the image, imports `handle` (its allocation is `allocation_size` bytes) and binds it at offset 0.
  /// Ownership: borrows `handle`; the caller keeps it (Linux: a duplicate of the fd is imported;
  /// Windows: the NT handle itself, never taken by Vulkan; see imported_memory::import).
  /// Errors: as requirements(), plus invalid_argument when allocation_size is smaller than required.
  [[nodiscard]] static result<shared_image> import(const device_context& context, os::borrowed_shareable_handle handle,
                                                   std::size_t allocation_size, const image_info& info);

  /// An empty image.
  shared_image() noexcept = default;
  shared_image(const shared_image&) = delete;
  shared_image& operator=(const shared_image&) = delete;
  /// Takes over `other`'s image; `other` becomes empty.
  shared_image(shared_image&& other) noexcept;
  /// Destroys the held image, then takes over `other`'s.
  shared_image& operator=(shared_image&& other) noexcept;
  /// Destroys the image and frees the memory.
  ~shared_image();

  /// The image. Ownership: owned by this object.
  [[nodiscard]] VkImage get() const noexcept { return image_; }
  /// Its shape (usage resolved).
  [[nodiscard]] const image_info& info() const noexcept { return info_; }
  /// The row layout of a linear image; empty for an optimal one.
  [[nodiscard]] const std::optional<linear_layout>& layout() const noexcept { return layout_; }
  /// The imported memory behind it.
  [[nodiscard]] const imported_memory& memory() const noexcept { return memory_; }
  /// True when an image is held.
  [[nodiscard]] bool valid() const noexcept { return image_ != VK_NULL_HANDLE; }

 private:
  void reset() noexcept;

  std::shared_ptr<const detail::context_state> context_;
  VkImage image_ = VK_NULL_HANDLE;
  imported_memory memory_;
  image_info info_{};
  std::optional<linear_layout> layout_;
};

}  // namespace membridge::vulkan
