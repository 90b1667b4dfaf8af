// gpu tier, Vulkan: CUDA and Vulkan on one H100 sharing VMM memory (buffers, linear and optimal
// images, optimal images seen from CUDA as arrays, growth across a chunk boundary) and a
// timeline-ordered frame loop; data checked every time.
#include "vulkan_gpu_fixture.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/external_memory.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/same_gpu.hpp>
#include <membridge/sync/vulkan_mirror.hpp>
#include <membridge/vulkan/shared_image.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace membridge::testing {
namespace {

using namespace membridge::literals;
using namespace std::chrono_literals;

class vulkan_gpu_test : public vulkan_gpu_fixture {
 protected:
  /// An image imported into Vulkan over a poisoned one-chunk buffer sized by the image's requirements.
  struct image_on_chunk {
    vulkan::image_memory_requirements req;
    poisoned_chunk memory;
    vulkan::shared_image image;
  };

  /// Makes an image_on_chunk of `info` in `out`; fails the test (fatally) when a step fails. The
  /// caller returns when HasFatalFailure().
  void make_image_on_chunk(const vulkan::image_info& info, image_on_chunk& out) {
    auto req = vulkan::shared_image::requirements(vk.context, info);
    MB_OK(req);
    out.req = *req;
    ASSERT_NO_FATAL_FAILURE(make_poisoned_chunk(out.req.size, out.memory));
    auto image = vulkan::shared_image::import(vk.context, out.memory.chunk.fd, out.memory.chunk.size, info);
    MB_OK(image);
    out.image = std::move(image).value();
  }

