// The second process of the benchmark: this binary re-executed with --membridge-bench-child. It
// opens the device and warms up (context, kernels, a VMM export/import) and makes the Vulkan device
// of (c)'s Vulkan consumer before answering, so no timing includes first-use costs; then it serves the parent's requests one at a time. Every
// attach and follow is timed here, with CLOCK_MONOTONIC around the calls only; every buffer's data
// is checked after (untimed).
#include "ipc/parts.hpp"

#include "kernels.cuh"

#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/imported_buffer.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/vmm_allocation.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/sync/ipc_buffers.hpp>
#include <membridge/sync/same_gpu.hpp>

#include <membridge/os/unique_fd.hpp>

#include <algorithm>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

namespace membridge::bench::ipc_bench {

namespace {

namespace gpu = testing::gpu;

/// How long the child waits for the parent's next request (the parent may be busy with a
/// single-process run meanwhile).
constexpr std::chrono::seconds idle_timeout{300};

/// First-use costs out of the way: kernels, a stream, a VMM allocation exported and imported.
void warm_up(const cuda::device& dev) {
  const device_memory scratch(4_MiB);
  const device_memory counter(sizeof(unsigned long long));
  MEMBRIDGE_IPC_BENCH_CUDA(gpu::fill_pattern(scratch.get(), 4_MiB, 1));
  verify_pattern(scratch.get(), 4_MiB, 1, "warm-up");
  const cuda_stream stream;
  MEMBRIDGE_IPC_BENCH_CUDA(gpu::touch_words(scratch.get(), 4_MiB, touch_stride, counter.get<unsigned long long>(), stream.get()));
  MEMBRIDGE_IPC_BENCH_CUDA(gpu::check_stamped_frame(scratch.get<std::uint64_t>(), scratch.get<std::uint32_t>() + 64, 1024, 0,
                                                    scratch.get<std::uint64_t>() + 8, counter.get<unsigned long long>(),
                                                    stream.get()));
  wait_stream(stream.get(), "warm-up kernels");
  auto memory = value_or_fail(cuda::vmm_allocation::create(dev, 2_MiB), "warm-up: vmm_allocation::create");
  auto fd = value_or_fail(memory.export_fd(), "warm-up: export_fd");
  auto imported = value_or_fail(cuda::vmm_allocation::import(dev, fd, 2_MiB), "warm-up: vmm_allocation::import");
  auto range = value_or_fail(cuda::address_range::reserve(dev, 2_MiB), "warm-up: address_range::reserve");
  auto mapped = value_or_fail(cuda::mapping::map(range, 0, imported), "warm-up: mapping::map");
  MEMBRIDGE_IPC_BENCH_CUDA(cudaDeviceSynchronize());
}

/// The CUDA runtime's current device set to `ordinal` for a scope; the one before is restored after.
class current_device_scope {
 public:
  explicit current_device_scope(int ordinal) {
    MEMBRIDGE_IPC_BENCH_CUDA(cudaGetDevice(&before_));
    MEMBRIDGE_IPC_BENCH_CUDA(cudaSetDevice(ordinal));
  }
  current_device_scope(const current_device_scope&) = delete;
  current_device_scope& operator=(const current_device_scope&) = delete;
  ~current_device_scope() { (void)cudaSetDevice(before_); }

 private:
  int before_ = 0;
};

/// The devices (a) attaches on: the child's own, and others (an attach on another GPU) opened and
/// warmed up on first use, before any timing.
class attach_devices {
 public:
  explicit attach_devices(const cuda::device& own) : own_(own) {}

  /// The device with CUDA ordinal `ordinal` (-1: the child's own).
  const cuda::device& get(int ordinal) {
    if (ordinal < 0 || ordinal == own_.ordinal()) return own_;
    for (const cuda::device& d : others_)
      if (d.ordinal() == ordinal) return d;
    auto opened = cuda::device::open(ordinal);
    if (!opened) throw bench_failure("opening CUDA device " + std::to_string(ordinal) + ": " + opened.error().message());
    const current_device_scope scope(ordinal);
    warm_up(*opened);
    others_.push_back(std::move(opened).value());
    return others_.back();
  }

