// A fixture for unit tests that run membridge's cuda module on the scripted driver: every test ends
// with no driver misuse and nothing leaked (handles, ranges, mappings, context retains).
#pragma once

#include "fake_cuda_driver.hpp"

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace membridge::testing {

inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += "\n  " + i;
  return out;
}

/// The value `r` holds, or (when it holds an error) an empty T with the test failed, naming the error.
template <class T>
T value_or_failure(result<T> r) {
  if (!r) {
    ADD_FAILURE() << r.error().message();
    return {};
  }
  return std::move(r).value();
}

class fake_driver_test : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_TRUE(fake_.misuse().empty()) << "driver misuse:" << join(fake_.misuse());
    if (check_leaks_) {
      EXPECT_TRUE(fake_.leaks().empty()) << "leaked:" << join(fake_.leaks());
    }
  }

  /// Opens device `ordinal` (0 unless named) through the fake; fails the test if it cannot.
  cuda::device open_device(int ordinal = 0) { return value_or_failure(cuda::device::open(fake_.driver(), ordinal)); }

  /// The driver calls made since `from` (a count of fake_.calls() taken before), in order.
  std::vector<std::string> calls_since(std::size_t from) const {
    const auto& all = fake_.calls();
    return {all.begin() + static_cast<std::ptrdiff_t>(from), all.end()};
  }

  /// True when every name of `wanted` occurs in `calls` in that order (other calls may come between).
  static bool contains_in_order(const std::vector<std::string>& calls, const std::vector<std::string>& wanted) {
    auto it = calls.begin();
    for (const auto& w : wanted) {
      it = std::find(it, calls.end(), w);
      if (it == calls.end()) return false;
      ++it;
    }
    return true;
  }

  /// The device whose memory backs the mapping at `address` (the fake's cuMemCreate location).
  int memory_location(CUdeviceptr address) const {
    return fake_.physicals_.at(fake_.mappings_.at(address).physical_id).prop.location.id;
  }

  /// The rights `gpu` has on the mapping at `address` (device 0's are the record's own field).
  int rights_of(CUdeviceptr address, int gpu) const {
    const auto& m = fake_.mappings_.at(address);
    if (gpu == 0) return m.access;
    const auto found = m.peers.find(gpu);
    return found == m.peers.end() ? CU_MEM_ACCESS_FLAGS_PROT_NONE : found->second;
  }

  fake_cuda fake_;
  bool check_leaks_ = true;
};

/// fake_driver_test on a fake modelling three GPUs, opened as d0_, d1_ and d2_ (closed before
/// TearDown's checks).
class three_gpu_fake_test : public fake_driver_test {
 protected:
  void TearDown() override {
    d0_ = {};
    d1_ = {};
    d2_ = {};
    fake_driver_test::TearDown();
  }

  int gpus_ = (fake_.device_count = 3);  // before the devices below are opened
  cuda::device d0_ = open_device(0);
  cuda::device d1_ = open_device(1);
  cuda::device d2_ = open_device(2);
};

}  // namespace membridge::testing
