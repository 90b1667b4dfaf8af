// vulkan tier: the helpers an engine uses to make its own device for membridge
// (device_requirements, pick_queues), checked by creating that device on the fixture's GPU and adopting it.
#include "vulkan_test.hpp"

#include <membridge/sync/submit2.hpp>
#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/device_requirements.hpp>
#include <membridge/vulkan/queue_picker.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace membridge::testing {
namespace {

using vulkan::device_context;

// A device the "engine" created on the fixture's physical device; destroyed with this object.
struct engine_device {
  VkDevice device = VK_NULL_HANDLE;
  PFN_vkDestroyDevice destroy = nullptr;
  PFN_vkGetDeviceQueue get_queue = nullptr;
  engine_device() = default;
  engine_device(const engine_device&) = delete;
  engine_device& operator=(const engine_device&) = delete;
  ~engine_device() {
    if (device != VK_NULL_HANDLE && destroy != nullptr) destroy(device, nullptr);
  }
};

// Creates the device from `dci` on `c`'s physical device.
void create_engine_device(const device_context& c, const VkDeviceCreateInfo& dci, engine_device& out) {
  const auto& fn = c.instance_functions();
  ASSERT_EQ(fn.vkCreateDevice(c.physical_device(), &dci, nullptr, &out.device), VK_SUCCESS);
  out.destroy = reinterpret_cast<PFN_vkDestroyDevice>(fn.vkGetDeviceProcAddr(out.device, "vkDestroyDevice"));
  out.get_queue = reinterpret_cast<PFN_vkGetDeviceQueue>(fn.vkGetDeviceProcAddr(out.device, "vkGetDeviceQueue"));
  ASSERT_NE(out.destroy, nullptr);
  ASSERT_NE(out.get_queue, nullptr);
}

/// What an engine hands vkCreateDevice: one queue of the graphics family (priority 1) and the create
/// info that points at it (extensions and features are the test's). Not copyable: dci points into it.
struct engine_queue_and_device {
  explicit engine_queue_and_device(const device_context& c) {
    queue.queueFamilyIndex = c.graphics_queue().family;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &queue;
  }
  engine_queue_and_device(const engine_queue_and_device&) = delete;
  engine_queue_and_device& operator=(const engine_queue_and_device&) = delete;

  float priority = 1.0F;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
};

vulkan::adopt_info adopt_info_for(const device_context& c, const engine_device& d,
                                  const vulkan::device_requirements& req) {
  vulkan::adopt_info info = handles_of_context(c);
  info.device = d.device;
  info.enabled_extensions = req.enabled_extensions();
  info.features = req.features();
  info.allow_missing_extensions = !req.missing_extensions().empty();
  return info;
}

std::size_t count_of(const VkDeviceCreateInfo& dci, std::string_view name) {
  std::size_t n = 0;
  for (std::uint32_t i = 0; i < dci.enabledExtensionCount; ++i)
    if (name == dci.ppEnabledExtensionNames[i]) ++n;
  return n;
}

std::size_t structs_in_chain(const void* head, VkStructureType type) {
  std::size_t n = 0;
  for (auto* s = static_cast<const VkBaseInStructure*>(head); s != nullptr; s = s->pNext)
    if (s->sType == type) ++n;
  return n;
}

TEST(vulkan_required_features, timeline_always_sparse_when_asked) {
  const auto plain = vulkan::required_device_features();
  EXPECT_TRUE(plain.timeline_semaphore);
  EXPECT_FALSE(plain.sparse_binding);
  EXPECT_FALSE(plain.sparse_residency_buffer);
  const auto sparse = vulkan::required_device_features(true);
  EXPECT_TRUE(sparse.timeline_semaphore);
  EXPECT_TRUE(sparse.sparse_binding);
  EXPECT_TRUE(sparse.sparse_residency_buffer);
}

TEST_F(vulkan_test, device_requirements_keep_the_engines_entries_and_add_membridges) {
  const auto& c = vk.context;
  // The engine lists one of membridge's extensions itself and chains its own Vulkan 1.2 features.
  VkPhysicalDeviceVulkan12Features engine12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  engine12.hostQueryReset = VK_TRUE;
  const char* engine_extensions[] = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME};
  engine_queue_and_device engine(c);
  const VkDeviceQueueCreateInfo& queue = engine.queue;
  VkDeviceCreateInfo& dci = engine.dci;
  dci.pNext = &engine12;
  dci.enabledExtensionCount = 1;
  dci.ppEnabledExtensionNames = engine_extensions;

