// bench/growth/measure.cpp: the growth rounds and the bandwidth launches (what is timed), the
// peer's cudaMalloc memory, the memory-in-use tracker and the data checks.
#include "growth/measure.hpp"

#include "cuda_support.hpp"
#include "kernels.cuh"

#include <membridge/core/result.hpp>
#include <membridge/cuda/growable_buffer.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <source_location>
#include <string>
#include <utility>

namespace membridge::bench::growth {

/// Checks a CUDA runtime call: on failure the benchmark ends with status 1 and a message naming
/// file:line, the call and the error.
#define MEMBRIDGE_BENCH_CUDA(...) check_cuda((__VA_ARGS__), #__VA_ARGS__)

namespace {

namespace gpu = membridge::testing::gpu;
using membridge::format_bytes;
using membridge::cuda::growable_buffer;

// --------------------------------------------------------------------------------- CUDA helpers ---

/// Device memory from cudaMalloc, released with cudaFree: the peer's memory. Move-only.
class cuda_memory {
 public:
  /// cudaMalloc(`bytes`); a failure ends the benchmark.
  static cuda_memory allocate(std::size_t bytes, std::source_location where = std::source_location::current()) {
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes), "cudaMalloc(" + format_bytes(bytes) + ")", where);
    return cuda_memory(p);
  }

  cuda_memory() noexcept = default;
  cuda_memory(const cuda_memory&) = delete;
  cuda_memory& operator=(const cuda_memory&) = delete;
  cuda_memory(cuda_memory&& other) noexcept : p_(std::exchange(other.p_, nullptr)) {}
  cuda_memory& operator=(cuda_memory&& other) noexcept {
    if (this != &other) {
      free_quietly();
      p_ = std::exchange(other.p_, nullptr);
    }
    return *this;
  }
  ~cuda_memory() { free_quietly(); }

  /// cudaFree now (it waits for the device first); a failure ends the benchmark.
  void free() {
    if (p_ != nullptr) MEMBRIDGE_BENCH_CUDA(cudaFree(std::exchange(p_, nullptr)));
  }

  /// The device address (nullptr when empty).
  [[nodiscard]] void* get() const noexcept { return p_; }

 private:
  explicit cuda_memory(void* p) noexcept : p_(p) {}

  // Frees from a destructor or an assignment: a failure is reported on stderr, never thrown.
  void free_quietly() noexcept {
    if (p_ == nullptr) return;
    if (const cudaError_t rc = cudaFree(std::exchange(p_, nullptr)); rc != cudaSuccess)
      std::cerr << "warning: cudaFree: " << cuda_error_text(rc) << '\n';
  }

  void* p_ = nullptr;
};

/// Times GPU work on the default stream with a pair of CUDA events.
class event_timer {
 public:
  /// Milliseconds the GPU spent on the work `launch` enqueues (it returns the launch's status);
  /// waits for that work. `what` names the work in error messages.
  template <class Launch>
  double time_ms(std::string_view what, Launch launch) {
    MEMBRIDGE_BENCH_CUDA(cudaEventRecord(start_.get()));
    check_cuda(launch(), what);
    MEMBRIDGE_BENCH_CUDA(cudaEventRecord(stop_.get()));
    MEMBRIDGE_BENCH_CUDA(cudaEventSynchronize(stop_.get()));
    return elapsed_ms(start_, stop_);
  }

 private:
  cuda_event start_;
  cuda_event stop_;
};

/// The most device memory in use above what was in use when the tracker was made (the baseline);
/// sample() right after each allocation.
class peak_tracker {
 public:
  peak_tracker() : baseline_(memory_in_use()) {}

  /// Reads the memory in use now and keeps the peak.
  void sample() {
    const std::size_t used = memory_in_use();
    if (used > baseline_) peak_ = std::max(peak_, used - baseline_);
  }

  /// Bytes above the baseline at the highest sample.
  [[nodiscard]] std::size_t peak() const noexcept { return peak_; }

 private:
  std::size_t baseline_ = 0;
  std::size_t peak_ = 0;
};

/// `p` advanced by `offset` bytes.
void* byte_offset(void* p, std::size_t offset) { return static_cast<std::byte*>(p) + offset; }

