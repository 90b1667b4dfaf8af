// bench/ipc_stuck/stuck_scenario.hpp: a publisher of memfd-backed chunks that announces a frame every
// `frame_period` and grows its buffer every `growth_period`, with subscribers that never read: some
// joined and then stopped reading, others said hello and never read their (large) current state.
// One well-behaved subscriber (a thread) records when each frame arrives. Shared by
// membridge_bench_ipc_stuck (the goal, with the defaults) and the ipc tier's test (a looser bound).
// CPU only: no GPU, memfds stand in for exported GPU memory.
#pragma once

#include <membridge/ipc/channel.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/ipc/subscriber.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace membridge::stuck {

struct options {
  std::string socket_path;                          ///< Where the publisher listens.
  std::size_t chunks = 1000;                        ///< Chunks of the state the joiners never read.
  int stuck_subscribers = 3;                        ///< Joined, then never read again.
  int stuck_joiners = 3;                            ///< Said hello and never read their state.
  std::chrono::milliseconds send_timeout{1000};     ///< The publisher's option.
  std::chrono::microseconds frame_period{1000};     ///< One frame announced per period.
  std::chrono::milliseconds growth_period{100};     ///< One chunk added per period.
  std::chrono::milliseconds max_run{15000};         ///< Give up after this long.
  std::chrono::milliseconds after_drops{200};       ///< Keep going this long after the last drop.
};

struct result {
  std::vector<double> frame_call_ms;    ///< announce_frame durations.
  std::vector<double> growth_call_ms;   ///< update_buffer durations.
  std::vector<double> frame_gap_ms;     ///< Between frames arriving at the good subscriber.
  std::vector<double> announce_gap_ms;  ///< Between the producer's announce_frame calls (its own pacing).
  std::vector<double> latency_ms;       ///< announce_frame returned -> the frame arrived at the good subscriber.
  std::uint64_t frames_announced = 0;
  std::uint64_t frames_seen = 0;        ///< By the good subscriber.
  bool frames_in_order = true;          ///< Every announced frame, each once, in order.
  std::size_t growths = 0;
  std::size_t dropped = 0;              ///< `left` events for subscribers other than the good one.
  double all_dropped_after_ms = -1;     ///< From the first stuck joiner's hello to the last drop.
  std::size_t good_chunks = 0;          ///< Chunks the good subscriber has at the end.
  bool good_contents_ok = false;        ///< Its chunk fds hold what the publisher wrote.
  std::size_t subscribers_at_end = 0;
  std::vector<std::string> errors;      ///< Anything that went wrong (empty: the run is valid).
};

inline std::string chunk_text(std::size_t i) { return "stuck-scenario chunk " + std::to_string(i); }

inline os::unique_fd chunk_memfd(std::size_t i) {
  auto fd = os::unique_fd::from_native(::memfd_create("membridge-stuck", MFD_CLOEXEC));
  const std::string text = chunk_text(i);
  if (fd && ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) fd.reset();
  return fd;
}

inline ipc::buffer_description describe(std::size_t chunks, std::uint64_t generation) {
  constexpr std::uint64_t chunk_bytes = 2ULL << 20U;
  ipc::buffer_description d;
  d.name = "field";
  d.format = {"bytes", 1};
  d.reserved_size = ipc::max_chunks * chunk_bytes;
  d.generation = generation;
  for (std::size_t i = 0; i < chunks; ++i) d.chunks.push_back({i * chunk_bytes, chunk_bytes});
  d.size = chunks * chunk_bytes;
  return d;
}

/// The fds this run needs at most; raises the soft RLIMIT_NOFILE to it (or to the hard limit).
inline void raise_fd_limit(std::size_t needed) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  const rlim_t want = std::min<rlim_t>(r.rlim_max, static_cast<rlim_t>(needed));
  if (r.rlim_cur < want) {
    r.rlim_cur = want;
    (void)::setrlimit(RLIMIT_NOFILE, &r);
  }
}

