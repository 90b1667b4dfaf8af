// Captures what membridge logs for the life of the object (and restores the default sink after).
#pragma once

#include <membridge/core/log.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace membridge::testing {

class log_capture {
 public:
  log_capture() { set_log_sink(&sink, this); }
  ~log_capture() { set_log_sink(nullptr); }
  log_capture(const log_capture&) = delete;
  log_capture& operator=(const log_capture&) = delete;

  /// The messages logged so far, in order.
  [[nodiscard]] const std::vector<std::string>& lines() const noexcept { return lines_; }

 private:
  static void sink(log_level, std::string_view message, void* user) noexcept {
    static_cast<log_capture*>(user)->lines_.emplace_back(message);
  }
  std::vector<std::string> lines_;
};

}  // namespace membridge::testing