/// Writes bytes [offset, offset + bytes) of the buffer at `base` with its part of the pattern of
/// `seed` (word offset/4 onwards), so that a buffer filled region by region holds one pattern; waits
/// for it, so that the next timed operation starts on an idle GPU.
void fill_region(void* base, std::size_t offset, std::size_t bytes, std::uint32_t seed) {
  MEMBRIDGE_BENCH_CUDA(gpu::fill_pattern(byte_offset(base, offset), bytes, seed, offset / 4));
  MEMBRIDGE_BENCH_CUDA(cudaDeviceSynchronize());
}

/// Throws bench_failure naming `what` when `bad` of the `bytes / 4` words checked differ from
/// `expected` ("the pattern written", "the value written").
void require_no_bad_words(unsigned long long bad, std::size_t bytes, std::string_view what, std::string_view expected) {
  if (bad != 0)
    throw bench_failure("data check failed: " + std::string(what) + ": " + std::to_string(bad) + " of " +
                        std::to_string(bytes / 4) + " words differ from " + std::string(expected));
}

/// Checks that the `bytes` at `p` hold the pattern of `seed`; throws bench_failure naming `what`
/// and the number of wrong words otherwise.
void verify_pattern(const void* p, std::size_t bytes, std::uint32_t seed, std::string_view what) {
  unsigned long long bad = 0;
  MEMBRIDGE_BENCH_CUDA(gpu::count_mismatches(p, bytes, seed, bad));
  require_no_bad_words(bad, bytes, what, "the pattern written");
}

/// Checks that every 32-bit word of the `bytes` at `p` equals `value`; throws bench_failure otherwise.
void verify_value(const void* p, std::size_t bytes, std::uint32_t value, std::string_view what) {
  unsigned long long bad = 0;
  MEMBRIDGE_BENCH_CUDA(gpu::count_not_equal(p, bytes, value, bad));
  require_no_bad_words(bad, bytes, what, "the value written");
}

/// The memory a pattern is for (growth method or bandwidth memory), for pattern seeds.
enum class growth_method : std::uint8_t { classic = 0, vmm = 1 };

/// A pattern seed for round `round_index` (0: the warm-up) of `m`: distinct for every round and
/// method, so a buffer placed on memory an earlier round used cannot pass its check with that
/// round's leftovers. (Multiplying by an odd constant is a bijection on 32-bit words.)
std::uint32_t seed_for(unsigned round_index, growth_method m) {
  return 0x9e3779b9U * (2U * round_index + static_cast<unsigned>(m) + 1U);
}

/// "warm-up round" or "round 3", for messages.
std::string round_name(unsigned round_index) {
  return round_index == 0 ? "warm-up round" : "round " + std::to_string(round_index);
}

// -------------------------------------------------------------------------------------- growth ---

using steady = std::chrono::steady_clock;

/// Milliseconds from `start` to now.
double ms_since(steady::time_point start) {
  return std::chrono::duration<double, std::milli>(steady::now() - start).count();
}

/// the memory in use (the peak is right after the allocation), then `finish` (copy and free, or
/// nothing) and a cudaDeviceSynchronize. Returns milliseconds, the look at memory excluded.
template <class Allocate, class Finish>
double timed_step(Allocate allocate, peak_tracker& peak, Finish finish) {
  const auto allocate_start = steady::now();
  allocate();
  const double allocate_ms = ms_since(allocate_start);
  peak.sample();
  const auto finish_start = steady::now();
  finish();
  MEMBRIDGE_BENCH_CUDA(cudaDeviceSynchronize());
  return allocate_ms + ms_since(finish_start);
}

