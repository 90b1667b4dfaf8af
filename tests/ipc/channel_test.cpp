// ipc::channel and ipc::listener: messages with fds between processes, every malformed datagram
// refused without leaking an fd, timeouts, a peer that goes away, and peer credentials checked for
// real (a child that drops to uid 65534 when the tests run as root).
#include "child_process.hpp"
#include "fd_leak_listener.hpp"
#include "ipc_test.hpp"

#include <membridge/ipc/channel.hpp>
#include <membridge/ipc/wire.hpp>

#include <gtest/gtest.h>

#include <algorithm>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <grp.h>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace membridge::testing::ipc_tier;
using mt::raw_send;
using clock_type = std::chrono::steady_clock;

constexpr std::uint32_t nobody = 65534;

// ------------------------------------------------------------------------------------ helpers ---

/// Waits for `child` and checks its exit status (the child roles below say what each code means).
void expect_exit(mt::child_process& child, int expected, std::string_view meaning = {}) {
  auto status = child.wait(10s);
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, expected) << meaning;
}

/// Sends the goodbye that ends a child role's wait.
void send_goodbye(ipc::channel& ch) {
  ipc::message bye;
  bye.type = ipc::message_type::goodbye;
  ASSERT_TRUE(ch.send(bye, 10s));
}

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

