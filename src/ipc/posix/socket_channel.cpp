// Linux: the Unix domain socket transport (SOCK_SEQPACKET, SCM_RIGHTS, SO_PEERCRED).
#include "../detail/channel_platform.hpp"
#include "scm_rights.hpp"

#include <membridge/core/log.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>

namespace membridge::ipc {

namespace detail {
const char* const handle_noun = "fds";
const char* const handle_noun_one = "fd";
result<void> check_platform_send(const channel_platform*, std::size_t) { return ok(); }
}  // namespace detail

namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t control_size = detail::scm_rights_space(max_fds_per_message);
constexpr std::size_t receive_buffer_size = header_size + max_payload_size + 1;  // +1 detects oversize

/// Milliseconds left until `deadline`, as poll's int (0 when passed).
int remaining_ms(clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<long long>(left, INT_MAX));
}

clock::time_point deadline_after(milliseconds timeout) {
  if (timeout.count() < 0) timeout = milliseconds(0);
  // Clamp so the addition never overflows (about 24 days is "forever" here).
  timeout = std::min(timeout, milliseconds(INT_MAX));
  return clock::now() + timeout;
}

/// Polls `fd` for `events` until the deadline. Returns revents (0 on timeout); retries EINTR.
result<short> poll_until(int fd, short events, clock::time_point deadline) {
  for (;;) {
    pollfd pfd{fd, events, 0};
    const int ready = ::poll(&pfd, 1, remaining_ms(deadline));
    if (ready > 0) return pfd.revents;
    if (ready == 0) {
      if (clock::now() >= deadline) return static_cast<short>(0);
      continue;  // woke early (rounding): poll again
    }
    if (errno != EINTR) return error::from_errno(errno, "poll");
  }
}

result<sockaddr_un> make_address(const std::string& path, const char* call) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty()) return error(errc::invalid_argument, call, "empty socket path");
  if (path.size() >= sizeof(addr.sun_path))
    return error(errc::invalid_argument, call,
                 "socket path too long (" + std::to_string(path.size()) + " bytes, at most " +
                     std::to_string(sizeof(addr.sun_path) - 1) + "): " + path);
  if (path.find('\0') != std::string::npos) return error(errc::invalid_argument, call, "NUL in socket path");
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

result<peer_credentials> read_peer_credentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return error::from_errno(errno, "getsockopt", "SO_PEERCRED");
  return peer_credentials{static_cast<std::int32_t>(cred.pid), static_cast<std::uint32_t>(cred.uid),
                          static_cast<std::uint32_t>(cred.gid)};
}

result<void> set_nonblocking_cloexec(int fd) {
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0) return error::from_errno(errno, "fcntl", "F_GETFL");
  if ((fl & O_NONBLOCK) == 0 && ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
    return error::from_errno(errno, "fcntl", "F_SETFL O_NONBLOCK");
  const int fdfl = ::fcntl(fd, F_GETFD);
  if (fdfl < 0) return error::from_errno(errno, "fcntl", "F_GETFD");
  if ((fdfl & FD_CLOEXEC) == 0 && ::fcntl(fd, F_SETFD, fdfl | FD_CLOEXEC) != 0)
    return error::from_errno(errno, "fcntl", "F_SETFD FD_CLOEXEC");
  return ok();
}

result<os::unique_fd> new_socket(const char* call) {
  auto fd = os::unique_fd::from_native(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return error::from_errno(errno, "socket", call);
  return fd;
}

bool valid_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  });
}

result<std::string> socket_path(const listen_options& options) {
  if (!options.path.empty()) return options.path;
  MEMBRIDGE_TRY_ASSIGN(const std::string path, socket_path_for(options.name));
  const std::string dir = path.substr(0, path.rfind('/'));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return error::from_errno(errno, "mkdir", dir);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return error::from_errno(errno, "lstat", dir);
  if (!S_ISDIR(st.st_mode)) return error(errc::invalid_argument, "listener::listen", dir + " is not a directory");
  if (st.st_uid != ::geteuid() || (st.st_mode & 0022) != 0)
    return error(errc::invalid_argument, "listener::listen",
                 dir + " is not owned by this user or is writable by others");
  return path;
}

