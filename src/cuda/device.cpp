#include <membridge/core/log.hpp>
#include <membridge/core/units.hpp>
#include <membridge/cuda/device.hpp>

#include "detail/device_state.hpp"

#include <cstdio>
#include <string>
#include <utility>

namespace membridge::cuda {

// ---------------------------------------------------------------------- detail::device_state ---

namespace detail {

context_scope::~context_scope() {
  if (!pushed_) return;
  CUcontext popped = nullptr;
  if (const CUresult rc = api_->cuCtxPopCurrent(&popped); rc != CUDA_SUCCESS)
    log(log_level::warning, "membridge: cuCtxPopCurrent failed with CUresult " + std::to_string(static_cast<int>(rc)));
}

device_state::~device_state() {
  if (primary == nullptr) return;
  if (const CUresult rc = api().cuDevicePrimaryCtxRelease(handle); rc != CUDA_SUCCESS)
    log_teardown_failure(fail(rc, "cuDevicePrimaryCtxRelease", "releasing the primary context"));
}

result<context_scope> device_state::enter() const {
  CUcontext current = nullptr;
  if (const CUresult rc = api().cuCtxGetCurrent(&current); rc != CUDA_SUCCESS)
    return fail(rc, "cuCtxGetCurrent", "checking the current context");
  if (current == primary) return context_scope(&api(), false);
  if (const CUresult rc = api().cuCtxPushCurrent(primary); rc != CUDA_SUCCESS)
    return fail(rc, "cuCtxPushCurrent", "making the primary context current");
  return context_scope(&api(), true);
}

error device_state::fail(CUresult code, std::string call, std::string context, std::source_location where) const {
  if (!context.empty()) context += " on ";
  context += describe();
  return drv->make_error(code, std::move(call), std::move(context), where);
}

CUmemAllocationProp device_state::allocation_prop(const allocation_options& options) const noexcept {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = handle;
  switch (options.handles) {
    case handle_type::none: prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE; break;
    case handle_type::posix_fd: prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; break;
    case handle_type::win32: prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_WIN32; break;
    case handle_type::fabric: prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC; break;
  }
  prop.allocFlags.gpuDirectRDMACapable = options.gpu_direct_rdma ? 1 : 0;
  prop.allocFlags.compressionType = options.compressible ? CU_MEM_ALLOCATION_COMP_GENERIC : 0;
  return prop;
}

CUmemAccessDesc device_state::access_desc(access rights) const noexcept {
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = handle;
  switch (rights) {
    case access::none: desc.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE; break;
    case access::read: desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READ; break;
    case access::read_write: desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE; break;
  }
  return desc;
}

std::string device_state::describe() const {
  std::string out = "device " + std::to_string(ordinal);
  if (!name.empty()) out += " (" + name + ")";
  return out;
}

void log_teardown_failure(const error& e) noexcept { log(log_level::error, "membridge teardown: " + e.message()); }

}  // namespace detail

// ----------------------------------------------------------------------------------- device ---

namespace {

// Reads a boolean capability; an attribute the driver does not know reads as false (logged).
bool read_flag(const detail::device_state& s, CUdevice_attribute attribute, const char* what) {
  int value = 0;
  const CUresult rc = s.api().cuDeviceGetAttribute(&value, attribute, s.handle);
  if (rc != CUDA_SUCCESS) {
    log(log_level::debug, "membridge: " + s.describe() + " cannot report " + what + " (" + s.drv->error_name(rc) +
                              "); treating it as unsupported");
    return false;
  }
  return value != 0;
}

result<int> read_int(const detail::device_state& s, CUdevice_attribute attribute, const char* what) {
  int value = 0;
  if (const CUresult rc = s.api().cuDeviceGetAttribute(&value, attribute, s.handle); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuDeviceGetAttribute", std::string("reading ") + what);
  return value;
}

// The UUID of the device `handle`.
result<device_uuid> query_uuid(const driver& drv, CUdevice handle) {
  CUuuid raw{};
  if (const CUresult rc = drv.api().cuDeviceGetUuid(&raw, handle); rc != CUDA_SUCCESS)
    return drv.make_error(rc, "cuDeviceGetUuid", "reading the UUID of device " + std::to_string(handle));
  return device_uuid::from_native(raw);
}

result<void> read_identity(detail::device_state& s) {
  const auto& api = s.api();
  char name[256] = {};
  if (const CUresult rc = api.cuDeviceGetName(name, sizeof name - 1, s.handle); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuDeviceGetName", "reading the device name");
  s.name = name;
  MEMBRIDGE_TRY_ASSIGN(s.uuid, query_uuid(*s.drv, s.handle));
  char bus[32] = {};
  if (api.cuDeviceGetPCIBusId(bus, sizeof bus - 1, s.handle) == CUDA_SUCCESS) s.pci_bus_id = bus;
  std::size_t total = 0;
  if (const CUresult rc = api.cuDeviceTotalMem(&total, s.handle); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuDeviceTotalMem", "reading the memory size");
  s.total_memory = total;
  MEMBRIDGE_TRY_ASSIGN(s.compute_capability[0],
                       read_int(s, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "the compute capability"));
  MEMBRIDGE_TRY_ASSIGN(s.compute_capability[1],
                       read_int(s, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "the compute capability"));
  return ok();
}

// The optional capabilities; VMM support itself is read strictly by open().
void read_capabilities(detail::device_state& s) {
  auto& c = s.caps;
  c.posix_fd_handles = read_flag(s, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, "POSIX fd handles");
  c.win32_handles = read_flag(s, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, "Win32 handles");
  c.fabric_handles = read_flag(s, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, "fabric handles");
  c.gpu_direct_rdma_with_vmm =
      read_flag(s, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, "GPUDirect RDMA with VMM");
  c.generic_compression = read_flag(s, CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, "generic compression");
  c.timeline_semaphore_interop =
      read_flag(s, CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED, "timeline semaphore interop");
  c.unified_addressing = read_flag(s, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, "unified addressing");
}

result<void> read_granularity(detail::device_state& s) {
  const CUmemAllocationProp prop = s.allocation_prop(allocation_options{});
  std::size_t minimum = 0;
  std::size_t recommended = 0;
  if (const CUresult rc = s.api().cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
      rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemGetAllocationGranularity", "reading the minimum granularity");
  if (const CUresult rc =
          s.api().cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
      rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemGetAllocationGranularity", "reading the recommended granularity");
  if (minimum == 0 || (minimum & (minimum - 1)) != 0)
    return error(errc::internal, "cuMemGetAllocationGranularity",
                 "the driver reported a granularity of " + std::to_string(minimum) + " bytes on " + s.describe());
  s.granularity = minimum;
  s.recommended_granularity = recommended >= minimum ? recommended : minimum;
  return ok();
}

}  // namespace

result<int> device::count() {
  MEMBRIDGE_TRY_ASSIGN(auto drv, driver::load());
  return count(std::move(drv));
}

result<int> device::count(std::shared_ptr<const driver> drv) {
  if (!drv) return error(errc::invalid_argument, "device::count", "no driver");
  int n = 0;
  if (const CUresult rc = drv->api().cuDeviceGetCount(&n); rc != CUDA_SUCCESS)
    return drv->make_error(rc, "cuDeviceGetCount", "counting CUDA devices");
  return n;
}

result<device> device::open(int ordinal) {
  MEMBRIDGE_TRY_ASSIGN(auto drv, driver::load());
  return open(std::move(drv), ordinal);
}

result<device> device::open(std::shared_ptr<const driver> drv, int ordinal) {
  MEMBRIDGE_TRY_ASSIGN(const int n, count(drv));
  if (ordinal < 0 || ordinal >= n)
    return error(errc::invalid_argument, "device::open",
                 "device " + std::to_string(ordinal) + " does not exist (" + std::to_string(n) + " CUDA device" +
                     (n == 1 ? "" : "s") + " present)");
  auto state = std::make_shared<detail::device_state>();
  state->drv = std::move(drv);
  state->ordinal = ordinal;
  const auto& api = state->api();
  if (const CUresult rc = api.cuDeviceGet(&state->handle, ordinal); rc != CUDA_SUCCESS)
    return state->fail(rc, "cuDeviceGet", "opening the device");
  MEMBRIDGE_TRY(read_identity(*state));
  MEMBRIDGE_TRY_ASSIGN(const int vmm, read_int(*state, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                               "virtual memory management support"));
  state->caps.virtual_memory_management = vmm != 0;
  read_capabilities(*state);
  if (!state->caps.virtual_memory_management)
    return error(errc::unsupported, "device::open",
                 state->describe() + " does not support CUDA virtual memory management (cuMemCreate/cuMemMap)");
  MEMBRIDGE_TRY(read_granularity(*state));
  CUcontext primary = nullptr;
  if (const CUresult rc = api.cuDevicePrimaryCtxRetain(&primary, state->handle); rc != CUDA_SUCCESS)
    return state->fail(rc, "cuDevicePrimaryCtxRetain", "retaining the primary context");
  state->primary = primary;
  return device(std::move(state));
}

result<device> device::open_by_uuid(std::shared_ptr<const driver> drv, const device_uuid& uuid) {
  MEMBRIDGE_TRY_ASSIGN(const int n, count(drv));
  for (int i = 0; i < n; ++i) {
    CUdevice handle = 0;
    if (drv->api().cuDeviceGet(&handle, i) != CUDA_SUCCESS) continue;  // a device that cannot be asked cannot match
    if (const auto candidate = query_uuid(*drv, handle); candidate && *candidate == uuid) return open(drv, i);
  }
  return error(errc::invalid_argument, "device::open_by_uuid",
               "no CUDA device has UUID " + uuid.to_string() + " (" + std::to_string(n) + " devices checked)");
}

int device::ordinal() const noexcept { return state_->ordinal; }
const std::string& device::name() const noexcept { return state_->name; }
const device_uuid& device::uuid() const noexcept { return state_->uuid; }
const std::string& device::pci_bus_id() const noexcept { return state_->pci_bus_id; }
std::array<int, 2> device::compute_capability() const noexcept { return state_->compute_capability; }
std::size_t device::total_memory() const noexcept { return state_->total_memory; }
const device_capabilities& device::capabilities() const noexcept { return state_->caps; }
std::size_t device::granularity() const noexcept { return state_->granularity; }
std::size_t device::recommended_granularity() const noexcept { return state_->recommended_granularity; }
const driver& device::get_driver() const noexcept { return *state_->drv; }
std::shared_ptr<const driver> device::shared_driver() const noexcept { return state_->drv; }
CUdevice device::native() const noexcept { return state_->handle; }
CUcontext device::primary_context() const noexcept { return state_->primary; }

result<memory_info> device::memory() const {
  if (!state_) return error(errc::invalid_argument, "device::memory", "the device is empty");
  MEMBRIDGE_TRY_ASSIGN(auto scope, state_->enter());
  memory_info info;
  if (const CUresult rc = state_->api().cuMemGetInfo(&info.free_bytes, &info.total_bytes); rc != CUDA_SUCCESS)
    return state_->fail(rc, "cuMemGetInfo", "reading free memory");
  return info;
}

result<void> device::synchronize() const {
  if (!state_) return error(errc::invalid_argument, "device::synchronize", "the device is empty");
  MEMBRIDGE_TRY_ASSIGN(auto scope, state_->enter());
  if (const CUresult rc = state_->api().cuCtxSynchronize(); rc != CUDA_SUCCESS)
    return state_->fail(rc, "cuCtxSynchronize", "waiting for queued work");
  return ok();
}

}  // namespace membridge::cuda