 private:
  const cuda::device& own_;
  std::deque<cuda::device> others_;  // a deque: references stay valid as it grows
};

child_reply failure_reply(int status, const std::string& why) {
  child_reply r;
  r.status = status;
  copy_text(r.message, why);
  return r;
}

/// (a) membridge: connect + import_into_cuda into the requested device, timed; then the data check,
/// by a kernel on that device (the runtime's current device meanwhile).
child_reply attach_vmm(attach_devices& devices, const attach_vmm_request& q) {
  const cuda::device& dev = devices.get(q.device);
  const current_device_scope scope(dev.ordinal());
  const std::string name = q.name;
  child_reply r;
  cuda::imported_buffer view;
  {
    const std::int64_t t0 = monotonic_ns();
    auto sub = value_or_fail(ipc::subscriber::connect({.path = q.path,
                                                       .role = ipc::subscriber_role::observer,
                                                       .client_name = "membridge_bench_ipc",
                                                       .timeout = std::chrono::seconds(10)}),
                             "subscriber::connect");
    const std::int64_t t1 = monotonic_ns();
    const ipc::received_buffer* b = sub.buffer(name);
    if (b == nullptr) throw bench_failure("the publisher sent no buffer '" + name + "'");
    view = value_or_fail(sync::import_into_cuda(dev, *b), "import_into_cuda");
    const std::int64_t t2 = monotonic_ns();
    r.t[0] = t1 - t0;
    r.t[1] = t2 - t1;
  }  // the subscriber says goodbye; the import keeps the memory
  r.chunks = view.chunk_count();
  r.size = view.size();
  MEMBRIDGE_IPC_BENCH_CUDA(gpu::count_mismatches(view.data(), q.bytes, q.seed, r.wrong));
  return r;
}

/// Connects to the Unix stream socket `path` and reads one cudaIpcMemHandle (10 s timeouts).
cudaIpcMemHandle_t receive_handle(const char* path) {
  const os::unique_fd s = os::unique_fd::from_native(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) throw bench_failure("legacy: socket() failed");
  const timeval timeout{10, 0};
  (void)::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::size_t length = ::strnlen(path, sizeof(addr.sun_path));
  if (length >= sizeof(addr.sun_path)) throw bench_failure("legacy: socket path too long");
  std::memcpy(addr.sun_path, path, length + 1);
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0)
    throw bench_failure(std::string("legacy: connect to ") + path + " failed");
  cudaIpcMemHandle_t handle{};
  auto* at = reinterpret_cast<char*>(&handle);
  std::size_t got = 0;
  while (got < sizeof(handle)) {
    const ssize_t n = ::recv(s.get(), at + got, sizeof(handle) - got, 0);
    if (n <= 0) throw bench_failure("legacy: the handle did not arrive whole");
    got += static_cast<std::size_t>(n);
  }
  return handle;
}

/// (a) the peer: connect to the producer's socket and receive the cudaIpcMemHandle, then
/// cudaIpcOpenMemHandle, both timed; then the data check and cudaIpcCloseMemHandle.
child_reply attach_legacy(const attach_legacy_request& q) {
  child_reply r;
  void* p = nullptr;
  const std::int64_t t0 = monotonic_ns();
  const cudaIpcMemHandle_t handle = receive_handle(q.path);
  const std::int64_t t1 = monotonic_ns();
  MEMBRIDGE_IPC_BENCH_CUDA(cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess));
  const std::int64_t t2 = monotonic_ns();
  r.t[0] = t1 - t0;
  r.t[1] = t2 - t1;
  r.size = q.bytes;
  const bool same = std::memcmp(&handle, &q.handle, sizeof(handle)) == 0;
  const cudaError_t checked = gpu::count_mismatches(p, q.bytes, q.seed, r.wrong);
  const cudaError_t closed = cudaIpcCloseMemHandle(p);
  MEMBRIDGE_IPC_BENCH_CUDA(checked);
  MEMBRIDGE_IPC_BENCH_CUDA(closed);
  if (!same) throw bench_failure("legacy: the handle received over the socket differs from the one sent");
  return r;
}

/// (b) the subscriber's side of one growth round: attach (untimed) and check; then per step wait
/// for buffer_changed, follow_growth, touch the new range (timestamps of each), and check the whole
/// buffer when the parent asks.
void follow_growth_round(const cuda::device& dev, const peer_link& parent, const growth_request& q) {
  const std::string name = q.name;
  auto sub = value_or_fail(ipc::subscriber::connect({.path = q.path,
                                                     .role = ipc::subscriber_role::observer,
                                                     .client_name = "membridge_bench_ipc",
                                                     .timeout = std::chrono::seconds(10)}),
                           "subscriber::connect (growth)");
  if (sub.buffer(name) == nullptr) throw bench_failure("the publisher sent no buffer '" + name + "'");
  auto view = value_or_fail(sync::import_into_cuda(dev, *sub.buffer(name)), "import_into_cuda (growth)");
  const cuda_stream stream;
  const device_memory sink(sizeof(unsigned long long));
  child_reply ready;
  MEMBRIDGE_IPC_BENCH_CUDA(gpu::count_mismatches(view.data(), q.bytes, q.seed, ready.wrong));
  parent.send(ready);

  for (std::uint32_t step = 1; step <= q.steps; ++step) {
    const std::size_t old_size = view.size();
    std::int64_t t_event = 0;
    for (;;) {
      auto event = sub.next_event(wait_timeout);
      t_event = monotonic_ns();
      if (!event) throw bench_failure("waiting for growth step " + std::to_string(step) + ": " + event.error().message());
      if (event->what == ipc::subscriber_event::kind::disconnected)
        throw bench_failure("the publisher went away during the growth: " + event->reason);
      if (event->what == ipc::subscriber_event::kind::buffer_changed && event->name == name) break;
    }
    const bool changed = value_or_fail(sync::follow_growth(view, *sub.buffer(name)), "follow_growth");
    const std::int64_t t_followed = monotonic_ns();
    if (!changed || view.size() <= old_size) throw bench_failure("follow_growth did not grow the view");
    MEMBRIDGE_IPC_BENCH_CUDA(gpu::touch_words(view.data<char>() + old_size, view.size() - old_size, q.touch_stride,
                                              sink.get<unsigned long long>(), stream.get()));
    MEMBRIDGE_IPC_BENCH_CUDA(cudaStreamSynchronize(stream.get()));
    const std::int64_t t_touched = monotonic_ns();
    child_reply r;
    r.t[0] = t_event;
    r.t[1] = t_followed;
    r.t[2] = t_touched;
    r.size = view.size();
    r.chunks = view.chunk_count();
    parent.send(r);

    const auto verify = parent.receive<growth_verify_request>(msg_kind::growth_verify, idle_timeout);
    child_reply verified;
    if (verify.size > view.size()) throw bench_failure("asked to verify past the view's size");
    MEMBRIDGE_IPC_BENCH_CUDA(gpu::count_mismatches(view.data(), verify.size, q.seed, verified.wrong));
    parent.send(verified);
  }
  (void)parent.receive<plain_request>(msg_kind::growth_end, idle_timeout);
  parent.send(child_reply{});
}

