#include <membridge/cuda/driver.hpp>

#include "detail/platform.hpp"

#include <string>
#include <utility>

namespace membridge::cuda {

namespace {

constexpr int oldest_supported_driver = 12000;  // cuGetProcAddress_v2 appeared in CUDA 12.0
using get_proc_address_fn = PFN_cuGetProcAddress_v12000;

template <class Fn>
result<Fn> symbol_as(const os::dynamic_library& library, const char* name) {
  MEMBRIDGE_TRY_ASSIGN(void* address, library.symbol(name));
  return reinterpret_cast<Fn>(address);
}

error unavailable(std::string call, std::string context) {
  return error(errc::driver_unavailable, std::move(call), std::move(context));
}

// Names of the codes a driver may answer before cuGetErrorName itself works (the toolkit's stub
// library answers every call, that one too, with CUDA_ERROR_STUB_LIBRARY).
const char* fallback_name(CUresult code) noexcept {
  switch (code) {
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_DEVICE_UNAVAILABLE: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_OPERATING_SYSTEM: return "CUDA_ERROR_OPERATING_SYSTEM";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case CUDA_ERROR_SYSTEM_NOT_READY: return "CUDA_ERROR_SYSTEM_NOT_READY";
    case CUDA_ERROR_UNKNOWN: return "CUDA_ERROR_UNKNOWN";
    default: return nullptr;
  }
}

std::string cu_name(decltype(&::cuGetErrorName) get_name, CUresult code) {
  const char* name = nullptr;
  if (get_name != nullptr && get_name(code, &name) == CUDA_SUCCESS && name != nullptr) return name;
  if (const char* known = fallback_name(code)) return known;
  return "CUresult " + std::to_string(static_cast<int>(code));
}

// Loads one driver_api slot through cuGetProcAddress, asking for the ABI version `abi_version` that
// the slot's type names.
template <class Fn>
result<void> load_entry(get_proc_address_fn get_proc, const char* name, int abi_version, Fn& slot,
                        int driver_version) {
  void* address = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const CUresult rc = get_proc(name, &address, abi_version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  if (rc == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && address != nullptr) {
    slot = reinterpret_cast<Fn>(address);
    return ok();
  }
  std::string why = status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                        ? "the driver (CUDA " + std::to_string(driver_version) + ") is older than this function needs"
                        : "the driver does not provide it";
  return unavailable("cuGetProcAddress", std::string("looking up ") + name + ": " + why);
}

}  // namespace

driver::driver(driver_api api, int version, os::dynamic_library library) noexcept
    : api_(api), version_(version), library_(std::move(library)) {}

result<std::shared_ptr<const driver>> driver::load() { return load(detail::default_driver_library()); }

result<std::shared_ptr<const driver>> driver::load(const std::string& library_name) {
  auto opened = os::dynamic_library::open(library_name);
  if (!opened)
    return std::move(opened).error().add_context(
        "the CUDA driver library is not installed or not on the loader path (it comes with the NVIDIA "
        "driver, not the CUDA toolkit)");
  os::dynamic_library library = std::move(opened).value();

  // cuInit, cuGetErrorName and cuDriverGetVersion have one ABI; look them up directly so a failing
  // cuInit can be named even when the rest of the table cannot be filled.
  driver_api api{};
  MEMBRIDGE_TRY_ASSIGN(api.cuInit, symbol_as<decltype(api.cuInit)>(library, "cuInit"));
  MEMBRIDGE_TRY_ASSIGN(api.cuGetErrorName, symbol_as<decltype(api.cuGetErrorName)>(library, "cuGetErrorName"));
  MEMBRIDGE_TRY_ASSIGN(api.cuDriverGetVersion,
                       symbol_as<decltype(api.cuDriverGetVersion)>(library, "cuDriverGetVersion"));

  if (const CUresult rc = api.cuInit(0); rc != CUDA_SUCCESS) {
    std::string context = "initialising the CUDA driver from " + library_name;
    if (rc == CUDA_ERROR_STUB_LIBRARY)
      context += ": this is the CUDA toolkit's stub libcuda.so (from lib64/stubs), which only satisfies the linker "
                 "and has no driver in it; the real libcuda.so.1 comes with the NVIDIA driver: install the driver, "
                 "and take the stubs directory out of LD_LIBRARY_PATH and the binary's rpath";
    return error::from_native(errc::driver_unavailable, error_source::cuda, rc, cu_name(api.cuGetErrorName, rc),
                              "cuInit", std::move(context));
  }
  int version = 0;
  if (const CUresult rc = api.cuDriverGetVersion(&version); rc != CUDA_SUCCESS) {
    return error::from_native(errc::driver_unavailable, error_source::cuda, rc, cu_name(api.cuGetErrorName, rc),
                              "cuDriverGetVersion", "reading the driver version");
  }
  if (version < oldest_supported_driver) {
    return unavailable("driver::load", "the CUDA driver supports CUDA " + std::to_string(version) +
                                           "; membridge needs a driver for CUDA 12.0 or newer");
  }
  auto get_proc = symbol_as<get_proc_address_fn>(library, "cuGetProcAddress_v2");
  if (!get_proc) return std::move(get_proc).error().add_context("the CUDA driver is older than CUDA 12.0");

#define MEMBRIDGE_LOAD_(name, abi) MEMBRIDGE_TRY(load_entry(*get_proc, #name, abi, api.name, version));
  MEMBRIDGE_CUDA_DRIVER_ENTRIES(MEMBRIDGE_LOAD_)
#undef MEMBRIDGE_LOAD_

  return std::shared_ptr<const driver>(new driver(api, version, std::move(library)));
}

result<std::shared_ptr<const driver>> driver::from_table(const driver_api& table, int version) {
#define MEMBRIDGE_CHECK_(name, version)                                                         \
  if (table.name == nullptr)                                                                    \
    return error(errc::invalid_argument, "driver::from_table", "the table has no " #name " entry");
  MEMBRIDGE_CUDA_DRIVER_ENTRIES(MEMBRIDGE_CHECK_)
#undef MEMBRIDGE_CHECK_
  return std::shared_ptr<const driver>(new driver(table, version, os::dynamic_library{}));
}

std::string driver::error_name(CUresult code) const { return cu_name(api_.cuGetErrorName, code); }

error driver::make_error(CUresult code, std::string call, std::string context, std::source_location where) const {
  return error::from_native(category_of(code), error_source::cuda, static_cast<std::int64_t>(code), error_name(code),
                            std::move(call), std::move(context), where);
}

errc category_of(CUresult code) noexcept {
  switch (code) {
    case CUDA_ERROR_OUT_OF_MEMORY: return errc::out_of_memory;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_NOT_MAPPED:
    case CUDA_ERROR_ALREADY_MAPPED: return errc::invalid_argument;
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_NOT_PERMITTED: return errc::unsupported;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_SYSTEM_NOT_READY: return errc::driver_unavailable;
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return errc::device_lost;
    case CUDA_ERROR_TIMEOUT:
    case CUDA_ERROR_LAUNCH_TIMEOUT: return errc::timeout;
    case CUDA_ERROR_OPERATING_SYSTEM: return errc::os_error;
    default: return errc::internal;
  }
}

}  // namespace membridge::cuda