std::string string_of(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

/// Header bytes for `h` followed by `payload_bytes` bytes of payload.
std::vector<std::byte> datagram(const ipc::message_header& h, std::size_t payload_bytes) {
  const auto head = ipc::encode_header(h);
  // Sized first, then the header copied in (constructing from the array and resizing trips a GCC 12
  // -Warray-bounds false positive at -O3).
  std::vector<std::byte> out(ipc::header_size + payload_bytes, std::byte{0x5A});
  std::copy(head.begin(), head.end(), out.begin());
  return out;
}

// ----------------------------------------------------------------------------- child roles ---

/// Connects to args[0], sends a resource message with a memfd holding "child data", then waits
/// for the parent's goodbye.
int connect_send_child(const std::vector<std::string>& args) {
  if (args.size() != 1) return 10;
  auto ch = ipc::channel::connect(args[0], 10s);
  if (!ch) return 11;
  ipc::message m;
  m.type = ipc::message_type::resource;
  m.payload = bytes_of("from child");
  m.fds.push_back(make_memfd("child data"));
  if (!ch->send(m, 10s)) return 12;
  auto bye = ch->receive(10s);
  if (!bye || bye->type != ipc::message_type::goodbye) return 13;
  return 0;
}
const mt::child_role connect_send_role("ipc_connect_send", &connect_send_child);

/// Connects to args[0], receives a message whose payload must equal its fd's contents, and answers
/// with a frame message "ok" or "bad", after writing "child was here" into the received memfd.
int connect_receive_child(const std::vector<std::string>& args) {
  if (args.size() != 1) return 10;
  auto ch = ipc::channel::connect(args[0], 10s);
  if (!ch) return 11;
  auto in = ch->receive(10s);
  if (!in) return 12;
  bool good = in->type == ipc::message_type::resource && in->fds.size() == 1 &&
              read_all(in->fds[0]) == string_of(in->payload);
  if (good) {
    const std::string note = "child was here";
    good = ::pwrite(in->fds[0].get(), note.data(), note.size(), 0) == static_cast<ssize_t>(note.size());
  }
  ipc::message out;
  out.type = ipc::message_type::frame;
  out.payload = bytes_of(good ? "ok" : "bad");
  if (!ch->send(out, 10s)) return 13;
  auto bye = ch->receive(10s);  // keep the connection until the parent has read the answer
  return bye ? 0 : 14;
}
const mt::child_role connect_receive_role("ipc_connect_receive", &connect_receive_child);

/// Drops to uid/gid args[1] (from root), connects to args[0], sends hello and waits for welcome.
/// Exit: 0 welcomed; 20 connect refused with EACCES; 21 other connect error; 30 the listener closed
/// the connection (refused); 31 other receive error; 32 other send error; 40 could not drop privileges.
int connect_as_child(const std::vector<std::string>& args) {
  if (args.size() != 2) return 10;
  const auto id = static_cast<uid_t>(std::stoul(args[1]));
  if (::setgroups(0, nullptr) != 0 || ::setgid(id) != 0 || ::setuid(id) != 0) return 40;
  if (::getuid() != id || ::geteuid() != id) return 40;
  auto ch = ipc::channel::connect(args[0], 10s);
  if (!ch) return ch.error().native_code() == EACCES ? 20 : 21;
  ipc::message hello;
  hello.type = ipc::message_type::hello;
  // The listener may refuse us before or after the hello goes out: either end reports the close.
  if (auto sent = ch->send(hello, 10s); !sent)
    return sent.error().code() == errc::protocol_error && ch->peer_closed() ? 30 : 32;
  auto answer = ch->receive(10s);
  if (answer) return answer->type == ipc::message_type::welcome ? 0 : 31;
  if (answer.error().code() == errc::protocol_error && ch->peer_closed()) return 30;
  return 31;
}
const mt::child_role connect_as_role("ipc_connect_as", &connect_as_child);

/// Connects to args[0] and exits at once.
int connect_and_exit_child(const std::vector<std::string>& args) {
  if (args.size() != 1) return 10;
  return ipc::channel::connect(args[0], 10s) ? 0 : 11;
}
const mt::child_role connect_and_exit_role("ipc_connect_and_exit", &connect_and_exit_child);

// -------------------------------------------------------------------------- socketpair tests ---

TEST(ipc_channel, a_message_with_payload_and_three_memfds_round_trips) {
  auto p = ipc::channel::pair();
  ASSERT_TRUE(p) << p.error().message();
  auto& [a, b] = *p;
  EXPECT_EQ(a.peer().uid, static_cast<std::uint32_t>(::geteuid()));
  EXPECT_EQ(a.peer().pid, ::getpid());

  ipc::message m;
  m.type = ipc::message_type::resource;
  for (int i = 0; i < 1000; ++i) m.payload.push_back(static_cast<std::byte>((i * 7 + 3) & 0xFF));
  const std::array<std::string, 3> contents{"first chunk", "second chunk: longer", "third"};
  for (const auto& c : contents) m.fds.push_back(make_memfd(c));
  ASSERT_TRUE(a.send(m, 1s));

  auto got = b.receive(1s);
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->type, ipc::message_type::resource);
  EXPECT_EQ(got->payload, m.payload);
  ASSERT_EQ(got->fds.size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NE(got->fds[i].get(), m.fds[i].get());
    EXPECT_EQ(read_all(got->fds[i]), contents[i]);
    auto cloexec = os::borrowed_fd(got->fds[i]).is_close_on_exec();
    ASSERT_TRUE(cloexec);
    EXPECT_TRUE(*cloexec);
  }
  // Same open file: a write through the sender's fd shows through the receiver's.
  ASSERT_EQ(::pwrite(m.fds[0].get(), "FIRST", 5, 0), 5);
  EXPECT_EQ(read_all(got->fds[0]), "FIRST chunk");

  // An empty message both ways, too.
  ipc::message empty;
  empty.type = ipc::message_type::goodbye;
  ASSERT_TRUE(b.send(empty, 1s));
  auto e = a.receive(1s);
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(e->type, ipc::message_type::goodbye);
  EXPECT_TRUE(e->payload.empty());
  EXPECT_TRUE(e->fds.empty());
}

TEST(ipc_channel, the_largest_message_passes_and_an_invalid_one_is_not_sent) {
  auto p = ipc::channel::pair();
  ASSERT_TRUE(p);
  auto& [a, b] = *p;
  ipc::message big;
  big.type = ipc::message_type::growth;
  big.payload.assign(ipc::max_payload_size, std::byte{0xA5});
  for (std::size_t i = 0; i < ipc::max_fds_per_message; ++i) big.fds.push_back(make_memfd(std::to_string(i)));
  ASSERT_TRUE(a.send(big, 1s));
  auto got = b.receive(1s);
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->payload, big.payload);
  ASSERT_EQ(got->fds.size(), ipc::max_fds_per_message);
  EXPECT_EQ(read_all(got->fds[15]), "15");

  big.fds.push_back(make_memfd("17th"));
  auto r = a.send(big, 1s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::invalid_argument);
  big.fds.pop_back();
  big.payload.push_back(std::byte{1});
  r = a.send(big, 1s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::invalid_argument);
  EXPECT_TRUE(a.valid());
  auto none = b.receive(10ms);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::timeout);
}