/// (c) the consumer in this process, with the API the parent asks for.
void consume(const cuda::device& dev, const vulkan::device_context& vk, const peer_link& parent,
             const frames_request& q) {
  const consumer_result r =
      consume_in_child(dev, vk, q.api, q.path, q.total, q.warmup, [&] { parent.send(child_reply{}); });
  child_reply done;
  done.frames_seen = r.frames_seen;
  done.first_frame = r.first_frame;
  done.last_frame = r.last_frame;
  done.increasing = r.increasing ? 1 : 0;
  done.wrong = r.wrong;
  done.t[0] = r.gpu_span_ns;
  done.t[1] = static_cast<std::int64_t>(r.gpu_span_frames);
  done.t[2] = static_cast<std::int64_t>(q.total);
  if (r.told_ns.size() != q.total || r.done_ns.size() != q.total)
    throw bench_failure("the consumer's per-frame times do not cover the run");
  parent.send(done);
  // The per-frame times follow in pieces (the parent computes the latencies against its release times).
  std::uint32_t series = 0;
  for (const std::vector<std::int64_t>* times : {&r.told_ns, &r.done_ns}) {
    for (std::uint64_t first = 0; first < q.total; first += times_message::capacity) {
      times_message piece;
      piece.series = series;
      piece.first = first;
      piece.count = std::min<std::uint64_t>(times_message::capacity, q.total - first);
      std::copy_n(times->begin() + static_cast<std::ptrdiff_t>(first), piece.count, piece.ns);
      parent.send(piece);
    }
    ++series;
  }
}

void serve(const cuda::device& dev, const vulkan::device_context& vk, const peer_link& parent) {
  attach_devices devices(dev);
  for (;;) {
    switch (parent.peek_kind(idle_timeout)) {
      case msg_kind::attach_vmm:
        parent.send(attach_vmm(devices, parent.receive<attach_vmm_request>(msg_kind::attach_vmm)));
        break;
      case msg_kind::attach_legacy:
        parent.send(attach_legacy(parent.receive<attach_legacy_request>(msg_kind::attach_legacy)));
        break;
      case msg_kind::growth_begin:
        follow_growth_round(dev, parent, parent.receive<growth_request>(msg_kind::growth_begin));
        break;
      case msg_kind::frames:
        consume(dev, vk, parent, parent.receive<frames_request>(msg_kind::frames));
        break;
      case msg_kind::quit:
        (void)parent.receive<plain_request>(msg_kind::quit);
        parent.send(child_reply{});
        return;
      default:
        throw bench_failure("the child received an unexpected request");
    }
  }
}

}  // namespace

int child_main(int device) {
  const peer_link parent = parent_link();
  try {
    open_runtime_device(device);
    const auto dev = cuda::device::open(device);
    if (!dev) throw device_unavailable(dev.error().message());
    warm_up(*dev);
    // (c)'s Vulkan consumer: one device for every run (making one takes ~0.1 s).
    auto vk = sync::create_vulkan_context_for(*dev);
    if (!vk) throw device_unavailable("no Vulkan device on the CUDA device: " + vk.error().message());
    parent.send(child_reply{});  // ready
    serve(*dev, *vk, parent);
    return exit_ok;
  } catch (const device_unavailable& e) {
    try {
      parent.send(failure_reply(exit_no_device, e.what()));
    } catch (...) {
    }
    return exit_no_device;
  } catch (const std::exception& e) {
    try {
      parent.send(failure_reply(exit_failed, std::string("in the child process: ") + e.what()));
    } catch (...) {
    }
    return exit_failed;
  }
}

}  // namespace membridge::bench::ipc_bench
