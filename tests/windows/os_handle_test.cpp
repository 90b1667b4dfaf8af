// The Windows os layer under Wine: unique_handle closes what it owns, duplicates, releases and
// moves; shareable_handle is the HANDLE type; dynamic_library loads a system DLL and finds a
// symbol, and names what is missing with the ERROR_* code.
#include "os_handle_count.hpp"

#include <membridge/os/dynamic_library.hpp>
#include <membridge/os/shareable_handle.hpp>
#include <membridge/os/unique_handle.hpp>

#include <gtest/gtest.h>

#include <windows.h>

#include <cstring>
#include <type_traits>

namespace {

using membridge::errc;
using membridge::error_source;
using membridge::os::borrowed_handle;
using membridge::os::unique_handle;

/// An unnamed event (a cheap kernel object), owned.
unique_handle make_event() { return unique_handle(::CreateEventA(nullptr, TRUE, FALSE, nullptr)); }

/// True while `h` names an open kernel object.
bool is_open(HANDLE h) {
  DWORD flags = 0;
  return ::GetHandleInformation(h, &flags) != 0;
}

static_assert(std::is_same_v<membridge::os::shareable_handle, unique_handle>);
static_assert(std::is_same_v<membridge::os::borrowed_shareable_handle, borrowed_handle>);
static_assert(!std::is_copy_constructible_v<unique_handle> && std::is_nothrow_move_constructible_v<unique_handle>);

TEST(windows_os, unique_handle_closes_what_it_owns) {
  HANDLE raw = nullptr;
  {
    unique_handle h = make_event();
    ASSERT_TRUE(h.valid());
    raw = h.get();
    EXPECT_TRUE(is_open(raw));
    EXPECT_TRUE(h.borrow().valid());
  }
  EXPECT_FALSE(is_open(raw)) << "closed on destruction";
}

TEST(windows_os, invalid_handle_value_and_null_mean_no_handle) {
  EXPECT_FALSE(unique_handle(INVALID_HANDLE_VALUE).valid());
  EXPECT_FALSE(unique_handle(nullptr).valid());
  EXPECT_FALSE(borrowed_handle(INVALID_HANDLE_VALUE).valid());
  EXPECT_FALSE(borrowed_handle().valid());
  const auto dup = unique_handle::duplicate(borrowed_handle());
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code(), errc::invalid_argument);
}

TEST(windows_os, duplicate_makes_an_independent_handle_to_the_same_object) {
  unique_handle a = make_event();
  ASSERT_TRUE(a.valid());
  auto b = unique_handle::duplicate(a.borrow());
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_NE(b->get(), a.get());
  ASSERT_NE(::SetEvent(a.get()), 0);
  EXPECT_EQ(::WaitForSingleObject(b->get(), 0), WAIT_OBJECT_0) << "the same event";
  const HANDLE raw_a = a.get();
  a.reset();
  EXPECT_FALSE(is_open(raw_a));
  EXPECT_TRUE(is_open(b->get())) << "the duplicate outlives the original";
}

TEST(windows_os, release_and_move_transfer_ownership) {
  unique_handle a = make_event();
  const HANDLE raw = a.get();
  unique_handle b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(b.get(), raw);
  unique_handle c;
  c = std::move(b);
  EXPECT_EQ(c.get(), raw);
  HANDLE released = c.release();
  EXPECT_FALSE(c.valid());
  EXPECT_TRUE(is_open(released)) << "release does not close";
  EXPECT_NE(::CloseHandle(released), 0);
}

TEST(windows_os, dynamic_library_loads_a_system_dll_and_finds_a_symbol) {
  auto k = membridge::os::dynamic_library::open("kernel32.dll");
  ASSERT_TRUE(k) << k.error().message();
  auto sym = k->symbol("GetCurrentProcessId");
  ASSERT_TRUE(sym) << sym.error().message();
  using fn = DWORD(WINAPI*)();
  EXPECT_EQ(reinterpret_cast<fn>(*sym)(), ::GetCurrentProcessId());
  const auto missing = k->symbol("membridge_no_such_function");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), errc::driver_unavailable);
  EXPECT_EQ(missing.error().source(), error_source::win32);
  EXPECT_NE(missing.error().message().find("ERROR_PROC_NOT_FOUND"), std::string::npos) << missing.error().message();
}

TEST(windows_os, a_missing_dll_is_driver_unavailable_with_its_name) {
  const auto lib = membridge::os::dynamic_library::open("membridge_no_such_library.dll");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code(), errc::driver_unavailable);
  EXPECT_NE(lib.error().message().find("ERROR_MOD_NOT_FOUND"), std::string::npos) << lib.error().message();
  EXPECT_NE(lib.error().message().find("membridge_no_such_library.dll"), std::string::npos);
}

}  // namespace

namespace {

// The counter behind the binary's handle-leak listener (os_handle_count.hpp) sees one handle opened
// and closed, so a test that leaks one is caught.
TEST(windows_os, the_handle_counter_follows_open_and_close) {
  const long before = membridge::testing::open_handle_count();
  ASSERT_GT(before, 0) << "NtQuerySystemInformation(SystemExtendedHandleInformation) counts this process's handles";
  unique_handle event = make_event();
  ASSERT_TRUE(event.valid());
  EXPECT_EQ(membridge::testing::open_handle_count(), before + 1);
  event.reset();
  EXPECT_EQ(membridge::testing::open_handle_count(), before);
}

}  // namespace

namespace {

// main() forced the first contention of winpthreads' thread-registry lock (runtime_priming.hpp):
// its wait event is open before any test counts, and the listener's diff can tell such an event
// (a static mutex's, kept for the life of the process) from one a test leaked.
TEST(windows_os, the_thread_registry_lock_has_its_wait_event_before_tests_count) {
  const membridge::testing::handle_snapshot now = membridge::testing::snapshot_handles();
  ASSERT_TRUE(now.ok);
  int static_mutex_events = 0;
  for (const membridge::testing::open_handle& h : now.handles)
    if (membridge::testing::static_mutex_owning(reinterpret_cast<void*>(h.value))) ++static_mutex_events;
  EXPECT_GE(static_mutex_events, 1) << "no open event belongs to a static winpthreads mutex";
  unique_handle event = make_event();
  EXPECT_FALSE(membridge::testing::static_mutex_owning(event.get())) << "a test's own event is not a mutex's";
}

}  // namespace