TEST(ipc_channel, receive_times_out_quickly_and_stays_usable) {
  auto p = ipc::channel::pair();
  ASSERT_TRUE(p);
  auto& [a, b] = *p;
  const auto start = clock_type::now();
  auto r = b.receive(50ms);
  const auto took = clock_type::now() - start;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::timeout);
  EXPECT_GE(took, 45ms);
  EXPECT_LT(took, 1s);
  EXPECT_TRUE(b.valid());
  ipc::message m;
  m.type = ipc::message_type::frame;
  ASSERT_TRUE(a.send(m, 1s));
  EXPECT_TRUE(b.receive(1s));
}

// receive(timeout, spin): a message sent during the spin arrives; with none, the whole timeout
// still applies after the spin; a close during the spin is reported as a close.
TEST(ipc_channel, receive_with_a_spin_gets_a_message_times_out_and_notices_a_close) {
  auto p = ipc::channel::pair();
  ASSERT_TRUE(p);
  auto& [a, b] = *p;
  std::thread sender([&a] {
    std::this_thread::sleep_for(2ms);
    ipc::message m;
    m.type = ipc::message_type::frame;
    m.payload = {std::byte{7}};
    (void)a.send(m, 1s);
  });
  auto got = b.receive(5s, 100ms);
  sender.join();
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->type, ipc::message_type::frame);
  ASSERT_EQ(got->payload.size(), 1U);
  EXPECT_EQ(got->payload[0], std::byte{7});

  const auto start = clock_type::now();
  auto none = b.receive(60ms, 20ms);
  const auto took = clock_type::now() - start;
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::timeout);
  EXPECT_GE(took, 55ms);
  EXPECT_LT(took, 1s);
  EXPECT_TRUE(b.valid());

  a = ipc::channel();  // closes a
  auto closed = b.receive(5s, 50ms);
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().code(), errc::protocol_error);
  EXPECT_TRUE(b.peer_closed());
}

TEST(ipc_channel, a_peer_that_closes_is_noticed_at_once) {
  auto p = ipc::channel::pair();
  ASSERT_TRUE(p);
  auto& [a, b] = *p;
  ipc::message last;
  last.type = ipc::message_type::goodbye;
  ASSERT_TRUE(b.send(last, 1s));
  b = ipc::channel();  // closes b

  // What was sent before the close still arrives, then the close is reported.
  auto first = a.receive(10s);
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->type, ipc::message_type::goodbye);
  const auto start = clock_type::now();
  auto r = a.receive(10s);
  EXPECT_LT(clock_type::now() - start, 1s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::protocol_error);
  EXPECT_TRUE(a.peer_closed());
  EXPECT_FALSE(a.valid());
  auto again = a.receive(10ms);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), errc::invalid_argument);
}

TEST(ipc_channel, a_peer_that_closes_with_messages_unread_still_delivers_its_last_message) {
  // b leaves messages (one with an fd) unread, says goodbye and closes: a gets the goodbye, then EOF,
  // never ECONNRESET in its place.
  auto p = ipc::channel::pair();
  ASSERT_TRUE(p);
  auto& [a, b] = *p;
  ipc::message unread;
  unread.type = ipc::message_type::frame;
  ASSERT_TRUE(a.send(unread, 1s));
  unread.fds.push_back(make_memfd("never read"));
  ASSERT_TRUE(a.send(unread, 1s));
  ipc::message bye;
  bye.type = ipc::message_type::goodbye;
  bye.payload = bytes_of("bye");
  ASSERT_TRUE(b.send(bye, 1s));
  b.close();
  auto got = a.receive(1s);
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->type, ipc::message_type::goodbye);
  EXPECT_EQ(string_of(got->payload), "bye");
  auto end = a.receive(1s);
  ASSERT_FALSE(end);
  EXPECT_EQ(end.error().code(), errc::protocol_error);
  EXPECT_TRUE(a.peer_closed());
}

TEST(ipc_channel, a_peer_that_dies_with_messages_unread_still_delivers_what_it_sent) {
  // A raw socket closed without draining (what a crash does) makes the kernel report ECONNRESET
  // first; the channel reads on and still delivers the message sent before, then the close.
  std::array<int, 2> sv{};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv.data()), 0);
  auto raw = os::unique_fd::from_native(sv[1]);
  auto a = ipc::channel::from_native(os::unique_fd::from_native(sv[0]));
  ASSERT_TRUE(a) << a.error().message();
  ipc::message unread;
  unread.type = ipc::message_type::frame;
  ASSERT_TRUE(a->send(unread, 1s));
  ipc::message_header h;
  h.type = ipc::message_type::goodbye;
  ASSERT_TRUE(raw_send(raw, datagram(h, 0), {}));
  raw.reset();
  auto got = a->receive(1s);
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->type, ipc::message_type::goodbye);
  auto end = a->receive(1s);
  ASSERT_FALSE(end);
  EXPECT_EQ(end.error().code(), errc::protocol_error);
  EXPECT_TRUE(a->peer_closed());
}

