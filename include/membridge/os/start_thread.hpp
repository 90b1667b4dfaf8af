// membridge/os/start_thread.hpp: starting a thread without letting std::system_error escape.
#pragma once

#include <membridge/core/result.hpp>

#include <string>
#include <system_error>
#include <thread>
#include <utility>

namespace membridge::os {

/// Starts `Thread` (std::thread or std::jthread) running `body`. The standard constructors throw
/// std::system_error when the system cannot start a thread (EAGAIN: thread or memory limits); the
/// library returns errors instead, so this turns that into os_error with the errno, `what` naming
/// the thread in the message.
/// Errors: os_error when the thread could not be started (nothing ran).
/// Ownership: the returned thread object owns the thread; join it (std::jthread joins itself).
template <class Thread = std::thread, class Body>
[[nodiscard]] result<Thread> start_thread(const std::string& what, Body&& body) {
  try {
    return Thread(std::forward<Body>(body));
  } catch (const std::system_error& e) {
    // os_error whatever the errno (from_errno would read EAGAIN as a timeout).
    return error::from_native(errc::os_error, error_source::os, e.code().value(), e.code().message(), "std::thread",
                              "starting " + what);
  }
}

}  // namespace membridge::os
