#include "ipc_viewer.hpp"

#include "child_exec.hpp"
#include "fixed_text.hpp"

#include <membridge/ipc/subscriber.hpp>
#include <membridge/sync/ipc_buffers.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <iostream>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <type_traits>
#include <unistd.h>
#include <utility>

namespace membridge::bench::frame_loop {

namespace {

/// The child's end of the socketpair.
constexpr int child_fd = 3;
/// How long the child may take to open its devices, subscribe and import (it opens CUDA and Vulkan).
constexpr std::chrono::seconds setup_timeout{30};
/// Names of the published resources.
constexpr std::string_view ring_name = "particles";
constexpr std::string_view ready_name = "ready";
constexpr std::string_view released_name = "released";

// The announced value carries step and slot: checked at compile time.
static_assert(ring_slots <= 4, "ipc_frame_value keeps the slot in two bits");
static_assert(ipc_frame_step(ipc_frame_value(123456789, 2)) == 123456789);
static_assert(ipc_frame_slot(ipc_frame_value(123456789, 2)) == 2);
static_assert(ipc_frame_value(7, 2) < ipc_frame_value(8, 0), "values increase with the step");

// ------------------------------------------------------------------------------------ messages ---

enum class msg_kind : std::uint32_t {
  setup = 1,    ///< parent -> child: setup_msg
  stop = 2,     ///< parent -> child: stop_msg
  request = 100,  ///< child -> parent: request_msg (one per tick)
  ready = 101,    ///< child -> parent: status_msg (status 0) once set up
  report = 102,   ///< child -> parent: status_msg at the end, or on a failure at any time
  frames = 103,   ///< child -> parent: frames_msg pieces after a successful report
};

struct setup_msg {
  msg_kind kind = msg_kind::setup;
  std::uint32_t render = 0;
  std::uint32_t rate_hz = 0;
  std::uint64_t count = 0;
  std::uint64_t capacity = 0;
  std::uint64_t sample_count = 0;
  std::uint64_t samples[viewed_samples] = {};
  char path[108] = {};
};

struct stop_msg {
  msg_kind kind = msg_kind::stop;
  std::uint64_t frames = 0;  ///< Frames announced: the child draws them all, then reports.
};

struct request_msg {
  msg_kind kind = msg_kind::request;
  std::uint64_t frame = 0;
};

struct status_msg {
  msg_kind kind = msg_kind::report;
  std::int32_t status = 0;  ///< exit_ok, exit_no_device or exit_failed (message says why).
  std::uint64_t frames = 0;
  std::uint64_t missed_ticks = 0;
  std::uint64_t lit_pixels = 0;
  char message[400] = {};
};

struct frames_msg {
  static constexpr std::size_t capacity = 32;
  msg_kind kind = msg_kind::frames;
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::uint64_t steps[capacity] = {};
  double gpu_us[capacity] = {};
  double tick_us[capacity] = {};
  particles::particle history[capacity * viewed_samples] = {};
};

template <class T>
void send_msg(int fd, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  ssize_t sent = -1;
  do {
    sent = ::send(fd, &value, sizeof value, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent != static_cast<ssize_t>(sizeof value))
    throw bench_failure(std::string("send to the other process: ") + (sent < 0 ? std::strerror(errno) : "short"));
}

/// One message, or nothing when none came within `timeout` (polled in slices, beating the watchdog).
std::optional<std::vector<std::byte>> receive_msg(int fd, std::chrono::milliseconds timeout) {
  pollfd pfd{fd, POLLIN, 0};
  const auto deadline = steady::now() + timeout;
  for (;;) {
    heartbeat();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 200)));
    if (ready > 0) break;
    if (ready < 0 && errno != EINTR) throw bench_failure(std::string("poll: ") + std::strerror(errno));
    if (steady::now() >= deadline) return std::nullopt;
  }
  return receive_from_other(fd, sizeof(frames_msg), sizeof(msg_kind));  // frames_msg: the largest message
}

msg_kind kind_of(const std::vector<std::byte>& bytes) {
  msg_kind kind{};
  std::memcpy(&kind, bytes.data(), sizeof kind);
  return kind;
}

