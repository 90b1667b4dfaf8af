// vulkan tier: memory one VkDevice exports (opaque fd) imported by another into buffers and images,
// data checked both ways.
#include "vulkan_test.hpp"

#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/shared_buffer.hpp>
#include <membridge/vulkan/shared_image.hpp>

#include <fcntl.h>

#include <cstring>
#include <limits>

namespace membridge::testing {
namespace {

constexpr std::size_t no_mismatch = std::numeric_limits<std::size_t>::max();

class memory_import_test : public vulkan_test {
 protected:
  void SetUp() override {
    vulkan_test::SetUp();
    auto made = make_validated_context();  // the "other API": a second device exports the memory
    ASSERT_TRUE(made) << made.error().message();
    exporter = std::move(made).value();
  }
  void TearDown() override {
    exporter.context = vulkan::device_context();
    for (const auto& m : *exporter.messages) ADD_FAILURE() << "exporter: " << m;
    vulkan_test::TearDown();
  }
  /// An image imported into the test's device over memory the exporter allocated at the image's
  /// required size (`size`), with that memory and its fd.
  struct image_over_exported_memory {
    std::size_t size = 0;
    exported_memory_fd exported;
    vulkan::shared_image image;
  };
  result<image_over_exported_memory> import_image(const vulkan::image_info& info) {
    MEMBRIDGE_TRY_ASSIGN(const auto req, vulkan::shared_image::requirements(vk.context, info));
    MEMBRIDGE_TRY_ASSIGN(auto exported, allocate_and_export(exporter.context, req.size));
    MEMBRIDGE_TRY_ASSIGN(auto image, vulkan::shared_image::import(vk.context, exported.fd, req.size, info));
    return image_over_exported_memory{req.size, std::move(exported), std::move(image)};
  }

  validated_context exporter;
};

TEST_F(memory_import_test, buffer_sees_the_exporters_bytes_and_writes_back) {
  constexpr std::size_t size = 4u << 20;
  auto exported = allocate_and_export(exporter.context, size);
  ASSERT_TRUE(exported) << exported.error().message();
  auto& [memory, fd] = *exported;
  for (std::size_t i = 0; i < size / 4; ++i) memory.words()[i] = pattern(7, i);

  auto buffer = vulkan::shared_buffer::import(vk.context, fd, {.allocation_size = size});
  ASSERT_TRUE(buffer) << buffer.error().message();
  EXPECT_EQ(buffer->size(), size);
  EXPECT_GE(::fcntl(fd.get(), F_GETFD), 0) << "the caller's fd must stay open";
  const auto& mem = vk.context.memory_properties();
  EXPECT_NE(mem.memoryTypes[buffer->memory().memory_type()].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0U);

  auto staging = staging_buffer::create(vk.context, size);
  ASSERT_TRUE(staging);
  const auto& fn = vk.context.functions();
  ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
    const VkBufferCopy region{0, 0, size};
    fn.vkCmdCopyBuffer(cb, buffer->get(), staging->get(), 1, &region);
    full_barrier(vk.context, cb);
  }));
  EXPECT_EQ(first_mismatch(staging->words(), size / 4, 7), no_mismatch);

  // The importer writes; the exporter reads the same bytes.
  ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
    fn.vkCmdFillBuffer(cb, buffer->get(), size / 2, size / 2, 0xC0FFEE00U);
    full_barrier(vk.context, cb);
  }));
  EXPECT_EQ(memory.words()[0], pattern(7, 0));
  EXPECT_EQ(memory.words()[size / 8 - 1], pattern(7, size / 8 - 1));
  EXPECT_EQ(memory.words()[size / 8], 0xC0FFEE00U);
  EXPECT_EQ(memory.words()[size / 4 - 1], 0xC0FFEE00U);
}

TEST_F(memory_import_test, imports_reject_bad_input_without_crashing) {
  constexpr std::size_t size = 1u << 20;
  auto exported = allocate_and_export(exporter.context, size);
  ASSERT_TRUE(exported) << exported.error().message();
  auto& [memory, fd] = *exported;

  auto too_big = vulkan::shared_buffer::import(vk.context, fd, {.allocation_size = size, .size = 2 * size});
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code(), errc::invalid_argument);

  auto zero = vulkan::shared_buffer::import(vk.context, fd, {.allocation_size = 0});
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code(), errc::invalid_argument);

  auto closed = vulkan::shared_buffer::import(vk.context, os::borrowed_fd::from_native(-1), {.allocation_size = size});
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().code(), errc::invalid_argument);

  auto empty = vulkan::shared_buffer::import(vulkan::device_context(), fd, {.allocation_size = size});
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code(), errc::invalid_argument);
}

TEST_F(memory_import_test, linear_image_texels_follow_the_row_pitch) {
  const vulkan::image_info info{.format = VK_FORMAT_R8G8B8A8_UNORM, .width = 200, .height = 120,
                                .tiling = VK_IMAGE_TILING_LINEAR};
  auto made = import_image(info);
  ASSERT_TRUE(made) << made.error().message();
  auto& [size, exported, image] = *made;
  auto& [memory, fd] = exported;
  ASSERT_TRUE(image.layout().has_value());
  const auto layout = *image.layout();
  EXPECT_GE(layout.row_pitch, std::size_t{200} * 4);

  // The exporter (standing in for CUDA) writes texel (x, y) at offset + y * row_pitch + 4x.
  auto* bytes = reinterpret_cast<unsigned char*>(memory.words());
  for (std::uint32_t y = 0; y < 120; ++y)
    for (std::uint32_t x = 0; x < 200; ++x) {
      const std::uint32_t v = pattern(3, y * 200 + x);
      std::memcpy(bytes + layout.offset + y * layout.row_pitch + x * 4, &v, 4);
    }
  auto staging = staging_buffer::create(vk.context, std::size_t{200} * 120 * 4);
  ASSERT_TRUE(staging);
  const auto& fn = vk.context.functions();
  ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
    // UNDEFINED -> GENERAL keeps a linear image's bytes; then copy out.
    image_barrier(vk.context, cb, image.get(), VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL);
    const VkBufferImageCopy region = whole_image(200, 120);
    fn.vkCmdCopyImageToBuffer(cb, image.get(), VK_IMAGE_LAYOUT_GENERAL, staging->get(), 1, &region);
    full_barrier(vk.context, cb);
  }));
  EXPECT_EQ(first_mismatch(staging->words(), std::size_t{200} * 120, 3), no_mismatch);
}

