// Helpers shared by the ipc tier's tests: memfds with content, temporary socket directories, a raw
// sendmsg that bypasses every check of ipc::channel (to play a hostile peer), and a log of a
// publisher's events.
#pragma once

#include <membridge/ipc/publisher.hpp>
#include <membridge/os/borrowed_fd.hpp>
#include <membridge/os/unique_fd.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace membridge::testing {

/// A memfd (close-on-exec) holding `content`; empty on failure.
inline os::unique_fd make_memfd(const std::string& content) {
  auto fd = os::unique_fd::from_native(::memfd_create("membridge-ipc-test", MFD_CLOEXEC));
  if (fd && !content.empty() && ::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size()))
    fd.reset();
  return fd;
}

/// The first 4 KiB of the file behind `fd` (read at offset 0, whatever the fd's position).
inline std::string read_all(os::borrowed_fd fd) {
  std::string out(4096, '\0');
  const ssize_t n = ::pread(fd.get(), out.data(), out.size(), 0);
  out.resize(n > 0 ? static_cast<std::size_t>(n) : 0U);
  return out;
}

/// A world-traversable temporary directory (0711), removed with its contents at the end.
struct temp_dir {
  std::string path;
  temp_dir() {
    std::string tmpl = "/tmp/membridge-ipc-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) {
      path = tmpl;
      ::chmod(path.c_str(), 0711);
    }
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  [[nodiscard]] std::string file(const std::string& name) const { return path + "/" + name; }
};

/// Sends raw bytes and fds on `socket`, bypassing every check of ipc::channel::send.
inline bool raw_send(os::borrowed_fd socket, const std::vector<std::byte>& bytes, const std::vector<int>& fds) {
  msghdr msg{};
  iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()) + sizeof(cmsghdr));
  if (!fds.empty()) {
    // Align the control buffer as cmsghdr needs.
    auto* base = control.data();
    auto misalign = reinterpret_cast<std::uintptr_t>(base) % alignof(cmsghdr);
    if (misalign != 0) base += alignof(cmsghdr) - misalign;
    msg.msg_control = base;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  return ::sendmsg(socket.get(), &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

/// Collects a publisher's events (its on_event sink) and waits for one.
struct publisher_event_log {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<ipc::publisher_event> events;

  std::function<void(const ipc::publisher_event&)> sink() {
    return [this](const ipc::publisher_event& e) {
      std::lock_guard lock(mutex);
      events.push_back(e);
      changed.notify_all();
    };
  }
  /// Waits until `count` events of kind `what` were seen; returns the last one.
  std::optional<ipc::publisher_event> wait_for(ipc::publisher_event::kind what, std::size_t count = 1,
                                               std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mutex);
    std::optional<ipc::publisher_event> last;
    changed.wait_for(lock, timeout, [&] {
      std::size_t n = 0;
      for (const auto& e : events)
        if (e.what == what && ++n == count) last = e;
      return last.has_value();
    });
    return last;
  }
};

}  // namespace membridge::testing

/// The names the ipc tier's tests share: `using namespace membridge::testing::ipc_tier;` in a test's
/// anonymous namespace.
namespace membridge::testing::ipc_tier {
using namespace std::chrono_literals;
using membridge::errc;
namespace ipc = membridge::ipc;
namespace os = membridge::os;
namespace mt = membridge::testing;
using mt::make_memfd;
using mt::read_all;
using mt::temp_dir;
using pub_kind = ipc::publisher_event::kind;
}  // namespace membridge::testing::ipc_tier
