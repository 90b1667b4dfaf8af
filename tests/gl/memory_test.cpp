// gl tier: memory that Vulkan exports (lavapipe in CI) imported into GL (llvmpipe in CI) as buffers,
// textures and a chunked view; the bytes are checked both ways. Bad input gives clear errors and
// leaks no fd (the fd-leak listener runs on every test).
#include "gl_test.hpp"
#include "vulkan_test.hpp"

#include <membridge/gl/buffer.hpp>
#include <membridge/gl/chunked_buffer.hpp>
#include <membridge/gl/memory_object.hpp>
#include <membridge/gl/texture.hpp>

#include <GL/gl.h>
#include <GL/glext.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace membridge::testing {
namespace {

constexpr std::size_t no_mismatch = std::numeric_limits<std::size_t>::max();
constexpr GLenum gl_rgba8 = 0x8058;
// llvmpipe makes a buffer over a memory object only when the memory holds 48 bytes more than the
// buffer (llvmpipe_resource_from_memobj adds its rasterizer's over-read to the size it checks), and an
// allocation lavapipe exports holds only 40 bytes more than was asked for. So the Vulkan allocations
// behind GL buffers here are this much larger than the buffers (any driver accepts that); a buffer over
// a whole lavapipe allocation fails with GL_OUT_OF_MEMORY in glNamedBufferStorageMemEXT.
constexpr std::size_t llvmpipe_slack = 4096;

// GL entry points the tests call directly (read-backs the library does not offer), loaded with the
// headless context's own get_proc_address.
struct test_gl {
  using pfn_get_error = GLenum(APIENTRYP)();
  pfn_get_error GetError = nullptr;
  PFNGLGETNAMEDBUFFERSUBDATAPROC GetNamedBufferSubData = nullptr;
  PFNGLGETTEXTUREIMAGEPROC GetTextureImage = nullptr;

  explicit test_gl(gl::get_proc_address_fn load)
      : GetError(reinterpret_cast<pfn_get_error>(load("glGetError"))),
        GetNamedBufferSubData(reinterpret_cast<PFNGLGETNAMEDBUFFERSUBDATAPROC>(load("glGetNamedBufferSubData"))),
        GetTextureImage(reinterpret_cast<PFNGLGETTEXTUREIMAGEPROC>(load("glGetTextureImage"))) {}

  // The words of buffer `name` in [offset, offset + bytes), read by GL; poisoned where GL wrote nothing.
  std::vector<std::uint32_t> read_buffer(GLuint name, std::size_t offset, std::size_t bytes) const {
    std::vector<std::uint32_t> words(bytes / 4, 0xDEADBEEFU);
    GetNamedBufferSubData(name, static_cast<GLintptr>(offset), static_cast<GLsizeiptr>(bytes), words.data());
    return words;
  }
  // Level 0 of an RGBA8 texture, read by GL.
  std::vector<std::uint32_t> read_rgba8(GLuint texture, std::uint32_t width, std::uint32_t height) const {
    std::vector<std::uint32_t> texels(std::size_t{width} * height, 0xDEADBEEFU);
    GetTextureImage(texture, 0, GL_RGBA, GL_UNSIGNED_BYTE, static_cast<GLsizei>(texels.size() * 4), texels.data());
    return texels;
  }
};

std::uint32_t fresh_seed() { return std::random_device{}(); }

void fill(std::uint32_t* words, std::size_t count, std::uint32_t seed) {
  for (std::size_t i = 0; i < count; ++i) words[i] = pattern(seed, i);
}

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

class gl_memory_test : public vulkan_test {
 protected:
  void SetUp() override {
    vulkan_test::SetUp();
    if (HasFatalFailure()) return;
    auto made = make_gl_context();
    if (!made) GTEST_SKIP() << "no GL 4.5 context: " << made.error().message();
    gl = std::move(made).value();
    if (!gl.gl().capabilities().memory_object_fd) GTEST_SKIP() << "the GL context lacks GL_EXT_memory_object_fd";
  }
  void TearDown() override {
    gl = gl::headless_context();  // GL objects of the test are gone by now
    vulkan_test::TearDown();
  }
  [[nodiscard]] const gl::context& context() const { return gl.gl(); }
  [[nodiscard]] test_gl functions() const { return test_gl(gl.get_proc_address()); }

