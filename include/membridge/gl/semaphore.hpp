// membridge/gl/semaphore.hpp: a semaphore shared with Vulkan and CUDA, imported into GL.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/gl/context.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <cstdint>
#include <memory>
#include <span>

namespace membridge::gl {

/// Binary or timeline.
enum class semaphore_kind : std::uint8_t {
  binary = 0,  ///< GL_EXT_semaphore: each signal is waited once.
  timeline,    ///< GL_NV_timeline_semaphore: waits and signals carry a value.
};

/// The image layout a texture is in when GL waits / leaves it when GL signals (GL_EXT_semaphore),
/// matching the Vulkan layout the other side uses. Values are the GL enums.
enum class texture_layout : unsigned int {
  general = 0x958D,                   ///< GL_LAYOUT_GENERAL_EXT (VK_IMAGE_LAYOUT_GENERAL; CUDA access).
  color_attachment = 0x958E,          ///< GL_LAYOUT_COLOR_ATTACHMENT_EXT.
  depth_stencil_attachment = 0x958F,  ///< GL_LAYOUT_DEPTH_STENCIL_ATTACHMENT_EXT.
  depth_stencil_read_only = 0x9590,   ///< GL_LAYOUT_DEPTH_STENCIL_READ_ONLY_EXT.
  shader_read_only = 0x9591,          ///< GL_LAYOUT_SHADER_READ_ONLY_EXT.
  transfer_src = 0x9592,              ///< GL_LAYOUT_TRANSFER_SRC_EXT.
  transfer_dst = 0x9593,              ///< GL_LAYOUT_TRANSFER_DST_EXT.
};

/// A texture and its layout at a wait or signal.
struct texture_barrier {
  unsigned int texture = 0;  ///< GL texture name. Ownership: borrowed.
  texture_layout layout = texture_layout::general;  ///< Its layout.
};

/// What a wait or signal covers: the buffers and textures whose memory the other API touches.
/// GL only makes those objects' memory coherent with the other side (GL_EXT_semaphore).
struct semaphore_objects {
  std::span<const unsigned int> buffers;        ///< GL buffer names. Ownership: borrowed.
  std::span<const texture_barrier> textures;    ///< Textures with layouts.
};

/// A GL semaphore imported from an OPAQUE_FD (Linux) or OPAQUE_WIN32 NT handle (Windows) that Vulkan
/// exported (vkGetSemaphoreFdKHR / vkGetSemaphoreWin32HandleKHR; CUDA imports the same semaphore from
/// another handle of it). GL cannot export semaphores, and neither can CUDA, so the
/// semaphore comes from Vulkan (sync::frame_timeline::export_fds gives the frame timeline's fds).
///
/// wait() makes GL work submitted after it wait on the GPU; signal() signals after GL work submitted
/// before it and flushes, so the other API sees the signal. No host waits.
/// Move-only; the destructor deletes the GL name (context current).
class semaphore {
 public:
  /// Imports `handle` as a `kind` semaphore (glImportSemaphoreFdEXT / glImportSemaphoreWin32HandleEXT).
  /// Timeline: the semaphore is made with glCreateSemaphoresNV and typed GL_SEMAPHORE_TYPE_TIMELINE_NV
  /// before the import.
  /// Errors: invalid_argument for an empty handle; unsupported without GL_EXT_semaphore_fd /
  /// GL_EXT_semaphore_win32, or for a timeline without GL_NV_timeline_semaphore; the GL error of the import.
  /// Ownership: borrows `handle`; the caller keeps it. Linux: GL takes a duplicate of the fd. Windows:
  /// the NT handle itself is imported and GL never takes it: the caller closes it when it wants (e.g.
  /// right after this returns). The semaphore owns its GL name and the imported payload.
  [[nodiscard]] static result<semaphore> import(const context& context, os::borrowed_shareable_handle handle,
                                                semaphore_kind kind);

  /// An empty object.
  semaphore() noexcept = default;
  semaphore(const semaphore&) = delete;
  semaphore& operator=(const semaphore&) = delete;
  /// Takes over `other`'s semaphore; `other` becomes empty.
  semaphore(semaphore&& other) noexcept;
  /// Deletes the held semaphore, then takes over `other`'s.
  semaphore& operator=(semaphore&& other) noexcept;
  /// glDeleteSemaphoresEXT.
  ~semaphore();

  /// GL work submitted after this waits until the semaphore is signalled (timeline: reaches `value`;
  /// binary: `value` is ignored). `objects` are the buffers/textures the other API wrote, with the
  /// layouts the textures are in. Errors: invalid_argument on an empty semaphore; GL errors.
  [[nodiscard]] result<void> wait(std::uint64_t value, const semaphore_objects& objects = {}) const;
  /// Signals after GL work submitted before this (timeline: to `value`), then glFlush. `objects` are
  /// the buffers/textures GL used, with the layouts it leaves the textures in.
  [[nodiscard]] result<void> signal(std::uint64_t value, const semaphore_objects& objects = {}) const;
  /// The timeline's current value (GL_TIMELINE_SEMAPHORE_VALUE_NV). Errors: invalid_argument for a binary semaphore.
  [[nodiscard]] result<std::uint64_t> value() const;

  /// True when a semaphore is held.
  [[nodiscard]] bool valid() const noexcept { return name_ != 0; }
  /// The GL name. Ownership: owned by this object.
  [[nodiscard]] unsigned int name() const noexcept { return name_; }
  /// Binary or timeline.
  [[nodiscard]] semaphore_kind kind() const noexcept { return kind_; }

 private:
  void reset() noexcept;
  std::shared_ptr<const detail::context_state> state_;
  unsigned int name_ = 0;
  semaphore_kind kind_ = semaphore_kind::binary;
};

}  // namespace membridge::gl
