// external_memory, mapped_array and surface_object on the scripted driver: the import takes a
// duplicate of the caller's fd, failures at every driver call leak nothing, the driver objects go in
// the safe order (surfaces, arrays, import) whatever order the C++ objects go in, and moves.
#include "fake_driver_test.hpp"
#include "fd_leak_listener.hpp"
#include "log_capture.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/external_memory.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::array_format;
using membridge::cuda::external_memory;
using membridge::cuda::mapped_array;
using membridge::cuda::surface_object;
using membridge::cuda::vmm_allocation;
namespace os = membridge::os;

constexpr array_format rgba8_1024{CU_AD_FORMAT_UNSIGNED_INT8, 4, 1024, 1024};  // 4 MiB

class external_memory_test : public membridge::testing::fake_driver_test {
 protected:
  void SetUp() override {
    dev_ = open_device();
    ASSERT_TRUE(dev_.valid());
    auto memory = vmm_allocation::create(dev_, 4_MiB);
    ASSERT_TRUE(memory) << memory.error().message();
    memory_ = std::move(memory).value();
    auto fd = memory_.export_fd();
    ASSERT_TRUE(fd) << fd.error().message();
    fd_ = std::move(fd).value();
  }

  void TearDown() override {
    // Drop the test's objects (and its share of the primary context) before the leak check.
    fd_ = os::unique_fd();
    memory_ = vmm_allocation();
    dev_ = {};
    fake_driver_test::TearDown();
  }

  /// An import of fd_ (4 MiB), an RGBA8 1024 x 1024 array mapped from it and a surface on the array.
  struct surface_chain {
    external_memory imported;
    mapped_array array;
    surface_object surface;
  };

  /// Makes the three objects of a surface_chain in `out`; fails the test (fatally) when one cannot be
  /// made. The caller returns when HasFatalFailure().
  void make_surface_chain(surface_chain& out) {
    auto imported = external_memory::import(dev_, fd_, 4_MiB);
    ASSERT_TRUE(imported) << imported.error().message();
    auto array = imported->map_array(rgba8_1024);
    ASSERT_TRUE(array) << array.error().message();
    auto surface = array->make_surface();
    ASSERT_TRUE(surface) << surface.error().message();
    out.imported = std::move(imported).value();
    out.array = std::move(array).value();
    out.surface = std::move(surface).value();
  }

  static std::size_t count(const std::vector<std::string>& calls, const std::string& name) {
    return static_cast<std::size_t>(std::count(calls.begin(), calls.end(), name));
  }
  bool fd_open(int fd) const { return ::fcntl(fd, F_GETFD) != -1; }

  membridge::cuda::device dev_;
  vmm_allocation memory_;
  os::unique_fd fd_;
};

TEST_F(external_memory_test, import_gives_cuda_a_duplicate_and_keeps_the_callers_fd_open) {
  const membridge::testing::log_capture logs;
  const auto fds_before = membridge::testing::open_fds();
  const std::size_t from = fake_.calls().size();
  {
    auto imported = external_memory::import(dev_, fd_, 4_MiB);
    ASSERT_TRUE(imported) << imported.error().message();
    EXPECT_TRUE(imported->valid());
    EXPECT_NE(imported->native(), nullptr);
    EXPECT_EQ(imported->size(), 4_MiB);
    EXPECT_FALSE(imported->dedicated());
    // CUDA took (and here closed) the duplicate; membridge closed nothing else and the caller's fd is open.
    EXPECT_EQ(membridge::testing::open_fds(), fds_before);
    EXPECT_TRUE(fd_open(fd_.get()));
    ASSERT_EQ(fake_.external_memories_.size(), 1U);
    EXPECT_EQ(fake_.external_memories_.begin()->second.size, 4_MiB);
    EXPECT_FALSE(fake_.external_memories_.begin()->second.dedicated);
  }
  EXPECT_TRUE(fake_.external_memories_.empty());
  EXPECT_TRUE(contains_in_order(calls_since(from), {"cuImportExternalMemory", "cuDestroyExternalMemory"}));
  EXPECT_TRUE(fd_open(fd_.get()));
  EXPECT_TRUE(logs.lines().empty()) << logs.lines().front();  // no double close, no failed teardown
}

