// bench/producer/frame_memory.hpp: what the producer and consumers benchmarks share around their
// frame step kernel (producer_kernels.cuh): the device memory of one lane (frame counter, overflow
// count, seed, the ring of slots and the stamp log) with its reset and its data check, the
// counters a producer thread and a consumer thread hand each other, and the block both run with them.
#pragma once

#include "cuda_support.hpp"
#include "producer_kernels.cuh"

#include "stats.hpp"

#include <membridge/cuda/device.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <cuda_runtime.h>

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>

namespace membridge::bench::producer_bench {

/// How long a thread waits for the other (handoff::wait_for) or for a semaphore.
inline constexpr auto wait_limit = std::chrono::seconds(10);

/// The GPU a frame benchmark runs on: CUDA device `ordinal` and a Vulkan context on the same GPU (the
/// frame timeline's semaphores are Vulkan's). Declared in that order, so the context goes first.
struct frame_devices {
  cuda::device cu;           ///< The CUDA device (the runtime's current device too).
  vulkan::device_context vk; ///< A Vulkan context on the same GPU (sync::create_vulkan_context_for).
  int driver_version = 0;    ///< cudaDriverGetVersion.
  int runtime_version = 0;   ///< cudaRuntimeGetVersion.
};

/// Makes `ordinal` the runtime's device (open_runtime_device), opens it and a Vulkan context on the
/// same GPU, and reads the CUDA driver's and runtime's versions. Throws device_unavailable with the
/// reason when a device is missing, bench_failure when a version cannot be read.
/// Ownership: the caller owns both.
[[nodiscard]] frame_devices open_frame_devices(int ordinal);

/// {"device", "device_uuid", "vulkan_device"}: the keys every frame benchmark's JSON line names its
/// GPU with, in that order (append them with json::update).
[[nodiscard]] json devices_json(const frame_devices& d);

/// Device memory of one lane: the frame counter, the seed, an overflow count, the ring and the log
/// (`log_frames` frames of `k` stamps). Move-only in spirit: neither copied nor moved.
/// Ownership: the object owns its cudaMalloc'd memory; a failure to allocate ends the benchmark.
class frame_memory {
 public:
  /// `slots` ring slots of `slot_words` words, a log of `log_frames` frames of `k` steps each.
  frame_memory(std::uint64_t log_frames, std::uint32_t slots, std::uint32_t slot_words, std::uint32_t k);
  frame_memory(const frame_memory&) = delete;
  frame_memory& operator=(const frame_memory&) = delete;
  /// cudaFree (its status is ignored).
  ~frame_memory();

  /// Step `step`'s arguments for a frame in `slot`. Inline: the benchmarks call it inside their
  /// timed region, as they did when each had its own copy.
  [[nodiscard]] step_args args(std::uint32_t slot, std::uint32_t step) const {
    return {.frame_counter = counter_,
            .slot = slots_ + std::size_t{slot} * slot_words_,
            .slot_words = slot_words_,
            .log = log_,
            .log_frames = log_frames_,
            .overflows = overflows_,
            .step = step,
            .steps = k_,
            .seed = seed_};
  }

  /// Before a block: counter and overflows 0, the log and the slots cleared, a fresh seed; waits.
  void reset(std::uint32_t seed, cudaStream_t stream);

  /// After a block of `total` frames whose first absolute frame is `first`: every frame's stamps in
  /// the log, the counter at `total`, no overflow, each slot holding its last frame's last stamp.
  /// Throws bench_failure naming `what` otherwise.
  void verify(std::uint32_t seed, std::uint64_t first, std::uint64_t total, const std::string& what) const;

 private:
  [[nodiscard]] std::size_t bytes() const;

  void* base_ = nullptr;
  unsigned long long* counter_ = nullptr;
  unsigned long long* overflows_ = nullptr;
  std::uint32_t* seed_ = nullptr;
  std::uint32_t* slots_ = nullptr;
  std::uint32_t* log_ = nullptr;
  std::uint32_t k_ = 1;
  std::uint64_t log_frames_ = 0;
  std::uint32_t slot_words_ = 0;
  std::uint32_t slot_count_ = 0;
};

/// Counters the producer and consumer threads hand each other (host only, never the GPU).
struct handoff {
  std::atomic<std::uint64_t> enqueued{0};   ///< Frames (of the block) the producer has enqueued.
  std::atomic<std::uint64_t> submitted{0};  ///< Frames the consumer has submitted.
  std::atomic<bool> failed{false};          ///< Set by a thread that failed.

