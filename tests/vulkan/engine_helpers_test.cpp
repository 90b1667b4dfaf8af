// vulkan tier: the helpers an engine uses to make its own device for membridge
// (device_requirements, pick_queues), checked by creating that device on the fixture's GPU and adopting it.
#include "vulkan_test.hpp"

#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/device_requirements.hpp>
#include <membridge/vulkan/queue_picker.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
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

vulkan::adopt_info adopt_info_for(const device_context& c, const engine_device& d,
                                  const vulkan::device_requirements& req) {
  vulkan::adopt_info info;
  info.get_instance_proc_addr = c.get_instance_proc_addr();
  info.instance = c.instance();
  info.physical_device = c.physical_device();
  info.device = d.device;
  info.api_version = c.api_version();
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
  const float priority = 1.0F;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = c.graphics_queue().family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &engine12;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &queue;
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
  const float priority = 1.0F;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = c.graphics_queue().family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &queue;
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

}  // namespace
}  // namespace membridge::testing
