// The soak's producer: a frame_publisher (one slot: every frame rewrites the whole buffer) publishing
// the buffer "data"; at ~1 kHz, frame n fills the buffer's current size with frame n's words between
// cuda_acquire and cuda_release and announces it; every 150-600 ms it resizes the buffer to a random
// size (grow or shrink, whole chunks) and publishes the growth. SIGTERM: shrink back to the first
// size, report the fd counts (setup vs end), drain and exit.
#include "roles.hpp"
#include "soak_kernels.cuh"

#include "cuda_support.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/frame_publisher.hpp>
#include <membridge/sync/ipc_buffers.hpp>
#include <membridge/sync/same_gpu.hpp>

#include <chrono>
#include <random>
#include <thread>

namespace membridge::bench::soak {

namespace {

using namespace membridge::literals;
using clock = std::chrono::steady_clock;

constexpr std::size_t first_size = 32_MiB;
constexpr std::size_t size_step = 2_MiB;
constexpr std::uint64_t throttle = 2;  // frames in flight on the producer's stream at most

template <class T>
T take(result<T> r, const char* what) {
  if (!r) throw bench_failure(std::string(what) + ": " + r.error().message());
  return std::move(r).value();
}

void ok_or_throw(const result<void>& r, const char* what) {
  if (!r) throw bench_failure(std::string(what) + ": " + r.error().message());
}

/// Waits for `event` by polling (never a blocking wait that could outlive a stop request).
void wait_event(cudaEvent_t event) {
  for (;;) {
    const cudaError_t rc = cudaEventQuery(event);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) check_cuda(rc, "cudaEventQuery (producer throttle)");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

int run_producer(const role_args& a) {
  catch_sigterm();
  open_runtime_device(0);
  const cuda::device dev = take(cuda::device::open(0), "cuda::device::open");
  const vulkan::device_context vk = take(sync::create_vulkan_context_for(dev), "a Vulkan context on the GPU");
  cuda::growable_buffer buffer =
      take(cuda::growable_buffer::create(dev, {.size = first_size, .max_size = a.max_mib * 1_MiB}), "growable_buffer");
  sync::frame_publisher_options options;
  options.ipc.listen.path = a.socket;
  options.ipc.publisher_name = "soak producer";
  options.timeline.slots = 1;
  sync::frame_publisher frames = take(sync::frame_publisher::create(vk, dev, std::move(options)), "frame_publisher");
  ok_or_throw(sync::publish_buffer(frames.publisher(), "data", buffer, dev, {.name = "u32", .stride = 4}),
              "publish_buffer");
  const int fds_base = open_fd_count();
  report_line("ready");

  const cuda_stream stream;
  std::vector<cudaEvent_t> done(throttle, nullptr);
  for (cudaEvent_t& e : done) check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  std::mt19937_64 rng(a.seed);
  const auto next_resize_after = [&rng] { return std::chrono::milliseconds(150 + rng() % 451); };
  const std::uint64_t max_steps = a.max_mib * 1_MiB / size_step;
  auto next_resize = clock::now() + next_resize_after();
  auto next_report = clock::now();
  const auto start = clock::now();
  std::uint64_t resizes = 0;
  std::uint64_t n = 0;
  for (; stop_requested == 0; ++n) {
    std::this_thread::sleep_until(start + std::chrono::microseconds(1000 * n));  // ~1 kHz
    if (n >= throttle) wait_event(done[n % throttle]);
    ok_or_throw(frames.timeline().cuda_acquire(stream.get(), n), "cuda_acquire");
    check_cuda(fill_frame(buffer.data(), buffer.size(), n, stream.get()), "fill_frame");
    ok_or_throw(frames.timeline().cuda_release(stream.get(), n), "cuda_release");
    check_cuda(cudaEventRecord(done[n % throttle], stream.get()), "cudaEventRecord");
    ok_or_throw(frames.publish_frame(n), "publish_frame");
    if (clock::now() >= next_resize) {
      stream.synchronize();  // this process's writes are done before chunks go (viewers hold their own)
      const std::size_t size = (4 + rng() % (max_steps - 3)) * size_step;  // 8 MiB .. max
      ok_or_throw(buffer.resize(size), "growable_buffer::resize");
      ok_or_throw(sync::publish_growth(frames.publisher(), "data", buffer, dev), "publish_growth");
      ++resizes;
      next_resize = clock::now() + next_resize_after();
    }
    if (clock::now() >= next_report) {
      report_line("progress frames=" + std::to_string(n + 1) + " errors=0 sessions=1 resizes=" +
                  std::to_string(resizes));
      next_report = clock::now() + std::chrono::milliseconds(100);
    }
  }
  stream.synchronize();
  ok_or_throw(buffer.resize(first_size), "growable_buffer::resize (back to the first size)");
  ok_or_throw(sync::publish_growth(frames.publisher(), "data", buffer, dev), "publish_growth (back)");
  report_line("progress frames=" + std::to_string(n) + " errors=0 sessions=1 resizes=" + std::to_string(resizes));
  report_line("fds base=" + std::to_string(fds_base) + " end=" + std::to_string(open_fd_count()));
  for (cudaEvent_t e : done) (void)cudaEventDestroy(e);
  (void)frames.timeline().drain(std::chrono::seconds(2));  // consumers that left never signal again
  return exit_ok;
}

}  // namespace membridge::bench::soak
