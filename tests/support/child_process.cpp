#include "child_process.hpp"
#include "fork_exec_self.hpp"

#include "ipc/posix/scm_rights.hpp"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace membridge::testing {

namespace {

constexpr int child_fd = 3;
constexpr std::size_t max_fds = 16;
constexpr const char* role_flag = "--membridge-child=";

std::map<std::string, child_main>& roles() {
  static std::map<std::string, child_main> r;
  return r;
}

}  // namespace

child_role::child_role(const char* role, child_main fn) { roles()[role] = fn; }

std::optional<int> run_child_role_if_requested(int argc, char** argv) {
  if (argc < 2 || std::strncmp(argv[1], role_flag, std::strlen(role_flag)) != 0) return std::nullopt;
  const std::string role = argv[1] + std::strlen(role_flag);
  const auto found = roles().find(role);
  if (found == roles().end()) return 90;
  std::vector<std::string> args(argv + 2, argv + argc);
  return found->second(args);
}

os::borrowed_fd child_socket() noexcept { return os::borrowed_fd::from_native(child_fd); }

child_process::child_process(child_process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), socket_(std::move(other.socket_)) {}

child_process::~child_process() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

result<int> child_process::wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return error(errc::invalid_argument, "child_process::wait", "no child");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -1;
    }
    if (r < 0) return error::from_errno(errno, "waitpid");
    if (std::chrono::steady_clock::now() >= deadline)
      return error(errc::timeout, "child_process::wait", "the child did not exit in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

result<child_process> spawn_child(const std::string& role, const std::vector<std::string>& args) {
  std::array<int, 2> sv{};
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv.data()) != 0)
    return error::from_errno(errno, "socketpair");
  auto parent_end = os::unique_fd::from_native(sv[0]);
  auto child_end = os::unique_fd::from_native(sv[1]);
  std::vector<std::string> argv{"membridge-test-child", std::string(role_flag) + role};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = fork_exec_self(std::move(argv), child_end.get(), child_fd, parent_death::ignore);
  if (pid < 0) return error::from_errno(errno, "fork");
  return child_process(pid, std::move(parent_end));
}

result<void> send_message(os::borrowed_fd socket, std::span<const std::byte> payload,
                          std::span<const os::borrowed_fd> fds) {
  if (fds.size() > max_fds) return error(errc::invalid_argument, "send_message", "too many fds");
  msghdr msg{};
  iovec iov{const_cast<std::byte*>(payload.data()), payload.size()};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) std::array<char, ipc::detail::scm_rights_space(max_fds)> control{};
  ipc::detail::attach_fds(msg, control, fds);
  const ssize_t sent = ::sendmsg(socket.get(), &msg, MSG_NOSIGNAL);
  if (sent < 0) return error::from_errno(errno, "sendmsg");
  if (static_cast<std::size_t>(sent) != payload.size())
    return error(errc::protocol_error, "sendmsg", "short send");
  return ok();
}

result<message> receive_message(os::borrowed_fd socket, std::size_t max_payload, std::chrono::milliseconds timeout) {
  pollfd pfd{socket.get(), POLLIN, 0};
  const int ready = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  if (ready < 0) return error::from_errno(errno, "poll");
  if (ready == 0) return error(errc::timeout, "receive_message", "no message within the timeout");
  message out;
  out.payload.resize(max_payload + 1);  // one spare byte detects an oversized message
  msghdr msg{};
  iovec iov{out.payload.data(), out.payload.size()};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) std::array<char, ipc::detail::scm_rights_space(max_fds)> control{};
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  const ssize_t got = ::recvmsg(socket.get(), &msg, MSG_CMSG_CLOEXEC);
  if (got < 0) return error::from_errno(errno, "recvmsg");
  // Own every received fd first, so none leaks whatever the payload says.
  ipc::detail::for_each_received_fd(msg, [&](int fd) { out.fds.push_back(os::unique_fd::from_native(fd)); });
  if (got == 0 && (pfd.revents & POLLHUP) != 0) return error(errc::protocol_error, "recvmsg", "the peer closed");
  if ((msg.msg_flags & MSG_CTRUNC) != 0) return error(errc::protocol_error, "recvmsg", "fds were truncated");
  if ((msg.msg_flags & MSG_TRUNC) != 0 || static_cast<std::size_t>(got) > max_payload)
    return error(errc::protocol_error, "recvmsg", "message larger than expected");
  out.payload.resize(static_cast<std::size_t>(got));
  return out;
}

}  // namespace membridge::testing