  /// Vulkan fills `bytes` of `buffer` at `offset` with `value`; CUDA must then read `value` in every word
  /// of the same bytes at `cuda_bytes` + offset.
  void expect_vulkan_fill_reaches_cuda(VkBuffer buffer, unsigned char* cuda_bytes, std::size_t offset,
                                       std::size_t bytes, std::uint32_t value) {
    ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
      fn().vkCmdFillBuffer(cb, buffer, offset, bytes, value);
      full_barrier(vk.context, cb);
    }));
    unsigned long long bad = ~0ULL;
    MB_CUDA_OK(gpu::count_not_equal(cuda_bytes + offset, bytes, value, bad));
    EXPECT_EQ(bad, 0U);
  }

  // A barrier on the colour subresource of `image` (see vulkan_test.hpp).
  void image_barrier(VkCommandBuffer cb, VkImage image, VkImageLayout from, VkImageLayout to) const {
    testing::image_barrier(vk.context, cb, image, from, to);
  }

  // Says where the wrong texels of a width x height image (row-major, 32-bit texels that should hold
  // gpu::pattern(y * width + x, seed)) came from: when two layouts disagree, the pattern's texels are
  // all there but at other places (a different tiling); when the memory is not shared they are missing.
  static std::string explain_mismatches(const std::uint32_t* got, std::uint32_t width, std::uint32_t height,
                                        std::uint32_t seed) {
    const std::size_t texels = std::size_t{width} * height;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> where(texels);  // pattern word -> texel index
    for (std::size_t i = 0; i < texels; ++i) where[i] = {gpu::pattern(i, seed), static_cast<std::uint32_t>(i)};
    std::sort(where.begin(), where.end());
    std::size_t misplaced = 0;
    std::size_t foreign = 0;
    std::string examples;
    int shown = 0;
    for (std::size_t i = 0; i < texels; ++i) {
      if (got[i] == gpu::pattern(i, seed)) continue;
      const auto found = std::lower_bound(where.begin(), where.end(), std::make_pair(got[i], std::uint32_t{0}));
      const bool from_pattern = found != where.end() && found->first == got[i];
      from_pattern ? ++misplaced : ++foreign;
      if (shown++ < 8) {
        char line[128];
        if (from_pattern) {
          std::snprintf(line, sizeof line, "\n    (%zu, %zu) holds texel (%u, %u)", i % width, i / width,
                        found->second % width, found->second / width);
        } else {
          std::snprintf(line, sizeof line, "\n    (%zu, %zu) holds 0x%08x, no texel of the pattern", i % width,
                        i / width, got[i]);
        }
        examples += line;
      }
    }
    return std::to_string(misplaced) + " wrong texels hold a pattern texel from elsewhere (a different tiling), " +
           std::to_string(foreign) + " hold bytes nobody wrote there; the first:" + examples;
  }

  // The experiment behind cuda::external_memory::map_array(): a 2048x2048 RGBA8 OPTIMAL image on a VMM
  // chunk, and the same chunk imported into CUDA as external memory and mapped as a CUDA array. Do CUDA
  // (through a surface object) and Vulkan (through the image) keep texel (x, y) at the same bytes?
  // Both directions are checked on the data and printed; if the layouts differ, the test fails.
  void optimal_image_through_a_cuda_array(VkImageUsageFlags usage, bool color_attachment) {
    constexpr std::uint32_t width = 2048;
    constexpr std::uint32_t height = 2048;
    constexpr std::size_t texels = std::size_t{width} * height;
    const vulkan::image_info info{.format = VK_FORMAT_R8G8B8A8_UNORM, .width = width, .height = height, .usage = usage};
    image_on_chunk made;
    make_image_on_chunk(info, made);
    if (HasFatalFailure()) return;
    auto& [req, one_chunk, image] = made;
    auto& [buffer, chunk] = one_chunk;
    // The same chunk's fd into CUDA; a driver that refuses a VMM export here fails the test with its code.
    auto memory = cuda::external_memory::import(dev_, chunk.fd, chunk.size, req.dedicated_required);
    MB_OK(memory);
    cuda::array_format format{CU_AD_FORMAT_UNSIGNED_INT8, 4, width, height};
    format.color_attachment = color_attachment;
    auto array = memory->map_array(format);
    MB_OK(array);
    auto surface = array->make_surface();
    MB_OK(surface);
    char setup_text[256];
    std::snprintf(setup_text, sizeof setup_text,
                  "image usage 0x%x, array flags SURFACE_LDST%s, image needs %zu bytes of a %zu-byte chunk%s",
                  image.info().usage, color_attachment ? "|COLOR_ATTACHMENT" : "", req.size, chunk.size,
                  req.dedicated_required ? ", dedicated import" : "");
    const std::string setup = setup_text;
    auto staging = staging_buffer::create(vk.context, texels * 4);
    MB_OK(staging);
    const VkBufferImageCopy region = whole_image(width, height);

    // 1. CUDA writes through the surface, Vulkan copies the image out. A transition from UNDEFINED may
    // discard contents, so it runs once, before CUDA writes; the later ones keep them.
    ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
      image_barrier(cb, image.get(), VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL);
    }));
    constexpr std::uint32_t cuda_seed = 71;
    MB_CUDA_OK(gpu::fill_surface_pattern(surface->native(), width, height, cuda_seed));
    MB_CUDA_OK(cudaDeviceSynchronize());
    unsigned long long changed = ~0ULL;
    MB_CUDA_OK(gpu::count_not_equal(buffer.data(), buffer.capacity(), 0xEEEEEEEEU, changed));
    EXPECT_GE(changed, texels * 99 / 100) << "the CUDA array's writes did not land in the VMM chunk (" << setup << ")";
    ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
      image_barrier(cb, image.get(), VK_IMAGE_LAYOUT_GENERAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
      fn().vkCmdCopyImageToBuffer(cb, image.get(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, staging->get(), 1, &region);
      full_barrier(vk.context, cb);
    }));
    const std::size_t cuda_to_vulkan = host_mismatches(staging->words(), texels, cuda_seed);
    const std::string cuda_to_vulkan_detail =
        cuda_to_vulkan == 0 ? std::string() : "; " + explain_mismatches(staging->words(), width, height, cuda_seed);
    std::printf("[ LAYOUT   ] %s\n"
                "[ LAYOUT   ] CUDA surface write -> Vulkan image read: %s (%zu of %zu texels differ)%s\n",
                setup.c_str(), cuda_to_vulkan == 0 ? "MATCH" : "DIFFER", cuda_to_vulkan, texels,
                cuda_to_vulkan_detail.c_str());

    // 2. Vulkan copies a new pattern into the image, CUDA reads it through the surface.
    constexpr std::uint32_t vulkan_seed = 72;
    for (std::size_t i = 0; i < texels; ++i) staging->words()[i] = gpu::pattern(i, vulkan_seed);
    ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
      image_barrier(cb, image.get(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);
      fn().vkCmdCopyBufferToImage(cb, staging->get(), image.get(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
      image_barrier(cb, image.get(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_GENERAL);
      full_barrier(vk.context, cb);
    }));
    unsigned long long vulkan_to_cuda = ~0ULL;
    MB_CUDA_OK(gpu::count_surface_mismatches(surface->native(), width, height, vulkan_seed, vulkan_to_cuda));
    std::string vulkan_to_cuda_detail;
    if (vulkan_to_cuda != 0) {
      std::vector<std::uint32_t> seen(texels);
      MB_CUDA_OK(cudaMemcpy2DFromArray(seen.data(), std::size_t{width} * 4,
                                       reinterpret_cast<cudaArray_const_t>(array->level0()), 0, 0,
                                       std::size_t{width} * 4, height, cudaMemcpyDeviceToHost));
      vulkan_to_cuda_detail = "; " + explain_mismatches(seen.data(), width, height, vulkan_seed);
    }
    std::printf("[ LAYOUT   ] Vulkan image write -> CUDA surface read: %s (%llu of %zu texels differ)%s\n",
                vulkan_to_cuda == 0 ? "MATCH" : "DIFFER", vulkan_to_cuda, texels, vulkan_to_cuda_detail.c_str());
    std::fflush(stdout);
    RecordProperty("cuda_to_vulkan_mismatches", static_cast<int>(cuda_to_vulkan));
    RecordProperty("vulkan_to_cuda_mismatches", static_cast<int>(vulkan_to_cuda));

    EXPECT_EQ(cuda_to_vulkan, 0U) << "CUDA's array and Vulkan's optimal image lay texels out differently ("
                                  << setup << ")" << cuda_to_vulkan_detail;
    EXPECT_EQ(vulkan_to_cuda, 0U) << "Vulkan's optimal image and CUDA's array lay texels out differently ("
                                  << setup << ")" << vulkan_to_cuda_detail;
  }
};