  gl::headless_context gl;
};

TEST_F(gl_memory_test, buffer_reads_what_vulkan_wrote_and_vulkan_sees_gl_writes) {
  constexpr std::size_t size = 1u << 20;
  constexpr std::size_t allocation = size + llvmpipe_slack;
  auto exported = allocate_and_export(vk.context, allocation);
  ASSERT_TRUE(exported) << exported.error().message();
  auto& [memory, fd] = *exported;
  const std::uint32_t seed = fresh_seed();
  fill(memory.words(), allocation / 4, seed);

  auto buffer = gl::buffer::import(context(), fd, {.size = allocation}, size);
  ASSERT_TRUE(buffer) << buffer.error().message();
  EXPECT_TRUE(is_open(fd.get())) << "the caller's fd must stay open";
  EXPECT_NE(buffer->name(), 0U);
  EXPECT_EQ(buffer->size(), size);
  ASSERT_TRUE(buffer->memory());
  EXPECT_EQ(buffer->memory()->size(), allocation);

  std::vector<std::uint32_t> words(size / 4, 0xDEADBEEFU);
  ASSERT_TRUE(buffer->read(0, words.data(), size));
  EXPECT_EQ(first_mismatch(words.data(), words.size(), seed), no_mismatch);

  // GL writes the second half; Vulkan's mapping sees it, the first half is untouched.
  const std::uint32_t seed2 = seed ^ 0x5A5A5A5AU;
  std::vector<std::uint32_t> second(size / 8);
  fill(second.data(), second.size(), seed2);
  ASSERT_TRUE(buffer->write(size / 2, second.data(), size / 2));
  ASSERT_TRUE(context().finish());
  EXPECT_EQ(first_mismatch(memory.words(), size / 8, seed), no_mismatch);
  EXPECT_EQ(first_mismatch(memory.words() + size / 8, size / 8, seed2), no_mismatch);
  EXPECT_EQ(memory.words()[size / 4], pattern(seed, size / 4)) << "GL wrote past the buffer";
}

TEST_F(gl_memory_test, a_second_read_sees_what_the_exporter_rewrote_in_between) {
  // read() goes through a GPU copy: a direct glGetNamedBufferSubData returned the first read's bytes
  // again on NVIDIA after the other API rewrote the memory.
  constexpr std::size_t size = 256u << 10;
  constexpr std::size_t allocation = size + llvmpipe_slack;
  auto exported = allocate_and_export(vk.context, allocation);
  ASSERT_TRUE(exported) << exported.error().message();
  auto& [memory, fd] = *exported;
  const std::uint32_t first_seed = fresh_seed();
  fill(memory.words(), allocation / 4, first_seed);
  auto buffer = gl::buffer::import(context(), fd, {.size = allocation}, size);
  ASSERT_TRUE(buffer) << buffer.error().message();
  std::vector<std::uint32_t> words(size / 4, 0xDEADBEEFU);
  ASSERT_TRUE(buffer->read(0, words.data(), size));
  EXPECT_EQ(first_mismatch(words.data(), words.size(), first_seed), no_mismatch);

  const std::uint32_t second_seed = first_seed ^ 0xA5A5A5A5U;
  fill(memory.words(), allocation / 4, second_seed);
  std::fill(words.begin(), words.end(), 0xDEADBEEFU);
  ASSERT_TRUE(buffer->read(0, words.data(), size));
  EXPECT_EQ(first_mismatch(words.data(), words.size(), second_seed), no_mismatch);
}

TEST_F(gl_memory_test, buffer_read_and_write_check_their_range) {
  constexpr std::size_t size = 64u << 10;
  auto exported = allocate_and_export(vk.context, size + llvmpipe_slack);
  ASSERT_TRUE(exported) << exported.error().message();
  auto& [memory, fd] = *exported;
  auto buffer = gl::buffer::import(context(), fd, {.size = size + llvmpipe_slack}, size);
  ASSERT_TRUE(buffer) << buffer.error().message();
  std::array<std::uint32_t, 4> words{};
  const auto past_end = buffer->read(size - 8, words.data(), 16);
  ASSERT_FALSE(past_end);
  EXPECT_EQ(past_end.error().code(), errc::invalid_argument);
  const auto overflow = buffer->write(std::numeric_limits<std::size_t>::max() - 4, words.data(), 16);
  ASSERT_FALSE(overflow);
  EXPECT_EQ(overflow.error().code(), errc::invalid_argument);
  EXPECT_TRUE(buffer->read(size, words.data(), 0)) << "an empty range at the end is fine";
  EXPECT_EQ(gl::buffer().read(0, words.data(), 4).error().code(), errc::invalid_argument);
}

TEST_F(gl_memory_test, one_memory_object_backs_two_buffers) {
  constexpr std::size_t size = 256u << 10;
  auto exported = allocate_and_export(vk.context, size + llvmpipe_slack);
  ASSERT_TRUE(exported) << exported.error().message();
  auto& [memory, fd] = *exported;
  const std::uint32_t seed = fresh_seed();
  fill(memory.words(), size / 4, seed);
  auto copy = os::borrowed_fd(fd).duplicate();
  ASSERT_TRUE(copy);
  auto object = gl::memory_object::import(context(), std::move(*copy), {.size = size + llvmpipe_slack});
  ASSERT_TRUE(object) << object.error().message();
  const auto shared = std::make_shared<const gl::memory_object>(std::move(*object));

  auto first = gl::buffer::create(shared, size);
  auto second = gl::buffer::create(shared, size / 2);
  ASSERT_TRUE(first) << first.error().message();
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_NE(first->name(), second->name());
  EXPECT_EQ(shared.use_count(), 3);
  const auto gl_fn = functions();
  auto a = gl_fn.read_buffer(first->name(), 0, size);
  auto b = gl_fn.read_buffer(second->name(), 0, size / 2);
  EXPECT_EQ(first_mismatch(a.data(), a.size(), seed), no_mismatch);
  EXPECT_EQ(first_mismatch(b.data(), b.size(), seed), no_mismatch);

  // What one buffer writes, the other reads (same memory).
  const std::uint32_t word = 0xC0FFEE01U;
  ASSERT_TRUE(first->write(0, &word, sizeof word));
  std::uint32_t seen = 0;
  ASSERT_TRUE(second->read(0, &seen, sizeof seen));
  EXPECT_EQ(seen, word);
  EXPECT_EQ(memory.words()[0], word);
}

// A buffer at an offset into the memory sees the bytes there. llvmpipe binds every buffer at offset 0
// (llvmpipe_resource_from_memobj ignores the offset), so there the library refuses a nonzero offset
// instead of showing the wrong bytes.
TEST_F(gl_memory_test, buffer_at_an_offset_sees_the_bytes_there) {
  constexpr std::size_t size = 256u << 10;
  constexpr std::size_t offset = 64u << 10;
  auto exported = allocate_and_export(vk.context, size);
  ASSERT_TRUE(exported) << exported.error().message();
  auto& [memory, fd] = *exported;
  const std::uint32_t seed = fresh_seed();
  fill(memory.words(), size / 4, seed);
  auto buffer = gl::buffer::import(context(), fd, {.size = size}, 64u << 10, offset);
  const auto& caps = context().capabilities();
  if (caps.renderer.find("llvmpipe") != std::string::npos) {
    ASSERT_FALSE(buffer) << "llvmpipe would read offset 0";
    EXPECT_EQ(buffer.error().code(), errc::unsupported);
    EXPECT_NE(buffer.error().message().find("offset 65536"), std::string::npos) << buffer.error().message();
    auto texture = gl::texture::import(context(), fd, {.size = size},
                                       {.width = 16, .height = 16, .internal_format = gl_rgba8, .linear_tiling = true},
                                       offset);
    ASSERT_FALSE(texture);
    EXPECT_EQ(texture.error().code(), errc::unsupported);
    return;
  }
  ASSERT_TRUE(buffer) << buffer.error().message();
  std::vector<std::uint32_t> words(buffer->size() / 4, 0xDEADBEEFU);
  ASSERT_TRUE(buffer->read(0, words.data(), buffer->size()));
  for (std::size_t i = 0; i < words.size(); ++i)
    ASSERT_EQ(words[i], pattern(seed, offset / 4 + i)) << "word " << i;
}

TEST_F(gl_memory_test, linear_texture_reads_the_texels_vulkan_wrote) {
  constexpr std::uint32_t width = 64;
  constexpr std::uint32_t height = 64;
  constexpr std::size_t size = 64u << 10;  // the tight 16 KiB image plus room for driver padding
  auto exported = allocate_and_export(vk.context, size);
  ASSERT_TRUE(exported) << exported.error().message();
  auto& [memory, fd] = *exported;
  const std::uint32_t seed = fresh_seed();
  fill(memory.words(), size / 4, seed);  // rows of width * 4 bytes, tightly packed

  const gl::texture_info info{.width = width, .height = height, .internal_format = gl_rgba8, .levels = 1,
                              .linear_tiling = true};
  auto texture = gl::texture::import(context(), fd, {.size = size}, info);
  ASSERT_TRUE(texture) << texture.error().message();
  EXPECT_NE(texture->name(), 0U);
  EXPECT_EQ(texture->info().width, width);
  EXPECT_TRUE(texture->info().linear_tiling);
  const auto gl_fn = functions();
  ASSERT_NE(gl_fn.GetTextureImage, nullptr);
  const auto texels = gl_fn.read_rgba8(texture->name(), width, height);
  EXPECT_EQ(gl_fn.GetError(), static_cast<GLenum>(GL_NO_ERROR));
  EXPECT_EQ(first_mismatch(texels.data(), texels.size(), seed), no_mismatch);
}

TEST_F(gl_memory_test, texture_rejects_bad_input) {
  constexpr std::size_t size = 64u << 10;
  auto exported = allocate_and_export(vk.context, size);
  ASSERT_TRUE(exported) << exported.error().message();
  auto& [memory, fd] = *exported;
  const gl::texture_info good{.width = 16, .height = 16, .internal_format = gl_rgba8};
  auto zero_width = good;
  zero_width.width = 0;
  auto no_format = good;
  no_format.internal_format = 0;
  auto no_levels = good;
  no_levels.levels = 0;
  for (const auto& bad : {zero_width, no_format, no_levels}) {
    const auto made = gl::texture::import(context(), fd, {.size = size}, bad);
    ASSERT_FALSE(made);
    EXPECT_EQ(made.error().code(), errc::invalid_argument) << made.error().message();
  }
  const auto past_end = gl::texture::import(context(), fd, {.size = size}, good, size);
  ASSERT_FALSE(past_end);
  EXPECT_EQ(past_end.error().code(), errc::invalid_argument);
  const auto unsized = gl::texture::import(context(), fd, {.size = size},
                                           {.width = 16, .height = 16, .internal_format = GL_RGBA});
  ASSERT_FALSE(unsized) << "GL_RGBA is not a sized format";
  EXPECT_EQ(unsized.error().source(), error_source::gl) << unsized.error().message();
  EXPECT_NE(unsized.error().message().find("glTextureStorageMem2DEXT"), std::string::npos)
      << unsized.error().message();
  EXPECT_TRUE(is_open(fd.get()));
}

TEST_F(gl_memory_test, per_chunk_view_over_three_allocations) {
  constexpr std::array<std::size_t, 3> sizes{256u << 10, 512u << 10, 128u << 10};
  std::vector<exported_memory> chunks;
  std::vector<std::uint32_t> seeds;
  for (const std::size_t size : sizes) {
    auto memory = exported_memory::allocate(vk.context, size + llvmpipe_slack);  // append() imports `size`
    ASSERT_TRUE(memory) << memory.error().message();
    seeds.push_back(fresh_seed());
    fill(memory->words(), size / 4, seeds.back());
    chunks.push_back(std::move(*memory));
  }
  auto view = gl::chunked_buffer::create(context(), 1u << 20, gl::growth_mode::per_chunk);
  ASSERT_TRUE(view) << view.error().message();
  EXPECT_FALSE(view->is_sparse());
  EXPECT_EQ(view->page_size(), 1U);
  EXPECT_EQ(view->name(), 0U) << "no chunk yet";

  std::size_t offset = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    auto fd = chunks[i].export_fd();
    ASSERT_TRUE(fd);
    ASSERT_TRUE(view->append(*fd, offset, sizes[i])) << "chunk " << i;
    EXPECT_TRUE(is_open(fd->get()));
    if (i == 0) {
      EXPECT_EQ(view->name(), view->segments()[0].buffer) << "the only chunk's buffer";
    }
    offset += sizes[i];
  }
  EXPECT_EQ(view->chunk_count(), 3U);
  EXPECT_EQ(view->size(), offset);
  EXPECT_EQ(view->generation(), 3U);
  EXPECT_EQ(view->name(), 0U) << "per-chunk mode with 3 chunks has no single name";