/// Removes a socket file at `path` if nobody listens on it.
result<void> remove_stale_socket(const std::string& path, const sockaddr_un& addr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return ok();
    return error::from_errno(errno, "lstat", path);
  }
  if (!S_ISSOCK(st.st_mode))
    return error(errc::invalid_argument, "listener::listen", path + " exists and is not a socket");
  MEMBRIDGE_TRY_ASSIGN(auto probe, new_socket("probing an existing socket file"));
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 || errno == EAGAIN ||
      errno == EINPROGRESS)
    return error::from_native(errc::os_error, error_source::os, EADDRINUSE, "EADDRINUSE: Address already in use",
                              "listener::listen", "another process listens on " + path);
  if (errno != ECONNREFUSED) return error::from_errno(errno, "connect", "probing the existing socket " + path);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return error::from_errno(errno, "unlink", path);
  return ok();
}

}  // namespace

result<std::string> socket_path_for(const std::string& name) {
  if (!valid_name(name))
    return error(errc::invalid_argument, "ipc::socket_path_for",
                 "no usable socket name (letters, digits, '-', '_', '.'): '" + name + "'");
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime == nullptr || runtime[0] != '/')
    return error(errc::invalid_argument, "ipc::socket_path_for",
                 "XDG_RUNTIME_DIR is unset or not absolute and no path was given");
  return std::string(runtime) + "/membridge/" + name + ".sock";
}

// ------------------------------------------------------------------------------------- channel ---

result<channel> channel::connect(const std::string& path, milliseconds timeout) {
  MEMBRIDGE_TRY_ASSIGN(const sockaddr_un addr, make_address(path, "channel::connect"));
  MEMBRIDGE_TRY_ASSIGN(auto fd, new_socket("channel::connect"));
  const auto deadline = deadline_after(timeout);
  for (;;) {
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {  // the listener's backlog is full: retry until the deadline
      if (clock::now() >= deadline)
        return error(errc::timeout, "channel::connect", "the listener's backlog stayed full: " + path);
      std::this_thread::sleep_for(milliseconds(5));
      continue;
    }
    if (errno == EINPROGRESS) {
      MEMBRIDGE_TRY_ASSIGN(const short revents, poll_until(fd.get(), POLLOUT, deadline));
      if (revents == 0) return error(errc::timeout, "channel::connect", path);
      int so_error = 0;
      socklen_t len = sizeof so_error;
      if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0)
        return error::from_errno(errno, "getsockopt", "SO_ERROR");
      if (so_error != 0) return error::from_errno(so_error, "connect", path);
      break;
    }
    return error::from_errno(errno, "connect", path);
  }
  MEMBRIDGE_TRY_ASSIGN(const auto peer, read_peer_credentials(fd.get()));
  return channel(std::move(fd), peer, nullptr);
}

result<std::pair<channel, channel>> channel::pair() {
  std::array<int, 2> fds{-1, -1};
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds.data()) != 0)
    return error::from_errno(errno, "socketpair");
  auto a = os::unique_fd::from_native(fds[0]);
  auto b = os::unique_fd::from_native(fds[1]);
  MEMBRIDGE_TRY_ASSIGN(const auto peer_a, read_peer_credentials(a.get()));
  MEMBRIDGE_TRY_ASSIGN(const auto peer_b, read_peer_credentials(b.get()));
  return std::pair<channel, channel>(channel(std::move(a), peer_a, nullptr), channel(std::move(b), peer_b, nullptr));
}