TEST(ipc_channel, a_receive_already_waiting_wakes_when_the_peer_closes) {
  auto p = ipc::channel::pair();
  ASSERT_TRUE(p);
  auto& [a, b] = *p;
  clock_type::time_point closed_at{};
  std::thread closer([&] {
    std::this_thread::sleep_for(100ms);
    closed_at = clock_type::now();
    b.close();
  });
  auto r = a.receive(10s);
  const auto woke_at = clock_type::now();
  closer.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::protocol_error);
  EXPECT_TRUE(a.peer_closed());
  EXPECT_LT(woke_at - closed_at, 1s);
}

TEST(ipc_channel, sending_to_a_closed_peer_reports_it) {
  auto p = ipc::channel::pair();
  ASSERT_TRUE(p);
  auto& [a, b] = *p;
  b.close();
  ipc::message m;
  m.type = ipc::message_type::frame;
  const auto start = clock_type::now();
  auto r = a.send(m, 10s);
  EXPECT_LT(clock_type::now() - start, 1s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::protocol_error);
  EXPECT_TRUE(a.peer_closed());
  // What the peer sent before closing could still be read; here nothing came, so the next receive
  // reaches the end and the channel ends.
  auto end = a.receive(1s);
  ASSERT_FALSE(end);
  EXPECT_EQ(end.error().code(), errc::protocol_error);
  EXPECT_FALSE(a.valid());
}

TEST(ipc_channel, a_goodbye_sent_before_the_peer_closed_is_read_after_a_send_found_it_gone) {
  auto p = ipc::channel::pair();
  ASSERT_TRUE(p);
  auto& [a, b] = *p;
  ipc::message bye;
  bye.type = ipc::message_type::goodbye;
  bye.payload = bytes_of("leaving");
  ASSERT_TRUE(b.send(bye, 1s));
  b.close();
  ipc::message m;
  m.type = ipc::message_type::frame;
  auto sent = a.send(m, 1s);
  ASSERT_FALSE(sent);
  EXPECT_TRUE(a.peer_closed());
  auto got = a.receive(1s);
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->type, ipc::message_type::goodbye);
  EXPECT_EQ(string_of(got->payload), "leaving");
  EXPECT_FALSE(a.receive(1s));
  EXPECT_FALSE(a.valid());
}

// One thread sends while another receives on the same channel, and the receiver's end (a protocol
// error) never closes the descriptor under the sender (run under TSan by the tsan preset).
TEST(ipc_channel, a_sender_and_a_receiver_thread_share_a_channel_and_its_end) {
  auto p = ipc::channel::pair();
  ASSERT_TRUE(p);
  auto& [a, b] = *p;
  const int a_fd = a.native().get();
  std::atomic<int> sent{0};
  std::atomic<bool> sender_done{false};
  std::thread sender([&] {
    ipc::message m;
    m.type = ipc::message_type::frame;
    for (int i = 0; i < 100000; ++i) {
      auto r = a.send(m, 100ms);
      if (!r) {
        if (r.error().code() == errc::timeout) continue;
        break;  // the channel ended or the peer closed
      }
      sent.fetch_add(1);
    }
    sender_done.store(true);
  });
  std::thread peer([&] {
    // b echoes frames back to a, then sends garbage: a's receiver ends the channel.
    for (int i = 0; i < 200; ++i) {
      auto m = b.receive(5s);
      if (!m) break;
      ASSERT_TRUE(b.send(*m, 1s));
    }
    ASSERT_TRUE(raw_send(b.native(), std::vector<std::byte>(24, std::byte{0x5A}), {}));
  });
  int received = 0;
  for (;;) {
    auto m = a.receive(5s);
    if (!m) {
      EXPECT_EQ(m.error().code(), errc::protocol_error) << m.error().message();
      break;
    }
    ++received;
  }
  sender.join();
  peer.join();
  EXPECT_TRUE(sender_done.load());
  EXPECT_EQ(received, 200);
  EXPECT_GE(sent.load(), 200);
  EXPECT_FALSE(a.valid());
  // The descriptor was kept (shut down, not closed) until now.
  EXPECT_NE(::fcntl(a_fd, F_GETFD), -1);
  a.close();
  EXPECT_EQ(::fcntl(a_fd, F_GETFD), -1);
}

