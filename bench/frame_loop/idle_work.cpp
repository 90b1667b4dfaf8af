#include "idle_work.hpp"

#include "particle_sim_cuda.hpp"  // samples/01_particles: particles::step_cuda

#include <cmath>
#include <string>

namespace membridge::bench::frame_loop {

namespace {

/// The starting particle of idle_context_work: at (1, 0, 0), moving along y.
constexpr particles::particle start_particle{{1.0f, 0.0f, 0.0f, 1.0f}, {0.0f, 1.0f, 0.0f, 0.0f}};

/// The driver function `name` as of CUDA `version` through the runtime (the benchmark does not link
/// libcuda). Throws bench_failure when the driver lacks it.
template <class Fn>
Fn driver_function(const char* name, unsigned int version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || fn == nullptr)
    throw bench_failure(std::string("idle_cuda_context: the driver has no ") + name);
  return reinterpret_cast<Fn>(fn);
}

}  // namespace

idle_cuda_work::idle_cuda_work(int ordinal) {
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaSetDevice(ordinal));
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaMalloc(&word_, 4));
}

idle_cuda_work::~idle_cuda_work() {
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  if (word_ != nullptr) (void)cudaFree(word_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

void idle_cuda_work::submit(std::uint64_t frame) {
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaMemsetAsync(word_, static_cast<int>(frame & 0xFFU), 4, stream_));
}

void idle_cuda_work::finish(std::uint64_t frames) {
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaStreamSynchronize(stream_));
  if (frames == 0) return;
  std::uint32_t got = 0;
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaMemcpy(&got, word_, 4, cudaMemcpyDeviceToHost));
  const std::uint32_t b = static_cast<std::uint32_t>((frames - 1) & 0xFFU);
  if (got != (b | b << 8U | b << 16U | b << 24U))
    throw bench_failure("idle_cuda: the last memset's bytes did not land");
}

idle_context_work::idle_context_work(const cuda::device& device, const particles::sim_params& params)
    : driver_(&device.get_driver()), params_(params) {
  const auto create = driver_function<create_fn>("cuCtxCreate", 3020);
  destroy_ = driver_function<destroy_fn>("cuCtxDestroy", 4000);
  // cuCtxCreate makes the new context current on this thread: the runtime calls below and every
  // submit() (on the same thread) use it.
  check_cu(*driver_, create(&context_, 0, device.native()), "cuCtxCreate (idle_cuda_context)");
  try {
    MEMBRIDGE_FRAME_LOOP_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    MEMBRIDGE_FRAME_LOOP_CUDA(cudaMalloc(reinterpret_cast<void**>(&particle_), sizeof(particles::particle)));
    MEMBRIDGE_FRAME_LOOP_CUDA(
        cudaMemcpy(particle_, &start_particle, sizeof start_particle, cudaMemcpyHostToDevice));
  } catch (...) {
    release();
    throw;
  }
}

idle_context_work::~idle_context_work() { release(); }

void idle_context_work::release() noexcept {
  if (context_ == nullptr) return;
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  if (particle_ != nullptr) (void)cudaFree(particle_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  CUcontext popped = nullptr;
  (void)driver_->api().cuCtxPopCurrent(&popped);
  (void)destroy_(context_);
  context_ = nullptr;
  stream_ = nullptr;
  particle_ = nullptr;
}

void idle_context_work::submit(std::uint64_t) {
  MEMBRIDGE_FRAME_LOOP_CUDA(particles::step_cuda(particle_, 1, params_, 1, stream_));
}

void idle_context_work::finish(std::uint64_t frames) {
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaStreamSynchronize(stream_));
  if (frames == 0) return;
  particles::particle got{};
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaMemcpy(&got, particle_, sizeof got, cudaMemcpyDeviceToHost));
  if (!std::isfinite(got.position.y) || got.position.y == start_particle.position.y)
    throw bench_failure("idle_cuda_context: the particle did not move: its kernels did not run");
}

}  // namespace membridge::bench::frame_loop