result<channel> channel::from_native(os::unique_fd socket) {
  constexpr const char* call = "channel::from_native";
  if (!socket) return error(errc::invalid_argument, call, "empty fd");
  int value = 0;
  socklen_t len = sizeof value;
  if (::getsockopt(socket.get(), SOL_SOCKET, SO_DOMAIN, &value, &len) != 0) {
    if (errno == ENOTSOCK || errno == EBADF) return error::from_native(
        errc::invalid_argument, error_source::os, errno, "not a socket", call, "fd " + std::to_string(socket.get()));
    return error::from_errno(errno, "getsockopt", "SO_DOMAIN");
  }
  if (value != AF_UNIX) return error(errc::invalid_argument, call, "not an AF_UNIX socket");
  len = sizeof value;
  if (::getsockopt(socket.get(), SOL_SOCKET, SO_TYPE, &value, &len) != 0)
    return error::from_errno(errno, "getsockopt", "SO_TYPE");
  if (value != SOCK_SEQPACKET) return error(errc::invalid_argument, call, "not a SOCK_SEQPACKET socket");
  MEMBRIDGE_TRY(set_nonblocking_cloexec(socket.get()));
  sockaddr_un peer_addr{};
  socklen_t addr_len = sizeof peer_addr;
  if (::getpeername(socket.get(), reinterpret_cast<sockaddr*>(&peer_addr), &addr_len) != 0) {
    if (errno == ENOTCONN) return error(errc::invalid_argument, call, "the socket is not connected");
    return error::from_errno(errno, "getpeername");
  }
  MEMBRIDGE_TRY_ASSIGN(const auto peer, read_peer_credentials(socket.get()));
  return channel(std::move(socket), peer, nullptr);
}

result<void> channel::send(message_type type, std::span<const std::byte> payload,
                           std::span<const os::borrowed_fd> fds, milliseconds timeout) {
  constexpr const char* call = "channel::send";
  MEMBRIDGE_TRY(check_send(type, payload.size(), fds));

  message_header header;
  header.type = type;
  header.payload_size = static_cast<std::uint32_t>(payload.size());
  header.fd_count = static_cast<std::uint16_t>(fds.size());
  auto head = encode_header(header);

  std::array<iovec, 2> iov{};
  iov[0] = iovec{head.data(), head.size()};
  iov[1] = iovec{const_cast<std::byte*>(payload.data()), payload.size()};
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = payload.empty() ? 1 : 2;
  alignas(cmsghdr) std::array<char, control_size> control{};
  detail::attach_fds(msg, control, fds);
  const std::size_t total = head.size() + payload.size();

  const auto deadline = deadline_after(timeout);
  for (;;) {
    const ssize_t sent = ::sendmsg(handle_.get(), &msg, MSG_NOSIGNAL);
    if (sent >= 0) {
      if (static_cast<std::size_t>(sent) != total)  // SOCK_SEQPACKET sends all or nothing
        return error(errc::internal, call, "short send on a SOCK_SEQPACKET socket");
      return ok();
    }
    if (errno == EINTR) continue;
    if (errno == EPIPE || errno == ECONNRESET) {
      // The peer is gone; what it sent before stays readable (receive() reaches its end).
      const int e = errno;
      peer_closed_.store(true, std::memory_order_release);
      return error::from_native(errc::protocol_error, error_source::os, e, e == EPIPE ? "EPIPE" : "ECONNRESET",
                                call, "the peer closed");
    }
    if (errno != EAGAIN) return error::from_errno(errno, "sendmsg", "channel::send");
    if (timeout.count() <= 0) return error(errc::timeout, call, "the socket buffer is full");
    MEMBRIDGE_TRY_ASSIGN(const short revents, poll_until(handle_.get(), POLLOUT, deadline));
    if (revents == 0) return error(errc::timeout, call, "the socket buffer stayed full");
    // POLLOUT, POLLHUP or POLLERR: sendmsg tells which.
  }
}

void channel::end() noexcept {
  if (ended_.exchange(true, std::memory_order_acq_rel)) return;
  // The peer sees EOF now and a call waiting in another thread wakes; the descriptor stays until
  // close() so nothing can reuse its number under that call.
  if (handle_) (void)::shutdown(handle_.get(), SHUT_RDWR);
}

