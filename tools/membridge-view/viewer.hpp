// tools/membridge-view/viewer.hpp: membridge-view's run (connect, import, draw, statistics, PNG).
#pragma once

#include "options.hpp"

#include <membridge/core/result.hpp>

#include <ostream>

namespace apps {
class window_system;
}

namespace membridge_view {

/// Runs the viewer: windowed when `windows` is given, else headless. Prints progress, the
/// buffers it cannot draw, one statistics line and one JSON line to `out`.
/// Errors: connecting (os_error when nobody publishes the name); unsupported when no published
/// buffer can be drawn; timeout when fewer frames than asked were drawn; Vulkan errors.
/// Ownership: borrows `windows` (must outlive the call).
[[nodiscard]] membridge::result<void> run(const view_options& options, std::ostream& out,
                                          apps::window_system* windows);

/// Ends the run after the current frame (signal handlers).
void request_stop() noexcept;

}  // namespace membridge_view
