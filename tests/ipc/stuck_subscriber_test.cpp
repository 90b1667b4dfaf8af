// The producer never waits for a subscriber, and every hostile connection is bounded: subscribers
// and joiners that never read are dropped while the producer's calls stay short and a good
// subscriber gets every frame in order; hundreds of idle connections are dropped by the handshake
// timeout and their refusals summed up in the log; a second publisher on a live path is refused;
// client names with control bytes are escaped in the log; a goodbye then a close is an orderly leave.
// The bounds are loose (a loaded 2-core CI machine); membridge_bench_ipc_stuck measures the goal.
#include "child_process.hpp"
#include "fd_leak_listener.hpp"
#include "ipc_test.hpp"
#include "log_capture.hpp"
#include "stuck_scenario.hpp"

#include <membridge/ipc/publisher.hpp>
#include <membridge/ipc/subscriber.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <thread>
#include <vector>

namespace {

using namespace membridge::testing::ipc_tier;

double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

struct events {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<ipc::publisher_event> all;
  std::function<void(const ipc::publisher_event&)> sink() {
    return [this](const ipc::publisher_event& e) {
      std::lock_guard lock(mutex);
      all.push_back(e);
      changed.notify_all();
    };
  }
  std::size_t count(pub_kind what) {
    std::lock_guard lock(mutex);
    return static_cast<std::size_t>(std::count_if(all.begin(), all.end(), [&](const auto& e) { return e.what == what; }));
  }
  bool wait_for(pub_kind what, std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, timeout, [&] {
      return static_cast<std::size_t>(std::count_if(all.begin(), all.end(), [&](const auto& e) { return e.what == what; })) >= n;
    });
  }
};

// ------------------------------------------------------------------------ out of fds (EMFILE) ---

std::mutex child_log_mutex;
std::vector<std::string> child_log;

void child_log_sink(membridge::log_level, std::string_view message, void*) noexcept {
  std::lock_guard lock(child_log_mutex);
  child_log.emplace_back(message);
}

// Publishes at args[0] with a fd limit that lets it accept only two connections, says "ready", then
// on the parent's word reports how many log lines mention the failing accept and the recovery as
// "<failures logged> <recoveries logged>". Exit codes: 10 start, 11 rlimit, 12 talk.
int emfile_child(const std::vector<std::string>& args) {
  membridge::set_log_level(membridge::log_level::info);
  membridge::set_log_sink(&child_log_sink);
  ipc::publisher_options o;
  o.listen.path = args.at(0);
  o.handshake_timeout = 5000ms;
  auto p = ipc::publisher::start(o);
  if (!p) return 10;
  // The limit caps fd numbers: leave exactly two free numbers below it (two accepted sockets).
  const auto open = mt::open_fds();
  int limit = 0;
  for (int fd = 0, free_seen = 0; limit == 0; ++fd)
    if (open.count(fd) == 0 && ++free_seen == 3) limit = fd;
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 11;
  r.rlim_cur = static_cast<rlim_t>(limit);
  if (::setrlimit(RLIMIT_NOFILE, &r) != 0) return 11;
  const std::string ready = "ready";
  if (!mt::send_message(mt::child_socket(), std::as_bytes(std::span(ready)))) return 12;
  if (!mt::receive_message(mt::child_socket(), 64, 60s)) return 12;
  std::size_t failures = 0;
  std::size_t recoveries = 0;
  {
    std::lock_guard lock(child_log_mutex);
    for (const auto& l : child_log) {
      if (l.find("accept4") != std::string::npos && l.find("EMFILE") != std::string::npos) ++failures;
      if (l.find("accepting connections again") != std::string::npos) ++recoveries;
    }
  }
  const std::string report = std::to_string(failures) + " " + std::to_string(recoveries);
  if (!mt::send_message(mt::child_socket(), std::as_bytes(std::span(report)))) return 12;
  p->stop();
  membridge::set_log_sink(nullptr);
  return 0;
}
const mt::child_role emfile_role("ipc_stuck_emfile", &emfile_child);

// utime + stime of `pid` in clock ticks (/proc/<pid>/stat fields 14 and 15).
long cpu_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  long utime = 0;
  long stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

