// membridge/os/dynamic_library.hpp: a shared library opened at run time (dlopen / LoadLibrary).
#pragma once

#include <membridge/core/result.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace membridge::os {

/// An open shared library. membridge loads every driver (libcuda, libvulkan, libEGL) through this,
/// so its binaries start on machines without a GPU and report what is missing instead of failing to
/// load. Move-only; closes the library when destroyed.
class dynamic_library {
 public:
  /// An empty object (no library).
  dynamic_library() noexcept = default;

  /// Opens `name` (a soname such as "libcuda.so.1", or a path) with immediate binding and local
  /// symbols (Linux: dlopen); on Windows a DLL name ("nvcuda.dll", searched in the application's
  /// directory and System32, never the current directory) or a path (LoadLibraryExA).
  /// Errors: driver_unavailable with the loader's message (file missing, wrong architecture,
  /// unresolved dependencies; on Windows the ERROR_* name).
  /// Ownership: the returned object holds one reference on the library and drops it when destroyed.
  [[nodiscard]] static result<dynamic_library> open(const std::string& name);

  dynamic_library(const dynamic_library&) = delete;
  dynamic_library& operator=(const dynamic_library&) = delete;
  /// Takes over `other`'s library; `other` becomes empty.
  dynamic_library(dynamic_library&& other) noexcept;
  /// Closes the held library (if any), then takes over `other`'s.
  dynamic_library& operator=(dynamic_library&& other) noexcept;
  /// Closes the library; failures go to the log sink.
  ~dynamic_library();

  /// The address of `symbol_name`. Errors: driver_unavailable when the symbol is missing (the
  /// library is the wrong one or too old), invalid_argument on an empty object.
  /// Ownership: the address stays valid while this object lives.
  [[nodiscard]] result<void*> symbol(const std::string& symbol_name) const;

  /// The name the library was opened with (empty when empty).
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

  /// True when a library is held.
  [[nodiscard]] bool valid() const noexcept { return handle_ != nullptr; }

 private:
  dynamic_library(void* handle, std::string name) noexcept : handle_(handle), name_(std::move(name)) {}
  void reset() noexcept;

  void* handle_ = nullptr;
  std::string name_;
};

}  // namespace membridge::os
