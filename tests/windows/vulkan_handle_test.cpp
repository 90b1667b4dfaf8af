// The Vulkan module's NT-handle plumbing under Wine, against the scripted driver of
// vulkan_fake_driver.cpp: imports pass the caller's NT handle itself and never close it (NT handle
// imports do not transfer ownership), the memory stays reachable after the caller closes its handle,
// timeline semaphores are exported once and duplicated, and the exported payload's DACL grants the
// current user alone (read back with GetSecurityInfo).
#include "section_pattern.hpp"
#include "vulkan_fake_driver.hpp"

#include <membridge/membridge.hpp>  // the umbrella compiles on Windows with the modules built there
#include <membridge/os/current_user_security.hpp>
#include <membridge/vulkan/imported_memory.hpp>
#include <membridge/vulkan/shared_buffer.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>

#include <gtest/gtest.h>

#include <aclapi.h>
#include <sddl.h>

#include <array>
#include <chrono>
#include <cstring>
#include <vector>

namespace {

using membridge::errc;
using membridge::os::borrowed_handle;
using membridge::os::unique_handle;
using membridge::testing::make_section;
using membridge::test::fake_vulkan;
namespace vulkan = membridge::vulkan;

const std::vector<std::string> win32_extensions{VK_KHR_EXTERNAL_MEMORY_WIN32_EXTENSION_NAME,
                                                VK_KHR_EXTERNAL_SEMAPHORE_WIN32_EXTENSION_NAME};

bool is_open(HANDLE h) {
  DWORD flags = 0;
  return ::GetHandleInformation(h, &flags) != 0;
}

/// This file's patterns (make_section puts one in a section, as an exporter's NT handle names one).
membridge::testing::section_pattern fresh_pattern(unsigned seed) { return membridge::testing::make_pattern(seed, 31U, 7U, 1U); }

class windows_vulkan : public ::testing::Test {
 protected:
  void SetUp() override {
    context_ = membridge::test::adopt_fake_win32_device();
    ASSERT_TRUE(context_.valid());
  }
  void TearDown() override {
    context_ = vulkan::device_context();
    membridge::test::expect_fake_vulkan_clean();
  }
  vulkan::device_context context_;
};

TEST_F(windows_vulkan, the_win32_extensions_are_required_and_reported) {
  EXPECT_EQ(vulkan::required_device_extensions(), win32_extensions);
  const auto& caps = context_.capabilities();
  EXPECT_TRUE(caps.external_memory);
  EXPECT_TRUE(caps.external_semaphore);
  EXPECT_FALSE(caps.external_memory_fd) << "the fd extension is not enabled on Windows";
  EXPECT_TRUE(context_.missing_extensions().empty());
  EXPECT_EQ(context_.uuid().bytes[0], 0x10) << "fake CUDA device 0's";
  EXPECT_EQ(context_.uuid().bytes[15], 0x1F);

  auto fd_only = vulkan::device_context::adopt(membridge::test::fake_adopt_info(
      {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME}));
  ASSERT_FALSE(fd_only);
  EXPECT_EQ(fd_only.error().code(), errc::unsupported);
  EXPECT_NE(fd_only.error().message().find(VK_KHR_EXTERNAL_MEMORY_WIN32_EXTENSION_NAME), std::string::npos)
      << fd_only.error().message();
}

TEST_F(windows_vulkan, memory_import_passes_the_nt_handle_and_leaves_it_to_the_caller) {
  const auto pattern = fresh_pattern(3);
  unique_handle section = make_section(pattern);
  ASSERT_TRUE(section.valid());
  vulkan::memory_import_info info;
  info.size = 65536;
  info.memory_type_bits = 0x3;
  auto memory = vulkan::imported_memory::import(context_, section.borrow(), info);
  ASSERT_TRUE(memory) << memory.error().message();

  const auto& imports = fake_vulkan().memory_imports;
  ASSERT_EQ(imports.size(), 1U);
  EXPECT_EQ(imports[0].handle, section.get()) << "the caller's handle itself, not a duplicate";
  EXPECT_TRUE(imports[0].handle_was_open);
  EXPECT_EQ(imports[0].handle_type, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32_BIT);
  EXPECT_FALSE(imports[0].named);
  EXPECT_EQ(imports[0].size, 65536U);
  EXPECT_EQ(imports[0].memory_type, 1U) << "the device-local type without host visibility";
  EXPECT_EQ(memory->memory_type(), 1U);
  ASSERT_EQ(imports[0].first_bytes.size(), pattern.size());
  EXPECT_TRUE(std::equal(pattern.begin(), pattern.end(), imports[0].first_bytes.begin())) << "the same payload";

  // The import did not take the handle: it is still open, and closing it is the caller's job.
  EXPECT_TRUE(is_open(section.get()));
  const HANDLE raw = section.release();
  EXPECT_NE(::CloseHandle(raw), 0) << "the caller closes its handle exactly once";
  // The memory lives on through the driver's own reference.
  ASSERT_EQ(fake_vulkan().driver_references.size(), 1U);
  void* view = ::MapViewOfFile(fake_vulkan().driver_references[0], FILE_MAP_READ, 0, 0, pattern.size());
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(std::memcmp(view, pattern.data(), pattern.size()), 0);
  ::UnmapViewOfFile(view);
  EXPECT_EQ(fake_vulkan().live_memory, 1);
  *memory = vulkan::imported_memory();
  EXPECT_EQ(fake_vulkan().live_memory, 0);
}

TEST_F(windows_vulkan, a_refused_import_leaves_the_handle_open) {
  unique_handle section = make_section(fresh_pattern(5));
  ASSERT_TRUE(section.valid());
  fake_vulkan().allocate_result = VK_ERROR_INVALID_EXTERNAL_HANDLE;
  vulkan::memory_import_info info;
  info.size = 65536;
  const auto memory = vulkan::imported_memory::import(context_, section.borrow(), info);
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().code(), errc::invalid_argument);
  EXPECT_NE(memory.error().message().find("opaque NT handle"), std::string::npos) << memory.error().message();
  EXPECT_TRUE(is_open(section.get())) << "a failed import closes nothing of the caller's";
  EXPECT_EQ(fake_vulkan().live_memory, 0);