TEST_F(vulkan_gpu_test, the_vulkan_context_is_the_cuda_gpu) {
  MB_OK(sync::require_same_gpu(dev_, vk.context));
  EXPECT_TRUE(vk.context.capabilities().external_semaphore_fd);
  EXPECT_TRUE(vk.context.capabilities().timeline_semaphore);
  EXPECT_TRUE(vk.context.capabilities().sparse_binding);
}

TEST_F(vulkan_gpu_test, buffer_cuda_writes_vulkan_reads_and_vulkan_writes_cuda_reads) {
  constexpr std::size_t size = 256_MiB;
  auto buffer = cuda::growable_buffer::create(dev_, {.size = size, .max_size = 1_GiB});
  MB_OK(buffer);
  auto view = sync::mirror_in_vulkan(vk.context, *buffer);
  MB_OK(view);
  ASSERT_EQ(view->size(), buffer->capacity());
  MB_CUDA_OK(gpu::fill_pattern(buffer->data(), size, 21));
  MB_CUDA_OK(cudaDeviceSynchronize());
  auto staging = staging_buffer::create(vk.context, size);
  MB_OK(staging);
  ASSERT_NO_FATAL_FAILURE(read_back(view->segments()[0].buffer, 0, size, *staging));
  EXPECT_EQ(host_mismatches(staging->words(), size / 4, 21), 0U);

  ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
    fn().vkCmdFillBuffer(cb, view->segments()[0].buffer, 0, size, 0x600DF00DU);
    full_barrier(vk.context, cb);
  }));
  unsigned long long bad = ~0ULL;
  MB_CUDA_OK(gpu::count_not_equal(buffer->data(), size, 0x600DF00DU, bad));
  EXPECT_EQ(bad, 0U);
}

