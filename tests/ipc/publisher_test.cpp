// ipc::publisher and ipc::subscriber: the current state reaches every subscriber (also late ones)
// with its fds, growth and frames follow, a subscriber or publisher that crashes (kill -9) is
// noticed and leaks nothing, and hostile peers on either side are refused with a protocol_error
// while everybody else goes on. fds are memfds here; the gpu tier does the same with CUDA memory.
#include "child_process.hpp"
#include "detail/payload.hpp"
#include "ipc_test.hpp"

#include <membridge/ipc/publisher.hpp>
#include <membridge/ipc/subscriber.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <fcntl.h>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace membridge::testing::ipc_tier;
namespace detail = membridge::ipc::detail;
using event_kind = ipc::subscriber_event::kind;

constexpr std::uint64_t chunk_bytes = 2 << 20;

// ------------------------------------------------------------------------------------ helpers ---

std::string chunk_content(const std::string& tag, std::size_t index) { return tag + ":chunk " + std::to_string(index); }

ipc::buffer_description make_description(const std::string& name, std::size_t chunks, std::uint64_t generation = 1) {
  ipc::buffer_description d;
  d.name = name;
  d.device.bytes[0] = 0xAB;
  d.device.bytes[15] = 0x42;
  d.format = {"test.v1", 16};
  d.reserved_size = 64 * chunk_bytes;
  d.generation = generation;
  for (std::size_t i = 0; i < chunks; ++i) d.chunks.push_back({i * chunk_bytes, chunk_bytes});
  d.size = chunks * chunk_bytes - (chunks > 0 ? 100 : 0);
  return d;
}

std::vector<os::unique_fd> chunk_fds(const std::string& tag, std::size_t first, std::size_t count) {
  std::vector<os::unique_fd> fds;
  for (std::size_t i = first; i < first + count; ++i) fds.push_back(make_memfd(chunk_content(tag, i)));
  return fds;
}

/// Checks that chunk i's fd holds chunk_content(tag, i) for every chunk.
void expect_contents(const ipc::received_buffer& b, const std::string& tag) {
  ASSERT_EQ(b.fds.size(), b.description.chunks.size());
  for (std::size_t i = 0; i < b.fds.size(); ++i) EXPECT_EQ(read_all(b.fds[i]), chunk_content(tag, i)) << "chunk " << i;
}

using event_log = mt::publisher_event_log;

ipc::publisher start(const temp_dir& dir, event_log* log = nullptr, std::chrono::milliseconds handshake = 2000ms) {
  ipc::publisher_options o;
  o.listen.path = dir.file("pub.sock");
  o.publisher_name = "test publisher";
  o.handshake_timeout = handshake;
  if (log != nullptr) o.on_event = log->sink();
  auto p = ipc::publisher::start(o);
  EXPECT_TRUE(p) << p.error().message();
  return p ? std::move(*p) : ipc::publisher();
}

membridge::result<ipc::subscriber> join(const std::string& path, ipc::subscriber_role role = ipc::subscriber_role::observer,
                                        std::string name = "test subscriber") {
  return ipc::subscriber::connect({.path = path, .role = role, .client_name = std::move(name), .timeout = 5s});
}

/// The next event that is not a frame (frames are skipped), within `timeout`.
membridge::result<ipc::subscriber_event> next_non_frame(ipc::subscriber& s, std::chrono::milliseconds timeout = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto e = s.next_event(std::max(left, 0ms));
    if (!e || e->what != event_kind::frame) return e;
  }
}

// ----------------------------------------------------------------------------- child roles ---

// Subscribes to args[0] as consumer and follows the parent's script: the initial buffer "field" of
// 3 chunks (tag "parent"), a growth to 20 chunks, a shrink to 2, frames; then reports "ok" and
// waits for the publisher's goodbye. Exit codes: 0 ok, 10 connect, 11 state, 12 events, 13 goodbye.
int follow_child(const std::vector<std::string>& args) {
  auto s = join(args.at(0), ipc::subscriber_role::consumer, "follow child");
  if (!s) return 10;
  const auto* b = s->buffer("field");
  if (b == nullptr || b->fds.size() != 3 || s->role() != ipc::subscriber_role::consumer) return 11;
  for (std::size_t i = 0; i < 3; ++i)
    if (read_all(b->fds[i]) != chunk_content("parent", i)) return 11;
  std::vector<std::uint64_t> generations;
  std::uint64_t frames = 0;
  while (generations.size() < 2 || frames < 10) {
    auto e = s->next_event(10s);
    if (!e) return 12;
    if (e->what == event_kind::frame) ++frames;
    if (e->what == event_kind::buffer_changed) {
      generations.push_back(e->generation);
      b = s->buffer("field");
      const std::size_t want = generations.size() == 1 ? 20 : 2;
      if (b->fds.size() != want) return 12;
      for (std::size_t i = 0; i < want; ++i)
        if (read_all(b->fds[i]) != chunk_content("parent", i)) return 12;
    }
  }
  if (generations != std::vector<std::uint64_t>{2, 3}) return 12;
  const std::string ok = "ok";
  if (!mt::send_message(mt::child_socket(), std::as_bytes(std::span(ok)))) return 12;
  auto bye = s->next_event(10s);
  if (!bye || bye->what != event_kind::disconnected || s->connected()) return 13;
  return 0;
}
const mt::child_role follow_role("ipc_pub_follow", &follow_child);

