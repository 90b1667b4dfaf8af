// (c) Producer -> consumer frame handoff: the producer (a thread of this process) writes frame n
// into slot n % 3 of a growable_buffer and stamps it, the consumer reads it, ordered only by the
// frame timeline's two semaphores. The pipelines the goal compares both have a Vulkan consumer
// (vulkan_frame_consumer, the same code):
//   single process: the producer's own frame_timeline and sync::mirror_in_vulkan of the buffer,
//                   the consumer on this process's main thread, told of each frame in memory;
//   cross-process:  a sync::frame_publisher; the child process subscribes as its consumer and runs
//                   the consumer on sync::import_into_vulkan and frame_timeline::import.
// A Vulkan consumer switches GPU contexts with the CUDA producer in both, so the process boundary
// (the socket's announcements, imported objects) is the difference. The CUDA-consumer pipelines
// (a consumer in the producer's own CUDA context pays no context switch) run too, for reference.
//
// Throughput: measured frames over the host time from the producer enqueuing the first measured
// frame to the last frame's `consumed` value. Latency per frame n, on CLOCK_MONOTONIC (one clock for
// every process on the machine), the same for every pipeline: the producer thread reads the clock
// right before it enqueues cuda_release(n) ("release"); the consumer reads it when its consume(n)
// begins ("told": it learnt of frame n), and a done_monitor thread in the consumer's process reads
// it right after its host wait for the consumer's work on frame n returns ("done"). Each reading
// causally follows the one before it (the consumer is told after the release was enqueued, its work
// waits for the release's signal and is submitted after it was told), so no part can be negative
// whatever the threads' scheduling: a negative one fails the run. Paced runs start one frame every
// 1 / pace_hz s (144 Hz: 6.944 ms), as a renderer's producer would; unpaced ones as fast as possible.
#include "ipc/parts.hpp"
#include "ipc/vulkan_consumer.hpp"

#include "kernels.cuh"

#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/sync/frame_publisher.hpp>
#include <membridge/sync/ipc_buffers.hpp>
#include <membridge/sync/vulkan_mirror.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

