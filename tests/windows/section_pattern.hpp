// Sections with a recognisable first 16 bytes: the NT handles the Windows vulkan and gl tests import
// (the scripted drivers read the payload through their own reference, so a test can tell it is the
// same memory).
#pragma once

#include <membridge/os/unique_handle.hpp>

#include <windows.h>

#include <array>
#include <cstring>

namespace membridge::testing {

/// A test's 16-byte pattern.
using section_pattern = std::array<unsigned char, 16>;

/// Byte i is seed * seed_factor + i * index_factor + offset (each test file picks its own factors,
/// so that the vulkan and gl tests never share a pattern).
inline section_pattern make_pattern(unsigned seed, unsigned seed_factor, unsigned index_factor, unsigned offset) {
  section_pattern out{};
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<unsigned char>(seed * seed_factor + i * index_factor + offset);
  return out;
}

/// A 64 KiB pagefile-backed section holding `pattern` at byte 0; empty on failure.
/// Ownership: the caller owns the returned handle.
inline os::unique_handle make_section(const section_pattern& pattern) {
  os::unique_handle section(::CreateFileMappingW(INVALID_HANDLE_VALUE, nullptr, PAGE_READWRITE, 0, 65536, nullptr));
  void* view = section.valid() ? ::MapViewOfFile(section.get(), FILE_MAP_WRITE, 0, 0, pattern.size()) : nullptr;
  if (view == nullptr) return os::unique_handle();
  std::memcpy(view, pattern.data(), pattern.size());
  ::UnmapViewOfFile(view);
  return section;
}

}  // namespace membridge::testing