/// Round `round_index` (0: the warm-up) of growth without membridge: cudaMalloc the doubled size,
/// cudaMemcpy the old contents, cudaFree the old buffer, from 64 MiB to 4 GiB. The new half is
/// filled (not timed) after each step and the whole 4 GiB is checked at the end.
growth_round grow_classic(unsigned round_index) {
  const std::uint32_t seed = seed_for(round_index, growth_method::classic);
  MEMBRIDGE_BENCH_CUDA(cudaDeviceSynchronize());
  peak_tracker peak;
  growth_round measured;
  cuda_memory buffer = cuda_memory::allocate(start_size);
  peak.sample();
  fill_region(buffer.get(), 0, start_size, seed);
  for (std::size_t size = start_size; size < final_size; size *= 2) {
    cuda_memory bigger;
    const auto allocate = [&] { bigger = cuda_memory::allocate(2 * size); };
    const auto copy_and_free = [&] {
      MEMBRIDGE_BENCH_CUDA(cudaMemcpy(bigger.get(), buffer.get(), size, cudaMemcpyDeviceToDevice));
      buffer.free();
    };
    measured.step_ms.push_back(timed_step(allocate, peak, copy_and_free));
    buffer = std::move(bigger);
    fill_region(buffer.get(), size, size, seed);
  }
  verify_pattern(buffer.get(), final_size, seed,
                 std::string(classic_label) + " growth to 4 GiB, " + round_name(round_index));
  measured.peak_bytes = peak.peak();
  return measured;
}

/// A growable_buffer of 64 MiB that may grow to 8 GiB, with the default chunk policy (one chunk per
/// doubling).
growable_buffer create_growable(const membridge::cuda::device& device) {
  return value_or_fail(growable_buffer::create(device, {.size = start_size, .max_size = reserved_size}),
                       "growable_buffer::create");
}

/// Round `round_index` (0: the warm-up) of growth with membridge: growable_buffer::grow to the
/// doubled size (maps one chunk, copies nothing), from 64 MiB to 4 GiB. The new half is filled (not
/// timed) after each step and the whole 4 GiB is checked at the end. The buffer is destroyed after
/// the round (not timed).
growth_round grow_vmm(const membridge::cuda::device& device, unsigned round_index) {
  const std::uint32_t seed = seed_for(round_index, growth_method::vmm);
  MEMBRIDGE_BENCH_CUDA(cudaDeviceSynchronize());
  peak_tracker peak;
  growth_round measured;
  growable_buffer buffer = create_growable(device);
  peak.sample();
  fill_region(buffer.data(), 0, start_size, seed);
  for (std::size_t size = start_size; size < final_size; size *= 2) {
    const auto grow = [&] {
      value_or_fail(buffer.grow(2 * size), "growable_buffer::grow to " + format_bytes(2 * size));
    };
    measured.step_ms.push_back(timed_step(grow, peak, [] {}));
    fill_region(buffer.data(), size, size, seed);
  }
  verify_pattern(buffer.data(), final_size, seed,
                 std::string(vmm_label) + " growth to 4 GiB, " + round_name(round_index));
  measured.peak_bytes = peak.peak();
  return measured;
}

// ----------------------------------------------------------------------------------- bandwidth ---

/// Where one kind of memory's bandwidth kernels read and write.
struct bandwidth_memory {
  std::string_view label;  ///< For messages.
  void* src = nullptr;     ///< bandwidth_size bytes holding the pattern of `seed`.
  void* dst = nullptr;     ///< bandwidth_size bytes written by the kernels.
  std::uint32_t seed = 0;  ///< The pattern in src.
};

/// A growable_buffer grown from 64 MiB to 4 GiB by doubling, as an application's buffer would be
/// (with the default policy: 7 chunks, 64 MiB, 64 MiB, 128 MiB, ... 2 GiB).
growable_buffer grown_buffer(const membridge::cuda::device& device) {
  growable_buffer buffer = create_growable(device);
  for (std::size_t size = start_size; size < final_size; size *= 2)
    value_or_fail(buffer.grow(2 * size), "growable_buffer::grow to " + format_bytes(2 * size));
  return buffer;
}

/// Runs `launch(memory, i)` for i = 0 .. warm-up + timed launches on both memories, alternating
/// which goes first, each launch timed alone with CUDA events. Returns the timed launches'
/// milliseconds per memory (same index as `memories`); warm-up launches are dropped.
template <class Launch>
std::array<std::vector<double>, 2> time_interleaved(const std::array<bandwidth_memory, 2>& memories,
                                                    std::string_view kernel, Launch launch) {
  event_timer timer;
  std::array<std::vector<double>, 2> ms;
  for (int i = 0; i < warmup_launches + timed_launches; ++i) {
    for (std::size_t k = 0; k < memories.size(); ++k) {
      const std::size_t m = i % 2 == 0 ? k : memories.size() - 1 - k;
      const double elapsed = timer.time_ms(kernel, [&] { return launch(memories[m], i); });
      if (i >= warmup_launches) ms[m].push_back(elapsed);
    }
  }
  return ms;
}