TEST_F(vulkan_gpu_test, linear_image_cuda_writes_at_the_row_pitch_and_reads_vulkans_clear) {
  const vulkan::image_info info{.format = VK_FORMAT_R8G8B8A8_UNORM, .width = 1920, .height = 1080,
                                .tiling = VK_IMAGE_TILING_LINEAR};
  auto req = vulkan::shared_image::requirements(vk.context, info);
  MB_OK(req);
  auto buffer = cuda::growable_buffer::create(dev_, {.size = req->size, .max_size = req->size});
  MB_OK(buffer);
  auto chunk = buffer->export_chunk(0);
  MB_OK(chunk);
  auto image = vulkan::shared_image::import(vk.context, chunk->fd, chunk->size, info);
  MB_OK(image);
  const auto layout = image->layout().value();
  auto* base = buffer->data<unsigned char>() + layout.offset;
  MB_CUDA_OK(gpu::fill_pattern_2d(base, layout.row_pitch, 1920, 1080, 33));
  MB_CUDA_OK(cudaDeviceSynchronize());

  auto staging = staging_buffer::create(vk.context, std::size_t{1920} * 1080 * 4);
  MB_OK(staging);
  const auto barrier_to = [&](VkCommandBuffer cb, VkImageLayout from, VkImageLayout to) {
    image_barrier(cb, image->get(), from, to);
  };
  const VkBufferImageCopy region = whole_image(1920, 1080);
  ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
    barrier_to(cb, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL);  // keeps a linear image's bytes
    fn().vkCmdCopyImageToBuffer(cb, image->get(), VK_IMAGE_LAYOUT_GENERAL, staging->get(), 1, &region);
    full_barrier(vk.context, cb);
  }));
  EXPECT_EQ(host_mismatches(staging->words(), std::size_t{1920} * 1080, 33), 0U);

  VkClearColorValue colour{};
  colour.float32[0] = 1.0F;  // RGBA8 (255, 0, 0, 255) = 0xFF0000FF little-endian
  colour.float32[3] = 1.0F;
  ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
    const VkImageSubresourceRange range{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    fn().vkCmdClearColorImage(cb, image->get(), VK_IMAGE_LAYOUT_GENERAL, &colour, 1, &range);
    full_barrier(vk.context, cb);
  }));
  unsigned long long bad = ~0ULL;
  MB_CUDA_OK(gpu::count_not_equal_2d(base, layout.row_pitch, 1920, 1080, 0xFF0000FFU, bad));
  EXPECT_EQ(bad, 0U);
}

TEST_F(vulkan_gpu_test, optimal_image_on_vmm_memory_holds_what_vulkan_writes) {
  const vulkan::image_info info{.format = VK_FORMAT_R8G8B8A8_UNORM, .width = 2048, .height = 2048};
  image_on_chunk made;
  make_image_on_chunk(info, made);
  if (HasFatalFailure()) return;
  auto& [req, one_chunk, image] = made;
  auto& [buffer, chunk] = one_chunk;
  const std::size_t texels = std::size_t{2048} * 2048;
  auto staging = staging_buffer::create(vk.context, texels * 4);
  MB_OK(staging);
  for (std::size_t i = 0; i < texels; ++i) staging->words()[i] = gpu::pattern(i, 44);
  const VkBufferImageCopy region = whole_image(2048, 2048);
  const auto barrier_to = [&](VkCommandBuffer cb, VkImageLayout from, VkImageLayout to) {
    image_barrier(cb, image.get(), from, to);
  };
  ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
    barrier_to(cb, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);
    fn().vkCmdCopyBufferToImage(cb, staging->get(), image.get(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
    barrier_to(cb, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
  }));
  for (std::size_t i = 0; i < texels; ++i) staging->words()[i] = 0;
  // The bytes are in VMM memory: CUDA sees them change from the poison (layout is the driver's).
  unsigned long long poisoned = ~0ULL;
  MB_CUDA_OK(gpu::count_not_equal(buffer.data(), req.size, 0xEEEEEEEEU, poisoned));
  EXPECT_GT(poisoned, 0U);
  ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
    fn().vkCmdCopyImageToBuffer(cb, image.get(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, staging->get(), 1, &region);
    full_barrier(vk.context, cb);
  }));
  EXPECT_EQ(host_mismatches(staging->words(), texels, 44), 0U);
}

// The optimal image as the other tests make it (default usage, colour attachment included), mapped
// with CUDA_ARRAY3D_COLOR_ATTACHMENT as CUDA's documentation asks for images a graphics API may render to.
TEST_F(vulkan_gpu_test, optimal_image_cuda_array_and_vulkan_agree_on_the_layout) {
  optimal_image_through_a_cuda_array(vulkan::default_optimal_image_usage, true);
}

// The same without colour attachment usage on either side (a storage/sampled image, an array mapped
// with surface load/store only): map_array({CU_AD_FORMAT_UNSIGNED_INT8, 4, 2048, 2048}) as is.
TEST_F(vulkan_gpu_test, optimal_storage_image_cuda_array_and_vulkan_agree_on_the_layout) {
  optimal_image_through_a_cuda_array(VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                                         VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_STORAGE_BIT,
                                     false);
}