TEST_F(external_memory_test, a_dedicated_import_says_so_to_the_driver) {
  auto imported = external_memory::import(dev_, fd_, 4_MiB, true);
  ASSERT_TRUE(imported) << imported.error().message();
  EXPECT_TRUE(imported->dedicated());
  ASSERT_EQ(fake_.external_memories_.size(), 1U);
  EXPECT_TRUE(fake_.external_memories_.begin()->second.dedicated);
}

TEST_F(external_memory_test, the_import_keeps_the_memory_alive_after_the_exporter_releases_it) {
  auto imported = external_memory::import(dev_, fd_, 4_MiB);
  ASSERT_TRUE(imported);
  memory_.reset();
  EXPECT_EQ(fake_.state().free_memory, 80_GiB - 4_MiB);
  imported->reset();
  EXPECT_FALSE(imported->valid());
  EXPECT_EQ(fake_.state().free_memory, 80_GiB);
}

TEST_F(external_memory_test, bad_arguments_are_refused_before_the_driver_is_called) {
  const std::size_t from = fake_.calls().size();
  EXPECT_EQ(external_memory::import({}, fd_, 4_MiB).error().code(), errc::invalid_argument);
  EXPECT_EQ(external_memory::import(dev_, os::borrowed_fd{}, 4_MiB).error().code(), errc::invalid_argument);
  EXPECT_EQ(external_memory::import(dev_, fd_, 0).error().code(), errc::invalid_argument);
  EXPECT_EQ(count(calls_since(from), "cuImportExternalMemory"), 0U);
  // A closed fd fails at the duplicate, as invalid_argument (EBADF).
  int closed = ::dup(fd_.get());
  ASSERT_GE(closed, 0);
  ::close(closed);
  const auto bad = external_memory::import(dev_, os::borrowed_fd::from_native(closed), 4_MiB);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), errc::invalid_argument);
  EXPECT_EQ(count(calls_since(from), "cuImportExternalMemory"), 0U);
  EXPECT_TRUE(fake_.external_memories_.empty());
}

TEST_F(external_memory_test, an_fd_cuda_cannot_import_is_invalid_argument_and_the_duplicate_is_closed) {
  auto foreign = os::unique_fd::from_native(::memfd_create("not-cuda", MFD_CLOEXEC));
  ASSERT_TRUE(foreign.valid());
  const auto fds_before = membridge::testing::open_fds();
  const auto imported = external_memory::import(dev_, foreign, 4_MiB);
  ASSERT_FALSE(imported);
  EXPECT_EQ(imported.error().code(), errc::invalid_argument);
  EXPECT_EQ(imported.error().call(), "cuImportExternalMemory");
  EXPECT_EQ(imported.error().native_name(), "CUDA_ERROR_UNKNOWN");
  EXPECT_NE(imported.error().message().find("cannot import this fd"), std::string::npos) << imported.error().message();
  EXPECT_EQ(membridge::testing::open_fds(), fds_before);  // the duplicate was closed, the caller's kept
  // More bytes than the export has: the driver refuses with CUDA_ERROR_INVALID_VALUE.
  const auto too_big = external_memory::import(dev_, fd_, 8_MiB);
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code(), errc::invalid_argument);
  EXPECT_EQ(too_big.error().native_name(), "CUDA_ERROR_INVALID_VALUE");
  EXPECT_NE(too_big.error().message().find("importing a 8 MiB opaque fd as external memory on device 0"),
            std::string::npos)
      << too_big.error().message();
  EXPECT_EQ(membridge::testing::open_fds(), fds_before);
  EXPECT_TRUE(fake_.external_memories_.empty());
}

