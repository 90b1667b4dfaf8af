#include <membridge/ipc/publisher.hpp>

#include "detail/payload.hpp"

#include <membridge/core/log.hpp>
#include <membridge/os/start_thread.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <poll.h>
#include <span>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>
#include <utility>

namespace membridge::ipc {

namespace {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Sends `payload` with `fds` (still owned by the caller: the kernel gives the peer new descriptors).
result<void> send_with(channel& ch, message_type type, std::vector<std::byte> payload,
                       std::span<const os::unique_fd> fds, std::chrono::milliseconds timeout) {
  message m = detail::make_message(type, std::move(payload));
  m.fds.reserve(fds.size());
  for (const os::unique_fd& fd : fds) m.fds.push_back(os::unique_fd::from_native(fd.get()));
  auto sent = ch.send(m, timeout);
  for (os::unique_fd& fd : m.fds) (void)fd.release();  // borrowed: never close the caller's fds
  return sent;
}

// Sends a buffer's state with the fds of chunks [first, count) in messages of at most
// max_fds_per_message fds (at least one message, also when no fd rides along).
result<void> send_buffer(channel& ch, message_type type, const buffer_description& d,
                         std::span<const os::unique_fd> fds, std::size_t first, std::chrono::milliseconds timeout) {
  std::size_t next = first;
  do {
    const std::size_t n = std::min(max_fds_per_message, fds.size() - next);
    detail::buffer_payload p{d, static_cast<std::uint32_t>(next), static_cast<std::uint32_t>(n)};
    MEMBRIDGE_TRY(send_with(ch, type, detail::encode(p, type == message_type::resource), fds.subspan(next, n), timeout));
    next += n;
  } while (next < fds.size());
  return {};
}

bool same_chunks(const buffer_description& a, const buffer_description& b, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    if (a.chunks[i].offset != b.chunks[i].offset || a.chunks[i].size != b.chunks[i].size) return false;
  return true;
}

}  // namespace

struct publisher::impl {
  struct buffer_entry {
    buffer_description description;
    std::vector<os::unique_fd> fds;
  };
  struct semaphore_entry {
    semaphore_description description;
    os::unique_fd fd;
  };
  struct subscriber_entry {
    std::uint64_t id = 0;
    channel ch;
    subscriber_role role = subscriber_role::observer;
    std::string client_name;
  };
  struct handshake {
    channel ch;
    clock::time_point deadline;
  };

  publisher_options options;
  listener listen;
  os::unique_fd wake;
  std::thread thread;
  std::atomic<bool> stopping{false};

  mutable std::mutex mutex;  // guards everything below
  std::vector<buffer_entry> buffers;
  std::vector<semaphore_entry> semaphores;
  std::vector<subscriber_entry> subscribers;
  std::optional<std::uint64_t> last_frame;
  std::uint64_t next_id = 1;
  std::vector<publisher_event> events;  // delivered to on_event by the thread, outside the lock

  std::vector<handshake> pending_handshakes;  // the thread's own: connections that have not said hello

  void run() noexcept;
  void notify() const noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake.get(), &one, sizeof one);
  }
  // Drops subscriber `it` (lock held): closes its socket and queues a `left` event.
  std::vector<subscriber_entry>::iterator drop(std::vector<subscriber_entry>::iterator it, std::string reason) {
    publisher_event e;
    e.what = publisher_event::kind::left;
    e.subscriber = it->id;
    e.role = it->role;
    e.peer = it->ch.peer();
    e.client_name = it->client_name;
    e.reason = std::move(reason);
    e.last_frame = last_frame;
    log(log_level::info, "ipc::publisher: subscriber " + std::to_string(it->id) + " (pid " +
                             std::to_string(e.peer.pid) + ") left: " + e.reason);
    events.push_back(std::move(e));
    it = subscribers.erase(it);
    notify();
    return it;
  }
  // Sends to every subscriber with `send`; drops those it fails for (lock held).
  template <class Send>
  void broadcast(Send&& send) {
    for (auto it = subscribers.begin(); it != subscribers.end();) {
      auto sent = send(*it);
      if (sent) {
        ++it;
      } else {
        it = drop(it, "send failed: " + sent.error().message());
      }
    }
  }
  void refuse(const peer_credentials& peer, std::string reason) {
    publisher_event e;
    e.what = publisher_event::kind::refused;
    e.peer = peer;
    e.reason = std::move(reason);
    std::lock_guard lock(mutex);
    e.last_frame = last_frame;
    log(log_level::warning, "ipc::publisher: refused a connection (pid " + std::to_string(peer.pid) + ", uid " +
                                std::to_string(peer.uid) + "): " + e.reason);
    events.push_back(std::move(e));
  }
  void accept_one();
  void finish_handshake(handshake& h);
  void read_subscriber(std::uint64_t id);
  void deliver_events();
  [[nodiscard]] result<void> send_state(channel& ch, subscriber_role granted);
};

