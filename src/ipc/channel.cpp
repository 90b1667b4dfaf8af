// What ipc::channel and ipc::listener do the same on every platform: construction, moves, the
// checks a send makes, the forms of send and receive that forward to the platform's. The transport
// itself lives in posix/socket_channel.cpp (Unix socket) and win32/pipe_*.cpp (named pipe).
#include <membridge/ipc/channel.hpp>

#include "detail/channel_platform.hpp"

#include <array>
#include <utility>

namespace membridge::ipc {

using std::chrono::milliseconds;

channel::channel() noexcept = default;

channel::channel(os::shareable_handle handle, peer_credentials peer,
                 std::unique_ptr<detail::channel_platform> platform) noexcept
    : handle_(std::move(handle)), peer_(std::move(peer)), platform_(std::move(platform)) {}

channel::channel(channel&& other) noexcept
    : handle_(std::move(other.handle_)),
      peer_(std::move(other.peer_)),
      platform_(std::move(other.platform_)),
      ended_(other.ended_.load(std::memory_order_acquire)),
      peer_closed_(other.peer_closed_.load(std::memory_order_acquire)) {
  other.ended_.store(false, std::memory_order_release);
  other.peer_closed_.store(false, std::memory_order_release);
}

channel& channel::operator=(channel&& other) noexcept {
  if (this != &other) {
    close();
    handle_ = std::move(other.handle_);
    peer_ = std::move(other.peer_);
    platform_ = std::move(other.platform_);
    ended_.store(other.ended_.load(std::memory_order_acquire), std::memory_order_release);
    peer_closed_.store(other.peer_closed_.load(std::memory_order_acquire), std::memory_order_release);
    other.ended_.store(false, std::memory_order_release);
    other.peer_closed_.store(false, std::memory_order_release);
  }
  return *this;
}

channel::~channel() { close(); }

void channel::release() noexcept {
  handle_.reset();
  platform_.reset();
  ended_.store(false, std::memory_order_release);
}

result<void> channel::send(const message& m, milliseconds timeout) {
  MEMBRIDGE_TRY(validate_outgoing(m).with_context("channel::send"));
  std::array<os::borrowed_shareable_handle, max_fds_per_message> fds{};
  for (std::size_t i = 0; i < m.fds.size(); ++i) fds[i] = m.fds[i];
  return send(m.type, m.payload, std::span(fds.data(), m.fds.size()), timeout);
}

result<message> channel::receive(milliseconds timeout) { return receive(timeout, std::chrono::microseconds{0}); }

result<void> channel::check_send(message_type type, std::size_t payload_size,
                                 std::span<const os::borrowed_shareable_handle> fds) const {
  constexpr const char* call = "channel::send";
  if (!valid()) return error(errc::invalid_argument, call, "the channel is closed");
  if (peer_closed()) return error(errc::protocol_error, call, "the peer closed");
  if (payload_size > max_payload_size)
    return error(errc::invalid_argument, call,
                 "payload of " + std::to_string(payload_size) + " bytes exceeds the cap of " +
                     std::to_string(max_payload_size));
  if (fds.size() > max_fds_per_message)
    return error(errc::invalid_argument, call,
                 std::to_string(fds.size()) + " " + detail::handle_noun + " exceed the cap of " +
                     std::to_string(max_fds_per_message));
  if (to_string(type) == "unknown")
    return error(errc::invalid_argument, call, "unknown message type " + std::to_string(static_cast<int>(type)));
  MEMBRIDGE_TRY(detail::check_platform_send(platform_.get(), fds.size()));
  for (const os::borrowed_shareable_handle fd : fds)
    if (!fd.valid()) return error(errc::invalid_argument, call, std::string("the message carries an invalid ") + detail::handle_noun_one);
  return ok();
}

listener::listener() noexcept = default;

listener::listener(listener&& other) noexcept
    : handle_(std::move(other.handle_)), path_(std::move(other.path_)), platform_(std::move(other.platform_)) {
  other.path_.clear();
}

listener& listener::operator=(listener&& other) noexcept {
  if (this != &other) {
    reset();
    handle_ = std::move(other.handle_);
    path_ = std::move(other.path_);
    platform_ = std::move(other.platform_);
    other.path_.clear();
  }
  return *this;
}

listener::~listener() { reset(); }

}  // namespace membridge::ipc