template <class T>
T as_msg(const std::vector<std::byte>& bytes) {
  if (bytes.size() != sizeof(T))
    throw bench_failure("a message of " + std::to_string(bytes.size()) + " bytes from the other process (kind " +
                        std::to_string(static_cast<std::uint32_t>(kind_of(bytes))) + ", expected " +
                        std::to_string(sizeof(T)) + " bytes)");
  T value;
  std::memcpy(&value, bytes.data(), sizeof value);
  return value;
}

/// Throws the child's failure (a report with a status other than 0).
[[noreturn]] void throw_child_failure(const status_msg& m) {
  const std::string text = std::string("the ipc viewer process: ") + m.message;
  if (m.status == exit_no_device) throw device_unavailable(text);
  throw bench_failure(text);
}

}  // namespace

std::span<const particles::particle> ipc_viewer_report::frame_history(std::uint64_t frame) const {
  if ((frame + 1) * viewed_samples > history.size())
    throw bench_failure("the ipc viewer reported no history for frame " + std::to_string(frame));
  return {history.data() + frame * viewed_samples, viewed_samples};
}

// --------------------------------------------------------------------------- the parent's end ---

ipc_viewer_process::ipc_viewer_process(const session& s, const scene& sc, const vulkan::timeline_semaphore& ready,
                                       const vulkan::timeline_semaphore& released, int rate_hz,
                                       std::uint64_t capacity, const std::vector<std::uint64_t>& samples) {
  if (samples.size() != viewed_samples)
    throw bench_failure("ipc viewer: " + std::to_string(samples.size()) + " samples (" +
                        std::to_string(viewed_samples) + " expected)");
  try {
    dir_.emplace("membridge-frame-loop");
    ipc::publisher_options po;
    po.listen.path = dir_->file("viewer.sock");
    po.publisher_name = "membridge_bench_frame_loop";
    publisher_ = value_or_fail(ipc::publisher::start(po), "ipc::publisher::start");
    ok_or_fail(sync::publish_buffer(publisher_, std::string(ring_name), sc.buffer, s.device,
                                    {"particle", static_cast<std::uint32_t>(sizeof(particles::particle))}),
               "publishing the particle ring");
    for (const auto& [name, sem] : {std::pair{ready_name, &ready}, std::pair{released_name, &released}}) {
      auto fd = value_or_fail(sem->export_fd(), "exporting the " + std::string(name) + " semaphore");
      ok_or_fail(publisher_.publish_semaphore({std::string(name), s.device.uuid(), ipc::handle_kind::opaque_fd, 0},
                                              std::move(fd)),
                 "publishing the " + std::string(name) + " semaphore");
    }

    std::array<int, 2> sv{};
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv.data()) != 0)
      throw bench_failure(std::string("socketpair: ") + std::strerror(errno));
    link_ = os::unique_fd::from_native(sv[0]);
    {
      const auto child_end = os::unique_fd::from_native(sv[1]);
      pid_ = spawn_self({"membridge_bench_frame_loop", std::string(ipc_viewer_flag)}, child_end, child_fd);
    }  // closed here: the link sees the child's end close when the child exits

    setup_msg m;
    m.render = static_cast<std::uint32_t>(s.method);
    m.rate_hz = static_cast<std::uint32_t>(rate_hz);
    m.count = sc.count;
    m.capacity = capacity;
    m.sample_count = samples.size();
    std::copy(samples.begin(), samples.end(), m.samples);
    if (po.listen.path.size() >= sizeof m.path) throw bench_failure("the viewer's socket path is too long");
    copy_text(m.path, po.listen.path);
    send_msg(link_.get(), m);
    const auto answer = receive_msg(link_.get(), setup_timeout);
    if (!answer)
      throw bench_failure("the ipc viewer process was not ready within " + std::to_string(setup_timeout.count()) + " s");
    const status_msg st = as_msg<status_msg>(*answer);
    if (st.status != 0) throw_child_failure(st);
    if (st.kind != msg_kind::ready) throw bench_failure("the ipc viewer process sent something else than ready");
  } catch (...) {
    cleanup();
    throw;
  }
}

ipc_viewer_process::~ipc_viewer_process() { cleanup(); }

void ipc_viewer_process::cleanup() noexcept {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  link_ = os::unique_fd();
  publisher_.stop();
  dir_.reset();
}

