// src/gl/detail/functions.hpp: the GL functions membridge calls, loaded per context from the caller's
// get_proc_address (never GL prototypes, never global pointers). Private to the gl module.
#pragma once

#include <membridge/gl/context.hpp>

#include <GL/gl.h>
#include <GL/glext.h>

namespace membridge::gl::detail {

// GL 1.0/1.1 entry points have no PFN types in glext.h (gl.h declares them as prototypes).
using pfn_get_string = const GLubyte*(APIENTRYP)(GLenum name);
using pfn_get_integerv = void(APIENTRYP)(GLenum pname, GLint* data);
using pfn_get_error = GLenum(APIENTRYP)();
using pfn_flush = void(APIENTRYP)();
using pfn_finish = void(APIENTRYP)();
using pfn_delete_textures = void(APIENTRYP)(GLsizei n, const GLuint* textures);

/// One context's GL entry points. A member is null when the context does not offer it; the
/// capability flags of the context say which groups are complete.
struct functions {
  // GL 4.5 core (direct state access).
  pfn_get_string GetString = nullptr;
  PFNGLGETSTRINGIPROC GetStringi = nullptr;
  pfn_get_integerv GetIntegerv = nullptr;
  pfn_get_error GetError = nullptr;
  pfn_flush Flush = nullptr;
  pfn_finish Finish = nullptr;
  PFNGLCREATEBUFFERSPROC CreateBuffers = nullptr;
  PFNGLDELETEBUFFERSPROC DeleteBuffers = nullptr;
  PFNGLNAMEDBUFFERSTORAGEPROC NamedBufferStorage = nullptr;
  PFNGLNAMEDBUFFERSUBDATAPROC NamedBufferSubData = nullptr;
  PFNGLGETNAMEDBUFFERSUBDATAPROC GetNamedBufferSubData = nullptr;
  PFNGLCOPYNAMEDBUFFERSUBDATAPROC CopyNamedBufferSubData = nullptr;
  PFNGLCREATETEXTURESPROC CreateTextures = nullptr;
  pfn_delete_textures DeleteTextures = nullptr;
  PFNGLTEXTUREPARAMETERIPROC TextureParameteri = nullptr;
  PFNGLGETTEXTUREIMAGEPROC GetTextureImage = nullptr;
  PFNGLTEXTURESUBIMAGE2DPROC TextureSubImage2D = nullptr;
  PFNGLMEMORYBARRIERPROC MemoryBarrier = nullptr;
  // GL_EXT_memory_object.
  PFNGLGETUNSIGNEDBYTEVEXTPROC GetUnsignedBytevEXT = nullptr;
  PFNGLGETUNSIGNEDBYTEI_VEXTPROC GetUnsignedBytei_vEXT = nullptr;
  PFNGLCREATEMEMORYOBJECTSEXTPROC CreateMemoryObjectsEXT = nullptr;
  PFNGLDELETEMEMORYOBJECTSEXTPROC DeleteMemoryObjectsEXT = nullptr;
  PFNGLISMEMORYOBJECTEXTPROC IsMemoryObjectEXT = nullptr;
  PFNGLMEMORYOBJECTPARAMETERIVEXTPROC MemoryObjectParameterivEXT = nullptr;
  PFNGLNAMEDBUFFERSTORAGEMEMEXTPROC NamedBufferStorageMemEXT = nullptr;
  PFNGLTEXTURESTORAGEMEM2DEXTPROC TextureStorageMem2DEXT = nullptr;
  // GL_EXT_memory_object_fd.
  PFNGLIMPORTMEMORYFDEXTPROC ImportMemoryFdEXT = nullptr;
  // GL_EXT_semaphore.
  PFNGLGENSEMAPHORESEXTPROC GenSemaphoresEXT = nullptr;
  PFNGLDELETESEMAPHORESEXTPROC DeleteSemaphoresEXT = nullptr;
  PFNGLISSEMAPHOREEXTPROC IsSemaphoreEXT = nullptr;
  PFNGLSEMAPHOREPARAMETERUI64VEXTPROC SemaphoreParameterui64vEXT = nullptr;
  PFNGLGETSEMAPHOREPARAMETERUI64VEXTPROC GetSemaphoreParameterui64vEXT = nullptr;
  PFNGLWAITSEMAPHOREEXTPROC WaitSemaphoreEXT = nullptr;
  PFNGLSIGNALSEMAPHOREEXTPROC SignalSemaphoreEXT = nullptr;
  // GL_EXT_semaphore_fd.
  PFNGLIMPORTSEMAPHOREFDEXTPROC ImportSemaphoreFdEXT = nullptr;
  // GL_NV_timeline_semaphore.
  PFNGLCREATESEMAPHORESNVPROC CreateSemaphoresNV = nullptr;
  PFNGLSEMAPHOREPARAMETERIVNVPROC SemaphoreParameterivNV = nullptr;
  PFNGLGETSEMAPHOREPARAMETERIVNVPROC GetSemaphoreParameterivNV = nullptr;
  // GL_NV_memory_object_sparse (with GL_ARB_sparse_buffer for the sparse buffer itself).
  PFNGLNAMEDBUFFERPAGECOMMITMENTMEMNVPROC NamedBufferPageCommitmentMemNV = nullptr;
};

/// Loads every entry point above with `get_proc_address` (missing ones stay null).
[[nodiscard]] functions load_functions(get_proc_address_fn get_proc_address) noexcept;

/// What every object made from a context shares: the table and the capabilities read at adopt time.
struct context_state {
  functions fn;
  context_capabilities capabilities;
};

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
