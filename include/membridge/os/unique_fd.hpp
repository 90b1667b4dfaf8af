// membridge/os/unique_fd.hpp: the one owner of a POSIX file descriptor.
#pragma once

namespace membridge::os {

/// Owns one file descriptor and closes it exactly once.
///
/// Move-only; the moved-from object is empty. close() is never retried on EINTR (on Linux the fd is
/// released even when close reports EINTR, and a retry could close a descriptor another thread just
/// received). A failing close is reported to the log sink, never thrown.
/// Every fd membridge creates is close-on-exec.
class unique_fd {
 public:
  /// An empty owner.
  constexpr unique_fd() noexcept = default;

  /// Takes ownership of `fd` (a negative value gives an empty owner).
  /// Ownership: the returned object owns `fd` and closes it; the caller must not close it.
  [[nodiscard]] static unique_fd from_native(int fd) noexcept { return unique_fd(fd); }

  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;

  /// Takes over `other`'s descriptor; `other` becomes empty.
  unique_fd(unique_fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

  /// Closes the held descriptor (if any), then takes over `other`'s.
  unique_fd& operator=(unique_fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }

  /// Closes the held descriptor, if any.
  ~unique_fd() { reset(); }

  /// The descriptor, or -1 when empty.
  /// Ownership: still owned by this object; do not close it.
  [[nodiscard]] constexpr int get() const noexcept { return fd_; }

  /// True when a descriptor is held.
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  /// Same as valid().
  explicit operator bool() const noexcept { return valid(); }

  /// Gives the descriptor up without closing it; this object becomes empty.
  /// Ownership: the caller now owns the returned fd and must close it (or hand it to an API that
  /// takes ownership).
  [[nodiscard]] int release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

  /// Closes the held descriptor (if any); the object becomes empty. Failures go to the log sink.
  void reset() noexcept;

 private:
  explicit unique_fd(int fd) noexcept : fd_(fd < 0 ? -1 : fd) {}

  int fd_ = -1;
};

}  // namespace membridge::os