std::optional<std::uint64_t> ipc_viewer_process::next_request(std::chrono::milliseconds timeout) {
  const auto bytes = receive_msg(link_.get(), timeout);
  if (!bytes) return std::nullopt;
  if (kind_of(*bytes) == msg_kind::report) throw_child_failure(as_msg<status_msg>(*bytes));
  const request_msg r = as_msg<request_msg>(*bytes);
  if (r.kind != msg_kind::request) throw bench_failure("the ipc viewer process sent something else than a request");
  return r.frame;
}

void ipc_viewer_process::announce(std::uint64_t step, std::uint32_t slot) {
  ok_or_fail(publisher_.announce_frame(ipc_frame_value(step, slot)), "ipc::publisher::announce_frame");
}

ipc_viewer_report ipc_viewer_process::finish(std::uint64_t frames) {
  send_msg(link_.get(), stop_msg{msg_kind::stop, frames});
  ipc_viewer_report out;
  for (;;) {  // requests the parent no longer answers may still be on the way
    const auto bytes = receive_msg(link_.get(), wait_timeout);
    if (!bytes) throw bench_failure("the ipc viewer process did not report within " +
                                    std::to_string(wait_timeout.count()) + " s");
    if (kind_of(*bytes) == msg_kind::request) continue;
    const status_msg st = as_msg<status_msg>(*bytes);
    if (st.status != 0) throw_child_failure(st);
    out.frames = st.frames;
    out.missed_ticks = st.missed_ticks;
    out.lit_pixels = static_cast<std::size_t>(st.lit_pixels);
    break;
  }
  while (out.steps.size() < out.frames) {
    const auto bytes = receive_msg(link_.get(), wait_timeout);
    if (!bytes) throw bench_failure("the ipc viewer process did not send its frames");
    const auto m = std::make_unique<frames_msg>(as_msg<frames_msg>(*bytes));
    if (m->kind != msg_kind::frames || m->first != out.steps.size() || m->count == 0 ||
        m->count > frames_msg::capacity || m->first + m->count > out.frames)
      throw bench_failure("the ipc viewer process sent a malformed frames message");
    for (std::uint64_t i = 0; i < m->count; ++i) {
      out.steps.push_back(m->steps[i]);
      out.frame_gpu_us.push_back(m->gpu_us[i]);
      out.tick_to_submit_us.push_back(m->tick_us[i]);
      const particles::particle* h = m->history + i * viewed_samples;
      out.history.insert(out.history.end(), h, h + viewed_samples);
    }
  }
  const int status = reap_child(std::exchange(pid_, -1), wait_timeout);
  if (status != exit_ok) throw bench_failure("the ipc viewer process exited with status " + std::to_string(status));
  return out;
}

// ---------------------------------------------------------------------------- the child's side ---

