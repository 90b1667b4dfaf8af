// CUDA kernels shared by the GPU tests and the benchmarks: deterministic patterns to write and
// check (so every test asserts the data, not a return code) and bandwidth kernels.
#pragma once

#include <cuda_runtime.h>  // also defines __host__ / __device__ for host-compiled includers

#include <cstddef>
#include <cstdint>

namespace membridge::testing::gpu {

/// The 32-bit word at index `i` of a pattern: a cheap hash, different for every index and seed.
__host__ __device__ inline std::uint32_t pattern(std::uint64_t i, std::uint32_t seed) {
  std::uint32_t x = static_cast<std::uint32_t>(i) * 2654435761u ^ seed ^ static_cast<std::uint32_t>(i >> 32);
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  x ^= x >> 12;
  return x;
}

/// Writes pattern words to `bytes` bytes at `p` (a multiple of 4); word k gets pattern(first_word + k).
cudaError_t fill_pattern(void* p, std::size_t bytes, std::uint32_t seed, std::uint64_t first_word = 0,
                         cudaStream_t stream = nullptr);

/// Counts the words at `p` that differ from the pattern; waits for the stream. On success `bad` holds
/// the count.
cudaError_t count_mismatches(const void* p, std::size_t bytes, std::uint32_t seed, unsigned long long& bad,
                             std::uint64_t first_word = 0, cudaStream_t stream = nullptr);

/// Copies `bytes` (a multiple of 16) with 16-byte loads and stores, four per thread in flight.
cudaError_t copy16(const void* src, void* dst, std::size_t bytes, cudaStream_t stream = nullptr);

/// Writes `bytes` (a multiple of 16) with 16-byte stores of `value`.
cudaError_t write16(void* dst, std::size_t bytes, std::uint32_t value, cudaStream_t stream = nullptr);

/// Counts the words at `p` that differ from `value`; waits for the stream.
cudaError_t count_not_equal(const void* p, std::size_t bytes, std::uint32_t value, unsigned long long& bad,
                            cudaStream_t stream = nullptr);

/// Writes a width x height image of 32-bit texels at `p` with rows `pitch` bytes apart; texel (x, y)
/// gets pattern(y * width + x, seed).
cudaError_t fill_pattern_2d(void* p, std::size_t pitch, std::uint32_t width, std::uint32_t height, std::uint32_t seed,
                            cudaStream_t stream = nullptr);
/// Counts texels of a pitched image that differ from `value`; waits for the stream.
cudaError_t count_not_equal_2d(const void* p, std::size_t pitch, std::uint32_t width, std::uint32_t height,
                               std::uint32_t value, unsigned long long& bad, cudaStream_t stream = nullptr);

/// Writes a width x height image of 32-bit texels (e.g. RGBA8) through a surface object: texel (x, y),
/// at byte x * 4 of row y, gets pattern(y * width + x, seed) (so R is the word's low byte).
cudaError_t fill_surface_pattern(cudaSurfaceObject_t surface, std::uint32_t width, std::uint32_t height,
                                 std::uint32_t seed, cudaStream_t stream = nullptr);
/// Counts the texels read through `surface` that differ from fill_surface_pattern's; waits for the
/// stream. On success `bad` holds the count.
cudaError_t count_surface_mismatches(cudaSurfaceObject_t surface, std::uint32_t width, std::uint32_t height,
                                     std::uint32_t seed, unsigned long long& bad, cudaStream_t stream = nullptr);

/// One frame of a producer that checks its consumer: if `expected_echo` >= 0 and *echo differs from
/// it, adds 1 to *errors; then writes `frame` to `words` 32-bit words at `slot`.
cudaError_t frame_step(std::uint32_t* slot, std::size_t words, std::uint32_t frame, const std::uint32_t* echo,
                       long long expected_echo, unsigned long long* errors, cudaStream_t stream = nullptr);

/// Adds to `*counter` (device memory) the number of 32-bit words at `p` that differ from `value`.
/// Does not wait: for consumers that check every frame without a host wait in the loop.
cudaError_t accumulate_not_equal(const void* p, std::size_t bytes, std::uint32_t value, unsigned long long* counter,
                                 cudaStream_t stream = nullptr);

/// Reads one 32-bit word every `stride` bytes (a multiple of 4) of the `bytes` at `p` and xors them
/// into `*sink` (device memory): touches every page of a new mapping at little cost. Does not wait.
cudaError_t touch_words(const void* p, std::size_t bytes, std::size_t stride, unsigned long long* sink,
                        cudaStream_t stream = nullptr);

/// One thread writes a frame's stamp into a slot header: header[0] = frame, header[1] = the GPU's
/// %globaltimer (ns) when it runs. Enqueue it after the frame's writes, right before the release:
/// kernels on one stream run in order, so the stamp is the time the frame's data was complete.
/// %globaltimer is one clock per GPU, the same for every context and process on it.
cudaError_t stamp_frame(std::uint64_t* header, std::uint64_t frame, cudaStream_t stream = nullptr);

/// A consumer's read of a slot stamped by stamp_frame(): thread 0 of block 0 writes log[0] = the
/// %globaltimer (ns) at its start and log[1] = header[1] (the producer's stamp), and adds 1 to
/// `*errors` if header[0] != frame; every thread adds the words of `words` (`count` 32-bit words)
/// that differ from the frame number's low 32 bits. Does not wait.
cudaError_t check_stamped_frame(const std::uint64_t* header, const std::uint32_t* words, std::size_t count,
                                std::uint64_t frame, std::uint64_t* log, unsigned long long* errors,
                                cudaStream_t stream = nullptr);

}  // namespace membridge::testing::gpu
