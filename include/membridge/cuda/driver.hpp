// membridge/cuda/driver.hpp: the CUDA driver API, loaded at run time into a table.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/dynamic_library.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>

#include <memory>
#include <string>

namespace membridge::cuda {

/// The CUDA driver functions membridge calls, as typed function pointers.
///
/// membridge never links libcuda: driver::load() opens libcuda.so.1 (Windows: nvcuda.dll) and fills this table
/// through cuGetProcAddress, so a binary starts on a machine without the driver and reports
/// errc::driver_unavailable. Each member has the type of one ABI version of its function
/// (PFN_<name>_v<version> from cudaTypedefs.h) and load() asks cuGetProcAddress for exactly that
/// version: the table's ABI is fixed, whatever newer headers or driver say (CUDA 13 gave
/// cuCtxSynchronize a context parameter; this table keeps the 2.0 form that syncs the current context).
/// Tests fill a table with scripted functions and pass it to driver::from_table().
/// Members keep the driver's names (a few are macros in cuda.h, e.g. cuMemGetInfo -> cuMemGetInfo_v2).
struct driver_api {
  // Initialisation, versions and error names.
  PFN_cuInit_v2000 cuInit = nullptr;                                        ///< cuInit
  PFN_cuDriverGetVersion_v2020 cuDriverGetVersion = nullptr;                ///< cuDriverGetVersion
  PFN_cuGetErrorName_v6000 cuGetErrorName = nullptr;                        ///< cuGetErrorName
  PFN_cuGetErrorString_v6000 cuGetErrorString = nullptr;                    ///< cuGetErrorString
  // Devices.
  PFN_cuDeviceGetCount_v2000 cuDeviceGetCount = nullptr;                    ///< cuDeviceGetCount
  PFN_cuDeviceGet_v2000 cuDeviceGet = nullptr;                              ///< cuDeviceGet
  PFN_cuDeviceGetName_v2000 cuDeviceGetName = nullptr;                      ///< cuDeviceGetName
  PFN_cuDeviceGetUuid_v11040 cuDeviceGetUuid = nullptr;                     ///< cuDeviceGetUuid (v2)
  PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute = nullptr;            ///< cuDeviceGetAttribute
  PFN_cuDeviceTotalMem_v3020 cuDeviceTotalMem = nullptr;                    ///< cuDeviceTotalMem (size_t)
  PFN_cuDeviceGetPCIBusId_v4010 cuDeviceGetPCIBusId = nullptr;              ///< cuDeviceGetPCIBusId
  // Contexts (membridge works in each device's primary context).
  PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain = nullptr;    ///< cuDevicePrimaryCtxRetain
  PFN_cuDevicePrimaryCtxRelease_v11000 cuDevicePrimaryCtxRelease = nullptr; ///< cuDevicePrimaryCtxRelease (v2)
  PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent = nullptr;                      ///< cuCtxGetCurrent
  PFN_cuCtxPushCurrent_v4000 cuCtxPushCurrent = nullptr;                    ///< cuCtxPushCurrent (v2)
  PFN_cuCtxPopCurrent_v4000 cuCtxPopCurrent = nullptr;                      ///< cuCtxPopCurrent (v2)
  PFN_cuCtxSynchronize_v2000 cuCtxSynchronize = nullptr;                    ///< cuCtxSynchronize (current context)
  PFN_cuMemGetInfo_v3020 cuMemGetInfo = nullptr;                            ///< cuMemGetInfo (size_t)
  // Virtual memory management.
  PFN_cuMemGetAllocationGranularity_v10020 cuMemGetAllocationGranularity = nullptr;      ///< granularity
  PFN_cuMemCreate_v10020 cuMemCreate = nullptr;                                          ///< cuMemCreate
  PFN_cuMemRelease_v10020 cuMemRelease = nullptr;                                        ///< cuMemRelease
  PFN_cuMemAddressReserve_v10020 cuMemAddressReserve = nullptr;                          ///< cuMemAddressReserve
  PFN_cuMemAddressFree_v10020 cuMemAddressFree = nullptr;                                ///< cuMemAddressFree
  PFN_cuMemMap_v10020 cuMemMap = nullptr;                                                ///< cuMemMap
  PFN_cuMemUnmap_v10020 cuMemUnmap = nullptr;                                            ///< cuMemUnmap
  PFN_cuMemSetAccess_v10020 cuMemSetAccess = nullptr;                                    ///< cuMemSetAccess
  PFN_cuMemExportToShareableHandle_v10020 cuMemExportToShareableHandle = nullptr;      ///< export as fd / NT handle
  PFN_cuMemImportFromShareableHandle_v10020 cuMemImportFromShareableHandle = nullptr;  ///< import from fd / NT handle

  // External semaphores (Vulkan/GL interop).
  PFN_cuImportExternalSemaphore_v10000 cuImportExternalSemaphore = nullptr;              ///< import a semaphore fd
  PFN_cuDestroyExternalSemaphore_v10000 cuDestroyExternalSemaphore = nullptr;            ///< destroy the import
  PFN_cuSignalExternalSemaphoresAsync_v10000 cuSignalExternalSemaphoresAsync = nullptr;  ///< signal on a stream
  PFN_cuWaitExternalSemaphoresAsync_v10000 cuWaitExternalSemaphoresAsync = nullptr;      ///< wait on a stream

