// (c) Producer -> consumer frame handoff through sync::frame_publisher: the producer (this process)
// writes frame n into slot n % 3 and stamps it, the consumer reads it, ordered only by the shared
// timeline semaphores. Two pipelines, the same code: the consumer in the child process (its own
// CUDA context) or enqueued by the producer's own thread in this process (the producer's context),
// both subscribed through the publisher's socket. Throughput: measured frames over the producer's host time; latency: the
// consumer kernel's %globaltimer at its start minus the producer's %globaltimer stamp written right
// before the release (one clock per GPU, whatever the process).
#include "ipc/parts.hpp"

#include "kernels.cuh"

#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/sync/frame_publisher.hpp>
#include <membridge/sync/ipc_buffers.hpp>

#include <exception>
#include <optional>
#include <future>
#include <thread>

namespace membridge::bench::ipc_bench {

namespace gpu = testing::gpu;

frame_consumer::frame_consumer(const cuda::device& dev, const std::string& path, std::uint64_t total,
                               std::uint64_t warmup)
    : total_(total), warmup_(warmup) {
  sub_ = value_or_fail(ipc::subscriber::connect({.path = path,
                                                 .role = ipc::subscriber_role::consumer,
                                                 .client_name = "membridge_bench_ipc consumer",
                                                 .timeout = std::chrono::seconds(10)}),
                       "consumer: subscriber::connect");
  if (sub_.role() != ipc::subscriber_role::consumer)
    throw bench_failure("consumer: the publisher did not grant the consumer role");
  const ipc::received_buffer* slots_buffer = sub_.buffer(slots_name);
  const ipc::received_semaphore* produced_fd = sub_.semaphore("frames.produced");
  const ipc::received_semaphore* consumed_fd = sub_.semaphore("frames.consumed");
  if (slots_buffer == nullptr || produced_fd == nullptr || consumed_fd == nullptr)
    throw bench_failure("consumer: the publisher did not send 'slots', 'frames.produced' and 'frames.consumed'");
  slots_ = produced_fd->description.parameter;
  view_ = value_or_fail(sync::import_into_cuda(dev, *slots_buffer), "consumer: import_into_cuda");
  if (slots_ == 0 || view_.size() < slots_ * slot_bytes)
    throw bench_failure("consumer: the slots buffer holds fewer than " + std::to_string(slots_) + " slots");
  produced_ = value_or_fail(cuda::external_semaphore::import_timeline(dev, produced_fd->fd),
                            "consumer: importing 'frames.produced' into CUDA");
  consumed_ = value_or_fail(cuda::external_semaphore::import_timeline(dev, consumed_fd->fd),
                            "consumer: importing 'frames.consumed' into CUDA");
  log_ = device_memory(total * 2 * sizeof(std::uint64_t));  // per frame: {kernel start, producer stamp}
  errors_ = device_memory(sizeof(unsigned long long));
  MEMBRIDGE_IPC_BENCH_CUDA(cudaMemset(log_.get(), 0, total * 2 * sizeof(std::uint64_t)));
  MEMBRIDGE_IPC_BENCH_CUDA(cudaMemset(errors_.get(), 0, sizeof(unsigned long long)));
  MEMBRIDGE_IPC_BENCH_CUDA(cudaDeviceSynchronize());
  first_ = sub_.frame_at_join() ? *sub_.frame_at_join() + 1 : 0;
}

void frame_consumer::consume(std::uint64_t m) {
  if (m < first_) return;
  if (m >= total_) throw bench_failure("consumer: frame " + std::to_string(m) + " was never asked for");
  if (r_.last_frame >= 0 && m <= static_cast<std::uint64_t>(r_.last_frame)) r_.increasing = false;
  const char* slot = view_.data<char>() + (m % slots_) * slot_bytes;
  ok_or_fail(produced_.wait(stream_.get(), m + 1), "consumer: waiting for 'produced'");
  check_cuda(gpu::check_stamped_frame(reinterpret_cast<const std::uint64_t*>(slot),
                                      reinterpret_cast<const std::uint32_t*>(slot + slot_header_bytes), slot_words, m,
                                      log_.get<std::uint64_t>() + 2 * m, errors_.get<unsigned long long>(), stream_.get()),
             "check_stamped_frame");
  ok_or_fail(consumed_.signal(stream_.get(), m + 1), "consumer: signalling 'consumed'");
  if (r_.first_frame < 0) r_.first_frame = static_cast<std::int64_t>(m);
  r_.last_frame = static_cast<std::int64_t>(m);
  ++r_.frames_seen;
}

void frame_consumer::follow_announcements() {
  while (r_.last_frame < static_cast<std::int64_t>(total_) - 1) {
    auto event = sub_.next_event(wait_timeout);
    if (!event)
      throw bench_failure("consumer: waiting for frame " + std::to_string(r_.last_frame + 1) + ": " +
                          event.error().message());
    heartbeat();
    if (event->what == ipc::subscriber_event::kind::disconnected)
      throw bench_failure("consumer: the producer went away: " + event->reason);
    if (event->what == ipc::subscriber_event::kind::frame) consume(event->frame);
  }
}

consumer_result frame_consumer::finish() {
  wait_stream(stream_.get(), "the consumer's stream");
  consumer_result r = std::move(r_);
  std::vector<std::uint64_t> host(total_ * 2);
  MEMBRIDGE_IPC_BENCH_CUDA(cudaMemcpy(host.data(), log_.get(), host.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  MEMBRIDGE_IPC_BENCH_CUDA(cudaMemcpy(&r.wrong, errors_.get(), sizeof r.wrong, cudaMemcpyDeviceToHost));
  std::int64_t first_start = 0;
  std::uint64_t first_measured = 0;
  for (std::uint64_t m = warmup_; m < total_; ++m) {
    const auto start = static_cast<std::int64_t>(host[2 * m]);
    const auto stamp = static_cast<std::int64_t>(host[2 * m + 1]);
    if (start == 0) continue;  // an announcement this consumer missed
    r.latency_ns.push_back(start - stamp);
    if (first_start == 0) {
      first_start = start;
      first_measured = m;
    } else {
      r.gpu_span_ns = start - first_start;
      r.gpu_span_frames = m - first_measured;
    }
  }
  return r;
}

consumer_result consume_frames(const cuda::device& dev, const std::string& path, std::uint64_t total,
                               std::uint64_t warmup, const std::function<void()>& on_ready) {
  frame_consumer consumer(dev, path, total, warmup);
  on_ready();
  consumer.follow_announcements();
  return consumer.finish();
}

namespace {

/// One run of one pipeline: a fresh frame_publisher and slot buffer, the consumer in the child
/// process (`cross`) or on a thread of this process, warmup + frames frames.
frame_run run_one(const vulkan::device_context& vk, const cuda::device& dev, const child_process& child,
                  const std::string& socket_path, const frames_config& config, bool cross, const std::string& what) {
  const std::uint64_t total = config.warmup + config.frames;
  set_phase(what + ": setting up");
  auto buffer = value_or_fail(cuda::growable_buffer::create(dev, {.size = frame_slots * slot_bytes, .max_size = 64_MiB}),
                              "growable_buffer::create (frame slots)");
  MEMBRIDGE_IPC_BENCH_CUDA(cudaMemset(buffer.data(), 0xFF, buffer.size()));  // poison: no slot holds a frame yet
  MEMBRIDGE_IPC_BENCH_CUDA(cudaDeviceSynchronize());
  sync::frame_publisher_options options;
  options.ipc.listen.path = socket_path;
  options.ipc.publisher_name = "membridge_bench_ipc frames";
  options.timeline.slots = frame_slots;
  auto frames = value_or_fail(sync::frame_publisher::create(vk, dev, std::move(options)), "frame_publisher::create");
  ok_or_fail(sync::publish_buffer(frames.publisher(), slots_name, buffer, dev,
                                  {.name = "frame_slot_v1", .stride = static_cast<std::uint32_t>(slot_bytes)}),
             "publish_buffer (frame slots)");

  // The consumer: the child process, or this thread (enqueueing after each frame's release).
  std::optional<frame_consumer> local;
  if (cross) {
    frames_request q;
    q.total = total;
    q.warmup = config.warmup;
    copy_text(q.path, frames.publisher().path());
    child.channel().send(q);
    const auto ready = child.channel().receive<child_reply>(msg_kind::reply);
    if (ready.status != 0) throw bench_failure(what + ": the child process failed: " + ready.message);
  } else {
    // In one process the consumer's work is enqueued by the producer's own thread, right after each
    // frame's release (one CUDA context: a second host thread whose stream waits on the semaphore
    // would block behind the producer's blocked launch, see docs/synchronization.md).
    local.emplace(dev, frames.publisher().path(), total, config.warmup);
  }
  const auto deadline = std::chrono::steady_clock::now() + wait_timeout;
  while (!frames.publisher().has_consumer()) {
    if (std::chrono::steady_clock::now() >= deadline) throw bench_failure(what + ": the consumer never joined");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  // The producer: acquire the slot, write the frame, stamp it, release, announce.
  set_phase(what + ": producing");
  const cuda_stream stream;
  std::int64_t t_start = monotonic_ns();
  for (std::uint64_t n = 0; n < total; ++n) {
    if (n == config.warmup) t_start = monotonic_ns();
    char* slot = buffer.data<char>() + frames.timeline().slot(n) * slot_bytes;
    ok_or_fail(frames.timeline().cuda_acquire(stream.get(), n), "cuda_acquire");
    check_cuda(gpu::frame_step(reinterpret_cast<std::uint32_t*>(slot + slot_header_bytes), slot_words,
                               static_cast<std::uint32_t>(n), nullptr, -1, nullptr, stream.get()),
               "frame_step");
    check_cuda(gpu::stamp_frame(reinterpret_cast<std::uint64_t*>(slot), n, stream.get()), "stamp_frame");
    ok_or_fail(frames.timeline().cuda_release(stream.get(), n), "cuda_release");
    ok_or_fail(frames.publish_frame(n), "publish_frame");
    if (local) local->consume(n);
    if (n % 64 == 0) heartbeat();
  }
  ok_or_fail(frames.timeline().wait_consumed(total - 1, wait_timeout), what + ": waiting for the last frame's consumption");
  const std::int64_t t_end = monotonic_ns();
  wait_stream(stream.get(), "the producer's stream");

  consumer_result seen;
  if (cross) {
    const auto done = child.channel().receive<child_reply>(msg_kind::reply);
    if (done.status != 0) throw bench_failure(what + ": the child process failed: " + done.message);
    seen.frames_seen = done.frames_seen;
    seen.first_frame = done.first_frame;
    seen.last_frame = done.last_frame;
    seen.increasing = done.increasing != 0;
    seen.wrong = done.wrong;
    seen.gpu_span_ns = done.t[0];
    seen.gpu_span_frames = static_cast<std::uint64_t>(done.t[1]);
    while (seen.latency_ns.size() < done.latency_count) {
      const auto chunk = std::make_unique<latency_chunk>(child.channel().receive<latency_chunk>(msg_kind::latencies));
      seen.latency_ns.insert(seen.latency_ns.end(), chunk->values, chunk->values + chunk->count);
    }
  } else {
    seen = local->finish();
  }

  if (seen.wrong != 0)
    throw bench_failure("data check failed: " + what + ": the consumer read " + std::to_string(seen.wrong) +
                        " words (or headers) that did not hold their frame");
  if (!seen.increasing) throw bench_failure(what + ": the consumer saw frames out of order");
  if (seen.last_frame != static_cast<std::int64_t>(total) - 1)
    throw bench_failure(what + ": the consumer's last frame was " + std::to_string(seen.last_frame));
  frame_run run;
  run.frames_seen = seen.frames_seen;
  run.frames_per_s = static_cast<double>(config.frames) / (static_cast<double>(t_end - t_start) * 1e-9);
  run.gpu_interval_us =
      seen.gpu_span_frames == 0 ? 0.0 : us(seen.gpu_span_ns) / static_cast<double>(seen.gpu_span_frames);
  run.latency_us.reserve(seen.latency_ns.size());
  for (const std::int64_t ns : seen.latency_ns) run.latency_us.push_back(us(ns));
  return run;
}

}  // namespace

frames_results run_frames(const vulkan::device_context& vk, const cuda::device& dev, const child_process& child,
                          const std::string& socket_path, const frames_config& config) {
  frames_results out;
  for (int round = 0; round < config.rounds; ++round) {
    for (int k = 0; k < 2; ++k) {
      const bool cross = (k + round) % 2 == 0;
      const std::string what = std::string("frames, ") + (cross ? "cross-process" : "single process") + ", round " +
                               std::to_string(round + 1);
      frame_run run = run_one(vk, dev, child, socket_path, config, cross, what);
      (cross ? out.cross : out.single).push_back(std::move(run));
    }
  }
  return out;
}

}  // namespace membridge::bench::ipc_bench
