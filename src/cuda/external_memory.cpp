#include <membridge/cuda/external_memory.hpp>

#include "detail/device_state.hpp"
#include "detail/platform.hpp"

#include <membridge/core/units.hpp>

#include <string>
#include <utility>

namespace membridge::cuda {

namespace detail {

/// One cuImportExternalMemory import, shared by the external_memory object and every array mapped
/// from it; destroyed with the last of them.
struct external_memory_state {
  std::shared_ptr<const device_state> device;
  CUexternalMemory handle = nullptr;
  std::size_t size = 0;
  bool dedicated = false;

  external_memory_state() = default;
  external_memory_state(const external_memory_state&) = delete;
  external_memory_state& operator=(const external_memory_state&) = delete;
  ~external_memory_state() {
    if (handle == nullptr || !device) return;
    auto scope = device->enter();
    if (!scope) log_teardown_failure(scope.error());
    if (const CUresult rc = device->api().cuDestroyExternalMemory(handle); rc != CUDA_SUCCESS)
      log_teardown_failure(device->fail(rc, "cuDestroyExternalMemory",
                                        "destroying a " + format_bytes(size) + " external memory import"));
  }
};

/// One mapped mipmapped array, shared by the mapped_array object and every surface object on it;
/// keeps the import alive, and is destroyed (before the import) with the last of them.
struct mapped_array_state {
  std::shared_ptr<const external_memory_state> memory;
  CUmipmappedArray handle = nullptr;
  CUarray level0 = nullptr;
  array_format format{};

  mapped_array_state() = default;
  mapped_array_state(const mapped_array_state&) = delete;
  mapped_array_state& operator=(const mapped_array_state&) = delete;
  ~mapped_array_state() {
    if (handle == nullptr || !memory || !memory->device) return;
    const auto& device = memory->device;
    auto scope = device->enter();
    if (!scope) log_teardown_failure(scope.error());
    if (const CUresult rc = device->api().cuMipmappedArrayDestroy(handle); rc != CUDA_SUCCESS)
      log_teardown_failure(device->fail(rc, "cuMipmappedArrayDestroy", "destroying a " + to_string(format) + " array"));
  }
};

}  // namespace detail

namespace {

constexpr const char* import_call = "external_memory::import";
constexpr const char* map_call = "external_memory::map_array";

const char* format_name(CUarray_format format) noexcept {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8: return "CU_AD_FORMAT_UNSIGNED_INT8";
    case CU_AD_FORMAT_UNSIGNED_INT16: return "CU_AD_FORMAT_UNSIGNED_INT16";
    case CU_AD_FORMAT_UNSIGNED_INT32: return "CU_AD_FORMAT_UNSIGNED_INT32";
    case CU_AD_FORMAT_SIGNED_INT8: return "CU_AD_FORMAT_SIGNED_INT8";
    case CU_AD_FORMAT_SIGNED_INT16: return "CU_AD_FORMAT_SIGNED_INT16";
    case CU_AD_FORMAT_SIGNED_INT32: return "CU_AD_FORMAT_SIGNED_INT32";
    case CU_AD_FORMAT_HALF: return "CU_AD_FORMAT_HALF";
    case CU_AD_FORMAT_FLOAT: return "CU_AD_FORMAT_FLOAT";
    default: return nullptr;
  }
}

}  // namespace

std::size_t channel_bytes(CUarray_format format) noexcept {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}

std::string to_string(const array_format& format) {
  std::string name;
  if (const char* known = format_name(format.format)) {
    name = known;
  } else {
    name = "CUarray_format " + std::to_string(static_cast<int>(format.format));
  }
  return std::to_string(format.width) + "x" + std::to_string(format.height) + " x " + std::to_string(format.channels) +
         " " + name + " at offset " + std::to_string(format.offset);
}

// ---------------------------------------------------------------------------------- external_memory ---