result<void> publisher::impl::send_state(channel& ch, subscriber_role granted) {
  const auto timeout = options.send_timeout;
  for (const buffer_entry& b : buffers)
    MEMBRIDGE_TRY(send_buffer(ch, message_type::resource, b.description, b.fds, 0, timeout));
  for (const semaphore_entry& s : semaphores)
    MEMBRIDGE_TRY(send_with(ch, message_type::resource, detail::encode(s.description), std::span(&s.fd, 1), timeout));
  detail::welcome_payload w;
  w.publisher_name = options.publisher_name;
  w.granted = granted;
  w.last_frame = last_frame;
  w.resource_count = static_cast<std::uint32_t>(buffers.size() + semaphores.size());
  return send_with(ch, message_type::welcome, detail::encode(w), {}, timeout);
}

void publisher::impl::accept_one() {
  auto accepted = listen.accept(0ms);
  if (!accepted) {
    if (accepted.error().code() == errc::protocol_error) refuse({}, accepted.error().message());
    return;  // a timeout: the connection was withdrawn meanwhile
  }
  pending_handshakes.push_back(handshake{std::move(*accepted), clock::now() + options.handshake_timeout});
  // A subscriber sends its hello right after connecting, so it is usually queued already: answer it
  // now instead of after another poll round (a hello not there yet is waited for as before).
  finish_handshake(pending_handshakes.back());
  if (!pending_handshakes.back().ch.valid()) pending_handshakes.pop_back();
}

void publisher::impl::finish_handshake(handshake& h) {
  const peer_credentials peer = h.ch.peer();
  auto m = h.ch.receive(0ms);
  if (!m) {
    if (m.error().code() == errc::timeout) return;  // spurious wake-up; keep waiting
    refuse(peer, "handshake: " + m.error().message());
    h.ch.close();
    return;
  }
  if (m->type != message_type::hello || !m->fds.empty()) {
    refuse(peer, std::string("handshake: expected hello without fds, got ") + std::string(to_string(m->type)));
    h.ch.close();
    return;
  }
  auto hello = detail::decode_hello(m->payload);
  if (!hello) {
    refuse(peer, "handshake: " + hello.error().message());
    h.ch.close();
    return;
  }
  std::lock_guard lock(mutex);
  const bool consumer_taken = std::any_of(subscribers.begin(), subscribers.end(),
                                          [](const subscriber_entry& s) { return s.role == subscriber_role::consumer; });
  const subscriber_role granted =
      hello->role == subscriber_role::consumer && !consumer_taken ? subscriber_role::consumer : subscriber_role::observer;
  if (auto sent = send_state(h.ch, granted); !sent) {
    publisher_event e;
    e.what = publisher_event::kind::refused;
    e.peer = peer;
    e.client_name = hello->client_name;
    e.reason = "sending the current state failed: " + sent.error().message();
    e.last_frame = last_frame;
    events.push_back(std::move(e));
    h.ch.close();
    return;
  }
  subscriber_entry s{next_id++, std::move(h.ch), granted, std::move(hello->client_name)};
  publisher_event e;
  e.what = publisher_event::kind::joined;
  e.subscriber = s.id;
  e.role = granted;
  e.peer = peer;
  e.client_name = s.client_name;
  e.last_frame = last_frame;
  events.push_back(std::move(e));
  subscribers.push_back(std::move(s));
}

