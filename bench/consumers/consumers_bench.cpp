// membridge_bench_consumers: what a CUDA producer's frame costs when it waits for N consumers, each
// with a `consumed` semaphore of its own (frame_timeline consumer_slots, as sync::frame_publisher
// uses): producer-thread host time of cuda_acquire + one frame-step kernel + cuda_release, and GPU
// time per frame, for N = 1, 2, 4 (blocks of every N interleaved). The consumers are one Vulkan
// queue of this process: per frame one empty submit that waits for `produced` and signals all N
// consumer semaphores (what N viewer processes would do, without their processes). Every frame's
// stamps are checked. See docs/synchronization.md, "Several consumers".
#include "frame_memory.hpp"
#include "frame_options.hpp"
#include "producer_kernels.cuh"

#include "cli.hpp"
#include "cuda_support.hpp"
#include "stats.hpp"

#include <membridge/cuda/device.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/same_gpu.hpp>

#include <CLI/CLI.hpp>
#include <volk.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace membridge::bench::consumers_bench {

namespace {

using producer_bench::frame_devices;
using producer_bench::frame_memory;
using producer_bench::frame_options;
using producer_bench::frame_options_json;
using producer_bench::open_frame_devices;
using producer_bench::run_paced_block;
using producer_bench::launch_frame_step;
using producer_bench::wait_limit;

struct config : frame_options {
  std::vector<std::uint32_t> counts{1, 2, 4};  // consumer counts, one lane each
};

// Inline here, as it always was (bench::ok_or_fail is out of line): the timed loop calls it.
void ok_or_fail(const result<void>& r, const std::string& doing) {
  if (!r) throw bench_failure(doing + ": " + r.error().message());
}

struct block_result {
  std::vector<double> host_us;  // producer-thread time per timed frame
  double gpu_us = 0.0;          // GPU time per timed frame (CUDA events around the timed frames)
};

/// One consumer count: its own timeline (N consumer semaphores), memory and blocks.
class lane {
 public:
  lane(const config& c, const cuda::device& cu, const vulkan::device_context& vk, std::uint32_t consumers)
      : c_(c), vk_(vk), consumers_(consumers), memory_(c.warmup + c.frames, c.slots, c.slot_words, 1) {
    timeline_ = value_or_fail(sync::frame_timeline::create(vk, cu, {.slots = c.slots, .consumer_slots = true}),
                              "frame_timeline::create (consumer_slots)");
    for (std::uint32_t id = 1; id <= consumers; ++id) {
      ok_or_fail(timeline_.add_consumer(id, std::nullopt), "frame_timeline::add_consumer");
      const vulkan::timeline_semaphore* s = timeline_.consumer(id);
      if (s == nullptr) throw bench_failure("consumer " + std::to_string(id) + " has no semaphore");
      semaphores_.push_back(s->get());
    }
    check_cuda(cudaEventCreate(&ev0_), "cudaEventCreate");
    check_cuda(cudaEventCreate(&ev1_), "cudaEventCreate");
  }
  lane(const lane&) = delete;
  lane& operator=(const lane&) = delete;
  ~lane() {
    (void)cudaEventDestroy(ev0_);
    (void)cudaEventDestroy(ev1_);
  }
  [[nodiscard]] std::uint32_t consumers() const noexcept { return consumers_; }
  std::vector<block_result> blocks;

