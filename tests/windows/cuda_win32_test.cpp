// The cuda module on Windows (under Wine) with the scripted driver, whose exports are real NT handles
// to section objects (tests/support/fake_cuda_handles_win32.cpp): an exported allocation's object
// grants the current user only; imports never close or take the caller's NT handle (CUDA's rule for
// OPAQUE_WIN32 / TIMELINE_SEMAPHORE_WIN32 and cuMemImportFromShareableHandle); every failure path
// leaves the driver model and the process's handle table as they were (the binary's listener counts
// handles, os_handle_count.hpp).
#include "open_device_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/driver.hpp>
#include <membridge/cuda/external_memory.hpp>
#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/imported_buffer.hpp>
#include <membridge/cuda/vmm_allocation.hpp>
#include <membridge/os/current_user_security.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <gtest/gtest.h>

#include <windows.h>
#include <aclapi.h>
#include <sddl.h>

#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::external_memory;
using membridge::cuda::external_semaphore;
using membridge::cuda::growable_buffer;
using membridge::cuda::handle_type;
using membridge::cuda::imported_buffer;
using membridge::cuda::vmm_allocation;
namespace os = membridge::os;

static_assert(membridge::cuda::platform_handles == handle_type::win32);
static_assert(std::is_same_v<decltype(std::declval<vmm_allocation&>().export_handle()),
                             membridge::result<os::unique_handle>>);

bool is_open(HANDLE h) {
  DWORD flags = 0;
  return ::GetHandleInformation(h, &flags) != 0;
}

