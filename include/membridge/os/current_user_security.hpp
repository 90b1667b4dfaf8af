// membridge/os/current_user_security.hpp: a Windows security descriptor that grants the current user
// only, for the objects membridge makes shareable (exported CUDA allocations, named pipes). Declared
// on Windows only (empty elsewhere: POSIX fds are shared by passing them, not by name or handle value).
#pragma once

#if defined(_WIN32)

#include <membridge/core/result.hpp>

#include <memory>
#include <string>

namespace membridge::os {

/// The security descriptor "D:P(A;;GA;;;<user SID>)": a protected DACL with one entry, all access for
/// the user of this process's token. Other users (and Everyone, which NVIDIA's samples grant) get
/// nothing, so another user's process cannot open an object made with it even when it learns the
/// handle value. Move-only.
class current_user_security {
 public:
  /// Reads the user SID from the process token and builds the descriptor.
  /// Errors: os_error with the Win32 error of OpenProcessToken, GetTokenInformation,
  /// ConvertSidToStringSidA or ConvertStringSecurityDescriptorToSecurityDescriptorA.
  /// Ownership: the returned object owns the descriptor and its attribute structures.
  [[nodiscard]] static result<current_user_security> create();

  current_user_security(const current_user_security&) = delete;
  current_user_security& operator=(const current_user_security&) = delete;
  /// Takes over `other`'s descriptor; `other` becomes empty.
  current_user_security(current_user_security&& other) noexcept;
  /// Frees the held descriptor, then takes over `other`'s.
  current_user_security& operator=(current_user_security&& other) noexcept;
  /// Frees the descriptor (LocalFree).
  ~current_user_security();

  /// The user's SID as a string ("S-1-5-21-...").
  [[nodiscard]] const std::string& user_sid() const noexcept;
  /// The descriptor in SDDL ("D:P(A;;GA;;;S-1-5-21-...)").
  [[nodiscard]] const std::string& sddl() const noexcept;
  /// The descriptor (a PSECURITY_DESCRIPTOR). Ownership: stays with this object.
  [[nodiscard]] void* security_descriptor() const noexcept;
  /// A SECURITY_ATTRIBUTES* with the descriptor and bInheritHandle FALSE (CreateFileMapping,
  /// CreateNamedPipe, Vulkan's export info). Ownership: stays with this object.
  [[nodiscard]] void* security_attributes() const noexcept;
  /// An OBJECT_ATTRIBUTES* with the descriptor, no name and no attributes (what CUDA's
  /// CUmemAllocationProp::win32HandleMetaData points to). Ownership: stays with this object.
  [[nodiscard]] void* object_attributes() const noexcept;

 private:
  struct impl;
  explicit current_user_security(std::unique_ptr<impl> state) noexcept;
  std::unique_ptr<impl> impl_;
};

}  // namespace membridge::os

#endif  // _WIN32