// CUDA frame n writes n into slot n % slots; Vulkan frame n copies the slot's first word into log[n]
// and into the echo word; with one slot CUDA frame n also checks the echo holds n - 1.

class timeline_gpu_test : public vulkan_gpu_test {
 protected:
  void ping_pong(std::uint32_t slots, std::uint64_t frames) {
    constexpr std::size_t slot_words = 256 * 1024;  // 1 MiB per slot
    const std::size_t echo_offset = slots * slot_words * 4;
    auto buffer = cuda::growable_buffer::create(dev_, {.size = echo_offset + 2_MiB, .max_size = 64_MiB});
    MB_OK(buffer);
    MB_CUDA_OK(cudaMemset(buffer->data(), 0xFF, buffer->size()));
    MB_CUDA_OK(cudaDeviceSynchronize());
    auto view = sync::mirror_in_vulkan(vk.context, *buffer);
    MB_OK(view);
    const VkBuffer shared = view->segments()[0].buffer;
    auto timeline = sync::frame_timeline::create(vk.context, dev_, {.slots = slots});
    MB_OK(timeline);
    auto log = staging_buffer::create(vk.context, frames * 4);
    MB_OK(log);
    unsigned long long* errors = nullptr;
    MB_CUDA_OK(cudaMalloc(&errors, sizeof *errors));
    MB_CUDA_OK(cudaMemset(errors, 0, sizeof *errors));
    cudaStream_t stream = nullptr;
    MB_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    auto commands = record_command_buffers(vk.context, frames, [&](VkCommandBuffer cb, std::uint64_t n) {
      full_barrier(vk.context, cb);
      const std::size_t slot_offset = timeline->slot(n) * slot_words * 4;
      const VkBufferCopy to_log{slot_offset, n * 4, 4};
      fn().vkCmdCopyBuffer(cb, shared, log->get(), 1, &to_log);
      full_barrier(vk.context, cb);
      // The echo goes through the log: a copy within the sparse buffer is reported as overlapping by
      // the validation layer (1.3.239) even for disjoint regions.
      const VkBufferCopy to_echo{n * 4, echo_offset, 4};
      fn().vkCmdCopyBuffer(cb, log->get(), shared, 1, &to_echo);
      full_barrier(vk.context, cb);
    });
    ASSERT_TRUE(commands) << commands.error().message();
    const VkCommandPool pool = commands->pool;
    const std::vector<VkCommandBuffer>& cbs = commands->buffers;

    auto* base = buffer->data<std::uint32_t>();
    const auto* echo = base + echo_offset / 4;
    for (std::uint64_t n = 0; n < frames; ++n) {
      MB_OK(timeline->cuda_acquire(stream, n));
      const long long expected = (slots == 1 && n > 0) ? static_cast<long long>(n - 1) : -1;
      MB_CUDA_OK(gpu::frame_step(base + timeline->slot(n) * slot_words, slot_words, static_cast<std::uint32_t>(n),
                                 echo, expected, errors, stream));
      MB_OK(timeline->cuda_release(stream, n));
      MB_OK(timeline->submit(vk.context.graphics_queue().queue, {&cbs[n], 1}, n, VK_PIPELINE_STAGE_TRANSFER_BIT));
    }
    MB_OK(timeline->wait_consumed(frames - 1, 30s));
    MB_CUDA_OK(cudaStreamSynchronize(stream));
    unsigned long long cuda_errors = ~0ULL;
    MB_CUDA_OK(cudaMemcpy(&cuda_errors, errors, sizeof cuda_errors, cudaMemcpyDeviceToHost));
    EXPECT_EQ(cuda_errors, 0U) << "CUDA saw Vulkan's echo out of order";
    std::size_t wrong = 0;
    for (std::uint64_t n = 0; n < frames; ++n)
      if (log->words()[n] != n) ++wrong;
    EXPECT_EQ(wrong, 0U) << "Vulkan read a slot that did not hold its frame";
    // The consumed value says the last batch completed, but validation 1.3.239 retires command
    // buffers only on fences or idle waits: wait for the queue before freeing the pool.
    ASSERT_EQ(fn().vkQueueWaitIdle(vk.context.graphics_queue().queue), VK_SUCCESS);
    fn().vkDestroyCommandPool(vk.context.device(), pool, nullptr);
    MB_CUDA_OK(cudaStreamDestroy(stream));
    MB_CUDA_OK(cudaFree(errors));
  }
};