bool inheritable(HANDLE h) {
  DWORD flags = 0;
  return ::GetHandleInformation(h, &flags) != 0 && (flags & HANDLE_FLAG_INHERIT) != 0;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// An unnamed auto-reset event: an NT handle of the wrong kind for memory, a stand-in for a
/// semaphore's NT handle in the scripted driver.
os::unique_handle make_event() { return os::unique_handle(::CreateEventA(nullptr, FALSE, FALSE, nullptr)); }

class cuda_win32_test : public membridge::testing::open_device_test {};

TEST_F(cuda_win32_test, an_exported_allocation_grants_the_current_user_only) {
  auto memory = vmm_allocation::create(dev_, 2_MiB);
  ASSERT_TRUE(memory) << memory.error().message();
  EXPECT_EQ(memory->handles(), handle_type::win32);
  auto handle = memory->export_handle();
  ASSERT_TRUE(handle) << handle.error().message();
  ASSERT_TRUE(handle->valid());
  EXPECT_FALSE(inheritable(handle->get())) << "exported handles are not inherited by child processes";

  PACL dacl = nullptr;
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  ASSERT_EQ(::GetSecurityInfo(handle->get(), SE_KERNEL_OBJECT, DACL_SECURITY_INFORMATION, nullptr, nullptr, &dacl,
                              nullptr, &descriptor),
            static_cast<DWORD>(ERROR_SUCCESS));
  ASSERT_NE(dacl, nullptr) << "a null DACL would grant everyone";
  auto security = os::current_user_security::create();
  ASSERT_TRUE(security) << security.error().message();
  PSID user = nullptr;
  ASSERT_NE(::ConvertStringSidToSidA(security->user_sid().c_str(), &user), 0);
  ASSERT_EQ(dacl->AceCount, 1) << "one entry: the current user";
  void* ace = nullptr;
  ASSERT_NE(::GetAce(dacl, 0, &ace), 0);
  const auto* allowed = static_cast<const ACCESS_ALLOWED_ACE*>(ace);
  EXPECT_EQ(allowed->Header.AceType, ACCESS_ALLOWED_ACE_TYPE);
  EXPECT_NE(::EqualSid(const_cast<DWORD*>(&allowed->SidStart), user), 0) << "the entry names the token's user";
  PSID everyone = nullptr;
  ASSERT_NE(::ConvertStringSidToSidA("S-1-1-0", &everyone), 0);
  EXPECT_EQ(::EqualSid(const_cast<DWORD*>(&allowed->SidStart), everyone), 0) << "never Everyone";
  SECURITY_DESCRIPTOR_CONTROL control = 0;
  DWORD revision = 0;
  ASSERT_NE(::GetSecurityDescriptorControl(descriptor, &control, &revision), 0);
  EXPECT_NE(control & SE_DACL_PROTECTED, 0) << "protected: nothing inherited from a parent";
  ::LocalFree(everyone);
  ::LocalFree(user);
  ::LocalFree(descriptor);
  EXPECT_EQ(security->sddl(), "D:P(A;;GA;;;" + security->user_sid() + ")");
}

TEST_F(cuda_win32_test, import_borrows_the_nt_handle_and_shares_the_memory) {
  auto memory = vmm_allocation::create(dev_, 4_MiB);
  ASSERT_TRUE(memory) << memory.error().message();
  auto handle = memory->export_handle();
  ASSERT_TRUE(handle) << handle.error().message();
  const auto exporter_id = fake_.handles_.at(memory->native()).physical_id;
  {
    auto imported = vmm_allocation::import(dev_, *handle, 4_MiB);
    ASSERT_TRUE(imported) << imported.error().message();
    EXPECT_TRUE(is_open(handle->get())) << "cuMemImportFromShareableHandle borrows: the caller's handle stays open";
    EXPECT_EQ(imported->handles(), handle_type::win32);
    EXPECT_EQ(fake_.handles_.at(imported->native()).physical_id, exporter_id) << "the same physical memory";
    memory->reset();
    EXPECT_EQ(fake_.physicals_.count(exporter_id), 1u) << "the import keeps the memory alive";
  }
  EXPECT_TRUE(is_open(handle->get()));
  EXPECT_EQ(fake_.physicals_.count(exporter_id), 0u) << "released with the last handle";
}

TEST_F(cuda_win32_test, importing_what_is_not_an_exported_allocation_is_refused_and_leaves_the_handle) {
  auto event = make_event();
  const auto before = fake_.state();
  auto imported = vmm_allocation::import(dev_, event, 2_MiB);
  ASSERT_FALSE(imported);
  EXPECT_EQ(imported.error().code(), errc::invalid_argument);
  EXPECT_TRUE(contains(imported.error().message(), "the NT handle is not an exported CUDA allocation"))
      << imported.error().message();
  EXPECT_TRUE(is_open(event.get()));
  EXPECT_EQ(fake_.state(), before);
  const auto empty = vmm_allocation::import(dev_, os::borrowed_shareable_handle(), 2_MiB);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code(), errc::invalid_argument);
  EXPECT_TRUE(contains(empty.error().message(), "the NT handle is empty")) << empty.error().message();
}

TEST_F(cuda_win32_test, a_failing_export_or_import_leaks_nothing) {
  auto memory = vmm_allocation::create(dev_, 2_MiB);
  ASSERT_TRUE(memory) << memory.error().message();
  fake_.fail_function("cuMemExportToShareableHandle", CUDA_ERROR_OUT_OF_MEMORY);
  const auto refused = memory->export_handle();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), errc::out_of_memory);
  auto handle = memory->export_handle();
  ASSERT_TRUE(handle) << handle.error().message();
  const auto before = fake_.state();
  fake_.fail_function("cuMemImportFromShareableHandle", CUDA_ERROR_OUT_OF_MEMORY);
  const auto imported = vmm_allocation::import(dev_, *handle, 2_MiB);
  ASSERT_FALSE(imported);
  EXPECT_EQ(imported.error().code(), errc::out_of_memory);
  EXPECT_TRUE(is_open(handle->get()));
  EXPECT_EQ(fake_.state(), before);
}

