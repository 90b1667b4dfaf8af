// The two-process test machinery the GPU tier relies on (re-exec in a child role, fds over
// SCM_RIGHTS), checked here with memfds so CI covers it without a GPU.
#include "child_process.hpp"
#include "fd_leak_listener.hpp"

#include <membridge/os/borrowed_fd.hpp>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;
using membridge::errc;
namespace os = membridge::os;
namespace mt = membridge::testing;

struct request {
  std::uint32_t seed;
  std::uint32_t words;
};

std::uint32_t pattern(std::uint32_t i, std::uint32_t seed) { return i * 2654435761u ^ seed; }

// Child: receives a memfd, checks the parent's pattern, writes its own, and answers with a second
// memfd of its own making plus the count of wrong words.
int echo_child(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0] != "hello") return 10;
  auto in = mt::receive_message(mt::child_socket(), sizeof(request), 10s);
  if (!in || in->fds.size() != 1 || in->payload.size() != sizeof(request)) return 11;
  request q{};
  std::memcpy(&q, in->payload.data(), sizeof q);
  std::uint32_t bad = 0;
  for (std::uint32_t i = 0; i < q.words; ++i) {
    std::uint32_t v = 0;
    if (::pread(in->fds[0].get(), &v, sizeof v, i * sizeof v) != sizeof v || v != pattern(i, q.seed)) ++bad;
    const std::uint32_t w = pattern(i, q.seed + 1);
    if (::pwrite(in->fds[0].get(), &w, sizeof w, i * sizeof w) != sizeof w) ++bad;
  }
  auto own = os::unique_fd::from_native(::memfd_create("child", MFD_CLOEXEC));
  if (::write(own.get(), "child", 5) != 5) return 12;
  const std::array<os::borrowed_fd, 1> fds{own};
  return mt::send_value(mt::child_socket(), bad, fds) ? 0 : 13;
}
const mt::child_role echo_role("echo", &echo_child);

int silent_child(const std::vector<std::string>&) {
  ::sleep(30);
  return 0;
}
const mt::child_role silent_role("silent", &silent_child);

TEST(child_process, a_child_reads_the_parents_memory_through_a_passed_fd_and_answers) {
  auto child = mt::spawn_child("echo", {"hello"});
  ASSERT_TRUE(child) << child.error().message();
  auto shared = os::unique_fd::from_native(::memfd_create("parent", MFD_CLOEXEC));
  const request q{0xABCD, 4096};
  for (std::uint32_t i = 0; i < q.words; ++i) {
    const std::uint32_t v = pattern(i, q.seed);
    ASSERT_EQ(::pwrite(shared.get(), &v, sizeof v, i * sizeof v), static_cast<ssize_t>(sizeof v));
  }
  const std::array<os::borrowed_fd, 1> fds{shared};
  ASSERT_TRUE(mt::send_value(child->socket(), q, fds));
  auto reply = mt::receive_message(child->socket(), sizeof(std::uint32_t), 10s);
  ASSERT_TRUE(reply) << reply.error().message();
  std::uint32_t bad = 1;
  std::memcpy(&bad, reply->payload.data(), sizeof bad);
  EXPECT_EQ(bad, 0u);
  ASSERT_EQ(reply->fds.size(), 1u);
  EXPECT_TRUE(*os::borrowed_fd(reply->fds[0]).is_close_on_exec());  // MSG_CMSG_CLOEXEC
  char text[6] = {};
  ASSERT_EQ(::pread(reply->fds[0].get(), text, 5, 0), 5);
  EXPECT_STREQ(text, "child");
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < q.words; ++i) {
    std::uint32_t v = 0;
    ASSERT_EQ(::pread(shared.get(), &v, sizeof v, i * sizeof v), static_cast<ssize_t>(sizeof v));
    if (v != pattern(i, q.seed + 1)) ++wrong;
  }
  EXPECT_EQ(wrong, 0u);
  const auto status = child->wait(10s);
  ASSERT_TRUE(status) << status.error().message();
  EXPECT_EQ(*status, 0);
}

TEST(child_process, receiving_times_out_and_a_dead_child_is_noticed) {
  auto child = mt::spawn_child("silent");
  ASSERT_TRUE(child);
  const auto none = mt::receive_message(child->socket(), 16, 50ms);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::timeout);
  ::kill(child->pid(), SIGKILL);
  const auto closed = mt::receive_message(child->socket(), 16, 5s);
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().code(), errc::protocol_error);
  const auto status = child->wait(5s);
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, 128 + SIGKILL);
}

TEST(child_process, an_unknown_role_exits_with_a_distinct_status) {
  auto child = mt::spawn_child("no-such-role");
  ASSERT_TRUE(child);
  const auto status = child->wait(10s);
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, 90);
}

TEST(fd_leak_listener, open_fds_sees_a_new_descriptor_and_its_target) {
  const auto before = mt::open_fds();
  auto fd = os::unique_fd::from_native(::memfd_create("leak-probe", MFD_CLOEXEC));
  const auto during = mt::open_fds();
  ASSERT_EQ(during.size(), before.size() + 1);
  ASSERT_EQ(during.count(fd.get()), 1u);
  EXPECT_NE(during.at(fd.get()).find("leak-probe"), std::string::npos);
  fd.reset();
  EXPECT_EQ(mt::open_fds(), before);
}

}  // namespace