  const auto segments = view->segments();
  ASSERT_EQ(segments.size(), 3U);
  const auto gl_fn = functions();
  std::size_t expected_offset = 0;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    EXPECT_NE(segments[i].buffer, 0U);
    EXPECT_EQ(segments[i].buffer_offset, 0U);
    EXPECT_EQ(segments[i].offset, expected_offset);
    EXPECT_EQ(segments[i].size, sizes[i]);
    const auto words = gl_fn.read_buffer(segments[i].buffer, 0, segments[i].size);
    EXPECT_EQ(first_mismatch(words.data(), words.size(), seeds[i]), no_mismatch) << "segment " << i;
    expected_offset += sizes[i];
  }
  EXPECT_NE(segments[0].buffer, segments[1].buffer);
  EXPECT_NE(segments[1].buffer, segments[2].buffer);

  ASSERT_TRUE(view->truncate(1));
  EXPECT_EQ(view->chunk_count(), 1U);
  EXPECT_EQ(view->size(), sizes[0]);
  EXPECT_EQ(view->generation(), 5U);
  ASSERT_EQ(view->segments().size(), 1U);
  EXPECT_EQ(view->name(), view->segments()[0].buffer);
  const auto kept = gl_fn.read_buffer(view->name(), 0, sizes[0]);
  EXPECT_EQ(first_mismatch(kept.data(), kept.size(), seeds[0]), no_mismatch);

  // Grows again after a truncate, at the new end.
  auto fd = chunks[2].export_fd();
  ASSERT_TRUE(fd);
  ASSERT_TRUE(view->append(*fd, sizes[0], sizes[2]));
  EXPECT_EQ(view->segments()[1].offset, sizes[0]);
  const auto regrown = gl_fn.read_buffer(view->segments()[1].buffer, 0, sizes[2]);
  EXPECT_EQ(first_mismatch(regrown.data(), regrown.size(), seeds[2]), no_mismatch);
}