TEST_F(external_memory_test, a_driver_that_cannot_import_the_fd_is_unsupported_and_names_the_call) {
  fake_.fail_function("cuImportExternalMemory", CUDA_ERROR_NOT_SUPPORTED);
  const auto fds_before = membridge::testing::open_fds();
  const auto imported = external_memory::import(dev_, fd_, 4_MiB);
  ASSERT_FALSE(imported);
  EXPECT_EQ(imported.error().code(), errc::unsupported);
  const std::string m = imported.error().message();
  EXPECT_NE(m.find("cuImportExternalMemory: CUDA_ERROR_NOT_SUPPORTED"), std::string::npos) << m;
  EXPECT_NE(m.find("does not support importing"), std::string::npos) << m;
  EXPECT_EQ(membridge::testing::open_fds(), fds_before);
  EXPECT_TRUE(fd_open(fd_.get()));
}

TEST_F(external_memory_test, map_array_describes_a_one_level_2d_array_and_make_surface_uses_its_level_0) {
  auto imported = external_memory::import(dev_, fd_, 4_MiB);
  ASSERT_TRUE(imported);
  auto array = imported->map_array(rgba8_1024);
  ASSERT_TRUE(array) << array.error().message();
  EXPECT_TRUE(array->valid());
  EXPECT_NE(array->level0(), nullptr);
  EXPECT_NE(array->native(), nullptr);
  EXPECT_EQ(array->format().width, 1024U);
  ASSERT_EQ(fake_.mipmapped_arrays_.size(), 1U);
  const auto& rec = fake_.mipmapped_arrays_.begin()->second;
  EXPECT_EQ(rec.memory, imported->native());
  EXPECT_EQ(rec.level0, array->level0());
  EXPECT_EQ(rec.levels, 1U);
  EXPECT_EQ(rec.offset, 0U);
  EXPECT_EQ(rec.desc.Width, 1024U);
  EXPECT_EQ(rec.desc.Height, 1024U);
  EXPECT_EQ(rec.desc.Depth, 0U);
  EXPECT_EQ(rec.desc.Format, CU_AD_FORMAT_UNSIGNED_INT8);
  EXPECT_EQ(rec.desc.NumChannels, 4U);
  EXPECT_EQ(rec.desc.Flags, static_cast<unsigned>(CUDA_ARRAY3D_SURFACE_LDST));

  auto surface = array->make_surface();
  ASSERT_TRUE(surface) << surface.error().message();
  EXPECT_TRUE(surface->valid());
  ASSERT_EQ(fake_.surfaces_.size(), 1U);
  EXPECT_EQ(fake_.surfaces_.begin()->first, surface->native());
  EXPECT_EQ(fake_.surfaces_.begin()->second, array->level0());
  auto second = array->make_surface();
  ASSERT_TRUE(second);
  EXPECT_NE(second->native(), surface->native());
  EXPECT_EQ(fake_.surfaces_.size(), 2U);

  // Flags follow the format; an offset is passed through.
  auto colour = imported->map_array({.format = CU_AD_FORMAT_UNSIGNED_INT8, .channels = 4, .width = 512,
                                     .height = 512, .offset = 2_MiB, .color_attachment = true});
  ASSERT_TRUE(colour) << colour.error().message();
  const auto& colour_rec = fake_.mipmapped_arrays_.at(colour->native());
  EXPECT_EQ(colour_rec.desc.Flags, static_cast<unsigned>(CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_COLOR_ATTACHMENT));
  EXPECT_EQ(colour_rec.offset, 2_MiB);
}

