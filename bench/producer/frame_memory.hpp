// bench/producer/frame_memory.hpp: what the producer and consumers benchmarks share around their
// frame step kernel (producer_kernels.cuh): the device memory of one lane (frame counter, overflow
// count, seed, the ring of slots and the stamp log) with its reset and its data check, and the
// counters a producer thread and a consumer thread hand each other.
#pragma once

#include "cuda_support.hpp"
#include "producer_kernels.cuh"

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>

namespace membridge::bench::producer_bench {

/// How long a thread waits for the other (handoff::wait_for) or for a semaphore.
inline constexpr auto wait_limit = std::chrono::seconds(10);

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
    step_args a;
    a.frame_counter = counter_;
    a.slot = slots_ + std::size_t{slot} * slot_words_;
    a.slot_words = slot_words_;
    a.log = log_;
    a.log_frames = log_frames_;
    a.overflows = overflows_;
    a.step = step;
    a.steps = k_;
    a.seed = seed_;
    return a;
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

}  // namespace membridge::bench::producer_bench
