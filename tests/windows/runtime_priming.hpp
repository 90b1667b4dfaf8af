// One-time kernel objects of mingw-w64's runtime, made before any test counts handles (both Windows
// test binaries call prime_runtime_handles() in main, before RUN_ALL_TESTS or a child role).
#pragma once

#include "os_handle_count.hpp"

#include <pthread.h>
#include <windows.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace membridge::testing {

namespace detail {

struct registry_lock_probe {
  std::atomic<bool> holding{false};
  long handles_at_entry = -1;
};

// A thread-specific destructor: winpthreads runs it at thread exit while that thread holds the
// runtime's thread-registry lock (mtx_pthr_locked). It keeps holding it until the main thread,
// blocked on the same lock in pthread_join, made the lock's wait event (one more handle), 5 s at most.
inline void hold_registry_lock_until_contended(void* p) {
  auto* probe = static_cast<registry_lock_probe*>(p);
  probe->handles_at_entry = open_handle_count();
  probe->holding = true;
  for (int i = 0; i < 500 && open_handle_count() <= probe->handles_at_entry; ++i) ::Sleep(10);
}

}  // namespace detail

/// winpthreads' thread-registry lock (mtx_pthr_locked, a static recursive pthread mutex in
/// mingw-w64 10's winpthreads/src/thread.c) is taken by every thread's start and exit and by
/// pthread_join. Like every winpthreads mutex it makes its kernel wait event (an unnamed auto-reset
/// Event) on its first contention and never closes it, as the lock lives as long as the process.
/// When that first contention happens depends on scheduling: under load it came inside a random
/// test's count (+1 Event, 1 run in 4 to 20; the listener's diff named the lock by its image offset).
/// Here it is forced, deterministically: a thread exits holding the lock (its thread-specific
/// destructor runs under it) until pthread_join, called meanwhile, has made the event.
inline void prime_thread_registry_lock() {
  pthread_key_t key;
  if (pthread_key_create(&key, detail::hold_registry_lock_until_contended) != 0) return;
  (void)open_handle_count();  // its statics made now, not in the destructor
  detail::registry_lock_probe probe;
  std::thread exiting([&] { pthread_setspecific(key, &probe); });
  while (!probe.holding) std::this_thread::yield();
  exiting.join();  // blocks on the lock the exiting thread holds: the lock's event is made
  pthread_key_delete(key);
}

/// The first C++ exception a mingw-w64 process throws makes the runtime open two kernel objects it
/// keeps for the life of the process (measured under Wine: +2 handles on the first throw, none after);
/// the thread-registry lock's event is forced (prime_thread_registry_lock); rounds of threads alive
/// at once leave winpthreads' thread records in the state later tests find them in.
inline void prime_runtime_handles() {
  prime_thread_registry_lock();
  try {
    throw std::runtime_error("priming the exception runtime");
  } catch (const std::runtime_error&) {
  }
  for (int round = 0; round < 2; ++round) {  // several alive at once
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
