// A fixture for unit tests that run membridge's cuda module on the scripted driver: every test ends
// with no driver misuse and nothing leaked (handles, ranges, mappings, context retains).
#pragma once

#include "fake_cuda_driver.hpp"

#include <membridge/cuda/device.hpp>

#include <gtest/gtest.h>

#include <string>

namespace membridge::testing {

inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += "\n  " + i;
  return out;
}

class fake_driver_test : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_TRUE(fake_.misuse().empty()) << "driver misuse:" << join(fake_.misuse());
    if (check_leaks_) {
      EXPECT_TRUE(fake_.leaks().empty()) << "leaked:" << join(fake_.leaks());
    }
  }

  /// Opens device 0 through the fake; fails the test if it cannot.
  cuda::device open_device() {
    auto dev = cuda::device::open(fake_.driver(), 0);
    if (!dev) {
      ADD_FAILURE() << dev.error().message();
      return {};
    }
    return std::move(dev).value();
  }

  fake_cuda fake_;
  bool check_leaks_ = true;
};

}  // namespace membridge::testing
