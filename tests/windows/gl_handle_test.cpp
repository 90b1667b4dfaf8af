// The GL module's NT-handle plumbing under Wine (no GPU, no GL driver), against a scripted GL
// function table handed out by a fake get_proc_address: GL_EXT_memory_object_win32 and
// GL_EXT_semaphore_win32 imports, who closes which handle, WGL adoption (wglGetProcAddress with
// opengl32.dll's exports for GL 1.1), and the headless context's refusal on Windows.
#include "../../src/gl/win32/wgl.hpp"
#include "section_pattern.hpp"

#include <membridge/gl/buffer.hpp>
#include <membridge/gl/context.hpp>
#include <membridge/gl/headless_context.hpp>
#include <membridge/gl/memory_object.hpp>
#include <membridge/gl/semaphore.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

using membridge::errc;
using membridge::os::borrowed_handle;
using membridge::os::unique_handle;
using membridge::testing::make_section;
namespace gl = membridge::gl;

bool is_open(HANDLE h) {
  DWORD flags = 0;
  return ::GetHandleInformation(h, &flags) != 0;
}

/// One glImport*Win32HandleEXT call.
struct win32_import {
  GLuint object = 0;
  GLuint64 size = 0;
  GLenum type = 0;
  HANDLE handle = nullptr;
  bool was_open = false;
  std::vector<unsigned char> first_bytes;  ///< Memory: the payload's first bytes, read through the driver's reference.
};

/// What the fake GL saw (one at a time; reset per test).
struct fake_gl_state {
  std::vector<std::string> extensions{"GL_EXT_memory_object", "GL_EXT_memory_object_win32", "GL_EXT_semaphore",
                                      "GL_EXT_semaphore_win32"};
  GLenum pending_error = GL_NO_ERROR;
  GLenum import_error = GL_NO_ERROR;  ///< Raised by the next import (scripted).
  GLuint next_name = 1;
  std::vector<win32_import> memory_imports;
  std::vector<win32_import> semaphore_imports;
  std::vector<HANDLE> driver_references;
  int live_memory_objects = 0;
  int live_semaphores = 0;
  int flushes = 0;
  GLuint64 storage_size = 0;   ///< glNamedBufferStorageMemEXT's size.
  GLuint storage_memory = 0;   ///< ...its memory object.
};

fake_gl_state& fake() {
  static fake_gl_state state;
  return state;
}

void reset_fake() {
  for (HANDLE h : fake().driver_references) ::CloseHandle(h);
  fake() = fake_gl_state{};
}

HANDLE driver_reference(HANDLE h) {
  HANDLE copy = nullptr;
  const HANDLE self = ::GetCurrentProcess();
  if (::DuplicateHandle(self, h, self, &copy, 0, FALSE, DUPLICATE_SAME_ACCESS) == 0) return nullptr;
  fake().driver_references.push_back(copy);
  return copy;
}