// Subscribes to args[0] and then blocks forever (the parent kills it).
int hang_child(const std::vector<std::string>& args) {
  auto s = join(args.at(0), ipc::subscriber_role::consumer, "hang child");
  if (!s) return 10;
  const std::string ok = "joined";
  (void)mt::send_message(mt::child_socket(), std::as_bytes(std::span(ok)));
  for (;;) std::this_thread::sleep_for(1s);
}
const mt::child_role hang_role("ipc_pub_hang", &hang_child);

// Publishes buffer "field" (3 chunks, tag args[1]) at args[0], announces a frame every 2 ms until
// killed. Exit code 10: could not start.
int publisher_child(const std::vector<std::string>& args) {
  ipc::publisher_options o;
  o.listen.path = args.at(0);
  auto p = ipc::publisher::start(o);
  if (!p || !p->publish_buffer(make_description("field", 3), chunk_fds(args.at(1), 0, 3))) return 10;
  const std::string ok = "publishing";
  (void)mt::send_message(mt::child_socket(), std::as_bytes(std::span(ok)));
  for (std::uint64_t frame = 0;; ++frame) {
    (void)p->announce_frame(frame);
    std::this_thread::sleep_for(2ms);
  }
}
const mt::child_role publisher_role("ipc_pub_publish", &publisher_child);

/// Waits for the child's first message and returns it as text.
std::string child_says(mt::child_process& child) {
  auto m = mt::receive_message(child.socket(), 64, 20s);
  if (!m) return "(nothing: " + m.error().message() + ")";
  return std::string(reinterpret_cast<const char*>(m->payload.data()), m->payload.size());
}

// ------------------------------------------------------------------------ publisher input ---

TEST(ipc_publisher, refuses_bad_input_and_publishes_nothing_then) {
  temp_dir dir;
  auto p = start(dir);
  ASSERT_TRUE(p.valid());
  auto bad_name = make_description("no spaces allowed", 1);
  EXPECT_EQ(p.publish_buffer(bad_name, chunk_fds("t", 0, 1)).error().code(), errc::invalid_argument);
  auto gap = make_description("gap", 2);
  gap.chunks[1].offset += chunk_bytes;
  EXPECT_EQ(p.publish_buffer(gap, chunk_fds("t", 0, 2)).error().code(), errc::invalid_argument);
  auto too_big = make_description("big", 2);
  too_big.size = 3 * chunk_bytes;
  EXPECT_EQ(p.publish_buffer(too_big, chunk_fds("t", 0, 2)).error().code(), errc::invalid_argument);
  EXPECT_EQ(p.publish_buffer(make_description("few", 3), chunk_fds("t", 0, 2)).error().code(), errc::invalid_argument);
  std::vector<os::unique_fd> with_empty = chunk_fds("t", 0, 1);
  with_empty.emplace_back();
  EXPECT_EQ(p.publish_buffer(make_description("empty", 2), std::move(with_empty)).error().code(), errc::invalid_argument);
  EXPECT_FALSE(p.find_buffer("few"));

  ASSERT_TRUE(p.publish_buffer(make_description("field", 2), chunk_fds("t", 0, 2)));
  EXPECT_EQ(p.publish_buffer(make_description("field", 1), chunk_fds("t", 0, 1)).error().code(), errc::invalid_argument);
  EXPECT_EQ(p.publish_semaphore({.name = "field"}, make_memfd("s")).error().code(), errc::invalid_argument);
  EXPECT_EQ(p.update_buffer(make_description("field", 3, 1), chunk_fds("t", 2, 1)).error().code(), errc::invalid_argument)
      << "the generation must grow";
  EXPECT_EQ(p.update_buffer(make_description("field", 3, 2), chunk_fds("t", 2, 2)).error().code(), errc::invalid_argument)
      << "one new fd per new chunk";
  auto moved = make_description("field", 3, 2);
  moved.chunks[0].size = chunk_bytes * 2;
  moved.chunks[1].offset = chunk_bytes * 2;
  moved.chunks[2].offset = chunk_bytes * 3;
  EXPECT_EQ(p.update_buffer(moved, chunk_fds("t", 2, 1)).error().code(), errc::invalid_argument) << "kept chunks never change";
  EXPECT_EQ(p.update_buffer(make_description("other", 1, 2), chunk_fds("t", 0, 1)).error().code(), errc::invalid_argument);
  EXPECT_EQ(p.find_buffer("field")->generation, 1U);
  ASSERT_TRUE(p.announce_frame(5));
  EXPECT_EQ(p.announce_frame(5).error().code(), errc::invalid_argument);
  EXPECT_EQ(p.announce_frame(4).error().code(), errc::invalid_argument);
  EXPECT_EQ(p.last_frame(), 5U);
}

// ------------------------------------------------------------------ state, growth, frames ---

