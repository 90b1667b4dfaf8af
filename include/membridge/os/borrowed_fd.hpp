// membridge/os/borrowed_fd.hpp: a non-owning view of a file descriptor.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/unique_fd.hpp>

namespace membridge::os {

/// Refers to a descriptor that someone else owns. Trivially copyable; never closes anything.
/// membridge functions that import from a descriptor take a borrowed_fd and duplicate it when the
/// API they call consumes descriptors, so the caller's descriptor is never closed by membridge.
class borrowed_fd {
 public:
  /// An empty view (get() == -1).
  constexpr borrowed_fd() noexcept = default;

  /// Views `fd` without taking ownership.
  /// Ownership: the caller keeps owning `fd` and must keep it open while the view is used.
  [[nodiscard]] static constexpr borrowed_fd from_native(int fd) noexcept { return borrowed_fd(fd); }

  /// Views the descriptor held by `owner` (empty if `owner` is empty).
  /// Ownership: `owner` keeps owning it and must outlive this view.
  constexpr borrowed_fd(const unique_fd& owner) noexcept : fd_(owner.get()) {}  // NOLINT(implicit)
  /// Viewing a temporary owner would dangle at once.
  borrowed_fd(unique_fd&&) = delete;

  /// The descriptor, or -1 when empty.
  /// Ownership: not the caller's; do not close it.
  [[nodiscard]] constexpr int get() const noexcept { return fd_; }

  /// True when a descriptor is referred to.
  [[nodiscard]] constexpr bool valid() const noexcept { return fd_ >= 0; }

  /// A new close-on-exec descriptor for the same open file (fcntl F_DUPFD_CLOEXEC).
  /// Ownership: the caller owns the returned descriptor; this one is untouched.
  /// Errors: invalid_argument for an empty view or a closed fd (EBADF), out_of_memory at the
  /// process's descriptor limit (EMFILE), os_error otherwise.
  [[nodiscard]] result<unique_fd> duplicate() const;

  /// Whether the descriptor has FD_CLOEXEC set (fcntl F_GETFD).
  [[nodiscard]] result<bool> is_close_on_exec() const;

 private:
  constexpr explicit borrowed_fd(int fd) noexcept : fd_(fd < 0 ? -1 : fd) {}

  int fd_ = -1;
};

/// Sets FD_CLOEXEC on a descriptor membridge received from an API that does not (e.g. a driver's
/// export call), so it does not leak into child processes that exec.
[[nodiscard]] result<void> set_close_on_exec(borrowed_fd fd);

}  // namespace membridge::os
