// gl tier: semaphore import. llvmpipe (CI) offers GL_EXT_memory_object_fd but no semaphore fds, so the
// import must say which extension is missing, without touching or leaking the fd. Imports that
// succeed (NVIDIA) are tested in the gpu tier.
#include "gl_test.hpp"

#include <membridge/gl/semaphore.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <string>
#include <utility>
#include <vector>

namespace membridge::testing {
namespace {

// An open fd that no semaphore import must close (the caller keeps it).
class caller_fd {
 public:
  caller_fd() : fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}
  caller_fd(const caller_fd&) = delete;
  caller_fd& operator=(const caller_fd&) = delete;
  ~caller_fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] os::borrowed_fd get() const noexcept { return os::borrowed_fd::from_native(fd_); }
  [[nodiscard]] bool still_open() const { return ::fcntl(fd_, F_GETFD) >= 0; }

 private:
  int fd_;
};

// The extensions a semaphore import of `kind` needs that `caps` lacks (the error must name each).
std::vector<std::string> missing_extensions(const gl::context_capabilities& caps, gl::semaphore_kind kind) {
  std::vector<std::string> out;
  if (!caps.semaphore) out.emplace_back("GL_EXT_semaphore");
  if (!caps.semaphore_fd) out.emplace_back("GL_EXT_semaphore_fd");
  if (kind == gl::semaphore_kind::timeline && !caps.timeline_semaphore) out.emplace_back("GL_NV_timeline_semaphore");
  return out;
}

// True when `message` names `extension` as a whole word (GL_EXT_semaphore is not GL_EXT_semaphore_fd).
bool names(const std::string& message, const std::string& extension) {
  for (auto at = message.find(extension); at != std::string::npos; at = message.find(extension, at + 1)) {
    const auto next = at + extension.size();
    if (next == message.size() || (message[next] != '_' && std::isalnum(static_cast<unsigned char>(message[next])) == 0))
      return true;
  }
  return false;
}

TEST(gl_semaphore, import_without_semaphore_fds_is_unsupported_and_names_the_extension) {
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(gl);
  const auto& caps = gl.gl().capabilities();
  if (caps.semaphore_import()) GTEST_SKIP() << caps.renderer << " imports semaphore fds (the gpu tier tests that)";
  const caller_fd fd;
  ASSERT_TRUE(fd.get().valid());
  for (const auto kind : {gl::semaphore_kind::binary, gl::semaphore_kind::timeline}) {
    const auto imported = gl::semaphore::import(gl.gl(), fd.get(), kind);
    ASSERT_FALSE(imported);
    EXPECT_EQ(imported.error().code(), errc::unsupported);
    for (const auto& extension : missing_extensions(caps, kind))
      EXPECT_TRUE(names(imported.error().message(), extension))
          << extension << " not named in: " << imported.error().message();
    EXPECT_NE(imported.error().message().find(caps.renderer), std::string::npos) << imported.error().message();
  }
  EXPECT_TRUE(fd.still_open());
}

TEST(gl_semaphore, import_rejects_an_empty_fd_or_context) {
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(gl);
  const auto no_fd = gl::semaphore::import(gl.gl(), os::borrowed_fd(), gl::semaphore_kind::binary);
  ASSERT_FALSE(no_fd);
  EXPECT_EQ(no_fd.error().code(), errc::invalid_argument);
  const caller_fd fd;
  const auto no_context = gl::semaphore::import(gl::context(), fd.get(), gl::semaphore_kind::binary);
  ASSERT_FALSE(no_context);
  EXPECT_EQ(no_context.error().code(), errc::invalid_argument);
  EXPECT_TRUE(fd.still_open());
}

TEST(gl_semaphore, an_empty_semaphore_refuses_every_call) {
  gl::semaphore empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_EQ(empty.name(), 0U);
  EXPECT_EQ(empty.wait(1).error().code(), errc::invalid_argument);
  EXPECT_EQ(empty.signal(1).error().code(), errc::invalid_argument);
  EXPECT_EQ(empty.value().error().code(), errc::invalid_argument);
  const gl::semaphore moved(std::move(empty));
  EXPECT_FALSE(moved.valid());
}

}  // namespace
}  // namespace membridge::testing
