// dynamic_library's moves and destructor, the same on every platform (open, symbol and reset are in
// posix/ and win32/).
#include <membridge/os/dynamic_library.hpp>

namespace membridge::os {

dynamic_library::dynamic_library(dynamic_library&& other) noexcept
    : handle_(other.handle_), name_(std::move(other.name_)) {
  other.handle_ = nullptr;
  other.name_.clear();
}

dynamic_library& dynamic_library::operator=(dynamic_library&& other) noexcept {
  if (this != &other) {
    reset();
    handle_ = other.handle_;
    name_ = std::move(other.name_);
    other.handle_ = nullptr;
    other.name_.clear();
  }
  return *this;
}

dynamic_library::~dynamic_library() { reset(); }

}  // namespace membridge::os