TEST_F(gl_memory_test, chunked_view_rejects_bad_input_and_stays_unchanged) {
  constexpr std::size_t chunk = 64u << 10;
  auto exported = allocate_and_export(vk.context, chunk);
  ASSERT_TRUE(exported) << exported.error().message();
  auto& [memory, fd] = *exported;

  const auto no_reserve = gl::chunked_buffer::create(context(), 0);
  ASSERT_FALSE(no_reserve);
  EXPECT_EQ(no_reserve.error().code(), errc::invalid_argument);
  if (!context().capabilities().sparse_growth()) {
    const auto sparse = gl::chunked_buffer::create(context(), chunk, gl::growth_mode::sparse);
    ASSERT_FALSE(sparse);
    EXPECT_EQ(sparse.error().code(), errc::unsupported);
    EXPECT_NE(sparse.error().message().find("GL_NV_memory_object_sparse"), std::string::npos);
  }

  auto view = gl::chunked_buffer::create(context(), 2 * chunk, gl::growth_mode::per_chunk);
  ASSERT_TRUE(view);
  const auto wrong_offset = view->append(fd, chunk, chunk);
  ASSERT_FALSE(wrong_offset);
  EXPECT_EQ(wrong_offset.error().code(), errc::invalid_argument);
  EXPECT_NE(wrong_offset.error().message().find("expected offset 0"), std::string::npos);
  EXPECT_EQ(view->append(fd, 0, 0).error().code(), errc::invalid_argument);
  EXPECT_EQ(view->append(fd, 0, 3 * chunk).error().code(), errc::invalid_argument);
  EXPECT_EQ(view->append(os::borrowed_fd(), 0, chunk).error().code(), errc::invalid_argument);
  EXPECT_EQ(view->truncate(1).error().code(), errc::invalid_argument);
  EXPECT_EQ(view->chunk_count(), 0U);
  EXPECT_EQ(view->size(), 0U);
  EXPECT_EQ(view->generation(), 0U);
  EXPECT_TRUE(view->segments().empty());
  EXPECT_TRUE(is_open(fd.get()));
}

