// bench/frame_loop/idle_work.hpp: the CUDA control viewers of the viewed part (viewer.hpp): per tick a
// little CUDA work, in the sim's own context (idle_cuda) or in a second context on the same GPU
// (idle_cuda_context), to tell the cost of work at the viewer's rate from the cost of switching to
// another context.
#pragma once

#include "particle_sim.hpp"  // samples/01_particles
#include "support.hpp"

#include <membridge/cuda/device.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace membridge::bench::frame_loop {

/// The idle_cuda control's own stream and 4 bytes in the sim's CUDA context.
class idle_cuda_work {
 public:
  /// Makes the stream and the word on CUDA device `ordinal` (the runtime's primary context).
  explicit idle_cuda_work(int ordinal);
  idle_cuda_work(const idle_cuda_work&) = delete;
  idle_cuda_work& operator=(const idle_cuda_work&) = delete;
  ~idle_cuda_work();
  /// One tick's work: a memset of the 4 bytes.
  void submit(std::uint64_t frame);
  /// Waits for the ticks' work and checks the last value landed. Throws bench_failure otherwise.
  void finish(std::uint64_t frames);

 private:
  cudaStream_t stream_ = nullptr;
  void* word_ = nullptr;
};

/// The idle_cuda_context control: a second CUDA context on the sim's GPU (cuCtxCreate, made current
/// on the constructing thread, which must be the one that submits and destroys), and per tick one
/// kernel (a one-particle step of the sim's kernel) on a stream of that context: GPU work at the
/// viewer's rate from another context, no graphics.
class idle_context_work {
 public:
  /// Makes the context on `device` (the sim's GPU), its stream and one moving particle.
  /// Throws bench_failure when a call fails. Ownership: borrows `device` (must outlive this object).
  idle_context_work(const cuda::device& device, const particles::sim_params& params);
  idle_context_work(const idle_context_work&) = delete;
  idle_context_work& operator=(const idle_context_work&) = delete;
  /// Waits for the stream, frees the particle and the stream, and destroys the context.
  ~idle_context_work();
  /// One tick's work: one step of the one particle.
  void submit(std::uint64_t frame);
  /// Waits for the ticks' work and checks the particle moved.
  /// Throws bench_failure otherwise.
  void finish(std::uint64_t frames);

 private:
  /// What the destructor does (also after a constructor's failure).
  void release() noexcept;
  // cuCtxCreate and cuCtxDestroy: not in membridge's driver table (it never makes contexts).
  using create_fn = CUresult(CUDAAPI*)(CUcontext*, unsigned int, CUdevice);
  using destroy_fn = CUresult(CUDAAPI*)(CUcontext);
  const cuda::driver* driver_ = nullptr;
  destroy_fn destroy_ = nullptr;
  CUcontext context_ = nullptr;
  cudaStream_t stream_ = nullptr;
  particles::particle* particle_ = nullptr;
  particles::sim_params params_{};
};

}  // namespace membridge::bench::frame_loop
