// Private (Windows): the security attributes membridge gives every NT handle it exports, so that
// only the current user can open the object (issue 15; ARCHITECTURE.md section 11): the SDDL
// "D:P(A;;GA;;;<user SID>)", a protected DACL with one ACE granting GENERIC_ALL to the user of this
// process. NVIDIA's samples grant Everyone; membridge does not.
#pragma once

#include <membridge/core/result.hpp>

#include <windows.h>

#include <string>

namespace membridge::vulkan::detail {

/// The string SID of the user this process runs as (TokenUser of the process token), e.g.
/// "S-1-5-21-...-1000". Errors: os_error with the Win32 error of the failing call.
[[nodiscard]] result<std::wstring> current_user_sid();

/// SECURITY_ATTRIBUTES whose descriptor grants the current user alone. Move-only; frees the
/// descriptor (LocalFree) on destruction.
class user_security {
 public:
  /// Builds "D:P(A;;GA;;;<SID>)" for the current user.
  /// Errors: os_error with the Win32 error of the failing call.
  /// Ownership: the object owns the security descriptor.
  [[nodiscard]] static result<user_security> create();

  /// An empty object (no descriptor).
  user_security() noexcept = default;
  user_security(const user_security&) = delete;
  user_security& operator=(const user_security&) = delete;
  /// Takes over `other`'s descriptor; `other` becomes empty.
  user_security(user_security&& other) noexcept;
  /// Frees the held descriptor, then takes over `other`'s.
  user_security& operator=(user_security&& other) noexcept;
  /// Frees the descriptor.
  ~user_security();

  /// The attributes (not inheritable), valid while this object lives.
  /// Ownership: stays with this object.
  [[nodiscard]] const SECURITY_ATTRIBUTES* attributes() const noexcept { return &attributes_; }
  /// The SDDL the descriptor was made from.
  [[nodiscard]] const std::wstring& sddl() const noexcept { return sddl_; }

 private:
  void reset() noexcept;
  SECURITY_ATTRIBUTES attributes_{sizeof(SECURITY_ATTRIBUTES), nullptr, FALSE};
  std::wstring sddl_;
};

}  // namespace membridge::vulkan::detail
