// membridge/core/log.hpp: where membridge reports what it cannot return (failures in destructors,
// warnings, diagnostics).
#pragma once

#include <cstdint>
#include <string_view>

namespace membridge {

/// Severity of a log message.
enum class log_level : std::uint8_t {
  debug = 0,    ///< Step-by-step diagnostics.
  info = 1,     ///< Noteworthy events (a driver loaded, a buffer grew).
  warning = 2,  ///< Something went wrong but was handled (a close failed in a destructor).
  error = 3,    ///< A failure that could not be returned to a caller.
};

/// Short name of a level, e.g. "warning".
[[nodiscard]] std::string_view to_string(log_level level) noexcept;

/// A log sink. Called from whichever thread logs, possibly concurrently; must not throw and must not
/// call back into membridge. `message` is valid only during the call.
using log_sink = void (*)(log_level level, std::string_view message, void* user_data) noexcept;

/// Installs `sink` (with `user_data`) for all later messages at or above the current minimum level.
/// Passing nullptr restores the default sink, which writes to stderr. Thread-safe.
/// Ownership: membridge stores `user_data` and never frees it; keep it alive until the sink is replaced.
void set_log_sink(log_sink sink, void* user_data = nullptr) noexcept;

/// Messages below `minimum` are dropped (default: warning). Thread-safe.
void set_log_level(log_level minimum) noexcept;

/// The current minimum level.
[[nodiscard]] log_level get_log_level() noexcept;

/// Sends `message` to the installed sink if `level` is at or above the minimum. Thread-safe.
void log(log_level level, std::string_view message) noexcept;

}  // namespace membridge
