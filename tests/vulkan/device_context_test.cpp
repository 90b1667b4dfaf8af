// vulkan tier: device_context creation, adoption without ownership, capability reporting.
#include "vulkan_test.hpp"

#include <membridge/vulkan/shared_buffer.hpp>

#include <algorithm>
#include <span>

namespace membridge::testing {
namespace {

using vulkan::device_context;

TEST_F(vulkan_test, create_reads_identity_and_capabilities) {
  const auto& c = vk.context;
  EXPECT_TRUE(c.owns_device());
  EXPECT_FALSE(c.uuid().is_zero());
  EXPECT_FALSE(c.name().empty());
  EXPECT_GE(c.api_version(), VK_API_VERSION_1_2);
  EXPECT_TRUE(c.capabilities().external_memory_fd);
  EXPECT_TRUE(c.capabilities().timeline_semaphore);
  EXPECT_TRUE(c.graphics_queue().valid());
  EXPECT_TRUE(c.transfer_queue().valid());
  EXPECT_NE(c.functions().vkCreateBuffer, nullptr);
  EXPECT_GT(c.memory_properties().memoryTypeCount, 0U);
}

TEST_F(vulkan_test, missing_extensions_are_reported_by_name) {
  // Every extension membridge wants is either enabled or listed as missing; capabilities agree.
  const auto& c = vk.context;
  const auto& missing = c.missing_extensions();
  const bool semaphore_missing =
      std::find(missing.begin(), missing.end(), VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME) != missing.end();
  EXPECT_EQ(semaphore_missing, !c.capabilities().external_semaphore_fd);
  EXPECT_EQ(std::find(missing.begin(), missing.end(), VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME), missing.end());
}

TEST_F(vulkan_test, create_refuses_a_uuid_no_device_has) {
  vulkan::create_options options;
  device_uuid other;
  other.bytes.fill(0xAB);
  options.uuid = other;
  auto made = device_context::create(options);
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code(), errc::invalid_argument);
  EXPECT_NE(made.error().message().find("same GPU"), std::string::npos) << made.error().message();
  EXPECT_NE(made.error().message().find(vk.context.uuid().to_string()), std::string::npos) << made.error().message();
}

TEST_F(vulkan_test, create_picks_the_device_with_the_given_uuid) {
  vulkan::create_options options;
  options.uuid = vk.context.uuid();
  auto made = device_context::create(options);
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_EQ(made->uuid(), vk.context.uuid());
}

vulkan::adopt_info handles_of(const device_context& c, std::vector<std::string> extensions) {
  vulkan::adopt_info info = handles_of_context(c);
  info.enabled_extensions = std::move(extensions);
  info.allow_missing_extensions = true;  // lavapipe has no VK_KHR_external_semaphore_fd
  info.features.timeline_semaphore = c.capabilities().timeline_semaphore;
  info.graphics = c.graphics_queue();
  return info;
}

TEST_F(vulkan_test, adopting_never_destroys_the_engines_device) {
  std::vector<std::string> enabled{VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME};
  if (vk.context.capabilities().external_semaphore_fd) enabled.emplace_back(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
  {
    auto adopted = device_context::adopt(handles_of(vk.context, enabled));
    ASSERT_TRUE(adopted) << adopted.error().message();
    EXPECT_FALSE(adopted->owns_device());
    EXPECT_EQ(adopted->device(), vk.context.device());
    EXPECT_EQ(adopted->uuid(), vk.context.uuid());
    // An object made through the adopted context, destroyed with it.
    auto exported = allocate_and_export(vk.context, 1 << 20);
    ASSERT_TRUE(exported) << exported.error().message();
    auto& [memory, fd] = *exported;
    auto buffer = vulkan::shared_buffer::import(*adopted, fd, {.allocation_size = 1 << 20});
    ASSERT_TRUE(buffer) << buffer.error().message();
  }
  // The engine's device still works after the adopted context and its objects are gone.
  auto staging = staging_buffer::create(vk.context, 4096);
  ASSERT_TRUE(staging) << staging.error().message();
  ASSERT_TRUE(run_commands(vk.context, [&](VkCommandBuffer cb) {
    vk.context.functions().vkCmdFillBuffer(cb, staging->get(), 0, 4096, 0x5a5a5a5aU);
    full_barrier(vk.context, cb);
  }));
  EXPECT_EQ(staging->words()[1023], 0x5a5a5a5aU);
}

TEST_F(vulkan_test, adopt_reports_missing_extensions_and_bad_handles) {
  auto without = device_context::adopt(handles_of(vk.context, {}));
  ASSERT_FALSE(without);
  EXPECT_EQ(without.error().code(), errc::unsupported);
  EXPECT_NE(without.error().message().find(VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME), std::string::npos)
      << without.error().message();

  auto info = handles_of(vk.context, {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME});
  info.device = VK_NULL_HANDLE;
  auto null_device = device_context::adopt(info);
  ASSERT_FALSE(null_device);
  EXPECT_EQ(null_device.error().code(), errc::invalid_argument);

  info = handles_of(vk.context, {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME});
  info.api_version = VK_API_VERSION_1_1;
  auto old = device_context::adopt(info);
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().code(), errc::unsupported);

  info = handles_of(vk.context, {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME});
  info.graphics = {};
  auto no_queue = device_context::adopt(info);
  ASSERT_FALSE(no_queue);
  EXPECT_EQ(no_queue.error().code(), errc::invalid_argument);
}

TEST_F(vulkan_test, adopt_refuses_a_missing_semaphore_extension_unless_allowed) {
  // Only the memory extension listed: refused, naming the semaphore extension.
  auto info = handles_of(vk.context, {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME});
  info.allow_missing_extensions = false;
  auto refused = device_context::adopt(info);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), errc::unsupported);
  EXPECT_NE(refused.error().message().find(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME), std::string::npos)
      << refused.error().message();
  EXPECT_NE(refused.error().message().find("allow_missing_extensions"), std::string::npos) << refused.error().message();

  // With the flag: accepted, and the extension is reported missing.
  info.allow_missing_extensions = true;
  auto accepted = device_context::adopt(info);
  ASSERT_TRUE(accepted) << accepted.error().message();
  EXPECT_TRUE(accepted->capabilities().external_memory_fd);
  EXPECT_FALSE(accepted->capabilities().external_semaphore_fd);
  ASSERT_EQ(accepted->missing_extensions().size(), 1U);
  EXPECT_EQ(accepted->missing_extensions()[0], VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);

  // The flag never excuses the memory extension.
  auto none = handles_of(vk.context, {});
  auto without_memory = device_context::adopt(none);
  ASSERT_FALSE(without_memory);
  EXPECT_EQ(without_memory.error().code(), errc::unsupported);
}

