// membridge/cuda/vmm_allocation.hpp: physical device memory made with cuMemCreate, exportable as a
// shareable handle.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace membridge::cuda {

/// How an allocation can be shared with other APIs and processes.
enum class handle_type : std::uint8_t {
  none = 0,      ///< Not shareable.
  posix_fd = 1,  ///< A POSIX file descriptor (Linux): Vulkan/GL import it, Unix sockets carry it.
  win32 = 2,     ///< A Win32 NT handle (Windows): Vulkan/GL import it, DuplicateHandle carries it.
  fabric = 3,    ///< A fabric handle (multi-node NVLink; not implemented yet: create() reports unsupported).
};

/// The handle type of this platform's os::shareable_handle (posix_fd on Linux, win32 on Windows): the
/// one membridge exports and imports; the other platform's type is unsupported.
#if defined(_WIN32)
inline constexpr handle_type platform_handles = handle_type::win32;
#else
inline constexpr handle_type platform_handles = handle_type::posix_fd;
#endif

/// Short name of a handle type, e.g. "posix_fd".
[[nodiscard]] std::string_view to_string(handle_type type) noexcept;

/// Properties of a new physical allocation.
struct allocation_options {
  handle_type handles = platform_handles;       ///< Exportable handle type.
  bool gpu_direct_rdma = false;                 ///< Request GPUDirect RDMA capability.
  bool compressible = false;                    ///< Request generic compression (not shareable on all drivers).
};

/// What the driver says an allocation is (cuMemGetAllocationPropertiesFromHandle): what was asked
/// for at cuMemCreate, with compression as the driver granted it.
struct allocation_properties {
  int device = -1;                         ///< CUDA ordinal of the device the memory lives on.
  handle_type handles = handle_type::none; ///< The shareable handle type it was created with.
  bool compressed = false;                 ///< Generic compression granted (CU_MEM_ALLOCATION_COMP_GENERIC).
  bool gpu_direct_rdma = false;            ///< GPUDirect RDMA capable.
};

/// The granularity of allocations with `options` on `dev`: every size and mapping offset is a
/// multiple of it. Errors: unsupported when the device cannot make such allocations.
[[nodiscard]] result<std::size_t> allocation_granularity(const device& dev, const allocation_options& options);

/// Physical device memory (a CUmemGenericAllocationHandle). It has no address until a mapping puts
/// it into an address_range.
///
/// Move-only; the destructor releases the handle (cuMemRelease). The driver keeps the memory alive
/// while it is still mapped anywhere or imported by another API or process: an exported handle (fd or
/// NT handle) keeps the physical memory alive on its own.
class vmm_allocation {
 public:
  /// Allocates `size` bytes, rounded up to the granularity of `options`, on `dev`.
  /// `options.compressible` is a request: the driver may hand out plain memory instead (limited
  /// compression resources); compressed() says what it granted (read back from the driver).
  /// Errors: invalid_argument for size 0; unsupported when the device cannot export `options.handles`,
  /// has no generic compression, or its driver refuses compressible memory with a shareable handle
  /// type (the message says so: ask for handles = none to keep such memory in this process);
  /// out_of_memory when the device is full.
  /// Ownership: the returned object owns the handle.
  [[nodiscard]] static result<vmm_allocation> create(const device& dev, std::size_t size,
                                                     const allocation_options& options = {});

  /// Imports an allocation another process or API exported as a shareable handle (a POSIX fd on
  /// Linux, an NT handle on Windows); `size` is the allocation's size as the exporter reports it (the
  /// driver cannot tell).
  /// Ownership: `handle` is borrowed; the caller keeps (and eventually closes) it. Linux: membridge
  /// duplicates the fd for the driver call and closes only the duplicate. Windows:
  /// cuMemImportFromShareableHandle borrows the NT handle, which is passed as it is. The returned
  /// object owns a new allocation handle.
  /// Errors: invalid_argument for an empty handle, size 0, a size that is not a granularity multiple,
  /// or a handle that is not an exported CUDA allocation; the driver's other errors.
  [[nodiscard]] static result<vmm_allocation> import(const device& dev, os::borrowed_shareable_handle handle,
                                                     std::size_t size);

