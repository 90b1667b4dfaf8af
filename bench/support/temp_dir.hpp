// bench/support/temp_dir.hpp: a private temporary directory for a benchmark's sockets.
#pragma once

#include <string>
#include <string_view>

namespace membridge::bench {

/// A private temporary directory (0700, mkdtemp) for a benchmark's sockets, removed with its contents
/// when destroyed. It lies in $XDG_RUNTIME_DIR when that is an absolute path short enough for the
/// socket paths inside it (sun_path holds 108 bytes), else in /tmp. Move-only.
/// Ownership: owns the directory and what is left in it.
class temp_dir {
 public:
  /// Makes `<base>/<prefix>-XXXXXX`. Throws bench_failure when mkdtemp fails.
  explicit temp_dir(std::string_view prefix);
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  temp_dir(temp_dir&& other) noexcept;
  temp_dir& operator=(temp_dir&& other) noexcept;
  ~temp_dir();

  /// The directory.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// `name` inside the directory.
  [[nodiscard]] std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  void remove() noexcept;
  std::string path_;
};

}  // namespace membridge::bench
