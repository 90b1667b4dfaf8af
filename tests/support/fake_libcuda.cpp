// A stand-in libcuda.so for testing driver::load() on machines without a GPU. It exports what a real
// driver's loader entry points are (cuInit, cuDriverGetVersion, cuGetErrorName, cuGetProcAddress_v2),
// answers cuGetProcAddress like the real one (the newest ABI version not newer than the one asked
// for), records which version each symbol was asked at, and can be told to fail in the ways real
// drivers do. Controls are exported with C linkage (fake_libcuda_*).
#include <cuda.h>

// Exported from the shared library: a default-visibility symbol of libcuda.so, a dllexport of the
// Windows stand-in for nvcuda.dll.
#if defined(_WIN32)
#define FAKE_LIBCUDA_EXPORT __declspec(dllexport)
#else
#define FAKE_LIBCUDA_EXPORT __attribute__((visibility("default")))
#endif

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

struct state {
  int driver_version = 13000;
  CUresult init_result = CUDA_SUCCESS;
  std::map<std::string, CUdriverProcAddressQueryResult> refused;  // symbol -> how to refuse it
  std::map<std::string, int> requested;                           // symbol -> version asked for
  int synchronize_v2000_calls = 0;
  int synchronize_v13000_calls = 0;
};

state& s() {
  static state st;
  return st;
}

