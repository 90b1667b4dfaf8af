#include "producer_kernels.cuh"

namespace membridge::bench::producer_bench {

namespace {

__global__ void frame_step_kernel(step_args a) {
  __shared__ unsigned long long frame;
  __shared__ std::uint32_t seed;
  if (threadIdx.x == 0) {
    frame = *a.frame_counter;
    seed = *a.seed;
  }
  __syncthreads();
  const std::uint32_t stamp = frame_stamp(seed, frame, a.step);
  for (std::uint32_t i = threadIdx.x; i < a.slot_words; i += blockDim.x) a.slot[i] = slot_word(stamp, i);
  __syncthreads();  // every thread has read the counter before the last step advances it
  if (threadIdx.x == 0) {
    if (frame < a.log_frames)
      a.log[frame * a.steps + a.step] = stamp;
    else
      atomicAdd(a.overflows, 1ULL);
    if (a.step + 1 == a.steps) *a.frame_counter = frame + 1;
  }
}

}  // namespace

cudaError_t load_frame_step() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, frame_step_kernel);
}

cudaError_t launch_frame_step(const step_args& args, cudaStream_t stream) {
  frame_step_kernel<<<1, 256, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace membridge::bench::producer_bench