const GLubyte* APIENTRY get_string(GLenum name) {
  switch (name) {
    case GL_VERSION: return reinterpret_cast<const GLubyte*>("4.6.0 membridge fake");
    case GL_VENDOR: return reinterpret_cast<const GLubyte*>("membridge");
    case GL_RENDERER: return reinterpret_cast<const GLubyte*>("fake GL");
    default: return nullptr;
  }
}
const GLubyte* APIENTRY get_stringi(GLenum name, GLuint i) {
  if (name != GL_EXTENSIONS || i >= fake().extensions.size()) return nullptr;
  return reinterpret_cast<const GLubyte*>(fake().extensions[i].c_str());
}
void APIENTRY get_integerv(GLenum name, GLint* out) {
  if (name == GL_NUM_EXTENSIONS) *out = static_cast<GLint>(fake().extensions.size());
  if (name == GL_MAJOR_VERSION) *out = 4;
  if (name == GL_MINOR_VERSION) *out = 6;
  if (name == GL_NUM_DEVICE_UUIDS_EXT) *out = 0;
}
GLenum APIENTRY get_error() { return std::exchange(fake().pending_error, static_cast<GLenum>(GL_NO_ERROR)); }
void APIENTRY flush() { ++fake().flushes; }
void APIENTRY finish() {}
void APIENTRY create_names(GLsizei n, GLuint* names) {
  for (GLsizei i = 0; i < n; ++i) names[i] = fake().next_name++;
}
void APIENTRY delete_buffers(GLsizei, const GLuint*) {}
void APIENTRY named_buffer_sub_data(GLuint, GLintptr, GLsizeiptr, const void*) {}
void APIENTRY get_named_buffer_sub_data(GLuint, GLintptr, GLsizeiptr, void*) {}
void APIENTRY create_memory_objects(GLsizei n, GLuint* names) {
  create_names(n, names);
  fake().live_memory_objects += n;
}
void APIENTRY delete_memory_objects(GLsizei n, const GLuint*) { fake().live_memory_objects -= n; }
GLboolean APIENTRY is_memory_object(GLuint) { return GL_TRUE; }
void APIENTRY memory_object_parameteriv(GLuint, GLenum, const GLint*) {}
void APIENTRY named_buffer_storage_mem(GLuint, GLsizeiptr size, GLuint memory, GLuint64) {
  fake().storage_size = static_cast<GLuint64>(size);
  fake().storage_memory = memory;
}
void APIENTRY import_memory_win32(GLuint memory, GLuint64 size, GLenum type, void* handle) {
  win32_import record{memory, size, type, handle, is_open(handle), {}};
  if (fake().import_error != GL_NO_ERROR) {
    fake().pending_error = std::exchange(fake().import_error, static_cast<GLenum>(GL_NO_ERROR));
  } else if (record.was_open) {
    void* view = ::MapViewOfFile(driver_reference(handle), FILE_MAP_READ, 0, 0, 16);
    if (view != nullptr) {
      record.first_bytes.assign(static_cast<unsigned char*>(view), static_cast<unsigned char*>(view) + 16);
      ::UnmapViewOfFile(view);
    }
  }
  fake().memory_imports.push_back(std::move(record));
}
void APIENTRY gen_semaphores(GLsizei n, GLuint* names) {
  create_names(n, names);
  fake().live_semaphores += n;
}
void APIENTRY delete_semaphores(GLsizei n, const GLuint*) { fake().live_semaphores -= n; }
GLboolean APIENTRY is_semaphore(GLuint) { return GL_TRUE; }
void APIENTRY wait_or_signal(GLuint, GLuint, const GLuint*, GLuint, const GLuint*, const GLenum*) {}
void APIENTRY import_semaphore_win32(GLuint semaphore, GLenum type, void* handle) {
  fake().semaphore_imports.push_back({semaphore, 0, type, handle, is_open(handle), {}});
  if (is_open(handle)) driver_reference(handle);
}

template <class F>
gl::proc as_proc(F* f) {
  return reinterpret_cast<gl::proc>(f);
}

/// The fake get_proc_address: every function membridge's adoption and imports call.
gl::proc fake_get_proc_address(const char* name) {
  const std::string_view n(name);
  if (n == "glGetString") return as_proc(&get_string);
  if (n == "glGetStringi") return as_proc(&get_stringi);
  if (n == "glGetIntegerv") return as_proc(&get_integerv);
  if (n == "glGetError") return as_proc(&get_error);
  if (n == "glFlush") return as_proc(&flush);
  if (n == "glFinish") return as_proc(&finish);
  if (n == "glCreateBuffers" || n == "glCreateTextures") return as_proc(&create_names);
  if (n == "glDeleteBuffers") return as_proc(&delete_buffers);
  if (n == "glNamedBufferSubData") return as_proc(&named_buffer_sub_data);
  if (n == "glGetNamedBufferSubData") return as_proc(&get_named_buffer_sub_data);
  if (n == "glCreateMemoryObjectsEXT") return as_proc(&create_memory_objects);
  if (n == "glDeleteMemoryObjectsEXT") return as_proc(&delete_memory_objects);
  if (n == "glIsMemoryObjectEXT") return as_proc(&is_memory_object);
  if (n == "glMemoryObjectParameterivEXT") return as_proc(&memory_object_parameteriv);
  if (n == "glNamedBufferStorageMemEXT") return as_proc(&named_buffer_storage_mem);
  if (n == "glImportMemoryWin32HandleEXT") return as_proc(&import_memory_win32);
  if (n == "glGenSemaphoresEXT") return as_proc(&gen_semaphores);
  if (n == "glDeleteSemaphoresEXT") return as_proc(&delete_semaphores);
  if (n == "glIsSemaphoreEXT") return as_proc(&is_semaphore);
  if (n == "glWaitSemaphoreEXT" || n == "glSignalSemaphoreEXT") return as_proc(&wait_or_signal);
  if (n == "glImportSemaphoreWin32HandleEXT") return as_proc(&import_semaphore_win32);
  return nullptr;
}

membridge::testing::section_pattern fresh_pattern(unsigned seed) { return membridge::testing::make_pattern(seed, 13U, 5U, 2U); }

class windows_gl : public ::testing::Test {
 protected:
  void SetUp() override {
    reset_fake();
    auto adopted = gl::context::adopt_current(&fake_get_proc_address);
    ASSERT_TRUE(adopted) << adopted.error().message();
    context_ = std::move(*adopted);
  }
  void TearDown() override {
    context_ = gl::context();
    reset_fake();
  }
  gl::context context_;
};

