#include <membridge/core/units.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include "detail/device_state.hpp"
#include "detail/platform.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace membridge::cuda {

std::string_view to_string(handle_type type) noexcept {
  switch (type) {
    case handle_type::none: return "none";
    case handle_type::posix_fd: return "posix_fd";
    case handle_type::win32: return "win32";
    case handle_type::fabric: return "fabric";
  }
  return "unknown";
}

namespace {

// Checks that the device can make allocations with these options; returns their granularity.
result<std::size_t> granularity_for(const detail::device_state& s, const allocation_options& options) {
  const auto& caps = s.caps;
  if (options.handles != handle_type::none && options.handles != platform_handles)
    return error(errc::unsupported, "vmm_allocation::create",
                 std::string("membridge does not implement ") + std::string(to_string(options.handles)) +
                     " handles on this platform; use " + std::string(to_string(platform_handles)));
  if (options.handles == handle_type::posix_fd && !caps.posix_fd_handles)
    return error(errc::unsupported, "vmm_allocation::create", s.describe() + " cannot export POSIX fd handles");
  if (options.handles == handle_type::win32 && !caps.win32_handles)
    return error(errc::unsupported, "vmm_allocation::create", s.describe() + " cannot export Win32 NT handles");
  if (options.gpu_direct_rdma && !caps.gpu_direct_rdma_with_vmm)
    return error(errc::unsupported, "vmm_allocation::create", s.describe() + " has no GPUDirect RDMA with VMM");
  if (options.compressible && !caps.generic_compression)
    return error(errc::unsupported, "vmm_allocation::create", s.describe() + " has no generic compression");
  if (options.handles == platform_handles && !options.gpu_direct_rdma && !options.compressible)
    return s.granularity;  // the device's default properties, read once at open
  const CUmemAllocationProp prop = s.allocation_prop(options);
  std::size_t granularity = 0;
  if (const CUresult rc = s.api().cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
      rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemGetAllocationGranularity", "reading the granularity for these allocation options");
  return granularity;
}

// What a driver answers when it does not support a combination of allocation properties.
bool is_refusal(CUresult rc) noexcept {
  return rc == CUDA_ERROR_NOT_SUPPORTED || rc == CUDA_ERROR_NOT_PERMITTED || rc == CUDA_ERROR_INVALID_VALUE;
}

// `e` recategorised as unsupported, with `why` added to its context (native code and place kept).
error as_unsupported(const error& e, const std::string& why) {
  return error::from_native(errc::unsupported, e.source(), e.native_code(), std::string(e.native_name()),
                            std::string(e.call()), std::string(e.context()) + ": " + why, e.where());
}

}  // namespace

result<std::size_t> allocation_granularity(const device& dev, const allocation_options& options) {
  if (!dev.valid()) return error(errc::invalid_argument, "allocation_granularity", "the device is empty");
  return granularity_for(*dev.state(), options);
}

vmm_allocation::vmm_allocation(std::shared_ptr<const detail::device_state> state, CUmemGenericAllocationHandle handle,
                               std::size_t size, handle_type handles) noexcept
    : state_(std::move(state)), handle_(handle), size_(size), handles_(handles) {}

result<vmm_allocation> vmm_allocation::create(const device& dev, std::size_t size, const allocation_options& options) {
  if (!dev.valid()) return error(errc::invalid_argument, "vmm_allocation::create", "the device is empty");
  if (size == 0) return error(errc::invalid_argument, "vmm_allocation::create", "size is 0");
  const auto& s = *dev.state();
  MEMBRIDGE_TRY_ASSIGN(const std::size_t granularity, granularity_for(s, options));
  const auto rounded = round_up(size, granularity);
  if (!rounded) return error(errc::invalid_argument, "vmm_allocation::create", "size overflows when rounded up");
  // Windows: the exported NT handles' object gets a security descriptor for the current user only.
  MEMBRIDGE_TRY_ASSIGN(const detail::export_metadata metadata, detail::export_metadata::make(options.handles));
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  CUmemAllocationProp prop = s.allocation_prop(options);
  prop.win32HandleMetaData = metadata.get();
  CUmemGenericAllocationHandle handle = 0;
  if (const CUresult rc = s.api().cuMemCreate(&handle, *rounded, &prop, 0); rc != CUDA_SUCCESS) {
    error e = s.fail(rc, "cuMemCreate",
                     "allocating " + format_bytes(*rounded) + (options.compressible ? " of compressible memory" : ""));
    // The same properties without compression are what every other allocation uses: a refusal here
    // is the driver's rule for compressible memory, not a bad argument.
    if (options.compressible && options.handles != handle_type::none && is_refusal(rc))
      return as_unsupported(e, "the driver refuses compressible memory exportable as " +
                                   std::string(to_string(options.handles)) +
                                   " handles; create it with handles = none to use it in this process only");
    return e;
  }
  vmm_allocation out(dev.state(), handle, *rounded, options.handles);
  if (options.compressible) {
    // Compression is a request the driver may not grant (limited compression resources): read back
    // what it did. On failure `out` releases the handle.
    MEMBRIDGE_TRY_ASSIGN(const allocation_properties props, out.properties());
    out.compressed_ = props.compressed;
  }
  return out;
}

result<allocation_properties> vmm_allocation::properties() const {
  if (handle_ == 0) return error(errc::invalid_argument, "vmm_allocation::properties", "the allocation is empty");
  const auto& s = *state_;
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  CUmemAllocationProp prop{};
  if (const CUresult rc = s.api().cuMemGetAllocationPropertiesFromHandle(&prop, handle_); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemGetAllocationPropertiesFromHandle",
                  "reading back the properties of a " + format_bytes(size_) + " allocation");
  allocation_properties out;
  out.device = prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop.location.id : -1;
  const auto types = static_cast<unsigned>(prop.requestedHandleTypes);
  if ((types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0) {
    out.handles = handle_type::posix_fd;
  } else if ((types & CU_MEM_HANDLE_TYPE_WIN32) != 0) {
    out.handles = handle_type::win32;
  } else if ((types & CU_MEM_HANDLE_TYPE_FABRIC) != 0) {
    out.handles = handle_type::fabric;
  }
  out.compressed = prop.allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_GENERIC;
  out.gpu_direct_rdma = prop.allocFlags.gpuDirectRDMACapable != 0;
  return out;
}

result<vmm_allocation> vmm_allocation::import(const device& dev, os::borrowed_shareable_handle handle,
                                              std::size_t size) {
  if (!dev.valid()) return error(errc::invalid_argument, "vmm_allocation::import", "the device is empty");
  if (!handle.valid())
    return error(errc::invalid_argument, "vmm_allocation::import", std::string("the ") + detail::handle_word() + " is empty");
  const auto& s = *dev.state();
  if (size == 0 || !is_aligned(size, s.granularity))
    return error(errc::invalid_argument, "vmm_allocation::import",
                 "size " + std::to_string(size) + " is not a positive multiple of the granularity (" +
                     format_bytes(s.granularity) + ")");
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  const std::string what =
      "importing a " + format_bytes(size) + " allocation from an " + std::string(detail::handle_word());
  auto imported = detail::import_allocation(s, handle, what);
  if (!imported) {
    error e = std::move(imported).error();
    // The driver answers a handle it did not export with CUDA_ERROR_UNKNOWN (seen on an H100, driver
    // 580): that is the caller's handle, not a membridge bug.
    if (e.source() == error_source::cuda && e.native_code() == CUDA_ERROR_UNKNOWN)
      return error::from_native(errc::invalid_argument, e.source(), e.native_code(), std::string(e.native_name()),
                                std::string(e.call()),
                                std::string(e.context()) + ": the " + detail::handle_word() +
                                    " is not an exported CUDA allocation",
                                e.where());
    return e;
  }
  return vmm_allocation(dev.state(), *imported, size, platform_handles);
}

vmm_allocation vmm_allocation::from_native(const device& dev, CUmemGenericAllocationHandle handle, std::size_t size,
                                           handle_type handles) noexcept {
  return vmm_allocation(dev.state(), handle, size, handles);
}

vmm_allocation::vmm_allocation(vmm_allocation&& other) noexcept
    : state_(std::move(other.state_)),
      handle_(std::exchange(other.handle_, 0)),
      size_(std::exchange(other.size_, 0)),
      handles_(std::exchange(other.handles_, handle_type::none)),
      compressed_(std::exchange(other.compressed_, false)) {}

vmm_allocation& vmm_allocation::operator=(vmm_allocation&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
    handle_ = std::exchange(other.handle_, 0);
    size_ = std::exchange(other.size_, 0);
    handles_ = std::exchange(other.handles_, handle_type::none);
    compressed_ = std::exchange(other.compressed_, false);
  }
  return *this;
}

vmm_allocation::~vmm_allocation() { reset(); }

CUmemGenericAllocationHandle vmm_allocation::release() noexcept {
  size_ = 0;
  handles_ = handle_type::none;
  compressed_ = false;
  state_.reset();
  return std::exchange(handle_, 0);
}

void vmm_allocation::reset() noexcept {
  if (handle_ != 0) {
    // The physical memory lives on while it is mapped, imported or exported elsewhere.
    if (auto scope = state_->enter(); !scope) {
      detail::log_teardown_failure(scope.error());
    } else if (const CUresult rc = state_->api().cuMemRelease(handle_); rc != CUDA_SUCCESS) {
      detail::log_teardown_failure(
          state_->fail(rc, "cuMemRelease", "releasing a " + format_bytes(size_) + " allocation"));
    }
  }
  handle_ = 0;
  size_ = 0;
  handles_ = handle_type::none;
  compressed_ = false;
  state_.reset();
}

result<os::shareable_handle> vmm_allocation::export_handle() const {
  if (handle_ == 0) return error(errc::invalid_argument, "vmm_allocation::export_handle", "the allocation is empty");
  if (handles_ != platform_handles)
    return error(errc::unsupported, "vmm_allocation::export_handle",
                 std::string("the allocation was created with handle type ") + std::string(to_string(handles_)) +
                     ", not " + std::string(to_string(platform_handles)));
  const auto& s = *state_;
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  auto exported = detail::export_allocation(s, handle_,
                                            "exporting a " + format_bytes(size_) + (compressed_ ? " compressed" : "") +
                                                " allocation as an " + detail::handle_word());
  if (!exported && compressed_ && exported.error().source() == error_source::cuda &&
      is_refusal(static_cast<CUresult>(exported.error().native_code())))
    return as_unsupported(exported.error(), "the driver refuses to export compressed memory; create it with "
                                            "compressible = false to share it with Vulkan, GL or other processes");
  return exported;
}

}  // namespace membridge::cuda