TEST(ipc_channel, from_native_adopts_only_connected_seqpacket_sockets) {
  std::array<int, 2> sv{};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv.data()), 0);  // no CLOEXEC on purpose
  auto other = os::unique_fd::from_native(sv[1]);
  auto ch = ipc::channel::from_native(os::unique_fd::from_native(sv[0]));
  ASSERT_TRUE(ch) << ch.error().message();
  auto cloexec = ch->native().is_close_on_exec();
  ASSERT_TRUE(cloexec);
  EXPECT_TRUE(*cloexec);

  auto not_socket = ipc::channel::from_native(make_memfd("x"));
  ASSERT_FALSE(not_socket);
  EXPECT_EQ(not_socket.error().code(), errc::invalid_argument);

  auto stream = os::unique_fd::from_native(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  auto wrong_type = ipc::channel::from_native(std::move(stream));
  ASSERT_FALSE(wrong_type);
  EXPECT_EQ(wrong_type.error().code(), errc::invalid_argument);

  auto unconnected = ipc::channel::from_native(
      os::unique_fd::from_native(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)));
  ASSERT_FALSE(unconnected);
  EXPECT_EQ(unconnected.error().code(), errc::invalid_argument);
}

// ----------------------------------------------------------------------- malformed datagrams ---

struct malformed_case {
  const char* name;
  ipc::message_header header;
  std::size_t payload_bytes;  // bytes actually sent after the header (SIZE_MAX: only `raw_size` bytes)
  std::size_t fds_sent;
  std::size_t raw_size = 0;   // for truncated datagrams: the total bytes sent
};

void PrintTo(const malformed_case& c, std::ostream* out) { *out << c.name; }

ipc::message_header header_with(std::uint32_t payload, std::uint16_t fd_count) {
  ipc::message_header h;
  h.type = ipc::message_type::resource;
  h.payload_size = payload;
  h.fd_count = fd_count;
  return h;
}

std::vector<malformed_case> malformed_cases() {
  std::vector<malformed_case> cases;
  auto add = [&](const char* name, ipc::message_header h, std::size_t payload, std::size_t fds) {
    cases.push_back(malformed_case{name, h, payload, fds});
  };
  auto h = header_with(4, 1);
  h.magic = 0x12345678;
  add("bad_magic", h, 4, 1);
  h = header_with(4, 1);
  h.version = ipc::wire_version + 1;
  add("bad_version", h, 4, 1);
  h = header_with(4, 1);
  h.version = 0;
  add("version_zero", h, 4, 1);
  h = header_with(4, 1);
  h.type = static_cast<ipc::message_type>(99);
  add("unknown_type", h, 4, 1);
  h = header_with(4, 1);
  h.type = static_cast<ipc::message_type>(0);
  add("type_zero", h, 4, 1);
  h = header_with(4, 1);
  h.reserved = 1;
  add("reserved_not_zero", h, 4, 1);
  add("payload_size_larger_than_sent", header_with(10, 1), 5, 1);
  add("payload_size_smaller_than_sent", header_with(5, 1), 10, 1);
  add("payload_over_the_cap", header_with(static_cast<std::uint32_t>(ipc::max_payload_size + 1), 0),
      ipc::max_payload_size + 1, 0);
  add("datagram_larger_than_any_message", header_with(100000, 0), 100000, 0);
  add("fd_count_more_than_received", header_with(4, 2), 4, 1);
  add("fd_count_fewer_than_received", header_with(4, 1), 4, 2);
  add("fds_without_fd_count", header_with(4, 0), 4, 3);
  add("fd_count_without_fds", header_with(4, 3), 4, 0);
  add("too_many_fds", header_with(4, 17), 4, 17);
  add("fd_count_over_the_cap_with_matching_fds_truncated", header_with(0, 200), 0, 17);
  cases.push_back(malformed_case{"shorter_than_a_header", header_with(0, 0), 0, 0, 8});
  cases.push_back(malformed_case{"shorter_than_a_header_with_an_fd", header_with(0, 1), 0, 1, 15});
  cases.push_back(malformed_case{"empty_datagram", header_with(0, 0), 0, 0, static_cast<std::size_t>(-1)});
  return cases;
}