  void run_block(std::uint32_t seed) {
    memory_.reset(seed, stream_.get());
    const std::uint64_t total = c_.warmup + c_.frames;
    const std::uint64_t first = next_frame_;
    block_result out;
    out.host_us.reserve(c_.frames);
    run_paced_block(
        {first, total, c_.warmup, c_.slots, "waiting for the consumers to submit a frame"}, timeline_, stream_.get(),
        ev0_, ev1_, [this](std::uint64_t n) { submit(n); },
        [&](std::uint64_t n) {
          ok_or_fail(timeline_.cuda_acquire(stream_.get(), n), "frame_timeline::cuda_acquire");
          check_cuda(launch_frame_step(memory_.args(timeline_.slot(n), 0), stream_.get()), "launch_frame_step");
          ok_or_fail(timeline_.cuda_release(stream_.get(), n), "frame_timeline::cuda_release");
        },
        [&](double host_us) { out.host_us.push_back(host_us); }, [this] { unblock(); });
    next_frame_ = first + total;
    ok_or_fail(timeline_.wait_consumed(next_frame_ - 1, wait_limit), "frame_timeline::wait_consumed (end of block)");
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize (end of block)");
    if (vk_.functions().vkQueueWaitIdle(vk_.graphics_queue().queue) != VK_SUCCESS)
      throw bench_failure("vkQueueWaitIdle (end of block) failed");
    for (std::uint32_t id = 1; id <= consumers_; ++id) {
      const std::uint64_t v = value_or_fail(timeline_.consumer(id)->value(), "reading a consumer semaphore");
      if (v != sync::frame_timeline::consumed_value(next_frame_ - 1))
        throw bench_failure("consumer " + std::to_string(id) + "'s semaphore reads " + std::to_string(v) +
                            " after frame " + std::to_string(next_frame_ - 1));
    }
    float ms = 0.0F;
    check_cuda(cudaEventElapsedTime(&ms, ev0_, ev1_), "cudaEventElapsedTime");
    out.gpu_us = static_cast<double>(ms) * 1000.0 / static_cast<double>(c_.frames);
    memory_.verify(seed, first, total, std::to_string(consumers_) + " consumers");
    blocks.push_back(std::move(out));
  }

 private:
  // The consumers' part of frame n: wait produced(n), signal every consumer semaphore consumed(n).
  void submit(std::uint64_t n) {
    const std::uint64_t wait_value = sync::frame_timeline::produced_value(n);
    const std::vector<std::uint64_t> signal_values(semaphores_.size(), sync::frame_timeline::consumed_value(n));
    const VkSemaphore produced = timeline_.produced().get();
    const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    values.waitSemaphoreValueCount = 1;
    values.pWaitSemaphoreValues = &wait_value;
    values.signalSemaphoreValueCount = static_cast<std::uint32_t>(signal_values.size());
    values.pSignalSemaphoreValues = signal_values.data();
    VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    info.pNext = &values;
    info.waitSemaphoreCount = 1;
    info.pWaitSemaphores = &produced;
    info.pWaitDstStageMask = &stage;
    info.signalSemaphoreCount = static_cast<std::uint32_t>(semaphores_.size());
    info.pSignalSemaphores = semaphores_.data();
    if (const VkResult rc = vk_.functions().vkQueueSubmit(vk_.graphics_queue().queue, 1, &info, VK_NULL_HANDLE);
        rc != VK_SUCCESS)
      throw bench_failure("vkQueueSubmit (frame " + std::to_string(n) + ") returned " + std::to_string(static_cast<int>(rc)));
  }
  // After a failure: signal everything far ahead, so neither the stream nor the queue waits forever.
  void unblock() noexcept {
    constexpr std::uint64_t far = std::uint64_t{1} << 40;
    (void)timeline_.produced().signal(far);
    for (std::uint32_t id = 1; id <= consumers_; ++id)
      if (const auto* s = timeline_.consumer(id); s != nullptr) (void)s->signal(far);
    (void)cudaStreamSynchronize(stream_.get());
    (void)vk_.functions().vkQueueWaitIdle(vk_.graphics_queue().queue);
  }

