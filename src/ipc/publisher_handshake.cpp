// The publisher's side of a connection before it joins: accepting, refusing, the handshake and the
// state queued to a joiner (shared, then the consumer's own resources, then the welcome).
#include "detail/publisher_impl.hpp"

#include <algorithm>

namespace membridge::ipc {

namespace {

using namespace std::chrono_literals;
using detail::clock;
using detail::make_outgoing;
using detail::outgoing_ptr;
using detail::shared_fd;
using detail::who;
using detail::accept_pause;
using detail::max_pending_handshakes;
using detail::refusal_log_interval;

}  // namespace

// Reports a refused connection; the log gets the first of an interval, then one summary line.
void publisher::impl::refuse(const peer_credentials& peer, std::string reason, std::string client_name) {
  const auto now = clock::now();
  const std::string line = "(" + detail::describe(peer) + "): " + detail::printable(reason);
  if (!refusal_window_end || now >= *refusal_window_end) {
    log(log_level::warning, "ipc::publisher: refused a connection " + line);
    refusal_window_end = now + refusal_log_interval;
  } else {
    ++refusals_unlogged;
    last_refusal = line;
  }
  publisher_event e;
  e.what = publisher_event::kind::refused;
  e.peer = peer;
  e.client_name = std::move(client_name);
  e.reason = std::move(reason);
  std::lock_guard lock(mutex);
  e.last_frame = last_frame;
  events.push_back(std::move(e));
}

std::vector<outgoing_ptr> publisher::impl::state_messages(subscriber_role granted, const std::vector<outgoing_ptr>& own) {
  std::vector<outgoing_ptr> out;
  for (buffer_entry& b : buffers) {
    if (b.state.empty()) b.state = detail::buffer_messages(message_type::resource, b.description, b.fds, 0);
    out.insert(out.end(), b.state.begin(), b.state.end());
  }
  for (const semaphore_entry& s : semaphores) out.push_back(s.state);
  out.insert(out.end(), own.begin(), own.end());
  detail::welcome_payload w;
  w.publisher_name = options.publisher_name;
  w.granted = granted;
  w.last_frame = last_frame;
  w.resource_count = static_cast<std::uint32_t>(buffers.size() + semaphores.size() + own.size());
  out.push_back(make_outgoing(message_type::welcome, detail::encode(w)));
  return out;
}

bool publisher::impl::published_locked(const std::string& name) const {
  return std::any_of(buffers.begin(), buffers.end(), [&](const buffer_entry& b) { return b.description.name == name; }) ||
         std::any_of(semaphores.begin(), semaphores.end(), [&](const semaphore_entry& e) { return e.description.name == name; });
}

result<std::vector<outgoing_ptr>> publisher::impl::consumer_messages(const consumer_join& join) const {
  constexpr const char* call = "ipc::publisher: on_consumer_join";
  MEMBRIDGE_TRY_ASSIGN(consumer_resources made, options.on_consumer_join(join));
  std::vector<outgoing_ptr> out;
  for (consumer_semaphore& c : made.semaphores) {
    if (!is_valid_resource_name(c.description.name))
      return error(errc::invalid_argument, call, "invalid name '" + detail::printable(c.description.name) + "'");
    if (!c.fd.valid()) return error(errc::invalid_argument, call, "semaphore '" + c.description.name + "' has no fd");
    std::vector<shared_fd> fds;
    fds.push_back(std::make_shared<const os::shareable_handle>(std::move(c.fd)));
    out.push_back(make_outgoing(message_type::resource, detail::encode(c.description), std::move(fds)));
  }
  return out;
}

std::size_t publisher::impl::consumers_locked() const {
  return static_cast<std::size_t>(std::count_if(subscribers.begin(), subscribers.end(), [](const subscriber_ptr& x) {
    return x->role == subscriber_role::consumer;
  }));
}

void publisher::impl::refuse_joiner(subscriber_entry& s, const std::string& reason, bool had_resources) {
  // The socket is empty at this point, so the goodbye fits without waiting; a failed send only
  // loses the reason (the joiner then sees the connection closed).
  (void)s.ch.send(message_type::goodbye, detail::encode_goodbye("refused: " + reason), {}, 0ms);
  if (had_resources) {
    // Whoever made its resources learns that they are not used, as for any consumer that leaves.
    log(log_level::warning, "ipc::publisher: refused " + who(s.id, s.peer, s.client_name) + ": " + detail::printable(reason));
    std::lock_guard lock(mutex);
    events.push_back(event_for(publisher_event::kind::left, s, "refused: " + reason));
  } else {
    refuse(s.peer, reason, s.client_name);
  }
  s.ch.close();
}

void publisher::impl::accept_one() {
  auto accepted = listen.accept(0ms);
  if (!accepted) {
    const auto& e = accepted.error();
    if (e.code() == errc::protocol_error) {
      refuse({}, e.message());
    } else if (e.code() != errc::timeout) {  // a timeout: the connection was withdrawn meanwhile
      // EMFILE, ENFILE, ENOBUFS, ENOMEM...: the connection stays in the backlog and the listener
      // readable, so polling it again at once would spin. Pause, and log once per episode.
      accept_paused_until = clock::now() + accept_pause;
      if (accept_failures++ == 0)
        log(log_level::warning, "ipc::publisher: " + e.message() + "; accepting again every " +
                                    std::to_string(accept_pause.count()) + " ms (logged once until it works)");
    }
    return;
  }
  if (accept_failures > 0) {
    log(log_level::info, "ipc::publisher: accepting connections again after " + std::to_string(accept_failures) +
                             " failed accepts");
    accept_failures = 0;
  }
  if (pending_handshakes.size() >= max_pending_handshakes) {
    handshake& oldest = pending_handshakes.front();
    refuse(oldest.ch.peer(), "too many connections (" + std::to_string(max_pending_handshakes) +
                                 ") waiting for their hello: the oldest is dropped");
    pending_handshakes.pop_front();
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
    refuse(peer, std::string("handshake: expected hello without fds, got ") + std::string(to_string(m->type)) +
                     (m->fds.empty() ? "" : " with " + std::to_string(m->fds.size()) + " fds"));
    h.ch.close();
    return;
  }
  auto hello = detail::decode_hello(m->payload);
  if (!hello) {
    refuse(peer, "handshake: " + hello.error().message());
    h.ch.close();
    return;
  }
  // The state is queued, not sent: the thread sends it without the lock (a joiner that never reads
  // is dropped after send_timeout and holds up nobody).
  auto s = std::make_shared<subscriber_entry>();
  s->peer = peer;
  s->client_name = std::move(hello->client_name);
  s->ch = std::move(h.ch);
  std::optional<std::uint64_t> seen_frame;
  {
    std::lock_guard lock(mutex);
    // Only this thread adds subscribers, so the count checked here stays true until the state is queued.
    s->role = hello->role == subscriber_role::consumer && consumers_locked() < options.max_consumers
                  ? subscriber_role::consumer
                  : subscriber_role::observer;
    s->id = next_id++;
    seen_frame = last_frame;
  }
  const bool own_resources = s->role == subscriber_role::consumer && static_cast<bool>(options.on_consumer_join);
  std::vector<outgoing_ptr> own;
  if (own_resources) {
    // Subscribers dropped so far are reported first: whoever makes the resources (frame_publisher:
    // a semaphore and its CUDA import) then no longer waits for consumers that are gone.
    deliver_events();
    // Outside the lock: making a consumer's resources may take milliseconds, and the producer never
    // waits for a subscriber.
    auto made = consumer_messages(consumer_join{.subscriber = s->id, .last_frame = seen_frame, .again = false});
    if (!made) {
      refuse_joiner(*s, "making the consumer's resources: " + made.error().message(), false);
      return;
    }
    own = std::move(*made);
  }
  std::string failure;
  {
    std::lock_guard lock(mutex);
    if (s->role == subscriber_role::consumer && consumers_locked() >= options.max_consumers)
      failure = "more than " + std::to_string(options.max_consumers) + " consumers";  // never, see above
    if (failure.empty() && own_resources && last_frame != seen_frame) {
      // A frame was announced during the first call: the joiner consumes frames after the new last
      // one, so its resources must say so. This call is quick (the callback's contract).
      auto made = consumer_messages(consumer_join{.subscriber = s->id, .last_frame = last_frame, .again = true});
      if (made)
        own = std::move(*made);
      else
        failure = "making the consumer's resources again: " + made.error().message();
    }
    for (const outgoing_ptr& mine : own) {
      auto d = detail::decode_semaphore(mine->payload, mine->fds.size());
      if (failure.empty() && d && published_locked(d->name))
        failure = "the consumer's own semaphore '" + d->name + "' has the name of a published resource";
    }
    if (failure.empty()) {
      const auto state = state_messages(s->role, own);
      s->queue.assign(state.begin(), state.end());
      events.push_back(event_for(publisher_event::kind::joined, *s, {}));
      subscribers.push_back(s);
    }
  }
  if (!failure.empty()) {
    own.clear();
    refuse_joiner(*s, failure, own_resources);
    return;
  }
  log(log_level::info, "ipc::publisher: " + who(s->id, peer, s->client_name) + " joined as " +
                           (s->role == subscriber_role::consumer ? "consumer" : "observer"));
  drain(s);
}

}  // namespace membridge::ipc
