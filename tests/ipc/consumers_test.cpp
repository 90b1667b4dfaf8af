// Several consumers of one publisher (wire version 3): each consumer gets resources of its own
// (publisher_options::on_consumer_join) before its welcome, observers get none, a consumer killed
// with SIGKILL is reported as `left` while the other goes on, a late joiner starts after the last
// announced frame, and a version 2 peer is refused. memfds stand in for semaphore fds (the
// callback writes who it made them for into them).
#include "child_process.hpp"
#include "detail/payload.hpp"
#include "ipc_test.hpp"

#include <membridge/ipc/channel.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/ipc/wire.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace {

using namespace membridge::testing::ipc_tier;
namespace detail = membridge::ipc::detail;
using event_kind = ipc::subscriber_event::kind;

constexpr const char* own_name = "frames.consumed";

/// What the callback writes into the memfd it makes for a consumer.
std::string own_content(std::uint64_t id, std::optional<std::uint64_t> frame, bool again) {
  return "consumer " + std::to_string(id) + " at " + (frame ? std::to_string(*frame) : std::string("none")) +
         (again ? " again" : "");
}

/// Records the callback's calls (under the log's mutex) and the publisher's events.
struct recorder : mt::publisher_event_log {
  std::vector<ipc::consumer_join> joins;

  std::function<membridge::result<ipc::consumer_resources>(const ipc::consumer_join&)> callback() {
    return [this](const ipc::consumer_join& j) -> membridge::result<ipc::consumer_resources> {
      {
        std::lock_guard lock(mutex);
        joins.push_back(j);
      }
      ipc::consumer_resources out;
      out.semaphores.push_back({ipc::semaphore_description{.name = own_name, .parameter = 2},
                                mt::make_memfd(own_content(j.subscriber, j.last_frame, j.again))});
      return out;
    };
  }
  std::size_t join_count() {
    std::lock_guard lock(mutex);
    return joins.size();
  }
};

/// Every test's socket directory and recorder; start() makes the publisher of the test.
class ipc_consumers : public ::testing::Test {
 protected:
  ipc::publisher start(std::size_t max_consumers);

  mt::temp_dir dir_;
  recorder r_;
};

ipc::publisher ipc_consumers::start(std::size_t max_consumers) {
  ipc::publisher_options o;
  o.listen.path = dir_.file("pub.sock");
  o.publisher_name = "consumers test";
  o.max_consumers = max_consumers;
  o.on_event = r_.sink();
  o.on_consumer_join = r_.callback();
  auto p = ipc::publisher::start(o);
  EXPECT_TRUE(p) << p.error().message();
  if (!p) return {};
  // A shared semaphore every subscriber gets.
  EXPECT_TRUE(p->publish_semaphore({.name = "frames.produced", .parameter = 2}, mt::make_memfd("produced")));
  return std::move(*p);
}

membridge::result<ipc::subscriber> join(const std::string& path, ipc::subscriber_role role, std::string name = "consumer") {
  return ipc::subscriber::connect({.path = path, .role = role, .client_name = std::move(name), .timeout = 5s});
}

ino_t inode_of(os::borrowed_fd fd) {
  struct stat st {};
  return ::fstat(fd.get(), &st) == 0 ? st.st_ino : 0;
}

// ----------------------------------------------------------------------------- child roles ---

// Joins args[0] as consumer, tells the parent its frame_at_join ("ok <frame>") and reads events
// until killed. Exit codes: 10 connect, 11 role or semaphore missing, 12 report.
int consumer_child(const std::vector<std::string>& args) {
  auto s = join(args.at(0), ipc::subscriber_role::consumer, "child consumer");
  if (!s) return 10;
  if (s->role() != ipc::subscriber_role::consumer || s->semaphore(own_name) == nullptr) return 11;
  const std::string report = "ok " + std::to_string(s->frame_at_join().value_or(0));
  if (!mt::send_message(mt::child_socket(), std::as_bytes(std::span(report.data(), report.size())), {})) return 12;
  for (;;) (void)s->next_event(1s);
}
const mt::child_role consumer_role("ipc_consumers_child", &consumer_child);

// -------------------------------------------------------------------------------------- tests ---