class ipc_malformed : public ::testing::TestWithParam<malformed_case> {};

TEST_P(ipc_malformed, is_rejected_closes_the_channel_and_leaks_no_fd) {
  const auto& c = GetParam();
  auto p = ipc::channel::pair();
  ASSERT_TRUE(p);
  auto& [a, b] = *p;
  auto expected_after = mt::open_fds();  // a's socket stays open until a.close()

  {
    auto bytes = datagram(c.header, c.payload_bytes);
    if (c.raw_size == static_cast<std::size_t>(-1)) {
      bytes.clear();
    } else if (c.raw_size != 0) {
      bytes.resize(c.raw_size);
    }
    auto memfd = make_memfd("sent with a bad message");
    ASSERT_TRUE(memfd);
    std::vector<int> fds(c.fds_sent, memfd.get());
    ASSERT_TRUE(raw_send(b.native(), bytes, fds)) << std::strerror(errno);
  }  // the sender's memfd is closed: only the received copies could keep it open

  const auto start = clock_type::now();
  auto r = a.receive(1s);
  EXPECT_LT(clock_type::now() - start, 1s);
  ASSERT_FALSE(r) << c.name << " was accepted";
  EXPECT_EQ(r.error().code(), errc::protocol_error) << r.error().message();
  EXPECT_FALSE(a.valid());
  EXPECT_FALSE(a.peer_closed());
  EXPECT_EQ(mt::open_fds(), expected_after) << "an fd received with " << c.name << " is still open";
  // The peer sees the end at once (the socket is shut down), before a closes it.
  auto eof = b.receive(1s);
  ASSERT_FALSE(eof);
  EXPECT_TRUE(b.peer_closed());
  auto again = a.receive(10ms);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), errc::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(every_field, ipc_malformed, ::testing::ValuesIn(malformed_cases()),
                         [](const ::testing::TestParamInfo<malformed_case>& param_info) { return std::string(param_info.param.name); });

// --------------------------------------------------------------------------------- listener ---

TEST(ipc_listener, creates_a_0600_socket_and_removes_it_when_destroyed) {
  temp_dir dir;
  ASSERT_FALSE(dir.path.empty());
  const auto path = dir.file("mode.sock");
  {
    auto l = ipc::listener::listen({.path = path});
    ASSERT_TRUE(l) << l.error().message();
    EXPECT_EQ(l->path(), path);
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0600U);
    EXPECT_EQ(st.st_uid, ::geteuid());

    // A same-user connection is accepted; both ends see each other's credentials.
    auto client = ipc::channel::connect(path, 1s);
    ASSERT_TRUE(client) << client.error().message();
    auto server = l->accept(1s);
    ASSERT_TRUE(server) << server.error().message();
    EXPECT_EQ(server->peer().pid, ::getpid());
    EXPECT_EQ(client->peer().uid, static_cast<std::uint32_t>(::geteuid()));
    ipc::message m;
    m.type = ipc::message_type::welcome;
    m.fds.push_back(make_memfd("over a path"));
    ASSERT_TRUE(server->send(m, 1s));
    auto got = client->receive(1s);
    ASSERT_TRUE(got) << got.error().message();
    ASSERT_EQ(got->fds.size(), 1U);
    EXPECT_EQ(read_all(got->fds[0]), "over a path");

    // Moving the listener keeps the file; only the last owner removes it.
    ipc::listener moved = std::move(*l);
    ASSERT_EQ(::access(path.c_str(), F_OK), 0);
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "the socket file outlived its listener";
}

TEST(ipc_listener, accept_times_out_quickly) {
  temp_dir dir;
  auto l = ipc::listener::listen({.path = dir.file("idle.sock")});
  ASSERT_TRUE(l) << l.error().message();
  const auto start = clock_type::now();
  auto r = l->accept(50ms);
  EXPECT_LT(clock_type::now() - start, 1s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::timeout);
}

