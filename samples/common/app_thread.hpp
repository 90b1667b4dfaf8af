// samples/common/app_thread.hpp: starting a sample's worker thread (the GPU paths' CUDA producer)
// with a membridge error instead of an exception when the system cannot start one.
#pragma once

#include <membridge/core/error.hpp>
#include <membridge/core/result.hpp>

#include <string>
#include <system_error>
#include <thread>
#include <utility>

namespace samples {

/// Starts `body` on a new thread and moves it into `thread` (which must not hold a running one).
/// Errors: os_error naming `what` ("starting the CUDA producer thread") when std::thread throws.
template <class Body>
[[nodiscard]] membridge::result<void> start_thread(std::thread& thread, Body&& body, const std::string& what) {
  try {
    thread = std::thread(std::forward<Body>(body));
  } catch (const std::system_error& e) {
    return membridge::error(membridge::errc::os_error, "std::thread", what + ": " + e.what());
  }
  return membridge::ok();
}

}  // namespace samples