  const auto none = vulkan::imported_memory::import(context_, borrowed_handle(INVALID_HANDLE_VALUE), info);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::invalid_argument);
}

TEST_F(windows_vulkan, shared_buffer_creates_a_win32_external_buffer_and_binds_the_import) {
  const auto pattern = fresh_pattern(9);
  unique_handle section = make_section(pattern);
  ASSERT_TRUE(section.valid());
  vulkan::buffer_import_info info;
  info.allocation_size = 65536;
  info.size = 4096;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  auto buffer = vulkan::shared_buffer::import(context_, section.borrow(), info);
  ASSERT_TRUE(buffer) << buffer.error().message();
  EXPECT_EQ(fake_vulkan().buffer_handle_types, static_cast<VkExternalMemoryHandleTypeFlags>(
                                                   VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32_BIT));
  EXPECT_TRUE(fake_vulkan().buffer_bound);
  ASSERT_EQ(fake_vulkan().memory_imports.size(), 1U);
  EXPECT_EQ(fake_vulkan().memory_imports[0].handle, section.get());
  EXPECT_TRUE(std::equal(pattern.begin(), pattern.end(), fake_vulkan().memory_imports[0].first_bytes.begin()));
  EXPECT_TRUE(is_open(section.get()));
  EXPECT_EQ(fake_vulkan().live_buffers, 1);
  *buffer = vulkan::shared_buffer();
  EXPECT_EQ(fake_vulkan().live_buffers, 0);
  EXPECT_EQ(fake_vulkan().live_memory, 0);
}

TEST_F(windows_vulkan, semaphore_import_passes_the_nt_handle_and_leaves_it_to_the_caller) {
  // An exporter's payload (another process's or API's semaphore) at value 3.
  unique_handle payload(membridge::testing::create_timeline_payload(nullptr, 3));
  ASSERT_TRUE(payload.valid());
  auto semaphore = vulkan::timeline_semaphore::import(context_, payload.borrow());
  ASSERT_TRUE(semaphore) << semaphore.error().message();
  ASSERT_EQ(fake_vulkan().semaphore_imports.size(), 1U);
  EXPECT_EQ(fake_vulkan().semaphore_imports[0], payload.get());
  EXPECT_TRUE(fake_vulkan().semaphore_import_handle_was_open);
  EXPECT_EQ(fake_vulkan().semaphore_import_type, VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32_BIT);
  EXPECT_FALSE(fake_vulkan().export_info_seen) << "an imported semaphore is not made exportable";
  // One object: the value the exporter had, a signal through the import seen by the exporter.
  const auto value = semaphore->value();
  ASSERT_TRUE(value) << value.error().message();
  EXPECT_EQ(*value, 3U);
  ASSERT_TRUE(semaphore->signal(7));
  auto* exporter = membridge::testing::map_timeline_payload(payload.get());
  ASSERT_NE(exporter, nullptr);
  EXPECT_EQ(membridge::testing::load_timeline_value(exporter), 7U);
  membridge::testing::unmap_timeline_payload(exporter);
  EXPECT_NE(::CloseHandle(payload.release()), 0) << "still the caller's to close";
  EXPECT_EQ(fake_vulkan().live_semaphores, 1);
  EXPECT_TRUE(semaphore->wait(7, std::chrono::milliseconds(10))) << "the driver's reference keeps the payload";
}

TEST_F(windows_vulkan, a_semaphore_import_of_a_handle_that_names_no_semaphore_fails_and_leaves_nothing) {
  unique_handle event(::CreateEventW(nullptr, TRUE, FALSE, nullptr));
  ASSERT_TRUE(event.valid());
  const auto semaphore = vulkan::timeline_semaphore::import(context_, event.borrow());
  ASSERT_FALSE(semaphore);
  EXPECT_NE(semaphore.error().message().find("vkImportSemaphoreWin32HandleKHR"), std::string::npos)
      << semaphore.error().message();
  EXPECT_TRUE(is_open(event.get())) << "the caller's handle is left alone";
  EXPECT_EQ(fake_vulkan().live_semaphores, 0) << "the semaphore made for the import is destroyed";
}

