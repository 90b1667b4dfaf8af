// Test helpers for two-process tests: re-exec this test binary in a named child role with a
// socketpair, and exchange small messages carrying fds (SCM_RIGHTS) over it.
// (Test support only; the library's own channel is the ipc module's.)
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/borrowed_fd.hpp>
#include <membridge/os/unique_fd.hpp>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace membridge::testing {

/// A child role: the function a re-executed test binary runs instead of the tests. It gets the
/// arguments after the role and talks to the parent through child_socket(). Its return value is the
/// child's exit status.
using child_main = int (*)(const std::vector<std::string>& args);

/// Registers `role` at static-initialisation time: `static child_role r("name", &fn);`
struct child_role {
  child_role(const char* role, child_main fn);
};

/// If argv asks for a child role (`--membridge-child=ROLE`), runs it and returns its exit status.
std::optional<int> run_child_role_if_requested(int argc, char** argv);

/// In a child: its end of the socketpair (fd 3).
os::borrowed_fd child_socket() noexcept;

/// A child running this binary in some role. Destroying it kills (SIGKILL) and reaps it if it is
/// still running.
class child_process {
 public:
  child_process() = default;
  child_process(pid_t pid, os::unique_fd socket) noexcept : pid_(pid), socket_(std::move(socket)) {}
  child_process(child_process&& other) noexcept;
  child_process& operator=(child_process&&) = delete;
  ~child_process();

  /// The parent's end of the socketpair.
  [[nodiscard]] os::borrowed_fd socket() const noexcept { return socket_; }
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  /// Waits up to `timeout` for the child to exit; returns its exit status (128+signal if killed).
  [[nodiscard]] result<int> wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  os::unique_fd socket_;
};

/// fork + exec of /proc/self/exe with `--membridge-child=ROLE args...`; the child's socket is fd 3.
[[nodiscard]] result<child_process> spawn_child(const std::string& role, const std::vector<std::string>& args = {});

/// A received message: its bytes and the fds that came with it (owned, close-on-exec).
struct message {
  std::vector<std::byte> payload;
  std::vector<os::unique_fd> fds;
};

/// Sends one message (SOCK_SEQPACKET: one send, one receive) with up to 16 fds.
[[nodiscard]] result<void> send_message(os::borrowed_fd socket, std::span<const std::byte> payload,
                                        std::span<const os::borrowed_fd> fds = {});
/// Receives one message within `timeout`. Errors: timeout; protocol_error when the peer closed, the
/// payload is larger than `max_payload` or the fds were truncated (MSG_CTRUNC).
[[nodiscard]] result<message> receive_message(os::borrowed_fd socket, std::size_t max_payload,
                                              std::chrono::milliseconds timeout);

/// Sends a trivially copyable value as the payload.
template <class T>
result<void> send_value(os::borrowed_fd socket, const T& value, std::span<const os::borrowed_fd> fds = {}) {
  return send_message(socket, std::as_bytes(std::span<const T, 1>(&value, 1)), fds);
}

/// A child role's body for "one request and one fd in, one reply out": receives a Request (trivially
/// copyable) with one fd on child_socket() within 60 s, and sends back work(request, fd) after closing
/// the fd. Returns the role's exit status: 0; 20 when no well-formed request came; 21 when the reply
/// could not be sent.
template <class Request, class Reply>
int answer_one_request(Reply (*work)(const Request&, os::borrowed_fd)) {
  auto in = receive_message(child_socket(), sizeof(Request), std::chrono::seconds(60));
  if (!in || in->fds.size() != 1 || in->payload.size() != sizeof(Request)) return 20;
  Request q{};
  std::memcpy(&q, in->payload.data(), sizeof q);
  const Reply r = work(q, in->fds[0]);
  in->fds.clear();  // close the received fd before answering
  return send_value(child_socket(), r) ? 0 : 21;
}

}  // namespace membridge::testing
