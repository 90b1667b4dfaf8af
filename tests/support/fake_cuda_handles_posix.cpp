// The scripted driver's exports on Linux: a memfd holding the physical id and size. Like the real
// driver, the fd is not close-on-exec (membridge must set it), imports of external memory and
// semaphores take the fd on success, cuMemImportFromShareableHandle only borrows it.
#include "fake_cuda_handles.hpp"

#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace membridge::testing::fake_handles {

namespace {

int as_fd(void* os_handle) noexcept { return static_cast<int>(reinterpret_cast<std::intptr_t>(os_handle)); }

}  // namespace

CUmemAllocationHandleType shareable_type() noexcept { return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; }
CUexternalMemoryHandleType external_memory_type() noexcept { return CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD; }
CUexternalSemaphoreHandleType timeline_semaphore_type() noexcept {
  return CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
}

std::string check_create_metadata(const CUmemAllocationProp& prop, std::string& security) {
  security.clear();
  if (prop.win32HandleMetaData != nullptr) return "cuMemCreate with win32HandleMetaData set on Linux";
  return {};
}

bool make_export(void* out, std::uint64_t id, std::uint64_t size, const std::string& /*security*/) {
  const int fd = ::memfd_create("fake-cuda-export", 0);
  if (fd < 0) return false;
  if (::pwrite(fd, &id, sizeof id, 0) != static_cast<ssize_t>(sizeof id) ||
      ::pwrite(fd, &size, sizeof size, sizeof id) != static_cast<ssize_t>(sizeof size)) {
    ::close(fd);
    return false;
  }
  std::memcpy(out, &fd, sizeof fd);
  return true;
}

bool read_export(void* os_handle, std::uint64_t& id, std::uint64_t& size) {
  const int fd = as_fd(os_handle);
  return ::pread(fd, &id, sizeof id, 0) == static_cast<ssize_t>(sizeof id) &&
         ::pread(fd, &size, sizeof size, sizeof id) == static_cast<ssize_t>(sizeof size);
}

void* external_handle(const CUDA_EXTERNAL_MEMORY_HANDLE_DESC& desc) noexcept {
  return reinterpret_cast<void*>(static_cast<std::intptr_t>(desc.handle.fd));  // NOLINT(performance-no-int-to-ptr)
}
void* external_handle(const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC& desc) noexcept {
  return reinterpret_cast<void*>(static_cast<std::intptr_t>(desc.handle.fd));  // NOLINT(performance-no-int-to-ptr)
}

bool is_open(void* os_handle) noexcept { return ::fcntl(as_fd(os_handle), F_GETFD) >= 0; }

void take_after_import(void* os_handle) noexcept { ::close(as_fd(os_handle)); }

// The driver keeps an fd import's value itself (the Linux tests' Vulkan side is a real driver).
void* map_timeline_counter(void* /*os_handle*/) noexcept { return nullptr; }
void unmap_timeline_counter(void* /*counter*/) noexcept {}
void signal_timeline_counter(void* /*counter*/, std::uint64_t /*value*/) noexcept {}
bool wait_timeline_counter(void* /*counter*/, std::uint64_t /*value*/) noexcept { return true; }

}  // namespace membridge::testing::fake_handles
