// What the imported_buffer tests on the scripted driver share: exporting every chunk of a buffer, and
// failing each driver step of an import in turn (every failure must leave everything as it was).
#pragma once

#include "fake_cuda_driver.hpp"
#include "fake_driver_test.hpp"
#include "fd_leak_listener.hpp"

#include <membridge/core/error.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/imported_buffer.hpp>

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace membridge::testing {

/// One exported chunk per chunk of `b`, in order; fails the test (and returns none) if an export fails.
/// Ownership: the returned chunks own their fds.
inline std::vector<cuda::exported_chunk> export_all(const cuda::growable_buffer& b) {
  std::vector<cuda::exported_chunk> out;
  for (std::size_t i = 0; i < b.chunk_count(); ++i) {
    auto c = b.export_chunk(i);
    if (!c) {
      ADD_FAILURE() << c.error().message();
      return {};
    }
    out.push_back(std::move(c).value());
  }
  return out;
}

/// Fails the driver call at step k of `attempt()` for k = 0, 1, ... until an attempt runs with no
/// failure injected (which must succeed). Every failed attempt must report out_of_memory and leave the
/// driver, the process's fds and the view (chunks, capacity, size) as they were. Returns the number
/// of steps that failed.
template <class Attempt>
int fail_every_step(fake_cuda& fake, const cuda::imported_buffer& view, Attempt attempt) {
  const auto before = fake.state();
  const auto fds_before = open_fds();
  const std::size_t chunks = view.chunk_count();
  const std::size_t capacity = view.capacity();
  const std::size_t size = view.size();
  for (int k = 0;; ++k) {
    fake.fail_nth_call(k, CUDA_ERROR_OUT_OF_MEMORY);
    const auto r = attempt();
    if (!fake.injection_fired()) {
      fake.clear_failures();
      EXPECT_TRUE(r) << r.error().message();
      return k;
    }
    const std::string step = "step " + std::to_string(k) + " (" + fake.failed_function() + ")";
    if (r) {
      ADD_FAILURE() << step << " failed but the call reported success";
      fake.clear_failures();
      return k;
    }
    EXPECT_EQ(r.error().code(), errc::out_of_memory) << step;
    EXPECT_EQ(fake.state(), before) << step;
    EXPECT_EQ(open_fds(), fds_before) << step;
    EXPECT_EQ(view.chunk_count(), chunks) << step;
    EXPECT_EQ(view.capacity(), capacity) << step;
    EXPECT_EQ(view.size(), size) << step;
    if (!fake.misuse().empty()) {
      ADD_FAILURE() << step << join(fake.misuse());
      fake.clear_failures();
      return k;
    }
  }
}

}  // namespace membridge::testing