TEST_F(external_memory_test, map_array_refuses_shapes_that_cannot_fit_without_calling_the_driver) {
  auto imported = external_memory::import(dev_, fd_, 4_MiB);
  ASSERT_TRUE(imported);
  const std::size_t from = fake_.calls().size();
  const auto refused = [&](const array_format& format) {
    const auto r = imported->map_array(format);
    return !r && r.error().code() == errc::invalid_argument;
  };
  EXPECT_TRUE(refused({CU_AD_FORMAT_UNSIGNED_INT8, 4, 0, 1024}));
  EXPECT_TRUE(refused({CU_AD_FORMAT_UNSIGNED_INT8, 4, 1024, 0}));
  EXPECT_TRUE(refused({CU_AD_FORMAT_UNSIGNED_INT8, 3, 1024, 1024}));
  EXPECT_TRUE(refused({CU_AD_FORMAT_UNSIGNED_INT8, 4, 2048, 2048}));           // 16 MiB in 4 MiB
  EXPECT_TRUE(refused({CU_AD_FORMAT_UNSIGNED_INT8, 4, 1024, 1024, 1}));        // 4 MiB at offset 1
  EXPECT_TRUE(refused({CU_AD_FORMAT_UNSIGNED_INT8, 4, 16, 16, 4_MiB}));        // offset at the end
  EXPECT_TRUE(refused({CU_AD_FORMAT_FLOAT, 4, std::size_t{1} << 62, 4}));      // overflows size_t
  EXPECT_EQ(count(calls_since(from), "cuExternalMemoryGetMappedMipmappedArray"), 0U);
  const auto message = imported->map_array({CU_AD_FORMAT_UNSIGNED_INT8, 4, 2048, 2048}).error().message();
  EXPECT_NE(message.find("2048x2048 x 4 CU_AD_FORMAT_UNSIGNED_INT8 at offset 0"), std::string::npos) << message;
  EXPECT_EQ(external_memory{}.map_array(rgba8_1024).error().code(), errc::invalid_argument);
  EXPECT_TRUE(fake_.mipmapped_arrays_.empty());
}

// Issue 18 item 4: the level-0 footprint of every plain format, written out by hand for each case
// (not computed from a bytes-per-channel table, which the library and the scripted driver both
// have: a wrong entry in the library's table must fail here). Each array placed so that it ends
// exactly at the end of the 4 MiB import must map; one byte further it must be refused by the
// library itself, before any driver call.
TEST_F(external_memory_test, map_array_footprints_match_expectations_written_out_per_format) {
  struct footprint_case {
    array_format format;
    std::size_t bytes;  // width * height * channels * bytes per channel, worked out by hand
  };
  const footprint_case cases[] = {
      {{CU_AD_FORMAT_UNSIGNED_INT8, 1, 1024, 1024}, 1048576},
      {{CU_AD_FORMAT_UNSIGNED_INT8, 4, 1920, 540}, 4147200},
      {{CU_AD_FORMAT_SIGNED_INT8, 2, 256, 256}, 131072},
      {{CU_AD_FORMAT_UNSIGNED_INT16, 1, 512, 512}, 524288},
      {{CU_AD_FORMAT_SIGNED_INT16, 4, 256, 128}, 262144},
      {{CU_AD_FORMAT_HALF, 2, 1024, 1024}, 4194304},
      {{CU_AD_FORMAT_HALF, 4, 640, 480}, 2457600},
      {{CU_AD_FORMAT_UNSIGNED_INT32, 1, 1000, 1000}, 4000000},
      {{CU_AD_FORMAT_SIGNED_INT32, 2, 300, 200}, 480000},
      {{CU_AD_FORMAT_FLOAT, 1, 1920, 540}, 4147200},
      {{CU_AD_FORMAT_FLOAT, 4, 512, 512}, 4194304},
  };
  auto imported = external_memory::import(dev_, fd_, 4_MiB);
  ASSERT_TRUE(imported) << imported.error().message();
  for (const footprint_case& c : cases) {
    array_format fits = c.format;
    fits.offset = 4_MiB - c.bytes;
    const std::string name = membridge::cuda::to_string(fits);
    {
      auto mapped = imported->map_array(fits);
      EXPECT_TRUE(mapped) << name << " (" << c.bytes << " bytes) fits the import exactly: "
                          << (mapped ? std::string() : mapped.error().message());
    }
    array_format too_far = c.format;
    too_far.offset = fits.offset + 1;
    const std::size_t from = fake_.calls().size();
    const auto refused = imported->map_array(too_far);
    ASSERT_FALSE(refused) << membridge::cuda::to_string(too_far) << " needs " << c.bytes << " bytes, "
                          << (4_MiB - too_far.offset) << " are left";
    EXPECT_EQ(refused.error().code(), errc::invalid_argument) << refused.error().message();
    EXPECT_EQ(count(calls_since(from), "cuExternalMemoryGetMappedMipmappedArray"), 0U)
        << membridge::cuda::to_string(too_far) << ": the library must refuse it before the driver is called";
  }
  EXPECT_TRUE(fake_.mipmapped_arrays_.empty());
}

