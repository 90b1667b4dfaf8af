// gpu tier, OpenGL: CUDA and GL on one GPU sharing VMM memory with no copies. A headless EGL context
// on the CUDA device's GPU (sync::create_gl_context_for); buffers both ways; linear textures CUDA
// addresses by row pitch (optimal textures through a Vulkan-free path); a CUDA<->GL semaphore
// ping-pong whose order is checked in the data; a growable_buffer growing twice while GL follows; GL
// as the consumer of a frame_timeline fed by a CUDA producer thread. Every test checks the data.
//
// One GL context serves the whole process: the warm-up makes it (so the EGL driver's long-lived fds
// exist before the fd-leak listener's first snapshot); each test makes it current on its thread in
// SetUp and releases it in TearDown. Every GL call of a test runs on that thread.
#include "gl/detail/functions.hpp"  // the gl module's table (src/)
#include "gpu_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/gl/buffer.hpp>
#include <membridge/gl/chunked_buffer.hpp>
#include <membridge/gl/context.hpp>
#include <membridge/gl/headless_context.hpp>
#include <membridge/gl/semaphore.hpp>
#include <membridge/gl/texture.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/gl_bridge.hpp>
#include <membridge/sync/gl_frame_consumer.hpp>
#include <membridge/sync/same_gpu.hpp>
#include <membridge/vulkan/shared_image.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>

#include <volk.h>

#include <GL/gl.h>
#include <GL/glext.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace membridge::testing {
namespace {

using namespace membridge::literals;
using namespace std::chrono_literals;

// ------------------------------------------------------------------------------------------------
// GL calls for the tests' own GL objects: the gl module's table (src/gl/detail/functions.hpp), loaded
// with the headless context's eglGetProcAddress, plus glPixelStorei, which the library never calls
// (GL 1.x entry points have no PFN types in glext.h).

using pfn_pixel_storei = void(APIENTRYP)(GLenum pname, GLint param);

struct gl_calls : gl::detail::functions {
  pfn_pixel_storei PixelStorei = nullptr;
  std::string missing;  // the names of the calls the tests make that did not load

  void require(bool loaded, const char* name) {
    if (!loaded) missing += std::string(missing.empty() ? "" : ", ") + name;
  }

  static gl_calls load(gl::get_proc_address_fn get_proc_address) {
    gl_calls fn;
    static_cast<gl::detail::functions&>(fn) = gl::detail::load_functions(get_proc_address);
    fn.PixelStorei = reinterpret_cast<pfn_pixel_storei>(get_proc_address("glPixelStorei"));
    fn.require(fn.CreateBuffers != nullptr, "glCreateBuffers");
    fn.require(fn.DeleteBuffers != nullptr, "glDeleteBuffers");
    fn.require(fn.NamedBufferStorage != nullptr, "glNamedBufferStorage");
    fn.require(fn.NamedBufferSubData != nullptr, "glNamedBufferSubData");
    fn.require(fn.GetNamedBufferSubData != nullptr, "glGetNamedBufferSubData");
    fn.require(fn.CopyNamedBufferSubData != nullptr, "glCopyNamedBufferSubData");
    fn.require(fn.TextureSubImage2D != nullptr, "glTextureSubImage2D");
    fn.require(fn.GetTextureImage != nullptr, "glGetTextureImage");
    fn.require(fn.GetError != nullptr, "glGetError");
    fn.require(fn.PixelStorei != nullptr, "glPixelStorei");
    return fn;
  }

  /// Drains glGetError: "" when GL recorded no error, else the codes in hex.
  [[nodiscard]] std::string errors() const {
    std::string out;
    for (int i = 0; i < 16; ++i) {
      const GLenum e = GetError();
      if (e == GL_NO_ERROR) break;
      char code[16];
      std::snprintf(code, sizeof code, "0x%04x ", e);
      out += code;
    }
    return out;
  }
};

/// The process's GL context (made once by the warm-up, or by the first test that needs it).
struct process_gl {
  std::optional<result<gl::headless_context>> made;
  gl_calls fn;
  // A Vulkan device kept for the whole process: on the H100 (driver 580) every GL call failed with
  // EGL_NOT_INITIALIZED after the warm-up's Vulkan device (and the process's last VkInstance) was
  // destroyed, so one instance outlives the GL context here.
  std::optional<vulkan::device_context> vulkan;
};

process_gl& shared_gl(const cuda::device& dev) {
  // Never destroyed: tearing EGL, GL and Vulkan down from a static destructor at exit, after the
  // drivers' own exit handlers, crashed the process on the H100 (SIGSEGV after the last test).
  static process_gl& gl_state = *new process_gl;
  if (!gl_state.made) {
    gl_state.made.emplace(sync::create_gl_context_for(dev));
    if (gl_state.made->has_value()) {
      const gl::headless_context& context = gl_state.made->value();
      gl_state.fn = gl_calls::load(context.get_proc_address());
      (void)context.release_current();  // each test makes it current on its own thread
    }
  }
  return gl_state;
}

/// A GL-owned buffer (glNamedBufferStorage), poisoned at creation: GL's side of a copy, a history.
class gl_scratch_buffer {
 public:
  gl_scratch_buffer(const gl_calls& fn, std::size_t bytes, std::uint32_t poison) : fn_(&fn), size_(bytes) {
    fn.CreateBuffers(1, &name_);
    const std::vector<std::uint32_t> init(bytes / 4, poison);
    fn.NamedBufferStorage(name_, static_cast<GLsizeiptr>(bytes), init.data(), GL_DYNAMIC_STORAGE_BIT);
  }
  gl_scratch_buffer(const gl_scratch_buffer&) = delete;
  gl_scratch_buffer& operator=(const gl_scratch_buffer&) = delete;
  ~gl_scratch_buffer() {
    if (name_ != 0) fn_->DeleteBuffers(1, &name_);
  }
  [[nodiscard]] GLuint name() const noexcept { return name_; }
  /// glGetNamedBufferSubData of the whole buffer (waits for GL work that writes it).
  [[nodiscard]] std::vector<std::uint32_t> read_all() const {
    std::vector<std::uint32_t> out(size_ / 4, 0xDEADBEEFU);
    fn_->GetNamedBufferSubData(name_, 0, static_cast<GLsizeiptr>(size_), out.data());
    return out;
  }

 private:
  const gl_calls* fn_;
  std::size_t size_;
  GLuint name_ = 0;
};

// ------------------------------------------------------------------------------------------------
// Host-side checks.

/// Host words compared with gpu::pattern (the function the CUDA kernels use): the count of words
/// that differ and the first few, as "word i (x, y): got 0x.., want 0x..".
struct pattern_report {
  std::size_t bad = 0;
  std::string first;
};

pattern_report compare_with_pattern(const std::uint32_t* words, std::size_t count, std::uint32_t seed,
                                    std::uint64_t first_word = 0, std::uint32_t width = 0) {
  pattern_report report;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t want = gpu::pattern(first_word + i, seed);
    if (words[i] == want) continue;
    if (report.bad++ < 6) {
      char line[128];
      if (width != 0) {
        std::snprintf(line, sizeof line, " texel (%zu, %zu): got 0x%08x, want 0x%08x;", i % width, i / width,
                      words[i], want);
      } else {
        std::snprintf(line, sizeof line, " word %llu: got 0x%08x, want 0x%08x;",
                      static_cast<unsigned long long>(first_word + i), words[i], want);
      }
      report.first += line;
    }
  }
  return report;
}

std::string hex(std::uint32_t word) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", word);
  return text;
}

std::string describe(const pattern_report& r, std::size_t count, std::uint32_t seed) {
  return std::to_string(r.bad) + " of " + std::to_string(count) + " words differ from pattern seed " +
         std::to_string(seed) + ";" + r.first;
}

// ------------------------------------------------------------------------------------------------
// The fixture.

class gl_gpu_test : public gpu_test {
 protected:
  void SetUp() override {
    gpu_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    process_gl& state = shared_gl(dev_);
    // The GPU is there: a missing GL context is a failure, never a skip (MEMBRIDGE_REQUIRE_GPU=1 runs).
    ASSERT_TRUE(state.made->has_value()) << "CUDA device 0 (" << dev_.name() << ", UUID " << dev_.uuid().to_string()
                                         << ") is usable but no GL context could be made on it: "
                                         << state.made->error().message();
    ASSERT_TRUE(state.fn.missing.empty()) << "eglGetProcAddress returned nothing for: " << state.fn.missing;
    context_ = &state.made->value();
    fn_ = &state.fn;
    MB_OK(context_->make_current());
    current_ = true;
    const std::string stale = fn_->errors();
    EXPECT_EQ(stale, "") << "GL errors left over from before this test";
  }

