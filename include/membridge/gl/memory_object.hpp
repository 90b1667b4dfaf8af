// membridge/gl/memory_object.hpp: memory exported by CUDA or Vulkan (an fd on Linux, an NT handle on
// Windows), imported into GL.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/gl/context.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <cstddef>
#include <memory>

namespace membridge::gl {

/// How to import.
struct memory_import_info {
  std::size_t size = 0;    ///< The allocation's size in bytes (what the exporter allocated).
  bool dedicated = false;  ///< GL_DEDICATED_MEMORY_OBJECT_EXT (the exporter made a dedicated allocation).
};

/// A GL memory object (GL_EXT_memory_object) made from an OPAQUE_FD (Linux) or OPAQUE_WIN32 NT handle
/// (Windows): a CUDA VMM chunk's (cuMemExportToShareableHandle) or a Vulkan allocation's. Buffers and textures are then bound to it
/// (gl::buffer, gl::texture). Move-only; the destructor deletes the GL name (context current).
class memory_object {
 public:
  /// glCreateMemoryObjectsEXT + glImportMemoryFdEXT (Linux) / glImportMemoryWin32HandleEXT (Windows).
  /// Duplicate first to keep a handle of your own.
  /// Errors: invalid_argument for an empty handle or size 0; unsupported without
  /// GL_EXT_memory_object_fd / GL_EXT_memory_object_win32; the GL error the import raised (e.g.
  /// invalid_argument when the driver refuses the handle).
  /// Ownership: consumes `handle`. Linux: GL takes the fd on success (and closes it); on failure it is
  /// closed here. Windows: GL never takes an NT handle, so membridge closes it right after the import
  /// (GL keeps the memory alive). The returned object owns the memory object.
  [[nodiscard]] static result<memory_object> import(const context& context, os::shareable_handle handle,
                                                    const memory_import_info& info);

  /// An empty object.
  memory_object() noexcept = default;
  memory_object(const memory_object&) = delete;
  memory_object& operator=(const memory_object&) = delete;
  /// Takes over `other`'s memory object; `other` becomes empty.
  memory_object(memory_object&& other) noexcept;
  /// Deletes the held memory object, then takes over `other`'s.
  memory_object& operator=(memory_object&& other) noexcept;
  /// glDeleteMemoryObjectsEXT (the memory stays alive while a buffer or texture uses it).
  ~memory_object();

  /// True when a memory object is held.
  [[nodiscard]] bool valid() const noexcept { return name_ != 0; }
  /// The GL name. Ownership: owned by this object.
  [[nodiscard]] unsigned int name() const noexcept { return name_; }
  /// Bytes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The context it was made in.
  [[nodiscard]] context gl_context() const { return context(state_); }

 private:
  void reset() noexcept;
  std::shared_ptr<const detail::context_state> state_;
  unsigned int name_ = 0;
  std::size_t size_ = 0;
};

}  // namespace membridge::gl