TEST(ipc_publisher, a_subscriber_gets_the_current_state_then_growth_shrink_and_frames_in_order) {
  temp_dir dir;
  auto p = start(dir);
  // 20 chunks: more than one message can carry (16 fds), so the state arrives in two parts.
  ASSERT_TRUE(p.publish_buffer(make_description("field", 20), chunk_fds("a", 0, 20)));
  ASSERT_TRUE(p.publish_semaphore({.name = "frames.produced", .parameter = 3}, make_memfd("semaphore")));
  for (std::uint64_t f = 1; f <= 3; ++f) ASSERT_TRUE(p.announce_frame(f));

  auto s = join(p.path());
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->publisher_name(), "test publisher");
  EXPECT_EQ(s->publisher().pid, ::getpid());
  EXPECT_EQ(s->frame_at_join(), 3U);
  const auto* b = s->buffer("field");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->description, make_description("field", 20));
  expect_contents(*b, "a");
  const auto* sem = s->semaphore("frames.produced");
  ASSERT_NE(sem, nullptr);
  EXPECT_EQ(sem->description.parameter, 3U);
  EXPECT_EQ(read_all(sem->fd), "semaphore");
  EXPECT_EQ(s->buffer_names(), std::vector<std::string>{"field"});

  ASSERT_TRUE(p.update_buffer(make_description("field", 40, 2), chunk_fds("a", 20, 20)));
  ASSERT_TRUE(p.announce_frame(4));
  ASSERT_TRUE(p.update_buffer(make_description("field", 5, 3), {}));
  ASSERT_TRUE(p.publish_buffer(make_description("late", 1), chunk_fds("late", 0, 1)));

  auto e = s->next_event(5s);
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(e->what, event_kind::buffer_changed);
  EXPECT_EQ(e->generation, 2U);
  // The pointer stays valid until the next next_event(); 40 chunks, all readable.
  EXPECT_EQ(s->buffer("field")->description, make_description("field", 40, 2));
  expect_contents(*s->buffer("field"), "a");
  e = s->next_event(5s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->what, event_kind::frame);
  EXPECT_EQ(e->frame, 4U);
  e = s->next_event(5s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->what, event_kind::buffer_changed);
  EXPECT_EQ(e->generation, 3U);
  EXPECT_EQ(s->buffer("field")->fds.size(), 5U);
  expect_contents(*s->buffer("field"), "a");
  e = s->next_event(5s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->what, event_kind::buffer_added);
  EXPECT_EQ(e->name, "late");
  expect_contents(*s->buffer("late"), "late");
  EXPECT_EQ(s->last_frame(), 4U);
  auto none = s->next_event(20ms);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::timeout);
  EXPECT_TRUE(s->connected());
}

TEST(ipc_publisher, a_child_process_follows_two_growths_and_frames_and_sees_the_goodbye) {
  temp_dir dir;
  event_log log;
  auto p = start(dir, &log);
  ASSERT_TRUE(p.publish_buffer(make_description("field", 3), chunk_fds("parent", 0, 3)));
  auto child = mt::spawn_child("ipc_pub_follow", {p.path()});
  ASSERT_TRUE(child) << child.error().message();
  auto joined = log.wait_for(pub_kind::joined);
  ASSERT_TRUE(joined);
  EXPECT_EQ(joined->peer.pid, child->pid());
  EXPECT_EQ(joined->role, ipc::subscriber_role::consumer);
  EXPECT_EQ(joined->client_name, "follow child");
  EXPECT_TRUE(p.has_consumer());
  ASSERT_TRUE(p.update_buffer(make_description("field", 20, 2), chunk_fds("parent", 3, 17)));
  for (std::uint64_t f = 0; f < 5; ++f) ASSERT_TRUE(p.announce_frame(f));
  ASSERT_TRUE(p.update_buffer(make_description("field", 2, 3), {}));
  for (std::uint64_t f = 5; f < 10; ++f) ASSERT_TRUE(p.announce_frame(f));
  EXPECT_EQ(child_says(*child), "ok");
  p.stop();
  auto status = child->wait(10s);
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, 0) << "10 connect, 11 state, 12 events, 13 goodbye";
}

