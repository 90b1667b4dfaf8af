// Counting this process's open handles under Wine. GetProcessHandleCount answers 0 under Wine 8, so
// the count comes from NtQuerySystemInformation(SystemExtendedHandleInformation), which Wine 8
// implements (checked: it follows CreateEvent/CloseHandle one for one); the windows test binary's
// listener fails any test that ends with more or fewer handles than it began with.
#pragma once

#include <gtest/gtest.h>

namespace membridge::testing {

/// The number of handles this process has open; -1 if the system cannot say.
[[nodiscard]] long open_handle_count();

/// Fails a test that changes the process's handle count (a leak, or a handle closed twice / that
/// was not membridge's to close).
class handle_leak_listener : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo& info) override;
  void OnTestEnd(const ::testing::TestInfo& info) override;

 private:
  long before_ = -1;
};

}  // namespace membridge::testing