namespace {

/// What the child draws from: its session, the imported ring, the imported semaphores, the viewer.
/// Members in destruction order: the viewer (waits for its work) before the semaphores and the ring.
struct child_state {
  ipc::subscriber subscriber;
  vulkan::timeline_semaphore ready;
  vulkan::timeline_semaphore released;
  scene sc;
  std::optional<mailbox_viewer> viewer;
};

/// Subscribes at `m.path` (the publisher's state arrives with the connection).
ipc::subscriber subscribe(const setup_msg& m) {
  set_phase("ipc viewer: subscribing");
  ipc::subscriber_options so;
  so.path = m.path;
  so.client_name = "membridge_bench_frame_loop ipc viewer";
  so.timeout = std::chrono::milliseconds(setup_timeout);
  ipc::subscriber out = value_or_fail(ipc::subscriber::connect(so), "ipc::subscriber::connect");
  if (out.buffer(ring_name) == nullptr || out.semaphore(ready_name) == nullptr ||
      out.semaphore(released_name) == nullptr)
    throw bench_failure("the publisher did not publish the particle ring and both semaphores");
  return out;
}

/// Imports the ring into Vulkan and the semaphores, makes the viewer.
void attach(session& s, const setup_msg& m, child_state& c) {
  const ipc::received_buffer* ring = c.subscriber.buffer(ring_name);
  const ipc::received_semaphore* ready = c.subscriber.semaphore(ready_name);
  const ipc::received_semaphore* released = c.subscriber.semaphore(released_name);
  if (ring == nullptr || ready == nullptr || released == nullptr)
    throw bench_failure("the publisher did not publish the particle ring and both semaphores");
  c.sc.count = m.count;
  c.sc.slot_bytes = m.count * sizeof(particles::particle);
  const std::size_t ring_bytes = std::size_t{ring_slots} * c.sc.slot_bytes;
  if (ring->description.size < ring_bytes)
    throw bench_failure("the published ring holds " + std::to_string(ring->description.size) + " bytes, not " +
                        std::to_string(ring_bytes));
  set_phase("ipc viewer: importing the ring and the semaphores");
  c.sc.view = value_or_fail(sync::import_into_vulkan(s.context, *ring), "sync::import_into_vulkan (the ring)");
  const auto segments = c.sc.view.segments();
  if (segments.size() != 1 || segments[0].offset != 0 || segments[0].size < ring_bytes)
    throw bench_failure("the child's Vulkan view of the ring is not one buffer (" + std::to_string(segments.size()) +
                        " segments)");
  c.sc.vk_buffer = segments[0].buffer;
  c.sc.vk_base = segments[0].buffer_offset;
  c.ready = value_or_fail(vulkan::timeline_semaphore::import(s.context, ready->fd), "importing ready");
  c.released = value_or_fail(vulkan::timeline_semaphore::import(s.context, released->fd), "importing released");
  std::vector<std::uint64_t> samples(m.samples, m.samples + std::min<std::uint64_t>(m.sample_count, viewed_samples));
  c.viewer.emplace(s, c.sc, std::move(samples), m.capacity);
  c.viewer->begin_run();
}

/// What the tick loop counted.
struct child_outcome {
  std::uint64_t frames = 0;
  std::uint64_t missed_ticks = 0;
  std::vector<double> tick_us;
  std::vector<std::uint64_t> steps;
};

/// Per tick: a request for the next frame, then its announcement (or the parent's stop) and the
/// submit of its draw. After the stop: the announced frames still missing, without new requests.
void tick_loop(int link, const setup_msg& m, child_state& c, child_outcome& out) {
  set_phase("ipc viewer: drawing at " + std::to_string(m.rate_hz) + " Hz");
  const auto period = std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(1.0 / m.rate_hz));
  auto next = steady::now() + period;
  std::optional<std::uint64_t> target;  // frames announced, once the parent said stop
  std::uint64_t last_step = 0;
  steady::time_point tick{};
  bool requested = false;
  while (!target || out.frames < *target) {
    if (!target && !requested) {
      std::this_thread::sleep_until(next);
      tick = next;
      const auto now = steady::now();
      next += period;
      while (next <= now) {
        next += period;
        ++out.missed_ticks;
      }
      send_msg(link, request_msg{msg_kind::request, out.frames});
      requested = true;
    }
    std::array<pollfd, 2> fds{{{c.subscriber.native().get(), POLLIN, 0}, {link, POLLIN, 0}}};
    heartbeat();
    const int n = ::poll(fds.data(), fds.size(), 200);
    if (n < 0 && errno != EINTR) throw bench_failure(std::string("poll: ") + std::strerror(errno));
    if (n <= 0) {
      if (steady::now() > tick + wait_timeout)
        throw bench_failure("timeout: frame " + std::to_string(out.frames) + " was not announced");
      continue;
    }
    if ((fds[1].revents & (POLLIN | POLLHUP)) != 0) {
      const auto bytes = receive_msg(link, std::chrono::milliseconds(0));
      if (bytes) {
        const stop_msg stop = as_msg<stop_msg>(*bytes);
        if (stop.kind != msg_kind::stop || stop.frames < out.frames)
          throw bench_failure("the benchmark process sent a malformed stop");
        target = stop.frames;
      }
    }
    if ((fds[0].revents & (POLLIN | POLLHUP)) == 0) continue;
    const ipc::subscriber_event e = value_or_fail(c.subscriber.next_event(wait_timeout), "ipc::subscriber::next_event");
    if (e.what == ipc::subscriber_event::kind::disconnected)
      throw bench_failure("the publisher went away: " + e.reason);
    if (e.what != ipc::subscriber_event::kind::frame) continue;
    const std::uint64_t step = ipc_frame_step(e.frame);
    const std::uint32_t slot = ipc_frame_slot(e.frame);
    if (slot >= ring_slots || step <= last_step)
      throw bench_failure("announced frame value " + std::to_string(e.frame) + " is no newer step in a ring slot");
    const std::uint64_t f = out.frames;
    c.viewer->submit(viewer_kind::direct, f, slot, {c.ready.get(), f + 1}, {c.released.get(), f + 1});
    out.tick_us.push_back(ms_between(tick, steady::now()) * 1e3);
    out.steps.push_back(step);
    last_step = step;
    out.frames = f + 1;
    requested = false;
  }
}

