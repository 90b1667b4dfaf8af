// Private (Linux): fds in a msghdr's control data (SCM_RIGHTS), both ways. Header-only, so the test
// support's socketpair messages (tests/support/child_process.cpp) pack and unpack fds as the
// channel does.
#pragma once

#include <membridge/os/borrowed_fd.hpp>

#include <cstddef>
#include <cstring>
#include <span>
#include <sys/socket.h>

namespace membridge::ipc::detail {

/// Control-data bytes that carry `count` fds in one SCM_RIGHTS message.
constexpr std::size_t scm_rights_space(std::size_t count) noexcept { return CMSG_SPACE(sizeof(int) * count); }

/// Puts `fds` into `msg` as one SCM_RIGHTS message written to `control`, which must hold
/// scm_rights_space(fds.size()) bytes and be aligned for cmsghdr. Leaves `msg` without control data
/// when `fds` is empty.
/// Ownership: the fds stay the caller's; sendmsg gives the peer its own copies.
inline void attach_fds(msghdr& msg, std::span<char> control, std::span<const os::borrowed_fd> fds) noexcept {
  if (fds.empty()) return;
  msg.msg_control = control.data();
  msg.msg_controllen = scm_rights_space(fds.size());
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  for (std::size_t i = 0; i < fds.size(); ++i) {
    const int fd = fds[i].get();
    std::memcpy(CMSG_DATA(c) + i * sizeof(int), &fd, sizeof fd);
  }
}

/// Calls `take(fd)` for every fd that recvmsg put into `msg`'s SCM_RIGHTS messages, in order
/// (other control messages are passed over).
/// Ownership: each fd is new in this process and passes to `take`, which must own or close it.
template <class Take>
void for_each_received_fd(msghdr& msg, Take&& take) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < n; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      take(fd);
    }
  }
}

}  // namespace membridge::ipc::detail
