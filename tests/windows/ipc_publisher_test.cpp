// The Windows ipc tier's tests of the real ipc::publisher (under Wine): its thread, queues and
// limits over named pipes. Sections stand in for CUDA memory (as memfds do in the Linux ipc tier).
// - Two processes: this binary publishes (ipc::publisher) and starts itself as the subscriber
//   (ipc::subscriber); the buffer grows while the subscriber follows, frames are seen in order, the
//   data is checked through the sections the handles name, on both sides.
// - Hostile and stuck peers: a malformed hello, a connection that never says hello and a
//   subscriber that never reads neither block a producer call nor the good subscriber; each is
//   dropped or refused with its reason.
// - Calls that fail leave nothing behind. Every test ends with the handles it started with.
#include "ipc_windows_test.hpp"

#include "detail/payload.hpp"

#include <membridge/ipc/channel.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/ipc/subscriber.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace membridge::testing {

namespace {

using namespace std::chrono_literals;
namespace ipc = membridge::ipc;
using steady = std::chrono::steady_clock;

constexpr std::size_t chunk_size = 64 * 1024;
constexpr std::uint64_t frame_count = 5;
constexpr std::string_view child_marker = "seen by the subscriber process";

/// A section of chunk_size bytes holding chunk `c`'s pattern for `seed`.
os::unique_handle pattern_section(std::uint32_t seed, std::size_t c) {
  os::unique_handle section(make_section(chunk_size));
  if (!section.valid()) return section;
  auto* view = static_cast<std::uint8_t*>(::MapViewOfFile(section.get(), FILE_MAP_ALL_ACCESS, 0, 0, 0));
  if (view == nullptr) return os::unique_handle();
  for (std::size_t i = 0; i < chunk_size; ++i) view[i] = pattern_byte(seed, c, i);
  ::UnmapViewOfFile(view);
  return section;
}

/// A buffer of `chunks` section chunks, generation `generation`.
ipc::buffer_description buffer_of(std::size_t chunks, std::uint64_t generation) {
  ipc::buffer_description d;
  d.name = "particles";
  d.handles = ipc::handle_kind::opaque_win32;
  d.format = {"points:float4", 16};
  for (std::size_t c = 0; c < chunks; ++c) d.chunks.push_back({c * chunk_size, chunk_size});
  d.size = chunks * chunk_size;
  d.reserved_size = 4 * chunk_size;
  d.generation = generation;
  return d;
}

/// "" when chunk `c` of `b` holds the pattern; else what differs. Writes the marker when it does.
std::string check_and_mark(const ipc::received_buffer& b, std::size_t c, std::uint32_t seed) {
  auto* view = static_cast<std::uint8_t*>(::MapViewOfFile(b.fds[c].get(), FILE_MAP_ALL_ACCESS, 0, 0, 0));
  if (view == nullptr) return "MapViewOfFile failed: " + std::to_string(::GetLastError());
  std::string problem;
  for (std::size_t i = child_marker.size() + 1; i < b.description.chunks[c].size && problem.empty(); ++i)
    if (view[i] != pattern_byte(seed, c, i)) problem = "chunk " + std::to_string(c) + " differs at byte " + std::to_string(i);
  if (problem.empty()) {
    std::memcpy(view, child_marker.data(), child_marker.size());
    view[child_marker.size()] = static_cast<std::uint8_t>(c);
  }
  ::UnmapViewOfFile(view);
  return problem;
}

/// True when chunk `c` of `section` carries the subscriber's marker.
bool marked(const os::unique_handle& section, std::size_t c) {
  const auto* view = static_cast<const std::uint8_t*>(::MapViewOfFile(section.get(), FILE_MAP_READ, 0, 0, 0));
  if (view == nullptr) return false;
  const bool yes = std::string_view(reinterpret_cast<const char*>(view), child_marker.size()) == child_marker &&
                   view[child_marker.size()] == c;
  ::UnmapViewOfFile(view);
  return yes;
}

/// A raw client of `path`, retried while every instance is busy (the publisher's thread makes the
/// next instance when it accepted the last client); null after 5 s.
HANDLE raw_client_when_free(const std::string& path) {
  for (int i = 0; i < 1000; ++i) {
    if (HANDLE h = raw_client(path); h != nullptr) return h;
    (void)::WaitNamedPipeA(path.c_str(), 5);
  }
  return nullptr;
}

/// What a client that stopped reading does when it reads again: takes every message left in `pipe`
/// until the pipe breaks (or 2 s pass) and closes the handles the publisher duplicated into this
/// process for it (they are the client process's, whatever happened to the connection). Returns the
/// number of messages read.
int read_rest_and_close_handles(HANDLE pipe) {
  std::vector<std::byte> buffer(1U << 20U);
  int messages = 0;
  const os::unique_handle event(::CreateEventA(nullptr, TRUE, FALSE, nullptr));
  for (;;) {
    OVERLAPPED ov{};
    ov.hEvent = event.get();
    DWORD got = 0;
    BOOL ok = ::ReadFile(pipe, buffer.data(), static_cast<DWORD>(buffer.size()), nullptr, &ov);
    if (ok == 0 && ::GetLastError() == ERROR_IO_PENDING) {
      if (::WaitForSingleObject(event.get(), 2000) != WAIT_OBJECT_0) (void)::CancelIoEx(pipe, &ov);
      ok = TRUE;
    }
    if (ok == 0 || ::GetOverlappedResult(pipe, &ov, &got, TRUE) == 0) return messages;
    ++messages;
    auto split = ipc::split_handle_table(std::span<const std::byte>(buffer.data(), got));
    if (split)
      for (const std::uint64_t v : split->handle_values) ::CloseHandle(reinterpret_cast<HANDLE>(static_cast<std::uintptr_t>(v)));
  }
}

/// A manual-reset event (stands in for a semaphore's handle).
os::unique_handle new_event() { return os::unique_handle(::CreateEventA(nullptr, TRUE, FALSE, nullptr)); }

/// Waits up to `limit` for `done()`.
template <class F>
bool eventually(F done, std::chrono::milliseconds limit) {
  const auto until = steady::now() + limit;
  while (!done()) {
    if (steady::now() >= until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

/// The events a publisher reported, kept for the test to look at.
struct event_log {
  std::mutex mutex;
  std::vector<ipc::publisher_event> events;
  void add(const ipc::publisher_event& e) {
    std::lock_guard lock(mutex);
    events.push_back(e);
  }
  /// The reason of the first event of kind `what`, or nothing.
  std::optional<std::string> first(ipc::publisher_event::kind what, std::string_view reason_part = {}) {
    std::lock_guard lock(mutex);
    for (const auto& e : events)
      if (e.what == what && e.reason.find(reason_part) != std::string::npos) return e.reason;
    return std::nullopt;
  }
};

TEST(windows_ipc_publisher, a_subscriber_process_follows_growth_and_frames_over_a_named_pipe) {
  const std::uint32_t seed = ::GetTickCount() | 1U;
  const handle_snapshot handles_before = snapshot_handles();
  ASSERT_GT(handles_before.count(), 0);
  {
    auto log = std::make_shared<event_log>();
    auto pub = ipc::publisher::start({.listen = {.name = test_pipe_tag("publisher")},
                                      .publisher_name = "wine-publisher",
                                      .on_event = [log](const ipc::publisher_event& e) { log->add(e); }});
    ASSERT_TRUE(pub) << pub.error().message();
    std::vector<os::unique_handle> kept;  // the test's own handles to the sections, to read them back
    std::vector<os::unique_handle> first;
    for (std::size_t c = 0; c < 2; ++c) {
      kept.push_back(pattern_section(seed, c));
      ASSERT_TRUE(kept.back().valid());
      auto dup = kept.back().borrow().duplicate();
      ASSERT_TRUE(dup) << dup.error().message();
      first.push_back(std::move(*dup));
    }
    ASSERT_TRUE(pub->publish_buffer(buffer_of(2, 1), std::move(first)));

    const PROCESS_INFORMATION child = spawn_self("publisher-subscriber", {pub->path(), std::to_string(seed)});
    ASSERT_NE(child.hProcess, nullptr) << "CreateProcess failed: " << ::GetLastError();
    const os::unique_handle child_process(child.hProcess);
    ASSERT_TRUE(eventually([&] { return pub->subscriber_count() == 1; }, 20s)) << "the subscriber never joined";

    // It saw two chunks at join; now the buffer grows by one while it follows, then frames come.
    kept.push_back(pattern_section(seed, 2));
    ASSERT_TRUE(kept.back().valid());
    auto third = kept.back().borrow().duplicate();
    ASSERT_TRUE(third);
    std::vector<os::unique_handle> added;
    added.push_back(std::move(*third));
    ASSERT_TRUE(pub->update_buffer(buffer_of(3, 2), std::move(added)));
    for (std::uint64_t f = 1; f <= frame_count; ++f) ASSERT_TRUE(pub->announce_frame(f));
    const auto not_after = pub->announce_frame(frame_count);
    ASSERT_FALSE(not_after);
    EXPECT_EQ(not_after.error().code(), errc::invalid_argument);

    // The child marks every chunk once it saw the growth and every frame in order.
    ASSERT_TRUE(eventually([&] { return marked(kept[0], 0) && marked(kept[1], 1) && marked(kept[2], 2); }, 20s))
        << "the subscriber process never marked the three chunks";
    pub->stop();  // the child waits for the publisher's goodbye
    ASSERT_EQ(::WaitForSingleObject(child_process.get(), 30000), WAIT_OBJECT_0) << "the child did not exit";
    DWORD code = 99;
    ASSERT_NE(::GetExitCodeProcess(child_process.get(), &code), 0);
    ASSERT_EQ(code, 0U) << "the subscriber process failed (its stderr says why)";
    EXPECT_TRUE(log->first(ipc::publisher_event::kind::joined)) << "a joined event";
    EXPECT_FALSE(log->first(ipc::publisher_event::kind::refused)) << "nobody was refused";
  }
  EXPECT_TRUE(handles_changed_by(handles_before, 0)) << "every handle the test and the publisher made is closed";
}

TEST(windows_ipc_publisher, hostile_and_stuck_peers_never_block_the_producer_or_a_good_subscriber) {
  const handle_snapshot handles_before = snapshot_handles();
  ASSERT_GT(handles_before.count(), 0);
  {
    auto log = std::make_shared<event_log>();
    auto pub = ipc::publisher::start({.listen = {.name = test_pipe_tag("hostile"), .buffer_size = 4096},
                                      .publisher_name = "wine-publisher",
                                      .handshake_timeout = 300ms,
                                      .send_timeout = 300ms,
                                      .on_event = [log](const ipc::publisher_event& e) { log->add(e); }});
    ASSERT_TRUE(pub) << pub.error().message();
    const std::string path = pub->path();

    // A malformed hello (a header that claims more payload than came), a connection that never
    // says hello, and a subscriber that says hello and then never reads.
    const os::unique_handle malformed(raw_client_when_free(path));
    ASSERT_TRUE(malformed.valid());
    ipc::message_header lying;
    lying.type = ipc::message_type::hello;
    lying.payload_size = 4000;
    ASSERT_TRUE(raw_write(malformed.get(), raw_message(lying, std::vector<std::byte>(8), {})));
    const os::unique_handle silent(raw_client_when_free(path));
    ASSERT_TRUE(silent.valid());
    const os::unique_handle stuck(raw_client_when_free(path));
    ASSERT_TRUE(stuck.valid());
    ipc::message_header hello;
    hello.type = ipc::message_type::hello;
    const auto hello_payload = ipc::detail::encode(ipc::detail::hello_payload{ipc::subscriber_role::observer, "stuck"});
    hello.payload_size = static_cast<std::uint32_t>(hello_payload.size());
    ASSERT_TRUE(raw_write(stuck.get(), raw_message(hello, hello_payload, {})));
    auto good = ipc::subscriber::connect({.path = path, .client_name = "good", .timeout = 10s});
    ASSERT_TRUE(good) << good.error().message();
    ASSERT_TRUE(eventually([&] { return pub->subscriber_count() == 2; }, 10s)) << "good and stuck joined";

    // The producer's calls never wait for the stuck one, whose 4 KiB pipe fills at once.
    const os::unique_handle section(make_section(chunk_size));
    ASSERT_TRUE(section.valid());
    auto dup = section.borrow().duplicate();
    ASSERT_TRUE(dup);
    std::vector<os::unique_handle> chunk;
    chunk.push_back(std::move(*dup));
    auto slowest = steady::duration::zero();
    const auto timed = [&](auto call) {
      const auto t0 = steady::now();
      const bool ok = static_cast<bool>(call());
      slowest = std::max(slowest, steady::now() - t0);
      return ok;
    };
    ASSERT_TRUE(timed([&] { return pub->publish_buffer(buffer_of(1, 1), std::move(chunk)); }));
    constexpr std::uint64_t frames = 200;
    std::uint64_t f = 1;
    for (; f <= frames; ++f) ASSERT_TRUE(timed([&] { return pub->announce_frame(f); }));
    EXPECT_LT(slowest, 100ms) << "a producer call waited for a subscriber";

    // The good subscriber sees the buffer and every frame, in order, while the stuck one is dropped.
    std::uint64_t expected = 1;
    bool buffer_seen = false;
    while (expected <= frames) {
      auto e = good->next_event(10s);
      ASSERT_TRUE(e) << e.error().message();
      if (e->what == ipc::subscriber_event::kind::buffer_added) {
        buffer_seen = true;
        continue;
      }
      ASSERT_EQ(e->what, ipc::subscriber_event::kind::frame);
      ASSERT_EQ(e->frame, expected) << "frames in order, none missed";
      ++expected;
    }
    EXPECT_TRUE(buffer_seen);
    ASSERT_TRUE(eventually([&] { return log->first(ipc::publisher_event::kind::left, "read nothing").has_value(); }, 5s))
        << "the stuck subscriber is dropped for reading nothing";
    EXPECT_EQ(pub->subscriber_count(), 1U);
    ASSERT_TRUE(eventually([&] { return log->first(ipc::publisher_event::kind::refused, "no hello").has_value(); }, 5s))
        << "the silent connection is refused after handshake_timeout";
    EXPECT_TRUE(log->first(ipc::publisher_event::kind::refused, "handshake")) << "the malformed hello is refused";
    // The publisher still works for the good one.
    ASSERT_TRUE(pub->announce_frame(frames + 1));
    auto last = good->next_event(10s);
    ASSERT_TRUE(last) << last.error().message();
    EXPECT_EQ(last->frame, frames + 1);
    pub->stop();
    auto bye = good->next_event(10s);
    ASSERT_TRUE(bye) << bye.error().message();
    EXPECT_EQ(bye->what, ipc::subscriber_event::kind::disconnected);
    EXPECT_NE(bye->reason.find("stopped"), std::string::npos) << bye->reason;
    // The stuck peer reads at last: its state (with the handle duplicated into it) and the frames
    // that fit its pipe, then the pipe is broken (the publisher dropped it).
    EXPECT_GT(read_rest_and_close_handles(stuck.get()), 1);
  }
  EXPECT_TRUE(handles_changed_by(handles_before, 0)) << "every handle is closed, the stuck peer's included";
}

TEST(windows_ipc_publisher, calls_that_fail_leave_no_handle_behind) {
  // Counted around the publisher's whole life: its mutex (a winpthreads mutex) makes its wait event
  // on its first contention with the publisher's thread, when scheduling decides, and keeps it until
  // the publisher goes. While it runs, the handles each failed call was given are checked closed
  // right after the call (nothing else opens a handle meanwhile: no client connects).
  const handle_snapshot handles_before = snapshot_handles();
  ASSERT_GT(handles_before.count(), 0);
  {
    auto pub = ipc::publisher::start({.listen = {.name = test_pipe_tag("failures")}});
    ASSERT_TRUE(pub) << pub.error().message();
    std::vector<HANDLE> given;  // the handles of the last call
    const auto taken = [&given](std::size_t n) {
      given.clear();
      std::vector<os::unique_handle> out;
      for (std::size_t i = 0; i < n; ++i) {
        out.emplace_back(make_section(4096));
        given.push_back(out.back().get());
      }
      return out;
    };
    const auto none_open = [&given] { return std::none_of(given.begin(), given.end(), is_open); };
    auto d = buffer_of(2, 1);
    const auto wrong_count = pub->publish_buffer(d, taken(1));
    ASSERT_FALSE(wrong_count);
    EXPECT_EQ(wrong_count.error().code(), errc::invalid_argument);
    EXPECT_TRUE(none_open()) << "a wrong handle count";
    std::vector<os::unique_handle> with_empty = taken(1);
    with_empty.emplace_back();
    EXPECT_FALSE(pub->publish_buffer(d, std::move(with_empty)));
    EXPECT_TRUE(none_open()) << "an empty handle among the chunks'";
    ASSERT_TRUE(pub->publish_buffer(d, taken(2)));
    const std::vector<HANDLE> published = given;
    EXPECT_FALSE(pub->publish_buffer(d, taken(2))) << "a name is published once";
    EXPECT_TRUE(none_open()) << "a name published twice";
    EXPECT_FALSE(pub->update_buffer(buffer_of(3, 1), taken(1))) << "the generation must grow";
    EXPECT_TRUE(none_open()) << "an old generation";
    EXPECT_FALSE(pub->update_buffer(buffer_of(3, 2), taken(2))) << "one handle per new chunk";
    EXPECT_TRUE(none_open()) << "a wrong number of new chunks";
    ASSERT_TRUE(pub->update_buffer(buffer_of(1, 3), {}));
    EXPECT_TRUE(is_open(published[0])) << "the chunk kept after the shrink stays the publisher's";
    EXPECT_FALSE(is_open(published[1])) << "a shrink closes the dropped chunk's handle";
    ipc::semaphore_description s;
    s.name = "frames.produced";
    s.handles = ipc::handle_kind::opaque_win32;
    EXPECT_FALSE(pub->publish_semaphore(s, os::unique_handle())) << "an empty handle";
    os::unique_handle first = new_event();
    const HANDLE kept = first.get();
    ASSERT_TRUE(pub->publish_semaphore(s, std::move(first)));
    os::unique_handle second = new_event();
    given = {second.get()};
    const auto taken_name = pub->publish_semaphore(s, std::move(second));
    ASSERT_FALSE(taken_name);
    EXPECT_NE(taken_name.error().message().find("already published"), std::string::npos);
    EXPECT_TRUE(none_open()) << "a semaphore name published twice";
    EXPECT_TRUE(is_open(kept)) << "the published semaphore's event stays the publisher's";
    const auto long_name = ipc::publisher::start({.listen = {.name = test_pipe_tag("long")},
                                                  .publisher_name = std::string(ipc::max_name_size + 1, 'x')});
    ASSERT_FALSE(long_name);
    EXPECT_EQ(long_name.error().code(), errc::invalid_argument);
    const auto bad_name = ipc::publisher::start({.listen = {.name = "no/slashes"}});
    ASSERT_FALSE(bad_name);
    EXPECT_EQ(bad_name.error().code(), errc::invalid_argument);
  }
  EXPECT_TRUE(handles_changed_by(handles_before, 0))
      << "every handle is closed: the failed calls' at once, what the publisher kept when it stopped";
}

}  // namespace

int publisher_subscriber_role(const std::string& pipe_name, std::uint32_t seed) {
  auto fail = [](int code, const std::string& what) {
    std::fprintf(stderr, "publisher-subscriber child: %s\n", what.c_str());
    return code;
  };
  const handle_snapshot handles_before = snapshot_handles();
  {
    auto sub = ipc::subscriber::connect({.path = pipe_name, .client_name = "wine-child", .timeout = 10s});
    if (!sub) return fail(10, "connect: " + sub.error().message());
    if (sub->publisher_name() != "wine-publisher") return fail(11, "publisher name " + sub->publisher_name());
    const ipc::received_buffer* b = sub->buffer("particles");
    if (b == nullptr || b->fds.size() != 2 || b->description.generation != 1) return fail(12, "not the first buffer");
    for (std::size_t c = 0; c < 2; ++c)
      if (auto problem = check_and_mark(*b, c, seed); !problem.empty()) return fail(13, problem);
    auto grew = sub->next_event(10s);
    if (!grew) return fail(14, "no growth: " + grew.error().message());
    if (grew->what != ipc::subscriber_event::kind::buffer_changed || grew->generation != 2)
      return fail(15, "the first event is not the growth to generation 2");
    b = sub->buffer("particles");
    if (b == nullptr || b->fds.size() != 3 || b->description.size != 3 * chunk_size) return fail(16, "not three chunks");
    for (std::uint64_t f = 1; f <= frame_count; ++f) {
      auto e = sub->next_event(10s);
      if (!e || e->what != ipc::subscriber_event::kind::frame || e->frame != f)
        return fail(17, "frame " + std::to_string(f) + " not next");
    }
    // Only now the new chunk is marked: the publisher waits for all three marks.
    for (std::size_t c = 2; c < 3; ++c)
      if (auto problem = check_and_mark(*b, c, seed); !problem.empty()) return fail(18, problem);
    auto bye = sub->next_event(10s);
    if (!bye || bye->what != ipc::subscriber_event::kind::disconnected || bye->reason.find("stopped") == std::string::npos)
      return fail(19, "no goodbye from the publisher");
  }
  if (const ::testing::AssertionResult same = handles_changed_by(handles_before, 0); !same)
    return fail(25, same.message());
  return 0;
}

}  // namespace membridge::testing