  void TearDown() override {
    if (!current_) return;  // skipped (no GPU) or no GL context
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto finished = context_->gl().finish();
    EXPECT_TRUE(finished.has_value()) << finished.error().message();
    EXPECT_EQ(fn_->errors(), "") << "GL recorded errors during the test";
    const auto released = context_->release_current();
    EXPECT_TRUE(released.has_value()) << released.error().message();
  }

  [[nodiscard]] const gl::headless_context& headless() const { return *context_; }
  [[nodiscard]] const gl::context& gl() const { return context_->gl(); }
  [[nodiscard]] const gl_calls& fn() const { return *fn_; }

  /// glGetTextureImage of level 0 as 32-bit texels (RGBA8 as GL_RGBA/UNSIGNED_BYTE: R is the low byte).
  std::vector<std::uint32_t> read_texture(GLuint texture, GLenum format, GLenum type, std::uint32_t width,
                                          std::uint32_t height) const {
    std::vector<std::uint32_t> out(std::size_t{width} * height, 0xDEADBEEFU);
    fn().PixelStorei(GL_PACK_ALIGNMENT, 4);
    fn().GetTextureImage(texture, 0, format, type, static_cast<GLsizei>(out.size() * 4), out.data());
    return out;
  }
  void write_texture(GLuint texture, GLenum format, GLenum type, std::uint32_t width, std::uint32_t height,
                     const std::vector<std::uint32_t>& texels) const {
    fn().PixelStorei(GL_UNPACK_ALIGNMENT, 4);
    fn().TextureSubImage2D(texture, 0, 0, 0, static_cast<GLsizei>(width), static_cast<GLsizei>(height), format, type,
                           texels.data());
  }

  /// Reads `bytes` at `offset` of GL's view of a chunked buffer, through whichever segments cover the
  /// range (one in sparse mode). Returns the bytes no segment covered (0 when the view has them all).
  std::size_t read_view(const gl::chunked_buffer& view, std::size_t offset, std::size_t bytes,
                        std::uint32_t* out) const {
    std::size_t covered = 0;
    for (const gl::buffer_segment& seg : view.segments()) {
      const std::size_t lo = std::max(offset, seg.offset);
      const std::size_t hi = std::min(offset + bytes, seg.offset + seg.size);
      if (lo >= hi) continue;
      // Through a GL-owned copy: a direct glGetNamedBufferSubData of memory-object storage answered
      // with stale bytes on the H100 once CUDA had rewritten the memory.
      const gl_scratch_buffer staging(fn(), hi - lo, 0xFFFFFFFFU);
      fn().CopyNamedBufferSubData(seg.buffer, staging.name(), static_cast<GLintptr>(seg.buffer_offset + (lo - seg.offset)),
                                  0, static_cast<GLsizeiptr>(hi - lo));
      fn().GetNamedBufferSubData(staging.name(), 0, static_cast<GLsizeiptr>(hi - lo), out + (lo - offset) / 4);
      covered += hi - lo;
    }
    return bytes - covered;
  }
  /// Writes through the segments, as read_view reads.
  std::size_t write_view(const gl::chunked_buffer& view, std::size_t offset, std::size_t bytes,
                         const std::uint32_t* data) const {
    std::size_t covered = 0;
    for (const gl::buffer_segment& seg : view.segments()) {
      const std::size_t lo = std::max(offset, seg.offset);
      const std::size_t hi = std::min(offset + bytes, seg.offset + seg.size);
      if (lo >= hi) continue;
      fn().NamedBufferSubData(seg.buffer, static_cast<GLintptr>(seg.buffer_offset + (lo - seg.offset)),
                              static_cast<GLsizeiptr>(hi - lo), data + (lo - offset) / 4);
      covered += hi - lo;
    }
    return bytes - covered;
  }

  /// A GL_RGBA8 2048x2048 texture with OPTIMAL tiling on a poisoned VMM chunk, no Vulkan involved:
  /// GL writes a pattern and reads it back (the texture lives in that memory: CUDA sees the poison
  /// replaced), then CUDA overwrites the whole chunk with another pattern and every texel GL reads
  /// must be a distinct word CUDA wrote (the tiling is the driver's, so the places are not checked).
  void optimal_texture_without_vulkan() {
    constexpr std::uint32_t width = 2048;
    constexpr std::uint32_t height = 2048;
    constexpr std::size_t texels = std::size_t{width} * height;
    // GL has no query for the memory a texture on a memory object needs: twice the texel bytes.
    poisoned_chunk made;
    make_poisoned_chunk(2 * texels * 4, made);
    if (HasFatalFailure()) return;
    auto& [buffer, chunk] = made;
    auto texture = gl::texture::import(gl(), chunk.fd, {.size = chunk.size},
                                       {.width = width, .height = height, .internal_format = GL_RGBA8});
    ASSERT_TRUE(texture.has_value()) << "GL refused an OPTIMAL-tiled GL_RGBA8 2048x2048 texture on a "
                                     << chunk.size << "-byte VMM chunk: " << texture.error().message();

    const std::uint32_t gl_seed = fresh_seed();
    std::vector<std::uint32_t> texels_in(texels);
    for (std::size_t i = 0; i < texels; ++i) texels_in[i] = gpu::pattern(i, gl_seed);
    write_texture(texture->name(), GL_RGBA, GL_UNSIGNED_BYTE, width, height, texels_in);
    MB_OK(gl().finish());
    const auto back = read_texture(texture->name(), GL_RGBA, GL_UNSIGNED_BYTE, width, height);
    const auto round_trip = compare_with_pattern(back.data(), texels, gl_seed, 0, width);
    EXPECT_EQ(round_trip.bad, 0U) << "GL's optimal texture on VMM memory: " << describe(round_trip, texels, gl_seed);
    unsigned long long changed = ~0ULL;
    MB_CUDA_OK(gpu::count_not_equal(buffer.data(), buffer.capacity(), 0xEEEEEEEEU, changed));
    EXPECT_GE(changed, texels * 99 / 100) << "GL's texel writes did not land in the VMM chunk (" << changed
                                          << " words changed from the poison)";

    const std::uint32_t cuda_seed = fresh_seed();
    const std::size_t words = buffer.capacity() / 4;
    MB_CUDA_OK(gpu::fill_pattern(buffer.data(), buffer.capacity(), cuda_seed));
    MB_CUDA_OK(cudaDeviceSynchronize());
    auto seen = read_texture(texture->name(), GL_RGBA, GL_UNSIGNED_BYTE, width, height);
    std::vector<std::uint32_t> written(words);
    for (std::size_t k = 0; k < words; ++k) written[k] = gpu::pattern(k, cuda_seed);
    std::sort(written.begin(), written.end());
    std::size_t foreign = 0;
    for (const std::uint32_t t : seen)
      if (!std::binary_search(written.begin(), written.end(), t)) ++foreign;
    std::sort(seen.begin(), seen.end());
    const auto repeated = static_cast<std::size_t>(seen.end() - std::unique(seen.begin(), seen.end()));
    EXPECT_EQ(foreign, 0U) << "texels GL read that CUDA never wrote into the chunk (seed " << cuda_seed << ")";
    EXPECT_EQ(repeated, 0U) << "texels GL read twice from the same word: the texture does not map " << texels
                            << " distinct words of the chunk";
  }

  const gl::headless_context* context_ = nullptr;
  const gl_calls* fn_ = nullptr;
  bool current_ = false;
};

// ------------------------------------------------------------------------------------------------
// The context.