namespace membridge::bench::ipc_bench {

namespace gpu = testing::gpu;

// ------------------------------------------------------------------------------- consumer side ---

void consumer_result::note(std::uint64_t m) {
  if (last_frame >= 0 && m <= static_cast<std::uint64_t>(last_frame)) increasing = false;
  if (first_frame < 0) first_frame = static_cast<std::int64_t>(m);
  last_frame = static_cast<std::int64_t>(m);
  ++frames_seen;
}

void consumer_result::set_span(const std::vector<std::int64_t>& gpu_ns, std::uint64_t warmup) {
  std::int64_t first_time = 0;
  std::uint64_t first_measured = 0;
  for (std::uint64_t m = warmup; m < gpu_ns.size(); ++m) {
    if (gpu_ns[m] == 0) continue;  // a frame this consumer did not time
    if (first_time == 0) {
      first_time = gpu_ns[m];
      first_measured = m;
    } else {
      gpu_span_ns = gpu_ns[m] - first_time;
      gpu_span_frames = m - first_measured;
    }
  }
}

frame_subscription::frame_subscription(const std::string& path) {
  sub_ = value_or_fail(ipc::subscriber::connect({.path = path,
                                                 .role = ipc::subscriber_role::consumer,
                                                 .client_name = "membridge_bench_ipc consumer",
                                                 .timeout = std::chrono::seconds(10)}),
                       "consumer: subscriber::connect");
  if (sub_.role() != ipc::subscriber_role::consumer)
    throw bench_failure("consumer: the publisher did not grant the consumer role");
  if (sub_.buffer(slots_name) == nullptr || sub_.semaphore("frames.produced") == nullptr ||
      sub_.semaphore("frames.consumed") == nullptr)
    throw bench_failure("consumer: the publisher did not send 'slots', 'frames.produced' and 'frames.consumed'");
  slots_ = static_cast<std::uint32_t>(produced().description.parameter);
  if (slots_ == 0) throw bench_failure("consumer: the publisher announced a ring of 0 slots");
  first_ = sub_.frame_at_join() ? *sub_.frame_at_join() + 1 : 0;
}

const ipc::received_buffer& frame_subscription::slots_buffer() const { return *sub_.buffer(slots_name); }
const ipc::received_semaphore& frame_subscription::produced() const { return *sub_.semaphore("frames.produced"); }
const ipc::received_semaphore& frame_subscription::consumed() const { return *sub_.semaphore("frames.consumed"); }

void frame_subscription::follow(std::uint64_t total, const std::function<void(std::uint64_t)>& consume) {
  std::int64_t last = static_cast<std::int64_t>(first_) - 1;
  while (last < static_cast<std::int64_t>(total) - 1) {
    auto event = sub_.next_event(wait_timeout);
    if (!event)
      throw bench_failure("consumer: waiting for frame " + std::to_string(last + 1) + ": " + event.error().message());
    heartbeat();
    if (event->what == ipc::subscriber_event::kind::disconnected)
      throw bench_failure("consumer: the producer went away: " + event->reason);
    if (event->what != ipc::subscriber_event::kind::frame || event->frame < first_) continue;
    if (event->frame >= total) throw bench_failure("consumer: frame " + std::to_string(event->frame) + " was never asked for");
    consume(event->frame);
    last = static_cast<std::int64_t>(event->frame);
  }
}

cuda_frame_consumer::cuda_frame_consumer(const cuda::device& dev, const frame_subscription& sub, std::uint64_t total,
                                         std::uint64_t warmup)
    : total_(total),
      warmup_(warmup),
      slots_(sub.slot_count()),
      first_(sub.first_frame()),
      device_(dev.ordinal()),
      told_(total, 0),
      events_(total),
      done_(sub.first_frame(), total,
            [this](std::uint64_t m, const std::atomic<bool>& stop) { return wait_done(m, stop); }) {
  view_ = value_or_fail(sync::import_into_cuda(dev, sub.slots_buffer()), "consumer: import_into_cuda");
  if (view_.size() < slots_ * slot_bytes)
    throw bench_failure("consumer: the slots buffer holds fewer than " + std::to_string(slots_) + " slots");
  produced_ = value_or_fail(cuda::external_semaphore::import_timeline(dev, sub.produced().fd),
                            "consumer: importing 'frames.produced' into CUDA");
  consumed_ = value_or_fail(cuda::external_semaphore::import_timeline(dev, sub.consumed().fd),
                            "consumer: importing 'frames.consumed' into CUDA");
  log_ = device_memory(total * 2 * sizeof(std::uint64_t));  // per frame: {kernel start, producer stamp}
  errors_ = device_memory(sizeof(unsigned long long));
  MEMBRIDGE_IPC_BENCH_CUDA(cudaMemset(log_.get(), 0, total * 2 * sizeof(std::uint64_t)));
  MEMBRIDGE_IPC_BENCH_CUDA(cudaMemset(errors_.get(), 0, sizeof(unsigned long long)));
  MEMBRIDGE_IPC_BENCH_CUDA(cudaDeviceSynchronize());
}

void cuda_frame_consumer::consume(std::uint64_t m) {
  if (m < first_) return;
  if (m >= total_) throw bench_failure("consumer: frame " + std::to_string(m) + " was never asked for");
  told_[m] = monotonic_ns();
  const char* slot = view_.data<char>() + (m % slots_) * slot_bytes;
  ok_or_fail(produced_.wait(stream_.get(), m + 1), "consumer: waiting for 'produced'");
  check_cuda(gpu::check_stamped_frame(reinterpret_cast<const std::uint64_t*>(slot),
                                      reinterpret_cast<const std::uint32_t*>(slot + slot_header_bytes), slot_words, m,
                                      log_.get<std::uint64_t>() + 2 * m, errors_.get<unsigned long long>(), stream_.get()),
             "check_stamped_frame");
  ok_or_fail(consumed_.signal(stream_.get(), m + 1), "consumer: signalling 'consumed'");
  check_cuda(cudaEventRecord(events_[m], stream_.get()), "cudaEventRecord (consumer done)");
  {
    const std::lock_guard guard(recorded_lock_);
    recorded_ = m + 1;
  }
  recorded_changed_.notify_one();
  r_.note(m);
}

bool cuda_frame_consumer::wait_done(std::uint64_t m, const std::atomic<bool>& stop) {
  if (!device_set_) {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice (consumer's done monitor)");
    device_set_ = true;
  }
  auto deadline = std::chrono::steady_clock::now() + wait_timeout;
  {
    std::unique_lock guard(recorded_lock_);
    while (recorded_ <= m) {
      if (stop.load()) return false;
      if (std::chrono::steady_clock::now() >= deadline)
        throw bench_failure("frame " + std::to_string(m) + " was not consumed within " +
                            std::to_string(wait_timeout.count()) + " s");
      recorded_changed_.wait_for(guard, std::chrono::milliseconds(50));
    }
  }
  // Poll the frame's event (as a spinning cudaEventSynchronize would, but able to give up).
  deadline = std::chrono::steady_clock::now() + wait_timeout;
  for (;;) {
    const cudaError_t rc = cudaEventQuery(events_[m]);
    if (rc == cudaSuccess) return true;
    if (rc != cudaErrorNotReady) check_cuda(rc, "cudaEventQuery (consumer done)");
    if (stop.load()) return false;
    if (std::chrono::steady_clock::now() >= deadline)
      throw bench_failure("the consumer's work on frame " + std::to_string(m) + " did not finish within " +
                          std::to_string(wait_timeout.count()) + " s");
    std::this_thread::yield();
  }
}

consumer_result cuda_frame_consumer::finish() {
  wait_stream(stream_.get(), "the consumer's stream");
  consumer_result r = std::move(r_);
  std::vector<std::uint64_t> host(total_ * 2);
  MEMBRIDGE_IPC_BENCH_CUDA(cudaMemcpy(host.data(), log_.get(), host.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  MEMBRIDGE_IPC_BENCH_CUDA(cudaMemcpy(&r.wrong, errors_.get(), sizeof r.wrong, cudaMemcpyDeviceToHost));
  std::vector<std::int64_t> starts(total_);
  for (std::uint64_t m = 0; m < total_; ++m) starts[m] = static_cast<std::int64_t>(host[2 * m]);
  r.set_span(starts, warmup_);
  r.done_ns = done_.take();
  r.told_ns = told_;
  return r;
}

consumer_result consume_in_child(const cuda::device& dev, const vulkan::device_context& vk, consumer_api api,
                                 const std::string& path, std::uint64_t total, std::uint64_t warmup,
                                 const std::function<void()>& on_ready) {
  frame_subscription sub(path);
  if (api == consumer_api::cuda) {
    cuda_frame_consumer consumer(dev, sub, total, warmup);
    on_ready();
    sub.follow(total, [&](std::uint64_t m) { consumer.consume(m); });
    return consumer.finish();
  }
  const vulkan::chunked_buffer view =
      value_or_fail(sync::import_into_vulkan(vk, sub.slots_buffer()), "consumer: import_into_vulkan");
  const sync::frame_timeline timeline = value_or_fail(
      sync::frame_timeline::import(vk, sub.produced().fd, sub.consumed().fd, {.slots = sub.slot_count()}),
      "consumer: frame_timeline::import");
  vulkan_frame_consumer consumer(vk, view, timeline, total, warmup);  // destroyed first: waits for its frames
  on_ready();
  sub.follow(total, [&](std::uint64_t m) { consumer.consume(m); });
  return consumer.finish();
}

// ------------------------------------------------------------------------------- producer side ---

namespace {

/// The first failure of a run: keeps its message and unblocks every thread and process that waits
/// on the timeline, by signalling both semaphores from the host far past any value the run uses
/// (a stream or queue left waiting would block its thread for good).
class run_stop {
 public:
  explicit run_stop(const sync::frame_timeline& timeline) : timeline_(timeline) {}

  void fail(const std::string& why) noexcept {
    {
      const std::lock_guard guard(lock_);
      if (stopped_.load()) return;
      why_ = why;
      stopped_.store(true);
    }
    std::fprintf(stderr, "membridge_bench_ipc: stopping the frame run: %s\n", why.c_str());
    for (const vulkan::timeline_semaphore* s : {&timeline_.produced(), &timeline_.consumed()})
      if (const auto now = s->value()) (void)s->signal(*now + 1'000'000);
  }
  [[nodiscard]] bool stopped() const noexcept { return stopped_.load(); }
  void throw_if_stopped() const {
    if (!stopped()) return;
    const std::lock_guard guard(lock_);
    throw bench_failure(why_);
  }

 private:
  const sync::frame_timeline& timeline_;
  std::atomic<bool> stopped_{false};
  mutable std::mutex lock_;
  std::string why_;
};

/// Frames the producer thread released, for a consumer in this process (what the publisher's
/// announcements are for a consumer in another one).
class announcements {
 public:
  void announce(std::uint64_t n) {
    {
      const std::lock_guard guard(lock_);
      next_ = n + 1;
    }
    changed_.notify_one();
  }
  /// Waits until frame `n` was announced; false when the run stopped first. Throws when nothing
  /// was announced for wait_timeout.
  [[nodiscard]] bool wait_for(std::uint64_t n, const run_stop& stop) {
    std::unique_lock guard(lock_);
    auto deadline = std::chrono::steady_clock::now() + wait_timeout;
    std::uint64_t seen = next_;
    while (next_ <= n) {
      if (stop.stopped()) return false;
      if (next_ != seen) {
        seen = next_;
        deadline = std::chrono::steady_clock::now() + wait_timeout;
      }
      if (std::chrono::steady_clock::now() >= deadline)
        throw bench_failure("the producer announced no frame for " + std::to_string(wait_timeout.count()) + " s");
      changed_.wait_for(guard, std::chrono::milliseconds(100));
    }
    return true;
  }

 private:
  std::mutex lock_;
  std::condition_variable changed_;
  std::uint64_t next_ = 0;  // guarded by lock_
};

/// Waits on the host until `timeline`'s `consumed` (every consumer's, for a frame_publisher's) or
/// `produced` reached frame `n`, in short waits; false when the run stopped. Throws when the value
/// did not move for wait_timeout (for consumers of their own, `produced` stands for their progress:
/// it cannot run more than `slots` frames ahead of them).
bool wait_frame(const sync::frame_timeline& timeline, bool consumed, std::uint64_t n, const run_stop& stop) {
  const vulkan::timeline_semaphore& sem =
      consumed && !timeline.has_consumer_slots() ? timeline.consumed() : timeline.produced();
  auto deadline = std::chrono::steady_clock::now() + wait_timeout;
  std::uint64_t seen = 0;
  for (;;) {
    if (stop.stopped()) return false;
    const auto r = consumed ? timeline.wait_consumed(n, std::chrono::milliseconds(100))
                            : timeline.wait_produced(n, std::chrono::milliseconds(100));
    if (r) return true;
    if (r.error().code() != errc::timeout) throw bench_failure("waiting for frame " + std::to_string(n) + ": " + r.error().message());
    const std::uint64_t now = value_or_fail(sem.value(), "reading a frame semaphore");
    if (now != seen) {
      seen = now;
      deadline = std::chrono::steady_clock::now() + wait_timeout;
    } else if (std::chrono::steady_clock::now() >= deadline) {
      throw bench_failure(std::string(consumed ? "'consumed'" : "'produced'") + " stayed at " + std::to_string(now) +
                          " for " + std::to_string(wait_timeout.count()) + " s waiting for frame " + std::to_string(n));
    }
  }
}

/// The producer on a thread of its own (ARCHITECTURE.md 7: a stream that waits on an external
/// semaphore blocks kernel launches on the host): per frame n (paced: not before start + n * period)
/// cuda_acquire, frame_step writes n to every word of the slot, stamp_frame writes the header
/// {n, %globaltimer}, the release time is read, cuda_release, then announce(n). A failure stops the
/// run. Destruction stops the run if still going and joins.
class producer_thread {
 public:
  producer_thread(int device, const sync::frame_timeline& timeline, cuda::growable_buffer& buffer,
                  const frames_config& config, std::int64_t period_ns, std::function<void(std::uint64_t)> announce,
                  run_stop& stop)
      : stop_(stop), release_ns_(config.warmup + config.frames, 0) {
    thread_ = std::jthread([this, device, &timeline, &buffer, config, period_ns, announce = std::move(announce)] {
      try {
        MEMBRIDGE_IPC_BENCH_CUDA(cudaSetDevice(device));
        const cuda_stream stream;
        const std::uint64_t total = config.warmup + config.frames;
        const std::int64_t paced_from = monotonic_ns();
        for (std::uint64_t n = 0; n < total && !stop_.stopped(); ++n) {
          if (period_ns > 0) sleep_until_ns(paced_from + static_cast<std::int64_t>(n) * period_ns);
          if (n == config.warmup) start_ns_.store(monotonic_ns());
          char* slot = buffer.data<char>() + static_cast<std::size_t>(timeline.slot(n)) * slot_bytes;
          ok_or_fail(timeline.cuda_acquire(stream.get(), n), "cuda_acquire");
          check_cuda(gpu::frame_step(reinterpret_cast<std::uint32_t*>(slot + slot_header_bytes), slot_words,
                                     static_cast<std::uint32_t>(n), nullptr, -1, nullptr, stream.get()),
                     "frame_step");
          check_cuda(gpu::stamp_frame(reinterpret_cast<std::uint64_t*>(slot), n, stream.get()), "stamp_frame");
          release_ns_[n] = monotonic_ns();  // before the release is enqueued: no consumer can be done earlier
          ok_or_fail(timeline.cuda_release(stream.get(), n), "cuda_release");
          announce(n);
          heartbeat();
        }
        wait_stream(stream.get(), "the producer's stream");
      } catch (const std::exception& e) {
        stop_.fail(std::string("producer thread: ") + e.what());
      }
    });
  }
  producer_thread(const producer_thread&) = delete;
  producer_thread& operator=(const producer_thread&) = delete;
  ~producer_thread() {
    if (!thread_.joinable()) return;
    if (!done_) stop_.fail("the frame run was abandoned");
    thread_.join();
  }
  /// Joins the thread; returns when the producer enqueued the first measured frame (CLOCK_MONOTONIC).
  [[nodiscard]] std::int64_t join() {
    thread_.join();
    return start_ns_.load();
  }
  /// Marks the run as finished normally (the destructor then only joins).
  void finished() noexcept { done_ = true; }
  /// Per frame, CLOCK_MONOTONIC right before its cuda_release was enqueued (0: not produced); after join().
  [[nodiscard]] const std::vector<std::int64_t>& release_times() const noexcept { return release_ns_; }

 private:
  run_stop& stop_;
  std::vector<std::int64_t> release_ns_;
  std::atomic<std::int64_t> start_ns_{0};
  bool done_ = false;
  std::jthread thread_;  // last: joined before the rest goes
};

/// One pipeline of (c).
struct pipeline {
  consumer_api api = consumer_api::vulkan;
  bool cross = false;
  bool paced = false;
  [[nodiscard]] std::string name() const {
    return std::string(api == consumer_api::vulkan ? "Vulkan" : "CUDA") + " consumer, " +
           (cross ? "cross-process" : "single process") + (paced ? ", paced" : "");
  }
};

/// What the child process's consumer reported.
consumer_result child_result(const child_process& child, const std::string& what) {
  const auto done = child.channel().receive<child_reply>(msg_kind::reply);
  if (done.status != 0) throw bench_failure(what + ": the child process failed: " + done.message);
  consumer_result seen;
  seen.frames_seen = done.frames_seen;
  seen.first_frame = done.first_frame;
  seen.last_frame = done.last_frame;
  seen.increasing = done.increasing != 0;
  seen.wrong = done.wrong;
  seen.gpu_span_ns = done.t[0];
  seen.gpu_span_frames = static_cast<std::uint64_t>(done.t[1]);
  // Then the per-frame times, in pieces (series 0: told, 1: done).
  const auto frames = static_cast<std::uint64_t>(done.t[2]);
  if (frames > 1'000'000) throw bench_failure(what + ": the child announced " + std::to_string(frames) + " frame times");
  for (std::vector<std::int64_t>* series : {&seen.told_ns, &seen.done_ns}) {
    series->assign(frames, 0);
    for (std::uint64_t first = 0; first < frames;) {
      const auto piece = child.channel().receive<times_message>(msg_kind::times);
      if (piece.series != (series == &seen.told_ns ? 0U : 1U) || piece.first != first || piece.count == 0 ||
          piece.count > times_message::capacity || piece.count > frames - first)
        throw bench_failure(what + ": the child's frame times came out of order");
      std::copy_n(piece.ns, piece.count, series->begin() + static_cast<std::ptrdiff_t>(first));
      first += piece.count;
    }
  }
  return seen;
}

/// One run of one pipeline: a fresh slot buffer and timeline (a frame_publisher's, except for the
/// single-process Vulkan consumer, which uses its own frame_timeline as a one-process viewer
/// would), the consumer, warmup + frames frames.
frame_run run_one(const vulkan::device_context& vk, const cuda::device& dev, const child_process& child,
                  const std::string& socket_path, const frames_config& base, pipeline p, const std::string& what) {
  frames_config config = base;
  if (p.paced) {
    config.frames = base.paced_frames;
    config.warmup = base.paced_warmup;
  }
  const std::int64_t period_ns = p.paced ? std::llround(1e9 / base.pace_hz) : 0;
  const std::uint64_t total = config.warmup + config.frames;
  set_phase(what + ": setting up");
  auto buffer = value_or_fail(cuda::growable_buffer::create(dev, {.size = frame_slots * slot_bytes, .max_size = 64_MiB}),
                              "growable_buffer::create (frame slots)");
  MEMBRIDGE_IPC_BENCH_CUDA(cudaMemset(buffer.data(), 0xFF, buffer.size()));  // poison: no slot holds a frame yet
  MEMBRIDGE_IPC_BENCH_CUDA(cudaDeviceSynchronize());

  const bool published = p.cross || p.api == consumer_api::cuda;
  std::optional<sync::frame_publisher> frames;
  sync::frame_timeline own_timeline;
  vulkan::chunked_buffer mirror;
  if (published) {
    sync::frame_publisher_options options;
    options.ipc.listen.path = socket_path;
    options.ipc.publisher_name = "membridge_bench_ipc frames";
    options.timeline.slots = frame_slots;
    frames.emplace(value_or_fail(sync::frame_publisher::create(vk, dev, std::move(options)), "frame_publisher::create"));
    ok_or_fail(sync::publish_buffer(frames->publisher(), slots_name, buffer, dev,
                                    {.name = "frame_slot_v1", .stride = static_cast<std::uint32_t>(slot_bytes)}),
               "publish_buffer (frame slots)");
  } else {
    own_timeline = value_or_fail(sync::frame_timeline::create(vk, dev, {.slots = frame_slots}), "frame_timeline::create");
    mirror = value_or_fail(sync::mirror_in_vulkan(vk, buffer), "mirror_in_vulkan (frame slots)");
  }
  const sync::frame_timeline& timeline = published ? frames->timeline() : own_timeline;

  // The consumer: the child process, or objects of this process.
  std::optional<frame_subscription> local_sub;
  std::optional<cuda_frame_consumer> local_cuda;
  std::optional<vulkan_frame_consumer> local_vulkan;
  if (p.cross) {
    frames_request q;
    q.api = p.api;
    q.total = total;
    q.warmup = config.warmup;
    copy_text(q.path, frames->publisher().path());
    child.channel().send(q);
    const auto ready = child.channel().receive<child_reply>(msg_kind::reply);
    if (ready.status != 0) throw bench_failure(what + ": the child process failed: " + ready.message);
  } else if (p.api == consumer_api::cuda) {
    local_sub.emplace(frames->publisher().path());
    local_cuda.emplace(dev, *local_sub, total, config.warmup);
  } else {
    local_vulkan.emplace(vk, mirror, own_timeline, total, config.warmup);
  }
  if (published) {
    const auto deadline = std::chrono::steady_clock::now() + wait_timeout;
    while (!frames->publisher().has_consumer()) {
      if (std::chrono::steady_clock::now() >= deadline) throw bench_failure(what + ": the consumer never joined");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // How the producer thread hands a released frame on: the publisher's announcement (another
  // process, or the CUDA consumer that the producer's own thread enqueues: one CUDA context, see
  // docs/synchronization.md), or the in-memory announcement this thread's Vulkan consumer waits for.
  announcements told;
  std::function<void(std::uint64_t)> announce;
  if (p.cross) {
    announce = [&frames](std::uint64_t n) { ok_or_fail(frames->publish_frame(n), "publish_frame"); };
  } else if (p.api == consumer_api::cuda) {
    announce = [&frames, &local_cuda](std::uint64_t n) {
      ok_or_fail(frames->publish_frame(n), "publish_frame");
      local_cuda->consume(n);
    };
  } else {
    announce = [&told](std::uint64_t n) { told.announce(n); };
  }

  set_phase(what + ": producing");
  run_stop stop(timeline);
  producer_thread producer(dev.ordinal(), timeline, buffer, config, period_ns, std::move(announce), stop);
  if (local_vulkan) {
    try {
      for (std::uint64_t m = 0; m < total && told.wait_for(m, stop); ++m) {
        local_vulkan->consume(m);
        if (m % 64 == 0) heartbeat();
      }
    } catch (const std::exception& e) {
      stop.fail(std::string("consumer: ") + e.what());
    }
  }
  std::int64_t t_end = 0;
  try {
    if (wait_frame(timeline, true, total - 1, stop)) t_end = monotonic_ns();
  } catch (const std::exception& e) {
    stop.fail(what + ": waiting for the last frame's consumption: " + e.what());
  }
  const std::int64_t t_start = producer.join();
  producer.finished();
  stop.throw_if_stopped();

  consumer_result seen;
  if (p.cross) {
    seen = child_result(child, what);
  } else if (local_cuda) {
    seen = local_cuda->finish();
  } else {
    seen = local_vulkan->finish();
  }
  if (seen.wrong != 0)
    throw bench_failure("data check failed: " + what + ": the consumer found " + std::to_string(seen.wrong) +
                        " words, headers or stamps that did not hold their frame");
  if (!seen.increasing) throw bench_failure(what + ": the consumer saw frames out of order");
  if (seen.last_frame != static_cast<std::int64_t>(total) - 1)
    throw bench_failure(what + ": the consumer's last frame was " + std::to_string(seen.last_frame));

  frame_run run;
  run.frames_seen = seen.frames_seen;
  run.frames_per_s = static_cast<double>(config.frames) / (static_cast<double>(t_end - t_start) * 1e-9);
  run.gpu_interval_us =
      seen.gpu_span_frames == 0 ? 0.0 : us(seen.gpu_span_ns) / static_cast<double>(seen.gpu_span_frames);
  add_latencies(run, producer.release_times(), seen, config.warmup, total, what);
  return run;
}

}  // namespace

frames_results run_frames(const vulkan::device_context& vk, const cuda::device& dev, const child_process& child,
                          const std::string& socket_path, const frames_config& config) {
  std::vector<pipeline> order = {{consumer_api::vulkan, true}, {consumer_api::vulkan, false}};
  if (config.cuda_consumers) {
    order.push_back({consumer_api::cuda, true});
    order.push_back({consumer_api::cuda, false});
  }
  if (config.pace_hz > 0) {
    // The latency goal's pair, paced: adjacent, like the unpaced Vulkan pair.
    order.push_back({consumer_api::vulkan, true, true});
    order.push_back({consumer_api::vulkan, false, true});
  }
  frames_results out;
  for (int round = 0; round < config.rounds; ++round) {
    // Every other round runs the pipelines in reverse order, so drift hits each alike; the two
    // Vulkan pipelines stay adjacent (the goal's ratio is paired per round).
    for (std::size_t k = 0; k < order.size(); ++k) {
      const pipeline p = order[round % 2 == 0 ? k : order.size() - 1 - k];
      const std::string what = "frames, " + p.name() + ", round " + std::to_string(round + 1);
      frame_run run = run_one(vk, dev, child, socket_path, config, p, what);
      auto& into = p.paced                         ? (p.cross ? out.vulkan_cross_paced : out.vulkan_single_paced)
                   : p.api == consumer_api::vulkan ? (p.cross ? out.vulkan_cross : out.vulkan_single)
                                                   : (p.cross ? out.cuda_cross : out.cuda_single);
      into.push_back(std::move(run));
    }
  }
  return out;
}

}  // namespace membridge::bench::ipc_bench
