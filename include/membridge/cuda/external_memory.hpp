// membridge/cuda/external_memory.hpp: memory another API shares as an opaque fd, imported into CUDA
// and mapped as a CUDA array (the CUDA side of an optimal-tiling image).
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace membridge::cuda {

namespace detail {
struct external_memory_state;
struct mapped_array_state;
}  // namespace detail

class mapped_array;
class surface_object;

/// The shape of a 2D CUDA array mapped from external memory (CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC
/// with one level). For a Vulkan VK_FORMAT_R8G8B8A8_* image: {CU_AD_FORMAT_UNSIGNED_INT8, 4, width, height}.
struct array_format {
  CUarray_format format = CU_AD_FORMAT_UNSIGNED_INT8;  ///< Channel type (CU_AD_FORMAT_*).
  unsigned channels = 4;                               ///< Channels per texel: 1, 2 or 4.
  std::size_t width = 0;                               ///< Width in texels (> 0).
  std::size_t height = 0;                              ///< Height in texels (> 0; 2D arrays only).
  std::size_t offset = 0;                              ///< Byte offset of the image in the imported memory.
  bool surface_load_store = true;  ///< CUDA_ARRAY3D_SURFACE_LDST: kernels read and write it through a surface object.
  /// CUDA_ARRAY3D_COLOR_ATTACHMENT: CUDA's documentation requires it when the graphics API binds the
  /// image as a colour target (a Vulkan image with VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT).
  bool color_attachment = false;
};

/// "2048x2048 x 4 CU_AD_FORMAT_UNSIGNED_INT8 at offset 0", for messages.
[[nodiscard]] std::string to_string(const array_format& format);

/// Bytes per channel of a plain CUarray_format: 1 (8-bit), 2 (16-bit, HALF) or 4 (32-bit, FLOAT); 0 for
/// the packed, block-compressed and YUV formats, whose footprint only the driver checks. map_array()
/// refuses an array whose width * height * channels * channel_bytes() passes the imported size.
[[nodiscard]] std::size_t channel_bytes(CUarray_format format) noexcept;

/// Memory another API (Vulkan, GL, another process's CUDA) exported as an opaque shareable handle (a
/// POSIX fd on Linux, an NT handle on Windows), imported with cuImportExternalMemory
/// (CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD / _OPAQUE_WIN32) into the device's primary context.
///
/// Its use here: the CUDA side of an optimal-tiling Vulkan image. The image's bytes lie in the driver's
/// tiled layout, which kernels cannot address as rows; map_array() asks CUDA for an array over the same
/// memory in the layout CUDA gives arrays of that shape, and kernels reach it through a surface object.
/// Whether that layout is the one the Vulkan driver chose for the image is the driver's business: the
/// gpu tier checks it for RGBA8 images on VMM memory (see docs/ownership.md).
///
/// Move-only. The import is shared with every mapped_array made from it: destroying this object
/// drops its share, and cuDestroyExternalMemory runs when the last array is gone too, so arrays can
/// never outlive the memory they view. Nothing waits for the GPU: finish work that uses the arrays first.
class external_memory {
 public:
  /// Imports `fd`, an opaque fd (Windows: NT handle) for an allocation of `size` bytes (e.g. a growable_buffer chunk's
  /// export_chunk() fd and size, or vkGetMemoryFdKHR's fd and the allocation's size). `dedicated` must be
  /// true when the exporter made a dedicated allocation (CUDA_EXTERNAL_MEMORY_DEDICATED).
  /// Ownership: `fd` is borrowed and never closed by membridge. Linux: membridge duplicates it
  /// (F_DUPFD_CLOEXEC) and gives the duplicate to cuImportExternalMemory, which owns it on success; a
  /// failure closes the duplicate. Windows: CUDA never takes ownership of an NT handle, so the caller's
  /// handle is passed as it is and stays the caller's to close. The returned object owns the import.
  /// Errors: invalid_argument for an empty device or fd, size 0, or an fd CUDA rejects
  /// (CUDA_ERROR_INVALID_VALUE / CUDA_ERROR_UNKNOWN: not importable memory, or smaller than `size`);
  /// unsupported when the driver cannot import it (CUDA_ERROR_NOT_SUPPORTED); out_of_memory, os_error
  /// as the driver says.
  [[nodiscard]] static result<external_memory> import(const device& dev, os::borrowed_shareable_handle fd,
                                                      std::size_t size,
                                                      bool dedicated = false);

  /// An empty object (no import).
  external_memory() noexcept = default;
  external_memory(const external_memory&) = delete;
  external_memory& operator=(const external_memory&) = delete;
  /// Takes over `other`'s share of the import; `other` becomes empty.
  external_memory(external_memory&& other) noexcept;
  /// Drops the held share, then takes over `other`'s.
  external_memory& operator=(external_memory&& other) noexcept;
  /// Drops this object's share; the import is destroyed with the last share (failures are logged).
  ~external_memory();

  /// Maps the memory as a one-level 2D CUDA array of `format` at `format.offset`
  /// (cuExternalMemoryGetMappedMipmappedArray, then cuMipmappedArrayGetLevel(0)).
  /// Ownership: the returned mapped_array owns the array and shares the import, which stays alive while it does.
  /// Errors: invalid_argument for an empty object, zero extent, channels other than 1/2/4, or an image
  /// that cannot fit (offset + width * height * texel bytes > size(); the driver checks the tiled
  /// footprint beyond that); unsupported when the driver cannot map this memory as an array.
  [[nodiscard]] result<mapped_array> map_array(const array_format& format) const;

  /// Drops this object's share now; the object becomes empty.
  void reset() noexcept;

  /// The CUDA handle. Ownership: owned by the shared import; do not destroy it.
  [[nodiscard]] CUexternalMemory native() const noexcept;
  /// The size given to import().
  [[nodiscard]] std::size_t size() const noexcept;
  /// Whether it was imported as a dedicated allocation.
  [[nodiscard]] bool dedicated() const noexcept;
  /// True when an import is held.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

 private:
  std::shared_ptr<const detail::external_memory_state> state_;
};

/// A CUDA array over external memory (a CUmipmappedArray with one level, and that level's CUarray).
///
/// Move-only. Owns the mipmapped array (cuMipmappedArrayDestroy) and shares it with every
/// surface_object made from it; shares the import it came from. The driver calls run in the safe
/// order whatever order the C++ objects go in: surface objects, then the array, then the import.
class mapped_array {
 public:
  /// An empty object.
  mapped_array() noexcept = default;
  mapped_array(const mapped_array&) = delete;
  mapped_array& operator=(const mapped_array&) = delete;
  /// Takes over `other`'s array; `other` becomes empty.
  mapped_array(mapped_array&& other) noexcept;
  /// Drops the held array, then takes over `other`'s.
  mapped_array& operator=(mapped_array&& other) noexcept;
  /// Drops this object's share; the array is destroyed with the last share (failures are logged).
  ~mapped_array();

  /// Level 0 as a CUarray (for cuMemcpy2D/3D, cudaMemcpy2DToArray, or a texture object).
  /// Ownership: owned by the mipmapped array; valid while this object (or a surface made from it) lives.
  [[nodiscard]] CUarray level0() const noexcept;
  /// The mipmapped array. Ownership: owned by this object's shared state; do not destroy it.
  [[nodiscard]] CUmipmappedArray native() const noexcept;
  /// The format it was mapped with.
  [[nodiscard]] const array_format& format() const noexcept;

  /// A surface object on level 0, for surf2Dread / surf2Dwrite in kernels (x in bytes: texel x of
  /// an RGBA8 array is at x * 4).
  /// Ownership: the returned object owns the surface object and shares this array, which stays alive while it does.
  /// Errors: invalid_argument for an empty object or an array mapped without surface_load_store.
  [[nodiscard]] result<surface_object> make_surface() const;

  /// Drops this object's share now; the object becomes empty.
  void reset() noexcept;
  /// True when an array is held.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

 private:
  friend class external_memory;
  explicit mapped_array(std::shared_ptr<const detail::mapped_array_state> state) noexcept;

  std::shared_ptr<const detail::mapped_array_state> state_;
};

/// A CUDA surface object on a mapped_array's level 0 (CUsurfObject; the same value as the runtime's
/// cudaSurfaceObject_t, so pass native() straight to a kernel).
///
/// Move-only; destruction destroys it (cuSurfObjectDestroy) and then drops its share of the array.
/// Kernels that use it must have finished first.
class surface_object {
 public:
  /// An empty object.
  surface_object() noexcept = default;
  surface_object(const surface_object&) = delete;
  surface_object& operator=(const surface_object&) = delete;
  /// Takes over `other`'s surface object; `other` becomes empty.
  surface_object(surface_object&& other) noexcept;
  /// Destroys the held surface object, then takes over `other`'s.
  surface_object& operator=(surface_object&& other) noexcept;
  /// Destroys the surface object (failures are logged).
  ~surface_object();

  /// The handle to pass to kernels (as cudaSurfaceObject_t). Ownership: owned by this object.
  [[nodiscard]] CUsurfObject native() const noexcept { return surface_; }
  /// Destroys the surface object now; the object becomes empty.
  void reset() noexcept;
  /// True when a surface object is held.
  [[nodiscard]] bool valid() const noexcept { return array_ != nullptr; }

 private:
  friend class mapped_array;
  surface_object(std::shared_ptr<const detail::mapped_array_state> array, CUsurfObject surface) noexcept;

  std::shared_ptr<const detail::mapped_array_state> array_;
  CUsurfObject surface_ = 0;
};

}  // namespace membridge::cuda
