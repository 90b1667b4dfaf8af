// One-time kernel objects of mingw-w64's runtime, made before any test counts handles (both Windows
// test binaries call prime_runtime_handles() in main, before RUN_ALL_TESTS).
#pragma once

#include <stdexcept>
#include <thread>
#include <vector>

namespace membridge::testing {

/// The first C++ exception a mingw-w64 process throws makes the runtime open two kernel objects it
/// keeps for the life of the process (measured under Wine: +2 handles on the first throw, none after);
/// winpthreads keeps the event of a finished thread for the next one, at its own pace (tests that
/// start a thread saw +1 handle now and then: 1 run in 4 to 10 under Wine). One throw and rounds of
/// threads alive at once here keep both out of the tests' counts.
inline void prime_runtime_handles() {
  try {
    throw std::runtime_error("priming the exception runtime");
  } catch (const std::runtime_error&) {
  }
  for (int round = 0; round < 2; ++round) {  // several alive at once: the runtime's spare events fill up
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) threads.emplace_back([] {});
    for (std::thread& t : threads) t.join();
  }
}

/// Starts and joins one thread: winpthreads tidies a finished thread's resources lazily, when the
/// next thread starts, so a count taken after this one (at a test's start and at its end alike) sees
/// the runtime in the same state.
inline void settle_thread_runtime() { std::thread([] {}).join(); }

}  // namespace membridge::testing
