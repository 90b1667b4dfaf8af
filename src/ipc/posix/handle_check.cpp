// Linux: which fds can be memory or semaphore handles (detail::handle_fd_problem).
#include "../detail/payload.hpp"

#include <cerrno>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace membridge::ipc::detail {

std::string handle_fd_problem(os::borrowed_shareable_handle fd) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return "an fd fstat refuses (errno " + std::to_string(errno) + ")";
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0 && (flags & O_PATH) != 0) return "an O_PATH fd";
  switch (st.st_mode & S_IFMT) {
    case S_IFDIR: return "a directory";
    case S_IFSOCK: return "a socket";
    case S_IFIFO: return "a pipe";
    case S_IFBLK: return "a block device";
    case S_IFLNK: return "a symbolic link";
    case S_IFCHR:
      if (major(st.st_rdev) == 1)
        return "a memory device (char " + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)) +
               ", e.g. /dev/zero or /dev/null)";
      return {};
    default: return {};  // regular files (memfd, shm) and anonymous inodes
  }
}

std::string handle_fd_problem(const os::shareable_handle& fd) { return handle_fd_problem(os::borrowed_fd(fd)); }

}  // namespace membridge::ipc::detail
