// The scripted CUDA driver's OS handles, per platform (fake_cuda_handles_posix.cpp: memfds;
// fake_cuda_handles_win32.cpp: NT section objects). An exported handle records the physical
// allocation's id and size, so an import finds the memory; who owns a handle during each call is
// the real driver's rule for that platform (see src/cuda/detail/platform.hpp).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

namespace membridge::testing::fake_handles {

/// The shareable handle type this platform's driver exports (POSIX_FILE_DESCRIPTOR / WIN32).
[[nodiscard]] CUmemAllocationHandleType shareable_type() noexcept;
/// The external memory handle type for an opaque handle (OPAQUE_FD / OPAQUE_WIN32).
[[nodiscard]] CUexternalMemoryHandleType external_memory_type() noexcept;
/// The external timeline semaphore handle type (TIMELINE_SEMAPHORE_FD / _WIN32).
[[nodiscard]] CUexternalSemaphoreHandleType timeline_semaphore_type() noexcept;

/// Checks cuMemCreate's win32HandleMetaData against the requested handle types: Windows needs an
/// OBJECT_ATTRIBUTES with a security descriptor for WIN32, every other case a null pointer. Returns
/// a misuse description ("" when right); `security` gets the descriptor's DACL as SDDL (Windows) for
/// the objects exports make.
[[nodiscard]] std::string check_create_metadata(const CUmemAllocationProp& prop, std::string& security);

/// Makes a new exported handle naming (id, size), written to `out` as the platform's driver writes it
/// (an int fd, not close-on-exec; an NT HANDLE, not inheritable, to a section with `security`).
/// False when the OS call failed.
[[nodiscard]] bool make_export(void* out, std::uint64_t id, std::uint64_t size, const std::string& security);

/// Reads (id, size) from a handle make_export made; false for any other handle. Borrows it.
[[nodiscard]] bool read_export(void* os_handle, std::uint64_t& id, std::uint64_t& size);

/// The handle inside an external memory / semaphore descriptor, as a pointer-sized value.
[[nodiscard]] void* external_handle(const CUDA_EXTERNAL_MEMORY_HANDLE_DESC& desc) noexcept;
[[nodiscard]] void* external_handle(const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC& desc) noexcept;

/// True while `os_handle` is open in this process.
[[nodiscard]] bool is_open(void* os_handle) noexcept;

/// What a successful cuImportExternalMemory/Semaphore does with the handle: POSIX takes the fd (closes
/// it here); Windows never takes an NT handle (leaves it to the caller).
void take_after_import(void* os_handle) noexcept;

/// The counter an imported timeline semaphore shares with the API that exported it: on Windows a
/// view of the payload section the NT handle names (fake_timeline_payload.hpp: the Windows Vulkan
/// fake's semaphores), so a value signalled on either side is seen on the other; null where the
/// driver keeps the value itself (POSIX, or a handle that names no payload). Borrows the handle.
[[nodiscard]] void* map_timeline_counter(void* os_handle) noexcept;
/// Unmaps a counter from map_timeline_counter (null is ignored).
void unmap_timeline_counter(void* counter) noexcept;
/// A GPU signal of the counter: sets it to `value`.
void signal_timeline_counter(void* counter, std::uint64_t value) noexcept;
/// A GPU wait on the counter. This driver's streams run each operation when it is enqueued, so the
/// enqueue returns once the counter reached `value` (what the stream's next operation would wait
/// for); false after 10 s (a wait that would stall the stream).
[[nodiscard]] bool wait_timeline_counter(void* counter, std::uint64_t value) noexcept;

}  // namespace membridge::testing::fake_handles
