// src/gl/detail/functions.hpp: the GL functions membridge calls, loaded per context from the caller's
// get_proc_address (never GL prototypes, never global pointers). Private to the gl module.
#pragma once

#include <membridge/gl/context.hpp>
#include <membridge/os/dynamic_library.hpp>

#include <GL/gl.h>  // on Windows, mingw's (it includes <windows.h>)
#include <GL/glext.h>

#include <functional>

namespace membridge::gl::detail {

// GL 1.0/1.1 entry points have no PFN types in glext.h (gl.h declares them as prototypes).
using pfn_get_string = const GLubyte*(APIENTRYP)(GLenum name);
using pfn_get_integerv = void(APIENTRYP)(GLenum pname, GLint* data);
using pfn_get_error = GLenum(APIENTRYP)();
using pfn_flush = void(APIENTRYP)();
using pfn_finish = void(APIENTRYP)();
using pfn_delete_textures = void(APIENTRYP)(GLsizei n, const GLuint* textures);

// Every GL entry point membridge calls, once: X(pfn_type, Name) for glName. It declares the members of
// `functions` and drives load_functions().
#define MEMBRIDGE_GL_FUNCTIONS(X)                                                            \
  /* GL 4.5 core (direct state access). */                                                   \
  X(pfn_get_string, GetString)                                                               \
  X(PFNGLGETSTRINGIPROC, GetStringi)                                                         \
  X(pfn_get_integerv, GetIntegerv)                                                           \
  X(pfn_get_error, GetError)                                                                 \
  X(pfn_flush, Flush)                                                                        \
  X(pfn_finish, Finish)                                                                      \
  X(PFNGLCREATEBUFFERSPROC, CreateBuffers)                                                   \
  X(PFNGLDELETEBUFFERSPROC, DeleteBuffers)                                                   \
  X(PFNGLNAMEDBUFFERSTORAGEPROC, NamedBufferStorage)                                         \
  X(PFNGLNAMEDBUFFERSUBDATAPROC, NamedBufferSubData)                                         \
  X(PFNGLGETNAMEDBUFFERSUBDATAPROC, GetNamedBufferSubData)                                   \
  X(PFNGLCOPYNAMEDBUFFERSUBDATAPROC, CopyNamedBufferSubData)                                 \
  X(PFNGLCREATETEXTURESPROC, CreateTextures)                                                 \
  X(pfn_delete_textures, DeleteTextures)                                                     \
  X(PFNGLTEXTUREPARAMETERIPROC, TextureParameteri)                                           \
  X(PFNGLGETTEXTUREIMAGEPROC, GetTextureImage)                                               \
  X(PFNGLTEXTURESUBIMAGE2DPROC, TextureSubImage2D)                                           \
  X(PFNGLMEMORYBARRIERPROC, MemoryBarrier)                                                   \
  /* GL_EXT_memory_object. */                                                                \
  X(PFNGLGETUNSIGNEDBYTEVEXTPROC, GetUnsignedBytevEXT)                                       \
  X(PFNGLGETUNSIGNEDBYTEI_VEXTPROC, GetUnsignedBytei_vEXT)                                   \
  X(PFNGLCREATEMEMORYOBJECTSEXTPROC, CreateMemoryObjectsEXT)                                 \
  X(PFNGLDELETEMEMORYOBJECTSEXTPROC, DeleteMemoryObjectsEXT)                                 \
  X(PFNGLISMEMORYOBJECTEXTPROC, IsMemoryObjectEXT)                                           \
  X(PFNGLMEMORYOBJECTPARAMETERIVEXTPROC, MemoryObjectParameterivEXT)                         \
  X(PFNGLNAMEDBUFFERSTORAGEMEMEXTPROC, NamedBufferStorageMemEXT)                             \
  X(PFNGLTEXTURESTORAGEMEM2DEXTPROC, TextureStorageMem2DEXT)                                 \
  /* GL_EXT_memory_object_fd (Linux) and GL_EXT_memory_object_win32 (Windows). */            \
  X(PFNGLIMPORTMEMORYFDEXTPROC, ImportMemoryFdEXT)                                           \
  X(PFNGLIMPORTMEMORYWIN32HANDLEEXTPROC, ImportMemoryWin32HandleEXT)                         \
  /* GL_EXT_semaphore. */                                                                    \
  X(PFNGLGENSEMAPHORESEXTPROC, GenSemaphoresEXT)                                             \
  X(PFNGLDELETESEMAPHORESEXTPROC, DeleteSemaphoresEXT)                                       \
  X(PFNGLISSEMAPHOREEXTPROC, IsSemaphoreEXT)                                                 \
  X(PFNGLSEMAPHOREPARAMETERUI64VEXTPROC, SemaphoreParameterui64vEXT)                         \
  X(PFNGLGETSEMAPHOREPARAMETERUI64VEXTPROC, GetSemaphoreParameterui64vEXT)                   \
  X(PFNGLWAITSEMAPHOREEXTPROC, WaitSemaphoreEXT)                                             \
  X(PFNGLSIGNALSEMAPHOREEXTPROC, SignalSemaphoreEXT)                                         \
  /* GL_EXT_semaphore_fd (Linux) and GL_EXT_semaphore_win32 (Windows). */                    \
  X(PFNGLIMPORTSEMAPHOREFDEXTPROC, ImportSemaphoreFdEXT)                                     \
  X(PFNGLIMPORTSEMAPHOREWIN32HANDLEEXTPROC, ImportSemaphoreWin32HandleEXT)                   \
  /* GL_NV_timeline_semaphore. */                                                            \
  X(PFNGLCREATESEMAPHORESNVPROC, CreateSemaphoresNV)                                         \
  X(PFNGLSEMAPHOREPARAMETERIVNVPROC, SemaphoreParameterivNV)                                 \
  X(PFNGLGETSEMAPHOREPARAMETERIVNVPROC, GetSemaphoreParameterivNV)                           \
  /* GL_NV_memory_object_sparse (with GL_ARB_sparse_buffer for the sparse buffer itself). */ \
  X(PFNGLNAMEDBUFFERPAGECOMMITMENTMEMNVPROC, NamedBufferPageCommitmentMemNV)

/// One context's GL entry points (MEMBRIDGE_GL_FUNCTIONS). A member is null when the context does not
/// offer it; the capability flags of the context say which groups are complete.
struct functions {
#define MEMBRIDGE_GL_MEMBER(type, name) type name = nullptr;
  MEMBRIDGE_GL_FUNCTIONS(MEMBRIDGE_GL_MEMBER)
#undef MEMBRIDGE_GL_MEMBER
};

/// Where a context's entry points come from: the caller's get_proc_address, or on Windows
/// wglGetProcAddress with opengl32.dll's own exports for GL 1.0/1.1 (src/gl/win32/wgl.cpp).
using proc_loader = std::function<proc(const char* name)>;

/// Loads every entry point above with `load`. Missing ones stay null, and so do the values some
/// Windows drivers return for "missing" instead of null (1, 2, 3 and -1: never function addresses).
[[nodiscard]] functions load_functions(const proc_loader& load) noexcept;

/// What every object made from a context shares: the table and the capabilities read at adopt time.
struct context_state {
  functions fn;
  context_capabilities capabilities;
  os::dynamic_library library;  ///< The GL library the entry points came from (WGL adoption), kept loaded.
};

/// context::adopt_current's work, with entry points from `load`; `library` is kept with the state.
[[nodiscard]] result<context> adopt_current(const proc_loader& load, const adopt_options& options,
                                            os::dynamic_library library);

/// True when the driver binds buffers and textures at offset 0 of a memory object whatever offset it
/// is given, so a nonzero offset would silently show the wrong bytes: Mesa llvmpipe
/// (llvmpipe_resource_from_memobj never reads its offset argument; seen on Mesa 22.3).
[[nodiscard]] bool ignores_memory_offset(const context_capabilities& caps) noexcept;

/// Drains glGetError; the first error (if any) becomes an error with source gl and the GLenum as native
/// code: errc::out_of_memory for GL_OUT_OF_MEMORY, errc::invalid_argument for GL_INVALID_* (the driver
/// refused the call's arguments, e.g. an fd it cannot import), errc::internal otherwise.
/// `call` names the GL call checked.
[[nodiscard]] result<void> check_gl_error(const functions& fn, const char* call, std::string context = {});

}  // namespace membridge::gl::detail