TEST_F(timeline_gpu_test, one_slot_ping_pong_1000_frames_stays_in_order) { ping_pong(1, 1000); }
TEST_F(timeline_gpu_test, three_slot_pipeline_1000_frames_stays_in_order) { ping_pong(3, 1000); }

TEST_F(vulkan_gpu_test, growth_binds_the_new_chunk_and_vulkan_reads_across_the_boundary) {
  cuda::chunk_policy policy;
  policy.min_chunk = 64_MiB;
  policy.max_chunk = 64_MiB;
  auto buffer = cuda::growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB, .chunks = policy});
  MB_OK(buffer);
  auto view = sync::mirror_in_vulkan(vk.context, *buffer);
  MB_OK(view);
  ASSERT_TRUE(view->is_sparse());
  const VkBuffer before = view->buffer();
  MB_CUDA_OK(gpu::fill_pattern(buffer->data(), 64_MiB, 5));
  MB_CUDA_OK(cudaDeviceSynchronize());

  // Vulkan reads the old chunk on the graphics queue while another thread grows and binds the new one.
  auto staging = staging_buffer::create(vk.context, 64_MiB);
  MB_OK(staging);
  result<bool> followed = false;
  std::thread grower([&] {
    if (auto grown = buffer->grow(192_MiB); !grown) {
      followed = std::move(grown).error();
      return;
    }
    followed = sync::follow_growth(*view, *buffer);
  });
  ASSERT_NO_FATAL_FAILURE(read_back(before, 0, 64_MiB, *staging));
  grower.join();
  MB_OK(followed);
  EXPECT_TRUE(*followed);
  EXPECT_EQ(host_mismatches(staging->words(), 64_MiB / 4, 5), 0U);
  EXPECT_EQ(view->buffer(), before) << "sparse growth keeps the VkBuffer";
  EXPECT_EQ(view->size(), buffer->capacity());
  EXPECT_EQ(view->chunk_count(), 3U);

  MB_CUDA_OK(gpu::fill_pattern(buffer->data(), 192_MiB, 6));
  MB_CUDA_OK(cudaDeviceSynchronize());
  const std::size_t start = 64_MiB - 1_MiB;  // 2 MiB across each of the old/new boundaries
  for (const std::size_t boundary_start : {start, start + 64_MiB}) {
    ASSERT_NO_FATAL_FAILURE(read_back(view->buffer(), boundary_start, 2_MiB, *staging));
    EXPECT_EQ(host_mismatches(staging->words(), 2_MiB / 4, 6, boundary_start / 4), 0U) << boundary_start;
  }
  // Vulkan writes across the boundary; CUDA reads it.
  ASSERT_NO_FATAL_FAILURE(expect_vulkan_fill_reaches_cuda(view->buffer(), buffer->data<unsigned char>(), start, 2_MiB,
                                                          0xB0B0B0B0U));

  // Shrinking drops the chunks from the view too.
  MB_OK(buffer->shrink(64_MiB));
  auto shrunk = sync::follow_growth(*view, *buffer);
  MB_OK(shrunk);
  EXPECT_EQ(view->chunk_count(), buffer->chunk_count());
}

