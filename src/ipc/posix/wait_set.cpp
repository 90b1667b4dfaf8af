// Linux: the publisher thread's wait: poll() on the sockets, an eventfd to wake it.
#include "../detail/wait_set.hpp"

#include <membridge/core/log.hpp>
#include <membridge/os/unique_fd.hpp>

#include <algorithm>
#include <cerrno>
#include <poll.h>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace membridge::ipc::detail {

namespace {

using clock = std::chrono::steady_clock;

int ms_until(clock::time_point t, clock::time_point now) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
  return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
}

constexpr short readable_events = POLLIN | POLLHUP | POLLERR;

}  // namespace

struct wait_set::state {
  os::unique_fd wake;
  std::vector<pollfd> fds;  // [0] the wake-up, [1] the listener, then the watched channels
};

wait_set::wait_set() noexcept = default;
wait_set::wait_set(wait_set&& other) noexcept = default;
wait_set& wait_set::operator=(wait_set&& other) noexcept = default;
wait_set::~wait_set() = default;

result<wait_set> wait_set::create() {
  const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return error::from_errno(errno, "eventfd", "the publisher's wake-up fd");
  wait_set out;
  out.state_ = std::make_unique<state>();
  out.state_->wake = os::unique_fd::from_native(fd);
  out.clear();
  return out;
}

void wait_set::wake() const noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(state_->wake.get(), &one, sizeof one);
}

void wait_set::clear() noexcept {
  state_->fds.clear();
  state_->fds.push_back({state_->wake.get(), POLLIN, 0});
  state_->fds.push_back({-1, 0, 0});
}

void wait_set::watch(const listener& l, bool enabled) {
  state_->fds[1] = {l.native().get(), static_cast<short>(enabled ? POLLIN : 0), 0};
}

std::size_t wait_set::watch(channel& ch, bool receive, bool send) {
  state_->fds.push_back(
      {ch.native().get(), static_cast<short>((receive ? POLLIN : 0) | (send ? POLLOUT : 0)), 0});
  return state_->fds.size() - 3;
}

void wait_set::wait(std::optional<clock::time_point> until) {
  std::vector<pollfd>& fds = state_->fds;
  const int n = ::poll(fds.data(), fds.size(), until ? ms_until(*until, clock::now()) : -1);
  if (n < 0) {
    const int e = errno;
    for (pollfd& p : fds) p.revents = 0;
    if (e == EINTR) return;
    log(log_level::error, "ipc::publisher: poll failed, errno " + std::to_string(e));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return;
  }
  if (fds[0].revents != 0) {
    std::uint64_t count = 0;
    [[maybe_unused]] const auto r = ::read(state_->wake.get(), &count, sizeof count);
  }
}

bool wait_set::connection_ready() const noexcept { return (state_->fds[1].revents & POLLIN) != 0; }

bool wait_set::ready(std::size_t index) const noexcept {
  return (state_->fds[2 + index].revents & readable_events) != 0;
}

std::string describe(const peer_credentials& peer) {
  return "pid " + std::to_string(peer.pid) + ", uid " + std::to_string(peer.uid);
}

bool is_backpressure(const error& e) noexcept {
  return e.code() == errc::timeout || e.native_code() == ETOOMANYREFS;
}

}  // namespace membridge::ipc::detail