TEST_F(ipc_consumers, each_consumer_gets_its_own_semaphore_made_once_with_its_join_frame_and_observers_get_none) {
  auto p = start(2);
  ASSERT_TRUE(p.valid());
  ASSERT_TRUE(p.announce_frame(4));

  auto a = join(p.path(), ipc::subscriber_role::consumer, "a");
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->role(), ipc::subscriber_role::consumer);
  EXPECT_EQ(a->frame_at_join(), std::optional<std::uint64_t>(4));
  const ipc::received_semaphore* a_own = a->semaphore(own_name);
  ASSERT_NE(a_own, nullptr);
  ASSERT_NE(a->semaphore("frames.produced"), nullptr);
  ASSERT_TRUE(r_.wait_for(pub_kind::joined, 1));
  const std::uint64_t a_id = r_.wait_for(pub_kind::joined, 1)->subscriber;
  EXPECT_EQ(mt::read_all(a_own->fd), own_content(a_id, 4, false));

  ASSERT_TRUE(p.announce_frame(7));
  auto b = join(p.path(), ipc::subscriber_role::consumer, "b");
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_EQ(b->role(), ipc::subscriber_role::consumer);
  EXPECT_EQ(b->frame_at_join(), std::optional<std::uint64_t>(7));
  const ipc::received_semaphore* b_own = b->semaphore(own_name);
  ASSERT_NE(b_own, nullptr);
  const auto b_joined = r_.wait_for(pub_kind::joined, 2);
  ASSERT_TRUE(b_joined);
  EXPECT_EQ(mt::read_all(b_own->fd), own_content(b_joined->subscriber, 7, false));
  EXPECT_NE(inode_of(a_own->fd), 0U);
  EXPECT_NE(inode_of(a_own->fd), inode_of(b_own->fd)) << "two consumers share one semaphore";
  // Both consumers see the shared semaphore as the same object.
  EXPECT_EQ(inode_of(a->semaphore("frames.produced")->fd), inode_of(b->semaphore("frames.produced")->fd));
  EXPECT_EQ(p.consumer_count(), 2U);

  // A third consumer is past max_consumers: an observer, with no semaphore of its own; so is an observer.
  auto c = join(p.path(), ipc::subscriber_role::consumer, "c");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->role(), ipc::subscriber_role::observer);
  EXPECT_EQ(c->semaphore(own_name), nullptr);
  EXPECT_NE(c->semaphore("frames.produced"), nullptr);
  auto d = join(p.path(), ipc::subscriber_role::observer, "d");
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->semaphore(own_name), nullptr);

  ASSERT_TRUE(r_.wait_for(pub_kind::joined, 4));
  std::lock_guard lock(r_.mutex);
  ASSERT_EQ(r_.joins.size(), 2U) << "the callback runs once per consumer, never for observers";
  EXPECT_EQ(r_.joins[0].subscriber, a_id);
  EXPECT_EQ(r_.joins[0].last_frame, std::optional<std::uint64_t>(4));
  EXPECT_FALSE(r_.joins[0].again);
  EXPECT_EQ(r_.joins[1].last_frame, std::optional<std::uint64_t>(7));
}

TEST_F(ipc_consumers, a_late_joiner_starts_at_the_frame_after_the_last_announced_one) {
  auto p = start(4);
  ASSERT_TRUE(p.valid());
  for (std::uint64_t n = 0; n < 10; ++n) ASSERT_TRUE(p.announce_frame(n));
  auto late = join(p.path(), ipc::subscriber_role::consumer, "late");
  ASSERT_TRUE(late) << late.error().message();
  EXPECT_EQ(late->frame_at_join(), std::optional<std::uint64_t>(9));
  EXPECT_EQ(mt::read_all(late->semaphore(own_name)->fd).substr(0, 9), "consumer ");
  EXPECT_NE(mt::read_all(late->semaphore(own_name)->fd).find(" at 9"), std::string::npos);
  ASSERT_TRUE(p.announce_frame(10));
  auto e = late->next_event(5s);
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(e->what, event_kind::frame);
  EXPECT_EQ(e->frame, 10U) << "the late joiner's first frame is the one after its join frame";
}

TEST_F(ipc_consumers, a_frame_announced_while_the_resources_are_made_makes_them_again_for_the_final_frame) {
  std::promise<void> entered;
  std::promise<void> announced;
  auto announced_future = announced.get_future().share();
  std::atomic<int> calls{0};
  ipc::publisher_options o;
  o.listen.path = dir_.file("pub.sock");
  o.max_consumers = 1;
  o.on_event = r_.sink();
  o.on_consumer_join = [&](const ipc::consumer_join& j) -> membridge::result<ipc::consumer_resources> {
    if (calls.fetch_add(1) == 0) {
      // The first call: let the test announce a frame meanwhile.
      entered.set_value();
      if (announced_future.wait_for(5s) != std::future_status::ready)
        return membridge::error(errc::timeout, "test callback", "the test announced nothing");
    }
    return r_.callback()(j);
  };
  auto p = ipc::publisher::start(o);
  ASSERT_TRUE(p) << p.error().message();
  ASSERT_TRUE(p->announce_frame(1));
  auto joined = std::async(std::launch::async, [&] { return join(p->path(), ipc::subscriber_role::consumer); });
  ASSERT_EQ(entered.get_future().wait_for(5s), std::future_status::ready);
  ASSERT_TRUE(p->announce_frame(2));
  announced.set_value();
  auto s = joined.get();
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->frame_at_join(), std::optional<std::uint64_t>(2));
  ASSERT_NE(s->semaphore(own_name), nullptr);
  const auto id = r_.wait_for(pub_kind::joined)->subscriber;
  EXPECT_EQ(mt::read_all(s->semaphore(own_name)->fd), own_content(id, 2, true))
      << "the joiner got the first call's resources, made for a frame it never consumes";
  std::lock_guard lock(r_.mutex);
  ASSERT_EQ(r_.joins.size(), 2U);
  EXPECT_EQ(r_.joins[0].last_frame, std::optional<std::uint64_t>(1));
  EXPECT_TRUE(r_.joins[1].again);
  EXPECT_EQ(r_.joins[1].last_frame, std::optional<std::uint64_t>(2));
}

