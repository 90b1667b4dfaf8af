#include "fake_cuda_driver.hpp"

#include <membridge/cuda/device.hpp>
#include <membridge/cuda/driver.hpp>
#include <membridge/os/dynamic_library.hpp>

#include <gtest/gtest.h>

#include <initializer_list>
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
#if defined(_WIN32)
  const auto drv = driver::load("kernel32.dll");
#else
  const auto drv = driver::load("libm.so.6");
#endif
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
  // The message says in plain words what the stub is and where the real library comes from.
  const std::string m = drv.error().message();
  EXPECT_NE(m.find("stub libcuda.so (from lib64/stubs)"), std::string::npos) << m;
  EXPECT_NE(m.find("the real libcuda.so.1 comes with the NVIDIA driver"), std::string::npos) << m;
}
#endif

// On a machine without the NVIDIA driver (CI) the default load fails cleanly; on a GPU machine it
// succeeds. Either way no crash and a usable answer.
TEST(driver_loading, the_default_load_either_works_or_reports_driver_unavailable) {
  const auto drv = driver::load();
  if (drv) {
    EXPECT_GE((*drv)->version(), 12000);
#if defined(_WIN32)
    EXPECT_EQ((*drv)->library_name(), "nvcuda.dll");
#else
    EXPECT_EQ((*drv)->library_name(), "libcuda.so.1");
#endif
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

// ------------------------------------------------------------------------------------------------
// driver::load() through a stand-in libcuda.so (tests/support/fake_libcuda.cpp): the dlopen,
// cuInit, version check and cuGetProcAddress path, with the ABI version of every entry checked.
namespace {

class fake_libcuda_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto lib = membridge::os::dynamic_library::open(MEMBRIDGE_FAKE_LIBCUDA);
    ASSERT_TRUE(lib) << lib.error().message();
    lib_ = std::move(lib).value();
    control<void (*)()>("fake_libcuda_reset")();
  }

  template <class Fn>
  Fn control(const char* name) {
    auto address = lib_.symbol(name);
    EXPECT_TRUE(address) << name;
    return reinterpret_cast<Fn>(address.value_or(nullptr));
  }
  int requested(const char* symbol) { return control<int (*)(const char*)>("fake_libcuda_requested_version")(symbol); }

  /// One driver entry and the ABI version cuGetProcAddress must have been asked for it at.
  struct entry_version {
    const char* symbol;
    int version;
  };
  void expect_requested_at(std::initializer_list<entry_version> entries) {
    for (const entry_version& e : entries) {
      EXPECT_EQ(requested(e.symbol), e.version) << e.symbol;
    }
  }

  /// driver::load of the stand-in whose cuInit answers `rc` (named `rc_name`): it must fail as
  /// driver_unavailable from cuInit naming that code. Returns the error's message ("" if it loaded).
  std::string load_with_failing_init(int rc, const char* rc_name) {
    control<void (*)(int)>("fake_libcuda_set_init_result")(rc);
    const auto drv = driver::load(MEMBRIDGE_FAKE_LIBCUDA);
    EXPECT_FALSE(drv);
    if (drv) return {};
    EXPECT_EQ(drv.error().code(), errc::driver_unavailable);
    EXPECT_EQ(drv.error().call(), "cuInit");
    EXPECT_EQ(drv.error().native_name(), rc_name);
    return drv.error().message();
  }

  membridge::os::dynamic_library lib_;
};

TEST_F(fake_libcuda_test, load_fills_every_entry_at_the_abi_version_its_type_names) {
  auto drv = driver::load(MEMBRIDGE_FAKE_LIBCUDA);
  ASSERT_TRUE(drv) << drv.error().message();
  EXPECT_EQ((*drv)->version(), 13000);
  EXPECT_EQ((*drv)->library_name(), MEMBRIDGE_FAKE_LIBCUDA);
  // One request per entry of the table (every member is one function pointer).
  EXPECT_EQ(control<int (*)()>("fake_libcuda_requested_count")(),
            static_cast<int>(sizeof(membridge::cuda::driver_api) / sizeof(void (*)())));
  expect_requested_at({
      {"cuWaitExternalSemaphoresAsync", 10000},
      {"cuImportExternalMemory", 10000},
      {"cuExternalMemoryGetMappedMipmappedArray", 10000},
      {"cuMipmappedArrayGetLevel", 5000},
      {"cuSurfObjectCreate", 5000},
      {"cuSurfObjectDestroy", 5000},
      {"cuMemGetAllocationPropertiesFromHandle", 10020},
      {"cuDeviceCanAccessPeer", 4000},
      {"cuDeviceGetP2PAttribute", 8000},
      // The entries whose ABI changed over time are asked for at the version driver_api's types name.
      {"cuCtxSynchronize", 2000},  // CUDA 13's form takes a context parameter
      {"cuMemGetInfo", 3020},
      {"cuDeviceTotalMem", 3020},
      {"cuCtxPushCurrent", 4000},
      {"cuStreamDestroy", 4000},  // cuStreamDestroy_v2
      {"cuStreamBeginCapture", 10010},  // the form with a capture mode
      {"cuGraphInstantiateWithFlags", 11040},
      {"cuGraphExecExternalSemaphoresWaitNodeSetParams", 11020},
      {"cuCtxPopCurrent", 4000},
      {"cuDevicePrimaryCtxRelease", 11000},
      {"cuDeviceGetUuid", 11040},
      {"cuMemCreate", 10020},
      {"cuEventDestroy", 4000},  // cuEventDestroy_v2
      {"cuEventRecord", 2000},  // not the per-thread-stream form
      {"cuStreamWaitEvent", 3020},
      {"cuMemcpyDtoDAsync", 3020},  // cuMemcpyDtoDAsync_v2
      {"cuMemcpyHtoDAsync", 3020},
      {"cuMemHostAlloc", 2020},
  });
  // Calls reach the functions of that ABI.
  int n = 0;
  ASSERT_EQ((*drv)->api().cuDeviceGetCount(&n), CUDA_SUCCESS);
  EXPECT_EQ(n, 3);
  ASSERT_EQ((*drv)->api().cuCtxSynchronize(), CUDA_SUCCESS);
  auto calls = control<int (*)(int)>("fake_libcuda_synchronize_calls");
  EXPECT_EQ(calls(2000), 1);
  EXPECT_EQ(calls(13000), 0);
  EXPECT_EQ(*membridge::cuda::device::count(*drv), 3);
}

TEST_F(fake_libcuda_test, a_failing_cuinit_is_named) {
  (void)load_with_failing_init(CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE");
}

TEST_F(fake_libcuda_test, the_stub_library_answer_carries_a_plain_words_hint) {
  const std::string m = load_with_failing_init(CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY");
  ASSERT_FALSE(m.empty());
  EXPECT_NE(m.find("stub libcuda.so (from lib64/stubs), which only satisfies the linker"), std::string::npos) << m;
  EXPECT_NE(m.find("the real libcuda.so.1 comes with the NVIDIA driver"), std::string::npos) << m;
  EXPECT_NE(m.find("LD_LIBRARY_PATH"), std::string::npos) << m;
}

TEST_F(fake_libcuda_test, other_cuinit_failures_carry_no_stub_hint) {
  const std::string m = load_with_failing_init(CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE");
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.find("stub"), std::string::npos) << m;
}

TEST_F(fake_libcuda_test, a_driver_older_than_cuda_12_is_refused) {
  control<void (*)(int)>("fake_libcuda_set_driver_version")(11080);
  const auto drv = driver::load(MEMBRIDGE_FAKE_LIBCUDA);
  ASSERT_FALSE(drv);
  EXPECT_EQ(drv.error().code(), errc::driver_unavailable);
  EXPECT_NE(drv.error().message().find("supports CUDA 11080; membridge needs a driver for CUDA 12.0 or newer"),
            std::string::npos)
      << drv.error().message();
}

TEST_F(fake_libcuda_test, a_missing_or_too_new_function_names_the_function) {
  auto refuse = control<void (*)(const char*, int)>("fake_libcuda_refuse");
  refuse("cuMemMap", CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  auto missing = driver::load(MEMBRIDGE_FAKE_LIBCUDA);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), errc::driver_unavailable);
  EXPECT_NE(missing.error().message().find("looking up cuMemMap: the driver does not provide it"), std::string::npos)
      << missing.error().message();
  control<void (*)()>("fake_libcuda_reset")();
  refuse("cuMemCreate", CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  auto old = driver::load(MEMBRIDGE_FAKE_LIBCUDA);
  ASSERT_FALSE(old);
  EXPECT_NE(old.error().message().find("looking up cuMemCreate: the driver (CUDA 13000) is older than this function needs"),
            std::string::npos)
      << old.error().message();
}

}  // namespace