TEST_F(windows_gl, the_win32_extensions_are_required_and_reported) {
  const std::vector<std::string> expected{"GL_EXT_memory_object", "GL_EXT_memory_object_win32"};
  EXPECT_EQ(gl::required_extensions(), expected);
  const auto& caps = context_.capabilities();
  EXPECT_TRUE(caps.memory_object_win32);
  EXPECT_TRUE(caps.memory_object_handle);
  EXPECT_FALSE(caps.memory_object_fd);
  EXPECT_TRUE(caps.semaphore_win32);
  EXPECT_TRUE(caps.semaphore_import());
  EXPECT_EQ(caps.renderer, "fake GL");

  fake().extensions = {"GL_EXT_memory_object", "GL_EXT_memory_object_fd", "GL_EXT_semaphore", "GL_EXT_semaphore_fd"};
  const auto fd_only = gl::context::adopt_current(&fake_get_proc_address);
  ASSERT_FALSE(fd_only);
  EXPECT_EQ(fd_only.error().code(), errc::unsupported);
  EXPECT_NE(fd_only.error().message().find("GL_EXT_memory_object_win32"), std::string::npos) << fd_only.error().message();
}

TEST_F(windows_gl, memory_object_import_closes_the_consumed_handle_after_the_call) {
  const auto pattern = fresh_pattern(4);
  unique_handle section = make_section(pattern);
  ASSERT_TRUE(section.valid());
  const HANDLE raw = section.get();
  auto memory = gl::memory_object::import(context_, std::move(section), {.size = 65536, .dedicated = false});
  ASSERT_TRUE(memory) << memory.error().message();
  ASSERT_EQ(fake().memory_imports.size(), 1U);
  const auto& call = fake().memory_imports[0];
  EXPECT_EQ(call.handle, raw);
  EXPECT_TRUE(call.was_open);
  EXPECT_EQ(call.type, static_cast<GLenum>(GL_HANDLE_TYPE_OPAQUE_WIN32_EXT));
  EXPECT_EQ(call.size, 65536U);
  EXPECT_EQ(call.object, memory->name());
  ASSERT_EQ(call.first_bytes.size(), pattern.size());
  EXPECT_TRUE(std::equal(pattern.begin(), pattern.end(), call.first_bytes.begin()));
  EXPECT_FALSE(is_open(raw)) << "GL never takes an NT handle: membridge closed the one it consumed";
  EXPECT_EQ(fake().live_memory_objects, 1);
  *memory = gl::memory_object();
  EXPECT_EQ(fake().live_memory_objects, 0);
}

TEST_F(windows_gl, a_refused_memory_import_still_closes_the_consumed_handle) {
  unique_handle section = make_section(fresh_pattern(6));
  ASSERT_TRUE(section.valid());
  const HANDLE raw = section.get();
  fake().import_error = GL_INVALID_VALUE;
  const auto memory = gl::memory_object::import(context_, std::move(section), {.size = 65536, .dedicated = false});
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().code(), errc::invalid_argument);
  EXPECT_NE(memory.error().message().find("glImportMemoryWin32HandleEXT"), std::string::npos) << memory.error().message();
  EXPECT_FALSE(is_open(raw));
  EXPECT_EQ(fake().live_memory_objects, 0) << "the name was deleted again";
}

TEST_F(windows_gl, buffer_import_keeps_the_callers_handle_open) {
  const auto pattern = fresh_pattern(8);
  unique_handle section = make_section(pattern);
  ASSERT_TRUE(section.valid());
  auto buffer = gl::buffer::import(context_, section.borrow(), {.size = 65536, .dedicated = false}, 4096);
  ASSERT_TRUE(buffer) << buffer.error().message();
  ASSERT_EQ(fake().memory_imports.size(), 1U);
  const auto& call = fake().memory_imports[0];
  EXPECT_NE(call.handle, section.get()) << "a duplicate was imported";
  EXPECT_TRUE(call.was_open);
  EXPECT_FALSE(is_open(call.handle)) << "and closed after the import";
  EXPECT_TRUE(std::equal(pattern.begin(), pattern.end(), call.first_bytes.begin()));
  EXPECT_EQ(fake().storage_size, 4096U);
  EXPECT_EQ(fake().storage_memory, call.object);
  EXPECT_TRUE(is_open(section.get())) << "the caller's handle stays the caller's";
}