TEST_F(gl_gpu_test, the_gl_context_is_on_the_cuda_gpu_and_reports_its_capabilities) {
  const gl::context_capabilities& caps = gl().capabilities();
  const gl::egl_device_info& device = headless().device();
  std::cout << "[ GL       ] " << caps.renderer << " | " << caps.vendor << " | GL " << caps.version << "\n"
            << "[ GL       ] EGL device " << device.index << " cuda_device="
            << (device.cuda_device ? std::to_string(*device.cuda_device) : std::string("-"))
            << " drm=" << (device.drm_device.empty() ? std::string("-") : device.drm_device) << "\n"
            << "[ GL       ] memory_object=" << caps.memory_object << " memory_object_fd=" << caps.memory_object_fd
            << " semaphore=" << caps.semaphore << " semaphore_fd=" << caps.semaphore_fd
            << " timeline=" << caps.timeline_semaphore << " sparse_buffer=" << caps.sparse_buffer
            << " memory_object_sparse=" << caps.memory_object_sparse << " sparse_growth=" << caps.sparse_growth()
            << " sparse_page_size=" << caps.sparse_page_size << "\n"
            << "[ GL       ] GL UUID " << (caps.device_uuids.empty() ? std::string("none") : gl().uuid().to_string())
            << ", CUDA UUID " << dev_.uuid().to_string() << std::endl;
  RecordProperty("gl_renderer", caps.renderer);
  RecordProperty("gl_version", caps.version);
  RecordProperty("memory_object_fd", caps.memory_object_fd ? 1 : 0);
  RecordProperty("semaphore_fd", caps.semaphore_fd ? 1 : 0);
  RecordProperty("timeline", caps.timeline_semaphore ? 1 : 0);
  RecordProperty("sparse_growth", caps.sparse_growth() ? 1 : 0);
  RecordProperty("sparse_page_size", static_cast<int>(caps.sparse_page_size));

  ASSERT_FALSE(caps.device_uuids.empty()) << "GL reports no GL_DEVICE_UUID_EXT";
  EXPECT_TRUE(gl().is_on(dev_.uuid())) << "GL renders on " << gl().uuid().to_string() << ", CUDA device 0 is "
                                       << dev_.uuid().to_string();
  EXPECT_TRUE(std::find(caps.device_uuids.begin(), caps.device_uuids.end(), dev_.uuid()) != caps.device_uuids.end());
  MB_OK(sync::require_same_gpu(dev_, gl()));
  EXPECT_GE(caps.major * 10 + caps.minor, 45) << caps.version;
  EXPECT_TRUE(caps.direct_state_access);
  EXPECT_TRUE(caps.memory_object);
  EXPECT_TRUE(caps.memory_object_fd);
  EXPECT_TRUE(caps.semaphore_import()) << "NVIDIA's GL offers GL_EXT_semaphore_fd; " << caps.renderer << " does not";

  // Adopting the same context for another GPU's UUID is refused, naming the mismatch.
  gl::adopt_options other_gpu;
  other_gpu.uuid = dev_.uuid();
  other_gpu.uuid->bytes[0] = static_cast<std::uint8_t>(other_gpu.uuid->bytes[0] ^ 0xFFU);
  auto refused = gl::context::adopt_current(headless().get_proc_address(), other_gpu);
  ASSERT_FALSE(refused.has_value()) << "a GL context was adopted for a UUID no GL device has";
  EXPECT_EQ(refused.error().code(), errc::invalid_argument) << refused.error().message();
}

// ------------------------------------------------------------------------------------------------
// Buffers.

TEST_F(gl_gpu_test, buffer_cuda_writes_gl_reads_and_gl_writes_cuda_reads) {
  constexpr std::size_t size = 64_MiB;
  poisoned_chunk made;
  make_poisoned_chunk(size, made);
  if (HasFatalFailure()) return;
  auto& [buffer, chunk] = made;
  auto view = gl::buffer::import(gl(), chunk.fd, {.size = chunk.size}, size);
  MB_OK(view);
  ASSERT_EQ(view->size(), size);
  // A second buffer over the same chunk at an offset: a window 16 MiB long starting at 40 MiB.
  constexpr std::size_t window_offset = 40_MiB;
  constexpr std::size_t window_size = 16_MiB;
  auto window = gl::buffer::create(view->memory(), window_size, window_offset);
  MB_OK(window);

  // CUDA writes, GL reads (the whole buffer, and the window at its offset).
  const std::uint32_t cuda_seed = fresh_seed();
  MB_CUDA_OK(gpu::fill_pattern(buffer.data(), size, cuda_seed));
  MB_CUDA_OK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> host(size / 4, 0xDEADBEEFU);
  MB_OK(view->read(0, host.data(), size));
  const auto whole = compare_with_pattern(host.data(), host.size(), cuda_seed);
  EXPECT_EQ(whole.bad, 0U) << "GL read of CUDA's writes: " << describe(whole, host.size(), cuda_seed);
  std::vector<std::uint32_t> part(window_size / 4, 0xDEADBEEFU);
  MB_OK(window->read(0, part.data(), window_size));
  const auto windowed = compare_with_pattern(part.data(), part.size(), cuda_seed, window_offset / 4);
  EXPECT_EQ(windowed.bad, 0U) << "GL buffer at memory offset 40 MiB: " << describe(windowed, part.size(), cuda_seed);

  // GL writes, CUDA reads: the whole buffer, then a range through the window at an odd word offset.
  const std::uint32_t gl_seed = fresh_seed();
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = gpu::pattern(i, gl_seed);
  MB_OK(view->write(0, host.data(), size));
  MB_OK(gl().finish());
  EXPECT_EQ(mismatches(buffer.data(), size, gl_seed), 0U) << "CUDA read of GL's writes, seed " << gl_seed;

  const std::uint32_t window_seed = fresh_seed();
  constexpr std::size_t at = 4_MiB + 12;  // inside the window
  constexpr std::size_t bytes = 1_MiB + 4;
  std::vector<std::uint32_t> piece(bytes / 4);
  for (std::size_t i = 0; i < piece.size(); ++i) piece[i] = gpu::pattern(i, window_seed);
  MB_OK(window->write(at, piece.data(), bytes));
  MB_OK(gl().finish());
  EXPECT_EQ(mismatches(buffer.data<unsigned char>() + window_offset + at, bytes, window_seed), 0U)
      << "CUDA read of GL's write through the window";
  // Bytes around the written range still hold GL's first pattern.
  EXPECT_EQ(mismatches(buffer.data<unsigned char>() + window_offset, at, gl_seed, window_offset / 4), 0U);
  EXPECT_EQ(mismatches(buffer.data<unsigned char>() + window_offset + at + bytes, 1_MiB, gl_seed,
                       (window_offset + at + bytes) / 4),
            0U);
}

// ------------------------------------------------------------------------------------------------
// Textures.

struct texture_case {
  const char* name;
  VkFormat vk_format;
  GLenum internal_format;
  GLenum format;  // for glGetTextureImage / glTextureSubImage2D
  GLenum type;
  std::uint32_t width;
  std::uint32_t height;
};

class gl_texture_gpu_test : public gl_gpu_test, public ::testing::WithParamInterface<texture_case> {};