// follow_step with headroom on another thread while Vulkan reads: the next doubling is mapped and bound
// before the buffer grows into it, so grow() maps nothing and Vulkan reads across every boundary at
// once; Vulkan's writes across a boundary reach CUDA; a shrink is followed by dropping chunks.
TEST_F(vulkan_gpu_test, growth_ahead_of_need_binds_before_the_grow_and_vulkan_reads_every_boundary) {
  auto buffer = cuda::growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB, .chunks = {.max_chunk = 64_MiB}});
  MB_OK(buffer);
  vulkan::chunked_buffer_info info;
  info.reserved_size = buffer->max_size();
  auto view = vulkan::chunked_buffer::create(vk.context, info);
  MB_OK(view);
  ASSERT_TRUE(view->is_sparse());
  const sync::follow_options ahead{.headroom = 0, .headroom_fraction = 1.0};
  const auto settle = [&]() -> result<int> {
    for (int steps = 0; steps < 64; ++steps) {
      MEMBRIDGE_TRY_ASSIGN(const auto a, sync::follow_step(*view, *buffer, ahead));
      if (a == sync::follow_action::none) return steps;
    }
    return error(errc::internal, "settle", "follow_step never settled");
  };
  auto first = settle();
  MB_OK(first);
  EXPECT_EQ(view->size(), 128_MiB);
  const std::uint32_t seed0 = 31;
  MB_CUDA_OK(gpu::fill_pattern(buffer->data(), 64_MiB, seed0));
  MB_CUDA_OK(cudaDeviceSynchronize());
  auto staging = staging_buffer::create(vk.context, 64_MiB);
  MB_OK(staging);
  std::uint32_t seed = seed0;
  for (const std::size_t size : {128_MiB, 256_MiB, 512_MiB}) {
    const std::size_t capacity = buffer->capacity();
    MB_OK(buffer->grow(size));
    EXPECT_EQ(buffer->capacity(), capacity) << "grow to " << size << " mapped memory: the headroom was not ready";
    ASSERT_GE(view->size(), size);
    seed += 1;
    MB_CUDA_OK(gpu::fill_pattern(buffer->data(), size, seed));
    MB_CUDA_OK(cudaDeviceSynchronize());
    // The next headroom is prepared on another thread while Vulkan reads the front on the graphics queue.
    result<int> stepped = 0;
    std::thread follower([&] { stepped = settle(); });
    ASSERT_NO_FATAL_FAILURE(read_back(view->buffer(), 0, 64_MiB, *staging));
    follower.join();
    MB_OK(stepped);
    EXPECT_EQ(host_mismatches(staging->words(), 64_MiB / 4, seed), 0U) << size;
    for (std::size_t boundary = 64_MiB; boundary < size; boundary += 64_MiB) {
      const std::size_t at = boundary - 1_MiB;
      ASSERT_NO_FATAL_FAILURE(read_back(view->buffer(), at, 2_MiB, *staging));
      EXPECT_EQ(host_mismatches(staging->words(), 2_MiB / 4, seed, at / 4), 0U) << "boundary " << boundary;
    }
    EXPECT_EQ(view->size(), std::min<std::size_t>(2 * size, 1_GiB));
  }
  const std::size_t at = 320_MiB - 1_MiB;
  ASSERT_NO_FATAL_FAILURE(expect_vulkan_fill_reaches_cuda(view->buffer(), buffer->data<unsigned char>(), at, 2_MiB,
                                                          0xC0DEC0DEU));
  MB_OK(buffer->shrink(64_MiB));
  auto dropped = sync::follow_step(*view, *buffer, ahead);
  MB_OK(dropped);
  EXPECT_EQ(*dropped, sync::follow_action::dropped);
  EXPECT_EQ(view->chunk_count(), buffer->chunk_count());
  ASSERT_NO_FATAL_FAILURE(read_back(view->buffer(), 0, 64_MiB, *staging));
  EXPECT_EQ(host_mismatches(staging->words(), 64_MiB / 4, seed), 0U) << "the front after the shrink";
}

void warm_up_vulkan() {
  auto dev = open_gpu();
  if (!dev) return;
  vulkan::create_options options;
  options.uuid = dev->uuid();
  auto made = make_validated_context(options);  // opens the driver's long-lived fds before the leak checks
  if (!made) return;
  auto sem = vulkan::timeline_semaphore::create(made->context, 0, true);
  if (!sem) return;
  if (auto fd = sem->export_fd()) (void)cuda::external_semaphore::import_timeline(*dev, *fd);
  // External memory, an array over it and a surface object: whatever the driver opens for them for good.
  auto buffer = cuda::growable_buffer::create(*dev, {.size = 2_MiB, .max_size = 2_MiB});
  if (!buffer) return;
  auto chunk = buffer->export_chunk(0);
  if (!chunk) return;
  auto memory = cuda::external_memory::import(*dev, chunk->fd, chunk->size);
  if (!memory) return;
  auto array = memory->map_array({CU_AD_FORMAT_UNSIGNED_INT8, 4, 256, 256});
  if (!array) return;
  (void)array->make_surface();
}
const warm_up vulkan_warm_up(&warm_up_vulkan);

}  // namespace
}  // namespace membridge::testing