TEST_F(external_memory_test, the_drivers_refusals_of_a_mapping_are_categorised) {
  auto imported = external_memory::import(dev_, fd_, 4_MiB);
  ASSERT_TRUE(imported);
  fake_.fail_function("cuExternalMemoryGetMappedMipmappedArray", CUDA_ERROR_NOT_SUPPORTED);
  const auto unsupported = imported->map_array(rgba8_1024);
  ASSERT_FALSE(unsupported);
  EXPECT_EQ(unsupported.error().code(), errc::unsupported);
  EXPECT_EQ(unsupported.error().call(), "cuExternalMemoryGetMappedMipmappedArray");
  EXPECT_NE(unsupported.error().message().find("cannot map this memory as a CUDA array"), std::string::npos)
      << unsupported.error().message();
  // A format the fake does not model (a packed one, unchecked by membridge) is refused by the driver.
  const auto odd = imported->map_array({CU_AD_FORMAT_UNORM_INT_101010_2, 1, 64, 64});
  ASSERT_FALSE(odd);
  EXPECT_EQ(odd.error().code(), errc::invalid_argument);
  EXPECT_EQ(odd.error().native_name(), "CUDA_ERROR_INVALID_VALUE");
  EXPECT_TRUE(fake_.mipmapped_arrays_.empty());
}

TEST_F(external_memory_test, a_surface_needs_an_array_mapped_for_load_store) {
  auto imported = external_memory::import(dev_, fd_, 4_MiB);
  ASSERT_TRUE(imported);
  auto plain = imported->map_array({.format = CU_AD_FORMAT_UNSIGNED_INT8, .channels = 4, .width = 1024,
                                    .height = 1024, .surface_load_store = false});
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_EQ(fake_.mipmapped_arrays_.at(plain->native()).desc.Flags, 0U);
  const std::size_t from = fake_.calls().size();
  const auto surface = plain->make_surface();
  ASSERT_FALSE(surface);
  EXPECT_EQ(surface.error().code(), errc::invalid_argument);
  EXPECT_NE(surface.error().message().find("without surface_load_store"), std::string::npos);
  EXPECT_EQ(count(calls_since(from), "cuSurfObjectCreate"), 0U);
  EXPECT_EQ(mapped_array{}.make_surface().error().code(), errc::invalid_argument);
}

