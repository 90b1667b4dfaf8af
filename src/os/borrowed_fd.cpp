#include <membridge/os/borrowed_fd.hpp>

#include <cerrno>
#include <fcntl.h>
#include <string>

namespace membridge::os {

result<unique_fd> borrowed_fd::duplicate() const {
  if (!valid()) return error(errc::invalid_argument, "borrowed_fd::duplicate", "the view is empty");
  const int fd = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return error::from_errno(errno, "fcntl(F_DUPFD_CLOEXEC)", "duplicating fd " + std::to_string(fd_));
  return unique_fd::from_native(fd);
}

result<bool> borrowed_fd::is_close_on_exec() const {
  if (!valid()) return error(errc::invalid_argument, "borrowed_fd::is_close_on_exec", "the view is empty");
  const int flags = ::fcntl(fd_, F_GETFD);
  if (flags < 0) return error::from_errno(errno, "fcntl(F_GETFD)", "reading flags of fd " + std::to_string(fd_));
  return (flags & FD_CLOEXEC) != 0;
}

result<void> set_close_on_exec(borrowed_fd fd) {
  if (!fd.valid()) return error(errc::invalid_argument, "set_close_on_exec", "the view is empty");
  const int flags = ::fcntl(fd.get(), F_GETFD);
  if (flags < 0) return error::from_errno(errno, "fcntl(F_GETFD)", "fd " + std::to_string(fd.get()));
  if ((flags & FD_CLOEXEC) != 0) return ok();
  if (::fcntl(fd.get(), F_SETFD, flags | FD_CLOEXEC) != 0)
    return error::from_errno(errno, "fcntl(F_SETFD, FD_CLOEXEC)", "fd " + std::to_string(fd.get()));
  return ok();
}

}  // namespace membridge::os
