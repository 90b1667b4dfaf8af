// Private (Windows): adopting the WGL context current on this thread. wglGetProcAddress gives
// only extension and GL 1.2+ entry points (and, on some drivers, 1, 2, 3 or -1 for unknown names);
// GL 1.0/1.1 functions such as glGetString are opengl32.dll's own exports.
#pragma once

#include "../detail/functions.hpp"

#include <windows.h>

namespace membridge::gl::detail {

/// The WGL entry points adoption calls (opengl32.dll's; tests pass fakes).
struct wgl_entry_points {
  HGLRC(WINAPI* GetCurrentContext)() = nullptr;             ///< wglGetCurrentContext.
  PROC(WINAPI* GetProcAddress)(LPCSTR name) = nullptr;      ///< wglGetProcAddress.
};

/// The loader of a WGL context: `wgl.GetProcAddress`, then `fallback` (opengl32.dll's exports) for
/// the names it does not give. Ownership: `fallback` is copied into the loader.
[[nodiscard]] proc_loader wgl_loader(const wgl_entry_points& wgl, proc_loader fallback);

/// context::adopt_current_wgl over given entry points: refuses when no WGL context is current, then
/// adopts with wgl_loader(wgl, fallback). `library` is kept with the context's state.
/// Errors: invalid_argument when wgl.GetCurrentContext answers null; as context::adopt_current.
/// Ownership: borrows the current context; keeps `library` loaded while the context's objects live.
[[nodiscard]] result<context> adopt_wgl(const wgl_entry_points& wgl, const proc_loader& fallback,
                                        const adopt_options& options, os::dynamic_library library);

}  // namespace membridge::gl::detail