TEST_F(ipc_consumers, a_failing_callback_refuses_the_joiner_with_its_message_and_others_still_join) {
  ipc::publisher_options o;
  o.listen.path = dir_.file("pub.sock");
  o.max_consumers = 2;
  o.on_event = r_.sink();
  o.on_consumer_join = [](const ipc::consumer_join&) -> membridge::result<ipc::consumer_resources> {
    return membridge::error(errc::out_of_memory, "test callback", "no semaphore left for you");
  };
  auto p = ipc::publisher::start(o);
  ASSERT_TRUE(p) << p.error().message();
  auto refused = join(p->path(), ipc::subscriber_role::consumer);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), errc::protocol_error);
  EXPECT_NE(refused.error().message().find("no semaphore left for you"), std::string::npos) << refused.error().message();
  const auto e = r_.wait_for(pub_kind::refused);
  ASSERT_TRUE(e);
  EXPECT_NE(e->reason.find("no semaphore left for you"), std::string::npos) << e->reason;
  EXPECT_EQ(p->consumer_count(), 0U);
  auto observer = join(p->path(), ipc::subscriber_role::observer);
  ASSERT_TRUE(observer) << observer.error().message();
  EXPECT_EQ(observer->role(), ipc::subscriber_role::observer);
}

TEST_F(ipc_consumers, a_consumer_killed_with_sigkill_leaves_and_the_other_consumer_keeps_receiving_frames) {
  auto p = start(2);
  ASSERT_TRUE(p.valid());
  ASSERT_TRUE(p.announce_frame(0));
  auto a = join(p.path(), ipc::subscriber_role::consumer, "a");
  ASSERT_TRUE(a) << a.error().message();
  ASSERT_TRUE(r_.wait_for(pub_kind::joined, 1));

  auto child = mt::spawn_child("ipc_consumers_child", {p.path()});
  ASSERT_TRUE(child) << child.error().message();
  auto report = mt::receive_message(child->socket(), 64, 10s);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(report->payload.data()), report->payload.size()), "ok 0");
  const auto child_joined = r_.wait_for(pub_kind::joined, 2);
  ASSERT_TRUE(child_joined);
  EXPECT_EQ(child_joined->role, ipc::subscriber_role::consumer);
  EXPECT_EQ(p.consumer_count(), 2U);

  ASSERT_TRUE(p.announce_frame(1));
  ASSERT_EQ(::kill(child->pid(), SIGKILL), 0);
  auto status = child->wait(10s);
  ASSERT_TRUE(status) << status.error().message();
  EXPECT_EQ(*status, 128 + SIGKILL);
  const auto left = r_.wait_for(pub_kind::left);
  ASSERT_TRUE(left) << "no left event for the killed consumer";
  EXPECT_EQ(left->subscriber, child_joined->subscriber);
  EXPECT_EQ(left->role, ipc::subscriber_role::consumer);
  EXPECT_EQ(p.consumer_count(), 1U);

  for (std::uint64_t n = 2; n < 6; ++n) ASSERT_TRUE(p.announce_frame(n));
  std::vector<std::uint64_t> seen;
  while (seen.size() < 5) {
    auto e = a->next_event(5s);
    ASSERT_TRUE(e) << e.error().message();
    if (e->what == event_kind::frame) seen.push_back(e->frame);
  }
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{1, 2, 3, 4, 5})) << "the remaining consumer missed frames";
  // The killed consumer's place is free again.
  auto again = join(p.path(), ipc::subscriber_role::consumer, "again");
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->role(), ipc::subscriber_role::consumer);
  EXPECT_EQ(again->frame_at_join(), std::optional<std::uint64_t>(5));
  EXPECT_EQ(r_.join_count(), 3U);
}

TEST_F(ipc_consumers, a_version_2_peer_is_refused) {
  auto p = start(2);
  ASSERT_TRUE(p.valid());
  auto ch = ipc::channel::connect(p.path(), 5s);
  ASSERT_TRUE(ch) << ch.error().message();
  const auto payload = detail::encode(detail::hello_payload{.role = ipc::subscriber_role::consumer, .client_name = "old"});
  ipc::message_header h;
  h.version = 2;
  h.type = ipc::message_type::hello;
  h.payload_size = static_cast<std::uint32_t>(payload.size());
  const auto header = ipc::encode_header(h);
  std::vector<std::byte> bytes(header.begin(), header.end());
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  ASSERT_TRUE(mt::raw_send(ch->native(), bytes, {}));
  const auto e = r_.wait_for(pub_kind::refused);
  ASSERT_TRUE(e) << "a version 2 hello was not refused";
  EXPECT_NE(e->reason.find("version 2"), std::string::npos) << e->reason;
  EXPECT_EQ(r_.join_count(), 0U);
  EXPECT_EQ(p.subscriber_count(), 0U);
  static_assert(ipc::wire_version == 3);
}

}  // namespace
