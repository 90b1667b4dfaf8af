// Windows: the current user's SID and a security descriptor that grants that user alone.
#include "user_security.hpp"

#include <sddl.h>

#include <utility>
#include <vector>

namespace membridge::vulkan::detail {

namespace {

// The process token, closed on return.
struct token {
  HANDLE handle = nullptr;
  token() = default;
  token(const token&) = delete;
  token& operator=(const token&) = delete;
  ~token() {
    if (handle != nullptr) ::CloseHandle(handle);
  }
};

}  // namespace

result<std::wstring> current_user_sid() {
  token t;
  if (::OpenProcessToken(::GetCurrentProcess(), TOKEN_QUERY, &t.handle) == 0)
    return error::from_win32(::GetLastError(), "OpenProcessToken", "reading this process's user");
  DWORD bytes = 0;
  ::GetTokenInformation(t.handle, TokenUser, nullptr, 0, &bytes);
  if (bytes == 0) return error::from_win32(::GetLastError(), "GetTokenInformation", "the size of TokenUser");
  std::vector<unsigned char> buffer(bytes);
  if (::GetTokenInformation(t.handle, TokenUser, buffer.data(), bytes, &bytes) == 0)
    return error::from_win32(::GetLastError(), "GetTokenInformation", "TokenUser");
  const auto* user = reinterpret_cast<const TOKEN_USER*>(buffer.data());
  LPWSTR text = nullptr;
  if (::ConvertSidToStringSidW(user->User.Sid, &text) == 0)
    return error::from_win32(::GetLastError(), "ConvertSidToStringSidW", "the user's SID");
  std::wstring out(text);
  ::LocalFree(text);
  return out;
}

result<user_security> user_security::create() {
  MEMBRIDGE_TRY_ASSIGN(const std::wstring sid, current_user_sid());
  user_security out;
  // P: protected (no inherited ACEs); one ACE: allow (A), GENERIC_ALL (GA), to the user's SID.
  out.sddl_ = L"D:P(A;;GA;;;" + sid + L")";
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  if (::ConvertStringSecurityDescriptorToSecurityDescriptorW(out.sddl_.c_str(), SDDL_REVISION_1, &descriptor,
                                                             nullptr) == 0)
    return error::from_win32(::GetLastError(), "ConvertStringSecurityDescriptorToSecurityDescriptorW",
                             "the user-only security descriptor of exported handles");
  out.attributes_.lpSecurityDescriptor = descriptor;
  return out;
}

user_security::user_security(user_security&& other) noexcept
    : attributes_(std::exchange(other.attributes_, SECURITY_ATTRIBUTES{sizeof(SECURITY_ATTRIBUTES), nullptr, FALSE})),
      sddl_(std::move(other.sddl_)) {}

user_security& user_security::operator=(user_security&& other) noexcept {
  if (this != &other) {
    reset();
    attributes_ = std::exchange(other.attributes_, SECURITY_ATTRIBUTES{sizeof(SECURITY_ATTRIBUTES), nullptr, FALSE});
    sddl_ = std::move(other.sddl_);
  }
  return *this;
}

user_security::~user_security() { reset(); }

void user_security::reset() noexcept {
  if (attributes_.lpSecurityDescriptor != nullptr) ::LocalFree(attributes_.lpSecurityDescriptor);
  attributes_.lpSecurityDescriptor = nullptr;
  sddl_.clear();
}

}  // namespace membridge::vulkan::detail