TEST(ipc_stuck, a_publisher_out_of_fds_backs_off_logs_once_and_recovers) {
  mt::temp_dir dir;
  const std::string path = dir.file("pub.sock");
  auto child = mt::spawn_child("ipc_stuck_emfile", {path});
  ASSERT_TRUE(child) << child.error().message();
  auto ready = mt::receive_message(child->socket(), 64, 20s);
  ASSERT_TRUE(ready) << ready.error().message();
  // Two connections take its last fds; the others wait in the backlog while accept4 fails.
  std::vector<ipc::channel> idle;
  for (int i = 0; i < 6; ++i) {
    auto ch = ipc::channel::connect(path, 2s);
    ASSERT_TRUE(ch) << ch.error().message();
    idle.push_back(std::move(*ch));
  }
  std::this_thread::sleep_for(200ms);
  const long before = cpu_ticks(child->pid());
  std::this_thread::sleep_for(1s);
  const long used = cpu_ticks(child->pid()) - before;
  const long per_second = ::sysconf(_SC_CLK_TCK);
  EXPECT_GE(before, 0);
  EXPECT_LT(used, per_second / 4) << "the publisher spun on a failing accept4 (" << used << " ticks in 1 s)";
  // Free its fds: the idle connections go, then a real subscriber gets in.
  idle.clear();
  std::optional<ipc::subscriber> s;
  for (int i = 0; i < 50 && !s; ++i) {
    auto joined = ipc::subscriber::connect({.path = path, .client_name = "after EMFILE", .timeout = 2s});
    if (joined) s = std::move(*joined);
    else std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(s) << "no subscriber could join after the fds were freed";
  s.reset();
  const std::string go = "report";
  ASSERT_TRUE(mt::send_message(child->socket(), std::as_bytes(std::span(go))));
  auto report = mt::receive_message(child->socket(), 64, 20s);
  ASSERT_TRUE(report) << report.error().message();
  const std::string text(reinterpret_cast<const char*>(report->payload.data()), report->payload.size());
  EXPECT_EQ(text, "1 1") << "the failing accept logged once, and the recovery once";
  auto status = child->wait(10s);
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, 0) << "10 start, 11 rlimit, 12 talk";
}

TEST(ipc_stuck, subscribers_and_joiners_that_never_read_are_dropped_and_stall_nobody) {
  mt::temp_dir dir;
  membridge::stuck::options o;
  o.socket_path = dir.file("pub.sock");
  o.chunks = 1000;
  o.send_timeout = 200ms;
  const auto r = membridge::stuck::run(o);
  for (const auto& e : r.errors) ADD_FAILURE() << e;
  EXPECT_EQ(r.dropped, 6U) << "three stuck subscribers and three stuck joiners";
  EXPECT_GT(r.all_dropped_after_ms, 150.0) << "not before send_timeout";
  EXPECT_LT(r.all_dropped_after_ms, 5000.0);
  EXPECT_TRUE(r.frames_in_order) << r.frames_seen << " of " << r.frames_announced;
  EXPECT_EQ(r.frames_seen, r.frames_announced);
  EXPECT_GT(r.frames_announced, 100U);
  EXPECT_GE(r.growths, 2U);
  EXPECT_TRUE(r.good_contents_ok);
  EXPECT_EQ(r.good_chunks, o.chunks + r.growths);
  EXPECT_EQ(r.subscribers_at_end, 1U);
  // Before the fix one stuck subscriber blocked update_buffer for send_timeout and the good
  // subscriber saw no frame meanwhile; now nothing waits on a socket (bound loose for CI).
  EXPECT_LT(max_of(r.frame_call_ms), 100.0);
  EXPECT_LT(max_of(r.growth_call_ms), 100.0);
  EXPECT_LT(max_of(r.frame_gap_ms), 100.0);
  EXPECT_LT(max_of(r.latency_ms), 100.0);
}

TEST(ipc_stuck, hundreds_of_idle_connections_are_bounded_dropped_and_summed_up_in_the_log) {
  mt::temp_dir dir;
  events ev;
  std::vector<std::string> log_lines;
  {
    mt::log_capture capture;
    ipc::publisher_options o;
    o.listen.path = dir.file("pub.sock");
    o.listen.backlog = 512;
    o.handshake_timeout = 2000ms;  // all 300 connect before the first times out
    o.on_event = ev.sink();
    auto p = ipc::publisher::start(o);
    ASSERT_TRUE(p) << p.error().message();
    std::vector<ipc::channel> idle;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 300; ++i) {
      auto ch = ipc::channel::connect(p->path(), 2s);
      ASSERT_TRUE(ch) << i << ": " << ch.error().message();
      idle.push_back(std::move(*ch));
    }
    // A good subscriber still joins during the flood and gets frames.
    auto good = ipc::subscriber::connect({.path = p->path(), .client_name = "good", .timeout = 5s});
    ASSERT_TRUE(good) << good.error().message();
    ASSERT_TRUE(p->announce_frame(1));
    auto f = good->next_event(5s);
    ASSERT_TRUE(f) << f.error().message();
    EXPECT_EQ(f->frame, 1U);
    ASSERT_TRUE(ev.wait_for(pub_kind::refused, 300, 10s)) << ev.count(pub_kind::refused) << " refused";
    // Every idle connection was closed by the publisher: each sees the end.
    for (auto& ch : idle) {
      auto m = ch.receive(2s);
      EXPECT_FALSE(m);
      EXPECT_TRUE(ch.peer_closed());
    }
    idle.clear();
    // The refusals after the first (at the 257th connection) are summed up when the 5 s interval ends.
    std::this_thread::sleep_until(t0 + 5700ms);
    EXPECT_EQ(p->subscriber_count(), 1U);
    p->stop();  // joins the publisher's thread: the captured lines are complete
    log_lines = capture.lines();
  }
  std::size_t refusal_lines = 0;
  std::size_t summaries = 0;
  for (const auto& l : log_lines) {
    if (l.find("refused a connection") != std::string::npos) ++refusal_lines;
    if (l.find("more connections in the last 5 s") != std::string::npos) {
      ++summaries;
      EXPECT_NE(l.find("refused 299 more"), std::string::npos) << l;
    }
  }
  EXPECT_EQ(refusal_lines, 1U) << "one line for the first refusal";
  EXPECT_EQ(summaries, 1U) << "and one summary for the other 299";
  std::size_t too_many = 0;
  std::size_t timed_out = 0;
  for (const auto& e : ev.all) {
    if (e.what != pub_kind::refused) continue;
    if (e.reason.find("too many connections") != std::string::npos) ++too_many;
    if (e.reason.find("no hello within 2000 ms") != std::string::npos) ++timed_out;
  }
  EXPECT_EQ(too_many + timed_out, 300U);
  EXPECT_EQ(too_many, 301U - 256U) << "at most 256 connections wait for their hello (300 idle + the good one)";
}

