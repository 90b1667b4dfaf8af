// src/gl/posix/egl.hpp: the EGL functions headless_context calls, loaded from a libEGL opened at run
// time (never EGL prototypes: the gl target builds with EGL_EGL_PROTOTYPES=0), and the state one
// headless context owns. Private to the gl module.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/gl/headless_context.hpp>
#include <membridge/os/dynamic_library.hpp>

#include <EGL/egl.h>
#include <EGL/eglext.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace membridge::gl::detail {

// The EGL entry points headless_context calls, once: X(PFN type, Name) for eglName. Core EGL 1.4 ones
// come from the library (all required), the others through eglGetProcAddress (null when not offered).
#define MEMBRIDGE_EGL_CORE_FUNCTIONS(X)                   \
  X(PFNEGLGETPROCADDRESSPROC, GetProcAddress)             \
  X(PFNEGLGETERRORPROC, GetError)                         \
  X(PFNEGLQUERYSTRINGPROC, QueryString)                   \
  X(PFNEGLINITIALIZEPROC, Initialize)                     \
  X(PFNEGLTERMINATEPROC, Terminate)                       \
  X(PFNEGLBINDAPIPROC, BindAPI)                           \
  X(PFNEGLCHOOSECONFIGPROC, ChooseConfig)                 \
  X(PFNEGLCREATECONTEXTPROC, CreateContext)               \
  X(PFNEGLDESTROYCONTEXTPROC, DestroyContext)             \
  X(PFNEGLCREATEPBUFFERSURFACEPROC, CreatePbufferSurface) \
  X(PFNEGLDESTROYSURFACEPROC, DestroySurface)             \
  X(PFNEGLMAKECURRENTPROC, MakeCurrent)                   \
  X(PFNEGLGETCURRENTCONTEXTPROC, GetCurrentContext)       \
  X(PFNEGLGETCURRENTDISPLAYPROC, GetCurrentDisplay)       \
  X(PFNEGLGETCURRENTSURFACEPROC, GetCurrentSurface)
// EGL_EXT_device_enumeration / EGL_EXT_device_query / EGL_EXT_platform_base.
#define MEMBRIDGE_EGL_EXTENSION_FUNCTIONS(X)                \
  X(PFNEGLQUERYDEVICESEXTPROC, QueryDevicesEXT)             \
  X(PFNEGLQUERYDEVICESTRINGEXTPROC, QueryDeviceStringEXT)   \
  X(PFNEGLQUERYDEVICEATTRIBEXTPROC, QueryDeviceAttribEXT)   \
  X(PFNEGLGETPLATFORMDISPLAYEXTPROC, GetPlatformDisplayEXT)

/// The EGL entry points (MEMBRIDGE_EGL_CORE_FUNCTIONS and MEMBRIDGE_EGL_EXTENSION_FUNCTIONS).
struct egl_functions {
#define MEMBRIDGE_EGL_MEMBER(type, name) type name = nullptr;
  MEMBRIDGE_EGL_CORE_FUNCTIONS(MEMBRIDGE_EGL_MEMBER)
  MEMBRIDGE_EGL_EXTENSION_FUNCTIONS(MEMBRIDGE_EGL_MEMBER)
#undef MEMBRIDGE_EGL_MEMBER
};

/// An opened libEGL, its functions and its client extensions. Shared by the contexts made from it,
/// so the library stays loaded while any of them lives.
struct egl_library {
  os::dynamic_library library;
  egl_functions fn;
  std::string client_extensions;  ///< eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS).

  /// True when the client extension `name` is offered.
  [[nodiscard]] bool has_client_extension(std::string_view name) const noexcept;
  /// True when EGL devices can be listed and opened (EGL_EXT_device_enumeration + EGL_EXT_platform_device).
  [[nodiscard]] bool can_enumerate_devices() const noexcept;
  /// True when Mesa's surfaceless platform is offered (EGL_MESA_platform_surfaceless).
  [[nodiscard]] bool has_surfaceless_platform() const noexcept;
};

/// Opens `library` and loads its functions. Errors: driver_unavailable when it cannot be opened or
/// lacks a core EGL function. Ownership: the result holds one reference on the library.
[[nodiscard]] result<std::shared_ptr<const egl_library>> load_egl(const std::string& library);

/// True when the space-separated extension list `list` holds `name`.
[[nodiscard]] bool has_extension(std::string_view list, std::string_view name) noexcept;

/// An error for the failed EGL call `call`: its eglGetError() code and name, with `context`.
[[nodiscard]] error egl_error(const egl_functions& fn, errc code, const char* call, std::string context = {});

/// The EGL devices eglQueryDevicesEXT lists (empty when it is not offered or fails).
[[nodiscard]] std::vector<EGLDeviceEXT> query_devices(const egl_library& egl);

/// What an EGL device says about itself before a context is made on it: index, extensions, CUDA
/// device (EGL_NV_device_cuda) and DRM node. `uuid`, `renderer` and `error` stay empty.
[[nodiscard]] egl_device_info describe_device(const egl_library& egl, EGLDeviceEXT device, int index);

/// The OpenGL context current on the calling thread (with its display and surfaces), so code that
/// makes contexts of its own current for a while can put the caller's back.
struct current_binding {
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLSurface draw = EGL_NO_SURFACE;
  EGLSurface read = EGL_NO_SURFACE;
  EGLContext context = EGL_NO_CONTEXT;
};

/// Reads the calling thread's current OpenGL binding (binds EGL_OPENGL_API to ask).
[[nodiscard]] current_binding save_current(const egl_functions& fn) noexcept;

/// Makes `binding` current again (nothing when it held no context); a failure goes to the log.
void restore_current(const egl_functions& fn, const current_binding& binding) noexcept;

/// The EGL objects of one headless context: the display (initialised, counted per process so two
/// contexts on one device do not terminate each other's display), the context and the pbuffer
/// surface (EGL_NO_SURFACE when surfaceless). The destructor releases the context if it is current
/// on the calling thread, destroys context and surface, and terminates the display when this was its
/// last user. Failures go to the log.
struct egl_state {
  std::shared_ptr<const egl_library> egl;
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLContext context = EGL_NO_CONTEXT;
  EGLSurface surface = EGL_NO_SURFACE;
  egl_device_info device;

  egl_state() = default;
  egl_state(const egl_state&) = delete;
  egl_state& operator=(const egl_state&) = delete;
  ~egl_state();
};

/// Gets and initialises the display of `platform` / `native` (EGL_PLATFORM_DEVICE_EXT and an
/// EGLDeviceEXT, or EGL_PLATFORM_SURFACELESS_MESA and EGL_DEFAULT_DISPLAY), binds EGL_OPENGL_API,
/// creates a GL 4.5 core context (config-less with EGL_KHR_no_config_context + surfaceless, else a
/// pbuffer config) and makes it current (surfaceless, else on a 1x1 pbuffer).
/// Errors: driver_unavailable with the failing EGL call and its error (no display, no GL 4.5 core
/// context, no config). Ownership: the returned state owns the context, surface and a display use.
[[nodiscard]] result<std::unique_ptr<egl_state>> open_display_context(std::shared_ptr<const egl_library> egl,
                                                                      EGLenum platform, void* native);

}  // namespace membridge::gl::detail
