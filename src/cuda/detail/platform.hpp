// Private: what the cuda module does differently per platform (src/cuda/posix/platform.cpp for Linux,
// src/cuda/win32/platform.cpp for Windows): the driver's library, the shareable handle type CUDA
// exports and imports, and who owns a handle during each driver call.
//
// Ownership, from the CUDA driver API documentation (cuda.h):
//   cuMemExportToShareableHandle     makes a new handle (fd / NT handle) the caller owns.
//   cuMemImportFromShareableHandle   borrows the handle (both platforms).
//   cuImportExternalMemory/Semaphore OPAQUE_FD / TIMELINE_SEMAPHORE_FD: takes the fd on success.
//                                    OPAQUE_WIN32 / TIMELINE_SEMAPHORE_WIN32: never takes the NT handle
//                                    ("the application must release the handle").
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/driver.hpp>
#include <membridge/cuda/vmm_allocation.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <memory>

namespace membridge::cuda::detail {

struct device_state;

/// The driver library driver::load() opens: "libcuda.so.1" or "nvcuda.dll".
[[nodiscard]] const char* default_driver_library() noexcept;

/// The word for this platform's shareable handle in messages: "fd" or "NT handle".
[[nodiscard]] const char* handle_word() noexcept;

/// What cuMemCreate's CUmemAllocationProp::win32HandleMetaData points to while the call runs: on
/// Windows, for handles == win32, an OBJECT_ATTRIBUTES whose security descriptor grants the current
/// user only; otherwise nothing (get() is null, as CUDA requires for other handle types).
class export_metadata {
 public:
  /// Builds the metadata for allocations exportable as `handles`.
  /// Errors: the OS error of reading the process token or building the descriptor.
  [[nodiscard]] static result<export_metadata> make(handle_type handles);
  export_metadata() noexcept;
  export_metadata(export_metadata&& other) noexcept;
  export_metadata& operator=(export_metadata&& other) noexcept;
  ~export_metadata();
  /// The pointer for win32HandleMetaData (null when none is needed). Ownership: stays with this object.
  [[nodiscard]] void* get() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// cuMemExportToShareableHandle for this platform's handle type. Ownership: the result owns the new
/// handle (POSIX: made close-on-exec, which the driver does not promise).
/// Errors: the driver's, through `s` (`what` says what was exported); internal when it answers no handle.
[[nodiscard]] result<os::shareable_handle> export_allocation(const device_state& s, CUmemGenericAllocationHandle handle,
                                                            const std::string& what);

/// cuMemImportFromShareableHandle of `handle`. Ownership: `handle` stays the caller's (POSIX: the
/// driver gets a duplicate that is closed after the call; Windows: the driver only borrows the NT
/// handle). Errors: the driver's, through `s`; the OS error of duplicating.
[[nodiscard]] result<CUmemGenericAllocationHandle> import_allocation(const device_state& s,
                                                                     os::borrowed_shareable_handle handle,
                                                                     const std::string& what);

/// cuImportExternalMemory of `handle` as opaque memory; `desc` has size and flags set, the platform
/// sets type and handle. Ownership: `handle` stays the caller's (POSIX: the driver takes a duplicate
/// fd on success, a failure closes it; Windows: the driver never takes the NT handle).
/// Errors: the driver's, through `s`; the OS error of duplicating.
[[nodiscard]] result<CUexternalMemory> import_external_memory(const device_state& s,
                                                              os::borrowed_shareable_handle handle,
                                                              CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc,
                                                              const std::string& what);

/// cuImportExternalSemaphore of `handle` as a timeline semaphore (TIMELINE_SEMAPHORE_FD / _WIN32).
/// Ownership: as import_external_memory.
[[nodiscard]] result<CUexternalSemaphore> import_timeline_semaphore(const device_state& s,
                                                                    os::borrowed_shareable_handle handle,
                                                                    const std::string& what);

}  // namespace membridge::cuda::detail