TEST(ipc_listener, uses_xdg_runtime_dir_for_a_name) {
  temp_dir dir;
  const char* old = std::getenv("XDG_RUNTIME_DIR");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  ::setenv("XDG_RUNTIME_DIR", dir.path.c_str(), 1);
  {
    auto l = ipc::listener::listen({.name = "unit-test"});
    ASSERT_TRUE(l) << l.error().message();
    EXPECT_EQ(l->path(), dir.path + "/membridge/unit-test.sock");
    struct stat st {};
    ASSERT_EQ(::lstat((dir.path + "/membridge").c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0700U);
    ASSERT_EQ(::lstat(l->path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600U);

    auto bad_name = ipc::listener::listen({.name = "../escape"});
    ASSERT_FALSE(bad_name);
    EXPECT_EQ(bad_name.error().code(), errc::invalid_argument);
  }
  ::unsetenv("XDG_RUNTIME_DIR");
  auto unset = ipc::listener::listen({.name = "unit-test"});
  if (saved) ::setenv("XDG_RUNTIME_DIR", saved->c_str(), 1);
  ASSERT_FALSE(unset);
  EXPECT_EQ(unset.error().code(), errc::invalid_argument);
}

TEST(ipc_listener, replaces_a_stale_socket_but_not_a_live_one_or_another_file) {
  temp_dir dir;
  const auto path = dir.file("stale.sock");
  {  // a socket file nobody listens on: bound, then closed
    auto s = os::unique_fd::from_native(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    ASSERT_EQ(::bind(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  }
  ASSERT_EQ(::access(path.c_str(), F_OK), 0);
  auto l = ipc::listener::listen({.path = path});
  ASSERT_TRUE(l) << l.error().message();

  auto second = ipc::listener::listen({.path = path});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().native_code(), EADDRINUSE) << second.error().message();
  // The live listener's file is intact and still answers.
  auto client = ipc::channel::connect(path, 1s);
  ASSERT_TRUE(client) << client.error().message();
  EXPECT_TRUE(l->accept(1s));

  const auto plain = dir.file("plain.file");
  { auto f = os::unique_fd::from_native(::open(plain.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600)); }
  auto over_file = ipc::listener::listen({.path = plain});
  ASSERT_FALSE(over_file);
  EXPECT_EQ(over_file.error().code(), errc::invalid_argument);
  EXPECT_EQ(::access(plain.c_str(), F_OK), 0) << "a non-socket file was removed";

  auto too_long = ipc::listener::listen({.path = "/tmp/" + std::string(200, 'x')});
  ASSERT_FALSE(too_long);
  EXPECT_EQ(too_long.error().code(), errc::invalid_argument);
}

TEST(ipc_listener, connecting_to_nothing_fails_clearly) {
  temp_dir dir;
  auto r = ipc::channel::connect(dir.file("nobody-here.sock"), 100ms);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().native_code(), ENOENT);
}

// ------------------------------------------------------------------------- two processes ---

TEST(ipc_two_processes, a_child_sends_a_memfd_the_parent_reads_it) {
  temp_dir dir;
  auto l = ipc::listener::listen({.path = dir.file("child-sends.sock")});
  ASSERT_TRUE(l) << l.error().message();
  auto child = mt::spawn_child("ipc_connect_send", {l->path()});
  ASSERT_TRUE(child) << child.error().message();
  auto ch = l->accept(10s);
  ASSERT_TRUE(ch) << ch.error().message();
  EXPECT_EQ(ch->peer().pid, child->pid());
  auto m = ch->receive(10s);
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(m->type, ipc::message_type::resource);
  EXPECT_EQ(string_of(m->payload), "from child");
  ASSERT_EQ(m->fds.size(), 1U);
  EXPECT_EQ(read_all(m->fds[0]), "child data");
  ASSERT_NO_FATAL_FAILURE(send_goodbye(*ch));
  expect_exit(*child, 0);
}

TEST(ipc_two_processes, the_parent_sends_a_memfd_the_child_reads_and_writes_it) {
  temp_dir dir;
  auto l = ipc::listener::listen({.path = dir.file("parent-sends.sock")});
  ASSERT_TRUE(l) << l.error().message();
  auto child = mt::spawn_child("ipc_connect_receive", {l->path()});
  ASSERT_TRUE(child) << child.error().message();
  auto ch = l->accept(10s);
  ASSERT_TRUE(ch) << ch.error().message();
  const std::string secret = "parent pattern " + std::to_string(::getpid());
  ipc::message m;
  m.type = ipc::message_type::resource;
  m.payload = bytes_of(secret);
  m.fds.push_back(make_memfd(secret));
  ASSERT_TRUE(ch->send(m, 10s));
  auto answer = ch->receive(10s);
  ASSERT_TRUE(answer) << answer.error().message();
  EXPECT_EQ(string_of(answer->payload), "ok");
  EXPECT_EQ(read_all(m.fds[0]).substr(0, 14), "child was here");
  ASSERT_NO_FATAL_FAILURE(send_goodbye(*ch));
  expect_exit(*child, 0);
}

TEST(ipc_two_processes, a_child_that_exits_is_noticed_at_once) {
  temp_dir dir;
  auto l = ipc::listener::listen({.path = dir.file("exits.sock")});
  ASSERT_TRUE(l) << l.error().message();
  auto child = mt::spawn_child("ipc_connect_and_exit", {l->path()});
  ASSERT_TRUE(child) << child.error().message();
  auto ch = l->accept(10s);
  ASSERT_TRUE(ch) << ch.error().message();
  expect_exit(*child, 0);
  const auto start = clock_type::now();
  auto r = ch->receive(10s);
  EXPECT_LT(clock_type::now() - start, 1s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::protocol_error);
  EXPECT_TRUE(ch->peer_closed());
}

// ---------------------------------------------------------------------- peer credentials ---

class ipc_credentials : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to start a child as uid 65534 (CI runs as root)";
    ASSERT_FALSE(dir_.path.empty());
  }
  temp_dir dir_;
};

TEST_F(ipc_credentials, another_user_is_refused_by_the_uid_check) {
  // Mode 0666 so the file permission does not stop the child: SO_PEERCRED is what is tested.
  auto l = ipc::listener::listen({.path = dir_.file("refuse.sock"), .mode = 0666});
  ASSERT_TRUE(l) << l.error().message();
  auto child = mt::spawn_child("ipc_connect_as", {l->path(), std::to_string(nobody)});
  ASSERT_TRUE(child) << child.error().message();
  auto ch = l->accept(10s);
  ASSERT_FALSE(ch) << "a uid " << nobody << " peer was accepted";
  EXPECT_EQ(ch.error().code(), errc::protocol_error);
  EXPECT_NE(ch.error().message().find("uid 65534"), std::string::npos) << ch.error().message();
  expect_exit(*child, 30, "child exit 30 = refused (connection closed by the listener)");
  // The listener is still usable after a refusal.
  auto same_user = ipc::channel::connect(l->path(), 1s);
  ASSERT_TRUE(same_user);
  EXPECT_TRUE(l->accept(1s));
}

TEST_F(ipc_credentials, an_allow_list_with_that_user_accepts_it) {
  auto l = ipc::listener::listen({.path = dir_.file("allow.sock"), .allowed_uids = {nobody}, .mode = 0666});
  ASSERT_TRUE(l) << l.error().message();
  auto child = mt::spawn_child("ipc_connect_as", {l->path(), std::to_string(nobody)});
  ASSERT_TRUE(child) << child.error().message();
  auto ch = l->accept(10s);
  ASSERT_TRUE(ch) << ch.error().message();
  EXPECT_EQ(ch->peer().uid, nobody);
  EXPECT_EQ(ch->peer().gid, nobody);
  EXPECT_EQ(ch->peer().pid, child->pid());
  auto hello = ch->receive(10s);
  ASSERT_TRUE(hello) << hello.error().message();
  EXPECT_EQ(hello->type, ipc::message_type::hello);
  ipc::message welcome;
  welcome.type = ipc::message_type::welcome;
  ASSERT_TRUE(ch->send(welcome, 10s));
  expect_exit(*child, 0);

  // The allow-list is exact: this process's own uid (root) is not on it.
  auto self = ipc::channel::connect(l->path(), 1s);
  ASSERT_TRUE(self);
  auto refused = l->accept(1s);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), errc::protocol_error);
}

TEST_F(ipc_credentials, the_default_0600_mode_keeps_another_user_from_connecting_at_all) {
  auto l = ipc::listener::listen({.path = dir_.file("private.sock")});
  ASSERT_TRUE(l) << l.error().message();
  auto child = mt::spawn_child("ipc_connect_as", {l->path(), std::to_string(nobody)});
  ASSERT_TRUE(child) << child.error().message();
  expect_exit(*child, 20, "child exit 20 = connect failed with EACCES");
  auto none = l->accept(50ms);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::timeout);
}

}  // namespace