  // Without the flag, a device lacking a required extension is refused by name.
  const bool lacks_semaphore_fd = !c.capabilities().external_semaphore_fd;
  if (lacks_semaphore_fd) {
    VkDeviceCreateInfo copy = dci;
    auto refused = vulkan::device_requirements::apply(c.instance_functions(), c.physical_device(), copy);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code(), errc::unsupported);
    EXPECT_NE(refused.error().message().find(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME), std::string::npos)
        << refused.error().message();
    EXPECT_EQ(copy.ppEnabledExtensionNames, engine_extensions) << "a refused apply leaves the create info alone";
  }

  auto req = vulkan::device_requirements::apply(c.instance_functions(), c.physical_device(), dci,
                                                {.allow_missing_extensions = true});
  ASSERT_TRUE(req) << req.error().message();
  // Extensions: the engine's entry once, membridge's added once (or reported missing).
  EXPECT_EQ(count_of(dci, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME), 1U);
  EXPECT_EQ(dci.ppEnabledExtensionNames[0], engine_extensions[0]) << "the engine's pointer is kept";
  EXPECT_EQ(count_of(dci, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME), lacks_semaphore_fd ? 0U : 1U);
  EXPECT_EQ(req->missing_extensions().size(), lacks_semaphore_fd ? 1U : 0U);
  EXPECT_EQ(req->enabled_extensions().size(), dci.enabledExtensionCount);
  // Features: the engine's Vulkan 1.2 struct carries the timeline feature; no second struct was chained.
  EXPECT_EQ(dci.pNext, &engine12);
  EXPECT_EQ(engine12.timelineSemaphore, VK_TRUE);
  EXPECT_EQ(engine12.hostQueryReset, VK_TRUE);
  EXPECT_EQ(structs_in_chain(dci.pNext, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES), 0U);
  EXPECT_TRUE(req->features().timeline_semaphore);

  // The device is made (validation watches it), adopted with those features, and makes a timeline.
  engine_device device;
  ASSERT_NO_FATAL_FAILURE(create_engine_device(c, dci, device));
  auto info = adopt_info_for(c, device, *req);
  device.get_queue(device.device, queue.queueFamilyIndex, 0, &info.graphics.queue);
  info.graphics.family = queue.queueFamilyIndex;
  auto adopted = device_context::adopt(info);
  ASSERT_TRUE(adopted) << adopted.error().message();
  EXPECT_TRUE(adopted->capabilities().timeline_semaphore);
  EXPECT_TRUE(adopted->capabilities().external_memory_fd);
  auto timeline = vulkan::timeline_semaphore::create(*adopted, 3, adopted->capabilities().external_semaphore_fd);
  ASSERT_TRUE(timeline) << timeline.error().message();
  ASSERT_TRUE(timeline->signal(7));
  ASSERT_TRUE(timeline->wait(7, std::chrono::seconds(1)));
  EXPECT_EQ(*timeline->value(), 7U);
}