TEST_F(windows_gl, semaphore_import_passes_the_callers_handle_and_never_closes_it) {
  unique_handle event(::CreateEventW(nullptr, TRUE, FALSE, nullptr));
  ASSERT_TRUE(event.valid());
  auto semaphore = gl::semaphore::import(context_, event.borrow(), gl::semaphore_kind::binary);
  ASSERT_TRUE(semaphore) << semaphore.error().message();
  ASSERT_EQ(fake().semaphore_imports.size(), 1U);
  EXPECT_EQ(fake().semaphore_imports[0].handle, event.get());
  EXPECT_TRUE(fake().semaphore_imports[0].was_open);
  EXPECT_EQ(fake().semaphore_imports[0].type, static_cast<GLenum>(GL_HANDLE_TYPE_OPAQUE_WIN32_EXT));
  EXPECT_EQ(fake().semaphore_imports[0].object, semaphore->name());
  ASSERT_NE(::SetEvent(event.get()), 0);
  EXPECT_EQ(::WaitForSingleObject(fake().driver_references.at(0), 0), WAIT_OBJECT_0) << "one object";
  ASSERT_TRUE(semaphore->signal(0));
  EXPECT_EQ(fake().flushes, 1) << "signal flushes";
  EXPECT_NE(::CloseHandle(event.release()), 0) << "still the caller's to close";
  const auto timeline = gl::semaphore::import(context_, event.borrow(), gl::semaphore_kind::timeline);
  ASSERT_FALSE(timeline);
  EXPECT_EQ(timeline.error().code(), errc::invalid_argument) << "an empty handle";
}

// --------------------------------------------------------------------------------------- WGL ---
int fallback_calls = 0;
bool context_current = true;

HGLRC WINAPI fake_get_current_context() {
  static int dummy = 0;
  return context_current ? reinterpret_cast<HGLRC>(&dummy) : nullptr;
}

// wglGetProcAddress as drivers answer it: null for GL 1.1 functions, and 2 (not a function) for one more.
PROC WINAPI fake_wgl_get_proc_address(LPCSTR name) {
  const std::string_view n(name);
  if (n == "glGetString" || n == "glGetIntegerv" || n == "glGetError" || n == "glFlush" || n == "glFinish")
    return nullptr;
  if (n == "glGetStringi") return reinterpret_cast<PROC>(static_cast<std::intptr_t>(2));
  return reinterpret_cast<PROC>(fake_get_proc_address(name));
}

TEST_F(windows_gl, wgl_adoption_loads_gl_1_1_from_the_fallback) {
  gl::detail::wgl_entry_points wgl{&fake_get_current_context, &fake_wgl_get_proc_address};
  const auto fallback = [](const char* name) {
    ++fallback_calls;
    return fake_get_proc_address(name);
  };
  fallback_calls = 0;
  context_current = true;
  auto adopted = gl::detail::adopt_wgl(wgl, fallback, {}, {});
  ASSERT_TRUE(adopted) << adopted.error().message();
  EXPECT_GE(fallback_calls, 6) << "GL 1.1 names and the value 2 went to the fallback";
  EXPECT_TRUE(adopted->capabilities().memory_object_handle);
  EXPECT_EQ(adopted->capabilities().version, "4.6.0 membridge fake") << "glGetString came from the fallback";
  const int before = fake().flushes;
  ASSERT_TRUE(adopted->flush());
  EXPECT_EQ(fake().flushes, before + 1);

  context_current = false;
  const auto none = gl::detail::adopt_wgl(wgl, fallback, {}, {});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::invalid_argument);
  EXPECT_NE(none.error().message().find("no WGL context is current"), std::string::npos) << none.error().message();
  context_current = true;
}

// Wine's opengl32.dll opens kernel objects of its own when it is first loaded and keeps them for the
// life of the process. Loading it once before any test (and keeping it) keeps that one-time cost out
// of the handle-leak listener's count of the test below, which then sees only membridge's own opens.
class opengl32_loaded : public ::testing::Environment {
 public:
  void SetUp() override { ASSERT_NE(::LoadLibraryW(L"opengl32.dll"), nullptr); }
};
[[maybe_unused]] const auto* const opengl32_environment = ::testing::AddGlobalTestEnvironment(new opengl32_loaded);

TEST(windows_gl_wine, adopt_current_wgl_without_a_current_context_says_so) {
  // Wine ships opengl32.dll; no context is current on this thread.
  const auto adopted = gl::context::adopt_current_wgl();
  ASSERT_FALSE(adopted);
  EXPECT_EQ(adopted.error().code(), errc::invalid_argument) << adopted.error().message();
  EXPECT_NE(adopted.error().message().find("wglGetCurrentContext"), std::string::npos) << adopted.error().message();
}

TEST(windows_gl_wine, the_headless_context_is_unsupported_with_the_reason) {
  const auto made = gl::headless_context::create();
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code(), errc::unsupported);
  EXPECT_NE(made.error().message().find("adopt_current_wgl"), std::string::npos) << made.error().message();
  EXPECT_NE(made.error().message().find("EGL"), std::string::npos);
  const auto devices = gl::headless_context::list_devices();
  ASSERT_FALSE(devices);
  EXPECT_EQ(devices.error().code(), errc::unsupported);
  const gl::headless_context empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_FALSE(empty.make_current());
  EXPECT_EQ(empty.get_proc_address(), nullptr);
}

}  // namespace