// The DACL of `object`: one ACE, allowing the current user; the descriptor is protected.
void expect_user_only(HANDLE object) {
  PACL dacl = nullptr;
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  ASSERT_EQ(::GetSecurityInfo(object, SE_KERNEL_OBJECT, DACL_SECURITY_INFORMATION, nullptr, nullptr, &dacl, nullptr,
                              &descriptor),
            static_cast<DWORD>(ERROR_SUCCESS));
  ASSERT_NE(dacl, nullptr) << "a DACL is set (a null DACL would grant everyone)";
  EXPECT_EQ(dacl->AceCount, 1);
  void* ace = nullptr;
  ASSERT_NE(::GetAce(dacl, 0, &ace), 0);
  auto* allowed = static_cast<ACCESS_ALLOWED_ACE*>(ace);
  EXPECT_EQ(allowed->Header.AceType, ACCESS_ALLOWED_ACE_TYPE);
  // GENERIC_ALL, or what the object type maps it to (SECTION_ALL_ACCESS for the fake's payload).
  EXPECT_TRUE(allowed->Mask == GENERIC_ALL || (allowed->Mask & SECTION_ALL_ACCESS) == SECTION_ALL_ACCESS) << allowed->Mask;
  LPSTR ace_sid = nullptr;
  ASSERT_NE(::ConvertSidToStringSidA(reinterpret_cast<PSID>(&allowed->SidStart), &ace_sid), 0);
  const auto user = membridge::os::current_user_security::create();
  ASSERT_TRUE(user) << user.error().message();
  EXPECT_EQ(std::string(ace_sid), user->user_sid());
  EXPECT_NE(std::string(ace_sid), "S-1-1-0") << "never Everyone";
  ::LocalFree(ace_sid);
  SECURITY_DESCRIPTOR_CONTROL control = 0;
  DWORD revision = 0;
  ASSERT_NE(::GetSecurityDescriptorControl(descriptor, &control, &revision), 0);
  EXPECT_NE(control & SE_DACL_PROTECTED, 0) << "no inherited ACEs";
  ::LocalFree(descriptor);
}

TEST_F(windows_vulkan, exported_semaphores_grant_the_current_user_only_and_export_once) {
  auto semaphore = vulkan::timeline_semaphore::create(context_, 5, true);
  ASSERT_TRUE(semaphore) << semaphore.error().message();
  const auto& f = fake_vulkan();
  EXPECT_TRUE(f.export_info_seen);
  EXPECT_EQ(f.export_handle_types, static_cast<VkExternalSemaphoreHandleTypeFlags>(
                                       VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32_BIT));
  EXPECT_TRUE(f.win32_export_info_seen);
  EXPECT_TRUE(f.export_attributes_given) << "a security descriptor, not the default one";
  EXPECT_EQ(f.export_access, 0x80000001UL) << "DXGI_SHARED_RESOURCE_READ | DXGI_SHARED_RESOURCE_WRITE";
  EXPECT_FALSE(f.export_named);
  ASSERT_NE(f.semaphore_payload, nullptr);

  auto first = semaphore->export_handle();
  ASSERT_TRUE(first) << first.error().message();
  auto second = semaphore->export_handle();
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(f.get_win32_handle_calls, 1) << "Vulkan allows one NT-handle export per semaphore";
  EXPECT_NE(first->get(), second->get());
  auto* through_first = membridge::testing::map_timeline_payload(first->get());
  auto* through_second = membridge::testing::map_timeline_payload(second->get());
  ASSERT_NE(through_first, nullptr);
  ASSERT_NE(through_second, nullptr);
  EXPECT_EQ(membridge::testing::load_timeline_value(through_first), 5U) << "the initial value";
  ASSERT_TRUE(semaphore->signal(9));
  EXPECT_EQ(membridge::testing::load_timeline_value(through_second), 9U) << "both name the one payload";
  membridge::testing::unmap_timeline_payload(through_first);
  membridge::testing::unmap_timeline_payload(through_second);
  expect_user_only(first->get());
  expect_user_only(second->get());

  // Handles given out outlive the semaphore object.
  const HANDLE kept = first->get();
  *semaphore = vulkan::timeline_semaphore();
  EXPECT_TRUE(is_open(kept));
  EXPECT_EQ(f.live_semaphores, 0);
}

TEST_F(windows_vulkan, a_semaphore_made_without_exportable_refuses_to_export) {
  auto semaphore = vulkan::timeline_semaphore::create(context_, 0, false);
  ASSERT_TRUE(semaphore) << semaphore.error().message();
  EXPECT_FALSE(fake_vulkan().export_info_seen);
  const auto handle = semaphore->export_handle();
  ASSERT_FALSE(handle);
  EXPECT_EQ(handle.error().code(), errc::unsupported);
  EXPECT_EQ(fake_vulkan().get_win32_handle_calls, 0);
}

}  // namespace