// A LINEAR GL texture over a VMM chunk. GL has no query for a linear texture's row pitch; GL and
// Vulkan on one driver lay a linear image out alike, so the pitch comes from a Vulkan linear image of
// the same shape on the same chunk (Vulkan does nothing else here). CUDA writes texels at that pitch
// and GL reads them (glGetTextureImage); GL writes texels (glTextureSubImage2D) and CUDA reads them.
TEST_P(gl_texture_gpu_test, linear_texture_cuda_writes_gl_reads_and_gl_writes_cuda_reads) {
  const texture_case& c = GetParam();
  const std::size_t texels = std::size_t{c.width} * c.height;
  auto vk = sync::create_vulkan_context_for(dev_);
  MB_OK(vk);
  const vulkan::image_info info{.format = c.vk_format, .width = c.width, .height = c.height,
                                .tiling = VK_IMAGE_TILING_LINEAR};
  auto req = vulkan::shared_image::requirements(*vk, info);
  MB_OK(req);
  poisoned_chunk made;
  make_poisoned_chunk(req->size, made);
  if (HasFatalFailure()) return;
  auto& [buffer, chunk] = made;
  auto image = vulkan::shared_image::import(*vk, chunk.fd, chunk.size, info);
  MB_OK(image);
  ASSERT_TRUE(image->layout().has_value());
  const vulkan::linear_layout layout = *image->layout();
  std::cout << "[ LINEAR   ] " << c.name << " " << c.width << "x" << c.height << ": offset " << layout.offset
            << ", row pitch " << layout.row_pitch << " (tight " << c.width * 4 << "), chunk " << chunk.size
            << std::endl;

  auto texture = gl::texture::import(gl(), chunk.fd, {.size = chunk.size},
                                     {.width = c.width, .height = c.height, .internal_format = c.internal_format,
                                      .linear_tiling = true});
  if (!texture && texture.error().code() == errc::unsupported) {
    // NVIDIA's GL refuses linear tiling on imported memory: not run (optimal textures have their own test).
    GTEST_SKIP() << "not run: " << texture.error().message();
  }
  if (!texture) {
    ADD_FAILURE() << "GL refused a LINEAR-tiled " << c.name << " texture on a VMM chunk: "
                  << texture.error().message() << " (GL errors now: '" << fn().errors() << "')";
    return;
  }
  auto* base = buffer.data<unsigned char>() + layout.offset;

  // CUDA writes at the row pitch, GL reads.
  const std::uint32_t cuda_seed = fresh_seed();
  MB_CUDA_OK(gpu::fill_pattern_2d(base, layout.row_pitch, c.width, c.height, cuda_seed));
  MB_CUDA_OK(cudaDeviceSynchronize());
  const auto seen = read_texture(texture->name(), c.format, c.type, c.width, c.height);
  ASSERT_EQ(fn().errors(), "") << "glGetTextureImage";
  const auto cuda_to_gl = compare_with_pattern(seen.data(), texels, cuda_seed, 0, c.width);
  EXPECT_EQ(cuda_to_gl.bad, 0U) << "CUDA wrote " << c.name << " texels at row pitch " << layout.row_pitch
                                << ", GL read: " << describe(cuda_to_gl, texels, cuda_seed);

  // GL writes, CUDA reads the rows at the pitch.
  const std::uint32_t gl_seed = fresh_seed();
  std::vector<std::uint32_t> texels_in(texels);
  for (std::size_t i = 0; i < texels; ++i) texels_in[i] = gpu::pattern(i, gl_seed);
  write_texture(texture->name(), c.format, c.type, c.width, c.height, texels_in);
  ASSERT_EQ(fn().errors(), "") << "glTextureSubImage2D";
  MB_OK(gl().finish());
  std::vector<std::uint32_t> rows(texels, 0xDEADBEEFU);
  MB_CUDA_OK(cudaMemcpy2D(rows.data(), std::size_t{c.width} * 4, base, layout.row_pitch, std::size_t{c.width} * 4,
                          c.height, cudaMemcpyDeviceToHost));
  const auto gl_to_cuda = compare_with_pattern(rows.data(), texels, gl_seed, 0, c.width);
  EXPECT_EQ(gl_to_cuda.bad, 0U) << "GL wrote " << c.name << " texels, CUDA read them at row pitch "
                                << layout.row_pitch << ": " << describe(gl_to_cuda, texels, gl_seed);
  // The row padding (if any) is not texels: GL must not have written there.
  if (layout.row_pitch > std::size_t{c.width} * 4) {
    std::vector<unsigned char> padding(layout.row_pitch - std::size_t{c.width} * 4);
    MB_CUDA_OK(cudaMemcpy(padding.data(), base + std::size_t{c.width} * 4, padding.size(), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(std::all_of(padding.begin(), padding.end(), [](unsigned char b) { return b == 0xEE; }))
        << "row 0's padding bytes changed after GL's write: GL wrote outside the texels at Vulkan's row pitch "
        << layout.row_pitch << " (does GL use another pitch?)";
  }
}

INSTANTIATE_TEST_SUITE_P(formats, gl_texture_gpu_test,
                         ::testing::Values(texture_case{"rgba8", VK_FORMAT_R8G8B8A8_UNORM, GL_RGBA8, GL_RGBA,
                                                        GL_UNSIGNED_BYTE, 1920, 1080},
                                           texture_case{"r32ui", VK_FORMAT_R32_UINT, GL_R32UI, GL_RED_INTEGER,
                                                        GL_UNSIGNED_INT, 1000, 700}),
                         [](const ::testing::TestParamInfo<texture_case>& p) { return std::string(p.param.name); });

TEST_F(gl_gpu_test, optimal_texture_on_vmm_memory_without_vulkan_holds_gl_and_cuda_writes) {
  optimal_texture_without_vulkan();
}

// ------------------------------------------------------------------------------------------------
// Semaphore ping-pong. Round i: CUDA (after waiting for GL's round i-1) checks that the echo word
// holds i-1 and writes i into a 256 KiB slot, then signals; GL waits, copies the slot's first and last
// words into two history buffers of its own and the first word back into the echo word, then signals.
// At the end both histories must be 0..N-1 in order and CUDA must never have seen a stale echo.

/// Timeline handoff: one Vulkan-made timeline semaphore imported into CUDA and GL. CUDA signals
/// 2i+1 after round i's write, GL signals 2i+2 after round i's copies.
struct timeline_handoff {
  vulkan::timeline_semaphore vk;
  cuda::external_semaphore cuda;
  gl::semaphore gl;

  static result<timeline_handoff> make(const vulkan::device_context& context, const cuda::device& dev,
                                       const gl::context& gl_context) {
    timeline_handoff h;
    MEMBRIDGE_TRY_ASSIGN(h.vk, vulkan::timeline_semaphore::create(context, 0, true));
    MEMBRIDGE_TRY_ASSIGN(auto fd, h.vk.export_fd());
    MEMBRIDGE_TRY_ASSIGN(h.cuda, cuda::external_semaphore::import_timeline(dev, fd));
    MEMBRIDGE_TRY_ASSIGN(h.gl, gl::semaphore::import(gl_context, fd, gl::semaphore_kind::timeline));
    return h;
  }
  [[nodiscard]] result<void> cuda_wait(cudaStream_t stream, std::uint64_t round) const {
    return cuda.wait(stream, 2 * round);
  }
  [[nodiscard]] result<void> cuda_signal(cudaStream_t stream, std::uint64_t round) const {
    return cuda.signal(stream, 2 * round + 1);
  }
  [[nodiscard]] result<void> gl_wait(std::uint64_t round, const gl::semaphore_objects& objects) const {
    return gl.wait(2 * round + 1, objects);
  }
  [[nodiscard]] result<void> gl_signal(std::uint64_t round, const gl::semaphore_objects& objects) const {
    return gl.signal(2 * round + 2, objects);
  }
  /// After a failure: releases every CUDA wait of a `rounds`-round run from the host.
  [[nodiscard]] result<void> unblock(std::uint64_t rounds) const { return vk.signal(2 * rounds + 2); }
};

/// Binary handoff (when GL lacks GL_NV_timeline_semaphore): two exportable Vulkan binary semaphores,
/// `cuda_done` (CUDA signals, GL waits) and `gl_done` (GL signals, CUDA waits), each imported into CUDA
/// with the runtime (cuda::external_semaphore is timeline-only) and into GL as binary semaphores.
class binary_handoff {
 public:
  static result<binary_handoff> make(const vulkan::device_context& context, const gl::context& gl_context) {
    binary_handoff h;
    h.context_ = &context;
    for (int k = 0; k < 2; ++k) {
      VkExportSemaphoreCreateInfo export_info{VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO};
      export_info.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
      VkSemaphoreCreateInfo create{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
      create.pNext = &export_info;
      if (const VkResult rc = context.functions().vkCreateSemaphore(context.device(), &create, nullptr, &h.vk_[k]);
          rc != VK_SUCCESS)
        return error(errc::internal, "vkCreateSemaphore", "VkResult " + std::to_string(rc));
      MEMBRIDGE_TRY_ASSIGN(auto for_cuda, h.export_fd(h.vk_[k]));
      MEMBRIDGE_TRY_ASSIGN(auto for_gl, h.export_fd(h.vk_[k]));
      cudaExternalSemaphoreHandleDesc desc{};
      desc.type = cudaExternalSemaphoreHandleTypeOpaqueFd;
      desc.handle.fd = for_cuda.get();
      if (const cudaError_t rc = cudaImportExternalSemaphore(&h.cuda_[k], &desc); rc != cudaSuccess)
        return error(errc::internal, "cudaImportExternalSemaphore", cudaGetErrorName(rc));
      (void)for_cuda.release();  // CUDA owns the fd after a successful import
      MEMBRIDGE_TRY_ASSIGN(h.gl_[k], gl::semaphore::import(gl_context, for_gl, gl::semaphore_kind::binary));
    }
    return h;
  }
  binary_handoff() = default;
  binary_handoff(const binary_handoff&) = delete;
  binary_handoff& operator=(const binary_handoff&) = delete;
  binary_handoff(binary_handoff&& other) noexcept { *this = std::move(other); }
  binary_handoff& operator=(binary_handoff&& other) noexcept {
    std::swap(context_, other.context_);
    std::swap(vk_, other.vk_);
    std::swap(cuda_, other.cuda_);
    std::swap(gl_, other.gl_);
    return *this;
  }
  ~binary_handoff() {  // the stream and GL must be done with them (the test waits for both first)
    for (int k = 0; k < 2; ++k) {
      gl_[k] = gl::semaphore();
      if (cuda_[k] != nullptr) (void)cudaDestroyExternalSemaphore(cuda_[k]);
      if (vk_[k] != VK_NULL_HANDLE) context_->functions().vkDestroySemaphore(context_->device(), vk_[k], nullptr);
    }
  }

  [[nodiscard]] result<void> cuda_wait(cudaStream_t stream, std::uint64_t /*round*/) const {
    const cudaExternalSemaphoreWaitParams params{};
    if (const cudaError_t rc = cudaWaitExternalSemaphoresAsync(&cuda_[gl_done], &params, 1, stream); rc != cudaSuccess)
      return error(errc::internal, "cudaWaitExternalSemaphoresAsync", cudaGetErrorName(rc));
    return ok();
  }
  [[nodiscard]] result<void> cuda_signal(cudaStream_t stream, std::uint64_t /*round*/) const {
    const cudaExternalSemaphoreSignalParams params{};
    if (const cudaError_t rc = cudaSignalExternalSemaphoresAsync(&cuda_[cuda_done], &params, 1, stream);
        rc != cudaSuccess)
      return error(errc::internal, "cudaSignalExternalSemaphoresAsync", cudaGetErrorName(rc));
    return ok();
  }
  [[nodiscard]] result<void> gl_wait(std::uint64_t /*round*/, const gl::semaphore_objects& objects) const {
    return gl_[cuda_done].wait(0, objects);
  }
  [[nodiscard]] result<void> gl_signal(std::uint64_t /*round*/, const gl::semaphore_objects& objects) const {
    return gl_[gl_done].signal(0, objects);
  }
  /// After a failure: signals `gl_done` once from an empty Vulkan submit (the lock-step loop leaves at
  /// most one CUDA wait pending), and waits for the queue.
  [[nodiscard]] result<void> unblock(std::uint64_t /*rounds*/) const {
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.signalSemaphoreCount = 1;
    submit.pSignalSemaphores = &vk_[gl_done];
    const VkQueue queue = context_->graphics_queue().queue;
    if (const VkResult rc = context_->functions().vkQueueSubmit(queue, 1, &submit, VK_NULL_HANDLE); rc != VK_SUCCESS)
      return error(errc::internal, "vkQueueSubmit", "VkResult " + std::to_string(rc));
    if (const VkResult rc = context_->functions().vkQueueWaitIdle(queue); rc != VK_SUCCESS)
      return error(errc::internal, "vkQueueWaitIdle", "VkResult " + std::to_string(rc));
    return ok();
  }

 private:
  static constexpr int cuda_done = 0;
  static constexpr int gl_done = 1;

  [[nodiscard]] result<os::unique_fd> export_fd(VkSemaphore semaphore) const {
    VkSemaphoreGetFdInfoKHR info{VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR};
    info.semaphore = semaphore;
    info.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
    int fd = -1;
    if (const VkResult rc = context_->functions().vkGetSemaphoreFdKHR(context_->device(), &info, &fd); rc != VK_SUCCESS)
      return error(errc::internal, "vkGetSemaphoreFdKHR", "VkResult " + std::to_string(rc));
    return os::unique_fd::from_native(fd);
  }

  const vulkan::device_context* context_ = nullptr;
  VkSemaphore vk_[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
  cudaExternalSemaphore_t cuda_[2] = {nullptr, nullptr};
  gl::semaphore gl_[2];
};

class gl_ping_pong_gpu_test : public gl_gpu_test {
 protected:
  template <class Handoff>
  void ping_pong(const Handoff& handoff, std::uint64_t rounds) {
    constexpr std::size_t slot_words = 64 * 1024;  // 256 KiB
    constexpr std::size_t echo_offset = slot_words * 4;
    auto buffer = cuda::growable_buffer::create(dev_, {.size = 2_MiB, .max_size = 2_MiB});
    MB_OK(buffer);
    MB_CUDA_OK(cudaMemset(buffer->data(), 0xFF, buffer->capacity()));  // poison: no round number
    MB_CUDA_OK(cudaDeviceSynchronize());
    auto chunk = buffer->export_chunk(0);
    MB_OK(chunk);
    auto shared = gl::buffer::import(gl(), chunk->fd, {.size = chunk->size}, chunk->size);
    MB_OK(shared);
    const gl_scratch_buffer first(fn(), rounds * 4, 0xFFFFFFFFU);
    const gl_scratch_buffer last(fn(), rounds * 4, 0xFFFFFFFFU);
    ASSERT_EQ(fn().errors(), "") << "making the history buffers";
    const unsigned int names[] = {shared->name()};
    const gl::semaphore_objects objects{.buffers = names, .textures = {}};

    unsigned long long* errors = nullptr;
    MB_CUDA_OK(cudaMalloc(&errors, sizeof *errors));
    MB_CUDA_OK(cudaMemset(errors, 0, sizeof *errors));
    cudaStream_t stream = nullptr;
    MB_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    auto* slot = buffer->data<std::uint32_t>();
    const auto* echo = slot + echo_offset / 4;
    const auto shared_name = static_cast<GLuint>(shared->name());

    // One thread enqueues both sides: every CUDA wait is for a GL signal already flushed, so the
    // launch that blocks behind it (ARCHITECTURE section 7) always resolves. The first failure ends
    // the loop; then the pending CUDA wait is released from the host, so nothing hangs.
    std::string failure;
    const auto ok_or_note = [&failure](const result<void>& r, const std::string& what) {
      if (!r && failure.empty()) failure = what + ": " + r.error().message();
      return failure.empty();
    };
    const auto cuda_ok_or_note = [&failure](cudaError_t rc, const std::string& what) {
      if (rc != cudaSuccess && failure.empty()) failure = what + ": " + cudaGetErrorName(rc);
      return failure.empty();
    };
    for (std::uint64_t i = 0; i < rounds && failure.empty(); ++i) {
      const std::string round = "round " + std::to_string(i);
      if (i > 0 && !ok_or_note(handoff.cuda_wait(stream, i), round + " CUDA wait")) break;
      const long long expected_echo = i > 0 ? static_cast<long long>(i - 1) : -1;
      if (!cuda_ok_or_note(gpu::frame_step(slot, slot_words, static_cast<std::uint32_t>(i), echo, expected_echo,
                                           errors, stream),
                           round + " frame_step"))
        break;
      if (!ok_or_note(handoff.cuda_signal(stream, i), round + " CUDA signal")) break;
      if (!ok_or_note(handoff.gl_wait(i, objects), round + " GL wait")) break;
      fn().CopyNamedBufferSubData(shared_name, first.name(), 0, static_cast<GLintptr>(i * 4), 4);
      fn().CopyNamedBufferSubData(shared_name, last.name(), static_cast<GLintptr>((slot_words - 1) * 4),
                                  static_cast<GLintptr>(i * 4), 4);
      fn().CopyNamedBufferSubData(first.name(), shared_name, static_cast<GLintptr>(i * 4),
                                  static_cast<GLintptr>(echo_offset), 4);
      if (const std::string gl_errors = fn().errors(); !gl_errors.empty() && failure.empty())
        failure = round + " glCopyNamedBufferSubData: GL errors " + gl_errors;
      (void)ok_or_note(handoff.gl_signal(i, objects), round + " GL signal");
    }
    if (failure.empty()) (void)ok_or_note(handoff.cuda_wait(stream, rounds), "the final CUDA wait");  // GL's last round
    if (!failure.empty()) {
      const auto unblocked = handoff.unblock(rounds);
      EXPECT_TRUE(unblocked.has_value()) << unblocked.error().message();
    }
    MB_CUDA_OK(cudaStreamSynchronize(stream));
    ASSERT_EQ(failure, "");
    ASSERT_EQ(fn().errors(), "") << "GL errors in the loop";

    unsigned long long stale = ~0ULL;
    MB_CUDA_OK(cudaMemcpy(&stale, errors, sizeof stale, cudaMemcpyDeviceToHost));
    EXPECT_EQ(stale, 0U) << "rounds in which CUDA found an echo other than GL's copy of the previous round";
    std::uint32_t final_echo = 0;
    MB_CUDA_OK(cudaMemcpy(&final_echo, echo, sizeof final_echo, cudaMemcpyDeviceToHost));
    EXPECT_EQ(final_echo, rounds - 1);
    const auto first_words = first.read_all();
    const auto last_words = last.read_all();
    std::size_t wrong = 0;
    std::string where;
    for (std::uint64_t i = 0; i < rounds; ++i) {
      if (first_words[i] == i && last_words[i] == i) continue;
      if (wrong++ < 8)
        where += " round " + std::to_string(i) + ": first " + std::to_string(first_words[i]) + ", last " +
                 std::to_string(last_words[i]) + ";";
    }
    EXPECT_EQ(wrong, 0U) << "GL copied a slot that did not hold its round:" << where;
    MB_CUDA_OK(cudaStreamDestroy(stream));
    MB_CUDA_OK(cudaFree(errors));
  }
};

TEST_F(gl_ping_pong_gpu_test, semaphore_ping_pong_200_rounds_stays_in_order) {
  constexpr std::uint64_t rounds = 200;
  const gl::context_capabilities& caps = gl().capabilities();
  ASSERT_TRUE(caps.semaphore_import()) << caps.renderer
                                       << " cannot import semaphores (GL_EXT_semaphore + GL_EXT_semaphore_fd)";
  auto vk = sync::create_vulkan_context_for(dev_);
  MB_OK(vk);
  RecordProperty("gl_semaphore_kind", caps.timeline_semaphore ? "timeline" : "binary");
  std::cout << "[ GL SEM   ] ping-pong with " << (caps.timeline_semaphore ? "a timeline" : "two binary")
            << " semaphore" << (caps.timeline_semaphore ? "" : "s (no GL_NV_timeline_semaphore)") << std::endl;
  if (caps.timeline_semaphore) {
    auto handoff = timeline_handoff::make(*vk, dev_, gl());
    MB_OK(handoff);
    ping_pong(*handoff, rounds);
  } else {
    auto handoff = binary_handoff::make(*vk, gl());
    MB_OK(handoff);
    ping_pong(*handoff, rounds);
  }
  MB_CUDA_OK(cudaDeviceSynchronize());
  MB_OK(gl().finish());
}

// ------------------------------------------------------------------------------------------------
// Growth: a growable_buffer grows 64 MiB -> 256 MiB -> 640 MiB while GL follows (sparse: one buffer
// name for everything; per-chunk: one GL buffer per chunk). CUDA fills everything, GL reads samples
// from every chunk and across every boundary; GL writes into the newest chunk and CUDA reads it.

class gl_growth_gpu_test : public gl_gpu_test {
 protected:
  /// Hands the view's buffers between CUDA (after a host sync) and GL through a Vulkan timeline semaphore
  /// imported into GL, listing the buffers: GL_EXT_semaphore makes only the listed objects coherent, and
  /// on the H100 a second GL read after CUDA rewrote the memory returned the old bytes without it.
  struct handoff {
    vulkan::timeline_semaphore vk;
    gl::semaphore gl;
    std::uint64_t value = 0;
  };

  /// A handoff whose semaphore is made on `context` and imported into `gl_context`.
  static result<handoff> make_handoff(const vulkan::device_context& context, const gl::context& gl_context) {
    handoff h;
    MEMBRIDGE_TRY_ASSIGN(h.vk, vulkan::timeline_semaphore::create(context, 0, true));
    MEMBRIDGE_TRY_ASSIGN(auto fd, h.vk.export_fd());
    MEMBRIDGE_TRY_ASSIGN(h.gl, gl::semaphore::import(gl_context, fd, gl::semaphore_kind::timeline));
    return h;
  }

  static std::vector<unsigned int> names_of(const gl::chunked_buffer& view) {
    std::vector<unsigned int> names;
    for (const gl::buffer_segment& seg : view.segments()) names.push_back(seg.buffer);
    return names;
  }

  /// CUDA's writes (already synchronised on the host) become visible to GL commands issued after this.
  static void cuda_to_gl(handoff& h, const gl::chunked_buffer& view) {
    const auto names = names_of(view);
    ++h.value;
    MB_OK(h.vk.signal(h.value));
    MB_OK(h.gl.wait(h.value, {.buffers = names}));
  }

  /// GL's writes so far become visible to CUDA work issued after this returns.
  static void gl_to_cuda(handoff& h, const gl::chunked_buffer& view) {
    const auto names = names_of(view);
    ++h.value;
    MB_OK(h.gl.signal(h.value, {.buffers = names}));
    MB_OK(h.vk.wait(h.value, 10s));
  }

  /// Samples of every chunk (start, middle, end) and across every chunk boundary, read through the
  /// view and compared with the pattern CUDA wrote (word index = byte offset / 4).
  void expect_view_holds(const gl::chunked_buffer& view, const cuda::growable_buffer& buffer, std::size_t bytes,
                         std::uint32_t seed) {
    constexpr std::size_t sample = 256 * 1024;
    std::vector<std::size_t> starts;
    for (const cuda::chunk_info& c : buffer.chunks()) {
      if (c.offset >= bytes) break;
      const std::size_t end = std::min(c.offset + c.size, bytes);
      starts.push_back(c.offset);
      starts.push_back(c.offset + (end - c.offset) / 2 / 4 * 4);
      starts.push_back(end - sample);
      if (c.offset >= sample) starts.push_back(c.offset - sample / 2);  // across the boundary before it
    }
    std::vector<std::uint32_t> words(sample / 4);
    for (const std::size_t at : starts) {
      std::fill(words.begin(), words.end(), 0xDEADBEEFU);
      ASSERT_EQ(read_view(view, at, sample, words.data()), 0U) << "no segment covers bytes at " << at;
      const auto r = compare_with_pattern(words.data(), words.size(), seed, at / 4);
      EXPECT_EQ(r.bad, 0U) << "GL's view at byte " << at << " (" << view.segments().size()
                           << " segments): " << describe(r, words.size(), seed);
    }
  }

  void grow_twice(gl::growth_mode mode) {
    process_gl& state = shared_gl(dev_);
    ASSERT_TRUE(state.vulkan.has_value()) << "no Vulkan device for the handoff semaphore";
    ASSERT_TRUE(gl().capabilities().semaphore_import() && gl().capabilities().timeline_semaphore);
    auto made = make_handoff(*state.vulkan, gl());
    MB_OK(made);
    handoff& h = *made;
    cuda::chunk_policy policy;
    policy.min_chunk = 64_MiB;
    policy.max_chunk = 256_MiB;
    auto buffer = cuda::growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB, .chunks = policy});
    MB_OK(buffer);
    // CUDA touches the first chunk before GL imports it; the chunks growth adds are imported untouched.
    // (On the H100, GL read stale bytes from a chunk it imported before CUDA first wrote it.)
    MB_CUDA_OK(cudaMemset(buffer->data(), 0xEE, buffer->capacity()));
    MB_CUDA_OK(cudaDeviceSynchronize());
    auto view = sync::mirror_in_gl(gl(), *buffer, mode);
    MB_OK(view);
    EXPECT_EQ(view->is_sparse(), mode == gl::growth_mode::sparse);  // automatic is per-chunk for now
    std::cout << "[ GL GROW  ] " << (view->is_sparse() ? "sparse" : "per-chunk") << " view, page size "
              << view->page_size() << std::endl;
    RecordProperty("gl_view", view->is_sparse() ? "sparse" : "per_chunk");
    const unsigned int first_name = view->name();
    if (view->is_sparse()) {
      EXPECT_NE(first_name, 0U);
    }
    ASSERT_EQ(view->size(), buffer->capacity());
    ASSERT_EQ(view->chunk_count(), buffer->chunk_count());

    const std::uint32_t seed_before = fresh_seed();
    MB_CUDA_OK(gpu::fill_pattern(buffer->data(), buffer->capacity(), seed_before));
    MB_CUDA_OK(cudaDeviceSynchronize());
    cuda_to_gl(h, *view);
    ASSERT_NO_FATAL_FAILURE(expect_view_holds(*view, *buffer, buffer->capacity(), seed_before));
    const std::size_t first_capacity = buffer->capacity();

    for (const std::size_t size : {256_MiB, 640_MiB}) {
      const std::uint64_t generation = view->generation();
      MB_OK(buffer->grow(size));
      auto followed = sync::follow_growth(*view, *buffer);
      MB_OK(followed);
      EXPECT_TRUE(*followed) << "growing to " << size;
      EXPECT_NE(view->generation(), generation);
      EXPECT_EQ(view->size(), buffer->capacity());
      EXPECT_EQ(view->chunk_count(), buffer->chunk_count());
      if (view->is_sparse()) {
        EXPECT_EQ(view->name(), first_name) << "sparse growth keeps the GL buffer name";
        EXPECT_EQ(view->segments().size(), 1U);
        if (!view->segments().empty()) {
          EXPECT_EQ(view->segments()[0].buffer, view->name()) << "the sparse view's one segment is name()";
        }
      } else {
        EXPECT_EQ(view->segments().size(), view->chunk_count());
      }
      auto again = sync::follow_growth(*view, *buffer);
      MB_OK(again);
      EXPECT_FALSE(*again) << "a second follow_growth with nothing new changed the view";
    }
    ASSERT_GE(buffer->capacity(), 640_MiB);
    ASSERT_GE(buffer->chunk_count(), 3U);
    std::cout << "[ GL GROW  ] " << buffer->chunk_count() << " chunks, capacity " << buffer->capacity() << std::endl;
    // The bytes written before growth are still there, seen through the grown view.
    cuda_to_gl(h, *view);
    ASSERT_NO_FATAL_FAILURE(expect_view_holds(*view, *buffer, first_capacity, seed_before));

    // CUDA fills everything, GL reads every chunk and boundary.
    const std::uint32_t seed = fresh_seed();
    MB_CUDA_OK(gpu::fill_pattern(buffer->data(), buffer->capacity(), seed));
    MB_CUDA_OK(cudaDeviceSynchronize());
    cuda_to_gl(h, *view);
    ASSERT_NO_FATAL_FAILURE(expect_view_holds(*view, *buffer, buffer->capacity(), seed));

    // GL writes 4 MiB straddling the last chunk boundary; CUDA reads them.
    const cuda::chunk_info newest = buffer->chunk(buffer->chunk_count() - 1);
    const std::size_t at = newest.offset - 2_MiB;
    constexpr std::size_t bytes = 4_MiB;
    const std::uint32_t gl_seed = fresh_seed();
    std::vector<std::uint32_t> words(bytes / 4);
    for (std::size_t i = 0; i < words.size(); ++i) words[i] = gpu::pattern(i, gl_seed);
    ASSERT_EQ(write_view(*view, at, bytes, words.data()), 0U);
    gl_to_cuda(h, *view);
    MB_OK(gl().finish());
    EXPECT_EQ(mismatches(buffer->data<unsigned char>() + at, bytes, gl_seed), 0U)
        << "CUDA read of GL's write across the boundary at " << newest.offset;
    EXPECT_EQ(mismatches(buffer->data<unsigned char>() + at + bytes, 1_MiB, seed, (at + bytes) / 4), 0U)
        << "bytes after GL's write changed";
  }
};

TEST_F(gl_growth_gpu_test, growth_reaches_gl_in_the_default_mode) { grow_twice(gl::growth_mode::automatic); }

// follow_step with headroom: the next doubling is mapped and imported before the buffer grows into it,
// so grow() maps nothing and GL reads the new bytes at once, across every boundary; a shrink is
// followed by dropping chunks, and the front keeps its data.
TEST_F(gl_growth_gpu_test, growth_ahead_of_need_reaches_gl_at_once_and_a_shrink_follows) {
  process_gl& state = shared_gl(dev_);
  ASSERT_TRUE(state.vulkan.has_value()) << "no Vulkan device for the handoff semaphore";
  auto made = make_handoff(*state.vulkan, gl());
  MB_OK(made);
  handoff& h = *made;
  auto buffer = cuda::growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB, .chunks = {.max_chunk = 64_MiB}});
  MB_OK(buffer);
  MB_CUDA_OK(cudaMemset(buffer->data(), 0xEE, buffer->capacity()));
  MB_CUDA_OK(cudaDeviceSynchronize());
  auto view = gl::chunked_buffer::create(gl(), buffer->max_size(), gl::growth_mode::automatic);
  MB_OK(view);
  const sync::follow_options ahead{.headroom = 0, .headroom_fraction = 1.0};
  const auto settled = [&]() -> std::string {  // steps until nothing is left; "" on success
    for (int i = 0; i < 64; ++i) {
      auto a = sync::follow_step(*view, *buffer, ahead);
      if (!a) return a.error().message();
      if (*a == sync::follow_action::none) return {};
    }
    return "follow_step never settled";
  };
  ASSERT_EQ(settled(), "");
  EXPECT_EQ(view->size(), 128_MiB) << "the next doubling is imported ahead";
  EXPECT_EQ(buffer->size(), 64_MiB);
  std::uint32_t seed = 0;
  for (const std::size_t size : {128_MiB, 256_MiB, 512_MiB}) {
    const std::size_t capacity = buffer->capacity();
    MB_OK(buffer->grow(size));
    EXPECT_EQ(buffer->capacity(), capacity) << "grow to " << size << " mapped memory: the headroom was not ready";
    ASSERT_GE(view->size(), size) << "GL does not cover the new size at once";
    seed = fresh_seed();
    MB_CUDA_OK(gpu::fill_pattern(buffer->data(), size, seed));
    MB_CUDA_OK(cudaDeviceSynchronize());
    cuda_to_gl(h, *view);
    ASSERT_NO_FATAL_FAILURE(expect_view_holds(*view, *buffer, size, seed));
    ASSERT_EQ(settled(), "");
    EXPECT_EQ(view->size(), std::min<std::size_t>(2 * size, 1_GiB));
  }
  MB_OK(buffer->shrink(64_MiB));
  auto dropped = sync::follow_step(*view, *buffer, ahead);
  MB_OK(dropped);
  EXPECT_EQ(*dropped, sync::follow_action::dropped);
  EXPECT_EQ(view->chunk_count(), buffer->chunk_count());
  cuda_to_gl(h, *view);
  ASSERT_NO_FATAL_FAILURE(expect_view_holds(*view, *buffer, 64_MiB, seed));
  ASSERT_EQ(settled(), "");
  EXPECT_EQ(view->size(), 128_MiB) << "after the shrink the headroom is prepared again";
}

