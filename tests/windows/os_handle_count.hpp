// Counting this process's open handles under Wine. GetProcessHandleCount answers 0 under Wine 8, so
// the count comes from NtQuerySystemInformation(SystemExtendedHandleInformation), which Wine 8
// implements (checked: it follows CreateEvent/CloseHandle one for one); both Windows test binaries
// fail any test that ends with more or fewer handles than it began with, and name the handles that
// differ (value, type and access) so that a leak says what leaked.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace membridge::testing {

/// One open handle of this process, as the system's handle table lists it.
struct open_handle {
  std::uintptr_t value = 0;
  std::uint32_t type_index = 0;  ///< the system's object type number (open_handle_type_name names it)
  std::uint32_t access = 0;      ///< the access the handle grants
};

/// This process's open handles, sorted by value; `ok` false if the system cannot list them.
struct handle_snapshot {
  bool ok = false;
  std::vector<open_handle> handles;

  /// The number of handles; -1 if the system could not list them.
  [[nodiscard]] long count() const { return ok ? static_cast<long>(handles.size()) : -1; }
};

/// Lists this process's open handles.
[[nodiscard]] handle_snapshot snapshot_handles();

/// The number of handles this process has open; -1 if the system cannot say.
[[nodiscard]] long open_handle_count();

/// The type name of an open handle (NtQueryObject(ObjectTypeInformation): "Event", "File",
/// "Section", ...); empty if the system cannot say. Ownership: `h` is borrowed.
[[nodiscard]] std::string open_handle_type_name(void* h);

/// Where `event` is the wait event of a winpthreads mutex (pthread_mutex_t, std::mutex) that lives
/// in this program's static data (a runtime lock, a namespace- or function-scope mutex): the
/// offset of that mutex in the program's image (`nm` names it), else nullopt. winpthreads makes a
/// mutex's event on its first contention and closes it only when the mutex is destroyed, which a
/// static one never is. Ownership: `event` is borrowed.
[[nodiscard]] std::optional<std::uintptr_t> static_mutex_owning(void* event);

/// The handles in `after` but not in `before` ("+") and in `before` but not in `after` ("-"), one a
/// line: value, type name, access and, for objects other than files, the object's name if it has one.
/// A handle value closed and opened again with another type counts as one closed and one opened.
[[nodiscard]] std::string describe_handle_changes(const handle_snapshot& before, const handle_snapshot& after);

/// Success when this process has `before.count() + delta` handles; else a failure naming the
/// handles that differ. The mingw-w64 thread runtime closes a finished thread's objects a little
/// after the thread ends: the count is taken again for up to 2 s before the check fails (a real leak stays).
[[nodiscard]] ::testing::AssertionResult handles_changed_by(const handle_snapshot& before, long delta);

/// Fails a test that changes the process's handle count (a leak, or a handle closed twice / that
/// was not membridge's to close), naming the handles that differ.
class handle_leak_listener : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo& info) override;
  void OnTestEnd(const ::testing::TestInfo& info) override;

 private:
  handle_snapshot before_;
};

}  // namespace membridge::testing