TEST_F(vulkan_test, adopt_takes_the_engines_extension_array_as_a_span) {
  // The span, when non-empty, is used instead of the vector (which here lists nothing). adopt() believes
  // the list (Vulkan cannot be asked), so listing the semaphore extension is enough here.
  const char* engine_names[] = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME};
  auto info = handles_of(vk.context, {});
  info.allow_missing_extensions = false;
  info.enabled_extension_names = engine_names;
  auto adopted = device_context::adopt(info);
  ASSERT_TRUE(adopted) << adopted.error().message();
  EXPECT_TRUE(adopted->capabilities().external_memory_fd);
  EXPECT_TRUE(adopted->capabilities().external_semaphore_fd);
  EXPECT_TRUE(adopted->missing_extensions().empty());

  // Only the first name: the semaphore extension is missing again, and refused without the flag.
  info.enabled_extension_names = std::span<const char* const>(engine_names, 1);
  auto refused = device_context::adopt(info);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), errc::unsupported);

  const char* with_null[] = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME, nullptr};
  info.enabled_extension_names = with_null;
  auto null_name = device_context::adopt(info);
  ASSERT_FALSE(null_name);
  EXPECT_EQ(null_name.error().code(), errc::invalid_argument);
}

TEST(vulkan_loader, a_missing_loader_is_driver_unavailable) {
  vulkan::create_options options;
  options.loader_path = "libvulkan-that-does-not-exist.so.1";
  auto made = device_context::create(options);
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code(), errc::driver_unavailable);
}

}  // namespace
}  // namespace membridge::testing

namespace membridge::testing {
namespace {

// The tier's promise that a validation message fails a test rests on messages reaching the sink.
TEST(vulkan_validation, a_misuse_reaches_the_message_sink) {
  auto made = make_validated_context();
  ASSERT_TRUE(made) << made.error().message();
  auto& c = made->context;
  auto staging = staging_buffer::create(c, 4096);
  ASSERT_TRUE(staging);
  ASSERT_TRUE(run_commands(c, [&](VkCommandBuffer cb) {
    c.functions().vkCmdFillBuffer(cb, staging->get(), 2, 6, 0);  // offset and size must be multiples of 4
  }));
  EXPECT_GE(c.validation_message_count(), 1U);
  const std::lock_guard<std::mutex> guard(*made->lock);
  ASSERT_FALSE(made->messages->empty());
  EXPECT_NE(made->messages->front().find("vkCmdFillBuffer"), std::string::npos) << made->messages->front();
}

}  // namespace
}  // namespace membridge::testing
