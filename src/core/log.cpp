#include <membridge/core/log.hpp>

#include <atomic>
#include <cstdio>
#include <mutex>

namespace membridge {

namespace {

void stderr_sink(log_level level, std::string_view message, void* /*user_data*/) noexcept {
  std::fprintf(stderr, "membridge [%.*s] %.*s\n", static_cast<int>(to_string(level).size()),
               to_string(level).data(), static_cast<int>(message.size()), message.data());
}

struct sink_state {
  std::mutex mutex;
  log_sink sink = &stderr_sink;
  void* user_data = nullptr;
  std::atomic<log_level> minimum{log_level::warning};
};

sink_state& state() noexcept {
  static sink_state s;
  return s;
}

}  // namespace

std::string_view to_string(log_level level) noexcept {
  switch (level) {
    case log_level::debug: return "debug";
    case log_level::info: return "info";
    case log_level::warning: return "warning";
    case log_level::error: return "error";
  }
  return "unknown";
}

void set_log_sink(log_sink sink, void* user_data) noexcept {
  auto& s = state();
  const std::lock_guard lock(s.mutex);
  s.sink = sink != nullptr ? sink : &stderr_sink;
  s.user_data = sink != nullptr ? user_data : nullptr;
}

void set_log_level(log_level minimum) noexcept { state().minimum.store(minimum, std::memory_order_relaxed); }

log_level get_log_level() noexcept { return state().minimum.load(std::memory_order_relaxed); }

void log(log_level level, std::string_view message) noexcept {
  auto& s = state();
  if (level < s.minimum.load(std::memory_order_relaxed)) return;
  // The lock serialises sinks, so a sink need not be reentrant; sinks must not log themselves.
  const std::lock_guard lock(s.mutex);
  s.sink(level, message, s.user_data);
}

}  // namespace membridge