void publisher::impl::read_subscriber(std::uint64_t id) {
  std::lock_guard lock(mutex);
  auto it = std::find_if(subscribers.begin(), subscribers.end(), [id](const subscriber_entry& s) { return s.id == id; });
  if (it == subscribers.end()) return;
  auto m = it->ch.receive(0ms);
  if (!m) {
    if (m.error().code() == errc::timeout) return;
    drop(it, it->ch.peer_closed() ? std::string("went away (connection closed)") : m.error().message());
    return;
  }
  if (m->type == message_type::goodbye && m->fds.empty()) {
    auto reason = detail::decode_goodbye(m->payload);
    drop(it, reason ? "goodbye: " + *reason : "malformed goodbye: " + reason.error().message());
    return;
  }
  drop(it, std::string("protocol error: a subscriber may only send goodbye, got ") + std::string(to_string(m->type)));
}

void publisher::impl::deliver_events() {
  std::vector<publisher_event> ready;
  {
    std::lock_guard lock(mutex);
    ready.swap(events);
  }
  if (!options.on_event) return;
  for (const publisher_event& e : ready) options.on_event(e);
}

void publisher::impl::run() noexcept {
  std::vector<pollfd> fds;
  std::vector<std::uint64_t> ids;  // subscriber id per pollfd after the fixed ones and handshakes
  while (!stopping.load()) {
    fds.clear();
    ids.clear();
    fds.push_back({wake.get(), POLLIN, 0});
    fds.push_back({listen.native().get(), POLLIN, 0});
    for (const handshake& h : pending_handshakes) fds.push_back({h.ch.native().get(), POLLIN, 0});
    {
      std::lock_guard lock(mutex);
      for (const subscriber_entry& s : subscribers) {
        fds.push_back({s.ch.native().get(), POLLIN, 0});
        ids.push_back(s.id);
      }
    }
    int timeout_ms = -1;
    const auto now = clock::now();
    for (const handshake& h : pending_handshakes) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(h.deadline - now).count() + 1;
      timeout_ms = timeout_ms < 0 ? static_cast<int>(std::max<long long>(left, 0))
                                  : std::min(timeout_ms, static_cast<int>(std::max<long long>(left, 0)));
    }
    const int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) {
      log(log_level::error, "ipc::publisher: poll failed, errno " + std::to_string(errno));
      std::this_thread::sleep_for(10ms);
      continue;
    }
    if (fds[0].revents != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] const auto r = ::read(wake.get(), &count, sizeof count);
    }
    if (stopping.load()) break;
    const std::size_t handshakes = pending_handshakes.size();
    for (std::size_t i = 0; i < handshakes; ++i)
      if (fds[2 + i].revents != 0) finish_handshake(pending_handshakes[i]);
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (fds[2 + handshakes + i].revents != 0) read_subscriber(ids[i]);
    const auto later = clock::now();
    for (handshake& h : pending_handshakes) {
      if (h.ch.valid() && later >= h.deadline) {
        refuse(h.ch.peer(), "no hello within " + std::to_string(options.handshake_timeout.count()) + " ms");
        h.ch.close();
      }
    }
    std::erase_if(pending_handshakes, [](const handshake& h) { return !h.ch.valid(); });
    if (fds[1].revents != 0) accept_one();
    deliver_events();
  }
  deliver_events();
}