  // Streams and graphs (sync::producer_graph: a frame's work captured once, then launched per frame).
  PFN_cuStreamCreate_v2000 cuStreamCreate = nullptr;                                     ///< cuStreamCreate
  PFN_cuStreamDestroy_v4000 cuStreamDestroy = nullptr;                                   ///< cuStreamDestroy (v2)
  PFN_cuStreamBeginCapture_v10010 cuStreamBeginCapture = nullptr;                        ///< with a capture mode (v2)
  PFN_cuStreamEndCapture_v10000 cuStreamEndCapture = nullptr;                            ///< cuStreamEndCapture
  PFN_cuGraphCreate_v10000 cuGraphCreate = nullptr;                                      ///< cuGraphCreate
  PFN_cuGraphDestroy_v10000 cuGraphDestroy = nullptr;                                    ///< cuGraphDestroy
  PFN_cuGraphAddChildGraphNode_v10000 cuGraphAddChildGraphNode = nullptr;                ///< clone a graph as a node
  PFN_cuGraphAddExternalSemaphoresWaitNode_v11020 cuGraphAddExternalSemaphoresWaitNode = nullptr;      ///< wait node
  PFN_cuGraphAddExternalSemaphoresSignalNode_v11020 cuGraphAddExternalSemaphoresSignalNode = nullptr;  ///< signal node
  PFN_cuGraphInstantiateWithFlags_v11040 cuGraphInstantiateWithFlags = nullptr;          ///< instantiate
  PFN_cuGraphExecDestroy_v10000 cuGraphExecDestroy = nullptr;                            ///< cuGraphExecDestroy
  PFN_cuGraphExecExternalSemaphoresWaitNodeSetParams_v11020 cuGraphExecExternalSemaphoresWaitNodeSetParams =
      nullptr;  ///< a wait node's values in an executable graph
  PFN_cuGraphExecExternalSemaphoresSignalNodeSetParams_v11020 cuGraphExecExternalSemaphoresSignalNodeSetParams =
      nullptr;  ///< a signal node's values in an executable graph
  PFN_cuGraphLaunch_v10000 cuGraphLaunch = nullptr;                                      ///< cuGraphLaunch

  // External memory (another API's allocation seen as a CUDA array) and surface objects.
  PFN_cuImportExternalMemory_v10000 cuImportExternalMemory = nullptr;                    ///< import a memory fd
  PFN_cuDestroyExternalMemory_v10000 cuDestroyExternalMemory = nullptr;                  ///< destroy the import
  PFN_cuExternalMemoryGetMappedMipmappedArray_v10000 cuExternalMemoryGetMappedMipmappedArray = nullptr;  ///< as array
  PFN_cuMipmappedArrayGetLevel_v5000 cuMipmappedArrayGetLevel = nullptr;                 ///< one level's CUarray
  PFN_cuMipmappedArrayDestroy_v5000 cuMipmappedArrayDestroy = nullptr;                   ///< destroy a mipmapped array
  PFN_cuSurfObjectCreate_v5000 cuSurfObjectCreate = nullptr;                             ///< surface object on an array
  PFN_cuSurfObjectDestroy_v5000 cuSurfObjectDestroy = nullptr;                           ///< destroy a surface object

  // Allocation properties read back (did the driver grant compression?).
  PFN_cuMemGetAllocationPropertiesFromHandle_v10020 cuMemGetAllocationPropertiesFromHandle = nullptr;  ///< properties

  // Peers: what one GPU may do with another's memory (cuda/peer.hpp).
  PFN_cuDeviceCanAccessPeer_v4000 cuDeviceCanAccessPeer = nullptr;            ///< cuDeviceCanAccessPeer
  PFN_cuDeviceGetP2PAttribute_v8000 cuDeviceGetP2PAttribute = nullptr;        ///< cuDeviceGetP2PAttribute

  // Events, stream waits, async copies and pinned host memory (sync::cross_gpu_link: a producer on
  // another GPU than the renderer).
  PFN_cuEventCreate_v2000 cuEventCreate = nullptr;                            ///< cuEventCreate
  PFN_cuEventDestroy_v4000 cuEventDestroy = nullptr;                          ///< cuEventDestroy (v2)
  PFN_cuEventRecord_v2000 cuEventRecord = nullptr;                            ///< cuEventRecord
  PFN_cuStreamWaitEvent_v3020 cuStreamWaitEvent = nullptr;                    ///< cuStreamWaitEvent
  PFN_cuStreamSynchronize_v2000 cuStreamSynchronize = nullptr;                ///< cuStreamSynchronize
  PFN_cuMemcpyDtoDAsync_v3020 cuMemcpyDtoDAsync = nullptr;                    ///< cuMemcpyDtoDAsync (v2)
  PFN_cuMemcpyDtoHAsync_v3020 cuMemcpyDtoHAsync = nullptr;                    ///< cuMemcpyDtoHAsync (v2)
  PFN_cuMemcpyHtoDAsync_v3020 cuMemcpyHtoDAsync = nullptr;                    ///< cuMemcpyHtoDAsync (v2)
  PFN_cuMemHostAlloc_v2020 cuMemHostAlloc = nullptr;                          ///< pinned host memory
  PFN_cuMemFreeHost_v2000 cuMemFreeHost = nullptr;                            ///< cuMemFreeHost
};

/// A loaded CUDA driver: the function table plus the library that backs it.
///
/// Shared (std::shared_ptr<const driver>) by every object made through it, so the library stays
/// loaded while any of them lives. Immutable after load: safe to use from any thread.
class driver {
 public:
  /// Opens libcuda.so.1 (Windows: nvcuda.dll), fills the table through cuGetProcAddress and calls cuInit(0).
  /// Errors: driver_unavailable when the library is missing or too old (no cuGetProcAddress_v2, a
  /// required function missing), when cuInit fails (no device, stub library, driver/kernel module
  /// mismatch); the message says which.
  /// Ownership: the returned driver keeps the library loaded until the last shared_ptr goes.
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
