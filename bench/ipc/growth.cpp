// (b) Growth reaching a subscriber: the producer (this process) grows a published buffer by 1 GiB
// and calls sync::publish_growth; the subscriber (the child, blocked in next_event) follows with
// sync::follow_growth and runs a kernel over the new range. Latency = from grow() returning to that
// kernel done, both ends on CLOCK_MONOTONIC (one clock for every process of the machine).
#include "ipc/parts.hpp"

#include "kernels.cuh"

#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/sync/ipc_buffers.hpp>

#include <thread>

namespace membridge::bench::ipc_bench {

namespace {

namespace gpu = testing::gpu;

void check_reply(const child_reply& r, std::string_view what) {
  if (r.status != 0) throw bench_failure(std::string(what) + ": the child process failed: " + r.message);
}

}  // namespace

std::vector<growth_sample> run_growth(const cuda::device& dev, const child_process& child,
                                      const std::string& socket_path, int rounds, int steps) {
  std::vector<growth_sample> out;
  // Every step maps exactly one new 1 GiB chunk.
  cuda::chunk_policy policy;
  policy.growth_factor = 1.0;
  policy.min_chunk = growth_step_bytes;
  policy.max_chunk = growth_step_bytes;
  const std::size_t max_size = growth_step_bytes * static_cast<std::size_t>(steps + 1);
  for (int round = 0; round <= rounds; ++round) {
    const std::string round_name = round == 0 ? "warm-up round" : "round " + std::to_string(round);
    set_phase("growth, " + round_name + ": setting up");
    const std::uint32_t seed = 0x6A09E667U * static_cast<std::uint32_t>(round + 1) ^ 0x96C0U;
    auto buffer = value_or_fail(
        cuda::growable_buffer::create(dev, {.size = growth_step_bytes, .max_size = max_size, .chunks = policy}),
        "growable_buffer::create (growth)");
    MEMBRIDGE_IPC_BENCH_CUDA(gpu::fill_pattern(buffer.data(), buffer.size(), seed));
    MEMBRIDGE_IPC_BENCH_CUDA(cudaDeviceSynchronize());
    auto pub = value_or_fail(ipc::publisher::start(publisher_options_for(socket_path)),
                             "publisher::start (growth)");
    ok_or_fail(sync::publish_buffer(pub, "growing", buffer, dev, {.name = "u32", .stride = 4}), "publish_buffer (growth)");

    growth_request q;
    q.seed = seed;
    q.bytes = buffer.size();
    q.steps = static_cast<std::uint32_t>(steps);
    q.touch_stride = touch_stride;
    copy_text(q.path, pub.path());
    copy_text(q.name, "growing");
    child.channel().send(q);
    const auto ready = child.channel().receive<child_reply>(msg_kind::reply);
    check_reply(ready, "growth, " + round_name + ": attaching");
    if (ready.wrong != 0)
      throw bench_failure("data check failed: growth, " + round_name + ": the child found " +
                          std::to_string(ready.wrong) + " wrong words in the first GiB");

    for (int step = 1; step <= steps; ++step) {
      const std::string what = "growth, " + round_name + ", step " + std::to_string(step);
      set_phase(what);
      // Let the child block in next_event first: the latency includes its wake-up, as a real
      // subscriber's would.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      const std::size_t old_size = buffer.size();
      const std::size_t new_size = old_size + growth_step_bytes;
      const std::int64_t t_grow = monotonic_ns();
      ok_or_fail(buffer.grow(new_size), what + ": grow");
      const std::int64_t t_grown = monotonic_ns();
      ok_or_fail(sync::publish_growth(pub, "growing", buffer, dev), what + ": publish_growth");
      const std::int64_t t_published = monotonic_ns();
      const auto r = child.channel().receive<child_reply>(msg_kind::reply);
      check_reply(r, what);
      if (r.size != new_size || r.chunks != buffer.chunk_count())
        throw bench_failure(what + ": the child's view has " + std::to_string(r.size) + " bytes in " +
                            std::to_string(r.chunks) + " chunks, the buffer " + std::to_string(new_size) + " in " +
                            std::to_string(buffer.chunk_count()));
      const std::int64_t t_event = r.t[0];
      const std::int64_t t_followed = r.t[1];
      const std::int64_t t_touched = r.t[2];
      if (round > 0) {
        out.push_back(growth_sample{.grow_us = us(t_grown - t_grow),
                                    .publish_us = us(t_published - t_grown),
                                    .delivery_us = us(t_event - t_published),
                                    .follow_us = us(t_followed - t_event),
                                    .touch_us = us(t_touched - t_followed),
                                    .to_followed_us = us(t_followed - t_grown),
                                    .total_us = us(t_touched - t_grown)});
      }
      // Untimed: the new GiB continues the pattern, and the child checks the whole buffer.
      MEMBRIDGE_IPC_BENCH_CUDA(gpu::fill_pattern(buffer.data<char>() + old_size, growth_step_bytes, seed, old_size / 4));
      MEMBRIDGE_IPC_BENCH_CUDA(cudaDeviceSynchronize());
      child.channel().send(growth_verify_request{.kind = msg_kind::growth_verify, .size = new_size});
      const auto verified = child.channel().receive<child_reply>(msg_kind::reply);
      check_reply(verified, what + ": verifying");
      if (verified.wrong != 0)
        throw bench_failure("data check failed: " + what + ": the child found " + std::to_string(verified.wrong) +
                            " wrong words in " + std::to_string(new_size / 4));
    }
    child.channel().send(plain_request{.kind = msg_kind::growth_end});
    check_reply(child.channel().receive<child_reply>(msg_kind::reply), "growth, " + round_name + ": ending");
    pub.stop();
  }
  return out;
}

}  // namespace membridge::bench::ipc_bench
