// bench/support/viewed_run.hpp: what the sim and viewer threads of a viewed run share (the frame-loop
// benchmark's viewed part and the GL benchmark's part v): the viewer's requests, the frames the sim
// published, the measurement window's marks and the run's first failure. Header-only.
#pragma once

#include "cuda_support.hpp"

#include <membridge/vulkan/timeline_semaphore.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace membridge::bench {

/// What the sim published for one frame.
struct publication {
  std::uint64_t step = 0;  ///< The step whose particles the frame shows.
  std::uint32_t slot = 0;  ///< The ring slot that holds them.
};

/// What the threads of one viewed run share.
class viewed_run_state {
 public:
  /// Room for `capacity` frames. On a failure both `semaphores` (none when null) are signalled far
  /// ahead from the host, and the message goes to stderr after `stop_line` (e.g. "[frame_loop]
  /// stopping the viewed run: "). Ownership: borrows the semaphores and `stop_line`, which must outlive it.
  viewed_run_state(std::size_t capacity, std::array<const vulkan::timeline_semaphore*, 2> semaphores,
                   const char* stop_line)
      : pubs(capacity), semaphores_(semaphores), stop_line_(stop_line) {}

  std::atomic<bool> request{false};         ///< The viewer asks for a frame.
  std::atomic<std::uint64_t> published{0};  ///< Frames published; pubs[f] is written before.
  std::vector<publication> pubs;            ///< Per frame.
  std::atomic<bool> stop_viewer{false};     ///< Ends the viewer's loop.
  std::atomic<bool> stop_sim{false};        ///< Ends the sim's loop.
  std::atomic<int> mark{0};                 ///< 1: open the window after the next step; 2: close it.
  std::atomic<int> marked{0};               ///< The sim's answer.

  /// The first failure: keeps the message and lets every GPU wait of the run finish (both
  /// semaphores signalled far ahead from the host).
  void fail(std::string message) noexcept {
    {
      const std::lock_guard<std::mutex> guard(lock_);
      if (failed_.load()) return;
      message_ = std::move(message);
      failed_.store(true);
      std::fprintf(stderr, "%s%s\n", stop_line_, message_.c_str());
    }
    for (const vulkan::timeline_semaphore* sem : semaphores_)
      if (sem != nullptr)
        if (const auto value = sem->value(); value) (void)sem->signal(*value + 1'000'000);
  }
  /// Asks the sim for frame `f` and waits (yielding the thread) until it is published. Returns its
  /// publication, or nothing when the run failed meanwhile; throws bench_failure after `timeout`.
  /// Inline: the viewers call it inside their timed tick.
  [[nodiscard]] std::optional<publication> request_frame(std::uint64_t f, std::chrono::steady_clock::duration timeout) {
    request.store(true, std::memory_order_release);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (published.load(std::memory_order_acquire) <= f) {
      if (failed()) return std::nullopt;
      if (std::chrono::steady_clock::now() > deadline)
        throw bench_failure("timeout: the sim did not publish frame " + std::to_string(f));
      std::this_thread::yield();
    }
    return pubs[f];
  }
  /// True once a thread failed.
  [[nodiscard]] bool failed() const noexcept { return failed_.load(); }
  /// Throws bench_failure with the first failure's message, if any.
  void rethrow_if_failed() const {
    if (failed()) throw bench_failure(message_);
  }

 private:
  std::array<const vulkan::timeline_semaphore*, 2> semaphores_;
  const char* stop_line_;
  std::atomic<bool> failed_{false};
  std::mutex lock_;
  std::string message_;
};

}  // namespace membridge::bench
