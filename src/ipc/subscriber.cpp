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
    MEMBRIDGE_TRY_ASSIGN(path, endpoint_for(options.name));
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
      if (s.pending_) return refuse("the welcome came before buffer '" + s.pending_->description.name + "' was complete");
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
      return refuse("the publisher said goodbye during the handshake: " +
                    (reason ? detail::printable(*reason) : std::string("(malformed)")));
    }
    if (m->type != message_type::resource && m->type != message_type::chunks) {
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
      e.reason = reason ? "the publisher said goodbye: " + detail::printable(*reason)
                        : "the publisher said a malformed goodbye";
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
  if (pending_ && m.type != message_type::chunks)
    return refuse("a " + std::string(to_string(m.type)) + " message where chunk " +
                  std::to_string(pending_->description.chunks.size()) + " of buffer '" + pending_->description.name +
                  "' was next");
  switch (m.type) {
    case message_type::resource: {
      MEMBRIDGE_TRY_ASSIGN(const auto kind, detail::peek_resource_kind(m.payload));
      if (kind == detail::resource_kind::semaphore) return apply_semaphore(std::move(m));
      return apply_header(std::move(m), true);
    }
    case message_type::growth: return apply_header(std::move(m), false);
    case message_type::chunks: return apply_chunks(std::move(m));
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

result<std::optional<subscriber_event>> subscriber::apply_header(message m, bool is_new) {
  MEMBRIDGE_TRY_ASSIGN(detail::buffer_header h, detail::decode_buffer_header(m.payload, is_new, m.fds.size()));
  const std::string& name = h.description.name;
  pending_buffer next;
  next.is_new = is_new;
  next.chunk_count = h.chunk_count;
  if (is_new) {
    if (name_taken(name)) return refuse("'" + name + "' was published twice");
  } else {
    const received_buffer* committed = buffer(name);
    if (committed == nullptr) return refuse("growth of unknown buffer '" + name + "'");
    const buffer_description& old = committed->description;
    if (h.description.generation <= old.generation)
      return refuse("buffer '" + name + "': generation " + std::to_string(h.description.generation) +
                    " does not follow " + std::to_string(old.generation));
    if (h.description.reserved_size != old.reserved_size || h.description.device != old.device)
      return refuse("buffer '" + name + "': its reserved size or device changed");
    next.kept = std::min<std::size_t>(old.chunks.size(), h.chunk_count);
    if (h.first_new_chunk != next.kept)
      return refuse("buffer '" + name + "': a growth whose new chunks start at " + std::to_string(h.first_new_chunk) +
                    ", not after the " + std::to_string(next.kept) + " it kept");
    h.description.chunks.assign(old.chunks.begin(), old.chunks.begin() + static_cast<std::ptrdiff_t>(next.kept));
  }
  next.description = std::move(h.description);
  pending_ = std::move(next);
  if (pending_->description.chunks.size() == pending_->chunk_count) return commit();
  return std::optional<subscriber_event>();
}

result<std::optional<subscriber_event>> subscriber::apply_chunks(message m) {
  if (!pending_) return refuse("a chunks message without a buffer header before it");
  MEMBRIDGE_TRY_ASSIGN(detail::chunk_batch batch, detail::decode_chunk_batch(m.payload, m.fds.size()));
  pending_buffer& p = *pending_;
  if (batch.first_chunk != p.description.chunks.size())
    return refuse("buffer '" + p.description.name + "': chunk " + std::to_string(batch.first_chunk) + " where chunk " +
                  std::to_string(p.description.chunks.size()) + " was next");
  if (batch.first_chunk + batch.chunks.size() > p.chunk_count)
    return refuse("buffer '" + p.description.name + "': chunks past its " + std::to_string(p.chunk_count));
  for (std::size_t i = 0; i < m.fds.size(); ++i)
    if (const std::string why = detail::handle_fd_problem(m.fds[i]); !why.empty())
      return refuse("buffer '" + p.description.name + "': the fd of chunk " + std::to_string(batch.first_chunk + i) +
                    " is " + why + ", not a memory handle");
  p.description.chunks.insert(p.description.chunks.end(), batch.chunks.begin(), batch.chunks.end());
  for (auto& fd : m.fds) p.fds.push_back(std::move(fd));
  if (p.description.chunks.size() < p.chunk_count) return std::optional<subscriber_event>();
  return commit();
}

result<std::optional<subscriber_event>> subscriber::commit() {
  pending_buffer p = std::move(*pending_);
  pending_.reset();
  const std::string& name = p.description.name;
  if (const std::string why = check(p.description); !why.empty()) return refuse("buffer '" + name + "': " + why);
  subscriber_event e;
  e.name = name;
  e.generation = p.description.generation;
  if (p.is_new) {
    e.what = subscriber_event::kind::buffer_added;
    buffers_.push_back(received_buffer{std::move(p.description), std::move(p.fds)});
  } else {
    e.what = subscriber_event::kind::buffer_changed;
    auto committed = std::find_if(buffers_.begin(), buffers_.end(), [&](const auto& b) { return b.description.name == name; });
    committed->description = std::move(p.description);
    committed->fds.resize(p.kept);
    for (auto& fd : p.fds) committed->fds.push_back(std::move(fd));
  }
  return std::optional(std::move(e));
}

result<std::optional<subscriber_event>> subscriber::apply_semaphore(message m) {
  MEMBRIDGE_TRY_ASSIGN(semaphore_description d, detail::decode_semaphore(m.payload, m.fds.size()));
  if (name_taken(d.name)) return refuse("'" + d.name + "' was published twice");
  if (const std::string why = detail::handle_fd_problem(m.fds.front()); !why.empty())
    return refuse("semaphore '" + d.name + "': its fd is " + why + ", not a semaphore handle");
  subscriber_event e;
  e.what = subscriber_event::kind::semaphore_added;
  e.name = d.name;
  semaphores_.push_back(received_semaphore{std::move(d), std::move(m.fds.front())});
  return std::optional(std::move(e));
}

bool subscriber::name_taken(const std::string& name) const noexcept {
  return std::any_of(buffers_.begin(), buffers_.end(), [&](const auto& b) { return b.description.name == name; }) ||
         std::any_of(semaphores_.begin(), semaphores_.end(), [&](const auto& s) { return s.description.name == name; }) ||
         (pending_ && pending_->description.name == name);
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