void channel::close() noexcept {
  if (!handle_) return;
  // Stop the peer from queueing more, then drop what it queued (and the fds that came with it).
  // Closing with unread messages would make the kernel report ECONNRESET to the peer ahead of
  // the messages this side sent last (a goodbye, say).
  (void)::shutdown(handle_.get(), SHUT_RD);
  alignas(cmsghdr) std::array<char, control_size> control{};
  std::array<std::byte, 256> sink{};
  for (int i = 0; i < 4096; ++i) {
    iovec iov{sink.data(), sink.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    const ssize_t got = ::recvmsg(handle_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (got < 0 && (errno == EINTR || errno == ECONNRESET)) continue;
    if (got < 0 || (got == 0 && msg.msg_controllen == 0)) break;  // drained (EAGAIN) or EOF
    detail::for_each_received_fd(msg, [](int fd) { (void)::close(fd); });
    if (got <= 0) break;
  }
  release();
}

result<message> channel::receive(milliseconds timeout, std::chrono::microseconds spin) {
  constexpr const char* call = "channel::receive";
  if (!valid()) return error(errc::invalid_argument, call, "the channel is closed");
  const auto deadline = deadline_after(timeout);
  const auto spin_until = clock::now() + spin;

  // Not zeroed: recvmsg writes what is read, and only that much is looked at (64 KiB of zeroes per
  // message showed in the handshake's time).
  const auto buffer = std::make_unique_for_overwrite<std::byte[]>(receive_buffer_size);
  alignas(cmsghdr) std::array<char, control_size> control{};
  iovec iov{buffer.get(), receive_buffer_size};
  msghdr msg{};
  ssize_t got = -1;
  short revents = 0;
  bool reset_seen = false;
  for (;;) {
    msg = msghdr{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    got = ::recvmsg(handle_.get(), &msg, MSG_CMSG_CLOEXEC);
    if (got >= 0) break;
    if (errno == EINTR) continue;
    if (errno == ECONNRESET && !reset_seen) {
      // The peer closed with messages of ours unread. The kernel reports that once, before the
      // messages the peer sent earlier: read on, so they still arrive and EOF ends them.
      reset_seen = true;
      continue;
    }
    if (errno == ECONNRESET) {
      peer_closed_.store(true, std::memory_order_release);
      end();
      return error::from_native(errc::protocol_error, error_source::os, ECONNRESET, "ECONNRESET", call,
                                "the peer closed");
    }
    if (errno != EAGAIN) return error::from_errno(errno, "recvmsg", "channel::receive");
    if (spin.count() > 0 && clock::now() < spin_until) {
      std::this_thread::yield();
      continue;
    }
    MEMBRIDGE_TRY_ASSIGN(revents, poll_until(handle_.get(), POLLIN, deadline));
    if (revents == 0) return error(errc::timeout, call, "no message within the timeout");
  }

  // Own every received fd before looking at anything else, so none can leak.
  std::vector<os::unique_fd> fds;
  detail::for_each_received_fd(msg, [&](int fd) { fds.push_back(os::unique_fd::from_native(fd)); });

  auto fail = [&](std::string context) -> error {
    fds.clear();  // close what came with the bad message
    end();
    return error(errc::protocol_error, call, std::move(context));
  };

  if (got == 0 && fds.empty()) {
    // EOF or an empty datagram: an empty datagram leaves the socket open, EOF shows POLLHUP / RDHUP.
    pollfd pfd{handle_.get(), POLLIN | POLLRDHUP, 0};
    const bool hung_up = ::poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLRDHUP)) != 0;
    if (hung_up) {
      peer_closed_.store(true, std::memory_order_release);
      end();
      return error(errc::protocol_error, call, "the peer closed");
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) != 0)
    return fail("fds truncated (MSG_CTRUNC): the peer sent more than " + std::to_string(max_fds_per_message) +
                " fds or other control data");
  if ((msg.msg_flags & MSG_TRUNC) != 0)
    return fail("datagram truncated (MSG_TRUNC): larger than " + std::to_string(receive_buffer_size - 1) + " bytes");

  const auto bytes = std::span<const std::byte>(buffer.get(), static_cast<std::size_t>(got));
  auto header = decode_header(bytes, fds.size());
  if (!header) {
    fds.clear();
    end();
    return std::move(header).error().add_context(call);
  }
  message out;
  out.type = header->type;
  out.payload.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header_size), bytes.end());
  out.fds = std::move(fds);
  return out;
}

// ------------------------------------------------------------------------------------ listener ---

