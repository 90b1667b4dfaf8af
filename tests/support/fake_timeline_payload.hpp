// The payload of a timeline semaphore in the Windows test fakes: a pagefile-backed section (a real
// kernel object, shared through NT handles like a driver's semaphore object) holding the counter.
// The scripted Vulkan driver (tests/windows/vulkan_fake_driver.cpp) makes one per semaphore and
// exports it; the scripted CUDA driver's Win32 timeline imports (fake_cuda_handles_win32.cpp) map
// the section the NT handle names, so a value signalled on either side is read on the other, as on
// one GPU, and across processes. Windows only.
#pragma once

#include <windows.h>

#include <chrono>
#include <cstdint>
#include <thread>

namespace membridge::testing {

/// The section's contents.
struct timeline_payload {
  std::uint64_t magic;     ///< timeline_payload_magic: marks sections the fakes made.
  volatile LONG64 value;   ///< The counter.
};
inline constexpr std::uint64_t timeline_payload_magic = 0x6d6274696d656c6eULL;

/// A new payload section at `initial`, made with `attributes` (null: the default security).
/// Ownership: the caller owns the returned handle (null when the OS call failed).
inline HANDLE create_timeline_payload(SECURITY_ATTRIBUTES* attributes, std::uint64_t initial) {
  HANDLE section = ::CreateFileMappingW(INVALID_HANDLE_VALUE, attributes, PAGE_READWRITE, 0, sizeof(timeline_payload), nullptr);
  if (section == nullptr) return nullptr;
  auto* view = static_cast<timeline_payload*>(::MapViewOfFile(section, FILE_MAP_WRITE, 0, 0, sizeof(timeline_payload)));
  if (view == nullptr) {
    ::CloseHandle(section);
    return nullptr;
  }
  view->magic = timeline_payload_magic;
  view->value = static_cast<LONG64>(initial);
  ::UnmapViewOfFile(view);
  return section;
}

/// A view of the payload `handle` names, or null when it names anything else (an event, a section
/// the fakes did not make as a payload, a closed handle). Borrows the handle; the view keeps the
/// object alive until unmap_timeline_payload.
inline timeline_payload* map_timeline_payload(HANDLE handle) {
  if (handle == nullptr) return nullptr;
  auto* view = static_cast<timeline_payload*>(::MapViewOfFile(handle, FILE_MAP_WRITE, 0, 0, sizeof(timeline_payload)));
  if (view == nullptr) return nullptr;
  if (view->magic == timeline_payload_magic) return view;
  ::UnmapViewOfFile(view);
  return nullptr;
}

/// Unmaps a view from map_timeline_payload (null is ignored).
inline void unmap_timeline_payload(timeline_payload* view) noexcept {
  if (view != nullptr) ::UnmapViewOfFile(view);
}

/// The counter's value.
inline std::uint64_t load_timeline_value(const timeline_payload* view) noexcept {
  return static_cast<std::uint64_t>(::InterlockedCompareExchange64(const_cast<volatile LONG64*>(&view->value), 0, 0));
}

/// Sets the counter to `value`.
inline void store_timeline_value(timeline_payload* view, std::uint64_t value) noexcept {
  ::InterlockedExchange64(&view->value, static_cast<LONG64>(value));
}

/// Waits until the counter reaches `value`; false after `timeout`.
inline bool wait_timeline_value(const timeline_payload* view, std::uint64_t value, std::chrono::nanoseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (load_timeline_value(view) < value) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace membridge::testing