TEST_F(vulkan_test, device_requirements_chain_their_own_features_when_the_engine_has_none) {
  const auto& c = vk.context;
  VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  c.instance_functions().vkGetPhysicalDeviceFeatures2(c.physical_device(), &query);
  const VkPhysicalDeviceFeatures supported = query.features;
  const bool sparse_offered = supported.sparseBinding == VK_TRUE && supported.sparseResidencyBuffer == VK_TRUE;

  VkPhysicalDeviceFeatures engine_core{};
  engine_core.shaderInt64 = supported.shaderInt64;  // something the engine enabled itself
  engine_queue_and_device engine(c);
  const VkDeviceQueueCreateInfo& queue = engine.queue;
  VkDeviceCreateInfo& dci = engine.dci;
  dci.pEnabledFeatures = &engine_core;

  auto req = vulkan::device_requirements::apply(c.instance_functions(), c.physical_device(), dci,
                                                {.sparse_growth = true, .allow_missing_extensions = true});
  ASSERT_TRUE(req) << req.error().message();
  EXPECT_EQ(count_of(dci, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME), 1U);
  ASSERT_NE(dci.pNext, nullptr);
  EXPECT_EQ(structs_in_chain(dci.pNext, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES), 1U);
  const auto* timeline_features = static_cast<const VkPhysicalDeviceTimelineSemaphoreFeatures*>(dci.pNext);
  EXPECT_EQ(timeline_features->timelineSemaphore, VK_TRUE);
  // The engine's core features are copied, never written to; sparse is added when the GPU has it.
  EXPECT_EQ(engine_core.sparseBinding, VK_FALSE);
  ASSERT_NE(dci.pEnabledFeatures, nullptr);
  EXPECT_EQ(dci.pEnabledFeatures->shaderInt64, supported.shaderInt64);
  EXPECT_EQ(dci.pEnabledFeatures->sparseBinding, sparse_offered ? VK_TRUE : VK_FALSE);
  EXPECT_EQ(req->features().sparse_binding, sparse_offered);
  EXPECT_EQ(req->features().sparse_residency_buffer, sparse_offered);

  // Moving the object keeps the create info's pointers valid.
  vulkan::device_requirements moved = std::move(*req);
  engine_device device;
  ASSERT_NO_FATAL_FAILURE(create_engine_device(c, dci, device));
  auto info = adopt_info_for(c, device, moved);
  device.get_queue(device.device, queue.queueFamilyIndex, 0, &info.graphics.queue);
  info.graphics.family = queue.queueFamilyIndex;
  auto adopted = device_context::adopt(info);
  ASSERT_TRUE(adopted) << adopted.error().message();
  EXPECT_TRUE(adopted->capabilities().timeline_semaphore);
  auto timeline = vulkan::timeline_semaphore::create(*adopted, 1, adopted->capabilities().external_semaphore_fd);
  ASSERT_TRUE(timeline) << timeline.error().message();
  ASSERT_TRUE(timeline->signal(2));
  EXPECT_EQ(*timeline->value(), 2U);
}

TEST_F(vulkan_test, device_requirements_refuse_a_wrong_create_info) {
  VkDeviceCreateInfo wrong{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  auto refused = vulkan::device_requirements::apply(vk.context.instance_functions(), vk.context.physical_device(), wrong);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), errc::invalid_argument);
}