result<listener> listener::listen(const listen_options& options) {
  constexpr const char* call = "listener::listen";
  if ((options.mode & ~0777U) != 0) return error(errc::invalid_argument, call, "mode outside 0777");
  if (options.backlog <= 0) return error(errc::invalid_argument, call, "backlog must be positive");
  MEMBRIDGE_TRY_ASSIGN(std::string path, socket_path(options));
  MEMBRIDGE_TRY_ASSIGN(const sockaddr_un addr, make_address(path, call));
  MEMBRIDGE_TRY(remove_stale_socket(path, addr));
  MEMBRIDGE_TRY_ASSIGN(auto fd, new_socket(call));
  // bind() creates the file with the socket inode's mode minus the umask: restrict it first so the
  // file is never wider than asked for, even for an instant (no process-wide umask change).
  if (::fchmod(fd.get(), static_cast<mode_t>(options.mode)) != 0)
    return error::from_errno(errno, "fchmod", "the socket before bind");
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return error::from_errno(errno, "bind", path);

  listener out;
  out.platform_ = std::make_unique<detail::listener_platform>();
  out.path_ = path;  // from here on the destructor unlinks it
  out.platform_->allowed_uids = options.allowed_uids;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return error::from_errno(errno, "lstat", path);
  out.platform_->file_dev = static_cast<std::uint64_t>(st.st_dev);
  out.platform_->file_ino = static_cast<std::uint64_t>(st.st_ino);
  out.handle_ = std::move(fd);
  // The umask may have removed bits the caller asked for (e.g. 0666 under umask 022): set them exactly.
  if (::chmod(path.c_str(), static_cast<mode_t>(options.mode)) != 0) return error::from_errno(errno, "chmod", path);
  if (::lstat(path.c_str(), &st) != 0) return error::from_errno(errno, "lstat", path);
  if (!S_ISSOCK(st.st_mode) || (st.st_mode & 07777) != options.mode)
    return error(errc::internal, call, path + ": the socket file's mode is not the one asked for");
  if (::listen(out.handle_.get(), options.backlog) != 0) return error::from_errno(errno, "listen", path);
  return out;
}

os::borrowed_fd listener::native() const noexcept { return handle_; }

void listener::reset() noexcept {
  const detail::listener_platform* bound = platform_.get();
  if (!path_.empty() && bound != nullptr && (bound->file_dev != 0 || bound->file_ino != 0)) {
    // Unlink only the file this listener bound, never a successor's socket at the same path.
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_dev) == bound->file_dev &&
        static_cast<std::uint64_t>(st.st_ino) == bound->file_ino) {
      if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
        const int e = errno;
        log(log_level::warning, "membridge: ipc::listener: unlink(" + path_ + ") failed: " + std::strerror(e));
      }
    }
  }
  path_.clear();
  platform_.reset();
  handle_.reset();
}

result<channel> listener::accept(milliseconds timeout) {
  constexpr const char* call = "listener::accept";
  if (!handle_) return error(errc::invalid_argument, call, "the listener is closed");
  const auto deadline = deadline_after(timeout);
  for (;;) {
    auto fd = os::unique_fd::from_native(::accept4(handle_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN) return error::from_errno(errno, "accept4", path_);
      MEMBRIDGE_TRY_ASSIGN(const short revents, poll_until(handle_.get(), POLLIN, deadline));
      if (revents == 0) return error(errc::timeout, call, "no connection within the timeout on " + path_);
      continue;
    }
    MEMBRIDGE_TRY_ASSIGN(const auto peer, read_peer_credentials(fd.get()));
    const std::vector<std::uint32_t>& allowed_uids = platform_->allowed_uids;
    const bool allowed = allowed_uids.empty()
                             ? peer.uid == static_cast<std::uint32_t>(::geteuid())
                             : std::find(allowed_uids.begin(), allowed_uids.end(), peer.uid) != allowed_uids.end();
    if (!allowed) {
      fd.reset();  // the peer sees EOF
      return error(errc::protocol_error, call,
                   "refused a peer (pid " + std::to_string(peer.pid) + ", uid " + std::to_string(peer.uid) +
                       ", gid " + std::to_string(peer.gid) + "): uid not allowed on " + path_);
    }
    return channel(std::move(fd), peer, nullptr);
  }
}

}  // namespace membridge::ipc
