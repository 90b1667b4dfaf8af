// bench/producer/frame_memory.cpp: one lane's frame memory and the threads' handoff (frame_memory.hpp).
#include "frame_memory.hpp"

#include "cuda_support.hpp"

#include <membridge/sync/same_gpu.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace membridge::bench::producer_bench {

frame_devices open_frame_devices(int ordinal) {
  open_runtime_device(ordinal);
  auto opened = cuda::device::open(ordinal);
  if (!opened) throw device_unavailable(opened.error().message());
  cuda::device cu = std::move(opened).value();
  auto made = sync::create_vulkan_context_for(cu);
  if (!made)
    throw device_unavailable("no Vulkan device on CUDA device " + std::to_string(ordinal) +
                             " (the frame timeline's semaphores are Vulkan's): " + made.error().message());
  frame_devices out{std::move(cu), std::move(made).value()};
  check_cuda(cudaDriverGetVersion(&out.driver_version), "cudaDriverGetVersion");
  check_cuda(cudaRuntimeGetVersion(&out.runtime_version), "cudaRuntimeGetVersion");
  return out;
}

json devices_json(const frame_devices& d) {
  return {{"device", d.cu.name()}, {"device_uuid", d.cu.uuid().to_string()}, {"vulkan_device", d.vk.name()}};
}

frame_memory::frame_memory(std::uint64_t log_frames, std::uint32_t slots, std::uint32_t slot_words, std::uint32_t k)
    : k_(k), log_frames_(log_frames), slot_words_(slot_words), slot_count_(slots) {
  check_cuda(cudaMalloc(&base_, bytes()), "cudaMalloc (frame memory)");
  auto* p = static_cast<char*>(base_);
  counter_ = reinterpret_cast<unsigned long long*>(p);
  overflows_ = reinterpret_cast<unsigned long long*>(p + 8);
  seed_ = reinterpret_cast<std::uint32_t*>(p + 16);
  slots_ = reinterpret_cast<std::uint32_t*>(p + 64);
  log_ = slots_ + std::size_t{slot_count_} * slot_words_;
}

frame_memory::~frame_memory() { (void)cudaFree(base_); }

void frame_memory::reset(std::uint32_t seed, cudaStream_t stream) {
  check_cuda(cudaMemsetAsync(base_, 0, bytes(), stream), "cudaMemsetAsync (frame memory)");
  check_cuda(cudaMemcpyAsync(seed_, &seed, sizeof seed, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync (seed)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (frame memory reset)");
}

void frame_memory::verify(std::uint32_t seed, std::uint64_t first, std::uint64_t total, const std::string& what) const {
  unsigned long long head[2] = {0, 0};
  check_cuda(cudaMemcpy(head, counter_, sizeof head, cudaMemcpyDeviceToHost), "cudaMemcpy (counter)");
  if (head[0] != total || head[1] != 0)
    throw bench_failure(what + ": the frame counter reads " + std::to_string(head[0]) + " (expected " +
                        std::to_string(total) + "), " + std::to_string(head[1]) + " frames past the log");
  std::vector<std::uint32_t> log(total * k_);
  check_cuda(cudaMemcpy(log.data(), log_, log.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy (log)");
  std::uint64_t bad = 0;
  std::uint64_t first_bad = total;
  for (std::uint64_t i = 0; i < total; ++i)
    for (std::uint32_t j = 0; j < k_; ++j)
      if (log[i * k_ + j] != frame_stamp(seed, i, j)) {
        ++bad;
        first_bad = std::min(first_bad, i);
      }
  if (bad != 0)
    throw bench_failure(what + ": " + std::to_string(bad) + " of " + std::to_string(log.size()) +
                        " logged stamps are wrong (first in frame " + std::to_string(first_bad) + " of the block)");
  std::vector<std::uint32_t> words(slot_words_);
  for (std::uint32_t s = 0; s < slot_count_ && s < total; ++s) {
    std::uint64_t last = total - 1;  // the block's last frame in slot s (slots follow absolute frames)
    while ((first + last) % slot_count_ != s) --last;
    check_cuda(cudaMemcpy(words.data(), slots_ + std::size_t{s} * slot_words_, slot_words_ * 4, cudaMemcpyDeviceToHost),
               "cudaMemcpy (slot)");
    const std::uint32_t stamp = frame_stamp(seed, last, k_ - 1);
    for (std::uint32_t w = 0; w < slot_words_; ++w)
      if (words[w] != slot_word(stamp, w))
        throw bench_failure(what + ": slot " + std::to_string(s) + " word " + std::to_string(w) +
                            " is not the last frame's stamp");
  }
}

std::size_t frame_memory::bytes() const {
  return 64 + (std::size_t{slot_count_} * slot_words_ + log_frames_ * k_) * 4;
}

}  // namespace membridge::bench::producer_bench