TEST_F(gl_growth_gpu_test, growth_reaches_gl_through_the_per_chunk_reimport_path) {
  grow_twice(gl::growth_mode::per_chunk);
}

// Where the driver advertises sparse imports but membridge blocks them (NVIDIA's GL lost the context
// at the first commit of imported memory, driver 580.159.04), sparse mode must be refused before any
// commit, and the growth through a sparse buffer is not run.
TEST_F(gl_growth_gpu_test, growth_reaches_gl_through_a_sparse_buffer) {
  const auto& caps = gl().capabilities();
  if (!caps.sparse_buffer || !caps.memory_object_sparse)
    GTEST_SKIP() << "not run: " << caps.renderer << " lacks GL_ARB_sparse_buffer + GL_NV_memory_object_sparse";
  if (!caps.sparse_growth_blocked.empty()) {
    const auto refused = gl::chunked_buffer::create(gl(), 64_MiB, gl::growth_mode::sparse);
    ASSERT_FALSE(refused) << "sparse mode was not refused on a driver where it is blocked";
    EXPECT_EQ(refused.error().code(), errc::unsupported);
    EXPECT_NE(refused.error().message().find(caps.sparse_growth_blocked), std::string::npos) << refused.error().message();
    GTEST_SKIP() << "not run: " << caps.sparse_growth_blocked;
  }
  grow_twice(gl::growth_mode::sparse);
}