TEST_F(cuda_win32_test, other_platforms_handle_types_are_unsupported) {
  const auto posix = vmm_allocation::create(dev_, 2_MiB, {.handles = handle_type::posix_fd});
  ASSERT_FALSE(posix);
  EXPECT_EQ(posix.error().code(), errc::unsupported);
  EXPECT_TRUE(contains(posix.error().message(), "use win32")) << posix.error().message();
  auto local = vmm_allocation::create(dev_, 2_MiB, {.handles = handle_type::none});
  ASSERT_TRUE(local) << local.error().message();
  const auto exported = local->export_handle();
  ASSERT_FALSE(exported);
  EXPECT_EQ(exported.error().code(), errc::unsupported);
}

TEST_F(cuda_win32_test, external_memory_from_an_nt_handle_never_takes_the_handle) {
  auto memory = vmm_allocation::create(dev_, 8_MiB);
  ASSERT_TRUE(memory) << memory.error().message();
  auto handle = memory->export_handle();
  ASSERT_TRUE(handle) << handle.error().message();
  const auto before = fake_.state();
  const auto too_big = external_memory::import(dev_, *handle, 16_MiB);
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code(), errc::invalid_argument);
  EXPECT_TRUE(contains(too_big.error().message(), "importing a 16 MiB opaque NT handle as external memory"))
      << too_big.error().message();
  EXPECT_TRUE(is_open(handle->get())) << "a failed import leaves the handle to the caller";
  EXPECT_EQ(fake_.state(), before);

  auto imported = external_memory::import(dev_, *handle, 8_MiB);
  ASSERT_TRUE(imported) << imported.error().message();
  EXPECT_TRUE(is_open(handle->get())) << "CUDA never takes ownership of an NT handle";
  ASSERT_EQ(fake_.external_memories_.size(), 1u);
  EXPECT_EQ(fake_.external_memories_.begin()->second.physical_id, fake_.handles_.at(memory->native()).physical_id);
  handle->reset();  // the caller closes its handle; the import lives on
  memory->reset();
  EXPECT_EQ(fake_.external_memories_.size(), 1u);
  EXPECT_EQ(fake_.physicals_.size(), 1u) << "the import holds the memory";
}

TEST_F(cuda_win32_test, a_timeline_semaphore_nt_handle_stays_the_callers) {
  auto event = make_event();
  fake_.fail_function("cuImportExternalSemaphore", CUDA_ERROR_INVALID_VALUE);
  const auto refused = external_semaphore::import_timeline(dev_, event);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), errc::invalid_argument);
  EXPECT_TRUE(contains(refused.error().message(), "the NT handle is not a timeline semaphore"))
      << refused.error().message();
  EXPECT_TRUE(is_open(event.get()));
  EXPECT_TRUE(fake_.semaphores_.empty());

  auto semaphore = external_semaphore::import_timeline(dev_, event);
  ASSERT_TRUE(semaphore) << semaphore.error().message();
  EXPECT_TRUE(is_open(event.get())) << "CUDA never takes ownership of an NT handle";
  ASSERT_TRUE(semaphore->signal(nullptr, 5));
  ASSERT_TRUE(semaphore->wait(nullptr, 5));
  EXPECT_EQ(fake_.semaphores_.begin()->second, 5u);
  EXPECT_EQ(fake_.waits_, std::vector<std::uint64_t>{5});
  event.reset();
  EXPECT_EQ(fake_.semaphores_.size(), 1u) << "the import outlives the caller's handle";
}

