#include "ipc/support.hpp"

#include "child_exec.hpp"

#include "kernels.cuh"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace membridge::bench::ipc_bench {


ipc::publisher_options publisher_options_for(const std::string& path) {
  ipc::publisher_options options;
  options.listen.path = path;
  options.publisher_name = "membridge_bench_ipc";
  return options;
}

void sleep_until_ns(std::int64_t t_ns) noexcept {
  timespec at{};
  at.tv_sec = static_cast<time_t>(t_ns / 1'000'000'000);
  at.tv_nsec = static_cast<long>(t_ns % 1'000'000'000);
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) == EINTR) {
  }
}

std::int64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// ---------------------------------------------------------------------------------------- CUDA ---

device_memory::device_memory(std::size_t bytes) { MEMBRIDGE_IPC_BENCH_CUDA(cudaMalloc(&p_, bytes)); }

device_memory& device_memory::operator=(device_memory&& other) noexcept {
  if (this != &other) {
    if (p_ != nullptr) (void)cudaFree(p_);
    p_ = std::exchange(other.p_, nullptr);
  }
  return *this;
}

device_memory::~device_memory() {
  if (p_ != nullptr) (void)cudaFree(p_);
}

void wait_stream(cudaStream_t stream, std::string_view what) {
  const auto deadline = std::chrono::steady_clock::now() + wait_timeout;
  for (;;) {
    const cudaError_t rc = cudaStreamQuery(stream);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) check_cuda(rc, "cudaStreamQuery (" + std::string(what) + ")");
    if (std::chrono::steady_clock::now() >= deadline)
      throw bench_failure("waiting for " + std::string(what) + ": the stream did not finish within " +
                          std::to_string(wait_timeout.count()) + " s");
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void verify_pattern(const void* p, std::size_t bytes, std::uint32_t seed, std::string_view what,
                    std::uint64_t first_word) {
  unsigned long long bad = 0;
  MEMBRIDGE_IPC_BENCH_CUDA(testing::gpu::count_mismatches(p, bytes, seed, bad, first_word));
  if (bad != 0)
    throw bench_failure("data check failed: " + std::string(what) + ": " + std::to_string(bad) + " of " +
                        std::to_string(bytes / 4) + " words differ from the pattern written");
}

// ------------------------------------------------------------------------------------ watchdog ---

namespace {

std::atomic<std::int64_t> last_beat{0};
std::mutex phase_lock;
std::string current_phase = "starting";  // guarded by phase_lock

}  // namespace

void heartbeat() noexcept { last_beat.store(monotonic_ns(), std::memory_order_relaxed); }

void set_phase(std::string phase) {
  {
    const std::lock_guard guard(phase_lock);
    current_phase = std::move(phase);
  }
  heartbeat();
}

watchdog::watchdog(std::chrono::seconds limit, pid_t child) {
  heartbeat();
  thread_ = std::jthread([limit, child](const std::stop_token& stop) {
    const std::int64_t limit_ns = static_cast<std::int64_t>(limit.count()) * 1'000'000'000;
    while (!stop.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (monotonic_ns() - last_beat.load(std::memory_order_relaxed) < limit_ns) continue;
      std::string phase;
      {
        const std::lock_guard guard(phase_lock);
        phase = current_phase;
      }
      std::fprintf(stderr, "membridge_bench_ipc failed: no progress for %lld s while %s (watchdog)\n",
                   static_cast<long long>(limit.count()), phase.c_str());
      std::fflush(stderr);
      if (child > 0) ::kill(child, SIGKILL);
      std::_Exit(exit_failed);
    }
  });
}

watchdog::~watchdog() = default;  // jthread requests stop and joins

// -------------------------------------------------------------------------------- the link ---

namespace {

constexpr int child_fd = 3;

}  // namespace

void peer_link::send_bytes(const void* data, std::size_t size) const {
  for (;;) {
    const ssize_t sent = ::send(socket_.get(), data, size, MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(size)) return;
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EPIPE || errno == ECONNRESET)) throw bench_failure("the other process went away");
    throw bench_failure(std::string("send to the other process failed: ") + (sent < 0 ? std::strerror(errno) : "short send"));
  }
}

namespace {

// Waits until `fd` is readable, in short polls so that the watchdog hears a heartbeat while the other
// process works. False when `deadline` passed first.
bool wait_readable(int fd, std::chrono::steady_clock::time_point deadline) {
  pollfd pfd{fd, POLLIN, 0};
  for (;;) {
    heartbeat();
    const int ready = ::poll(&pfd, 1, 200);
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) throw bench_failure(std::string("poll: ") + std::strerror(errno));
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
}

}  // namespace

std::vector<std::byte> peer_link::receive_bytes(std::size_t max, std::chrono::milliseconds timeout) const {
  if (!wait_readable(socket_.get(), std::chrono::steady_clock::now() + timeout))
    throw bench_failure("the other process did not answer within " +
                        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + " s");
  return receive_from_other(socket_.get(), max, sizeof(msg_kind));
}

msg_kind peer_link::peek_kind(std::chrono::milliseconds timeout) const {
  if (!wait_readable(socket_.get(), std::chrono::steady_clock::now() + timeout))
    throw bench_failure("the other process sent nothing in time");
  msg_kind kind{};
  const ssize_t got = ::recv(socket_.get(), &kind, sizeof kind, MSG_PEEK);
  if (got == 0) throw bench_failure("the other process went away (its socket closed)");
  if (got != static_cast<ssize_t>(sizeof kind)) throw bench_failure("a short message from the other process");
  return kind;
}

child_process child_process::spawn(int device) {
  std::array<int, 2> sv{};
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv.data()) != 0)
    throw bench_failure(std::string("socketpair: ") + std::strerror(errno));
  auto parent_end = os::unique_fd::from_native(sv[0]);
  auto child_end = os::unique_fd::from_native(sv[1]);
  const pid_t pid = spawn_self({"membridge_bench_ipc", std::string(child_flag), std::to_string(device)}, child_end, child_fd);
  child_process out;
  out.pid_ = pid;
  out.link_ = peer_link(std::move(parent_end));
  return out;
}

child_process::~child_process() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

int child_process::wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  return reap_child(std::exchange(pid_, -1), timeout, signal_status::plus_128_signo);
}

peer_link parent_link() { return peer_link(os::unique_fd::from_native(child_fd)); }

}  // namespace membridge::bench::ipc_bench