inline double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

inline result run(const options& o) {
  using clock = std::chrono::steady_clock;
  using namespace std::chrono_literals;
  result out;
  const auto fail = [&](std::string what) {
    out.errors.push_back(std::move(what));
    return out;
  };
  raise_fd_limit(4 * o.chunks + 4096);

  std::mutex events_mutex;
  std::vector<ipc::publisher_event> events;
  ipc::publisher_options po;
  po.listen.path = o.socket_path;
  po.publisher_name = "stuck scenario";
  po.send_timeout = o.send_timeout;
  po.on_event = [&](const ipc::publisher_event& e) {
    std::lock_guard lock(events_mutex);
    events.push_back(e);
  };
  auto pub = ipc::publisher::start(po);
  if (!pub) return fail("publisher::start: " + pub.error().message());
  std::vector<os::unique_fd> first;
  first.push_back(chunk_memfd(0));
  if (!first[0]) return fail("memfd_create failed");
  if (auto r = pub->publish_buffer(describe(1, 1), std::move(first)); !r) return fail("publish_buffer: " + r.error().message());

  // The good subscriber, on its own thread.
  auto good_sub = ipc::subscriber::connect({.path = pub->path(), .client_name = "good", .timeout = 5s});
  if (!good_sub) return fail("the good subscriber could not connect: " + good_sub.error().message());
  const std::uint64_t good_id = 1;  // the publisher numbers subscribers from 1 in join order
  std::atomic<bool> stop_reading{false};
  std::vector<std::pair<std::uint64_t, clock::time_point>> seen;
  std::string reader_error;               // read after the join
  std::atomic<bool> reader_failed{false};
  std::atomic<std::uint64_t> last_seen{0};
  std::thread reader([&] {
    while (!stop_reading.load()) {
      auto e = good_sub->next_event(50ms);
      if (!e) {
        if (e.error().code() == errc::timeout) continue;
        reader_error = "the good subscriber: " + e.error().message();
        reader_failed.store(true);
        return;
      }
      if (e->what == ipc::subscriber_event::kind::frame) {
        seen.emplace_back(e->frame, clock::now());
        last_seen.store(e->frame);
      }
      if (e->what == ipc::subscriber_event::kind::disconnected) {
        reader_error = "the good subscriber was disconnected: " + e->reason;
        reader_failed.store(true);
        return;
      }
    }
  });

  // Subscribers that join and then never read again.
  std::vector<ipc::subscriber> stuck;
  for (int i = 0; i < o.stuck_subscribers; ++i) {
    auto s = ipc::subscriber::connect({.path = pub->path(), .client_name = "stuck " + std::to_string(i), .timeout = 5s});
    if (!s) return fail("a stuck subscriber could not connect: " + s.error().message());
    stuck.push_back(std::move(*s));
  }
  // The state grows to `chunks` chunks: every subscriber gets them, only the good one reads them.
  std::vector<os::unique_fd> more;
  for (std::size_t i = 1; i < o.chunks; ++i) more.push_back(chunk_memfd(i));
  std::uint64_t generation = 2;
  std::size_t chunks = o.chunks;
  if (auto r = pub->update_buffer(describe(chunks, generation), std::move(more)); !r)
    return fail("update_buffer to " + std::to_string(chunks) + " chunks: " + r.error().message());

  // Joiners that say hello and never read their current state (the whole buffer).
  std::vector<ipc::channel> joiners;
  ipc::message hello;
  hello.type = ipc::message_type::hello;
  hello.payload = {std::byte{1}, std::byte{0}, std::byte{0}};  // observer, empty name
  const auto joined_at = clock::now();
  for (int i = 0; i < o.stuck_joiners; ++i) {
    auto ch = ipc::channel::connect(pub->path(), 1s);
    if (!ch) return fail("a stuck joiner could not connect: " + ch.error().message());
    if (auto r = ch->send(hello, 1s); !r) return fail("a stuck joiner's hello: " + r.error().message());
    joiners.push_back(std::move(*ch));
  }

  const std::size_t to_drop = static_cast<std::size_t>(o.stuck_subscribers + o.stuck_joiners);
  const auto start = clock::now();
  auto next_frame = start;
  auto next_growth = start + o.growth_period;
  std::optional<clock::time_point> all_dropped;
  std::vector<clock::time_point> announced;
  for (std::uint64_t frame = 1;; ++frame) {
    const auto t0 = clock::now();
    auto r = pub->announce_frame(frame);
    announced.push_back(clock::now());
    out.frame_call_ms.push_back(ms_between(t0, announced.back()));
    if (!r) return fail("announce_frame: " + r.error().message());
    out.frames_announced = frame;
    if (clock::now() >= next_growth && chunks < ipc::max_chunks) {
      std::vector<os::unique_fd> one;
      one.push_back(chunk_memfd(chunks));
      ++chunks;
      const auto g0 = clock::now();
      auto g = pub->update_buffer(describe(chunks, ++generation), std::move(one));
      out.growth_call_ms.push_back(ms_between(g0, clock::now()));
      if (!g) return fail("update_buffer: " + g.error().message());
      ++out.growths;
      next_growth += o.growth_period;
    }
    {
      std::lock_guard lock(events_mutex);
      out.dropped = static_cast<std::size_t>(std::count_if(events.begin(), events.end(), [&](const auto& e) {
        return e.what == ipc::publisher_event::kind::left && e.subscriber != good_id;
      }));
    }
    const auto now = clock::now();
    if (!all_dropped && out.dropped >= to_drop) all_dropped = now;
    if (all_dropped && now - *all_dropped >= o.after_drops) break;
    if (now - start >= o.max_run) break;
    next_frame += o.frame_period;
    std::this_thread::sleep_until(next_frame);
  }
  if (all_dropped) out.all_dropped_after_ms = ms_between(joined_at, *all_dropped);
  // The good subscriber gets the last frame.
  const auto wait_until = clock::now() + 5s;
  for (;;) {
    std::this_thread::sleep_for(1ms);
    if (clock::now() > wait_until || reader_failed.load() || last_seen.load() == out.frames_announced) break;
  }
  stop_reading.store(true);
  reader.join();
  out.subscribers_at_end = pub->subscriber_count();
  if (!reader_error.empty()) out.errors.push_back(reader_error);

  out.frames_seen = seen.size();
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (seen[i].first != i + 1) out.frames_in_order = false;
    if (i > 0) out.frame_gap_ms.push_back(ms_between(seen[i - 1].second, seen[i].second));
    if (seen[i].first >= 1 && seen[i].first <= announced.size())
      out.latency_ms.push_back(ms_between(announced[seen[i].first - 1], seen[i].second));
  }
  for (std::size_t i = 1; i < announced.size(); ++i) out.announce_gap_ms.push_back(ms_between(announced[i - 1], announced[i]));
  if (seen.size() != out.frames_announced) out.frames_in_order = false;
  if (const auto* b = good_sub->buffer("field")) {
    out.good_chunks = b->fds.size();
    out.good_contents_ok = b->fds.size() == chunks;
    for (std::size_t i = 0; i < b->fds.size() && out.good_contents_ok; i += std::max<std::size_t>(1, b->fds.size() / 50)) {
      std::string text(64, '\0');
      const ssize_t n = ::pread(b->fds[i].get(), text.data(), text.size(), 0);
      text.resize(n > 0 ? static_cast<std::size_t>(n) : 0U);
      if (text != chunk_text(i)) out.good_contents_ok = false;
    }
  }
  joiners.clear();
  stuck.clear();
  pub->stop();
  return out;
}

}  // namespace membridge::stuck
