#include "fake_cuda_driver.hpp"

#include <membridge/cuda/device.hpp>
#include <membridge/cuda/driver.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

using membridge::errc;
using membridge::cuda::driver;

TEST(driver_loading, a_missing_library_is_driver_unavailable_and_says_where_it_comes_from) {
  const auto drv = driver::load("libcuda-membridge-missing.so.1");
  ASSERT_FALSE(drv);
  EXPECT_EQ(drv.error().code(), errc::driver_unavailable);
  const std::string m = drv.error().message();
  EXPECT_NE(m.find("libcuda-membridge-missing.so.1"), std::string::npos) << m;
  EXPECT_NE(m.find("NVIDIA driver"), std::string::npos) << m;
}

TEST(driver_loading, a_library_without_cuda_symbols_is_driver_unavailable) {
  const auto drv = driver::load("libm.so.6");
  ASSERT_FALSE(drv);
  EXPECT_EQ(drv.error().code(), errc::driver_unavailable);
  EXPECT_NE(drv.error().message().find("cuInit"), std::string::npos) << drv.error().message();
}

#ifdef MEMBRIDGE_CUDA_STUB_LIBRARY
TEST(driver_loading, the_toolkit_stub_is_refused_at_cuinit) {
  const auto drv = driver::load(MEMBRIDGE_CUDA_STUB_LIBRARY);
  ASSERT_FALSE(drv);
  EXPECT_EQ(drv.error().code(), errc::driver_unavailable);
  EXPECT_EQ(drv.error().call(), "cuInit");
  EXPECT_EQ(drv.error().native_name(), "CUDA_ERROR_STUB_LIBRARY") << drv.error().message();
}
#endif

// On a machine without the NVIDIA driver (CI) the default load fails cleanly; on a GPU machine it
// succeeds. Either way no crash and a usable answer.
TEST(driver_loading, the_default_load_either_works_or_reports_driver_unavailable) {
  const auto drv = driver::load();
  if (drv) {
    EXPECT_GE((*drv)->version(), 12000);
    EXPECT_EQ((*drv)->library_name(), "libcuda.so.1");
    EXPECT_EQ((*drv)->error_name(CUDA_ERROR_OUT_OF_MEMORY), "CUDA_ERROR_OUT_OF_MEMORY");
  } else {
    EXPECT_EQ(drv.error().code(), errc::driver_unavailable);
    const auto count = membridge::cuda::device::count();
    ASSERT_FALSE(count);
    EXPECT_EQ(count.error().code(), errc::driver_unavailable);
    const auto dev = membridge::cuda::device::open(0);
    ASSERT_FALSE(dev);
    EXPECT_EQ(dev.error().code(), errc::driver_unavailable);
  }
}

TEST(driver_from_table, a_table_with_a_hole_names_the_missing_entry) {
  auto table = membridge::testing::fake_cuda::table();
  table.cuMemMap = nullptr;
  const auto drv = driver::from_table(table, 13000);
  ASSERT_FALSE(drv);
  EXPECT_EQ(drv.error().code(), errc::invalid_argument);
  EXPECT_NE(drv.error().message().find("cuMemMap"), std::string::npos) << drv.error().message();
}

TEST(driver_from_table, a_complete_table_reports_its_version_and_names_errors) {
  const membridge::testing::fake_cuda fake;
  const auto drv = fake.driver();
  EXPECT_EQ(drv->version(), 13000);
  EXPECT_TRUE(drv->library_name().empty());
  EXPECT_EQ(drv->error_name(CUDA_ERROR_OUT_OF_MEMORY), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(drv->error_name(static_cast<CUresult>(998)), "CUresult 998");
  const auto e = drv->make_error(CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate", "allocating 2 GiB");
  EXPECT_EQ(e.code(), errc::out_of_memory);
  EXPECT_EQ(e.source(), membridge::error_source::cuda);
  EXPECT_NE(e.message().find("cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY (2): allocating 2 GiB"), std::string::npos)
      << e.message();
}

TEST(driver_errors, cuda_results_map_to_categories) {
  using membridge::cuda::category_of;
  EXPECT_EQ(category_of(CUDA_ERROR_OUT_OF_MEMORY), errc::out_of_memory);
  EXPECT_EQ(category_of(CUDA_ERROR_INVALID_VALUE), errc::invalid_argument);
  EXPECT_EQ(category_of(CUDA_ERROR_NOT_SUPPORTED), errc::unsupported);
  EXPECT_EQ(category_of(CUDA_ERROR_NO_DEVICE), errc::driver_unavailable);
  EXPECT_EQ(category_of(CUDA_ERROR_STUB_LIBRARY), errc::driver_unavailable);
  EXPECT_EQ(category_of(CUDA_ERROR_ILLEGAL_ADDRESS), errc::device_lost);
  EXPECT_EQ(category_of(CUDA_ERROR_LAUNCH_TIMEOUT), errc::timeout);
  EXPECT_EQ(category_of(CUDA_ERROR_OPERATING_SYSTEM), errc::os_error);
  EXPECT_EQ(category_of(CUDA_ERROR_UNKNOWN), errc::internal);
}

}  // namespace
