// Windows: nvcuda.dll and NT handles (CU_MEM_HANDLE_TYPE_WIN32, OPAQUE_WIN32,
// TIMELINE_SEMAPHORE_WIN32). The driver never takes ownership of an NT handle it imports, so imports
// pass the caller's handle as it is; exports come back as new handles the caller owns, made with a
// security descriptor for the current user only. See detail/platform.hpp.
#include "../detail/platform.hpp"

#include "../detail/device_state.hpp"

#include <membridge/os/current_user_security.hpp>

#include <windows.h>

#include <string>
#include <utility>

namespace membridge::cuda::detail {

const char* default_driver_library() noexcept { return "nvcuda.dll"; }

const char* handle_word() noexcept { return "NT handle"; }

struct export_metadata::impl {
  os::current_user_security security;
};

result<export_metadata> export_metadata::make(handle_type handles) {
  export_metadata out;
  if (handles != handle_type::win32) return out;
  MEMBRIDGE_TRY_ASSIGN(auto security, os::current_user_security::create().with_context(
                                          "building the security descriptor for an exportable allocation"));
  out.impl_ = std::make_unique<impl>(impl{std::move(security)});
  return out;
}
export_metadata::export_metadata() noexcept = default;
export_metadata::export_metadata(export_metadata&& other) noexcept = default;
export_metadata& export_metadata::operator=(export_metadata&& other) noexcept = default;
export_metadata::~export_metadata() = default;
void* export_metadata::get() const noexcept { return impl_ ? impl_->security.object_attributes() : nullptr; }

result<os::shareable_handle> export_allocation(const device_state& s, CUmemGenericAllocationHandle handle,
                                               const std::string& what) {
  HANDLE raw = nullptr;
  if (const CUresult rc = s.api().cuMemExportToShareableHandle(&raw, handle, CU_MEM_HANDLE_TYPE_WIN32, 0);
      rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemExportToShareableHandle", what);
  os::unique_handle out(raw);
  if (!out.valid()) return error(errc::internal, "cuMemExportToShareableHandle", "the driver returned no NT handle");
  return out;
}

result<CUmemGenericAllocationHandle> import_allocation(const device_state& s, os::borrowed_shareable_handle handle,
                                                       const std::string& what) {
  // The driver only borrows the NT handle: the caller's handle goes in as it is.
  CUmemGenericAllocationHandle out = 0;
  if (const CUresult rc = s.api().cuMemImportFromShareableHandle(&out, handle.get(), CU_MEM_HANDLE_TYPE_WIN32);
      rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemImportFromShareableHandle", what);
  return out;
}

namespace {

// Imports the caller's NT handle through `import` (cuImportExternalMemory or cuImportExternalSemaphore,
// named `call`), described by `desc` with `type`. Ownership of an NT handle is never transferred to
// CUDA: the caller's handle goes in as it is.
template <class Native, class Desc, class Import>
result<Native> import_nt_handle(const device_state& s, Import import, const char* call, Desc desc,
                                decltype(Desc::type) type, os::borrowed_shareable_handle handle,
                                const std::string& what) {
  desc.type = type;
  desc.handle.win32.handle = handle.get();
  desc.handle.win32.name = nullptr;
  Native out = nullptr;
  if (const CUresult rc = import(&out, &desc); rc != CUDA_SUCCESS) return s.fail(rc, call, what);
  return out;
}

}  // namespace

result<CUexternalMemory> import_external_memory(const device_state& s, os::borrowed_shareable_handle handle,
                                                CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc, const std::string& what) {
  return import_nt_handle<CUexternalMemory>(s, s.api().cuImportExternalMemory, "cuImportExternalMemory", desc,
                                            CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32, handle, what);
}

result<CUexternalSemaphore> import_timeline_semaphore(const device_state& s, os::borrowed_shareable_handle handle,
                                                      const std::string& what) {
  return import_nt_handle<CUexternalSemaphore>(s, s.api().cuImportExternalSemaphore, "cuImportExternalSemaphore",
                                               CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC{},
                                               CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_WIN32, handle, what);
}

}  // namespace membridge::cuda::detail
