#include "egl.hpp"

#include <membridge/core/log.hpp>

#include <cstdint>
#include <map>
#include <mutex>

namespace membridge::gl::detail {

namespace {

std::string egl_error_name(EGLint code) {
  switch (code) {
    case EGL_SUCCESS: return "EGL_SUCCESS";
    case EGL_NOT_INITIALIZED: return "EGL_NOT_INITIALIZED";
    case EGL_BAD_ACCESS: return "EGL_BAD_ACCESS";
    case EGL_BAD_ALLOC: return "EGL_BAD_ALLOC";
    case EGL_BAD_ATTRIBUTE: return "EGL_BAD_ATTRIBUTE";
    case EGL_BAD_CONFIG: return "EGL_BAD_CONFIG";
    case EGL_BAD_CONTEXT: return "EGL_BAD_CONTEXT";
    case EGL_BAD_CURRENT_SURFACE: return "EGL_BAD_CURRENT_SURFACE";
    case EGL_BAD_DISPLAY: return "EGL_BAD_DISPLAY";
    case EGL_BAD_MATCH: return "EGL_BAD_MATCH";
    case EGL_BAD_NATIVE_PIXMAP: return "EGL_BAD_NATIVE_PIXMAP";
    case EGL_BAD_NATIVE_WINDOW: return "EGL_BAD_NATIVE_WINDOW";
    case EGL_BAD_PARAMETER: return "EGL_BAD_PARAMETER";
    case EGL_BAD_SURFACE: return "EGL_BAD_SURFACE";
    case EGL_CONTEXT_LOST: return "EGL_CONTEXT_LOST";
    case EGL_BAD_DEVICE_EXT: return "EGL_BAD_DEVICE_EXT";
    default: return "EGL error";
  }
}

// EGL has one display per (platform, native display) in a process: two contexts on one device share
// it, and eglTerminate would end both. So membridge counts its own uses and terminates on the last.
struct display_uses {
  std::mutex lock;
  std::map<EGLDisplay, int> count;
};

display_uses& uses() {
  static display_uses instance;
  return instance;
}

// Initialises under the lock, so a concurrent last release cannot terminate the display in between.
result<void> initialize_display(const egl_functions& fn, EGLDisplay display) {
  auto& u = uses();
  const std::lock_guard<std::mutex> guard(u.lock);
  EGLint major = 0;
  EGLint minor = 0;
  if (fn.Initialize(display, &major, &minor) == EGL_FALSE)
    return egl_error(fn, errc::driver_unavailable, "eglInitialize");
  ++u.count[display];
  return {};
}

void release_display(const egl_functions& fn, EGLDisplay display) noexcept {
  auto& u = uses();
  const std::lock_guard<std::mutex> guard(u.lock);
  const auto it = u.count.find(display);
  if (it == u.count.end() || --it->second > 0) return;
  u.count.erase(it);
  if (fn.Terminate(display) == EGL_FALSE)
    log(log_level::warning, "gl::headless_context: eglTerminate failed: " + egl_error_name(fn.GetError()));
}

template <class Fn>
void load_core(const os::dynamic_library& lib, Fn& member, const char* name, std::string& missing) {
  auto symbol = lib.symbol(name);
  if (symbol)
    member = reinterpret_cast<Fn>(*symbol);
  else
    missing += std::string(missing.empty() ? "" : ", ") + name;
}

template <class Fn>
void load_extension(const egl_functions& fn, Fn& member, const char* name) {
  member = reinterpret_cast<Fn>(fn.GetProcAddress(name));
}

egl_functions load_functions(const os::dynamic_library& lib, std::string& missing) {
  egl_functions fn;
#define MEMBRIDGE_EGL_LOAD_CORE(type, name) load_core(lib, fn.name, "egl" #name, missing);
  MEMBRIDGE_EGL_CORE_FUNCTIONS(MEMBRIDGE_EGL_LOAD_CORE)
#undef MEMBRIDGE_EGL_LOAD_CORE
  if (!missing.empty()) return fn;
#define MEMBRIDGE_EGL_LOAD_EXTENSION(type, name) load_extension(fn, fn.name, "egl" #name);
  MEMBRIDGE_EGL_EXTENSION_FUNCTIONS(MEMBRIDGE_EGL_LOAD_EXTENSION)
#undef MEMBRIDGE_EGL_LOAD_EXTENSION
  return fn;
}

std::string device_string(const egl_library& egl, EGLDeviceEXT device, EGLint name) {
  if (egl.fn.QueryDeviceStringEXT == nullptr) return {};
  const char* s = egl.fn.QueryDeviceStringEXT(device, name);
  if (s == nullptr) {
    (void)egl.fn.GetError();  // not offered for this device: not an error for membridge
    return {};
  }
  return s;
}

// A GL 4.5 core context needs a config unless the display offers config-less contexts and can be
// made current without a surface; with a config, a 1x1 pbuffer stands in for the missing surface.
result<EGLConfig> choose_config(const egl_functions& fn, EGLDisplay display, bool config_less) {
  if (config_less) return EGLConfig{EGL_NO_CONFIG_KHR};
  const EGLint attributes[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT,
                               EGL_RED_SIZE,     8,               EGL_GREEN_SIZE,      8,
                               EGL_BLUE_SIZE,    8,               EGL_NONE};
  EGLConfig config = nullptr;
  EGLint count = 0;
  if (fn.ChooseConfig(display, attributes, &config, 1, &count) == EGL_FALSE)
    return egl_error(fn, errc::driver_unavailable, "eglChooseConfig", "a pbuffer config for OpenGL");
  if (count == 0)
    return error(errc::driver_unavailable, "eglChooseConfig", "the display has no pbuffer config for OpenGL");
  return config;
}

result<void> create_context(egl_state& s, bool surfaceless, bool no_config) {
  const auto& fn = s.egl->fn;
  if (fn.BindAPI(EGL_OPENGL_API) == EGL_FALSE)
    return egl_error(fn, errc::driver_unavailable, "eglBindAPI", "EGL_OPENGL_API");
  const bool config_less = surfaceless && no_config;
  MEMBRIDGE_TRY_ASSIGN(const EGLConfig config, choose_config(fn, s.display, config_less));
  const EGLint attributes[] = {EGL_CONTEXT_MAJOR_VERSION,       4, EGL_CONTEXT_MINOR_VERSION,
                               5,                               EGL_CONTEXT_OPENGL_PROFILE_MASK,
                               EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
  s.context = fn.CreateContext(s.display, config, EGL_NO_CONTEXT, attributes);
  if (s.context == EGL_NO_CONTEXT)
    return egl_error(fn, errc::driver_unavailable, "eglCreateContext", "an OpenGL 4.5 core context");
  if (!surfaceless) {
    const EGLint size[] = {EGL_WIDTH, 1, EGL_HEIGHT, 1, EGL_NONE};
    s.surface = fn.CreatePbufferSurface(s.display, config, size);
    if (s.surface == EGL_NO_SURFACE)
      return egl_error(fn, errc::driver_unavailable, "eglCreatePbufferSurface", "a 1x1 pbuffer");
  }
  if (fn.MakeCurrent(s.display, s.surface, s.surface, s.context) == EGL_FALSE)
    return egl_error(fn, errc::driver_unavailable, "eglMakeCurrent",
                     surfaceless ? "without a surface" : "on a 1x1 pbuffer");
  return {};
}

}  // namespace

bool has_extension(std::string_view list, std::string_view name) noexcept {
  while (!list.empty()) {
    const auto space = list.find(' ');
    if (list.substr(0, space) == name) return true;
    if (space == std::string_view::npos) break;
    list.remove_prefix(space + 1);
  }
  return false;
}

bool egl_library::has_client_extension(std::string_view name) const noexcept {
  return has_extension(client_extensions, name);
}

bool egl_library::can_enumerate_devices() const noexcept {
  // EGL_EXT_device_base is EGL_EXT_device_enumeration + EGL_EXT_device_query in one name (what
  // libglvnd's libEGL advertises on NVIDIA machines).
  const bool enumeration =
      has_client_extension("EGL_EXT_device_enumeration") || has_client_extension("EGL_EXT_device_base");
  return enumeration && has_client_extension("EGL_EXT_platform_device") && fn.QueryDevicesEXT != nullptr &&
         fn.GetPlatformDisplayEXT != nullptr;
}

bool egl_library::has_surfaceless_platform() const noexcept {
  return has_client_extension("EGL_MESA_platform_surfaceless") && fn.GetPlatformDisplayEXT != nullptr;
}

result<std::shared_ptr<const egl_library>> load_egl(const std::string& library) {
  auto out = std::make_shared<egl_library>();
  MEMBRIDGE_TRY_ASSIGN(out->library, os::dynamic_library::open(library));
  std::string missing;
  out->fn = load_functions(out->library, missing);
  if (!missing.empty())
    return error(errc::driver_unavailable, "gl::headless_context", library + " lacks " + missing);
  const char* client = out->fn.QueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  if (client != nullptr)
    out->client_extensions = client;
  else
    (void)out->fn.GetError();  // EGL 1.4 without EGL_EXT_client_extensions: no extensions at all
  return std::shared_ptr<const egl_library>(std::move(out));
}

error egl_error(const egl_functions& fn, errc code, const char* call, std::string context) {
  const EGLint native = fn.GetError();
  return error::from_native(code, error_source::gl, native, egl_error_name(native), call, std::move(context));
}

std::vector<EGLDeviceEXT> query_devices(const egl_library& egl) {
  if (!egl.can_enumerate_devices()) return {};
  EGLint count = 0;
  if (egl.fn.QueryDevicesEXT(0, nullptr, &count) == EGL_FALSE || count <= 0) {
    (void)egl.fn.GetError();
    return {};
  }
  std::vector<EGLDeviceEXT> devices(static_cast<std::size_t>(count));
  if (egl.fn.QueryDevicesEXT(count, devices.data(), &count) == EGL_FALSE) {
    (void)egl.fn.GetError();
    return {};
  }
  devices.resize(static_cast<std::size_t>(count));
  return devices;
}

egl_device_info describe_device(const egl_library& egl, EGLDeviceEXT device, int index) {
  egl_device_info info;
  info.index = index;
  info.extensions = device_string(egl, device, EGL_EXTENSIONS);
  if (has_extension(info.extensions, "EGL_NV_device_cuda") && egl.fn.QueryDeviceAttribEXT != nullptr) {
    EGLAttrib cuda = -1;
    if (egl.fn.QueryDeviceAttribEXT(device, EGL_CUDA_DEVICE_NV, &cuda) == EGL_TRUE && cuda >= 0)
      info.cuda_device = static_cast<int>(cuda);
    else
      (void)egl.fn.GetError();
  }
  if (has_extension(info.extensions, "EGL_EXT_device_drm"))
    info.drm_device = device_string(egl, device, EGL_DRM_DEVICE_FILE_EXT);
  if (info.drm_device.empty() && has_extension(info.extensions, "EGL_EXT_device_drm_render_node"))
    info.drm_device = device_string(egl, device, EGL_DRM_RENDER_NODE_FILE_EXT);
  return info;
}

current_binding save_current(const egl_functions& fn) noexcept {
  current_binding b;
  if (fn.BindAPI(EGL_OPENGL_API) == EGL_FALSE) return b;
  b.context = fn.GetCurrentContext();
  if (b.context == EGL_NO_CONTEXT) return b;
  b.display = fn.GetCurrentDisplay();
  b.draw = fn.GetCurrentSurface(EGL_DRAW);
  b.read = fn.GetCurrentSurface(EGL_READ);
  return b;
}

void restore_current(const egl_functions& fn, const current_binding& binding) noexcept {
  if (binding.context == EGL_NO_CONTEXT) return;
  if (fn.BindAPI(EGL_OPENGL_API) == EGL_FALSE ||
      fn.MakeCurrent(binding.display, binding.draw, binding.read, binding.context) == EGL_FALSE)
    log(log_level::warning,
        "gl::headless_context: making the caller's context current again failed: " + egl_error_name(fn.GetError()));
}

egl_state::~egl_state() {
  if (!egl) return;
  const auto& fn = egl->fn;
  if (context != EGL_NO_CONTEXT) {
    // Releasing needs EGL_OPENGL_API bound: eglMakeCurrent(NO_CONTEXT) releases the bound API's context.
    if (fn.GetCurrentContext() == context &&
        (fn.BindAPI(EGL_OPENGL_API) == EGL_FALSE ||
         fn.MakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT) == EGL_FALSE))
      log(log_level::warning, "gl::headless_context: releasing the context failed: " + egl_error_name(fn.GetError()));
    if (fn.DestroyContext(display, context) == EGL_FALSE)
      log(log_level::warning, "gl::headless_context: eglDestroyContext failed: " + egl_error_name(fn.GetError()));
  }
  if (surface != EGL_NO_SURFACE && fn.DestroySurface(display, surface) == EGL_FALSE)
    log(log_level::warning, "gl::headless_context: eglDestroySurface failed: " + egl_error_name(fn.GetError()));
  if (display != EGL_NO_DISPLAY) release_display(fn, display);
}

result<std::unique_ptr<egl_state>> open_display_context(std::shared_ptr<const egl_library> egl, EGLenum platform,
                                                        void* native) {
  auto s = std::make_unique<egl_state>();
  s->egl = std::move(egl);
  const auto& fn = s->egl->fn;
  const EGLDisplay display = fn.GetPlatformDisplayEXT(platform, native, nullptr);
  if (display == EGL_NO_DISPLAY) return egl_error(fn, errc::driver_unavailable, "eglGetPlatformDisplayEXT");
  MEMBRIDGE_TRY(initialize_display(fn, display));
  s->display = display;  // from here on the destructor gives the display use back
  const char* extensions = fn.QueryString(display, EGL_EXTENSIONS);
  const std::string_view display_extensions = extensions != nullptr ? extensions : "";
  MEMBRIDGE_TRY(create_context(*s, has_extension(display_extensions, "EGL_KHR_surfaceless_context"),
                               has_extension(display_extensions, "EGL_KHR_no_config_context")));
  return s;
}

}  // namespace membridge::gl::detail