TEST(ipc_publisher, several_subscribers_one_consumer_and_a_late_joiner_gets_the_current_state) {
  temp_dir dir;
  event_log log;
  auto p = start(dir, &log);
  ASSERT_TRUE(p.publish_buffer(make_description("field", 1), chunk_fds("v", 0, 1)));
  auto first = join(p.path(), ipc::subscriber_role::consumer, "first");
  auto second = join(p.path(), ipc::subscriber_role::consumer, "second");
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->role(), ipc::subscriber_role::consumer);
  EXPECT_EQ(second->role(), ipc::subscriber_role::observer) << "one consumer at a time";
  EXPECT_FALSE(first->frame_at_join());
  ASSERT_TRUE(p.update_buffer(make_description("field", 4, 2), chunk_fds("v", 1, 3)));
  ASSERT_TRUE(p.announce_frame(7));
  for (auto* s : {&*first, &*second}) {
    auto e = next_non_frame(*s);
    ASSERT_TRUE(e) << e.error().message();
    EXPECT_EQ(e->generation, 2U);
    expect_contents(*s->buffer("field"), "v");
  }
  auto late = join(p.path(), ipc::subscriber_role::observer, "late");
  ASSERT_TRUE(late);
  EXPECT_EQ(late->buffer("field")->description.generation, 2U);
  expect_contents(*late->buffer("field"), "v");
  EXPECT_EQ(late->frame_at_join(), 7U);
  ASSERT_TRUE(log.wait_for(pub_kind::joined, 3));
  EXPECT_EQ(p.subscriber_count(), 3U);

  first->disconnect();
  auto left = log.wait_for(pub_kind::left);
  ASSERT_TRUE(left);
  EXPECT_EQ(left->role, ipc::subscriber_role::consumer);
  EXPECT_NE(left->reason.find("goodbye"), std::string::npos) << left->reason;
  EXPECT_EQ(left->last_frame, 7U);
  EXPECT_FALSE(p.has_consumer());
  auto next = join(p.path(), ipc::subscriber_role::consumer, "next consumer");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->role(), ipc::subscriber_role::consumer);
}

// --------------------------------------------------------------------------------- failures ---

TEST(ipc_publisher, a_subscriber_killed_with_sigkill_is_dropped_and_the_publisher_goes_on) {
  temp_dir dir;
  event_log log;
  auto p = start(dir, &log);
  ASSERT_TRUE(p.publish_buffer(make_description("field", 2), chunk_fds("k", 0, 2)));
  auto child = mt::spawn_child("ipc_pub_hang", {p.path()});
  ASSERT_TRUE(child);
  ASSERT_EQ(child_says(*child), "joined");
  ASSERT_TRUE(p.has_consumer());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(child->pid(), SIGKILL), 0);
  auto left = log.wait_for(pub_kind::left, 1, 2s);
  ASSERT_TRUE(left) << "the publisher did not notice the dead subscriber";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_EQ(left->peer.pid, child->pid());
  EXPECT_EQ(left->role, ipc::subscriber_role::consumer);
  EXPECT_EQ(p.subscriber_count(), 0U);
  EXPECT_FALSE(p.has_consumer());
  auto status = child->wait(5s);
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, 128 + SIGKILL);
  // It goes on: frames, growth and a new subscriber work (and the fd-leak listener checks the rest).
  ASSERT_TRUE(p.announce_frame(1));
  ASSERT_TRUE(p.update_buffer(make_description("field", 3, 2), chunk_fds("k", 2, 1)));
  auto s = join(p.path(), ipc::subscriber_role::consumer);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->role(), ipc::subscriber_role::consumer);
  expect_contents(*s->buffer("field"), "k");
}

TEST(ipc_publisher, when_the_publisher_is_killed_subscribers_keep_their_fds_and_reconnect_to_a_new_one) {
  temp_dir dir;
  const std::string path = dir.file("pub.sock");
  auto first = mt::spawn_child("ipc_pub_publish", {path, "first"});
  ASSERT_TRUE(first);
  ASSERT_EQ(child_says(*first), "publishing");
  auto s = join(path);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->publisher().pid, first->pid());
  expect_contents(*s->buffer("field"), "first");
  auto frame = s->next_event(5s);
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->what, event_kind::frame);

  ASSERT_EQ(::kill(first->pid(), SIGKILL), 0);
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<ipc::subscriber_event> gone;
  while (!gone && std::chrono::steady_clock::now() - t0 < 5s) {
    auto e = s->next_event(5s);
    ASSERT_TRUE(e) << e.error().message();
    if (e->what == event_kind::disconnected) gone = *e;
  }
  ASSERT_TRUE(gone);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_FALSE(s->connected());
  EXPECT_EQ(s->next_event(10ms).error().code(), errc::invalid_argument);
  // What it received stays: the fds still reach the memory.
  expect_contents(*s->buffer("field"), "first");
  ASSERT_TRUE(first->wait(5s));

  // A new publisher on the same path (the dead one's socket file is stale and replaced).
  auto second = mt::spawn_child("ipc_pub_publish", {path, "second"});
  ASSERT_TRUE(second);
  ASSERT_EQ(child_says(*second), "publishing");
  auto again = join(path);
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->publisher().pid, second->pid());
  expect_contents(*again->buffer("field"), "second");
  expect_contents(*s->buffer("field"), "first");
}

// A hostile or broken subscriber: each case connects raw and misbehaves; the publisher refuses or
// drops it and a well-behaved subscriber keeps receiving frames.
struct hostile_subscriber_case {
  const char* name;
  std::function<void(ipc::channel&)> act;
  pub_kind expected;
};