// ------------------------------------------------------------------------------------------------
// GL consuming a frame_timeline. A CUDA producer thread writes frame n into slot n % 3 (a 16-byte
// stamp: frame number and GPU time, then 64 KiB - 16 of words holding n) between cuda_acquire(n) and
// cuda_release(n); GL (this thread) acquires n, copies the whole slot into history[n] and releases n.
// Every frame's copy must hold its own stamp and no other frame's words (no tearing), in time order.

TEST_F(gl_gpu_test, gl_consumes_300_frames_of_a_cuda_producer_in_order_without_tearing) {
  constexpr std::uint64_t frames = 300;
  constexpr std::uint32_t slots = 3;
  constexpr std::size_t slot_bytes = 64 * 1024;
  constexpr std::size_t header_bytes = 16;
  constexpr std::size_t data_words = (slot_bytes - header_bytes) / 4;
  const gl::context_capabilities& caps = gl().capabilities();
  ASSERT_TRUE(caps.semaphore_import() && caps.timeline_semaphore)
      << "GL as a frame consumer needs GL_EXT_semaphore_fd and GL_NV_timeline_semaphore; " << caps.renderer
      << " has semaphore_fd=" << caps.semaphore_fd << " timeline=" << caps.timeline_semaphore;

  auto vk = sync::create_vulkan_context_for(dev_);
  MB_OK(vk);
  auto buffer = cuda::growable_buffer::create(dev_, {.size = slots * slot_bytes, .max_size = 2_MiB});
  MB_OK(buffer);
  MB_CUDA_OK(cudaMemset(buffer->data(), 0xFF, buffer->capacity()));
  MB_CUDA_OK(cudaDeviceSynchronize());
  auto chunk = buffer->export_chunk(0);
  MB_OK(chunk);
  auto shared = gl::buffer::import(gl(), chunk->fd, {.size = chunk->size}, slots * slot_bytes);
  MB_OK(shared);
  const gl_scratch_buffer history(fn(), frames * slot_bytes, 0xFFFFFFFFU);
  ASSERT_EQ(fn().errors(), "");

  auto timeline = sync::frame_timeline::create(*vk, dev_, {.slots = slots});
  MB_OK(timeline);
  auto consumer = sync::gl_frame_consumer::import(gl(), *timeline);
  MB_OK(consumer);
  ASSERT_EQ(consumer->slots(), slots);

  cudaStream_t stream = nullptr;
  MB_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // The producer: its launches block behind the stream's semaphore waits (ARCHITECTURE section 7),
  // so it runs on a thread of its own. It hands off only to GL, never to another CUDA thread.
  std::string producer_error;
  std::thread producer([&] {
    if (const cudaError_t rc = cudaSetDevice(0); rc != cudaSuccess) {
      producer_error = std::string("cudaSetDevice: ") + cudaGetErrorName(rc);
      return;
    }
    for (std::uint64_t n = 0; n < frames; ++n) {
      auto* slot = buffer->data<unsigned char>() + timeline->slot(n) * slot_bytes;
      if (auto acquired = timeline->cuda_acquire(stream, n); !acquired) {
        producer_error = acquired.error().message();
        return;
      }
      cudaError_t rc = gpu::frame_step(reinterpret_cast<std::uint32_t*>(slot + header_bytes), data_words,
                                       static_cast<std::uint32_t>(n), nullptr, -1, nullptr, stream);
      if (rc == cudaSuccess) rc = gpu::stamp_frame(reinterpret_cast<std::uint64_t*>(slot), n, stream);
      if (rc != cudaSuccess) {
        producer_error = "frame " + std::to_string(n) + ": " + cudaGetErrorName(rc);
        return;
      }
      if (auto released = timeline->cuda_release(stream, n); !released) {
        producer_error = released.error().message();
        return;
      }
    }
  });

  const unsigned int names[] = {shared->name()};
  const gl::semaphore_objects objects{.buffers = names, .textures = {}};
  std::string consumer_error;
  for (std::uint64_t n = 0; n < frames && consumer_error.empty(); ++n) {
    if (auto acquired = consumer->acquire(n, objects); !acquired) {
      consumer_error = acquired.error().message();
      break;
    }
    fn().CopyNamedBufferSubData(shared->name(), history.name(), static_cast<GLintptr>(consumer->slot(n) * slot_bytes),
                                static_cast<GLintptr>(n * slot_bytes), static_cast<GLsizeiptr>(slot_bytes));
    if (const std::string gl_errors = fn().errors(); !gl_errors.empty())
      consumer_error = "frame " + std::to_string(n) + " glCopyNamedBufferSubData: GL errors " + gl_errors;
    if (auto released = consumer->release(n, objects); !released) consumer_error = released.error().message();
  }
  if (!consumer_error.empty()) {
    // The producer waits on the GPU for frames GL will never release: signal them from the host.
    (void)timeline->consumed().signal(sync::frame_timeline::consumed_value(frames));
  }
  producer.join();
  if (!producer_error.empty()) {
    // GL waits on the GPU for frames the producer will never release: signal them from the host.
    (void)timeline->produced().signal(sync::frame_timeline::produced_value(frames));
  }
  ASSERT_EQ(consumer_error, "");
  ASSERT_EQ(producer_error, "");
  MB_OK(timeline->wait_consumed(frames - 1, 30s));
  MB_CUDA_OK(cudaStreamSynchronize(stream));
  MB_CUDA_OK(cudaStreamDestroy(stream));
  ASSERT_EQ(fn().errors(), "") << "GL errors in the consumer loop";

  const std::vector<std::uint32_t> words = history.read_all();
  std::size_t wrong_stamp = 0;
  std::size_t torn = 0;
  std::size_t time_order = 0;
  std::string where;
  std::uint64_t previous_time = 0;
  for (std::uint64_t n = 0; n < frames; ++n) {
    const std::uint32_t* frame = words.data() + n * (slot_bytes / 4);
    const std::uint64_t stamp = frame[0] | (std::uint64_t{frame[1]} << 32U);
    const std::uint64_t time = frame[2] | (std::uint64_t{frame[3]} << 32U);
    const auto* data = frame + header_bytes / 4;
    const std::size_t other = static_cast<std::size_t>(
        std::count_if(data, data + data_words, [n](std::uint32_t w) { return w != static_cast<std::uint32_t>(n); }));
    if (stamp != n) ++wrong_stamp;
    if (other != 0) ++torn;
    if (n > 0 && time < previous_time) ++time_order;  // %globaltimer never runs backwards
    if ((stamp != n || other != 0) && where.size() < 600)
      where += " frame " + std::to_string(n) + ": stamp " + std::to_string(stamp) + ", " + std::to_string(other) +
               " words not " + std::to_string(n) + " (first " + hex(data[0]) + ");";
    previous_time = time;
  }
  EXPECT_EQ(wrong_stamp, 0U) << "GL read a slot stamped with another frame:" << where;
  EXPECT_EQ(torn, 0U) << "GL read slots holding words of another frame (torn):" << where;
  EXPECT_EQ(time_order, 0U) << "frames GL read were stamped out of GPU-time order";
}

