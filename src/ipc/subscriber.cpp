#include <membridge/ipc/subscriber.hpp>

#include "detail/payload.hpp"

#include <algorithm>
#include <utility>

namespace membridge::ipc {

namespace {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::chrono::milliseconds left_until(clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
  return std::max(left, 0ms);
}

error refuse(std::string why) { return error(errc::protocol_error, "ipc::subscriber", std::move(why)); }

}  // namespace

result<subscriber> subscriber::connect(const subscriber_options& options) {
  constexpr const char* call = "ipc::subscriber::connect";
  if (options.client_name.size() > max_name_size)
    return error(errc::invalid_argument, call, "client_name is longer than " + std::to_string(max_name_size) + " bytes");
  std::string path = options.path;
  if (path.empty()) {
    MEMBRIDGE_TRY_ASSIGN(path, socket_path_for(options.name));
  }
  const auto deadline = clock::now() + options.timeout;

  subscriber s;
  MEMBRIDGE_TRY_ASSIGN(s.channel_, channel::connect(path, options.timeout));
  const detail::hello_payload hello{options.role, options.client_name};
  MEMBRIDGE_TRY(s.channel_.send(detail::make_message(message_type::hello, detail::encode(hello)), left_until(deadline)));
  for (;;) {
    auto m = s.channel_.receive(left_until(deadline), options.handshake_spin);
    if (!m) return std::move(m.error()).add_context("waiting for " + path + "'s current state");
    if (m->type == message_type::welcome) {
      if (!m->fds.empty()) return refuse("a welcome came with fds");
      MEMBRIDGE_TRY_ASSIGN(const detail::welcome_payload w, detail::decode_welcome(m->payload));
      if (!s.pending_.empty()) return refuse("the welcome came before buffer '" + s.pending_.front().description.name + "' was complete");
      if (w.resource_count != s.buffers_.size() + s.semaphores_.size())
        return refuse("the welcome counts " + std::to_string(w.resource_count) + " resources, " +
                      std::to_string(s.buffers_.size() + s.semaphores_.size()) + " came");
      s.role_ = w.granted;
      s.publisher_name_ = w.publisher_name;
      s.last_frame_ = w.last_frame;
      s.frame_at_join_ = w.last_frame;
      return s;
    }
    if (m->type == message_type::goodbye) {
      auto reason = detail::decode_goodbye(m->payload);
      return refuse("the publisher said goodbye during the handshake: " + (reason ? *reason : std::string("(malformed)")));
    }
    if (m->type != message_type::resource) {
      return refuse("a " + std::string(to_string(m->type)) + " message before the welcome");
    }
    MEMBRIDGE_TRY(s.apply(std::move(*m)));
  }
}

subscriber& subscriber::operator=(subscriber&& other) noexcept {
  if (this != &other) {
    disconnect();
    channel_ = std::move(other.channel_);
    buffers_ = std::move(other.buffers_);
    semaphores_ = std::move(other.semaphores_);
    pending_ = std::move(other.pending_);
    last_frame_ = other.last_frame_;
    frame_at_join_ = other.frame_at_join_;
    role_ = other.role_;
    publisher_name_ = std::move(other.publisher_name_);
  }
  return *this;
}

subscriber::~subscriber() { disconnect(); }

void subscriber::disconnect() noexcept {
  if (!channel_.valid()) return;
  (void)channel_.send(detail::make_message(message_type::goodbye, detail::encode_goodbye("the subscriber disconnected")), 100ms);
  channel_.close();
}

result<subscriber_event> subscriber::next_event(std::chrono::milliseconds timeout) {
  if (!channel_.valid()) return error(errc::invalid_argument, "ipc::subscriber::next_event", "not connected");
  const auto deadline = clock::now() + timeout;
  for (;;) {
    auto m = channel_.receive(left_until(deadline));
    if (!m) {
      if (channel_.peer_closed()) {
        subscriber_event e;
        e.what = subscriber_event::kind::disconnected;
        e.reason = "the publisher went away (connection closed)";
        return e;
      }
      return m.error();
    }
    if (m->type == message_type::goodbye) {
      auto reason = detail::decode_goodbye(m->payload);
      channel_.close();
      subscriber_event e;
      e.what = subscriber_event::kind::disconnected;
      e.reason = reason ? "the publisher said goodbye: " + *reason : "the publisher said a malformed goodbye";
      return e;
    }
    auto applied = apply(std::move(*m));
    if (!applied) {
      channel_.close();
      return applied.error();
    }
    if (*applied) return std::move(**applied);
    if (left_until(deadline) == 0ms && timeout > 0ms) {
      // A partial buffer update used up the time; the rest comes with the next call.
      return error(errc::timeout, "ipc::subscriber::next_event", "a buffer update is still arriving");
    }
  }
}

result<std::optional<subscriber_event>> subscriber::apply(message m) {
  switch (m.type) {
    case message_type::resource: {
      MEMBRIDGE_TRY_ASSIGN(const auto kind, detail::peek_resource_kind(m.payload));
      if (kind == detail::resource_kind::semaphore) return apply_semaphore(std::move(m));
      return apply_buffer(std::move(m), true);
    }
    case message_type::growth: return apply_buffer(std::move(m), false);
    case message_type::frame: {
      if (!m.fds.empty()) return refuse("a frame message came with fds");
      MEMBRIDGE_TRY_ASSIGN(const std::uint64_t frame, detail::decode_frame(m.payload));
      if (last_frame_ && frame <= *last_frame_)
        return refuse("frame " + std::to_string(frame) + " after frame " + std::to_string(*last_frame_));
      last_frame_ = frame;
      subscriber_event e;
      e.what = subscriber_event::kind::frame;
      e.frame = frame;
      return std::optional(std::move(e));
    }
    default: return refuse("unexpected " + std::string(to_string(m.type)) + " message from the publisher");
  }
}

result<std::optional<subscriber_event>> subscriber::apply_buffer(message m, bool is_new) {
  MEMBRIDGE_TRY_ASSIGN(detail::buffer_payload p, detail::decode_buffer(m.payload, is_new, m.fds.size()));
  const std::string& name = p.description.name;
  auto committed = std::find_if(buffers_.begin(), buffers_.end(), [&](const auto& b) { return b.description.name == name; });
  auto pending = std::find_if(pending_.begin(), pending_.end(), [&](const auto& b) { return b.description.name == name; });
  if (pending == pending_.end()) {
    pending_buffer next;
    next.is_new = is_new;
    if (is_new) {
      if (name_taken(name)) return refuse("'" + name + "' was published twice");
    } else {
      if (committed == buffers_.end()) return refuse("growth of unknown buffer '" + name + "'");
      const buffer_description& old = committed->description;
      if (p.description.generation <= old.generation)
        return refuse("buffer '" + name + "': generation " + std::to_string(p.description.generation) +
                      " does not follow " + std::to_string(old.generation));
      if (p.description.reserved_size != old.reserved_size || p.description.device != old.device)
        return refuse("buffer '" + name + "': its reserved size or device changed");
      next.kept = std::min(old.chunks.size(), p.description.chunks.size());
      if (!std::equal(old.chunks.begin(), old.chunks.begin() + static_cast<std::ptrdiff_t>(next.kept),
                      p.description.chunks.begin()))
        return refuse("buffer '" + name + "': a growth changed chunks it kept");
    }
    next.description = p.description;
    pending_.push_back(std::move(next));
    pending = std::prev(pending_.end());
  } else if (pending->is_new != is_new || !(pending->description == p.description)) {
    return refuse("buffer '" + name + "': the parts of one update disagree");
  }
  if (p.first_fd_chunk != pending->kept + pending->fds.size())
    return refuse("buffer '" + name + "': fds for chunk " + std::to_string(p.first_fd_chunk) + " where chunk " +
                  std::to_string(pending->kept + pending->fds.size()) + " was next");
  for (auto& fd : m.fds) pending->fds.push_back(std::move(fd));
  if (pending->kept + pending->fds.size() < pending->description.chunks.size()) return std::optional<subscriber_event>();

  subscriber_event e;
  e.name = name;
  e.generation = pending->description.generation;
  if (pending->is_new) {
    e.what = subscriber_event::kind::buffer_added;
    buffers_.push_back(received_buffer{std::move(pending->description), std::move(pending->fds)});
  } else {
    e.what = subscriber_event::kind::buffer_changed;
    committed->description = std::move(pending->description);
    committed->fds.resize(pending->kept);
    for (auto& fd : pending->fds) committed->fds.push_back(std::move(fd));
  }
  pending_.erase(pending);
  return std::optional(std::move(e));
}

result<std::optional<subscriber_event>> subscriber::apply_semaphore(message m) {
  MEMBRIDGE_TRY_ASSIGN(semaphore_description d, detail::decode_semaphore(m.payload, m.fds.size()));
  if (name_taken(d.name)) return refuse("'" + d.name + "' was published twice");
  subscriber_event e;
  e.what = subscriber_event::kind::semaphore_added;
  e.name = d.name;
  semaphores_.push_back(received_semaphore{std::move(d), std::move(m.fds.front())});
  return std::optional(std::move(e));
}

bool subscriber::name_taken(const std::string& name) const noexcept {
  return std::any_of(buffers_.begin(), buffers_.end(), [&](const auto& b) { return b.description.name == name; }) ||
         std::any_of(semaphores_.begin(), semaphores_.end(), [&](const auto& s) { return s.description.name == name; }) ||
         std::any_of(pending_.begin(), pending_.end(), [&](const auto& b) { return b.description.name == name; });
}

const received_buffer* subscriber::buffer(std::string_view name) const noexcept {
  for (const auto& b : buffers_)
    if (b.description.name == name) return &b;
  return nullptr;
}

const received_semaphore* subscriber::semaphore(std::string_view name) const noexcept {
  for (const auto& s : semaphores_)
    if (s.description.name == name) return &s;
  return nullptr;
}

std::vector<std::string> subscriber::buffer_names() const {
  std::vector<std::string> names;
  names.reserve(buffers_.size());
  for (const auto& b : buffers_) names.push_back(b.description.name);
  return names;
}

}  // namespace membridge::ipc