TEST(ipc_publisher, hostile_subscribers_are_refused_and_the_others_are_unaffected) {
  temp_dir dir;
  event_log log;
  auto p = start(dir, &log, 300ms);
  ASSERT_TRUE(p.publish_buffer(make_description("field", 1), chunk_fds("h", 0, 1)));
  auto good = join(p.path());
  ASSERT_TRUE(good);
  auto hello = [](ipc::subscriber_role role) {
    return detail::make_message(ipc::message_type::hello, detail::encode(detail::hello_payload{role, "x"}));
  };
  const std::vector<hostile_subscriber_case> cases = {
      {"garbage bytes", [](ipc::channel& ch) {
         ASSERT_TRUE(mt::raw_send(ch.native(), std::vector<std::byte>(40, std::byte{0x7F}), {}));
       }, pub_kind::refused},
      {"hello with an fd", [&](ipc::channel& ch) {
         auto m = hello(ipc::subscriber_role::observer);
         m.fds.push_back(make_memfd("x"));
         ASSERT_TRUE(ch.send(m, 1s));
       }, pub_kind::refused},
      {"hello with an unknown role", [](ipc::channel& ch) {
         auto m = detail::make_message(ipc::message_type::hello, {std::byte{9}, std::byte{0}, std::byte{0}});
         ASSERT_TRUE(ch.send(m, 1s));
       }, pub_kind::refused},
      {"a frame instead of hello", [](ipc::channel& ch) {
         ASSERT_TRUE(ch.send(detail::make_message(ipc::message_type::frame, detail::encode_frame(1)), 1s));
       }, pub_kind::refused},
      {"says nothing", [](ipc::channel&) { std::this_thread::sleep_for(400ms); }, pub_kind::refused},
      {"a resource after joining", [&](ipc::channel& ch) {
         ASSERT_TRUE(ch.send(hello(ipc::subscriber_role::observer), 1s));
         for (;;) {  // read the state up to the welcome
           auto m = ch.receive(2s);
           ASSERT_TRUE(m);
           if (m->type == ipc::message_type::welcome) break;
         }
         auto bad = detail::make_message(ipc::message_type::resource, {std::byte{1}});
         ASSERT_TRUE(ch.send(bad, 1s));
       }, pub_kind::left},
  };
  std::size_t refused = 0;
  std::size_t left = 0;
  std::uint64_t frame = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto ch = ipc::channel::connect(p.path(), 1s);
    ASSERT_TRUE(ch);
    ASSERT_NO_FATAL_FAILURE(c.act(*ch));
    const std::size_t n = c.expected == pub_kind::refused ? ++refused : ++left;
    auto e = log.wait_for(c.expected, n, 3s);
    ASSERT_TRUE(e) << "no event for this case";
    EXPECT_FALSE(e->reason.empty());
    // The connection was closed: the raw peer sees EOF.
    bool closed = false;
    for (int i = 0; i < 20 && !closed; ++i) {
      auto m = ch->receive(1s);
      closed = !m && ch->peer_closed();
    }
    EXPECT_TRUE(closed);
    // The good subscriber still gets frames.
    ASSERT_TRUE(p.announce_frame(++frame));
    auto f = good->next_event(2s);
    ASSERT_TRUE(f) << f.error().message();
    EXPECT_EQ(f->frame, frame);
  }
  EXPECT_EQ(p.subscriber_count(), 1U);
}

// A hostile or broken publisher: a test listener answers the subscriber's hello with crafted
// messages; connect() (or next_event()) must give protocol_error, leak nothing and close.
struct hostile_publisher_case {
  const char* name;
  std::function<void(ipc::channel&)> act;
  bool after_welcome;  // the bad message comes after a valid welcome (next_event fails, not connect)
};

// A buffer's header: chunk_count chunks, new ones from first_new (a resource or a growth).
ipc::message header_message(const ipc::buffer_description& d, std::uint32_t first_new, bool resource = true) {
  detail::buffer_header h{d, static_cast<std::uint32_t>(d.chunks.size()), first_new};
  return detail::make_message(resource ? ipc::message_type::resource : ipc::message_type::growth, detail::encode(h, resource));
}

// Chunks [first, first + n) of `d` with `fds` memfds (n unless told otherwise).
ipc::message chunks_message(const ipc::buffer_description& d, std::size_t first, std::size_t n,
                            std::optional<std::size_t> fds = std::nullopt) {
  detail::chunk_batch b{static_cast<std::uint32_t>(first), {}};
  for (std::size_t i = first; i < first + n; ++i) b.chunks.push_back(d.chunks.at(i));
  auto m = detail::make_message(ipc::message_type::chunks, detail::encode(b));
  for (std::size_t i = 0; i < fds.value_or(n); ++i) m.fds.push_back(make_memfd("x"));
  return m;
}

ipc::message welcome_message(std::uint32_t resources, std::optional<std::uint64_t> frame = std::nullopt) {
  detail::welcome_payload w{"hostile", ipc::subscriber_role::observer, frame, resources};
  return detail::make_message(ipc::message_type::welcome, detail::encode(w));
}

// A chunks message for chunk 0 of `d` whose fd is `fd` (borrowed: the caller closes it).
ipc::message chunk_with_fd(const ipc::buffer_description& d, os::borrowed_fd fd) {
  auto m = chunks_message(d, 0, 1, 0);
  m.fds.push_back(os::unique_fd::from_native(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0)));
  return m;
}