TEST_F(gl_memory_test, buffer_import_rejects_bad_input) {
  constexpr std::size_t size = 64u << 10;
  auto exported = allocate_and_export(vk.context, size);
  ASSERT_TRUE(exported) << exported.error().message();
  auto& [memory, fd] = *exported;

  const auto empty_fd = gl::buffer::import(context(), os::borrowed_fd(), {.size = size}, size);
  ASSERT_FALSE(empty_fd);
  EXPECT_EQ(empty_fd.error().code(), errc::invalid_argument);
  const auto zero_size = gl::buffer::import(context(), fd, {.size = size}, 0);
  ASSERT_FALSE(zero_size);
  EXPECT_EQ(zero_size.error().code(), errc::invalid_argument);
  const auto zero_allocation = gl::buffer::import(context(), fd, {.size = 0}, size);
  ASSERT_FALSE(zero_allocation);
  EXPECT_EQ(zero_allocation.error().code(), errc::invalid_argument);
  const auto past_end = gl::buffer::import(context(), fd, {.size = size}, size / 2, size / 2 + 4);
  ASSERT_FALSE(past_end);
  EXPECT_EQ(past_end.error().code(), errc::invalid_argument);
  EXPECT_NE(past_end.error().message().find("exceeds the allocation"), std::string::npos) << past_end.error().message();
  const auto huge_offset =
      gl::buffer::import(context(), fd, {.size = size}, size, std::numeric_limits<std::size_t>::max() - 1);
  ASSERT_FALSE(huge_offset);
  EXPECT_EQ(huge_offset.error().code(), errc::invalid_argument);
  const auto no_context = gl::buffer::import(gl::context(), fd, {.size = size}, size);
  ASSERT_FALSE(no_context);
  EXPECT_EQ(no_context.error().code(), errc::invalid_argument);
  const auto no_memory = gl::buffer::create(nullptr, size);
  ASSERT_FALSE(no_memory);
  EXPECT_EQ(no_memory.error().code(), errc::invalid_argument);

  const auto empty_object = gl::memory_object::import(context(), os::unique_fd(), {.size = size});
  ASSERT_FALSE(empty_object);
  EXPECT_EQ(empty_object.error().code(), errc::invalid_argument);
  auto copy = os::borrowed_fd(fd).duplicate();
  ASSERT_TRUE(copy);
  const auto zero_object = gl::memory_object::import(context(), std::move(*copy), {.size = 0});
  ASSERT_FALSE(zero_object);
  EXPECT_EQ(zero_object.error().code(), errc::invalid_argument);  // and the consumed copy is closed (listener)
  EXPECT_TRUE(is_open(fd.get()));
}

// An fd that is not exported memory: the import or the bind fails with a GL error, the caller's fd
// stays open and GL's copy is not leaked (Mesa closes what it was given; membridge closes it when
// GL raised an error).
void expect_refused(const gl::context& context, int foreign_fd, const char* what) {
  const auto buffer = gl::buffer::import(context, os::borrowed_fd::from_native(foreign_fd), {.size = 4096}, 4096);
  ASSERT_FALSE(buffer) << what << " was imported as memory";
  EXPECT_EQ(buffer.error().source(), error_source::gl) << buffer.error().message();
  EXPECT_TRUE(is_open(foreign_fd)) << what;
}

TEST_F(gl_memory_test, a_file_that_is_not_exported_memory_is_refused) {
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  expect_refused(context(), null_fd, "/dev/null");
  ::close(null_fd);

  const int memfd = ::memfd_create("membridge-not-vulkan-memory", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  ASSERT_EQ(::ftruncate(memfd, 1 << 16), 0);
  expect_refused(context(), memfd, "a memfd");
  ::close(memfd);
}

}  // namespace
}  // namespace membridge::testing