TEST_F(cuda_win32_test, a_growable_buffers_chunks_import_into_an_imported_buffer) {
  auto exporter = growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB});
  ASSERT_TRUE(exporter) << exporter.error().message();
  ASSERT_TRUE(exporter->grow(192_MiB));
  std::vector<membridge::cuda::exported_chunk> chunks;
  for (std::size_t i = 0; i < exporter->chunk_count(); ++i) {
    auto c = exporter->export_chunk(i);
    ASSERT_TRUE(c) << c.error().message();
    chunks.push_back(std::move(c).value());
  }
  auto view = imported_buffer::reserve(dev_, exporter->max_size());
  ASSERT_TRUE(view) << view.error().message();
  std::vector<imported_buffer::chunk_source> sources;
  for (const auto& c : chunks) sources.push_back({c.fd, c.offset, c.size});
  ASSERT_TRUE(view->append_all(sources)) << "appending " << sources.size() << " chunks";
  const auto state = fake_.state();
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_TRUE(is_open(chunks[i].fd.get())) << "the caller's handle stays open";
    const auto mine = state.mappings.find(view->address() + chunks[i].offset);
    const auto theirs = state.mappings.find(exporter->address() + chunks[i].offset);
    ASSERT_NE(mine, state.mappings.end());
    ASSERT_NE(theirs, state.mappings.end());
    EXPECT_EQ(mine->second.physical_id, theirs->second.physical_id) << "chunk " << i << " is the exporter's memory";
    EXPECT_EQ(mine->second.size, chunks[i].size);
  }
  EXPECT_EQ(view->capacity(), exporter->capacity());
}

TEST_F(cuda_win32_test, a_failure_at_every_step_of_an_append_changes_nothing) {
  auto exporter = growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB});
  ASSERT_TRUE(exporter) << exporter.error().message();
  auto chunk = exporter->export_chunk(0);
  ASSERT_TRUE(chunk) << chunk.error().message();
  auto view = imported_buffer::reserve(dev_, exporter->max_size());
  ASSERT_TRUE(view) << view.error().message();
  const auto before = fake_.state();
  int failures = 0;
  for (int n = 0; n < 32; ++n) {
    fake_.fail_nth_call(n);
    const auto appended = view->append(chunk->fd, 0, chunk->size);
    if (!fake_.injection_fired()) {
      fake_.clear_failures();
      ASSERT_TRUE(appended) << appended.error().message();
      break;
    }
    ++failures;
    ASSERT_FALSE(appended) << "call " << n << " failed but the append succeeded";
    EXPECT_EQ(fake_.state(), before) << "after " << fake_.failed_function() << " failed";
    EXPECT_EQ(view->capacity(), 0u);
    EXPECT_TRUE(is_open(chunk->fd.get()));
  }
  EXPECT_GT(failures, 1) << "the append makes several driver calls";
  EXPECT_EQ(view->capacity(), 64_MiB);
}

TEST_F(cuda_win32_test, handles_duplicate_without_inheritance) {
  auto memory = vmm_allocation::create(dev_, 2_MiB);
  ASSERT_TRUE(memory) << memory.error().message();
  auto handle = memory->export_handle();
  ASSERT_TRUE(handle) << handle.error().message();
  const os::borrowed_shareable_handle view = *handle;
  auto copy = view.duplicate();
  ASSERT_TRUE(copy) << copy.error().message();
  EXPECT_NE(copy->get(), handle->get());
  EXPECT_FALSE(inheritable(copy->get()));
  auto imported = vmm_allocation::import(dev_, *copy, 2_MiB);
  ASSERT_TRUE(imported) << imported.error().message() << ": the duplicate names the same allocation";
  const HANDLE raw = copy->get();
  os::unique_handle moved = std::move(copy).value();
  moved.reset();
  EXPECT_FALSE(is_open(raw));
}

TEST(cuda_win32_driver, load_looks_for_nvcuda_dll_and_names_what_is_missing) {
  const auto drv = membridge::cuda::driver::load();
  ASSERT_FALSE(drv) << "Wine has no NVIDIA driver";
  EXPECT_EQ(drv.error().code(), errc::driver_unavailable);
  EXPECT_TRUE(contains(drv.error().message(), "nvcuda.dll")) << drv.error().message();
  EXPECT_TRUE(contains(drv.error().message(), "ERROR_MOD_NOT_FOUND")) << drv.error().message();
}

}  // namespace