/// Sends the report and the frames' data.
void send_report(int link, session& s, child_state& c, const child_outcome& o) {
  c.viewer->wait_idle();
  status_msg report;
  report.frames = o.frames;
  report.missed_ticks = o.missed_ticks;
  report.lit_pixels = o.frames > 0 ? check_last_image(s).lit_pixels : 0;
  const std::vector<double> gpu = c.viewer->frame_gpu_us(0, o.frames);
  send_msg(link, report);
  auto m = std::make_unique<frames_msg>();
  for (std::uint64_t first = 0; first < o.frames; first += frames_msg::capacity) {
    *m = frames_msg{};
    m->first = first;
    m->count = std::min<std::uint64_t>(frames_msg::capacity, o.frames - first);
    for (std::uint64_t i = 0; i < m->count; ++i) {
      m->steps[i] = o.steps[first + i];
      m->gpu_us[i] = gpu[first + i];
      m->tick_us[i] = o.tick_us[first + i];
      const auto h = c.viewer->history(first + i);
      std::copy(h.begin(), h.end(), m->history + i * viewed_samples);
    }
    send_msg(link, *m);
  }
}

/// Sends a failure report (best effort) and returns `status`.
int report_failure(int link, int status, const std::string& message) noexcept {
  std::cerr << "[frame_loop] ipc viewer process: " << message << '\n';
  try {
    status_msg m;
    m.status = status;
    copy_text(m.message, message);
    send_msg(link, m);
  } catch (const std::exception&) {
  }
  return status;
}

}  // namespace

int run_ipc_viewer_child() {
  if (::fcntl(child_fd, F_GETFD) < 0) {
    std::cerr << "membridge_bench_frame_loop " << ipc_viewer_flag
              << ": no link on fd 3 (this mode is started by the benchmark's viewed part, not by hand)\n";
    return exit_usage;
  }
  const os::unique_fd link = os::unique_fd::from_native(child_fd);
  const watchdog dog(std::chrono::seconds(45));
  try {
    const auto bytes = receive_msg(link.get(), setup_timeout);
    if (!bytes) return report_failure(link.get(), exit_failed, "no setup message from the benchmark process");
    const setup_msg m = as_msg<setup_msg>(*bytes);
    if (m.kind != msg_kind::setup || m.rate_hz == 0 || m.count == 0 || m.capacity == 0 ||
        m.sample_count != viewed_samples || m.path[sizeof m.path - 1] != '\0')
      return report_failure(link.get(), exit_failed, "a malformed setup message");
    ipc::subscriber subscriber = subscribe(m);
    set_phase("ipc viewer: opening a Vulkan context on the ring's GPU (no CUDA in this process)");
    session s = open_vulkan_session(subscriber.buffer(ring_name)->description.device,
                                    static_cast<particles::render_method>(m.render));
    child_state c;  // after the session: its Vulkan objects go first
    c.subscriber = std::move(subscriber);
    attach(s, m, c);
    status_msg ready;
    ready.kind = msg_kind::ready;
    send_msg(link.get(), ready);
    child_outcome o;
    tick_loop(link.get(), m, c, o);
    send_report(link.get(), s, c, o);
    return exit_ok;
  } catch (const device_unavailable& e) {
    return report_failure(link.get(), exit_no_device, e.what());
  } catch (const std::exception& e) {
    return report_failure(link.get(), exit_failed, e.what());
  }
}

}  // namespace membridge::bench::frame_loop
