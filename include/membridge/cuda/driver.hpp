// membridge/cuda/driver.hpp: the CUDA driver API, loaded at run time into a table.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/dynamic_library.hpp>

#include <cuda.h>

#include <memory>
#include <string>

namespace membridge::cuda {

/// The CUDA driver functions membridge calls, as typed function pointers.
///
/// membridge never links libcuda: driver::load() opens libcuda.so.1 with dlopen and fills this table
/// through cuGetProcAddress (asking for the ABI of the CUDA headers membridge was built with), so a
/// binary starts on a machine without the driver and reports errc::driver_unavailable.
/// Tests fill a table with scripted functions and pass it to driver::from_table().
/// Members keep the driver's names (some are macros in cuda.h that pick the current ABI version).
struct driver_api {
  // Initialisation, versions and error names.
  decltype(&::cuInit) cuInit = nullptr;                                   ///< cuInit
  decltype(&::cuDriverGetVersion) cuDriverGetVersion = nullptr;           ///< cuDriverGetVersion
  decltype(&::cuGetErrorName) cuGetErrorName = nullptr;                   ///< cuGetErrorName
  decltype(&::cuGetErrorString) cuGetErrorString = nullptr;               ///< cuGetErrorString
  // Devices.
  decltype(&::cuDeviceGetCount) cuDeviceGetCount = nullptr;               ///< cuDeviceGetCount
  decltype(&::cuDeviceGet) cuDeviceGet = nullptr;                         ///< cuDeviceGet
  decltype(&::cuDeviceGetName) cuDeviceGetName = nullptr;                 ///< cuDeviceGetName
  decltype(&::cuDeviceGetUuid) cuDeviceGetUuid = nullptr;                 ///< cuDeviceGetUuid (v2)
  decltype(&::cuDeviceGetAttribute) cuDeviceGetAttribute = nullptr;       ///< cuDeviceGetAttribute
  decltype(&::cuDeviceTotalMem) cuDeviceTotalMem = nullptr;               ///< cuDeviceTotalMem (v2)
  decltype(&::cuDeviceGetPCIBusId) cuDeviceGetPCIBusId = nullptr;         ///< cuDeviceGetPCIBusId
  // Contexts (membridge works in each device's primary context).
  decltype(&::cuDevicePrimaryCtxRetain) cuDevicePrimaryCtxRetain = nullptr;    ///< cuDevicePrimaryCtxRetain
  decltype(&::cuDevicePrimaryCtxRelease) cuDevicePrimaryCtxRelease = nullptr;  ///< cuDevicePrimaryCtxRelease (v2)
  decltype(&::cuCtxGetCurrent) cuCtxGetCurrent = nullptr;                 ///< cuCtxGetCurrent
  decltype(&::cuCtxPushCurrent) cuCtxPushCurrent = nullptr;               ///< cuCtxPushCurrent (v2)
  decltype(&::cuCtxPopCurrent) cuCtxPopCurrent = nullptr;                 ///< cuCtxPopCurrent (v2)
  decltype(&::cuCtxSynchronize) cuCtxSynchronize = nullptr;               ///< cuCtxSynchronize
  decltype(&::cuMemGetInfo) cuMemGetInfo = nullptr;                       ///< cuMemGetInfo (v2)
  // Virtual memory management.
  decltype(&::cuMemGetAllocationGranularity) cuMemGetAllocationGranularity = nullptr;  ///< granularity
  decltype(&::cuMemCreate) cuMemCreate = nullptr;                         ///< cuMemCreate
  decltype(&::cuMemRelease) cuMemRelease = nullptr;                       ///< cuMemRelease
  decltype(&::cuMemAddressReserve) cuMemAddressReserve = nullptr;         ///< cuMemAddressReserve
  decltype(&::cuMemAddressFree) cuMemAddressFree = nullptr;               ///< cuMemAddressFree
  decltype(&::cuMemMap) cuMemMap = nullptr;                               ///< cuMemMap
  decltype(&::cuMemUnmap) cuMemUnmap = nullptr;                           ///< cuMemUnmap
  decltype(&::cuMemSetAccess) cuMemSetAccess = nullptr;                   ///< cuMemSetAccess
  decltype(&::cuMemExportToShareableHandle) cuMemExportToShareableHandle = nullptr;      ///< export fd
  decltype(&::cuMemImportFromShareableHandle) cuMemImportFromShareableHandle = nullptr;  ///< import fd
};

/// A loaded CUDA driver: the function table plus the library that backs it.
///
/// Shared (std::shared_ptr<const driver>) by every object made through it, so the library stays
/// loaded while any of them lives. Immutable after load: safe to use from any thread.
class driver {
 public:
  /// Opens libcuda.so.1, fills the table through cuGetProcAddress and calls cuInit(0).
  /// Errors: driver_unavailable when the library is missing or too old (no cuGetProcAddress_v2, a
  /// required function missing), when cuInit fails (no device, stub library, driver/kernel module
  /// mismatch); the message says which.
  /// Ownership: the returned driver keeps libcuda loaded until the last shared_ptr goes.
  [[nodiscard]] static result<std::shared_ptr<const driver>> load();

  /// Like load(), from an explicit library name or path (for tests and unusual installs).
  [[nodiscard]] static result<std::shared_ptr<const driver>> load(const std::string& library);

  /// Wraps a caller-filled table (a scripted driver in tests, or an engine's own loader).
  /// Every member must be set; `version` is what version() reports (e.g. 13000).
  /// Errors: invalid_argument naming the first null member.
  /// Ownership: the table is copied; the functions it points to must stay callable while the
  /// driver or anything made from it lives.
  [[nodiscard]] static result<std::shared_ptr<const driver>> from_table(const driver_api& table, int version);

  /// The function table.
  [[nodiscard]] const driver_api& api() const noexcept { return api_; }

  /// The driver's CUDA version (cuDriverGetVersion), e.g. 13000 for CUDA 13.0.
  [[nodiscard]] int version() const noexcept { return version_; }

  /// The library the table came from ("" for from_table()).
  [[nodiscard]] const std::string& library_name() const noexcept { return library_.name(); }

  /// The name of a CUresult, e.g. "CUDA_ERROR_OUT_OF_MEMORY" (a numeric fallback if unknown).
  [[nodiscard]] std::string error_name(CUresult code) const;

  /// A categorised error for a failed driver call: `call` names it ("cuMemCreate"), `context` says
  /// what membridge was doing.
  [[nodiscard]] error make_error(CUresult code, std::string call, std::string context = {},
                                 std::source_location where = std::source_location::current()) const;

  driver(const driver&) = delete;
  driver& operator=(const driver&) = delete;

 private:
  driver(driver_api api, int version, os::dynamic_library library) noexcept;

  driver_api api_;
  int version_ = 0;
  os::dynamic_library library_;
};

/// The membridge category of a CUresult (out_of_memory, invalid_argument, device_lost...).
[[nodiscard]] errc category_of(CUresult code) noexcept;

}  // namespace membridge::cuda
