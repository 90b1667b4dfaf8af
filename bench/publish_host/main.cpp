// membridge_bench_publish_host: a CUDA producer's host time per frame when it publishes through
// sync::frame_publisher: cuda_acquire, one cudaMemsetAsync of the frame's slot, cuda_release and
// publish_frame, on a non-blocking stream, no subscriber (the producer runs free). The reference for
// python/bench/publish_host.py, which runs the same loop from Python and reports the ratio. Every
// slot's bytes are checked after each block. See docs/python.md (Benchmark).
#include "cli.hpp"
#include "cuda_support.hpp"
#include "frame_memory.hpp"
#include "stats.hpp"
#include "temp_dir.hpp"

#include <membridge/cuda/device.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/frame_publisher.hpp>
#include <membridge/sync/ipc_buffers.hpp>
#include <membridge/sync/same_gpu.hpp>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace membridge::bench::publish_host {

namespace {

using producer_bench::frame_devices;
using producer_bench::open_frame_devices;
using steady = std::chrono::steady_clock;

struct config {
  std::uint64_t frames = 2000;  // timed frames per block
  std::uint64_t warmup = 200;   // frames before them in every block
  int blocks = 5;
  std::uint32_t slots = 3;
  std::size_t slot_bytes = std::size_t{1} << 20;
  int device = 0;
  bool quick = false;
  std::string json_path;
};

// Inline here, as it always was (bench::ok_or_fail is out of line): the timed loop calls it.
void ok_or_fail(const result<void>& r, const char* doing) {
  if (!r) throw bench_failure(std::string(doing) + ": " + r.error().message());
}

/// The byte frame `frame` writes into its slot (never 0, so a slot never written reads wrong).
int frame_byte(std::uint64_t frame) { return static_cast<int>(frame % 251U) + 1; }

/// After a block whose last frame is `last`: each slot holds the byte of the last frame that wrote it
/// (first and last byte of the slot checked).
void verify(const cuda::growable_buffer& buffer, const config& c, std::uint64_t last) {
  for (std::uint32_t s = 0; s < c.slots && s <= last; ++s) {
    std::uint64_t f = last;
    while (f % c.slots != s) --f;
    unsigned char edges[2] = {0, 0};
    const char* slot = buffer.data<char>() + std::size_t{s} * c.slot_bytes;
    check_cuda(cudaMemcpy(&edges[0], slot, 1, cudaMemcpyDeviceToHost), "cudaMemcpy (slot start)");
    check_cuda(cudaMemcpy(&edges[1], slot + c.slot_bytes - 1, 1, cudaMemcpyDeviceToHost), "cudaMemcpy (slot end)");
    if (edges[0] != frame_byte(f) || edges[1] != frame_byte(f))
      throw bench_failure("slot " + std::to_string(s) + " holds " + std::to_string(edges[0]) + "/" +
                          std::to_string(edges[1]) + ", expected frame " + std::to_string(f) + "'s byte " +
                          std::to_string(frame_byte(f)));
  }
}

int run(const config& c) {
  const frame_devices devices = open_frame_devices(c.device);
  const cuda::device& cu = devices.cu;
  const vulkan::device_context& vk = devices.vk;

  const std::size_t bytes = std::size_t{c.slots} * c.slot_bytes;
  auto buffer = value_or_fail(cuda::growable_buffer::create(cu, {.size = bytes, .max_size = 4 * bytes}),
                              "growable_buffer::create");
  const temp_dir dir("membridge-publish-host");
  sync::frame_publisher_options po;
  po.ipc.listen.path = dir.file("publish-host.sock");
  po.timeline.slots = c.slots;
  auto publisher = value_or_fail(sync::frame_publisher::create(vk, cu, std::move(po)), "frame_publisher::create");
  ok_or_fail(sync::publish_buffer(publisher.publisher(), "points", buffer, cu, {"points:float4", 16}),
             "sync::publish_buffer");
  const cuda_stream stream;
  const CUstream cu_stream = stream.get();  // a runtime stream is a driver stream
  const sync::frame_timeline& timeline = publisher.timeline();

  std::vector<double> host_us;
  std::vector<double> block_medians;
  std::uint64_t frame = 0;
  for (int b = 0; b < c.blocks; ++b) {
    std::vector<double> block;
    block.reserve(c.frames);
    for (std::uint64_t i = 0; i < c.warmup + c.frames; ++i, ++frame) {
      const auto t0 = steady::now();
      ok_or_fail(timeline.cuda_acquire(cu_stream, frame), "cuda_acquire");
      check_cuda(cudaMemsetAsync(buffer.data<char>() + std::size_t{timeline.slot(frame)} * c.slot_bytes,
                                 frame_byte(frame), c.slot_bytes, stream.get()),
                 "cudaMemsetAsync");
      ok_or_fail(timeline.cuda_release(cu_stream, frame), "cuda_release");
      ok_or_fail(publisher.publish_frame(frame), "publish_frame");
      const auto t1 = steady::now();
      if (i >= c.warmup) block.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    stream.synchronize();
    verify(buffer, c, frame - 1);
    block_medians.push_back(median(block));
    host_us.insert(host_us.end(), block.begin(), block.end());
  }
  ok_or_fail(timeline.drain(std::chrono::seconds(5)), "frame_timeline::drain");

  std::cout << "membridge publish_host benchmark on " << cu.name() << " (device " << c.device << "), Vulkan "
            << vk.name() << "\n"
            << c.blocks << " blocks of " << c.frames << " timed frames after " << c.warmup << " warm-up; " << c.slots
            << " slots of " << c.slot_bytes << " bytes; per frame: cuda_acquire, cudaMemsetAsync, cuda_release, "
            << "publish_frame (no subscriber); every slot checked after each block\n";
  const summary s = summarize(host_us);
  text_table t({{"path"}, {"host us median", align::right}, {"p10", align::right}, {"p90", align::right},
                {"max", align::right}});
  t.add_row({"C++", fixed(s.median, 3), fixed(s.p10, 3), fixed(s.p90, 3), fixed(s.max, 1)});
  t.print(std::cout);
  json j = {{"bench", "publish_host"}, {"path", "cpp"}};
  j.update(devices_json(devices));
  j.update(json{{"config",
                 {{"frames", c.frames}, {"warmup", c.warmup}, {"blocks", c.blocks}, {"slots", c.slots},
                  {"slot_bytes", c.slot_bytes}, {"quick", c.quick}}},
                {"host_us", to_json(s, 3)},
                {"block_medians_us", block_medians},
                {"goals", json::object()},  // the goal (python_publish_host_time_ratio) is python/bench/publish_host.py's
                {"data_checked", true}});
  emit_json_line(j, c.json_path);
  return exit_ok;
}

}  // namespace

}  // namespace membridge::bench::publish_host

int main(int argc, char** argv) {
  using namespace membridge::bench;
  publish_host::config c;
  CLI::App app{"membridge_bench_publish_host: host time per frame of acquire + memset + release + publish_frame"};
  app.add_option("--frames", c.frames, "timed frames per block")->check(CLI::Range(10, 1000000))->capture_default_str();
  app.add_option("--warmup", c.warmup, "warm-up frames per block")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--blocks", c.blocks, "blocks")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--slots", c.slots, "ring slots")->check(CLI::Range(1, 8))->capture_default_str();
  app.add_option("--slot-bytes", c.slot_bytes, "bytes each frame writes")->check(CLI::Range(1, 1 << 30))->capture_default_str();
  app.add_flag("--quick", c.quick, "a smoke run: 2 blocks of 200 frames after 20 warm-up");
  add_json_option(app, c.json_path);
  add_device_option(app, c.device);
  if (const auto stop = parse_command_line(app, argc, argv)) return *stop;
  if (c.quick) {
    c.frames = 200;
    c.warmup = 20;
    c.blocks = 2;
  }
  return run_main("membridge_bench_publish_host", [&c] { return publish_host::run(c); });
}