  /// Waits until `counter` reaches `value`; throws bench_failure when the other thread failed or
  /// after wait_limit. `what` says what is waited for. Inline, as in the loops it paces before.
  static void wait_for(const std::atomic<std::uint64_t>& counter, std::uint64_t value, const std::atomic<bool>& failed,
                       const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + wait_limit;
    while (counter.load(std::memory_order_acquire) < value) {
      if (failed.load(std::memory_order_acquire)) throw bench_failure(std::string("the other thread failed while ") + what);
      if (std::chrono::steady_clock::now() > deadline) throw bench_failure(std::string("timed out ") + what);
      std::this_thread::yield();
    }
  }
};

/// The calling thread pinned to one CPU while the object lives (pthread_setaffinity_np), its former
/// CPU set restored at destruction. A CPU of -1 pins nothing. Threads started while it lives inherit
/// the pin: start them first.
class cpu_pin {
 public:
  /// Pins the calling thread to `cpu` (-1: nothing). Throws bench_failure when the CPU set cannot
  /// be read or `cpu` is not one this process may run on (the message names it).
  explicit cpu_pin(int cpu) {
    if (cpu < 0) return;
    if (cpu >= CPU_SETSIZE) throw bench_failure("--pin-cpu " + std::to_string(cpu) + ": beyond CPU_SETSIZE");
    if (const int rc = pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_); rc != 0)
      throw bench_failure("pthread_getaffinity_np failed (" + std::to_string(rc) + ")");
    if (CPU_ISSET(static_cast<std::size_t>(cpu), &saved_) == 0)
      throw bench_failure("--pin-cpu " + std::to_string(cpu) + ": not a CPU this process may run on");
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(static_cast<std::size_t>(cpu), &one);
    if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof one, &one); rc != 0)
      throw bench_failure("pthread_setaffinity_np to CPU " + std::to_string(cpu) + " failed (" + std::to_string(rc) + ")");
    pinned_ = true;
  }
  cpu_pin(const cpu_pin&) = delete;
  cpu_pin& operator=(const cpu_pin&) = delete;
  /// Restores the former CPU set (a failure is ignored: the thread stays pinned).
  ~cpu_pin() {
    if (pinned_) (void)pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
  }

 private:
  cpu_set_t saved_{};
  bool pinned_ = false;
};

/// One block of frames as both benchmarks pace it: absolute frames first .. first + total - 1, the
/// first `warmup` of them untimed, `slots` frames in flight.
struct paced_block {
  std::uint64_t first = 0;             ///< The block's first absolute frame.
  std::uint64_t total = 0;             ///< Frames in the block (warm-up included).
  std::uint64_t warmup = 0;            ///< Untimed frames at its start.
  std::uint32_t slots = 1;             ///< Ring slots (frames in flight).
  const char* consumer_wait = nullptr; ///< What the producer waits for, e.g. "waiting for the consumer to submit a frame".
  int pin_cpu = -1;                    ///< The producer thread's CPU during the block (-1: not pinned; the consumer never is).
};

/// Runs block `b` on two threads. A consumer thread, per frame n: waits until the producer enqueued
/// it, then (as a renderer reusing its frame resources) until frame n - slots was consumed, then
/// calls submit(n). This thread (pinned to `b.pin_cpu` once the consumer thread has started, unless
/// -1; its CPU set restored at the end), per frame n: waits until the consumer submitted frame n - slots,
/// records `ev0` on `stream` before the first timed frame, calls produce(n) between two steady_clock
/// readings and, for a timed frame, timed(microseconds); `ev1` is recorded after the last frame.
/// After a failure on either thread, unblock() runs (so no stream or queue waits forever) and the
/// failure is rethrown. Inline: produce() is the benchmarks' timed region, as in their own loops.
template <class Submit, class Produce, class Timed, class Unblock>
void run_paced_block(const paced_block& b, const sync::frame_timeline& timeline, cudaStream_t stream, cudaEvent_t ev0,
                     cudaEvent_t ev1, Submit&& submit, Produce&& produce, Timed&& timed, Unblock&& unblock) {
  handoff h;
  std::exception_ptr consumer_error;
  std::thread consumer([&] {
    try {
      for (std::uint64_t i = 0; i < b.total; ++i) {
        handoff::wait_for(h.enqueued, i + 1, h.failed, "waiting for the producer to enqueue a frame");
        // A renderer waits for the frame `slots` back before reusing its frame resources.
        if (b.first + i >= b.slots)
          ok_or_fail(timeline.wait_consumed(b.first + i - b.slots, wait_limit), "frame_timeline::wait_consumed");
        submit(b.first + i);
        h.submitted.store(i + 1, std::memory_order_release);
      }
    } catch (...) {
      consumer_error = std::current_exception();
      h.failed.store(true, std::memory_order_release);
    }
  });
  try {
    const cpu_pin pin(b.pin_cpu);  // after the consumer started: it must not inherit the pin
    for (std::uint64_t i = 0; i < b.total; ++i) {
      const std::uint64_t n = b.first + i;
      // The slot is free on the GPU once frame n - slots was consumed: wait on the host only until
      // that frame's consumer submit exists (never for the GPU), as the GL benchmark's producer.
      if (i >= b.slots) handoff::wait_for(h.submitted, i - b.slots + 1, h.failed, b.consumer_wait);
      if (i == b.warmup) check_cuda(cudaEventRecord(ev0, stream), "cudaEventRecord");
      const auto t0 = std::chrono::steady_clock::now();
      produce(n);
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= b.warmup) timed(std::chrono::duration<double, std::micro>(t1 - t0).count());
      h.enqueued.store(i + 1, std::memory_order_release);
    }
    check_cuda(cudaEventRecord(ev1, stream), "cudaEventRecord");
  } catch (...) {
    h.failed.store(true, std::memory_order_release);
    consumer.join();
    unblock();
    throw;
  }
  consumer.join();
  if (consumer_error) {
    unblock();
    std::rethrow_exception(consumer_error);
  }
}

}  // namespace membridge::bench::producer_bench
