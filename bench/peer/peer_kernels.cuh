// bench/peer/peer_kernels.cuh: the peer benchmark's read kernel: every byte of a buffer loaded once with
// 16-byte loads (a persistent grid, four loads in flight per thread) and folded into a checksum, so
// that the loads cannot be dropped and the data read is checked.
#pragma once

#include <cuda_runtime.h>  // also defines __host__ / __device__ for host-compiled includers

#include <cstddef>
#include <cstdint>

namespace membridge::bench::peer {

/// Reads the `bytes` (a multiple of 16) at `p` with 16-byte loads on the current device and xors
/// them into `*sink` (8 bytes of device memory on the current device, which the caller zeroes
/// first): the low half of the result is the xor of the even 32-bit words, the high half of the odd
/// ones (see read_checksum). Does not wait. `blocks` blocks of 256 threads stride over the buffer
/// (0: 8 per multiprocessor of the current device).
cudaError_t read16(const void* p, std::size_t bytes, unsigned long long* sink, unsigned blocks = 0,
                   cudaStream_t stream = nullptr);

/// What read16 leaves in a zeroed sink for `words` 32-bit words whose word i is `word(i)`.
template <class Word>
std::uint64_t read_checksum(std::size_t words, Word word) {
  std::uint32_t even = 0;
  std::uint32_t odd = 0;
  for (std::size_t i = 0; i + 1 < words; i += 2) {
    even ^= word(i);
    odd ^= word(i + 1);
  }
  if (words % 2 != 0) even ^= word(words - 1);
  return (std::uint64_t{odd} << 32U) | even;
}

}  // namespace membridge::bench::peer
