// A GoogleTest listener that fails any test which leaves a file descriptor open.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace membridge::testing {

/// The open descriptors of this process: fd -> what /proc/self/fd says it points to.
std::map<int, std::string> open_fds();

/// Snapshots the open fds when a test starts; when it ends, reports every new fd (with its target)
/// as a failure of that test and closes it, so one leak does not spill into the next test.
class fd_leak_listener : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo& info) override;
  void OnTestEnd(const ::testing::TestInfo& info) override;

 private:
  std::map<int, std::string> before_;
};

}  // namespace membridge::testing
