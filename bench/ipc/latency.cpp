// (c)'s latency parts: the consumer's done monitor, per-frame CUDA events, and the latencies of a run
// from the three CLOCK_MONOTONIC readings per frame (see frames.cpp and frame_run).
#include "ipc/parts.hpp"

#include <exception>

namespace membridge::bench::ipc_bench {

done_monitor::done_monitor(std::uint64_t first, std::uint64_t total, wait_fn wait_done) : times_(total, 0) {
  thread_ = std::jthread([this, first, total, wait_done = std::move(wait_done)] {
    try {
      for (std::uint64_t m = first; m < total; ++m) {
        if (!wait_done(m, stop_)) return;
        times_[m] = monotonic_ns();
      }
    } catch (const std::exception& e) {
      const std::lock_guard guard(lock_);
      failure_ = e.what();
    }
  });
}

done_monitor::~done_monitor() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::vector<std::int64_t> done_monitor::take() {
  if (thread_.joinable()) thread_.join();
  {
    const std::lock_guard guard(lock_);
    if (!failure_.empty()) throw bench_failure("consumer's done monitor: " + failure_);
  }
  return std::move(times_);
}

frame_events::frame_events(std::uint64_t count) : events_(count, nullptr) {
  for (cudaEvent_t& e : events_) {
    const cudaError_t rc = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (rc != cudaSuccess) {
      e = nullptr;
      for (cudaEvent_t made : events_)
        if (made != nullptr) (void)cudaEventDestroy(made);
      check_cuda(rc, "cudaEventCreateWithFlags (frame events)");
    }
  }
}

frame_events::~frame_events() {
  for (cudaEvent_t e : events_)
    if (e != nullptr) (void)cudaEventDestroy(e);
}

void add_latencies(frame_run& run, const std::vector<std::int64_t>& release_ns, const consumer_result& seen,
                   std::uint64_t warmup, std::uint64_t total, const std::string& what) {
  if (seen.told_ns.size() != total || seen.done_ns.size() != total || release_ns.size() != total)
    throw bench_failure(what + ": per-frame times missing");
  for (std::uint64_t n = warmup; n < total; ++n) {
    const std::int64_t release = release_ns[n];
    const std::int64_t told = seen.told_ns[n];
    const std::int64_t done = seen.done_ns[n];
    if (release == 0 || told == 0 || done == 0) continue;  // a frame the consumer skipped
    if (told < release || done < told)
      throw bench_failure(what + ": negative latency at frame " + std::to_string(n) + " (release -> told " +
                          std::to_string(told - release) + " ns, told -> done " + std::to_string(done - told) +
                          " ns): the clock or the method is wrong");
    run.latency_us.push_back(us(done - release));
    run.delivery_us.push_back(us(told - release));
    run.consumer_us.push_back(us(done - told));
  }
  const std::uint64_t measured = total - warmup;
  if (run.latency_us.size() * 10 < measured * 9)
    throw bench_failure(what + ": only " + std::to_string(run.latency_us.size()) + " of " + std::to_string(measured) +
                        " measured frames have release, told and done times");
}

}  // namespace membridge::bench::ipc_bench
