// The soak's viewer: subscribes to the producer as a consumer, imports the buffer and its two
// semaphores into CUDA and checks every frame it is told of (the whole current size against frame
// n's words) between a GPU wait on `produced` and its signal of `consumed`; follows growth and
// shrink; reconnects (with a backoff) whenever the producer goes away. When the producer dies with
// a frame's wait still queued, the viewer lets its own stream go by signalling `produced` itself and
// does not count that frame. fds are counted after every session's teardown: the first is the
// steady baseline, and each later one (and the last, at SIGTERM) must equal it.
#include "roles.hpp"
#include "soak_kernels.cuh"

#include "cuda_support.hpp"

#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/sync/ipc_buffers.hpp>

#include <chrono>
#include <optional>
#include <thread>

namespace membridge::bench::soak {

namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

struct viewer_state {
  std::uint64_t frames = 0;
  std::uint64_t errors = 0;
  std::uint64_t sessions = 0;
  clock::time_point next_report = clock::now();

  void report(bool now = false) {
    if (!now && clock::now() < next_report) return;
    report_line("progress frames=" + std::to_string(frames) + " errors=" + std::to_string(errors) +
                " sessions=" + std::to_string(sessions) + " resizes=0");
    next_report = clock::now() + 100ms;
  }
  void fail(const std::string& what) {
    ++errors;
    report_line("error " + what);
  }
};

/// Polls `stream` until it is idle or `limit` passes; true when idle.
bool stream_idle_within(cudaStream_t stream, std::chrono::milliseconds limit) {
  const auto deadline = clock::now() + limit;
  for (;;) {
    const cudaError_t rc = cudaStreamQuery(stream);
    if (rc == cudaSuccess) return true;
    if (rc != cudaErrorNotReady) check_cuda(rc, "cudaStreamQuery (viewer)");
    if (clock::now() >= deadline) return false;
    std::this_thread::sleep_for(50us);
  }
}

/// One connection to the producer, until it goes away or a stop is requested.
void run_session(const role_args& a, const cuda::device& dev, cudaStream_t stream, unsigned long long* bad,
                 viewer_state& st) {
  auto sub = ipc::subscriber::connect({.path = a.socket,
                                       .role = ipc::subscriber_role::consumer,
                                       .client_name = "soak viewer " + std::to_string(a.id),
                                       .timeout = 2s});
  if (!sub) return;  // no producer right now: the caller backs off
  ++st.sessions;
  if (sub->role() != ipc::subscriber_role::consumer) {
    st.fail("granted the observer role, not consumer");
    return;
  }
  const ipc::received_buffer* data = sub->buffer("data");
  const ipc::received_semaphore* produced_fd = sub->semaphore("frames.produced");
  const ipc::received_semaphore* consumed_fd = sub->semaphore("frames.consumed");
  if (data == nullptr || produced_fd == nullptr || consumed_fd == nullptr) {
    st.fail("the producer's state lacks 'data', 'frames.produced' or 'frames.consumed'");
    return;
  }
  auto view = sync::import_into_cuda(dev, *data);
  auto produced = cuda::external_semaphore::import_timeline(dev, produced_fd->fd);
  auto consumed = cuda::external_semaphore::import_timeline(dev, consumed_fd->fd);
  if (!view || !produced || !consumed) {
    st.fail("importing: " + (!view ? view.error() : !produced ? produced.error() : consumed.error()).message());
    return;
  }
  const std::uint64_t first = sub->frame_at_join() ? *sub->frame_at_join() + 1 : 0;
  while (stop_requested == 0) {
    st.report();
    auto event = sub->next_event(100ms);
    if (!event) {
      if (event.error().code() == errc::timeout) continue;
      return;  // the producer died mid-message: a new session
    }
    if (event->what == ipc::subscriber_event::kind::disconnected) return;
    if (event->what == ipc::subscriber_event::kind::buffer_changed) {
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (before following growth)");
      if (auto followed = sync::follow_growth(*view, *sub->buffer("data")); !followed)
        st.fail("follow_growth: " + followed.error().message());
      continue;
    }
    if (event->what != ipc::subscriber_event::kind::frame || event->frame < first) continue;
    const std::uint64_t m = event->frame;
    check_cuda(cudaMemsetAsync(bad, 0, sizeof *bad, stream), "cudaMemsetAsync");
    if (auto w = produced->wait(stream, m + 1); !w) return st.fail("wait on produced: " + w.error().message());
    check_cuda(check_frame(view->data<void>(), view->size(), m, bad, stream), "check_frame");
    if (auto s = consumed->signal(stream, m + 1); !s) return st.fail("signal consumed: " + s.error().message());
    if (!stream_idle_within(stream, 3000ms)) {
      // The producer died before its release ran: let the stream go, and do not count the frame.
      if (auto s = produced->signal(stream, std::uint64_t{1} << 62U); !s) st.fail("unblocking: " + s.error().message());
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (unblocked)");
      return;
    }
    unsigned long long wrong = 0;
    check_cuda(cudaMemcpy(&wrong, bad, sizeof wrong, cudaMemcpyDeviceToHost), "cudaMemcpy (errors)");
    if (wrong != 0) st.fail("frame " + std::to_string(m) + ": " + std::to_string(wrong) + " words wrong");
    ++st.frames;
  }
}

}  // namespace

int run_viewer(const role_args& a) {
  catch_sigterm();
  open_runtime_device(0);
  auto opened = cuda::device::open(0);
  if (!opened) throw device_unavailable(opened.error().message());
  const cuda::device dev = std::move(opened).value();
  const cuda_stream stream;
  unsigned long long* bad = nullptr;
  check_cuda(cudaMalloc(&bad, sizeof *bad), "cudaMalloc");
  viewer_state st;
  int steady = -1;
  auto backoff = 20ms;
  while (stop_requested == 0) {
    const std::uint64_t sessions = st.sessions;
    run_session(a, dev, stream.get(), bad, st);
    check_cuda(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize (end of a session)");
    const int now = open_fd_count();
    if (st.sessions != sessions) {
      if (steady < 0) steady = now;
      else if (now != steady) st.fail("after session " + std::to_string(st.sessions) + ": " + std::to_string(now) +
                                      " fds open, " + std::to_string(steady) + " after the first");
      backoff = 20ms;
    } else {
      std::this_thread::sleep_for(backoff);
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, 500ms);
    }
    st.report(true);
  }
  check_cuda(cudaFree(bad), "cudaFree");
  report_line("fds base=" + std::to_string(steady < 0 ? open_fd_count() : steady) + " end=" +
              std::to_string(open_fd_count()));
  return exit_ok;
}

}  // namespace membridge::bench::soak
