// Linux: libcuda.so.1 and POSIX fds (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, OPAQUE_FD,
// TIMELINE_SEMAPHORE_FD). See detail/platform.hpp for who owns a handle during each call.
#include "../detail/platform.hpp"

#include "../detail/device_state.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace membridge::cuda::detail {

const char* default_driver_library() noexcept { return "libcuda.so.1"; }

const char* handle_word() noexcept { return "fd"; }

struct export_metadata::impl {};

result<export_metadata> export_metadata::make(handle_type /*handles*/) { return export_metadata(); }
export_metadata::export_metadata() noexcept = default;
export_metadata::export_metadata(export_metadata&& other) noexcept = default;
export_metadata& export_metadata::operator=(export_metadata&& other) noexcept = default;
export_metadata::~export_metadata() = default;
void* export_metadata::get() const noexcept { return nullptr; }

result<os::shareable_handle> export_allocation(const device_state& s, CUmemGenericAllocationHandle handle,
                                               const std::string& what) {
  int raw = -1;
  if (const CUresult rc = s.api().cuMemExportToShareableHandle(&raw, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
      rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemExportToShareableHandle", what);
  auto fd = os::unique_fd::from_native(raw);
  if (!fd) return error(errc::internal, "cuMemExportToShareableHandle", "the driver returned fd " + std::to_string(raw));
  // The driver does not promise close-on-exec; membridge's fds never leak into exec'd children.
  MEMBRIDGE_TRY(os::set_close_on_exec(fd));
  return fd;
}

result<CUmemGenericAllocationHandle> import_allocation(const device_state& s, os::borrowed_shareable_handle handle,
                                                       const std::string& what) {
  // cuMemImportFromShareableHandle only borrows the fd: give it a duplicate and close the duplicate
  // afterwards, so the caller's fd is untouched whatever the driver does.
  MEMBRIDGE_TRY_ASSIGN(os::unique_fd duplicate, handle.duplicate());
  CUmemGenericAllocationHandle out = 0;
  void* os_handle = reinterpret_cast<void*>(static_cast<std::intptr_t>(duplicate.get()));  // NOLINT(performance-no-int-to-ptr)
  if (const CUresult rc = s.api().cuMemImportFromShareableHandle(&out, os_handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemImportFromShareableHandle", what);
  return out;
}

result<CUexternalMemory> import_external_memory(const device_state& s, os::borrowed_shareable_handle handle,
                                                CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc, const std::string& what) {
  // cuImportExternalMemory takes the fd on success: give it a duplicate, released only after success,
  // so a failure closes the duplicate and the caller's fd is never touched.
  MEMBRIDGE_TRY_ASSIGN(os::unique_fd copy, handle.duplicate());
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = copy.get();
  CUexternalMemory out = nullptr;
  if (const CUresult rc = s.api().cuImportExternalMemory(&out, &desc); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuImportExternalMemory", what);
  static_cast<void>(copy.release());  // CUDA owns the duplicate now
  return out;
}

result<CUexternalSemaphore> import_timeline_semaphore(const device_state& s, os::borrowed_shareable_handle handle,
                                                      const std::string& what) {
  MEMBRIDGE_TRY_ASSIGN(os::unique_fd copy, handle.duplicate());
  CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
  desc.handle.fd = copy.get();
  CUexternalSemaphore out = nullptr;
  if (const CUresult rc = s.api().cuImportExternalSemaphore(&out, &desc); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuImportExternalSemaphore", what);
  static_cast<void>(copy.release());  // CUDA owns it now
  return out;
}

}  // namespace membridge::cuda::detail
