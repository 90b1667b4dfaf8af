#include "log_capture.hpp"

#include <membridge/core/log.hpp>
#include <membridge/os/borrowed_fd.hpp>
#include <membridge/os/unique_fd.hpp>

#include <gtest/gtest.h>

#include <cerrno>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

using membridge::errc;
using membridge::os::borrowed_fd;
using membridge::os::unique_fd;

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

int raw_memfd(unsigned flags = 0) {
  const int fd = ::memfd_create("membridge-test", flags);
  if (fd < 0) ADD_FAILURE() << "memfd_create failed";
  return fd;
}

TEST(unique_fd, closes_exactly_once_when_destroyed) {
  const int raw = raw_memfd();
  {
    const auto fd = unique_fd::from_native(raw);
    EXPECT_TRUE(fd.valid());
    EXPECT_EQ(fd.get(), raw);
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(unique_fd, move_transfers_ownership_and_empties_the_source) {
  const int raw = raw_memfd();
  auto a = unique_fd::from_native(raw);
  unique_fd b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_EQ(a.get(), -1);   // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.get(), raw);
  unique_fd c;
  c = std::move(b);
  EXPECT_EQ(c.get(), raw);
  EXPECT_TRUE(is_open(raw));
  c.reset();
  EXPECT_FALSE(is_open(raw));
  EXPECT_FALSE(c.valid());
}

TEST(unique_fd, move_assignment_closes_the_previous_descriptor) {
  const int first = raw_memfd();
  const int second = raw_memfd();
  auto a = unique_fd::from_native(first);
  a = unique_fd::from_native(second);
  EXPECT_FALSE(is_open(first));
  EXPECT_TRUE(is_open(second));
  EXPECT_EQ(a.get(), second);
}

TEST(unique_fd, release_gives_up_ownership_without_closing) {
  const int raw = raw_memfd();
  int released = -1;
  {
    auto fd = unique_fd::from_native(raw);
    released = fd.release();
    EXPECT_FALSE(fd.valid());
  }
  EXPECT_EQ(released, raw);
  EXPECT_TRUE(is_open(raw));
  ::close(raw);
}

TEST(unique_fd, negative_values_make_an_empty_owner) {
  const auto fd = unique_fd::from_native(-5);
  EXPECT_FALSE(fd.valid());
  EXPECT_EQ(fd.get(), -1);
}

TEST(unique_fd, a_failing_close_is_logged_not_thrown_or_retried) {
  membridge::testing::log_capture logs;
  const int raw = raw_memfd();
  ::close(raw);  // someone else closed it behind the owner's back
  { auto fd = unique_fd::from_native(raw); }
  ASSERT_EQ(logs.lines().size(), 1u);
  EXPECT_NE(logs.lines()[0].find("close: EBADF"), std::string::npos) << logs.lines()[0];
}

TEST(borrowed_fd, never_closes_and_views_an_owner) {
  const int raw = raw_memfd();
  auto owner = unique_fd::from_native(raw);
  {
    const borrowed_fd view = owner;
    EXPECT_EQ(view.get(), raw);
    const borrowed_fd copy = view;
    EXPECT_EQ(copy.get(), raw);
  }
  EXPECT_TRUE(is_open(raw));
  EXPECT_FALSE(borrowed_fd{}.valid());
  EXPECT_EQ(borrowed_fd::from_native(-3).get(), -1);
}

TEST(borrowed_fd, duplicate_is_a_new_close_on_exec_descriptor_of_the_same_file) {
  auto owner = unique_fd::from_native(raw_memfd());  // no MFD_CLOEXEC: the original lacks the flag
  ASSERT_EQ(::write(owner.get(), "abc", 3), 3);
  auto dup = borrowed_fd(owner).duplicate();
  ASSERT_TRUE(dup) << dup.error().message();
  EXPECT_NE(dup->get(), owner.get());
  EXPECT_TRUE(*borrowed_fd(*dup).is_close_on_exec());
  EXPECT_FALSE(*borrowed_fd(owner).is_close_on_exec());
  char text[4] = {};
  ASSERT_EQ(::pread(dup->get(), text, 3, 0), 3);  // same open file
  EXPECT_STREQ(text, "abc");
  dup->reset();
  EXPECT_TRUE(is_open(owner.get()));  // closing the duplicate leaves the original
}

TEST(borrowed_fd, duplicate_of_a_bad_descriptor_is_an_error) {
  const auto empty = borrowed_fd{}.duplicate();
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code(), errc::invalid_argument);
  const int raw = raw_memfd();
  ::close(raw);
  const auto closed = borrowed_fd::from_native(raw).duplicate();
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().code(), errc::invalid_argument);
  EXPECT_EQ(closed.error().native_code(), EBADF);
}

TEST(set_close_on_exec, sets_the_flag_once) {
  auto fd = unique_fd::from_native(raw_memfd());
  EXPECT_FALSE(*borrowed_fd(fd).is_close_on_exec());
  ASSERT_TRUE(membridge::os::set_close_on_exec(fd));
  EXPECT_TRUE(*borrowed_fd(fd).is_close_on_exec());
  ASSERT_TRUE(membridge::os::set_close_on_exec(fd));  // idempotent
  EXPECT_FALSE(membridge::os::set_close_on_exec(borrowed_fd{}));
}

}  // namespace