// ------------------------------------------------------------------------------------------------
// Warm-up: makes the process's GL context and runs one of each import, so the driver's long-lived fds
// are open before the fd-leak listener's first snapshot.

void warm_up_gl() {
  auto dev = open_gpu();
  if (!dev) return;
  process_gl& state = shared_gl(*dev);
  if (!state.made->has_value()) return;  // the tests fail with the reason
  const gl::headless_context& context = state.made->value();
  if (!context.make_current()) return;
  {
    auto buffer = cuda::growable_buffer::create(*dev, {.size = 2_MiB, .max_size = 2_MiB});
    auto vk = sync::create_vulkan_context_for(*dev);
    if (buffer) {
      if (auto chunk = buffer->export_chunk(0)) {
        auto view = gl::buffer::import(context.gl(), chunk->fd, {.size = chunk->size}, chunk->size);
        std::uint32_t word = 0;
        if (view) (void)view->read(0, &word, sizeof word);
        [[maybe_unused]] auto texture = gl::texture::import(context.gl(), chunk->fd, {.size = chunk->size},
                                           {.width = 64, .height = 64, .internal_format = GL_RGBA8});
      }
    }
    if (vk) state.vulkan.emplace(std::move(*vk));
    if (state.vulkan && context.gl().capabilities().semaphore_import() && context.gl().capabilities().timeline_semaphore) {
      if (auto sem = vulkan::timeline_semaphore::create(*state.vulkan, 0, true)) {
        if (auto fd = sem->export_fd()) {
          if (auto imported = gl::semaphore::import(context.gl(), *fd, gl::semaphore_kind::timeline)) {
            (void)imported->signal(1);
            (void)sem->wait(1, 5s);
          }
        }
      }
    }
    (void)context.gl().finish();
  }
  (void)state.fn.errors();
  (void)context.release_current();
}
const warm_up gl_warm_up(&warm_up_gl);

}  // namespace
}  // namespace membridge::testing
