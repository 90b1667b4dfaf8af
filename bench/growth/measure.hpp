// bench/growth/measure.hpp: what the growth benchmark measures: growing device memory from 64 MiB
// to 4 GiB by doubling with growable_buffer versus cudaMalloc + cudaMemcpy + cudaFree, interleaved
// round by round, and kernel bandwidth on both memories, interleaved launch by launch. Every
// measurement checks its data; a failure throws bench_failure.
#pragma once

#include <membridge/core/units.hpp>
#include <membridge/cuda/device.hpp>

#include <cmath>
#include <cstddef>
#include <numeric>
#include <string_view>
#include <vector>

namespace membridge::bench::growth {

using namespace membridge::literals;

// ------------------------------------------------------------------------------------ parameters ---

constexpr std::size_t start_size = 64_MiB;           // first size of every growing buffer
constexpr std::size_t final_size = 4_GiB;            // last size (1 << 32 bytes)
constexpr int growth_steps = 6;                      // doublings from start_size to final_size
constexpr std::size_t reserved_size = 8_GiB;         // growable_buffer's max_size: address space, not memory
constexpr std::size_t bandwidth_size = final_size;   // each bandwidth buffer is a grown 4 GiB buffer
constexpr int warmup_launches = 5;                   // per kernel and memory, not recorded
constexpr int timed_launches = 30;                   // per kernel and memory
constexpr unsigned bandwidth_seed_round = 1001;      // seeds unlike any growth round's (--rounds <= 1000)
constexpr std::size_t peak_slack = 2_MiB;            // what the runtime may add to a peak of final_size
constexpr double speedup_goal = 10.0;                // total growth time, classic / growable_buffer
constexpr double bandwidth_goal = 0.99;              // kernel bandwidth, growable_buffer / cudaMalloc
// The bandwidth test holds four 4 GiB buffers at once (the growth test at most 6 GiB); keep 1 GiB spare.
constexpr std::size_t required_free_memory = 4 * bandwidth_size + 1_GiB;

static_assert((start_size << growth_steps) == final_size, "growth_steps doublings must reach final_size");
static_assert(final_size == std::size_t{1} << 32U);

constexpr std::string_view classic_label = "cudaMalloc+copy+free";
constexpr std::string_view vmm_label = "growable_buffer";

// -------------------------------------------------------------------------------------- device ---

/// The device the benchmark runs on, opened for the CUDA runtime and for membridge; both work in
/// the device's primary context, so runtime kernels can use membridge's memory.
struct gpu_session {
  membridge::cuda::device device;  ///< membridge's handle (retains the primary context).
  int driver_version = 0;          ///< cudaDriverGetVersion, e.g. 13000 for CUDA 13.0.
  int runtime_version = 0;         ///< cudaRuntimeGetVersion (the static runtime linked in).
};

/// Opens CUDA device `ordinal`: the runtime first (cudaSetDevice, then cudaFree(nullptr) creates the
/// primary context), then membridge in the same context. Throws device_unavailable with the reason
/// when there is no usable device.
[[nodiscard]] gpu_session open_gpu(int ordinal);

/// Throws device_unavailable unless the device has the free memory the benchmark needs.
void require_free_memory();

// -------------------------------------------------------------------------------------- growth ---

/// One growth method in one round.
struct growth_round {
  std::vector<double> step_ms;  ///< Each doubling, in order: host API calls, copy, final synchronize.
  std::size_t peak_bytes = 0;   ///< Most device memory in use above the round's baseline.

  /// All steps together (64 MiB -> 4 GiB).
  [[nodiscard]] double total_ms() const { return std::accumulate(step_ms.begin(), step_ms.end(), 0.0); }
  /// The last step alone (2 GiB -> 4 GiB).
  [[nodiscard]] double last_ms() const { return step_ms.empty() ? std::nan("") : step_ms.back(); }
};

/// Every recorded round of both methods.
struct growth_results {
  std::vector<growth_round> classic;  ///< cudaMalloc + cudaMemcpy + cudaFree.
  std::vector<growth_round> vmm;      ///< growable_buffer::grow.
};

/// One untimed warm-up round of each method (module loading, first large allocations, first
/// cuMemCreate), then `rounds` rounds of both, alternating which method goes first.
[[nodiscard]] growth_results run_growth(const membridge::cuda::device& device, int rounds);

// ----------------------------------------------------------------------------------- bandwidth ---

/// Timed samples of one memory, in GB/s (10^9 bytes per second).
struct bandwidth_samples {
  std::vector<double> copy_gbps;   ///< copy16, counting bytes read + written.
  std::vector<double> write_gbps;  ///< write16, counting bytes written.
};

/// Both memories' samples.
struct bandwidth_results {
  bandwidth_samples classic;   ///< Two cudaMalloc'd 4 GiB buffers.
  bandwidth_samples vmm;       ///< Two growable_buffers grown 64 MiB -> 4 GiB.
  std::size_t vmm_chunks = 0;  ///< Chunks of each growable_buffer (7 with the default policy).
};

/// copy16 and write16 over 4 GiB on two growable_buffers (grown by doubling) versus two cudaMalloc'd
/// buffers, interleaved per launch; checks the copy's and the last write's output on both.
[[nodiscard]] bandwidth_results run_bandwidth(const membridge::cuda::device& device);

}  // namespace membridge::bench::growth