TEST_F(external_memory_test, a_failure_at_every_driver_call_leaks_nothing) {
  const auto fds_before = membridge::testing::open_fds();
  const auto clean = fake_.state();
  int k = 0;
  for (;; ++k) {
    fake_.fail_nth_call(k, CUDA_ERROR_OUT_OF_MEMORY);
    {
      auto imported = external_memory::import(dev_, fd_, 4_MiB);
      if (imported) {
        auto array = imported->map_array(rgba8_1024);
        if (array) {
          auto surface = array->make_surface();
          if (!fake_.injection_fired()) {
            fake_.clear_failures();  // the pending injection must not hit the teardown
            ASSERT_TRUE(surface) << surface.error().message();
            break;
          }
          ASSERT_FALSE(surface) << "step " << k << " failed but make_surface reported success";
          EXPECT_EQ(surface.error().code(), errc::out_of_memory) << surface.error().message();
        } else {
          ASSERT_TRUE(fake_.injection_fired()) << array.error().message();
          EXPECT_EQ(array.error().code(), errc::out_of_memory) << array.error().message();
        }
      } else {
        ASSERT_TRUE(fake_.injection_fired()) << imported.error().message();
        EXPECT_EQ(imported.error().code(), errc::out_of_memory) << imported.error().message();
      }
    }
    EXPECT_TRUE(fake_.external_memories_.empty()) << "step " << k << " (" << fake_.failed_function() << ")";
    EXPECT_TRUE(fake_.mipmapped_arrays_.empty()) << "step " << k << " (" << fake_.failed_function() << ")";
    EXPECT_TRUE(fake_.surfaces_.empty()) << "step " << k << " (" << fake_.failed_function() << ")";
    EXPECT_EQ(fake_.state(), clean) << "step " << k;
    EXPECT_EQ(membridge::testing::open_fds(), fds_before) << "step " << k << " (" << fake_.failed_function() << ")";
    ASSERT_TRUE(fake_.misuse().empty()) << "step " << k << membridge::testing::join(fake_.misuse());
  }
  fake_.clear_failures();
  // import: get + push context, cuImportExternalMemory; map: context, map, get level; surface: context, create.
  EXPECT_EQ(k, 10) << "the loop did not reach every driver call";
  EXPECT_TRUE(fake_.external_memories_.empty());
  EXPECT_TRUE(fake_.surfaces_.empty());
}

TEST_F(external_memory_test, a_failed_level_lookup_destroys_the_mapped_array) {
  auto imported = external_memory::import(dev_, fd_, 4_MiB);
  ASSERT_TRUE(imported);
  fake_.fail_function("cuMipmappedArrayGetLevel", CUDA_ERROR_INVALID_VALUE);
  const std::size_t from = fake_.calls().size();
  const auto array = imported->map_array(rgba8_1024);
  ASSERT_FALSE(array);
  EXPECT_EQ(array.error().call(), "cuMipmappedArrayGetLevel");
  EXPECT_TRUE(contains_in_order(calls_since(from), {"cuExternalMemoryGetMappedMipmappedArray",
                                                    "cuMipmappedArrayGetLevel", "cuMipmappedArrayDestroy"}));
  EXPECT_TRUE(fake_.mipmapped_arrays_.empty());
  EXPECT_EQ(fake_.external_memories_.size(), 1U);
}

TEST_F(external_memory_test, surfaces_then_arrays_then_the_import_are_destroyed_in_the_usual_order) {
  surface_chain chain;
  make_surface_chain(chain);
  if (HasFatalFailure()) return;
  auto& [imported, array, surface] = chain;
  const std::size_t from = fake_.calls().size();
  surface.reset();
  EXPECT_FALSE(surface.valid());
  EXPECT_TRUE(fake_.surfaces_.empty());
  array.reset();
  EXPECT_TRUE(fake_.mipmapped_arrays_.empty());
  EXPECT_EQ(fake_.external_memories_.size(), 1U);
  imported.reset();
  EXPECT_TRUE(fake_.external_memories_.empty());
  EXPECT_TRUE(contains_in_order(calls_since(from),
                                {"cuSurfObjectDestroy", "cuMipmappedArrayDestroy", "cuDestroyExternalMemory"}));
}

