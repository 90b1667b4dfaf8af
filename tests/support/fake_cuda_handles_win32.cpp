// The scripted driver's exports on Windows: an NT handle to a pagefile-backed section (a real kernel
// object) holding the physical id and size, made with the security descriptor the allocation's
// win32HandleMetaData carried at cuMemCreate, so a test can read the DACL back from the exported
// handle. Like the real driver, no import takes ownership of an NT handle: the caller closes it.
#include "fake_cuda_handles.hpp"
#include "fake_timeline_payload.hpp"

#include <windows.h>
#include <sddl.h>
#include <winternl.h>

#include <cstring>

namespace membridge::testing::fake_handles {

namespace {

struct record {
  std::uint64_t magic;
  std::uint64_t id;
  std::uint64_t size;
};
constexpr std::uint64_t export_magic = 0x6d62666b63756461ULL;  // marks sections this driver made

}  // namespace

CUmemAllocationHandleType shareable_type() noexcept { return CU_MEM_HANDLE_TYPE_WIN32; }
CUexternalMemoryHandleType external_memory_type() noexcept { return CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32; }
CUexternalSemaphoreHandleType timeline_semaphore_type() noexcept {
  return CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_WIN32;
}

std::string check_create_metadata(const CUmemAllocationProp& prop, std::string& security) {
  security.clear();
  const bool win32 = (prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_WIN32) != 0;
  if (!win32) {
    if (prop.win32HandleMetaData != nullptr) return "cuMemCreate with win32HandleMetaData but no WIN32 handle type";
    return {};
  }
  if (prop.win32HandleMetaData == nullptr) return "cuMemCreate for WIN32 handles without win32HandleMetaData";
  const auto* attributes = static_cast<const OBJECT_ATTRIBUTES*>(prop.win32HandleMetaData);
  if (attributes->Length != sizeof(OBJECT_ATTRIBUTES) || attributes->SecurityDescriptor == nullptr)
    return "cuMemCreate: win32HandleMetaData is not an OBJECT_ATTRIBUTES with a security descriptor";
  LPSTR text = nullptr;
  if (::ConvertSecurityDescriptorToStringSecurityDescriptorA(attributes->SecurityDescriptor, SDDL_REVISION_1,
                                                             DACL_SECURITY_INFORMATION, &text, nullptr) == 0)
    return "cuMemCreate: win32HandleMetaData's security descriptor is not readable";
  security = text;
  ::LocalFree(text);
  return {};
}

bool make_export(void* out, std::uint64_t id, std::uint64_t size, const std::string& security) {
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  if (!security.empty() &&
      ::ConvertStringSecurityDescriptorToSecurityDescriptorA(security.c_str(), SDDL_REVISION_1, &descriptor, nullptr) == 0)
    return false;
  SECURITY_ATTRIBUTES attributes{sizeof(SECURITY_ATTRIBUTES), descriptor, FALSE};
  HANDLE section = ::CreateFileMappingA(INVALID_HANDLE_VALUE, &attributes, PAGE_READWRITE, 0, sizeof(record), nullptr);
  if (descriptor != nullptr) ::LocalFree(descriptor);
  if (section == nullptr) return false;
  void* view = ::MapViewOfFile(section, FILE_MAP_WRITE, 0, 0, sizeof(record));
  if (view == nullptr) {
    ::CloseHandle(section);
    return false;
  }
  const record r{export_magic, id, size};
  std::memcpy(view, &r, sizeof r);
  ::UnmapViewOfFile(view);
  std::memcpy(out, &section, sizeof section);
  return true;
}

bool read_export(void* os_handle, std::uint64_t& id, std::uint64_t& size) {
  const void* view = ::MapViewOfFile(static_cast<HANDLE>(os_handle), FILE_MAP_READ, 0, 0, sizeof(record));
  if (view == nullptr) return false;  // not a section (an event, a closed handle...)
  record r{};
  std::memcpy(&r, view, sizeof r);
  ::UnmapViewOfFile(view);
  if (r.magic != export_magic) return false;
  id = r.id;
  size = r.size;
  return true;
}

void* external_handle(const CUDA_EXTERNAL_MEMORY_HANDLE_DESC& desc) noexcept { return desc.handle.win32.handle; }
void* external_handle(const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC& desc) noexcept { return desc.handle.win32.handle; }

bool is_open(void* os_handle) noexcept {
  DWORD flags = 0;
  return os_handle != nullptr && ::GetHandleInformation(static_cast<HANDLE>(os_handle), &flags) != 0;
}

void take_after_import(void* /*os_handle*/) noexcept {}

void* map_timeline_counter(void* os_handle) noexcept { return map_timeline_payload(static_cast<HANDLE>(os_handle)); }

void unmap_timeline_counter(void* counter) noexcept { unmap_timeline_payload(static_cast<timeline_payload*>(counter)); }

void signal_timeline_counter(void* counter, std::uint64_t value) noexcept {
  if (counter != nullptr) store_timeline_value(static_cast<timeline_payload*>(counter), value);
}

bool wait_timeline_counter(void* counter, std::uint64_t value) noexcept {
  return counter == nullptr ||
         wait_timeline_value(static_cast<const timeline_payload*>(counter), value, std::chrono::seconds(10));
}

}  // namespace membridge::testing::fake_handles
