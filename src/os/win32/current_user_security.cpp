// Windows: the current user's security descriptor, from the process token's SID through SDDL.
#include <membridge/os/current_user_security.hpp>
#include <membridge/os/unique_handle.hpp>

#include <windows.h>
#include <sddl.h>
#include <winternl.h>

#include <vector>

namespace membridge::os {

struct current_user_security::impl {
  std::string sid;
  std::string sddl;
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  SECURITY_ATTRIBUTES security{};
  OBJECT_ATTRIBUTES object{};
  impl() = default;
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;
  ~impl() {
    if (descriptor != nullptr) ::LocalFree(descriptor);
  }
};

namespace {

result<std::string> current_user_sid() {
  HANDLE raw_token = nullptr;
  if (::OpenProcessToken(::GetCurrentProcess(), TOKEN_QUERY, &raw_token) == 0)
    return error::from_win32(::GetLastError(), "OpenProcessToken", "reading this process's user");
  const unique_handle token(raw_token);
  DWORD length = 0;
  ::GetTokenInformation(token.get(), TokenUser, nullptr, 0, &length);  // asks for the size
  std::vector<unsigned char> buffer(length == 0 ? sizeof(TOKEN_USER) : length);
  if (::GetTokenInformation(token.get(), TokenUser, buffer.data(), static_cast<DWORD>(buffer.size()), &length) == 0)
    return error::from_win32(::GetLastError(), "GetTokenInformation", "reading this process's user SID");
  LPSTR text = nullptr;
  if (::ConvertSidToStringSidA(reinterpret_cast<const TOKEN_USER*>(buffer.data())->User.Sid, &text) == 0)
    return error::from_win32(::GetLastError(), "ConvertSidToStringSidA", "naming this process's user SID");
  std::string sid(text);
  ::LocalFree(text);
  return sid;
}

}  // namespace

result<current_user_security> current_user_security::create() {
  auto state = std::make_unique<impl>();
  MEMBRIDGE_TRY_ASSIGN(state->sid, current_user_sid());
  state->sddl = "D:P(A;;GA;;;" + state->sid + ")";
  if (::ConvertStringSecurityDescriptorToSecurityDescriptorA(state->sddl.c_str(), SDDL_REVISION_1, &state->descriptor,
                                                             nullptr) == 0)
    return error::from_win32(::GetLastError(), "ConvertStringSecurityDescriptorToSecurityDescriptorA",
                             "building the descriptor " + state->sddl);
  state->security.nLength = sizeof(SECURITY_ATTRIBUTES);
  state->security.lpSecurityDescriptor = state->descriptor;
  state->security.bInheritHandle = FALSE;
  InitializeObjectAttributes(&state->object, nullptr, 0, nullptr, state->descriptor);
  return current_user_security(std::move(state));
}

current_user_security::current_user_security(std::unique_ptr<impl> state) noexcept : impl_(std::move(state)) {}
current_user_security::current_user_security(current_user_security&& other) noexcept = default;
current_user_security& current_user_security::operator=(current_user_security&& other) noexcept = default;
current_user_security::~current_user_security() = default;

namespace {
const std::string no_text;  // what an empty (moved-from) object reports
}  // namespace

const std::string& current_user_security::user_sid() const noexcept { return impl_ ? impl_->sid : no_text; }
const std::string& current_user_security::sddl() const noexcept { return impl_ ? impl_->sddl : no_text; }
void* current_user_security::security_descriptor() const noexcept { return impl_ ? impl_->descriptor : nullptr; }
void* current_user_security::security_attributes() const noexcept { return impl_ ? &impl_->security : nullptr; }
void* current_user_security::object_attributes() const noexcept { return impl_ ? &impl_->object : nullptr; }

}  // namespace membridge::os
