#include <membridge/core/error.hpp>
#include <membridge/core/log.hpp>
#include <membridge/os/unique_fd.hpp>

#include <cerrno>
#include <string>
#include <unistd.h>

namespace membridge::os {

void unique_fd::reset() noexcept {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  // One close, never retried: on Linux the descriptor is gone even when close reports EINTR.
  if (::close(fd) != 0 && errno != EINTR) {
    const int saved = errno;
    log(log_level::warning,
        error::from_errno(saved, "close", "closing fd " + std::to_string(fd) + " owned by unique_fd").message());
  }
}

}  // namespace membridge::os
