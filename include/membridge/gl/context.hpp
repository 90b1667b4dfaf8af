// membridge/gl/context.hpp: an OpenGL context membridge works with (one the caller made current),
// its function table and what it offers.
#pragma once

#include <membridge/core/device_uuid.hpp>
#include <membridge/core/result.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace membridge::gl {

namespace detail {
struct context_state;
}  // namespace detail

/// A GL function pointer as loaders return it.
using proc = void (*)();
/// The loader entry point of the caller's GL context: eglGetProcAddress, glfwGetProcAddress,
/// SDL_GL_GetProcAddress (all have this type). On Windows, wglGetProcAddress alone gives no GL 1.1
/// function (glGetString...): use context::adopt_current_wgl() there, or GLFW's / SDL's loader.
using get_proc_address_fn = proc (*)(const char* name);

/// What a GL context offers membridge (read by context::adopt_current).
struct context_capabilities {
  int major = 0;            ///< GL major version (GL_MAJOR_VERSION).
  int minor = 0;            ///< GL minor version.
  std::string version;      ///< GL_VERSION.
  std::string vendor;       ///< GL_VENDOR.
  std::string renderer;     ///< GL_RENDERER.
  bool direct_state_access = false;   ///< GL 4.5 or GL_ARB_direct_state_access (required).
  bool memory_object = false;         ///< GL_EXT_memory_object (required).
  bool memory_object_fd = false;      ///< GL_EXT_memory_object_fd (required on Linux).
  bool memory_object_win32 = false;   ///< GL_EXT_memory_object_win32 (required on Windows).
  /// The platform's memory import: GL_EXT_memory_object_fd (Linux) / GL_EXT_memory_object_win32 (Windows).
  bool memory_object_handle = false;
  bool semaphore = false;             ///< GL_EXT_semaphore.
  bool semaphore_fd = false;          ///< GL_EXT_semaphore_fd: semaphores from Vulkan / CUDA fds (Linux).
  bool semaphore_win32 = false;       ///< GL_EXT_semaphore_win32: semaphores from NT handles (Windows).
  /// The platform's semaphore import: GL_EXT_semaphore_fd (Linux) / GL_EXT_semaphore_win32 (Windows).
  bool semaphore_handle = false;
  bool timeline_semaphore = false;    ///< GL_NV_timeline_semaphore: timeline values in GL.
  bool sparse_buffer = false;         ///< GL_ARB_sparse_buffer.
  bool memory_object_sparse = false;  ///< GL_NV_memory_object_sparse: imported memory committed into a sparse buffer.
  std::size_t sparse_page_size = 0;   ///< GL_SPARSE_BUFFER_PAGE_SIZE_ARB (0 without sparse buffers).
  /// Why membridge does not commit imported memory into sparse buffers on this driver although it
  /// advertises both extensions (empty when it may): on NVIDIA's GL every such commit lost the
  /// context (GL_GUILTY_CONTEXT_RESET; measured with driver 580.159.04 on an H100).
  /// adopt_options::trust_sparse_imports clears it.
  std::string sparse_growth_blocked;
  std::vector<device_uuid> device_uuids;  ///< GL_DEVICE_UUID_EXT for each of GL_NUM_DEVICE_UUIDS_EXT.
  std::optional<device_uuid> driver_uuid; ///< GL_DRIVER_UUID_EXT.
  /// True when semaphores can be imported from the platform's handles (GL_EXT_semaphore +
  /// GL_EXT_semaphore_fd on Linux, GL_EXT_semaphore_win32 on Windows).
  [[nodiscard]] bool semaphore_import() const noexcept { return semaphore && semaphore_handle; }
  /// True when growth keeps one GL buffer (GL_ARB_sparse_buffer + GL_NV_memory_object_sparse, and
  /// not blocked: sparse_growth_blocked).
  [[nodiscard]] bool sparse_growth() const noexcept {
    return sparse_buffer && memory_object_sparse && sparse_growth_blocked.empty();
  }
};

/// The GL extensions membridge needs, in the order it checks them: GL_EXT_memory_object and
/// GL_EXT_memory_object_fd (Linux) / GL_EXT_memory_object_win32 (Windows).
[[nodiscard]] const std::vector<std::string>& required_extensions();

