// membridge/gl/headless_context.hpp: an OpenGL 4.5 core context without a window (EGL), on the GPU
// that matches a CUDA device, for samples, tests, tools and headless renderers. Linux only: on
// Windows create() and list_devices() answer errc::unsupported (no EGL on NVIDIA's Windows drivers;
// make the context with GLFW or SDL and use context::adopt_current_wgl()).
#pragma once

#include <membridge/core/device_uuid.hpp>
#include <membridge/core/result.hpp>
#include <membridge/gl/context.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace membridge::gl {

namespace detail {
struct egl_state;
}  // namespace detail

/// Options for headless_context::create().
struct headless_options {
  /// Pick the EGL device whose GL context reports this GL_DEVICE_UUID_EXT (e.g. the CUDA device's
  /// UUID). On a VM there is no DRM node to match, so devices are matched by UUID (or by CUDA device
  /// number through EGL_NV_device_cuda). Empty: the first device that can make a GL 4.5 context.
  std::optional<device_uuid> uuid;
  /// Alternatively, the CUDA device ordinal (EGL_CUDA_DEVICE_NV); used when `uuid` is empty.
  std::optional<int> cuda_device;
  /// Also try Mesa's surfaceless platform (EGL_MESA_platform_surfaceless: llvmpipe in CI) when no EGL
  /// device matches.
  bool allow_software = false;
  /// The EGL library to dlopen.
  std::string library = "libEGL.so.1";
};

/// One EGL device as seen when choosing (for diagnostics and membridge-info).
struct egl_device_info {
  int index = 0;                     ///< Position in eglQueryDevicesEXT's list (-1: Mesa surfaceless).
  std::string extensions;            ///< eglQueryDeviceStringEXT(EGL_EXTENSIONS).
  std::optional<int> cuda_device;    ///< EGL_CUDA_DEVICE_NV, when EGL_NV_device_cuda is offered.
  std::string drm_device;            ///< EGL_DRM_DEVICE_FILE_EXT (often empty on a VM).
  std::optional<device_uuid> uuid;   ///< The GL_DEVICE_UUID_EXT of a context made on it.
  std::string renderer;              ///< GL_RENDERER of that context.
  std::string error;                 ///< Why no GL 4.5 context could be made on it (empty when one was).
};

/// An EGL display + GL 4.5 core context with no surface (EGL_KHR_surfaceless_context; a 1x1 pbuffer
/// where that is missing), on the chosen device. Render into framebuffer objects.
///
/// libEGL is loaded at run time (no link dependency). create() leaves the context current on the
/// calling thread and adopts it (context()). Move-only; the destructor releases the context from the
/// calling thread if current, destroys it and terminates the display. Destroy every GL object made
/// from it first, with the context current.
class headless_context {
 public:
  /// Loads libEGL, enumerates EGL devices (EGL_EXT_device_enumeration + EGL_EXT_platform_device), makes
  /// a GL 4.5 core context on the one that matches `options`, makes it current and adopts it.
  /// Errors: driver_unavailable when libEGL or EGL_EXT_platform_device is missing, or no device can
  /// make a GL 4.5 context; invalid_argument when no device matches options.uuid / cuda_device (the
  /// message lists what was found); the errors of context::adopt_current.
  /// Ownership: the returned object owns the EGL display, context and surface.
  [[nodiscard]] static result<headless_context> create(const headless_options& options = {});

  /// Lists the EGL devices and what a GL context on each reports (makes and destroys a context per
  /// device; leaves no context current). Errors: driver_unavailable when libEGL is missing.
  [[nodiscard]] static result<std::vector<egl_device_info>> list_devices(const std::string& library = "libEGL.so.1");

  /// An empty object.
  headless_context() noexcept;
  headless_context(const headless_context&) = delete;
  headless_context& operator=(const headless_context&) = delete;
  /// Takes over `other`'s EGL objects; `other` becomes empty.
  headless_context(headless_context&& other) noexcept;
  /// Destroys this object's EGL objects, then takes over `other`'s.
  headless_context& operator=(headless_context&& other) noexcept;
  /// Releases and destroys the context, terminates the display.
  ~headless_context();

  /// True when a context is held.
  [[nodiscard]] bool valid() const noexcept { return egl_ != nullptr; }
  /// The adopted GL context (function table, capabilities).
  [[nodiscard]] const context& gl() const noexcept { return context_; }
  /// Makes the context current on the calling thread. Errors: internal with the EGL error.
  [[nodiscard]] result<void> make_current() const;
  /// Releases the context from the calling thread (so another thread can make it current).
  [[nodiscard]] result<void> release_current() const;
  /// eglGetProcAddress of the loaded libEGL (for code that loads GL functions of its own).
  [[nodiscard]] get_proc_address_fn get_proc_address() const noexcept;
  /// Which device was chosen.
  [[nodiscard]] const egl_device_info& device() const noexcept;

 private:
  std::unique_ptr<detail::egl_state> egl_;
  context context_;
};

}  // namespace membridge::gl
