#include <membridge/core/error.hpp>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

namespace {

using membridge::errc;
using membridge::error;
using membridge::error_source;

TEST(error, native_error_message_names_file_line_call_code_and_context) {
  const int line = __LINE__ + 1;
  const error e = error::from_native(errc::out_of_memory, error_source::cuda, 2, "CUDA_ERROR_OUT_OF_MEMORY",
                                     "cuMemCreate", "growing to 4 GiB on device 0");
  EXPECT_EQ(e.message(), "core_error_test.cpp:" + std::to_string(line) +
                             " cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY (2): growing to 4 GiB on device 0");
  EXPECT_EQ(e.code(), errc::out_of_memory);
  EXPECT_EQ(e.source(), error_source::cuda);
  EXPECT_EQ(e.native_code(), 2);
  EXPECT_EQ(e.native_name(), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(e.call(), "cuMemCreate");
  EXPECT_EQ(e.where().line(), static_cast<unsigned>(line));
}

TEST(error, membridge_error_message_names_the_category) {
  const error e(errc::invalid_argument, "growable_buffer::grow", "new size is below the current size");
  const std::string m = e.message();
  EXPECT_NE(m.find("growable_buffer::grow: invalid_argument: new size is below the current size"), std::string::npos)
      << m;
  EXPECT_EQ(e.source(), error_source::membridge);
  EXPECT_EQ(e.native_code(), 0);
  EXPECT_TRUE(e.native_name().empty());
}

TEST(error, context_is_appended_innermost_first) {
  error e(errc::out_of_memory, "cuMemCreate", "allocating 2 GiB");
  e.add_context("growing a buffer to 4 GiB").add_context("");
  EXPECT_EQ(e.context(), "allocating 2 GiB: growing a buffer to 4 GiB");
  error bare(errc::timeout, "wait");
  bare.add_context("frame 12");
  EXPECT_EQ(bare.context(), "frame 12");
  const std::string m = std::move(bare).add_context("render loop").message();
  EXPECT_NE(m.find("wait: timeout: frame 12: render loop"), std::string::npos) << m;
}

TEST(error, errno_errors_are_categorised_and_named) {
  const error badf = error::from_errno(EBADF, "fcntl");
  EXPECT_EQ(badf.code(), errc::invalid_argument);
  EXPECT_EQ(badf.source(), error_source::os);
  EXPECT_EQ(badf.native_code(), EBADF);
#if defined(__GLIBC__)
  EXPECT_NE(badf.message().find("fcntl: EBADF: Bad file descriptor (9)"), std::string::npos) << badf.message();
#else  // the C runtime has no errno names (mingw-w64): the number and strerror's text
  EXPECT_NE(badf.message().find("fcntl: errno 9: Bad file descriptor (9)"), std::string::npos) << badf.message();
#endif
  EXPECT_EQ(error::from_errno(EMFILE, "dup").code(), errc::out_of_memory);
  EXPECT_EQ(error::from_errno(ETIMEDOUT, "poll").code(), errc::timeout);
  EXPECT_EQ(error::from_errno(EPERM, "connect").code(), errc::os_error);
}

TEST(error, win32_errors_are_categorised_and_named_on_every_platform) {
  const error denied = error::from_win32(5, "ConnectNamedPipe", "accepting a subscriber");
  EXPECT_EQ(denied.code(), errc::os_error);
  EXPECT_EQ(denied.source(), error_source::win32);
  EXPECT_EQ(denied.native_code(), 5);
  EXPECT_NE(denied.message().find("ConnectNamedPipe: ERROR_ACCESS_DENIED (5): accepting a subscriber"),
            std::string::npos)
      << denied.message();
  EXPECT_EQ(error::from_win32(8, "VirtualAlloc").code(), errc::out_of_memory);
  EXPECT_EQ(error::from_win32(87, "DuplicateHandle").code(), errc::invalid_argument);
  EXPECT_EQ(error::from_win32(258, "WaitForSingleObject").code(), errc::timeout);
  EXPECT_EQ(error::from_win32(50, "CreateFileMapping").code(), errc::unsupported);
  const error unknown = error::from_win32(99999, "ReadFile");
  EXPECT_EQ(unknown.code(), errc::os_error);
  EXPECT_NE(unknown.message().find("Win32 error 99999"), std::string::npos) << unknown.message();
}

TEST(error, loader_errors_have_no_numeric_code_in_the_message) {
  const error e = error::from_native(errc::driver_unavailable, error_source::loader, 0,
                                     "libcuda.so.1: cannot open shared object file", "dlopen", "loading libcuda.so.1");
  EXPECT_NE(e.message().find("dlopen: libcuda.so.1: cannot open shared object file: loading libcuda.so.1"),
            std::string::npos)
      << e.message();
  EXPECT_EQ(e.message().find("(0)"), std::string::npos);
}

TEST(error, every_category_and_source_has_a_name) {
  for (int c = 1; c <= static_cast<int>(errc::internal); ++c) {
    const auto name = membridge::to_string(static_cast<errc>(c));
    EXPECT_FALSE(name.empty());
    EXPECT_NE(name, "unknown") << c;
  }
  for (int s = 0; s <= static_cast<int>(error_source::win32); ++s)
    EXPECT_NE(membridge::to_string(static_cast<error_source>(s)), "unknown") << s;
}

}  // namespace