TEST_F(vulkan_test, pick_queues_matches_the_families_and_makes_a_device_membridge_adopts) {
  const auto& c = vk.context;
  const auto& fn = c.instance_functions();
  std::uint32_t n = 0;
  fn.vkGetPhysicalDeviceQueueFamilyProperties(c.physical_device(), &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  fn.vkGetPhysicalDeviceQueueFamilyProperties(c.physical_device(), &n, families.data());
  ASSERT_GT(n, 0U);

  auto picked = vulkan::pick_queues(fn, c.physical_device());
  ASSERT_TRUE(picked) << picked.error().message();
  const auto& q = *picked;
  ASSERT_LT(q.graphics_family, n);
  EXPECT_NE(families[q.graphics_family].queueFlags & VK_QUEUE_GRAPHICS_BIT, 0U);
  EXPECT_NE(families[q.graphics_family].queueFlags & VK_QUEUE_COMPUTE_BIT, 0U);
  EXPECT_EQ(q.graphics_family, c.graphics_queue().family) << "the same family create() picks";
  bool any_transfer_only = false;
  bool any_sparse = false;
  bool other_sparse = false;
  for (std::uint32_t i = 0; i < n; ++i) {
    const VkQueueFlags f = families[i].queueFlags;
    if ((f & VK_QUEUE_TRANSFER_BIT) != 0 && (f & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) == 0)
      any_transfer_only = true;
    if ((f & VK_QUEUE_SPARSE_BINDING_BIT) != 0) {
      any_sparse = true;
      if (i != q.graphics_family) other_sparse = true;
    }
  }
  EXPECT_EQ(q.transfer_family != VK_QUEUE_FAMILY_IGNORED, any_transfer_only);
  if (q.transfer_family != VK_QUEUE_FAMILY_IGNORED) {
    EXPECT_EQ(families[q.transfer_family].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT), 0U);
  }
  EXPECT_EQ(q.sparse_family != VK_QUEUE_FAMILY_IGNORED, any_sparse);
  if (q.sparse_family != VK_QUEUE_FAMILY_IGNORED) {
    EXPECT_NE(families[q.sparse_family].queueFlags & VK_QUEUE_SPARSE_BINDING_BIT, 0U);
    EXPECT_EQ(q.sparse_family != q.graphics_family, other_sparse) << "another family is preferred";
    EXPECT_LT(q.sparse_index, families[q.sparse_family].queueCount);
  }
  // One create info per family, each within the family's queue count, priorities owned by the selection.
  std::vector<std::uint32_t> seen;
  for (const auto& ci : q.queue_create_infos) {
    EXPECT_EQ(std::count(seen.begin(), seen.end(), ci.queueFamilyIndex), 0) << "family listed twice";
    seen.push_back(ci.queueFamilyIndex);
    ASSERT_LT(ci.queueFamilyIndex, n);
    EXPECT_GE(ci.queueCount, 1U);
    EXPECT_LE(ci.queueCount, families[ci.queueFamilyIndex].queueCount);
    EXPECT_LE(ci.queueCount, q.priorities.size());
    EXPECT_EQ(ci.pQueuePriorities, q.priorities.data());
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), q.graphics_family), 1);

  // Without sparse: no sparse family.
  auto plain = vulkan::pick_queues(fn, c.physical_device(), false);
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_EQ(plain->sparse_family, VK_QUEUE_FAMILY_IGNORED);
  EXPECT_FALSE(plain->sparse_shares_graphics_queue());

  // A device made from the selection (moved first) and device_requirements, adopted with its queues.
  vulkan::queue_selection moved = std::move(*picked);
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = static_cast<std::uint32_t>(moved.queue_create_infos.size());
  dci.pQueueCreateInfos = moved.queue_create_infos.data();
  auto req = vulkan::device_requirements::apply(fn, c.physical_device(), dci,
                                                {.sparse_growth = true, .allow_missing_extensions = true});
  ASSERT_TRUE(req) << req.error().message();
  engine_device device;
  ASSERT_NO_FATAL_FAILURE(create_engine_device(c, dci, device));
  auto info = adopt_info_for(c, device, *req);
  moved.fill(info, device.device, device.get_queue);
  ASSERT_TRUE(info.graphics.valid());
  EXPECT_EQ(info.graphics.family, moved.graphics_family);
  EXPECT_EQ(info.transfer.valid(), moved.transfer_family != VK_QUEUE_FAMILY_IGNORED);
  EXPECT_EQ(info.sparse.valid(), moved.sparse_family != VK_QUEUE_FAMILY_IGNORED);
  auto adopted = device_context::adopt(info);
  ASSERT_TRUE(adopted) << adopted.error().message();
  const bool sparse_usable = req->features().sparse_binding && moved.sparse_family != VK_QUEUE_FAMILY_IGNORED;
  EXPECT_EQ(adopted->capabilities().sparse_binding, sparse_usable);
  // Sparse growth works exactly when the helpers said it would.
  auto view = vulkan::chunked_buffer::create(*adopted, {.reserved_size = 8U << 20, .mode = vulkan::growth_mode::sparse});
  EXPECT_EQ(static_cast<bool>(view), sparse_usable) << (view ? std::string() : view.error().message());
}