CUresult CUDAAPI generic() { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI device_count(int* n) {
  *n = 3;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI synchronize_v2000() {
  ++s().synchronize_v2000_calls;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI synchronize_v13000(CUcontext) {
  ++s().synchronize_v13000_calls;
  return CUDA_SUCCESS;
}

// The ABI versions the real driver has for the symbols membridge loads (from cudaTypedefs.h).
const std::map<std::string, std::vector<int>>& versions() {
  static const std::map<std::string, std::vector<int>> v{
      {"cuInit", {2000}}, {"cuDriverGetVersion", {2020}}, {"cuGetErrorName", {6000}},
      {"cuGetErrorString", {6000}}, {"cuDeviceGetCount", {2000}}, {"cuDeviceGet", {2000}},
      {"cuDeviceGetName", {2000}}, {"cuDeviceGetUuid", {9020, 11040}}, {"cuDeviceGetAttribute", {2000}},
      {"cuDeviceTotalMem", {2000, 3020}}, {"cuDeviceGetPCIBusId", {4010}},
      {"cuDevicePrimaryCtxRetain", {7000}}, {"cuDevicePrimaryCtxRelease", {7000, 11000}},
      {"cuCtxGetCurrent", {4000}}, {"cuCtxPushCurrent", {2000, 4000}}, {"cuCtxPopCurrent", {2000, 4000}},
      {"cuCtxSynchronize", {2000, 13000}}, {"cuMemGetInfo", {2000, 3020}},
      {"cuMemGetAllocationGranularity", {10020}}, {"cuMemCreate", {10020}}, {"cuMemRelease", {10020}},
      {"cuMemAddressReserve", {10020}}, {"cuMemAddressFree", {10020}}, {"cuMemMap", {10020}},
      {"cuMemUnmap", {10020}}, {"cuMemSetAccess", {10020}}, {"cuMemExportToShareableHandle", {10020}},
      {"cuMemImportFromShareableHandle", {10020}}, {"cuImportExternalSemaphore", {10000}},
      {"cuDestroyExternalSemaphore", {10000}}, {"cuSignalExternalSemaphoresAsync", {10000}},
      {"cuWaitExternalSemaphoresAsync", {10000}},
      {"cuStreamCreate", {2000}}, {"cuStreamDestroy", {2000, 4000}}, {"cuStreamBeginCapture", {10000, 10010}},
      {"cuStreamEndCapture", {10000}}, {"cuGraphCreate", {10000}}, {"cuGraphDestroy", {10000}},
      {"cuGraphAddChildGraphNode", {10000}}, {"cuGraphAddExternalSemaphoresWaitNode", {11020}},
      {"cuGraphAddExternalSemaphoresSignalNode", {11020}}, {"cuGraphInstantiateWithFlags", {11040}},
      {"cuGraphExecDestroy", {10000}}, {"cuGraphExecExternalSemaphoresWaitNodeSetParams", {11020}},
      {"cuGraphExecExternalSemaphoresSignalNodeSetParams", {11020}}, {"cuGraphLaunch", {10000}},
      {"cuImportExternalMemory", {10000}}, {"cuDestroyExternalMemory", {10000}},
      {"cuExternalMemoryGetMappedMipmappedArray", {10000}}, {"cuMipmappedArrayGetLevel", {5000}},
      {"cuMipmappedArrayDestroy", {5000}}, {"cuSurfObjectCreate", {5000}}, {"cuSurfObjectDestroy", {5000}},
      {"cuMemGetAllocationPropertiesFromHandle", {10020}},
      {"cuDeviceCanAccessPeer", {4000}}, {"cuDeviceGetP2PAttribute", {8000}},
      {"cuEventCreate", {2000}}, {"cuEventDestroy", {2000, 4000}}, {"cuEventRecord", {2000, 7000}},
      {"cuStreamWaitEvent", {3020, 7000}}, {"cuStreamSynchronize", {2000, 7000}},
      {"cuMemcpyDtoDAsync", {3000, 3020, 7000}}, {"cuMemcpyDtoHAsync", {2000, 3020, 7000}},
      {"cuMemcpyHtoDAsync", {2000, 3020, 7000}}, {"cuMemHostAlloc", {2020}}, {"cuMemFreeHost", {2000}},
  };
  return v;
}

void* function_for(const std::string& symbol, int version) {
  if (symbol == "cuDeviceGetCount") return reinterpret_cast<void*>(&device_count);
  if (symbol == "cuCtxSynchronize")
    return version >= 13000 ? reinterpret_cast<void*>(&synchronize_v13000) : reinterpret_cast<void*>(&synchronize_v2000);
  return reinterpret_cast<void*>(&generic);
}

}  // namespace

extern "C" {

FAKE_LIBCUDA_EXPORT CUresult cuInit(unsigned int) { return s().init_result; }

FAKE_LIBCUDA_EXPORT CUresult cuDriverGetVersion(int* version) {
  *version = s().driver_version;
  return CUDA_SUCCESS;
}

FAKE_LIBCUDA_EXPORT CUresult cuGetErrorName(CUresult code, const char** name) {
  switch (code) {
    case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; return CUDA_SUCCESS;
    default: *name = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}

FAKE_LIBCUDA_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                                                                    cuuint64_t, CUdriverProcAddressQueryResult* status) {
  s().requested[symbol] = cuda_version;
  *pfn = nullptr;
  const auto refused = s().refused.find(symbol);
  const auto known = versions().find(symbol);
  if (refused != s().refused.end() || known == versions().end()) {
    *status = refused != s().refused.end() ? refused->second : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  int best = 0;  // the newest ABI not newer than asked for, as the real driver answers
  for (const int v : known->second)
    if (v <= cuda_version && v <= s().driver_version) best = v;
  if (best == 0) {
    *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = function_for(symbol, best);
  *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------------------------------ controls ---
FAKE_LIBCUDA_EXPORT void fake_libcuda_reset() { s() = state{}; }
FAKE_LIBCUDA_EXPORT void fake_libcuda_set_driver_version(int version) { s().driver_version = version; }
FAKE_LIBCUDA_EXPORT void fake_libcuda_set_init_result(int code) {
  s().init_result = static_cast<CUresult>(code);
}
FAKE_LIBCUDA_EXPORT void fake_libcuda_refuse(const char* symbol, int how) {
  s().refused[symbol] = static_cast<CUdriverProcAddressQueryResult>(how);
}
/// The version `symbol` was last requested at, or -1.
FAKE_LIBCUDA_EXPORT int fake_libcuda_requested_version(const char* symbol) {
  const auto found = s().requested.find(symbol);
  return found == s().requested.end() ? -1 : found->second;
}
FAKE_LIBCUDA_EXPORT int fake_libcuda_requested_count() {
  return static_cast<int>(s().requested.size());
}
FAKE_LIBCUDA_EXPORT int fake_libcuda_synchronize_calls(int abi) {
  return abi >= 13000 ? s().synchronize_v13000_calls : s().synchronize_v2000_calls;
}

}  // extern "C"
