// The fixture of the Windows tests that run on the scripted CUDA driver with device 0 open.
#pragma once

#include "fake_driver_test.hpp"

#include <membridge/cuda/device.hpp>

namespace membridge::testing {

/// A fake_driver_test with device 0 open in `dev_`, closed before the fixture counts leaks.
class open_device_test : public fake_driver_test {
 protected:
  void SetUp() override { dev_ = open_device(); }
  void TearDown() override {
    dev_ = {};  // drops the primary context retain before the fixture counts leaks
    fake_driver_test::TearDown();
  }
  cuda::device dev_;  ///< Ownership: owned by the fixture.
};

}  // namespace membridge::testing
