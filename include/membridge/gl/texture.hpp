// membridge/gl/texture.hpp: a GL 2D texture whose storage is imported memory.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/gl/context.hpp>
#include <membridge/gl/memory_object.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace membridge::gl {

/// How to make a texture over imported memory.
struct texture_info {
  std::uint32_t width = 0;            ///< Texels.
  std::uint32_t height = 0;           ///< Texels.
  unsigned int internal_format = 0;   ///< A sized GL format, e.g. GL_RGBA8 (0x8058) or GL_R32F (0x822E).
  std::uint32_t levels = 1;           ///< Mip levels.
  /// GL_TEXTURE_TILING_EXT: true = GL_LINEAR_TILING_EXT (rows at the exporter's row pitch, what a
  /// Vulkan linear image or CUDA code addressing texels needs), false = GL_OPTIMAL_TILING_EXT (the
  /// layout only the drivers know; match a Vulkan optimal image).
  bool linear_tiling = false;
};

/// A GL_TEXTURE_2D made with glTextureStorageMem2DEXT over a memory object. The exporter must have
/// laid the image out the way GL expects (same format, size, tiling): typically a Vulkan image on
/// the same memory, or linear rows CUDA writes. Move-only; the destructor deletes the texture name.
class texture {
 public:
  /// Imports `handle` (an fd on Linux, an NT handle on Windows; the caller keeps it) and makes the
  /// texture at `memory_offset`.
  /// Errors: invalid_argument for an empty handle, zero width/height/levels, format 0; unsupported when the
  /// driver refuses linear tiling (NVIDIA's GL, driver 580, does); the errors of memory_object::import
  /// and glTextureStorageMem2DEXT (e.g. a format the driver refuses).
  /// Ownership: borrows `handle` (a duplicate is imported: DuplicateHandle on Windows, which
  /// membridge closes after the import since GL never takes NT handles); the texture owns its memory object and GL name.
  [[nodiscard]] static result<texture> import(const context& context, os::borrowed_shareable_handle handle,
                                              const memory_import_info& memory,
                                              const texture_info& info, std::size_t memory_offset = 0);
  /// Makes a texture over an existing memory object.
  /// Errors: as import() (but no handle); unsupported for a nonzero memory_offset on Mesa llvmpipe, which
  /// ignores the offset.
  /// Ownership: shares `memory`.
  [[nodiscard]] static result<texture> create(std::shared_ptr<const memory_object> memory, const texture_info& info,
                                              std::size_t memory_offset = 0);

  /// An empty object.
  texture() noexcept = default;
  texture(const texture&) = delete;
  texture& operator=(const texture&) = delete;
  /// Takes over `other`'s texture; `other` becomes empty.
  texture(texture&& other) noexcept;
  /// Deletes the held texture, then takes over `other`'s.
  texture& operator=(texture&& other) noexcept;
  /// glDeleteTextures, then the memory object's share is dropped.
  ~texture();

  /// True when a texture is held.
  [[nodiscard]] bool valid() const noexcept { return name_ != 0; }
  /// The GL texture name. Ownership: owned by this object.
  [[nodiscard]] unsigned int name() const noexcept { return name_; }
  /// How it was made.
  [[nodiscard]] const texture_info& info() const noexcept { return info_; }
  /// The memory object it is bound to.
  [[nodiscard]] const std::shared_ptr<const memory_object>& memory() const noexcept { return memory_; }

 private:
  void reset() noexcept;
  std::shared_ptr<const memory_object> memory_;
  unsigned int name_ = 0;
  texture_info info_{};
};

}  // namespace membridge::gl