result<external_memory> external_memory::import(const device& dev, os::borrowed_shareable_handle fd, std::size_t size,
                                                bool dedicated) {
  if (!dev.valid()) return error(errc::invalid_argument, import_call, "the device is empty");
  if (!fd.valid())
    return error(errc::invalid_argument, import_call, std::string("the ") + detail::handle_word() + " is invalid");
  if (size == 0) return error(errc::invalid_argument, import_call, "the size is 0");
  const auto& device_state = dev.state();
  auto state = std::make_shared<detail::external_memory_state>();
  MEMBRIDGE_TRY_ASSIGN(auto scope, device_state->enter());
  // Who owns the handle during the call differs per platform (detail/platform.hpp); the caller's
  // handle is never closed.
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  desc.size = size;
  desc.flags = dedicated ? CUDA_EXTERNAL_MEMORY_DEDICATED : 0U;
  const std::string word = detail::handle_word();
  const std::string what =
      std::string("importing a ") + format_bytes(size) + (dedicated ? " dedicated" : "") + " opaque " + word +
      " as external memory";
  auto imported = detail::import_external_memory(*device_state, fd, desc, what);
  if (!imported) {
    error e = std::move(imported).error();
    const auto rc = static_cast<CUresult>(e.native_code());
    if (e.source() != error_source::cuda) return e;
    if (rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_UNKNOWN)
      return error::from_native(errc::invalid_argument, e.source(), e.native_code(), std::string(e.native_name()),
                                std::string(e.call()),
                                std::string(e.context()) +
                                    ": CUDA cannot import this " + word + " as opaque memory of that size (not exportable "
                                    "memory, another GPU's, or smaller than the size given)",
                                e.where());
    if (rc == CUDA_ERROR_NOT_SUPPORTED)
      return std::move(e).add_context("the driver does not support importing this memory as external memory");
    return e;
  }
  state->device = device_state;
  state->handle = *imported;
  state->size = size;
  state->dedicated = dedicated;
  external_memory out;
  out.state_ = std::move(state);
  return out;
}

result<mapped_array> external_memory::map_array(const array_format& format) const {
  if (!valid()) return error(errc::invalid_argument, map_call, "the external memory is empty");
  if (format.width == 0 || format.height == 0)
    return error(errc::invalid_argument, map_call, "the array is " + to_string(format) + ": its extent must be > 0");
  if (format.channels != 1 && format.channels != 2 && format.channels != 4)
    return error(errc::invalid_argument, map_call,
                 "the array has " + std::to_string(format.channels) + " channels; CUDA arrays have 1, 2 or 4");
  const auto& memory = *state_;
  if (format.offset >= memory.size)
    return error(errc::invalid_argument, map_call,
                 "offset " + std::to_string(format.offset) + " lies past the " + format_bytes(memory.size) + " import");
  if (const std::size_t bytes = channel_bytes(format.format); bytes != 0) {
    const std::size_t room = memory.size - format.offset;
    const std::size_t texel = bytes * format.channels;
    // width * height * texel > room, without overflow.
    if (format.width > room / texel || format.height > room / texel / format.width)
      return error(errc::invalid_argument, map_call,
                   "a " + to_string(format) + " array needs more than the " + format_bytes(memory.size) +
                       " the memory was imported with");
  }
  const auto& device = memory.device;
  MEMBRIDGE_TRY_ASSIGN(auto scope, device->enter());
  auto state = std::make_shared<detail::mapped_array_state>();
  state->memory = state_;
  state->format = format;
  CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC desc{};
  desc.offset = format.offset;
  desc.arrayDesc.Width = format.width;
  desc.arrayDesc.Height = format.height;
  desc.arrayDesc.Depth = 0;  // a 2D array
  desc.arrayDesc.Format = format.format;
  desc.arrayDesc.NumChannels = format.channels;
  desc.arrayDesc.Flags = (format.surface_load_store ? CUDA_ARRAY3D_SURFACE_LDST : 0U) |
                         (format.color_attachment ? CUDA_ARRAY3D_COLOR_ATTACHMENT : 0U);
  desc.numLevels = 1;
  CUmipmappedArray handle = nullptr;
  if (const CUresult rc = device->api().cuExternalMemoryGetMappedMipmappedArray(&handle, memory.handle, &desc);
      rc != CUDA_SUCCESS) {
    error e = device->fail(rc, "cuExternalMemoryGetMappedMipmappedArray",
                           "mapping a " + to_string(format) + " array on " + format_bytes(memory.size) +
                               " of external memory");
    if (rc == CUDA_ERROR_NOT_SUPPORTED)
      return std::move(e).add_context("the driver cannot map this memory as a CUDA array");
    return e;
  }
  state->handle = handle;  // from here on, a failure destroys it with `state`
  CUarray level0 = nullptr;
  if (const CUresult rc = device->api().cuMipmappedArrayGetLevel(&level0, handle, 0); rc != CUDA_SUCCESS)
    return device->fail(rc, "cuMipmappedArrayGetLevel", "reading level 0 of a " + to_string(format) + " array");
  state->level0 = level0;
  return mapped_array(std::move(state));
}