  const config& c_;
  const vulkan::device_context& vk_;
  std::uint32_t consumers_ = 0;
  frame_memory memory_;
  sync::frame_timeline timeline_;
  std::vector<VkSemaphore> semaphores_;  // the timeline's consumer semaphores (owned by it)
  cuda_stream stream_;
  cudaEvent_t ev0_ = nullptr;
  cudaEvent_t ev1_ = nullptr;
  std::uint64_t next_frame_ = 0;
};

// Lane l's block medians over lane 0's, per block round (the blocks ran next to each other).
std::vector<double> paired_ratio(const lane& l, const lane& base, bool gpu) {
  std::vector<double> out;
  for (std::size_t i = 0; i < l.blocks.size() && i < base.blocks.size(); ++i) {
    const double a = gpu ? l.blocks[i].gpu_us : median(l.blocks[i].host_us);
    const double b = gpu ? base.blocks[i].gpu_us : median(base.blocks[i].host_us);
    out.push_back(a / b);
  }
  return out;
}

std::vector<double> pooled_host(const lane& l) {
  std::vector<double> out;
  for (const auto& b : l.blocks) out.insert(out.end(), b.host_us.begin(), b.host_us.end());
  return out;
}

std::vector<double> gpu_per_block(const lane& l) {
  std::vector<double> out;
  for (const auto& b : l.blocks) out.push_back(b.gpu_us);
  return out;
}

int run(const config& c) {
  const frame_devices devices = open_frame_devices(c.device);
  const auto& [cu, vk, driver_version, runtime_version] = devices;
  check_cuda(producer_bench::load_frame_step(), "cudaFuncGetAttributes (loading the frame step)");

  std::vector<std::unique_ptr<lane>> lanes;
  for (const std::uint32_t n : c.counts) lanes.push_back(std::make_unique<lane>(c, cu, vk, n));
  // Interleaved: per block round every consumer count, the one that goes first rotating.
  std::uint32_t seed = 0x9e3779b9U;
  for (int r = 0; r < c.blocks; ++r)
    for (std::size_t q = 0; q < lanes.size(); ++q) {
      seed = seed * 1664525U + 1013904223U;
      lanes[(q + static_cast<std::size_t>(r)) % lanes.size()]->run_block(seed);
    }

  std::cout << "membridge consumers benchmark on " << cu.name() << " (device " << c.device << "), Vulkan " << vk.name()
            << ", CUDA driver " << driver_version << ", runtime " << runtime_version << "\n"
            << c.blocks << " interleaved blocks per consumer count, " << c.frames << " timed frames each after "
            << c.warmup << " warm-up; " << c.slots << " slots; producer: cuda_acquire (one wait over N consumer "
            << "semaphores) + 1 kernel + cuda_release; consumers: one Vulkan submit per frame signalling all N; "
            << "every frame's stamps checked\n";
  text_table t({{"consumers"}, {"host us median", align::right}, {"p99", align::right},
                {"GPU us/frame (median of blocks)", align::right}, {"host / 1st", align::right},
                {"GPU / 1st", align::right}});
  json lanes_json = json::array();
  for (const auto& l : lanes) {
    const auto host = pooled_host(*l);
    const auto gpu = gpu_per_block(*l);
    const double host_ratio = median(paired_ratio(*l, *lanes.front(), false));
    const double gpu_ratio = median(paired_ratio(*l, *lanes.front(), true));
    t.add_row({std::to_string(l->consumers()), fixed(median(host), 2), fixed(percentile(host, 0.99), 2),
               fixed(median(gpu), 1), fixed(host_ratio, 3), fixed(gpu_ratio, 3)});
    json hj = to_json(summarize(host), 3);
    hj["p99"] = rounded(percentile(host, 0.99), 3);
    lanes_json.push_back({{"consumers", l->consumers()},
                          {"host_us", hj},
                          {"gpu_us_per_frame", to_json(summarize(gpu), 2)},
                          {"host_ratio_over_first", rounded(host_ratio, 4)},
                          {"gpu_ratio_over_first", rounded(gpu_ratio, 4)}});
  }
  t.print(std::cout);
  std::cout << "(ratios: median over block rounds of this count's block over the first count's block)\n";
  json config_json = frame_options_json(c);
  config_json["counts"] = c.counts;
  config_json["quick"] = c.quick;
  json j = {{"bench", "consumers"}};
  j.update(devices_json(devices));
  j.update(json{{"driver_version", driver_version},
                {"runtime_version", runtime_version},
                {"config", config_json},
                {"lanes", lanes_json},
                {"goals", json::object()},
                {"data_checked", true}});
  emit_json_line(j, c.json_path);
  lanes.clear();  // timelines before the Vulkan context and the CUDA device
  return exit_ok;
}

}  // namespace

}  // namespace membridge::bench::consumers_bench

int main(int argc, char** argv) {
  using namespace membridge::bench::consumers_bench;
  return membridge::bench::producer_bench::frame_bench_main<config>(
      argc, argv, "membridge_bench_consumers", "a CUDA producer's frame cost with 1, 2 and 4 consumer semaphores",
      "interleaved blocks per consumer count",
      [](CLI::App& app, config& c) {
        app.add_option("--consumers", c.counts, "consumer counts to compare (the first is the reference)")
            ->check(CLI::Range(1, 8))
            ->capture_default_str();
      },
      run);
}
