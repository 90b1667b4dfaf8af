#include "temp_dir.hpp"

#include "cuda_support.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include <unistd.h>

namespace membridge::bench {

namespace {

/// The longest directory that leaves room for a socket file name in sun_path (108 bytes).
constexpr std::size_t max_dir_length = 60;

}  // namespace

temp_dir::temp_dir(std::string_view prefix) {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string name = "/" + std::string(prefix) + "-XXXXXX";
  std::string tmpl = std::string(runtime != nullptr && runtime[0] == '/' ? runtime : "/tmp") + name;
  if (tmpl.size() > max_dir_length) tmpl = "/tmp" + name;
  if (::mkdtemp(tmpl.data()) == nullptr) throw bench_failure(std::string("mkdtemp: ") + std::strerror(errno));
  path_ = std::move(tmpl);
}

temp_dir::temp_dir(temp_dir&& other) noexcept : path_(std::exchange(other.path_, {})) {}

temp_dir& temp_dir::operator=(temp_dir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

temp_dir::~temp_dir() { remove(); }

void temp_dir::remove() noexcept {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  path_.clear();
}

}  // namespace membridge::bench