  /// Adopts a handle made elsewhere (e.g. by cuMemCreate in an engine).
  /// Ownership: takes `handle`; it is released when this object is destroyed.
  [[nodiscard]] static vmm_allocation from_native(const device& dev, CUmemGenericAllocationHandle handle,
                                                  std::size_t size, handle_type handles) noexcept;

  /// An empty object (no memory).
  vmm_allocation() noexcept = default;
  vmm_allocation(const vmm_allocation&) = delete;
  vmm_allocation& operator=(const vmm_allocation&) = delete;
  /// Takes over `other`'s handle; `other` becomes empty.
  vmm_allocation(vmm_allocation&& other) noexcept;
  /// Releases the held handle, then takes over `other`'s.
  vmm_allocation& operator=(vmm_allocation&& other) noexcept;
  /// Releases the handle (failures go to the log sink).
  ~vmm_allocation();

  /// Exports the allocation as a new shareable handle that Vulkan, GL or another process can import:
  /// a close-on-exec POSIX fd on Linux; on Windows an NT handle (not inheritable) to an object whose
  /// security descriptor, set at create(), grants the current user only. Each call makes a new handle.
  /// Ownership: the caller owns the returned handle (closes it with the fd / CloseHandle).
  /// Errors: invalid_argument for an empty object; unsupported if it was not created with
  /// platform_handles, or if it is compressed and the driver refuses to export compressed memory
  /// (docs/errors.md).
  [[nodiscard]] result<os::shareable_handle> export_handle() const;
#if !defined(_WIN32)
  /// export_handle() under its Linux name. Ownership: the caller owns the returned fd.
  [[nodiscard]] result<os::shareable_handle> export_fd() const { return export_handle(); }
#endif

  /// Size in bytes (a multiple of the granularity).
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The handle type it was created with.
  [[nodiscard]] handle_type handles() const noexcept { return handles_; }
  /// True when a handle is held.
  [[nodiscard]] bool valid() const noexcept { return handle_ != 0; }
  /// True when create() asked for compression and the driver granted it (read back at creation).
  /// False for imported and adopted handles: ask properties() for those.
  [[nodiscard]] bool compressed() const noexcept { return compressed_; }

  /// Reads the allocation's properties back from the driver (cuMemGetAllocationPropertiesFromHandle);
  /// works for imported handles too (an import of compressed memory reports compressed).
  /// Errors: invalid_argument for an empty object; the driver's.
  [[nodiscard]] result<allocation_properties> properties() const;
  /// The driver handle. Ownership: still owned by this object.
  [[nodiscard]] CUmemGenericAllocationHandle native() const noexcept { return handle_; }

  /// Gives the handle up without releasing it; the object becomes empty.
  /// Ownership: the caller must cuMemRelease the returned handle.
  [[nodiscard]] CUmemGenericAllocationHandle release() noexcept;

  /// Releases the handle now; the object becomes empty.
  void reset() noexcept;

  /// Internal: the device state the allocation belongs to. Ownership: shared; for membridge types.
  [[nodiscard]] const std::shared_ptr<const detail::device_state>& state() const noexcept { return state_; }

 private:
  vmm_allocation(std::shared_ptr<const detail::device_state> state, CUmemGenericAllocationHandle handle,
                 std::size_t size, handle_type handles) noexcept;

  std::shared_ptr<const detail::device_state> state_;
  CUmemGenericAllocationHandle handle_ = 0;
  std::size_t size_ = 0;
  handle_type handles_ = handle_type::none;
  bool compressed_ = false;
};

}  // namespace membridge::cuda