std::vector<hostile_publisher_case> hostile_publishers() {
  auto send = [](ipc::channel& ch, const ipc::message& m) { ASSERT_TRUE(ch.send(m, 1s)); };
  auto whole = [=](ipc::channel& ch, const ipc::buffer_description& d) {
    send(ch, header_message(d, 0));
    for (std::size_t i = 0; i < d.chunks.size(); i += 16) send(ch, chunks_message(d, i, std::min<std::size_t>(16, d.chunks.size() - i)));
  };
  return {
      {"chunks with a gap", [=](ipc::channel& ch) {
         auto d = make_description("b", 2);
         d.chunks[1].offset += chunk_bytes;
         whole(ch, d);
       }, false},
      {"fewer fds than chunks", [=](ipc::channel& ch) {
         send(ch, header_message(make_description("b", 2), 0));
         send(ch, chunks_message(make_description("b", 2), 0, 2, 1));
       }, false},
      {"chunks past the count", [=](ipc::channel& ch) {
         send(ch, header_message(make_description("b", 1), 0));
         send(ch, chunks_message(make_description("b", 2), 0, 2));
       }, false},
      {"chunks out of order", [=](ipc::channel& ch) {
         send(ch, header_message(make_description("b", 2), 0));
         send(ch, chunks_message(make_description("b", 2), 1, 1));
       }, false},
      {"chunks without a header", [=](ipc::channel& ch) { send(ch, chunks_message(make_description("b", 1), 0, 1)); }, false},
      {"a header with an fd", [=](ipc::channel& ch) {
         auto m = header_message(make_description("b", 1), 0);
         m.fds.push_back(make_memfd("x"));
         send(ch, m);
       }, false},
      {"a directory as a chunk fd", [=](ipc::channel& ch) {
         send(ch, header_message(make_description("b", 1), 0));
         auto dir = os::unique_fd::from_native(::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
         ASSERT_TRUE(dir);
         send(ch, chunk_with_fd(make_description("b", 1), dir));
       }, false},
      {"a socket as a chunk fd", [=](ipc::channel& ch) {
         send(ch, header_message(make_description("b", 1), 0));
         auto other = ipc::channel::pair();
         ASSERT_TRUE(other);
         send(ch, chunk_with_fd(make_description("b", 1), other->first.native()));
       }, false},
      {"dev zero as a chunk fd", [=](ipc::channel& ch) {
         send(ch, header_message(make_description("b", 1), 0));
         auto zero = os::unique_fd::from_native(::open("/dev/zero", O_RDWR | O_CLOEXEC));
         ASSERT_TRUE(zero);
         send(ch, chunk_with_fd(make_description("b", 1), zero));
       }, false},
      {"a directory as a semaphore fd", [=](ipc::channel& ch) {
         auto m = detail::make_message(ipc::message_type::resource, detail::encode(ipc::semaphore_description{.name = "s"}));
         m.fds.push_back(os::unique_fd::from_native(::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC)));
         send(ch, m);
       }, false},
      {"a welcome before the buffer is complete", [=](ipc::channel& ch) {
         send(ch, header_message(make_description("b", 2), 0));
         send(ch, chunks_message(make_description("b", 2), 0, 1));
         send(ch, welcome_message(1));
       }, false},
      {"a welcome with the wrong count", [=](ipc::channel& ch) {
         whole(ch, make_description("b", 1));
         send(ch, welcome_message(2));
       }, false},
      {"an unknown resource kind", [=](ipc::channel& ch) {
         send(ch, detail::make_message(ipc::message_type::resource, {std::byte{7}}));
       }, false},
      {"a frame before the welcome", [=](ipc::channel& ch) {
         send(ch, detail::make_message(ipc::message_type::frame, detail::encode_frame(3)));
       }, false},
      {"the same name twice", [=](ipc::channel& ch) {
         whole(ch, make_description("b", 1));
         // The second header is the violation: the subscriber refuses and hangs up on it, so nothing
         // is sent after it (a chunks message could meet the closed socket: EPIPE, seen under TSan).
         send(ch, header_message(make_description("b", 1), 0));
       }, false},
      {"a semaphore without its fd", [=](ipc::channel& ch) {
         send(ch, detail::make_message(ipc::message_type::resource, detail::encode(ipc::semaphore_description{.name = "s"})));
       }, false},
      {"trailing bytes", [=](ipc::channel& ch) {
         auto m = header_message(make_description("b", 1), 0);
         m.payload.push_back(std::byte{0});
         send(ch, m);
       }, false},
      {"a frame going backwards", [=](ipc::channel& ch) {
         send(ch, welcome_message(0, 10));
         send(ch, detail::make_message(ipc::message_type::frame, detail::encode_frame(9)));
       }, true},
      {"growth of an unknown buffer", [=](ipc::channel& ch) {
         send(ch, welcome_message(0));
         send(ch, header_message(make_description("b", 1, 2), 0, false));
       }, true},
      {"growth whose new chunks overlap the kept ones", [=](ipc::channel& ch) {
         whole(ch, make_description("b", 2));
         send(ch, welcome_message(1));
         send(ch, header_message(make_description("b", 3, 2), 1, false));
       }, true},
      {"growth whose chunks leave a gap", [=](ipc::channel& ch) {
         whole(ch, make_description("b", 2));
         send(ch, welcome_message(1));
         auto d = make_description("b", 3, 2);
         d.chunks[2].offset += chunk_bytes;
         send(ch, header_message(d, 2, false));
         send(ch, chunks_message(d, 2, 1));
       }, true},
      {"a frame in the middle of a growth", [=](ipc::channel& ch) {
         whole(ch, make_description("b", 1));
         send(ch, welcome_message(1));
         send(ch, header_message(make_description("b", 3, 2), 1, false));
         send(ch, chunks_message(make_description("b", 3, 2), 1, 1));
         send(ch, detail::make_message(ipc::message_type::frame, detail::encode_frame(1)));
       }, true},
      {"growth with an old generation", [=](ipc::channel& ch) {
         whole(ch, make_description("b", 1, 5));
         send(ch, welcome_message(1));
         send(ch, header_message(make_description("b", 2, 5), 1, false));
       }, true},
      {"a hello from the publisher", [=](ipc::channel& ch) {
         send(ch, welcome_message(0));
         send(ch, detail::make_message(ipc::message_type::hello, detail::encode(detail::hello_payload{})));
       }, true},
  };
}