TEST_F(external_memory_test, the_driver_objects_go_in_order_whatever_order_the_wrappers_go_in) {
  surface_chain chain;
  make_surface_chain(chain);
  if (HasFatalFailure()) return;
  auto& [imported, array, surface] = chain;
  const std::size_t from = fake_.calls().size();
  // The import first: the array still views it, so nothing is destroyed yet.
  imported.reset();
  EXPECT_EQ(fake_.external_memories_.size(), 1U);
  EXPECT_TRUE(calls_since(from).empty());
  // Then the array: the surface object still uses it.
  array.reset();
  EXPECT_EQ(fake_.mipmapped_arrays_.size(), 1U);
  EXPECT_TRUE(calls_since(from).empty());
  // The last wrapper takes all three with it, surface first (the fake records any other order as misuse).
  surface.reset();
  EXPECT_TRUE(fake_.surfaces_.empty());
  EXPECT_TRUE(fake_.mipmapped_arrays_.empty());
  EXPECT_TRUE(fake_.external_memories_.empty());
  const auto calls = calls_since(from);
  EXPECT_TRUE(contains_in_order(calls, {"cuSurfObjectDestroy", "cuMipmappedArrayDestroy", "cuDestroyExternalMemory"}));
  EXPECT_EQ(count(calls, "cuSurfObjectDestroy"), 1U);
  EXPECT_EQ(count(calls, "cuMipmappedArrayDestroy"), 1U);
  EXPECT_EQ(count(calls, "cuDestroyExternalMemory"), 1U);
}

TEST_F(external_memory_test, moves_transfer_ownership) {
  auto first = external_memory::import(dev_, fd_, 4_MiB);
  ASSERT_TRUE(first);
  const CUexternalMemory handle = first->native();
  external_memory moved(std::move(*first));
  EXPECT_FALSE(first->valid());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(first->native(), nullptr);
  EXPECT_EQ(first->size(), 0U);
  EXPECT_EQ(moved.native(), handle);
  auto second = external_memory::import(dev_, fd_, 2_MiB);
  ASSERT_TRUE(second);
  EXPECT_EQ(fake_.external_memories_.size(), 2U);
  moved = std::move(*second);  // drops the first import
  EXPECT_EQ(fake_.external_memories_.size(), 1U);
  EXPECT_EQ(fake_.external_memories_.count(handle), 0U);
  EXPECT_EQ(moved.size(), 2_MiB);

  auto array = moved.map_array({CU_AD_FORMAT_UNSIGNED_INT8, 4, 512, 512});
  ASSERT_TRUE(array);
  mapped_array other(std::move(*array));
  EXPECT_FALSE(array->valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(array->level0(), nullptr);
  EXPECT_EQ(array->format().width, 0U);
  EXPECT_TRUE(other.valid());
  auto replacement = moved.map_array({CU_AD_FORMAT_UNSIGNED_INT8, 4, 256, 256});
  ASSERT_TRUE(replacement);
  EXPECT_EQ(fake_.mipmapped_arrays_.size(), 2U);
  other = std::move(*replacement);  // destroys the 512x512 array
  EXPECT_EQ(fake_.mipmapped_arrays_.size(), 1U);
  EXPECT_EQ(other.format().width, 256U);

  auto surface = other.make_surface();
  ASSERT_TRUE(surface);
  const CUsurfObject s = surface->native();
  surface_object held(std::move(*surface));
  EXPECT_FALSE(surface->valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(held.native(), s);
  auto another = other.make_surface();
  ASSERT_TRUE(another);
  EXPECT_EQ(fake_.surfaces_.size(), 2U);
  held = std::move(*another);  // destroys the first surface object
  EXPECT_EQ(fake_.surfaces_.size(), 1U);
  EXPECT_EQ(fake_.surfaces_.count(s), 0U);
  held = surface_object{};
  EXPECT_TRUE(fake_.surfaces_.empty());
}

TEST_F(external_memory_test, teardown_failures_are_logged_not_thrown) {
  membridge::testing::log_capture logs;
  {
    auto imported = external_memory::import(dev_, fd_, 4_MiB);
    ASSERT_TRUE(imported);
    fake_.fail_function("cuDestroyExternalMemory", CUDA_ERROR_INVALID_VALUE);
  }
  ASSERT_EQ(logs.lines().size(), 1U);
  EXPECT_NE(logs.lines()[0].find("cuDestroyExternalMemory: CUDA_ERROR_INVALID_VALUE"), std::string::npos)
      << logs.lines()[0];
  check_leaks_ = false;  // the fake keeps the import whose destruction it refused
}

}  // namespace