TEST_F(memory_import_test, optimal_image_round_trips_through_vulkan) {
  const vulkan::image_info info{.format = VK_FORMAT_R8G8B8A8_UNORM, .width = 256, .height = 256};
  auto made = import_image(info);
  ASSERT_TRUE(made) << made.error().message();
  auto& [size, exported, image] = *made;
  auto& [memory, fd] = exported;
  EXPECT_FALSE(image.layout().has_value());

  auto small = vulkan::shared_image::import(vk.context, fd, size / 2, info);
  ASSERT_FALSE(small);
  EXPECT_EQ(small.error().code(), errc::invalid_argument);

  auto staging = staging_buffer::create(vk.context, std::size_t{256} * 256 * 4);
  ASSERT_TRUE(staging);
  for (std::size_t i = 0; i < 256 * 256; ++i) staging->words()[i] = pattern(11, i);
  const auto& fn = vk.context.functions();
  const auto transition = [&](VkCommandBuffer cb, VkImageLayout from, VkImageLayout to) {
    image_barrier(vk.context, cb, image.get(), from, to);
  };
  const VkBufferImageCopy region = whole_image(256, 256);
  ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
    transition(cb, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);
    fn.vkCmdCopyBufferToImage(cb, staging->get(), image.get(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
  }));
  for (std::size_t i = 0; i < 256 * 256; ++i) staging->words()[i] = 0;
  // A second import of the same memory sees what the first wrote (the bytes live in the export).
  auto again = vulkan::shared_image::import(vk.context, fd, size, info);
  ASSERT_TRUE(again) << again.error().message();
  ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
    transition(cb, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
    fn.vkCmdCopyImageToBuffer(cb, image.get(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, staging->get(), 1, &region);
    full_barrier(vk.context, cb);
  }));
  EXPECT_EQ(first_mismatch(staging->words(), std::size_t{256} * 256, 11), no_mismatch);
}

TEST_F(memory_import_test, chunked_buffer_without_sparse_gives_one_segment_per_chunk) {
  constexpr std::size_t chunk = 1u << 20;
  std::vector<exported_memory> chunks;
  auto view = vulkan::chunked_buffer::create(vk.context, {.reserved_size = 8 * chunk});
  ASSERT_TRUE(view) << view.error().message();
  if (vk.context.capabilities().sparse_binding) GTEST_SKIP() << "this device has sparse binding (covered on the GPU)";
  EXPECT_FALSE(view->is_sparse());

  auto sparse = vulkan::chunked_buffer::create(vk.context, {.reserved_size = 8 * chunk, .mode = vulkan::growth_mode::sparse});
  ASSERT_FALSE(sparse);
  EXPECT_EQ(sparse.error().code(), errc::unsupported);

  for (std::uint32_t c = 0; c < 3; ++c) {
    auto exported = allocate_and_export(exporter.context, chunk);
    ASSERT_TRUE(exported) << exported.error().message();
    auto& [memory, fd] = *exported;
    for (std::size_t i = 0; i < chunk / 4; ++i) memory.words()[i] = pattern(100 + c, i);
    const auto generation = view->generation();
    ASSERT_TRUE(view->append(fd, c * chunk, chunk));
    EXPECT_GT(view->generation(), generation);
    chunks.push_back(std::move(memory));
  }
  EXPECT_EQ(view->size(), 3 * chunk);
  ASSERT_EQ(view->segments().size(), 3U);
  EXPECT_EQ(view->buffer(), VK_NULL_HANDLE);  // several buffers: bind segments

  auto staging = staging_buffer::create(vk.context, chunk);
  ASSERT_TRUE(staging);
  for (std::uint32_t c = 0; c < 3; ++c) {
    const auto segment = view->segments()[c];
    EXPECT_EQ(segment.offset, c * chunk);
    ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
      const VkBufferCopy region{segment.buffer_offset, 0, segment.size};
      vk.context.functions().vkCmdCopyBuffer(cb, segment.buffer, staging->get(), 1, &region);
      full_barrier(vk.context, cb);
    }));
    EXPECT_EQ(first_mismatch(staging->words(), chunk / 4, 100 + c), no_mismatch) << "chunk " << c;
  }

  // Wrong offsets and overflows are refused without changing the view.
  auto fd = chunks[0].export_fd();
  ASSERT_TRUE(fd);
  auto gap = view->append(*fd, 5 * chunk, chunk);
  ASSERT_FALSE(gap);
  EXPECT_EQ(gap.error().code(), errc::invalid_argument);
  auto past = view->append(*fd, 3 * chunk, 6 * chunk);
  ASSERT_FALSE(past);
  EXPECT_EQ(view->chunk_count(), 3U);

  ASSERT_TRUE(view->truncate(1));
  EXPECT_EQ(view->size(), chunk);
  EXPECT_NE(view->buffer(), VK_NULL_HANDLE);
  EXPECT_FALSE(view->truncate(2));
}

}  // namespace
}  // namespace membridge::testing