class ipc_hostile_publisher : public ::testing::TestWithParam<hostile_publisher_case> {};

TEST_P(ipc_hostile_publisher, is_refused_with_a_protocol_error) {
  const auto& c = GetParam();
  temp_dir dir;
  auto l = ipc::listener::listen({.path = dir.file("hostile.sock")});
  ASSERT_TRUE(l);
  auto pending = std::async(std::launch::async, [&] { return join(l->path()); });
  auto ch = l->accept(5s);
  ASSERT_TRUE(ch);
  auto hello = ch->receive(5s);
  ASSERT_TRUE(hello);
  EXPECT_EQ(hello->type, ipc::message_type::hello);
  ASSERT_NO_FATAL_FAILURE(c.act(*ch));
  auto s = pending.get();
  if (!c.after_welcome) {
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code(), errc::protocol_error) << s.error().message();
  } else {
    ASSERT_TRUE(s) << s.error().message();
    auto e = next_non_frame(*s, 5s);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code(), errc::protocol_error) << e.error().message();
    EXPECT_FALSE(s->connected());
  }
  // The subscriber closed the connection.
  bool closed = false;
  for (int i = 0; i < 20 && !closed; ++i) {
    auto m = ch->receive(1s);
    closed = !m && ch->peer_closed();
  }
  EXPECT_TRUE(closed);
}

INSTANTIATE_TEST_SUITE_P(cases, ipc_hostile_publisher, ::testing::ValuesIn(hostile_publishers()),
                         [](const auto& param_info) {
                           std::string n = param_info.param.name;
                           std::replace_if(n.begin(), n.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
                           return n;
                         });

// ---------------------------------------------------------------------------------- payloads ---

TEST(ipc_payload, every_truncation_and_extra_byte_of_a_buffer_header_and_chunks_is_refused) {
  const auto d = make_description("field", 3, 9);
  const detail::buffer_header h{d, 3, 0};
  const auto bytes = detail::encode(h, true);
  auto back = detail::decode_buffer_header(bytes, true, 0);
  ASSERT_TRUE(back) << back.error().message();
  auto without_chunks = d;
  without_chunks.chunks.clear();
  EXPECT_EQ(back->description, without_chunks);
  EXPECT_EQ(back->chunk_count, 3U);
  EXPECT_EQ(back->first_new_chunk, 0U);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto cut = detail::decode_buffer_header(std::span(bytes).first(n), true, 0);
    ASSERT_FALSE(cut) << n;
    EXPECT_EQ(cut.error().code(), errc::protocol_error);
  }
  auto longer = bytes;
  longer.push_back(std::byte{0});
  EXPECT_EQ(detail::decode_buffer_header(longer, true, 0).error().code(), errc::protocol_error);
  EXPECT_EQ(detail::decode_buffer_header(bytes, true, 1).error().code(), errc::protocol_error) << "a header carries no fds";
  EXPECT_EQ(detail::decode_buffer_header(detail::encode(detail::buffer_header{d, 3, 1}, true), true, 0).error().code(),
            errc::protocol_error)
      << "a new buffer's chunks start at 0";
  EXPECT_TRUE(detail::decode_buffer_header(detail::encode(detail::buffer_header{d, 3, 2}, false), false, 0));
  EXPECT_EQ(detail::decode_buffer_header(detail::encode(detail::buffer_header{d, 3, 4}, false), false, 0).error().code(),
            errc::protocol_error)
      << "first new chunk past the count";
  EXPECT_EQ(detail::decode_buffer_header(detail::encode(detail::buffer_header{d, 5000, 0}, true), true, 0).error().code(),
            errc::protocol_error)
      << "more than max_chunks";

  const detail::chunk_batch c{1, {d.chunks[1], d.chunks[2]}};
  const auto batch = detail::encode(c);
  auto got = detail::decode_chunk_batch(batch, 2);
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->first_chunk, 1U);
  EXPECT_EQ(got->chunks, c.chunks);
  for (std::size_t n = 0; n < batch.size(); ++n) EXPECT_FALSE(detail::decode_chunk_batch(std::span(batch).first(n), 2)) << n;
  EXPECT_EQ(detail::decode_chunk_batch(batch, 1).error().code(), errc::protocol_error) << "fd count mismatch";
  EXPECT_FALSE(detail::decode_chunk_batch(detail::encode(detail::chunk_batch{0, {}}), 0)) << "an empty batch";
  EXPECT_FALSE(detail::decode_chunk_batch(detail::encode(detail::chunk_batch{0, {{0, 0}}}), 1)) << "a chunk of size 0";
  EXPECT_FALSE(detail::decode_chunk_batch(detail::encode(detail::chunk_batch{2047, {{0, 1}, {1, 1}}}), 2)) << "past max_chunks";
  detail::chunk_batch many{0, {}};
  for (std::uint64_t i = 0; i < 17; ++i) many.chunks.push_back({i, 1});
  EXPECT_FALSE(detail::decode_chunk_batch(detail::encode(many), 17)) << "more than 16 chunks";
}