external_memory::external_memory(external_memory&& other) noexcept : state_(std::move(other.state_)) {}

external_memory& external_memory::operator=(external_memory&& other) noexcept {
  if (this != &other) state_ = std::move(other.state_);  // the old share goes first
  return *this;
}

external_memory::~external_memory() = default;

void external_memory::reset() noexcept { state_.reset(); }

CUexternalMemory external_memory::native() const noexcept { return state_ ? state_->handle : nullptr; }
std::size_t external_memory::size() const noexcept { return state_ ? state_->size : 0; }
bool external_memory::dedicated() const noexcept { return state_ ? state_->dedicated : false; }

// ------------------------------------------------------------------------------------- mapped_array ---

mapped_array::mapped_array(std::shared_ptr<const detail::mapped_array_state> state) noexcept
    : state_(std::move(state)) {}

mapped_array::mapped_array(mapped_array&& other) noexcept : state_(std::move(other.state_)) {}

mapped_array& mapped_array::operator=(mapped_array&& other) noexcept {
  if (this != &other) state_ = std::move(other.state_);
  return *this;
}

mapped_array::~mapped_array() = default;

void mapped_array::reset() noexcept { state_.reset(); }

CUarray mapped_array::level0() const noexcept { return state_ ? state_->level0 : nullptr; }
CUmipmappedArray mapped_array::native() const noexcept { return state_ ? state_->handle : nullptr; }

const array_format& mapped_array::format() const noexcept {
  static const array_format empty{};
  return state_ ? state_->format : empty;
}

result<surface_object> mapped_array::make_surface() const {
  constexpr const char* call = "mapped_array::make_surface";
  if (!valid()) return error(errc::invalid_argument, call, "the array is empty");
  if (!state_->format.surface_load_store)
    return error(errc::invalid_argument, call,
                 "the " + to_string(state_->format) + " array was mapped without surface_load_store");
  const auto& device = state_->memory->device;
  MEMBRIDGE_TRY_ASSIGN(auto scope, device->enter());
  CUDA_RESOURCE_DESC desc{};
  desc.resType = CU_RESOURCE_TYPE_ARRAY;
  desc.res.array.hArray = state_->level0;
  CUsurfObject surface = 0;
  if (const CUresult rc = device->api().cuSurfObjectCreate(&surface, &desc); rc != CUDA_SUCCESS)
    return device->fail(rc, "cuSurfObjectCreate", "a surface object on a " + to_string(state_->format) + " array");
  return surface_object(state_, surface);
}

// ----------------------------------------------------------------------------------- surface_object ---

surface_object::surface_object(std::shared_ptr<const detail::mapped_array_state> array, CUsurfObject surface) noexcept
    : array_(std::move(array)), surface_(surface) {}

surface_object::surface_object(surface_object&& other) noexcept
    : array_(std::move(other.array_)), surface_(std::exchange(other.surface_, 0)) {}

surface_object& surface_object::operator=(surface_object&& other) noexcept {
  if (this != &other) {
    reset();
    array_ = std::move(other.array_);
    surface_ = std::exchange(other.surface_, 0);
  }
  return *this;
}

surface_object::~surface_object() { reset(); }

void surface_object::reset() noexcept {
  if (array_ && array_->memory && array_->memory->device) {
    const auto& device = array_->memory->device;
    auto scope = device->enter();
    if (!scope) detail::log_teardown_failure(scope.error());
    if (const CUresult rc = device->api().cuSurfObjectDestroy(surface_); rc != CUDA_SUCCESS)
      detail::log_teardown_failure(device->fail(
          rc, "cuSurfObjectDestroy", "destroying a surface object on a " + to_string(array_->format) + " array"));
  }
  surface_ = 0;
  array_.reset();  // after the surface object: the array may go with this share
}

}  // namespace membridge::cuda