/// GB/s (10^9 bytes per second) for each duration in `ms`, moving `bytes` bytes.
std::vector<double> to_gbps(const std::vector<double>& ms, double bytes) {
  std::vector<double> out;
  out.reserve(ms.size());
  for (const double t : ms) out.push_back(bytes / (t * 1e6));
  return out;
}

/// The value write16 stores in launch `i` (a different one per launch, the same for both memories).
std::uint32_t write_value(int i) { return 0xa5a50000U + static_cast<std::uint32_t>(i); }

/// copy16 and write16 over 4 GiB on two growable_buffers (grown by doubling) versus two cudaMalloc'd

}  // namespace

// ------------------------------------------------------------------------------ the entry points ---

gpu_session open_gpu(int ordinal) {
  bench::open_runtime_device(ordinal);
  auto device = membridge::cuda::device::open(ordinal);
  if (!device) throw device_unavailable(device.error().message());
  gpu_session session{std::move(device).value(), 0, 0};
  MEMBRIDGE_BENCH_CUDA(cudaDriverGetVersion(&session.driver_version));
  MEMBRIDGE_BENCH_CUDA(cudaRuntimeGetVersion(&session.runtime_version));
  return session;
}


void require_free_memory() {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  MEMBRIDGE_BENCH_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < required_free_memory)
    throw device_unavailable(format_bytes(free_bytes) + " of " + format_bytes(total_bytes) +
                             " free, the benchmark needs " + format_bytes(required_free_memory));
}

growth_results run_growth(const membridge::cuda::device& device, int rounds) {
  (void)grow_classic(0);
  (void)grow_vmm(device, 0);
  growth_results out;
  for (unsigned round_index = 1; round_index <= static_cast<unsigned>(rounds); ++round_index) {
    if (round_index % 2 == 1) {
      out.classic.push_back(grow_classic(round_index));
      out.vmm.push_back(grow_vmm(device, round_index));
    } else {
      out.vmm.push_back(grow_vmm(device, round_index));
      out.classic.push_back(grow_classic(round_index));
    }
  }
  return out;
}

bandwidth_results run_bandwidth(const membridge::cuda::device& device) {
  const growable_buffer vmm_src = grown_buffer(device);
  const growable_buffer vmm_dst = grown_buffer(device);
  const cuda_memory classic_src = cuda_memory::allocate(bandwidth_size);
  const cuda_memory classic_dst = cuda_memory::allocate(bandwidth_size);
  const std::uint32_t classic_seed = seed_for(bandwidth_seed_round, growth_method::classic);
  const std::uint32_t vmm_seed = seed_for(bandwidth_seed_round, growth_method::vmm);
  const std::array<bandwidth_memory, 2> memories{{
      {"cudaMalloc", classic_src.get(), classic_dst.get(), classic_seed},
      {vmm_label, vmm_src.data(), vmm_dst.data(), vmm_seed},
  }};
  for (const bandwidth_memory& m : memories) fill_region(m.src, 0, bandwidth_size, m.seed);

  const auto copy_ms = time_interleaved(memories, "copy16", [](const bandwidth_memory& m, int) {
    return gpu::copy16(m.src, m.dst, bandwidth_size);
  });
  for (const bandwidth_memory& m : memories)
    verify_pattern(m.dst, bandwidth_size, m.seed, std::string(m.label) + " copy16 output");

  const auto write_ms = time_interleaved(memories, "write16", [](const bandwidth_memory& m, int i) {
    return gpu::write16(m.dst, bandwidth_size, write_value(i));
  });
  for (const bandwidth_memory& m : memories)
    verify_value(m.dst, bandwidth_size, write_value(warmup_launches + timed_launches - 1),
                 std::string(m.label) + " write16 output");

  constexpr auto bytes = static_cast<double>(bandwidth_size);
  bandwidth_results out;
  out.classic = {to_gbps(copy_ms[0], 2 * bytes), to_gbps(write_ms[0], bytes)};
  out.vmm = {to_gbps(copy_ms[1], 2 * bytes), to_gbps(write_ms[1], bytes)};
  out.vmm_chunks = vmm_src.chunk_count();
  return out;
}

}  // namespace membridge::bench::growth
