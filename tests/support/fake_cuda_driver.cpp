#include "fake_cuda_common.hpp"
#include "fake_cuda_driver.hpp"
#include "fake_cuda_handles.hpp"

#include <membridge/cuda/external_memory.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <string>

namespace membridge::testing {

namespace {

fake_cuda* g_active = nullptr;  // test-only: plain function pointers need somewhere to find the model

std::array<int, 8> g_primary_markers{};  // one primary context per device (up to 8)

fake_cuda& active() { return *g_active; }

using fake_detail::hex;

CUresult fake_cuInit(unsigned int) {
  FAKE_ENTER("cuInit");
  return CUDA_SUCCESS;
}

CUresult fake_cuDriverGetVersion(int* version) {
  FAKE_ENTER("cuDriverGetVersion");
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult fake_cuGetErrorName(CUresult code, const char** name) {
  switch (code) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; return CUDA_SUCCESS;
    case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; return CUDA_SUCCESS;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; return CUDA_SUCCESS;
    case CUDA_ERROR_UNKNOWN: *name = "CUDA_ERROR_UNKNOWN"; return CUDA_SUCCESS;
    default: *name = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult fake_cuGetErrorString(CUresult code, const char** text) { return fake_cuGetErrorName(code, text); }

CUresult fake_cuDeviceGetCount(int* count) {
  FAKE_ENTER("cuDeviceGetCount");
  *count = active().device_count;
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGet(CUdevice* dev, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  if (ordinal < 0 || ordinal >= active().device_count) return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetName(char* name, int length, CUdevice dev) {
  FAKE_ENTER("cuDeviceGetName");
  if (dev < 0 || dev >= active().device_count || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<std::size_t>(length), "%s", active().device_name.c_str());
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  FAKE_ENTER("cuDeviceGetUuid");
  if (dev < 0 || dev >= active().device_count) return CUDA_ERROR_INVALID_DEVICE;
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = static_cast<char>(0x10 * (dev + 1) + i);
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice dev) {
  FAKE_ENTER("cuDeviceGetAttribute");
  if (dev < 0 || dev >= active().device_count) return CUDA_ERROR_INVALID_DEVICE;
  const auto found = active().attributes.find(static_cast<int>(attribute));
  if (found == active().attributes.end()) return CUDA_ERROR_INVALID_VALUE;
  *value = found->second;
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceTotalMem(std::size_t* bytes, CUdevice dev) {
  FAKE_ENTER("cuDeviceTotalMem");
  if (dev < 0 || dev >= active().device_count) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = active().total_memory;
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetPCIBusId(char* bus, int length, CUdevice dev) {
  FAKE_ENTER("cuDeviceGetPCIBusId");
  std::snprintf(bus, static_cast<std::size_t>(length), "0000:%02x:00.0", dev + 1);
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceCanAccessPeer(int* can, CUdevice dev, CUdevice peer) {
  FAKE_ENTER("cuDeviceCanAccessPeer");
  const auto& f = active();
  if (dev < 0 || dev >= f.device_count || peer < 0 || peer >= f.device_count) return CUDA_ERROR_INVALID_DEVICE;
  *can = dev != peer && f.no_peer_access.count({dev, peer}) == 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attribute, CUdevice from, CUdevice to) {
  FAKE_ENTER("cuDeviceGetP2PAttribute");
  const auto& f = active();
  if (from < 0 || from >= f.device_count || to < 0 || to >= f.device_count || from == to)
    return CUDA_ERROR_INVALID_DEVICE;
  const bool access = f.no_peer_access.count({from, to}) == 0;
  switch (attribute) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK: *value = 0; return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED: *value = access ? 1 : 0; return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED: *value = access && f.peer_native_atomics ? 1 : 0; return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED: *value = access ? 1 : 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult fake_cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  ++active().retains_;
  *ctx = fake_primary_context(dev);
  return CUDA_SUCCESS;
}

CUresult fake_cuDevicePrimaryCtxRelease(CUdevice) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease");
  if (active().retains_ <= 0) {
    active().note_misuse("cuDevicePrimaryCtxRelease without a retain");
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  --active().retains_;
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetCurrent(CUcontext* ctx) {
  FAKE_ENTER("cuCtxGetCurrent");
  auto& f = active();
  *ctx = f.context_stack_.empty() ? f.current_ : f.context_stack_.back();
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxPushCurrent(CUcontext ctx) {
  FAKE_ENTER("cuCtxPushCurrent");
  if (fake_context_device(ctx) < 0) active().note_misuse("cuCtxPushCurrent of an unknown context");
  if (active().retains_ <= 0) active().note_misuse("cuCtxPushCurrent of a primary context nobody retains");
  active().context_stack_.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxPopCurrent(CUcontext* ctx) {
  FAKE_ENTER("cuCtxPopCurrent");
  auto& f = active();
  if (f.context_stack_.empty()) {
    f.note_misuse("cuCtxPopCurrent with nothing pushed");
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  *ctx = f.context_stack_.back();
  f.context_stack_.pop_back();
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxSynchronize() {
  FAKE_ENTER("cuCtxSynchronize");
  FAKE_REQUIRE_CONTEXT("cuCtxSynchronize");
  auto& f = active();
  ++f.syncs_;
  f.synced_devices_.push_back(fake_context_device(f.context_stack_.empty() ? f.current_ : f.context_stack_.back()));
  return CUDA_SUCCESS;
}

CUresult fake_cuMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  FAKE_ENTER("cuMemGetInfo");
  FAKE_REQUIRE_CONTEXT("cuMemGetInfo");
  *free_bytes = active().free_memory_;
  *total_bytes = active().total_memory;
  return CUDA_SUCCESS;
}

CUresult fake_cuMemGetAllocationGranularity(std::size_t* granularity, const CUmemAllocationProp* prop,
                                            CUmemAllocationGranularity_flags) {
  FAKE_ENTER("cuMemGetAllocationGranularity");
  if (prop == nullptr || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  *granularity = active().granularity;
  return CUDA_SUCCESS;
}

CUresult fake_cuMemCreate(CUmemGenericAllocationHandle* handle, std::size_t size, const CUmemAllocationProp* prop,
                          unsigned long long flags) {
  FAKE_ENTER("cuMemCreate");
  FAKE_REQUIRE_CONTEXT("cuMemCreate");
  auto& f = active();
  if (size == 0 || size % f.granularity != 0 || flags != 0 || prop == nullptr) {
    f.note_misuse("cuMemCreate with size " + std::to_string(size) + " (not a granularity multiple) or bad flags");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (prop->location.id < 0 || prop->location.id >= f.device_count) {
    f.note_misuse("cuMemCreate on device " + std::to_string(prop->location.id));
    return CUDA_ERROR_INVALID_DEVICE;
  }
  std::string security;
  if (std::string wrong = fake_handles::check_create_metadata(*prop, security); !wrong.empty()) {
    f.note_misuse(std::move(wrong));
    return CUDA_ERROR_INVALID_VALUE;
  }
  const bool compressible = prop->allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_GENERIC;
  if (compressible) {
    const auto supported = f.attributes.find(CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED);
    if (supported == f.attributes.end() || supported->second == 0) return CUDA_ERROR_NOT_SUPPORTED;
    if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE && f.compressible_shareable_create != CUDA_SUCCESS)
      return f.compressible_shareable_create;
  }
  if (size > f.free_memory_) return CUDA_ERROR_OUT_OF_MEMORY;
  const std::uint64_t id = f.next_id_++;
  f.physicals_[id] = {size, 1, *prop, security};
  f.physicals_[id].prop.win32HandleMetaData = nullptr;  // the caller's pointer is only valid during the call
  f.physicals_[id].prop.allocFlags.compressionType =
      compressible && f.grants_compression ? CU_MEM_ALLOCATION_COMP_GENERIC : CU_MEM_ALLOCATION_COMP_NONE;
  f.free_memory_ -= size;
  const CUmemGenericAllocationHandle h = f.next_id_++;
  f.handles_[h] = {id, size};
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult fake_cuMemRelease(CUmemGenericAllocationHandle handle) {
  FAKE_ENTER("cuMemRelease");
  FAKE_REQUIRE_CONTEXT("cuMemRelease");
  auto& f = active();
  const auto found = f.handles_.find(handle);
  if (found == f.handles_.end()) {
    f.note_misuse("cuMemRelease of unknown or released handle " + hex(handle));
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::uint64_t physical_id = found->second.physical_id;
  f.handles_.erase(found);
  f.drop_reference(physical_id);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemAddressReserve(CUdeviceptr* ptr, std::size_t size, std::size_t alignment, CUdeviceptr addr,
                                  unsigned long long flags) {
  FAKE_ENTER("cuMemAddressReserve");
  FAKE_REQUIRE_CONTEXT("cuMemAddressReserve");
  auto& f = active();
  if (size == 0 || size % f.granularity != 0 || addr != 0 || flags != 0 ||
      (alignment != 0 && (alignment & (alignment - 1)) != 0)) {
    f.note_misuse("cuMemAddressReserve with size " + std::to_string(size) + ", alignment " + std::to_string(alignment));
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (size > f.address_space - f.reserved_bytes_) return CUDA_ERROR_OUT_OF_MEMORY;
  const std::size_t align = alignment == 0 ? f.granularity : alignment;
  CUdeviceptr base = (f.next_address_ + align - 1) / align * align;
  f.next_address_ = base + size + f.granularity;  // a guard gap between ranges
  f.ranges_[base] = size;
  f.reserved_bytes_ += size;
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult fake_cuMemAddressFree(CUdeviceptr ptr, std::size_t size) {
  FAKE_ENTER("cuMemAddressFree");
  FAKE_REQUIRE_CONTEXT("cuMemAddressFree");
  auto& f = active();
  const auto found = f.ranges_.find(ptr);
  if (found == f.ranges_.end() || found->second != size) {
    f.note_misuse("cuMemAddressFree of " + hex(ptr) + "+" + std::to_string(size) + ", which is not a reservation");
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (const auto& [address, m] : f.mappings_) {
    if (address >= ptr && address < ptr + size) {
      f.note_misuse("cuMemAddressFree of " + hex(ptr) + " while " + hex(address) + " is still mapped");
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  f.reserved_bytes_ -= size;
  f.ranges_.erase(found);
  return CUDA_SUCCESS;
}

bool inside_reservation(const fake_cuda& f, CUdeviceptr ptr, std::size_t size) {
  for (const auto& [base, length] : f.ranges_)
    if (ptr >= base && size <= length && ptr - base <= length - size) return true;
  return false;
}

CUresult fake_cuMemMap(CUdeviceptr ptr, std::size_t size, std::size_t offset, CUmemGenericAllocationHandle handle,
                       unsigned long long flags) {
  FAKE_ENTER("cuMemMap");
  FAKE_REQUIRE_CONTEXT("cuMemMap");
  auto& f = active();
  const auto h = f.handles_.find(handle);
  if (h == f.handles_.end()) {
    f.note_misuse("cuMemMap of unknown handle " + hex(handle));
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (offset != 0 || flags != 0 || size != h->second.size || ptr % f.granularity != 0) {
    f.note_misuse("cuMemMap with size " + std::to_string(size) + " of a " + std::to_string(h->second.size) +
                  " handle, offset " + std::to_string(offset));
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!inside_reservation(f, ptr, size)) {
    f.note_misuse("cuMemMap at " + hex(ptr) + " outside any reservation");
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (const auto& [address, m] : f.mappings_) {
    if (ptr < address + m.size && address < ptr + size) {
      f.note_misuse("cuMemMap at " + hex(ptr) + " overlaps the mapping at " + hex(address));
      return CUDA_ERROR_ALREADY_MAPPED;
    }
  }
  f.mappings_[ptr] = {ptr, size, handle, h->second.physical_id, 0};
  ++f.physicals_[h->second.physical_id].references;
  return CUDA_SUCCESS;
}

CUresult fake_cuMemUnmap(CUdeviceptr ptr, std::size_t size) {
  FAKE_ENTER("cuMemUnmap");
  FAKE_REQUIRE_CONTEXT("cuMemUnmap");
  auto& f = active();
  // The range must consist of whole mappings, back to back.
  std::vector<CUdeviceptr> covered;
  CUdeviceptr at = ptr;
  while (at < ptr + size) {
    const auto m = f.mappings_.find(at);
    if (m == f.mappings_.end()) {
      f.note_misuse("cuMemUnmap of " + hex(ptr) + "+" + std::to_string(size) + " that is not whole mappings");
      return CUDA_ERROR_INVALID_VALUE;
    }
    covered.push_back(at);
    at += m->second.size;
  }
  if (at != ptr + size || covered.empty()) {
    f.note_misuse("cuMemUnmap of " + hex(ptr) + "+" + std::to_string(size) + " ends inside a mapping");
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (const CUdeviceptr address : covered) {
    // The handle may be released already: the mapping holds the physical memory, not the handle.
    const std::uint64_t physical_id = f.mappings_[address].physical_id;
    f.mappings_.erase(address);
    f.drop_reference(physical_id);
  }
  return CUDA_SUCCESS;
}

CUresult fake_cuMemSetAccess(CUdeviceptr ptr, std::size_t size, const CUmemAccessDesc* desc, std::size_t count) {
  FAKE_ENTER("cuMemSetAccess");
  FAKE_REQUIRE_CONTEXT("cuMemSetAccess");
  auto& f = active();
  if (count == 0 || desc == nullptr) {
    f.note_misuse("cuMemSetAccess with no descriptor");
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (std::size_t i = 0; i < count; ++i)
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
        desc[i].location.id >= f.device_count) {
      f.note_misuse("cuMemSetAccess with a bad descriptor");
      return CUDA_ERROR_INVALID_VALUE;
    }
  CUdeviceptr at = ptr;
  std::vector<CUdeviceptr> covered;
  while (at < ptr + size) {
    const auto m = f.mappings_.find(at);
    if (m == f.mappings_.end()) {
      f.note_misuse("cuMemSetAccess on " + hex(ptr) + "+" + std::to_string(size) + " that is not all mapped");
      return CUDA_ERROR_INVALID_VALUE;
    }
    covered.push_back(at);
    at += m->second.size;
  }
  // A device other than the memory's own needs peer access to it (the real driver refuses the call).
  for (const CUdeviceptr address : covered) {
    const int owner = f.physicals_[f.mappings_[address].physical_id].prop.location.id;
    for (std::size_t i = 0; i < count; ++i) {
      const int who = desc[i].location.id;
      if (who != owner && f.no_peer_access.count({who, owner}) != 0) return CUDA_ERROR_INVALID_DEVICE;
    }
  }
  for (const CUdeviceptr address : covered)
    for (std::size_t i = 0; i < count; ++i) {
      auto& rec = f.mappings_[address];
      if (desc[i].location.id == 0) rec.access = static_cast<int>(desc[i].flags);
      else rec.peers[desc[i].location.id] = static_cast<int>(desc[i].flags);
    }
  return CUDA_SUCCESS;
}

CUresult fake_cuMemExportToShareableHandle(void* out, CUmemGenericAllocationHandle handle,
                                           CUmemAllocationHandleType type, unsigned long long flags) {
  FAKE_ENTER("cuMemExportToShareableHandle");
  FAKE_REQUIRE_CONTEXT("cuMemExportToShareableHandle");
  auto& f = active();
  const auto h = f.handles_.find(handle);
  if (h == f.handles_.end() || type != fake_handles::shareable_type() || flags != 0 ||
      (f.physicals_[h->second.physical_id].prop.requestedHandleTypes & type) == 0) {
    f.note_misuse("cuMemExportToShareableHandle of handle " + hex(handle));
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (f.physicals_[h->second.physical_id].prop.allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_GENERIC &&
      f.compressed_export != CUDA_SUCCESS)
    return f.compressed_export;
  // The exported handle (fake_cuda_handles_*.cpp) holds the physical id so an import can find the memory.
  const std::uint64_t id = h->second.physical_id;
  if (!fake_handles::make_export(out, id, h->second.size, f.physicals_[id].security)) return CUDA_ERROR_OPERATING_SYSTEM;
  return CUDA_SUCCESS;
}

CUresult fake_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* os_handle,
                                             CUmemAllocationHandleType type) {
  FAKE_ENTER("cuMemImportFromShareableHandle");
  FAKE_REQUIRE_CONTEXT("cuMemImportFromShareableHandle");
  auto& f = active();
  if (type != fake_handles::shareable_type()) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t id = 0;
  std::uint64_t size = 0;
  if (!fake_handles::read_export(os_handle, id, size))
    return CUDA_ERROR_UNKNOWN;  // not a handle this driver exported: what the real driver answers
  const auto p = f.physicals_.find(id);
  if (p == f.physicals_.end()) return CUDA_ERROR_INVALID_VALUE;
  ++p->second.references;
  const CUmemGenericAllocationHandle h = f.next_id_++;
  f.handles_[h] = {id, static_cast<std::size_t>(size)};
  *handle = h;
  return CUDA_SUCCESS;
}

// External semaphores: any open handle is accepted as a timeline semaphore; like the real driver, a
// successful import takes an fd (closes it here), never an NT handle; a failed one leaves it to the caller.
CUresult fake_cuImportExternalSemaphore(CUexternalSemaphore* out, const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC* desc) {
  FAKE_ENTER("cuImportExternalSemaphore");
  FAKE_REQUIRE_CONTEXT("cuImportExternalSemaphore");
  auto& f = active();
  if (desc->type != fake_handles::timeline_semaphore_type()) return CUDA_ERROR_INVALID_VALUE;
  void* os_handle = fake_handles::external_handle(*desc);
  if (!fake_handles::is_open(os_handle)) return CUDA_ERROR_INVALID_VALUE;
  void* counter = fake_handles::map_timeline_counter(os_handle);
  fake_handles::take_after_import(os_handle);
  const auto handle = reinterpret_cast<CUexternalSemaphore>(static_cast<std::uintptr_t>(f.next_id_++));
  f.semaphores_[handle] = 0;
  if (counter != nullptr) f.semaphore_counters_[handle] = counter;
  *out = handle;
  return CUDA_SUCCESS;
}

CUresult fake_cuDestroyExternalSemaphore(CUexternalSemaphore semaphore) {
  FAKE_ENTER("cuDestroyExternalSemaphore");
  auto& f = active();
  if (!fake_detail::forget(f.semaphores_, semaphore, "cuDestroyExternalSemaphore of an unknown semaphore"))
    return CUDA_ERROR_INVALID_HANDLE;
  if (const auto c = f.semaphore_counters_.find(semaphore); c != f.semaphore_counters_.end()) {
    fake_handles::unmap_timeline_counter(c->second);
    f.semaphore_counters_.erase(c);
  }
  return CUDA_SUCCESS;
}

CUresult fake_cuSignalExternalSemaphoresAsync(const CUexternalSemaphore* semaphores,
                                              const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* params, unsigned int count,
                                              CUstream) {
  FAKE_ENTER("cuSignalExternalSemaphoresAsync");
  FAKE_REQUIRE_CONTEXT("cuSignalExternalSemaphoresAsync");
  auto& f = active();
  for (unsigned int i = 0; i < count; ++i) {
    const auto s = f.semaphores_.find(semaphores[i]);
    if (s == f.semaphores_.end()) {
      f.note_misuse("cuSignalExternalSemaphoresAsync of an unknown semaphore");
      return CUDA_ERROR_INVALID_HANDLE;
    }
    if (params[i].params.fence.value <= s->second) f.note_misuse("timeline signalled with a value that does not grow");
    s->second = params[i].params.fence.value;
    if (const auto c = f.semaphore_counters_.find(semaphores[i]); c != f.semaphore_counters_.end())
      fake_handles::signal_timeline_counter(c->second, s->second);
  }
  return CUDA_SUCCESS;
}

CUresult fake_cuWaitExternalSemaphoresAsync(const CUexternalSemaphore* semaphores,
                                            const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* params, unsigned int count,
                                            CUstream) {
  FAKE_ENTER("cuWaitExternalSemaphoresAsync");
  FAKE_REQUIRE_CONTEXT("cuWaitExternalSemaphoresAsync");
  auto& f = active();
  for (unsigned int i = 0; i < count; ++i) {
    if (f.semaphores_.count(semaphores[i]) == 0) {
      f.note_misuse("cuWaitExternalSemaphoresAsync on an unknown semaphore");
      return CUDA_ERROR_INVALID_HANDLE;
    }
    f.waits_.push_back(params[i].params.fence.value);
    const auto c = f.semaphore_counters_.find(semaphores[i]);
    if (c != f.semaphore_counters_.end() && !fake_handles::wait_timeline_counter(c->second, params[i].params.fence.value)) {
      f.note_misuse("cuWaitExternalSemaphoresAsync for value " + std::to_string(params[i].params.fence.value) +
                    ", which was not signalled within 10 s (the stream would stall)");
      return CUDA_ERROR_LAUNCH_TIMEOUT;
    }
  }
  return CUDA_SUCCESS;
}

// External memory. The fd must be one this driver exported (cuMemExportToShareableHandle): the
// import references that physical memory, so it outlives the exporter's handle, as on the real
// driver. Like the real driver, a successful import takes an fd (closes it here), never an NT handle;
// a failed one leaves it to the caller.
CUresult fake_cuImportExternalMemory(CUexternalMemory* out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* desc) {
  FAKE_ENTER("cuImportExternalMemory");
  FAKE_REQUIRE_CONTEXT("cuImportExternalMemory");
  auto& f = active();
  if (out == nullptr || desc == nullptr) {
    f.note_misuse("cuImportExternalMemory with a null argument");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (desc->type != fake_handles::external_memory_type() || desc->size == 0 ||
      (desc->flags & ~static_cast<unsigned int>(CUDA_EXTERNAL_MEMORY_DEDICATED)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  void* os_handle = fake_handles::external_handle(*desc);
  if (!fake_handles::is_open(os_handle)) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t id = 0;
  std::uint64_t size = 0;
  if (!fake_handles::read_export(os_handle, id, size)) return CUDA_ERROR_UNKNOWN;  // not one this driver exported
  const auto p = f.physicals_.find(id);
  if (p == f.physicals_.end()) return CUDA_ERROR_INVALID_VALUE;
  if (desc->size > size) return CUDA_ERROR_INVALID_VALUE;  // larger than the exported allocation
  ++p->second.references;
  fake_handles::take_after_import(os_handle);
  const auto handle = reinterpret_cast<CUexternalMemory>(static_cast<std::uintptr_t>(f.next_id_++));
  f.external_memories_[handle] = {id, static_cast<std::size_t>(desc->size),
                                  (desc->flags & CUDA_EXTERNAL_MEMORY_DEDICATED) != 0};
  *out = handle;
  return CUDA_SUCCESS;
}

CUresult fake_cuDestroyExternalMemory(CUexternalMemory memory) {
  FAKE_ENTER("cuDestroyExternalMemory");
  auto& f = active();
  const auto found = f.external_memories_.find(memory);
  if (found == f.external_memories_.end()) {
    f.note_misuse("cuDestroyExternalMemory of an unknown or destroyed import");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  for (const auto& [array, rec] : f.mipmapped_arrays_)
    if (rec.memory == memory) f.note_misuse("cuDestroyExternalMemory while an array mapped from it is alive");
  const std::uint64_t physical_id = found->second.physical_id;
  f.external_memories_.erase(found);
  f.drop_reference(physical_id);
  return CUDA_SUCCESS;
}

// The driver's bytes per channel, for the model's lower-bound footprint check: the library's table
// (cuda::channel_bytes), so it cannot catch a wrong entry there: the footprints that pin that table
// are written out per case in cuda_external_memory_test
// (map_array_footprints_match_expectations_written_out_per_format).
std::size_t fake_element_bytes(CUarray_format format) { return membridge::cuda::channel_bytes(format); }

CUresult fake_cuExternalMemoryGetMappedMipmappedArray(CUmipmappedArray* out, CUexternalMemory memory,
                                                      const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC* desc) {
  FAKE_ENTER("cuExternalMemoryGetMappedMipmappedArray");
  FAKE_REQUIRE_CONTEXT("cuExternalMemoryGetMappedMipmappedArray");
  auto& f = active();
  if (out == nullptr || desc == nullptr) {
    f.note_misuse("cuExternalMemoryGetMappedMipmappedArray with a null argument");
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto found = f.external_memories_.find(memory);
  if (found == f.external_memories_.end()) {
    f.note_misuse("cuExternalMemoryGetMappedMipmappedArray on an unknown or destroyed import");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  const CUDA_ARRAY3D_DESCRIPTOR& a = desc->arrayDesc;
  const std::size_t element = fake_element_bytes(a.Format);
  constexpr unsigned int known_flags = CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_COLOR_ATTACHMENT;
  if (desc->numLevels == 0 || a.Width == 0 || element == 0 ||
      (a.NumChannels != 1 && a.NumChannels != 2 && a.NumChannels != 4) || (a.Flags & ~known_flags) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  // Level 0 alone must fit (the real driver's tiled footprint is larger; this is a lower bound).
  const std::size_t footprint = a.Width * std::max<std::size_t>(a.Height, 1) * std::max<std::size_t>(a.Depth, 1) *
                                a.NumChannels * element;
  if (desc->offset > found->second.size || footprint > found->second.size - desc->offset)
    return CUDA_ERROR_INVALID_VALUE;
  const auto array = reinterpret_cast<CUmipmappedArray>(static_cast<std::uintptr_t>(f.next_id_++));
  const auto level0 = reinterpret_cast<CUarray>(static_cast<std::uintptr_t>(f.next_id_++));
  f.mipmapped_arrays_[array] = {memory, level0, a, desc->numLevels, static_cast<std::size_t>(desc->offset)};
  *out = array;
  return CUDA_SUCCESS;
}

CUresult fake_cuMipmappedArrayGetLevel(CUarray* out, CUmipmappedArray array, unsigned int level) {
  FAKE_ENTER("cuMipmappedArrayGetLevel");
  FAKE_REQUIRE_CONTEXT("cuMipmappedArrayGetLevel");
  auto& f = active();
  const auto found = f.mipmapped_arrays_.find(array);
  if (found == f.mipmapped_arrays_.end()) {
    f.note_misuse("cuMipmappedArrayGetLevel of an unknown or destroyed array");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (level >= found->second.levels) return CUDA_ERROR_INVALID_VALUE;
  if (level != 0) return CUDA_ERROR_NOT_SUPPORTED;  // the model keeps level 0 only
  *out = found->second.level0;
  return CUDA_SUCCESS;
}

CUresult fake_cuMipmappedArrayDestroy(CUmipmappedArray array) {
  FAKE_ENTER("cuMipmappedArrayDestroy");
  auto& f = active();
  const auto found = f.mipmapped_arrays_.find(array);
  if (found == f.mipmapped_arrays_.end()) {
    f.note_misuse("cuMipmappedArrayDestroy of an unknown or destroyed array");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  for (const auto& [surface, on] : f.surfaces_)
    if (on == found->second.level0) f.note_misuse("cuMipmappedArrayDestroy while a surface object on it is alive");
  if (f.external_memories_.count(found->second.memory) == 0)
    f.note_misuse("cuMipmappedArrayDestroy after its external memory was destroyed");
  f.mipmapped_arrays_.erase(found);
  return CUDA_SUCCESS;
}

CUresult fake_cuSurfObjectCreate(CUsurfObject* out, const CUDA_RESOURCE_DESC* desc) {
  FAKE_ENTER("cuSurfObjectCreate");
  FAKE_REQUIRE_CONTEXT("cuSurfObjectCreate");
  auto& f = active();
  if (out == nullptr || desc == nullptr) {
    f.note_misuse("cuSurfObjectCreate with a null argument");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (desc->resType != CU_RESOURCE_TYPE_ARRAY) return CUDA_ERROR_INVALID_VALUE;
  const CUarray target = desc->res.array.hArray;
  const auto found = std::find_if(f.mipmapped_arrays_.begin(), f.mipmapped_arrays_.end(),
                                  [&](const auto& entry) { return entry.second.level0 == target; });
  if (found == f.mipmapped_arrays_.end()) {
    f.note_misuse("cuSurfObjectCreate on an unknown or destroyed array");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if ((found->second.desc.Flags & CUDA_ARRAY3D_SURFACE_LDST) == 0) return CUDA_ERROR_INVALID_VALUE;
  const auto surface = static_cast<CUsurfObject>(f.next_id_++);
  f.surfaces_[surface] = target;
  *out = surface;
  return CUDA_SUCCESS;
}

CUresult fake_cuSurfObjectDestroy(CUsurfObject surface) {
  FAKE_ENTER("cuSurfObjectDestroy");
  auto& f = active();
  if (!fake_detail::forget(f.surfaces_, surface, "cuSurfObjectDestroy of an unknown or destroyed surface object"))
    return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

CUresult fake_cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle) {
  FAKE_ENTER("cuMemGetAllocationPropertiesFromHandle");
  FAKE_REQUIRE_CONTEXT("cuMemGetAllocationPropertiesFromHandle");
  auto& f = active();
  const auto h = f.handles_.find(handle);
  if (prop == nullptr || h == f.handles_.end()) {
    f.note_misuse("cuMemGetAllocationPropertiesFromHandle of unknown handle " + hex(handle));
    return CUDA_ERROR_INVALID_VALUE;
  }
  *prop = f.physicals_[h->second.physical_id].prop;
  return CUDA_SUCCESS;
}

}  // namespace

CUcontext fake_primary_context(int device) noexcept {
  return reinterpret_cast<CUcontext>(&g_primary_markers.at(static_cast<std::size_t>(device)));
}

int fake_context_device(CUcontext ctx) noexcept {
  for (std::size_t i = 0; i < g_primary_markers.size(); ++i)
    if (ctx == reinterpret_cast<CUcontext>(&g_primary_markers[i])) return static_cast<int>(i);
  return -1;
}

fake_cuda::fake_cuda() {
  if (g_active != nullptr) std::abort();  // one fake at a time
  g_active = this;
  free_memory_ = total_memory;
  const bool posix = fake_handles::shareable_type() == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  attributes = {
      {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
      // An H100 exports the platform's handle type: POSIX fds on Linux, NT handles on Windows.
      {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, posix ? 1 : 0},
      {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, posix ? 0 : 1},
      {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, 0},
      {CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
  };
}

fake_cuda::~fake_cuda() {
  for (const auto& [semaphore, counter] : semaphore_counters_) fake_handles::unmap_timeline_counter(counter);
  g_active = nullptr;
}

fake_cuda& fake_cuda::active() noexcept { return *g_active; }

cuda::driver_api fake_cuda::table() {
  cuda::driver_api t{};
  t.cuInit = &fake_cuInit;
  t.cuDriverGetVersion = &fake_cuDriverGetVersion;
  t.cuGetErrorName = &fake_cuGetErrorName;
  t.cuGetErrorString = &fake_cuGetErrorString;
  t.cuDeviceGetCount = &fake_cuDeviceGetCount;
  t.cuDeviceGet = &fake_cuDeviceGet;
  t.cuDeviceGetName = &fake_cuDeviceGetName;
  t.cuDeviceGetUuid = &fake_cuDeviceGetUuid;
  t.cuDeviceGetAttribute = &fake_cuDeviceGetAttribute;
  t.cuDeviceTotalMem = &fake_cuDeviceTotalMem;
  t.cuDeviceGetPCIBusId = &fake_cuDeviceGetPCIBusId;
  t.cuDevicePrimaryCtxRetain = &fake_cuDevicePrimaryCtxRetain;
  t.cuDevicePrimaryCtxRelease = &fake_cuDevicePrimaryCtxRelease;
  t.cuCtxGetCurrent = &fake_cuCtxGetCurrent;
  t.cuCtxPushCurrent = &fake_cuCtxPushCurrent;
  t.cuCtxPopCurrent = &fake_cuCtxPopCurrent;
  t.cuCtxSynchronize = &fake_cuCtxSynchronize;
  t.cuMemGetInfo = &fake_cuMemGetInfo;
  t.cuMemGetAllocationGranularity = &fake_cuMemGetAllocationGranularity;
  t.cuMemCreate = &fake_cuMemCreate;
  t.cuMemRelease = &fake_cuMemRelease;
  t.cuMemAddressReserve = &fake_cuMemAddressReserve;
  t.cuMemAddressFree = &fake_cuMemAddressFree;
  t.cuMemMap = &fake_cuMemMap;
  t.cuMemUnmap = &fake_cuMemUnmap;
  t.cuMemSetAccess = &fake_cuMemSetAccess;
  t.cuMemExportToShareableHandle = &fake_cuMemExportToShareableHandle;
  t.cuMemImportFromShareableHandle = &fake_cuMemImportFromShareableHandle;
  t.cuImportExternalSemaphore = &fake_cuImportExternalSemaphore;
  t.cuDestroyExternalSemaphore = &fake_cuDestroyExternalSemaphore;
  t.cuSignalExternalSemaphoresAsync = &fake_cuSignalExternalSemaphoresAsync;
  t.cuWaitExternalSemaphoresAsync = &fake_cuWaitExternalSemaphoresAsync;
  t.cuImportExternalMemory = &fake_cuImportExternalMemory;
  t.cuDestroyExternalMemory = &fake_cuDestroyExternalMemory;
  t.cuExternalMemoryGetMappedMipmappedArray = &fake_cuExternalMemoryGetMappedMipmappedArray;
  t.cuMipmappedArrayGetLevel = &fake_cuMipmappedArrayGetLevel;
  t.cuMipmappedArrayDestroy = &fake_cuMipmappedArrayDestroy;
  t.cuSurfObjectCreate = &fake_cuSurfObjectCreate;
  t.cuSurfObjectDestroy = &fake_cuSurfObjectDestroy;
  t.cuMemGetAllocationPropertiesFromHandle = &fake_cuMemGetAllocationPropertiesFromHandle;
  t.cuDeviceCanAccessPeer = &fake_cuDeviceCanAccessPeer;
  t.cuDeviceGetP2PAttribute = &fake_cuDeviceGetP2PAttribute;
  fill_graph_table(t);
  fill_event_table(t);
  return t;
}

std::shared_ptr<const cuda::driver> fake_cuda::driver() const {
  auto drv = cuda::driver::from_table(table(), 13000);
  if (!drv) std::abort();  // the fake table is complete by construction
  return std::move(drv).value();
}

void fake_cuda::fail_nth_call(int n, CUresult code) {
  clear_failures();
  fail_at_ = counted_ + n;
  fail_code_ = code;
}

void fake_cuda::fail_function(const std::string& function, CUresult code, int occurrence) {
  clear_failures();
  fail_function_ = function;
  fail_occurrence_ = occurrence;
  fail_code_ = code;
}

void fake_cuda::clear_failures() {
  fail_at_ = -1;
  fail_function_.clear();
  fail_occurrence_ = 0;
  fired_ = false;
}

std::optional<CUresult> fake_cuda::enter_call(const char* function) {
  calls_.emplace_back(function);
  if (!fail_function_.empty() && fail_function_ == function && --fail_occurrence_ == 0) {
    fail_function_.clear();
    fired_ = true;
    failed_function_ = function;
    return fail_code_;
  }
  // Teardown calls are not counted: a failure-at-every-step loop fails forward steps, and the real
  // driver does not fail these for reasons a caller could handle. fail_function() still reaches them.
  static constexpr std::array<std::string_view, 14> teardown{
      "cuCtxPopCurrent",         "cuMemUnmap",          "cuMemRelease",           "cuMemAddressFree",
      "cuDevicePrimaryCtxRelease", "cuDestroyExternalMemory", "cuMipmappedArrayDestroy", "cuSurfObjectDestroy",
      "cuStreamDestroy",         "cuGraphDestroy",      "cuGraphExecDestroy",     "cuEventDestroy",
      "cuMemFreeHost",           "cuStreamSynchronize"};
  if (std::find(teardown.begin(), teardown.end(), function) != teardown.end()) return std::nullopt;
  const int index = counted_++;
  if (fail_at_ >= 0 && index == fail_at_) {
    fail_at_ = -1;
    fired_ = true;
    failed_function_ = function;
    return fail_code_;
  }
  return std::nullopt;
}

void fake_cuda::drop_reference(std::uint64_t physical_id) {
  auto p = physicals_.find(physical_id);
  if (p == physicals_.end()) {
    note_misuse("internal: reference to unknown physical memory");
    return;
  }
  if (--p->second.references == 0) {
    free_memory_ += p->second.size;
    physicals_.erase(p);
  }
}

fake_cuda::snapshot fake_cuda::state() const {
  snapshot s;
  for (const auto& [h, rec] : handles_) s.handles[h] = rec.size;
  s.ranges = ranges_;
  s.mappings = mappings_;
  s.free_memory = free_memory_;
  return s;
}

std::vector<std::string> fake_cuda::leaks() const {
  std::vector<std::string> out;
  for (const auto& [h, rec] : handles_) out.push_back("handle " + hex(h) + " (" + std::to_string(rec.size) + " bytes)");
  for (const auto& [base, size] : ranges_) out.push_back("range " + hex(base) + "+" + std::to_string(size));
  for (const auto& [address, m] : mappings_) out.push_back("mapping " + hex(address) + "+" + std::to_string(m.size));
  if (retains_ != 0) out.push_back(std::to_string(retains_) + " primary context retain(s)");
  if (!context_stack_.empty()) out.push_back(std::to_string(context_stack_.size()) + " pushed context(s)");
  if (!semaphores_.empty()) out.push_back(std::to_string(semaphores_.size()) + " external semaphore(s)");
  for (const auto& [memory, rec] : external_memories_)
    out.push_back("external memory " + hex(reinterpret_cast<std::uintptr_t>(memory)) + " (" +
                  std::to_string(rec.size) + " bytes)");
  for (const auto& [array, rec] : mipmapped_arrays_)
    out.push_back("mipmapped array " + hex(reinterpret_cast<std::uintptr_t>(array)));
  for (const auto& [surface, array] : surfaces_) out.push_back("surface object " + hex(surface));
  add_graph_leaks(out);
  add_event_leaks(out);
  return out;
}

}  // namespace membridge::testing
