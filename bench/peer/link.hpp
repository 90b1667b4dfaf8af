// bench/peer/link.hpp: part 1, the link: kernel read and write bandwidth on the remote GPU's memory
// through a membridge peer mapping versus the copy engine's peer copies on the same link, both
// directions, interleaved, data checked.
#pragma once

#include "support.hpp"

#include <cstddef>
#include <vector>

namespace membridge::bench::peer {

/// How part 1 runs.
struct link_config {
  std::size_t bytes = 0;  ///< Bytes per transfer.
  int warmup = 0;         ///< Untimed rounds first (data still checked).
  int rounds = 0;         ///< Timed rounds; each runs the four transfers once, in a rotating order.
};

/// GB/s of each transfer, one value per round (index i of each vector: the same round).
struct link_samples {
  std::vector<double> kernel_read;   ///< read16 on the local GPU of remote memory (data remote -> local).
  std::vector<double> copy_read;     ///< cudaMemcpyPeerAsync remote -> local (the local GPU's stream).
  std::vector<double> kernel_write;  ///< write16 on the local GPU into remote memory (data local -> remote).
  std::vector<double> copy_write;    ///< cudaMemcpyPeerAsync local -> remote.
};

/// The device memory part 1 needs on each GPU: its largest use, for require_free_memory.
struct link_memory_need {
  std::size_t local = 0;   ///< Bytes on the local GPU.
  std::size_t remote = 0;  ///< Bytes on the remote GPU.
};

/// What measure_link allocates for `config`.
[[nodiscard]] link_memory_need link_memory(const link_config& config);

/// Runs part 1 on `gpus` (local current). Enables the runtime's peer access local -> remote for the
/// copy engine's cudaMalloc buffers (what a user of the runtime writes); the kernels use membridge's
/// mapping, which needs no peer access. Throws bench_failure on a CUDA or membridge error or wrong data.
[[nodiscard]] link_samples measure_link(const gpu_pair& gpus, const link_config& config);

}  // namespace membridge::bench::peer
