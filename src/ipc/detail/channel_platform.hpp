// Private: what the shared part of ipc::channel / ipc::listener (src/ipc/channel.cpp) needs from
// the platform's transport: its state types and the few words and checks that differ.
#pragma once

#include <membridge/ipc/channel.hpp>

#if defined(_WIN32)
#include "../win32/pipe_detail.hpp"
#else
#include "../posix/socket_detail.hpp"
#endif

#include <cstddef>

namespace membridge::ipc::detail {

/// What a message carries, for error messages: "fds" / "handles", "fd" / "handle".
extern const char* const handle_noun;
extern const char* const handle_noun_one;

/// The platform's own check of a send carrying `handle_count` handles (Windows: only a listener's
/// channel sends handles). Errors: invalid_argument. `platform` may be null (Linux).
[[nodiscard]] result<void> check_platform_send(const channel_platform* platform, std::size_t handle_count);

}  // namespace membridge::ipc::detail