publisher::publisher() noexcept = default;
publisher::publisher(std::unique_ptr<impl> state) noexcept : impl_(std::move(state)) {}
publisher::publisher(publisher&& other) noexcept = default;
publisher& publisher::operator=(publisher&& other) noexcept {
  if (this != &other) {
    stop();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
publisher::~publisher() { stop(); }

result<publisher> publisher::start(const publisher_options& options) {
  constexpr const char* call = "ipc::publisher::start";
  if (options.publisher_name.size() > max_name_size)
    return error(errc::invalid_argument, call, "publisher_name is longer than " + std::to_string(max_name_size) + " bytes");
  auto state = std::make_unique<impl>();
  state->options = options;
  MEMBRIDGE_TRY_ASSIGN(state->listen, listener::listen(options.listen));
  const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return error::from_errno(errno, "eventfd", "the publisher's wake-up fd");
  state->wake = os::unique_fd::from_native(wake);
  impl* raw = state.get();
  MEMBRIDGE_TRY_ASSIGN(state->thread, os::start_thread("the publisher's thread", [raw] { raw->run(); }));
  return publisher(std::move(state));
}

void publisher::stop() noexcept {
  if (!impl_) return;
  impl_->stopping.store(true);
  impl_->notify();
  if (impl_->thread.joinable()) impl_->thread.join();
  {
    std::lock_guard lock(impl_->mutex);
    for (auto& s : impl_->subscribers)
      (void)send_with(s.ch, message_type::goodbye, detail::encode_goodbye("the publisher stopped"), {}, 100ms);
    impl_->subscribers.clear();
  }
  impl_.reset();
}

result<void> publisher::publish_buffer(const buffer_description& description, std::vector<os::unique_fd> chunk_fds) {
  constexpr const char* call = "ipc::publisher::publish_buffer";
  if (!impl_) return error(errc::invalid_argument, call, "the publisher is not started");
  if (const std::string why = check(description); !why.empty()) return error(errc::invalid_argument, call, why);
  if (chunk_fds.size() != description.chunks.size())
    return error(errc::invalid_argument, call,
                 std::to_string(chunk_fds.size()) + " fds for " + std::to_string(description.chunks.size()) + " chunks");
  if (std::any_of(chunk_fds.begin(), chunk_fds.end(), [](const os::unique_fd& fd) { return !fd.valid(); }))
    return error(errc::invalid_argument, call, "an empty fd");
  std::lock_guard lock(impl_->mutex);
  const auto taken = [&](const std::string& name) {
    return std::any_of(impl_->buffers.begin(), impl_->buffers.end(), [&](const auto& b) { return b.description.name == name; }) ||
           std::any_of(impl_->semaphores.begin(), impl_->semaphores.end(), [&](const auto& s) { return s.description.name == name; });
  };
  if (taken(description.name)) return error(errc::invalid_argument, call, "'" + description.name + "' is already published");
  impl_->buffers.push_back({description, std::move(chunk_fds)});
  const auto& entry = impl_->buffers.back();
  impl_->broadcast([&](impl::subscriber_entry& s) {
    return send_buffer(s.ch, message_type::resource, entry.description, entry.fds, 0, impl_->options.send_timeout);
  });
  return {};
}

result<void> publisher::update_buffer(const buffer_description& description, std::vector<os::unique_fd> new_chunk_fds) {
  constexpr const char* call = "ipc::publisher::update_buffer";
  if (!impl_) return error(errc::invalid_argument, call, "the publisher is not started");
  if (const std::string why = check(description); !why.empty()) return error(errc::invalid_argument, call, why);
  std::lock_guard lock(impl_->mutex);
  auto it = std::find_if(impl_->buffers.begin(), impl_->buffers.end(),
                         [&](const auto& b) { return b.description.name == description.name; });
  if (it == impl_->buffers.end())
    return error(errc::invalid_argument, call, "no buffer '" + description.name + "' is published");
  const buffer_description& old = it->description;
  if (description.generation <= old.generation)
    return error(errc::invalid_argument, call,
                 "generation " + std::to_string(description.generation) + " is not larger than " + std::to_string(old.generation));
  if (description.reserved_size != old.reserved_size || description.device != old.device)
    return error(errc::invalid_argument, call, "the reserved size and device of a buffer never change");
  const std::size_t kept = std::min(old.chunks.size(), description.chunks.size());
  if (!same_chunks(old, description, kept)) return error(errc::invalid_argument, call, "the kept chunks changed");
  const std::size_t added = description.chunks.size() - kept;
  if (new_chunk_fds.size() != added)
    return error(errc::invalid_argument, call,
                 std::to_string(new_chunk_fds.size()) + " new fds for " + std::to_string(added) + " new chunks");
  if (std::any_of(new_chunk_fds.begin(), new_chunk_fds.end(), [](const os::unique_fd& fd) { return !fd.valid(); }))
    return error(errc::invalid_argument, call, "an empty fd");
  it->description = description;
  it->fds.resize(kept);
  for (auto& fd : new_chunk_fds) it->fds.push_back(std::move(fd));
  impl_->broadcast([&](impl::subscriber_entry& s) {
    return send_buffer(s.ch, message_type::growth, it->description, it->fds, kept, impl_->options.send_timeout);
  });
  return {};
}

result<void> publisher::publish_semaphore(const semaphore_description& description, os::unique_fd fd) {
  constexpr const char* call = "ipc::publisher::publish_semaphore";
  if (!impl_) return error(errc::invalid_argument, call, "the publisher is not started");
  if (!is_valid_resource_name(description.name))
    return error(errc::invalid_argument, call, "invalid name '" + description.name + "'");
  if (!fd.valid()) return error(errc::invalid_argument, call, "an empty fd");
  std::lock_guard lock(impl_->mutex);
  const auto& name = description.name;
  if (std::any_of(impl_->buffers.begin(), impl_->buffers.end(), [&](const auto& b) { return b.description.name == name; }) ||
      std::any_of(impl_->semaphores.begin(), impl_->semaphores.end(), [&](const auto& s) { return s.description.name == name; }))
    return error(errc::invalid_argument, call, "'" + name + "' is already published");
  impl_->semaphores.push_back({description, std::move(fd)});
  const auto& entry = impl_->semaphores.back();
  impl_->broadcast([&](impl::subscriber_entry& s) {
    return send_with(s.ch, message_type::resource, detail::encode(entry.description), std::span(&entry.fd, 1),
                     impl_->options.send_timeout);
  });
  return {};
}

result<void> publisher::announce_frame(std::uint64_t frame) {
  constexpr const char* call = "ipc::publisher::announce_frame";
  if (!impl_) return error(errc::invalid_argument, call, "the publisher is not started");
  std::lock_guard lock(impl_->mutex);
  if (impl_->last_frame && frame <= *impl_->last_frame)
    return error(errc::invalid_argument, call,
                 "frame " + std::to_string(frame) + " is not after frame " + std::to_string(*impl_->last_frame));
  impl_->last_frame = frame;
  const auto payload = detail::encode_frame(frame);
  impl_->broadcast([&](impl::subscriber_entry& s) -> result<void> {
    auto sent = send_with(s.ch, message_type::frame, payload, {}, std::chrono::milliseconds(0));
    if (!sent && sent.error().code() == errc::timeout) return {};  // its socket is full: it misses this one
    return sent;
  });
  return {};
}

std::optional<buffer_description> publisher::find_buffer(const std::string& name) const {
  if (!impl_) return std::nullopt;
  std::lock_guard lock(impl_->mutex);
  for (const auto& b : impl_->buffers)
    if (b.description.name == name) return b.description;
  return std::nullopt;
}

std::size_t publisher::subscriber_count() const {
  if (!impl_) return 0;
  std::lock_guard lock(impl_->mutex);
  return impl_->subscribers.size();
}

bool publisher::has_consumer() const {
  if (!impl_) return false;
  std::lock_guard lock(impl_->mutex);
  return std::any_of(impl_->subscribers.begin(), impl_->subscribers.end(),
                     [](const auto& s) { return s.role == subscriber_role::consumer; });
}

std::optional<std::uint64_t> publisher::last_frame() const {
  if (!impl_) return std::nullopt;
  std::lock_guard lock(impl_->mutex);
  return impl_->last_frame;
}

const std::string& publisher::path() const noexcept {
  static const std::string none;
  return impl_ ? impl_->listen.path() : none;
}

}  // namespace membridge::ipc