TEST(ipc_payload, printable_escapes_control_bytes_and_non_ascii) {
  EXPECT_EQ(detail::printable("plain name-1.v2"), "plain name-1.v2");
  EXPECT_EQ(detail::printable(std::string("a\x1b[2Jb\nc\0d", 10)), "a\\x1b[2Jb\\x0ac\\x00d");
  EXPECT_EQ(detail::printable("back\\slash\x7f\xc3\xa9"), "back\\x5cslash\\x7f\\xc3\\xa9");
}

TEST(ipc_payload, a_thousand_chunks_travel_in_messages_that_carry_only_their_own_chunks) {
  ipc::buffer_description d = make_description("big", 0);
  d.reserved_size = 2000 * chunk_bytes;
  for (std::size_t i = 0; i < 1000; ++i) d.chunks.push_back({i * chunk_bytes, chunk_bytes});
  d.size = 1000 * chunk_bytes;
  std::vector<detail::shared_fd> fds;
  for (std::size_t i = 0; i < 1000; ++i) fds.push_back(std::make_shared<const os::unique_fd>());
  const auto messages = detail::buffer_messages(ipc::message_type::resource, d, fds, 0);
  ASSERT_EQ(messages.size(), 1U + 63U);
  std::size_t bytes = 0;
  std::size_t chunks = 0;
  for (std::size_t i = 1; i < messages.size(); ++i) {
    EXPECT_EQ(messages[i]->type, ipc::message_type::chunks);
    EXPECT_LE(messages[i]->payload.size(), 8U + 16U * 16U);
    auto b = detail::decode_chunk_batch(messages[i]->payload, messages[i]->fds.size());
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ(b->first_chunk, chunks);
    chunks += b->chunks.size();
    bytes += messages[i]->payload.size();
  }
  EXPECT_EQ(chunks, 1000U);
  EXPECT_LT(bytes, 1000U * 16U + 63U * 8U + 1U) << "the chunk list is sent once";
  const auto growth = detail::buffer_messages(ipc::message_type::growth, d, fds, 990);
  ASSERT_EQ(growth.size(), 2U);
  auto h = detail::decode_buffer_header(growth[0]->payload, false, 0);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->first_new_chunk, 990U);
  EXPECT_EQ(growth[1]->fds.size(), 10U);
}

TEST(ipc_payload, hello_welcome_semaphore_frame_and_goodbye_round_trip) {
  auto h = detail::decode_hello(detail::encode(detail::hello_payload{ipc::subscriber_role::consumer, "viewer"}));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->role, ipc::subscriber_role::consumer);
  EXPECT_EQ(h->client_name, "viewer");
  auto w = detail::decode_welcome(detail::encode(detail::welcome_payload{"pub", ipc::subscriber_role::observer, 77, 4}));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->last_frame, 77U);
  EXPECT_EQ(w->resource_count, 4U);
  auto none = detail::decode_welcome(detail::encode(detail::welcome_payload{"pub", ipc::subscriber_role::observer, {}, 0}));
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->last_frame);
  ipc::semaphore_description sd{.name = "frames.consumed", .parameter = 3};
  sd.device.bytes[3] = 9;
  auto sem = detail::decode_semaphore(detail::encode(sd), 1);
  ASSERT_TRUE(sem);
  EXPECT_EQ(sem->name, sd.name);
  EXPECT_EQ(sem->device, sd.device);
  EXPECT_EQ(sem->parameter, 3U);
  EXPECT_EQ(detail::decode_semaphore(detail::encode(sd), 0).error().code(), errc::protocol_error);
  EXPECT_EQ(*detail::decode_frame(detail::encode_frame(0xFFFF'FFFF'0000'0001ULL)), 0xFFFF'FFFF'0000'0001ULL);
  EXPECT_EQ(*detail::decode_goodbye(detail::encode_goodbye("bye")), "bye");
  EXPECT_EQ(detail::decode_frame({}).error().code(), errc::protocol_error);
}

}  // namespace
