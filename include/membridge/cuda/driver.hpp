// membridge/cuda/driver.hpp: the CUDA driver API, loaded at run time into a table.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/dynamic_library.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>

#include <memory>
#include <string>

namespace membridge::cuda {

/// Every function of driver_api, in declaration order, with the ABI version its member has: X(name,
/// version) declares `PFN_<name>_v<version> name` and driver::load() asks cuGetProcAddress for `name`
/// at exactly that version. cuda.h's version macros rename some members (cuMemGetInfo ->
/// cuMemGetInfo_v2) consistently in the struct and the loader, while the stringised name stays the symbol
/// looked up.
#define MEMBRIDGE_CUDA_DRIVER_ENTRIES(X)                                                                        \
  /* Initialisation, versions and error names. */                                                               \
  X(cuInit, 2000)                                                                                               \
  X(cuDriverGetVersion, 2020)                                                                                   \
  X(cuGetErrorName, 6000)                                                                                       \
  X(cuGetErrorString, 6000)                                                                                     \
  /* Devices. */                                                                                                \
  X(cuDeviceGetCount, 2000)                                                                                     \
  X(cuDeviceGet, 2000)                                                                                          \
  X(cuDeviceGetName, 2000)                                                                                      \
  X(cuDeviceGetUuid, 11040)                                 /* (v2) */                                          \
  X(cuDeviceGetAttribute, 2000)                                                                                 \
  X(cuDeviceTotalMem, 3020)                                 /* (size_t) */                                      \
  X(cuDeviceGetPCIBusId, 4010)                                                                                  \
  /* Contexts (membridge works in each device's primary context). */                                            \
  X(cuDevicePrimaryCtxRetain, 7000)                                                                             \
  X(cuDevicePrimaryCtxRelease, 11000)                       /* (v2) */                                          \
  X(cuCtxGetCurrent, 4000)                                                                                      \
  X(cuCtxPushCurrent, 4000)                                 /* (v2) */                                          \
  X(cuCtxPopCurrent, 4000)                                  /* (v2) */                                          \
  X(cuCtxSynchronize, 2000)                                 /* (current context) */                             \
  X(cuMemGetInfo, 3020)                                     /* (size_t) */                                      \
  /* Virtual memory management. */                                                                              \
  X(cuMemGetAllocationGranularity, 10020)                   /* granularity */                                   \
  X(cuMemCreate, 10020)                                                                                         \
  X(cuMemRelease, 10020)                                                                                        \
  X(cuMemAddressReserve, 10020)                                                                                 \
  X(cuMemAddressFree, 10020)                                                                                    \
  X(cuMemMap, 10020)                                                                                            \
  X(cuMemUnmap, 10020)                                                                                          \
  X(cuMemSetAccess, 10020)                                                                                      \
  X(cuMemExportToShareableHandle, 10020)                    /* export as fd / NT handle */                      \
  X(cuMemImportFromShareableHandle, 10020)                  /* import from fd / NT handle */                    \
  /* External semaphores (Vulkan/GL interop). */                                                                \
  X(cuImportExternalSemaphore, 10000)                       /* import a semaphore fd */                         \
  X(cuDestroyExternalSemaphore, 10000)                      /* destroy the import */                            \
  X(cuSignalExternalSemaphoresAsync, 10000)                 /* signal on a stream */                            \
  X(cuWaitExternalSemaphoresAsync, 10000)                   /* wait on a stream */                              \
  /* Streams and graphs (sync::producer_graph: a frame's work captured once, then launched per frame). */       \
  X(cuStreamCreate, 2000)                                                                                       \
  X(cuStreamDestroy, 4000)                                  /* (v2) */                                          \
  X(cuStreamBeginCapture, 10010)                            /* with a capture mode (v2) */                      \
  X(cuStreamEndCapture, 10000)                                                                                  \
  X(cuGraphCreate, 10000)                                                                                       \
  X(cuGraphDestroy, 10000)                                                                                      \
  X(cuGraphAddChildGraphNode, 10000)                        /* clone a graph as a node */                       \
  X(cuGraphAddExternalSemaphoresWaitNode, 11020)            /* wait node */                                     \
  X(cuGraphAddExternalSemaphoresSignalNode, 11020)          /* signal node */                                   \
  X(cuGraphInstantiateWithFlags, 11040)                     /* instantiate */                                   \
  X(cuGraphExecDestroy, 10000)                                                                                  \
  X(cuGraphExecExternalSemaphoresWaitNodeSetParams, 11020)  /* a wait node's values in an executable graph */   \
  X(cuGraphExecExternalSemaphoresSignalNodeSetParams, 11020)/* a signal node's values in an executable graph */ \
  X(cuGraphLaunch, 10000)                                                                                       \
  /* External memory (another API's allocation seen as a CUDA array) and surface objects. */                    \
  X(cuImportExternalMemory, 10000)                          /* import a memory fd */                            \
  X(cuDestroyExternalMemory, 10000)                         /* destroy the import */                            \
  X(cuExternalMemoryGetMappedMipmappedArray, 10000)         /* as array */                                      \
  X(cuMipmappedArrayGetLevel, 5000)                         /* one level's CUarray */                           \
  X(cuMipmappedArrayDestroy, 5000)                          /* destroy a mipmapped array */                     \
  X(cuSurfObjectCreate, 5000)                               /* surface object on an array */                    \
  X(cuSurfObjectDestroy, 5000)                              /* destroy a surface object */                      \
  /* Allocation properties read back (did the driver grant compression?). */                                    \
  X(cuMemGetAllocationPropertiesFromHandle, 10020)          /* properties */                                    \
  /* Peers: what one GPU may do with another's memory (cuda/peer.hpp). */                                       \
  X(cuDeviceCanAccessPeer, 4000)                                                                                \
  X(cuDeviceGetP2PAttribute, 8000)                                                                              \
  /* Events, stream waits, async copies and pinned host memory (sync::cross_gpu_link: a producer on             \
     another GPU than the renderer). */                                                                         \
  X(cuEventCreate, 2000)                                                                                        \
  X(cuEventDestroy, 4000)                                   /* (v2) */                                          \
  X(cuEventRecord, 2000)                                                                                        \
  X(cuStreamWaitEvent, 3020)                                                                                    \
  X(cuStreamSynchronize, 2000)                                                                                  \
  X(cuMemcpyDtoDAsync, 3020)                                /* (v2) */                                          \
  X(cuMemcpyDtoHAsync, 3020)                                /* (v2) */                                          \
  X(cuMemcpyHtoDAsync, 3020)                                /* (v2) */                                          \
  X(cuMemHostAlloc, 2020)                                   /* pinned host memory */                            \
  X(cuMemFreeHost, 2000)

/// The CUDA driver functions membridge calls, as typed function pointers.
///
/// membridge never links libcuda: driver::load() opens libcuda.so.1 (Windows: nvcuda.dll) and fills this table
/// through cuGetProcAddress, so a binary starts on a machine without the driver and reports
/// errc::driver_unavailable. Each member has the type of one ABI version of its function
/// (PFN_<name>_v<version> from cudaTypedefs.h) and load() asks cuGetProcAddress for exactly that
/// version: the table's ABI is fixed, whatever newer headers or driver say (CUDA 13 gave
/// cuCtxSynchronize a context parameter; this table keeps the 2.0 form that syncs the current context).
/// Tests fill a table with scripted functions and pass it to driver::from_table().
/// Members keep the driver's names (a few are macros in cuda.h, e.g. cuMemGetInfo -> cuMemGetInfo_v2), one
/// per MEMBRIDGE_CUDA_DRIVER_ENTRIES entry.
struct driver_api {
#define MEMBRIDGE_CUDA_DRIVER_MEMBER_(name, version) PFN_##name##_v##version name = nullptr;
  // Each member: the driver function of the same name at the ABI version MEMBRIDGE_CUDA_DRIVER_ENTRIES
  // gives it, nullptr until driver::load() or a test fills it. The API reference lists them through
  // that macro's documentation (Doxygen defines MEMBRIDGE_DOXYGEN).
#ifndef MEMBRIDGE_DOXYGEN
  MEMBRIDGE_CUDA_DRIVER_ENTRIES(MEMBRIDGE_CUDA_DRIVER_MEMBER_)
#endif
#undef MEMBRIDGE_CUDA_DRIVER_MEMBER_
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