TEST(sync_submit2, to_submit_info_copies_the_operation) {
  const auto op = sync::semaphore_op{reinterpret_cast<VkSemaphore>(std::uintptr_t{0x1234}), 42};
  const VkSemaphoreSubmitInfo info = sync::to_submit_info(op, VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT);
  EXPECT_EQ(info.sType, VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO);
  EXPECT_EQ(info.pNext, nullptr);
  EXPECT_EQ(info.semaphore, op.semaphore);
  EXPECT_EQ(info.value, 42U);
  EXPECT_EQ(info.stageMask, VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT);
  EXPECT_EQ(info.deviceIndex, 0U);
}

TEST_F(vulkan_test, frame_submit2_drives_the_frame_timeline_through_vkQueueSubmit2) {
  const auto& c = vk.context;
  const auto& fn = c.instance_functions();
  VkPhysicalDeviceVulkan13Features supported13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  query.pNext = &supported13;
  fn.vkGetPhysicalDeviceFeatures2(c.physical_device(), &query);
  ASSERT_GE(c.api_version(), VK_API_VERSION_1_3) << "this test needs a Vulkan 1.3 device (lavapipe is)";
  ASSERT_EQ(supported13.synchronization2, VK_TRUE) << "this test needs synchronization2 (lavapipe has it)";

  // The engine's device: Vulkan 1.3 features with synchronization2, membridge's additions on top.
  VkPhysicalDeviceVulkan13Features engine13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  engine13.synchronization2 = VK_TRUE;
  auto picked = vulkan::pick_queues(fn, c.physical_device(), false);
  ASSERT_TRUE(picked) << picked.error().message();
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &engine13;
  dci.queueCreateInfoCount = static_cast<std::uint32_t>(picked->queue_create_infos.size());
  dci.pQueueCreateInfos = picked->queue_create_infos.data();
  auto req = vulkan::device_requirements::apply(fn, c.physical_device(), dci, {.allow_missing_extensions = true});
  ASSERT_TRUE(req) << req.error().message();
  engine_device device;
  ASSERT_NO_FATAL_FAILURE(create_engine_device(c, dci, device));
  auto info = adopt_info_for(c, device, *req);
  picked->fill(info, device.device, device.get_queue);
  auto adopted = device_context::adopt(info);
  ASSERT_TRUE(adopted) << adopted.error().message();
  const auto& dev = adopted->functions();
  ASSERT_NE(dev.vkQueueSubmit2, nullptr);

  auto timeline = sync::frame_timeline::create_host_producer(*adopted, {.slots = 2});
  ASSERT_TRUE(timeline) << timeline.error().message();
  // A command buffer that writes a fresh pattern into a host-visible buffer, so the submits do work.
  auto staging = staging_buffer::create(*adopted, 4096);
  ASSERT_TRUE(staging) << staging.error().message();
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.queueFamilyIndex = adopted->graphics_queue().family;
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  VkCommandPool pool = VK_NULL_HANDLE;
  ASSERT_EQ(dev.vkCreateCommandPool(adopted->device(), &pool_info, nullptr, &pool), VK_SUCCESS);
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  ASSERT_EQ(dev.vkAllocateCommandBuffers(adopted->device(), &alloc, &cb), VK_SUCCESS);

  for (std::uint64_t frame = 0; frame < 4; ++frame) {
    const std::uint32_t word = pattern(static_cast<std::uint32_t>(frame) + 11U, 0);
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    ASSERT_EQ(dev.vkBeginCommandBuffer(cb, &begin), VK_SUCCESS);
    dev.vkCmdFillBuffer(cb, staging->get(), 0, 4096, word);
    full_barrier(*adopted, cb);
    ASSERT_EQ(dev.vkEndCommandBuffer(cb), VK_SUCCESS);

    auto ops = sync::frame_submit2::of(*timeline, frame, VK_PIPELINE_STAGE_2_TRANSFER_BIT);
    ASSERT_TRUE(ops) << ops.error().message();
    EXPECT_EQ(ops->wait.semaphore, timeline->produced().get());
    EXPECT_EQ(ops->wait.value, sync::frame_timeline::produced_value(frame));
    EXPECT_EQ(ops->wait.stageMask, VK_PIPELINE_STAGE_2_TRANSFER_BIT);
    EXPECT_EQ(ops->signal.semaphore, timeline->consumed().get());
    EXPECT_EQ(ops->signal.value, sync::frame_timeline::consumed_value(frame));
    EXPECT_EQ(ops->signal.stageMask, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);
    VkCommandBufferSubmitInfo cbi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO};
    cbi.commandBuffer = cb;
    const VkSubmitInfo2 submit = ops->submit_info(std::span<const VkCommandBufferSubmitInfo>(&cbi, 1));
    ASSERT_EQ(submit.waitSemaphoreInfoCount, 1U);
    ASSERT_EQ(submit.pWaitSemaphoreInfos, &ops->wait);
    ASSERT_EQ(submit.pSignalSemaphoreInfos, &ops->signal);
    ASSERT_EQ(dev.vkQueueSubmit2(adopted->graphics_queue().queue, 1, &submit, VK_NULL_HANDLE), VK_SUCCESS);
    // The submit waits for the producer: nothing is consumed until the host releases the frame.
    EXPECT_EQ(*timeline->consumed().value(), frame) << "frame " << frame << " ran before its release";
    ASSERT_TRUE(timeline->host_release(frame));
    ASSERT_TRUE(timeline->wait_consumed(frame, std::chrono::seconds(5)));
    EXPECT_EQ(*timeline->consumed().value(), sync::frame_timeline::consumed_value(frame));
    EXPECT_EQ(first_mismatch(staging->words(), 1, static_cast<std::uint32_t>(frame) + 11U), SIZE_MAX);
    EXPECT_EQ(staging->words()[1023], word);
  }
  ASSERT_EQ(dev.vkQueueWaitIdle(adopted->graphics_queue().queue), VK_SUCCESS);
  dev.vkDestroyCommandPool(adopted->device(), pool, nullptr);

  // A timeline with a semaphore per consumer wants for_consumer, and an unknown consumer is refused.
  EXPECT_FALSE(sync::frame_submit2::for_consumer(*timeline, 1, 0, VK_PIPELINE_STAGE_2_TRANSFER_BIT));
  auto slotted = sync::frame_timeline::create_host_producer(*adopted, {.slots = 2, .consumer_slots = true});
  ASSERT_TRUE(slotted) << slotted.error().message();
  EXPECT_FALSE(sync::frame_submit2::of(*slotted, 0, VK_PIPELINE_STAGE_2_TRANSFER_BIT));
  EXPECT_FALSE(sync::frame_submit2::for_consumer(*slotted, 7, 0, VK_PIPELINE_STAGE_2_TRANSFER_BIT));
  ASSERT_TRUE(slotted->add_consumer(7, std::nullopt));
  auto ops = sync::frame_submit2::for_consumer(*slotted, 7, 3, VK_PIPELINE_STAGE_2_TRANSFER_BIT,
                                               VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT);
  ASSERT_TRUE(ops) << ops.error().message();
  EXPECT_EQ(ops->wait.semaphore, slotted->produced().get());
  EXPECT_EQ(ops->wait.value, sync::frame_timeline::produced_value(3));
  ASSERT_NE(slotted->consumer(7), nullptr);
  EXPECT_EQ(ops->signal.semaphore, slotted->consumer(7)->get());
  EXPECT_EQ(ops->signal.value, sync::frame_timeline::consumed_value(3));
  EXPECT_EQ(ops->signal.stageMask, VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT);
}

}  // namespace
}  // namespace membridge::testing