/// Options for context::adopt_current().
struct adopt_options {
  /// Refuse the context unless one of its GL_DEVICE_UUID_EXT values equals this (e.g. the CUDA
  /// device's UUID): a GL context on another GPU cannot import that GPU's memory.
  std::optional<device_uuid> uuid;
  /// Report missing required extensions in capabilities() instead of failing (membridge-info).
  bool allow_missing_extensions = false;
  /// Use GL_NV_memory_object_sparse even where membridge saw it lose the context (NVIDIA's GL, see
  /// context_capabilities::sparse_growth_blocked), e.g. to try a newer driver.
  bool trust_sparse_imports = false;
};

/// The GL context membridge works with: a per-context function table loaded with the caller's
/// get_proc_address (no global pointers) and the capabilities read from it.
///
/// membridge never makes a context current and never destroys one: the caller (an engine, GLFW, or
/// gl::headless_context) keeps the GL context current on the calling thread whenever it calls
/// membridge's gl functions, including destructors of GL objects (buffers, textures, memory objects,
/// semaphores), which delete GL names. Objects made from a context share its table, so they stay usable
/// if this object is destroyed first.
///
/// Move-only (cheap: a shared pointer).
class context {
 public:
  /// Loads the function table of the context current on this thread and reads its version,
  /// extensions and device UUIDs.
  /// Errors: invalid_argument for a null get_proc_address or no current context (glGetString answers
  /// nothing); unsupported when GL is older than 4.5 without GL_ARB_direct_state_access or a required
  /// extension is missing (the message lists them); invalid_argument when options.uuid is set and the
  /// context's device has another UUID (the message names both).
  /// Ownership: borrows the current GL context; destroys nothing.
  [[nodiscard]] static result<context> adopt_current(get_proc_address_fn get_proc_address,
                                                     const adopt_options& options = {});

#if defined(_WIN32)
  /// Windows: adopts the WGL context current on this thread (wglGetCurrentContext), loading its
  /// function table with opengl32.dll's wglGetProcAddress, and opengl32.dll's own exports for the
  /// GL 1.0/1.1 functions wglGetProcAddress does not give.
  /// Errors: driver_unavailable when opengl32.dll or its WGL functions are missing; invalid_argument
  /// when no WGL context is current on this thread; otherwise as adopt_current().
  /// Ownership: borrows the current WGL context; destroys nothing; keeps opengl32.dll loaded while
  /// the context's objects live.
  [[nodiscard]] static result<context> adopt_current_wgl(const adopt_options& options = {});
#endif

  /// An empty context.
  context() noexcept = default;
  context(const context&) = delete;
  context& operator=(const context&) = delete;
  /// Takes over `other`'s state; `other` becomes empty.
  context(context&&) noexcept = default;
  /// Takes over `other`'s state; `other` becomes empty.
  context& operator=(context&&) noexcept = default;
  /// Drops this object's share of the state.
  ~context() = default;

  /// True when adopted.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  /// What the context offers. Precondition: valid().
  [[nodiscard]] const context_capabilities& capabilities() const noexcept;
  /// The first GL_DEVICE_UUID_EXT (the device the context renders on). Precondition: valid().
  [[nodiscard]] device_uuid uuid() const noexcept;
  /// True when one of the context's device UUIDs equals `uuid`.
  [[nodiscard]] bool is_on(const device_uuid& uuid) const noexcept;

  /// glFlush: submits queued GL work (what another API waiting on a GL semaphore signal needs).
  [[nodiscard]] result<void> flush() const;
  /// glFinish: waits on the host until queued GL work is done.
  [[nodiscard]] result<void> finish() const;

  /// The shared state (function table, capabilities), for membridge's own gl types.
  [[nodiscard]] const std::shared_ptr<const detail::context_state>& state() const noexcept { return state_; }
  /// Wraps shared state (membridge's own gl types use this to hand a context back).
  explicit context(std::shared_ptr<const detail::context_state> state) noexcept : state_(std::move(state)) {}

 private:
  std::shared_ptr<const detail::context_state> state_;
};

}  // namespace membridge::gl