TEST(ipc_stuck, a_second_publisher_on_a_live_path_is_refused_and_the_first_goes_on) {
  mt::temp_dir dir;
  ipc::publisher_options o;
  o.listen.path = dir.file("pub.sock");
  auto first = ipc::publisher::start(o);
  ASSERT_TRUE(first) << first.error().message();
  auto second = ipc::publisher::start(o);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code(), errc::os_error);
  EXPECT_EQ(second.error().native_code(), EADDRINUSE);
  EXPECT_NE(second.error().message().find("another process listens"), std::string::npos) << second.error().message();
  auto s = ipc::subscriber::connect({.path = first->path(), .timeout = 5s});
  ASSERT_TRUE(s) << s.error().message();
  ASSERT_TRUE(first->announce_frame(3));
  auto f = s->next_event(5s);
  ASSERT_TRUE(f) << f.error().message();
  EXPECT_EQ(f->frame, 3U);
}

TEST(ipc_stuck, a_client_name_with_control_bytes_is_escaped_in_the_log) {
  mt::temp_dir dir;
  events ev;
  const std::string evil = std::string("evil\x1b[2J\n\x07name\\", 15);
  std::vector<std::string> log_lines;
  const auto level = membridge::get_log_level();
  membridge::set_log_level(membridge::log_level::info);  // joins and leaves are info lines
  {
    mt::log_capture capture;
    ipc::publisher_options o;
    o.listen.path = dir.file("pub.sock");
    o.on_event = ev.sink();
    auto p = ipc::publisher::start(o);
    ASSERT_TRUE(p);
    {
      auto s = ipc::subscriber::connect({.path = p->path(), .client_name = evil, .timeout = 5s});
      ASSERT_TRUE(s) << s.error().message();
    }  // says goodbye
    ASSERT_TRUE(ev.wait_for(pub_kind::left, 1, 5s));
    p->stop();
    log_lines = capture.lines();
  }
  membridge::set_log_level(level);
  std::size_t mentions = 0;
  for (const auto& l : log_lines) {
    EXPECT_EQ(l.find('\x1b'), std::string::npos) << "a raw escape byte reached the log";
    EXPECT_EQ(l.find('\n'), std::string::npos);
    EXPECT_EQ(l.find('\x07'), std::string::npos);
    if (l.find("evil\\x1b[2J\\x0a\\x07name\\x5c") != std::string::npos) ++mentions;
  }
  EXPECT_EQ(mentions, 2U) << "joined and left, escaped";
  std::lock_guard lock(ev.mutex);
  ASSERT_FALSE(ev.all.empty());
  EXPECT_EQ(ev.all.front().client_name, evil) << "the event keeps the bytes as given";
}

TEST(ipc_stuck, a_goodbye_then_a_close_is_always_an_orderly_leave) {
  mt::temp_dir dir;
  events ev;
  ipc::publisher_options o;
  o.listen.path = dir.file("pub.sock");
  o.on_event = ev.sink();
  auto p = ipc::publisher::start(o);
  ASSERT_TRUE(p);
  std::atomic<bool> stop{false};
  std::uint64_t frame = 0;
  std::thread producer([&] {
    while (!stop.load()) {
      (void)p->announce_frame(++frame);
      std::this_thread::sleep_for(100us);
    }
  });
  constexpr int rounds = 40;
  for (int i = 0; i < rounds; ++i) {
    auto s = ipc::subscriber::connect({.path = p->path(), .client_name = "leaver", .timeout = 5s});
    ASSERT_TRUE(s) << s.error().message();
    std::this_thread::sleep_for(2ms);  // frames pile up unread, then goodbye + close
  }
  ASSERT_TRUE(ev.wait_for(pub_kind::left, rounds, 10s));
  stop.store(true);
  producer.join();
  std::lock_guard lock(ev.mutex);
  for (const auto& e : ev.all) {
    if (e.what != pub_kind::left) continue;
    EXPECT_EQ(e.reason.rfind("goodbye: ", 0), 0U) << e.reason;
    EXPECT_EQ(e.reason.find("ECONNRESET"), std::string::npos) << e.reason;
  }
}

}  // namespace
