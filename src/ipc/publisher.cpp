#include "detail/publisher_impl.hpp"

#include <membridge/os/start_thread.hpp>

#include <algorithm>
#include <array>
#include <span>

namespace membridge::ipc {

namespace {

using namespace std::chrono_literals;
using detail::clock;
using detail::outgoing;
using detail::outgoing_ptr;
using detail::shared_fd;
using detail::make_outgoing;
using detail::who;
using detail::drain_batch;
using detail::refusal_log_interval;

bool same_chunks(const buffer_description& a, const buffer_description& b, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    if (a.chunks[i].offset != b.chunks[i].offset || a.chunks[i].size != b.chunks[i].size) return false;
  return true;
}

std::vector<shared_fd> share(std::vector<os::shareable_handle> fds) {
  std::vector<shared_fd> out;
  out.reserve(fds.size());
  for (auto& fd : fds) out.push_back(std::make_shared<const os::shareable_handle>(std::move(fd)));
  return out;
}

}  // namespace

// Drops `s` (lock not held): takes it out of the list, reports it, closes its channel.
void publisher::impl::drop(const subscriber_ptr& s, std::string reason) {
  {
    std::lock_guard lock(mutex);
    const auto it = std::find(subscribers.begin(), subscribers.end(), s);
    if (it == subscribers.end()) return;
    log(log_level::info, "ipc::publisher: " + who(s->id, s->peer, s->client_name) + " left: " + detail::printable(reason));
    events.push_back(event_for(publisher_event::kind::left, *s, std::move(reason)));
    subscribers.erase(it);
    s->queue.clear();
  }
  s->ch.close();
}

void publisher::impl::read_subscriber(const subscriber_ptr& s) {
  auto m = s->ch.receive(0ms);
  if (!m) {
    if (m.error().code() == errc::timeout) return;
    drop(s, s->ch.peer_closed() ? std::string("went away (connection closed)") : m.error().message());
    return;
  }
  if (m->type == message_type::goodbye && m->fds.empty()) {
    auto reason = detail::decode_goodbye(m->payload);
    drop(s, reason ? "goodbye: " + *reason : "malformed goodbye: " + reason.error().message());
    return;
  }
  drop(s, std::string("protocol error: a subscriber may only send goodbye, got ") + std::string(to_string(m->type)));
}

// Sends what waits in `s`'s queue without waiting; notes since when it could not send.
void publisher::impl::drain(const subscriber_ptr& s) {
  std::array<outgoing_ptr, drain_batch> batch;
  for (;;) {
    std::size_t taken = 0;
    {
      std::lock_guard lock(mutex);
      if (!s->doomed.empty()) break;
      taken = std::min(drain_batch, s->queue.size());
      std::copy_n(s->queue.begin(), taken, batch.begin());
    }
    if (taken == 0) {
      s->stalled.reset();
      return;
    }
    std::size_t sent = 0;
    std::optional<error> failed;
    bool full = false;
    for (; sent < taken; ++sent) {
      const outgoing& m = *batch[sent];
      std::array<os::borrowed_shareable_handle, max_fds_per_message> fds{};
      for (std::size_t i = 0; i < m.fds.size(); ++i) fds[i] = *m.fds[i];
      auto r = s->ch.send(m.type, m.payload, std::span(fds.data(), m.fds.size()), 0ms);
      if (r) continue;
      // A full buffer or pipe, or too many fds in flight for this user (stuck peers hold them): wait.
      full = detail::is_backpressure(r.error());
      if (!full) failed = r.error();
      break;
    }
    for (std::size_t i = 0; i < taken; ++i) batch[i].reset();
    {
      std::lock_guard lock(mutex);
      s->queue.erase(s->queue.begin(), s->queue.begin() + static_cast<std::ptrdiff_t>(std::min(sent, s->queue.size())));
    }
    if (sent > 0) s->stalled.reset();
    if (failed) {
      // A subscriber that said goodbye and closed: its goodbye is still readable and names the leave.
      if (s->ch.peer_closed()) {
        for (int i = 0; i < 64 && s->ch.valid(); ++i) read_subscriber(s);
        if (s->ch.valid()) drop(s, "went away (connection closed)");
      } else {
        drop(s, "send failed: " + failed->message());
      }
      return;
    }
    if (full) {
      if (!s->stalled) s->stalled = clock::now();
      return;
    }
  }
}

void publisher::impl::flush_and_say_goodbye() noexcept {
  std::vector<subscriber_ptr> all;
  {
    std::lock_guard lock(mutex);
    const auto bye = make_outgoing(message_type::goodbye, detail::encode_goodbye("the publisher stopped"));
    for (const subscriber_ptr& s : subscribers) {
      if (s->doomed.empty()) s->queue.push_back(bye);
      all.push_back(s);
    }
  }
  // Well-behaved subscribers get what was queued and the goodbye; a stuck one holds this up at most
  // min(send_timeout, 250 ms) in all.
  const auto deadline = clock::now() + std::min<std::chrono::milliseconds>(options.send_timeout, 250ms);
  for (;;) {
    waits.clear();
    bool waiting = false;
    for (const subscriber_ptr& s : all) {
      drain(s);
      std::lock_guard lock(mutex);
      if (s->ch.valid() && !s->queue.empty() && s->doomed.empty()) {
        (void)waits.watch(s->ch, false, true);
        waiting = true;
      }
    }
    if (!waiting || clock::now() >= deadline) break;
    waits.wait(deadline);
  }
  std::lock_guard lock(mutex);
  subscribers.clear();
  for (const subscriber_ptr& s : all) s->ch.close();
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
  std::vector<subscriber_ptr> polled;  // the subscribers watched after the handshakes
  while (!stopping.load()) {
    polled.clear();
    auto now = clock::now();
    if (accept_paused_until && now >= *accept_paused_until) accept_paused_until.reset();
    waits.clear();
    waits.watch(listen, !accept_paused_until);
    for (handshake& h : pending_handshakes) (void)waits.watch(h.ch, true, false);
    {
      std::lock_guard lock(mutex);
      for (const subscriber_ptr& s : subscribers) {
        const bool waiting = !s->queue.empty() && s->doomed.empty();
        (void)waits.watch(s->ch, true, waiting);
        polled.push_back(s);
      }
    }
    std::optional<clock::time_point> next;
    const auto sooner = [&](clock::time_point t) { next = next ? std::min(*next, t) : t; };
    for (const handshake& h : pending_handshakes) sooner(h.deadline);
    for (const subscriber_ptr& s : polled)
      if (s->stalled) sooner(*s->stalled + options.send_timeout);
    if (accept_paused_until) sooner(*accept_paused_until);
    if (refusals_unlogged > 0 && refusal_window_end) sooner(*refusal_window_end);
    waits.wait(next);
    if (stopping.load()) break;
    const std::size_t handshakes = pending_handshakes.size();
    for (std::size_t i = 0; i < handshakes; ++i)
      if (waits.ready(i)) finish_handshake(pending_handshakes[i]);
    // Reads first: a goodbye that came is reported as such even when a send would find the peer gone.
    for (std::size_t i = 0; i < polled.size(); ++i)
      if (waits.ready(handshakes + i)) read_subscriber(polled[i]);
    now = clock::now();
    for (const subscriber_ptr& s : polled) {
      if (!s->ch.valid()) continue;  // dropped above
      std::string doomed;
      {
        std::lock_guard lock(mutex);
        doomed = s->doomed;
      }
      if (!doomed.empty()) {
        drop(s, "dropped: " + doomed);
        continue;
      }
      drain(s);
      if (s->ch.valid() && s->stalled && clock::now() - *s->stalled >= options.send_timeout) {
        std::size_t waiting = 0;
        {
          std::lock_guard lock(mutex);
          waiting = s->queue.size();
        }
        drop(s, "dropped: it read nothing for " + std::to_string(options.send_timeout.count()) + " ms (" +
                    std::to_string(waiting) + " messages waiting)");
      }
    }
    for (handshake& h : pending_handshakes) {
      if (h.ch.valid() && now >= h.deadline) {
        refuse(h.ch.peer(), "no hello within " + std::to_string(options.handshake_timeout.count()) + " ms");
        h.ch.close();
      }
    }
    std::erase_if(pending_handshakes, [](const handshake& h) { return !h.ch.valid(); });
    if (waits.connection_ready()) accept_one();
    if (refusals_unlogged > 0 && refusal_window_end && clock::now() >= *refusal_window_end) {
      log(log_level::warning, "ipc::publisher: refused " + std::to_string(refusals_unlogged) +
                                  " more connections in the last " +
                                  std::to_string(std::chrono::seconds(refusal_log_interval).count()) +
                                  " s; the last " + last_refusal);
      refusals_unlogged = 0;
      refusal_window_end = clock::now() + refusal_log_interval;
    }
    deliver_events();
  }
  flush_and_say_goodbye();
  pending_handshakes.clear();
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
  MEMBRIDGE_TRY_ASSIGN(state->waits, detail::wait_set::create());
  impl* raw = state.get();
  MEMBRIDGE_TRY_ASSIGN(state->thread, os::start_thread("the publisher's thread", [raw] { raw->run(); }));
  return publisher(std::move(state));
}

void publisher::stop() noexcept {
  if (!impl_) return;
  impl_->stopping.store(true);
  impl_->notify();
  if (impl_->thread.joinable()) impl_->thread.join();  // it flushes the queues and says goodbye
  impl_.reset();
}

result<void> publisher::publish_buffer(const buffer_description& description, std::vector<os::shareable_handle> chunk_fds) {
  constexpr const char* call = "ipc::publisher::publish_buffer";
  if (!impl_) return error(errc::invalid_argument, call, "the publisher is not started");
  if (const std::string why = check(description); !why.empty()) return error(errc::invalid_argument, call, why);
  if (chunk_fds.size() != description.chunks.size())
    return error(errc::invalid_argument, call,
                 std::to_string(chunk_fds.size()) + " fds for " + std::to_string(description.chunks.size()) + " chunks");
  if (std::any_of(chunk_fds.begin(), chunk_fds.end(), [](const os::shareable_handle& fd) { return !fd.valid(); }))
    return error(errc::invalid_argument, call, "an empty fd");
  auto fds = share(std::move(chunk_fds));
  // Encoded before the lock is taken: the lock covers only the state change and the queueing.
  auto messages = detail::buffer_messages(message_type::resource, description, fds, 0);
  {
    std::lock_guard lock(impl_->mutex);
    const auto& name = description.name;
    if (std::any_of(impl_->buffers.begin(), impl_->buffers.end(), [&](const auto& b) { return b.description.name == name; }) ||
        std::any_of(impl_->semaphores.begin(), impl_->semaphores.end(), [&](const auto& s) { return s.description.name == name; }))
      return error(errc::invalid_argument, call, "'" + name + "' is already published");
    impl_->buffers.push_back({description, std::move(fds), messages});
    impl_->broadcast(messages);
  }
  impl_->notify();
  return {};
}

result<void> publisher::update_buffer(const buffer_description& description, std::vector<os::shareable_handle> new_chunk_fds) {
  constexpr const char* call = "ipc::publisher::update_buffer";
  if (!impl_) return error(errc::invalid_argument, call, "the publisher is not started");
  if (const std::string why = check(description); !why.empty()) return error(errc::invalid_argument, call, why);
  if (std::any_of(new_chunk_fds.begin(), new_chunk_fds.end(), [](const os::shareable_handle& fd) { return !fd.valid(); }))
    return error(errc::invalid_argument, call, "an empty fd");
  auto added_fds = share(std::move(new_chunk_fds));
  std::vector<shared_fd> dropped;  // closed after the lock is released
  {
    std::lock_guard lock(impl_->mutex);
    auto it = std::find_if(impl_->buffers.begin(), impl_->buffers.end(),
                           [&](const auto& b) { return b.description.name == description.name; });
    if (it == impl_->buffers.end())
      return error(errc::invalid_argument, call, "no buffer '" + description.name + "' is published");
    const buffer_description& old = it->description;
    if (description.generation <= old.generation)
      return error(errc::invalid_argument, call,
                   "generation " + std::to_string(description.generation) + " is not larger than " +
                       std::to_string(old.generation));
    if (description.reserved_size != old.reserved_size || description.device != old.device)
      return error(errc::invalid_argument, call, "the reserved size and device of a buffer never change");
    const std::size_t kept = std::min(old.chunks.size(), description.chunks.size());
    if (!same_chunks(old, description, kept)) return error(errc::invalid_argument, call, "the kept chunks changed");
    const std::size_t added = description.chunks.size() - kept;
    if (added_fds.size() != added)
      return error(errc::invalid_argument, call,
                   std::to_string(added_fds.size()) + " new fds for " + std::to_string(added) + " new chunks");
    it->description = description;
    dropped.assign(std::make_move_iterator(it->fds.begin() + static_cast<std::ptrdiff_t>(kept)),
                   std::make_move_iterator(it->fds.end()));
    it->fds.resize(kept);
    it->fds.insert(it->fds.end(), added_fds.begin(), added_fds.end());
    it->state.clear();  // rebuilt for the next joiner
    impl_->broadcast(detail::buffer_messages(message_type::growth, it->description, it->fds, kept));
  }
  impl_->notify();
  return {};
}

result<void> publisher::publish_semaphore(const semaphore_description& description, os::shareable_handle fd) {
  constexpr const char* call = "ipc::publisher::publish_semaphore";
  if (!impl_) return error(errc::invalid_argument, call, "the publisher is not started");
  if (!is_valid_resource_name(description.name))
    return error(errc::invalid_argument, call, "invalid name '" + detail::printable(description.name) + "'");
  if (!fd.valid()) return error(errc::invalid_argument, call, "an empty fd");
  std::vector<shared_fd> fds;
  fds.push_back(std::make_shared<const os::shareable_handle>(std::move(fd)));
  auto message = make_outgoing(message_type::resource, detail::encode(description), std::move(fds));
  {
    std::lock_guard lock(impl_->mutex);
    const auto& name = description.name;
    if (std::any_of(impl_->buffers.begin(), impl_->buffers.end(), [&](const auto& b) { return b.description.name == name; }) ||
        std::any_of(impl_->semaphores.begin(), impl_->semaphores.end(), [&](const auto& s) { return s.description.name == name; }))
      return error(errc::invalid_argument, call, "'" + name + "' is already published");
    impl_->semaphores.push_back({description, message});
    impl_->broadcast(message);
  }
  impl_->notify();
  return {};
}

result<void> publisher::announce_frame(std::uint64_t frame) {
  constexpr const char* call = "ipc::publisher::announce_frame";
  if (!impl_) return error(errc::invalid_argument, call, "the publisher is not started");
  auto message = make_outgoing(message_type::frame, detail::encode_frame(frame));
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->last_frame && frame <= *impl_->last_frame)
      return error(errc::invalid_argument, call,
                   "frame " + std::to_string(frame) + " is not after frame " + std::to_string(*impl_->last_frame));
    impl_->last_frame = frame;
    impl_->broadcast(message);
  }
  impl_->notify();
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
                     [](const auto& s) { return s->role == subscriber_role::consumer; });
}

std::size_t publisher::consumer_count() const {
  if (!impl_) return 0;
  std::lock_guard lock(impl_->mutex);
  return impl_->consumers_locked();
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
