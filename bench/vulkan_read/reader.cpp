#include "reader.hpp"

#include <shaders/read_reduce_comp_spv.hpp>

#include <volk.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

namespace membridge::bench::vulkan_read {

namespace {

/// One global memory barrier from `src` to `dst`.
void barrier(const VolkDeviceTable& fn, VkCommandBuffer cb, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
             VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = src_access;
  b.dstAccessMask = dst_access;
  fn.vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, &b, 0, nullptr, 0, nullptr);
}

}  // namespace

const char* memory_name(memory m) noexcept { return m == memory::imported ? "imported" : "own"; }

device_limits read_device_limits(const vulkan::device_context& vk, std::size_t bytes, std::uint32_t groups) {
  device_limits out;
  const VkPhysicalDeviceLimits& limits = vk.properties().limits;
  out.timestamp_period_ns = static_cast<double>(limits.timestampPeriod);
  out.max_storage_buffer_range = limits.maxStorageBufferRange;
  out.max_workgroups_x = limits.maxComputeWorkGroupCount[0];

  const auto& fi = vk.instance_functions();
  std::uint32_t families = 0;
  fi.vkGetPhysicalDeviceQueueFamilyProperties(vk.physical_device(), &families, nullptr);
  std::vector<VkQueueFamilyProperties> props(families);
  fi.vkGetPhysicalDeviceQueueFamilyProperties(vk.physical_device(), &families, props.data());
  const std::uint32_t family = vk.graphics_queue().family;
  if (family < families) out.timestamp_valid_bits = props[family].timestampValidBits;

  if (out.timestamp_valid_bits == 0 || !(out.timestamp_period_ns > 0.0))
    throw device_unavailable("the Vulkan device " + vk.name() + " has no timestamps on its graphics queue family " +
                             std::to_string(family) + " (timestampValidBits " + std::to_string(out.timestamp_valid_bits) +
                             ", timestampPeriod " + std::to_string(out.timestamp_period_ns) + ")");
  if (out.max_storage_buffer_range < bytes)
    throw device_unavailable("the Vulkan device " + vk.name() + " binds at most " +
                             std::to_string(out.max_storage_buffer_range) + " bytes as one storage buffer " +
                             "(maxStorageBufferRange); the benchmark reads " + std::to_string(bytes) +
                             " in one binding: use a smaller --size");
  if (out.max_workgroups_x < groups)
    throw device_unavailable("the Vulkan device " + vk.name() + " dispatches at most " +
                             std::to_string(out.max_workgroups_x) + " workgroups in x, the benchmark " +
                             std::to_string(groups));
  return out;
}

reader::reader(const vulkan::device_context& vk, VkBuffer imported, VkDeviceSize imported_offset, std::size_t bytes,
               std::uint32_t groups, const device_limits& limits)
    : vk_(&vk), bytes_(bytes), groups_(groups), limits_(limits) {
  if (imported == VK_NULL_HANDLE || bytes == 0 || bytes % 16 != 0 || bytes / 16 > std::numeric_limits<std::uint32_t>::max() ||
      groups == 0)
    throw bench_failure("reader: no imported buffer, or a size that is 0, not a multiple of 16 or too large");
  const VkDeviceSize alignment = vk.properties().limits.minStorageBufferOffsetAlignment;
  if (alignment != 0 && imported_offset % alignment != 0)
    throw bench_failure("reader: the imported bytes start at offset " + std::to_string(imported_offset) +
                        " of their VkBuffer, not a multiple of minStorageBufferOffsetAlignment " +
                        std::to_string(alignment));
  timestamp_mask_ = limits.timestamp_valid_bits >= 64 ? ~std::uint64_t{0}
                                                      : (std::uint64_t{1} << limits.timestamp_valid_bits) - 1;
  try {
    create_objects(imported, imported_offset);
  } catch (...) {
    destroy();  // the destructor does not run after a throwing constructor
    throw;
  }
}

reader::~reader() { destroy(); }

VkBuffer reader::make_buffer(VkDeviceSize size, VkBufferUsageFlags usage, VkMemoryPropertyFlags required,
                             VkMemoryPropertyFlags avoided, VkDeviceMemory& memory_out, const char* what,
                             std::uint32_t* type_out) {
  const VolkDeviceTable& fn = vk_->functions();
  const VkDevice d = vk_->device();
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = size;
  bci.usage = usage;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  check_vk(fn.vkCreateBuffer(d, &bci, nullptr, &buffer), std::string("vkCreateBuffer (") + what + ")");
  // Owned by the caller's member from here on (set before anything else can throw).
  VkMemoryRequirements req{};
  fn.vkGetBufferMemoryRequirements(d, buffer, &req);
  auto type = vk_->find_memory_type(req.memoryTypeBits, required, avoided);
  if (!type) {
    fn.vkDestroyBuffer(d, buffer, nullptr);
    throw bench_failure(std::string("no memory type for ") + what + ": " + type.error().message());
  }
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = *type;
  if (const VkResult rc = fn.vkAllocateMemory(d, &mai, nullptr, &memory_out); rc != VK_SUCCESS) {
    fn.vkDestroyBuffer(d, buffer, nullptr);
    memory_out = VK_NULL_HANDLE;
    check_vk(rc, std::string("vkAllocateMemory (") + what + ", " + std::to_string(req.size) + " bytes)");
  }
  if (const VkResult rc = fn.vkBindBufferMemory(d, buffer, memory_out, 0); rc != VK_SUCCESS) {
    fn.vkDestroyBuffer(d, buffer, nullptr);
    fn.vkFreeMemory(d, memory_out, nullptr);
    memory_out = VK_NULL_HANDLE;
    check_vk(rc, std::string("vkBindBufferMemory (") + what + ")");
  }
  if (type_out != nullptr) *type_out = *type;
  return buffer;
}

void reader::create_objects(VkBuffer imported, VkDeviceSize imported_offset) {
  const VolkDeviceTable& fn = vk_->functions();
  const VkDevice d = vk_->device();
  imported_ = imported;
  imported_offset_ = imported_offset;
  const VkDeviceSize sums_bytes = VkDeviceSize{groups_} * sizeof(std::uint32_t);

  // The peer: Vulkan's own device-local memory (not host-visible when the device has such a type).
  own_ = make_buffer(bytes_, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                     VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, own_memory_,
                     "the own buffer", &limits_.own_memory_type);
  limits_.own_memory_flags = vk_->memory_properties().memoryTypes[limits_.own_memory_type].propertyFlags;
  for (std::size_t k = 0; k < memory_count; ++k) {
    sums_[k] = make_buffer(sums_bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                           VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                           VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, sums_memory_[k], "the workgroup sums");
    readback_[k] = make_buffer(sums_bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                               VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0,
                               readback_memory_[k], "the sums' readback");
    void* mapped = nullptr;
    MEMBRIDGE_VULKAN_READ_VK(fn.vkMapMemory(d, readback_memory_[k], 0, VK_WHOLE_SIZE, 0, &mapped));
    readback_mapped_[k] = static_cast<std::uint32_t*>(mapped);
  }

  // The pipeline: shaders/read_reduce.comp, two storage buffers, the element count as a push constant.
  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smi.codeSize = sizeof(membridge::shaders::read_reduce_comp_spv);
  smi.pCode = membridge::shaders::read_reduce_comp_spv;
  MEMBRIDGE_VULKAN_READ_VK(fn.vkCreateShaderModule(d, &smi, nullptr, &shader_));
  std::array<VkDescriptorSetLayoutBinding, 2> bindings{};
  for (std::uint32_t i = 0; i < 2; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dli.bindingCount = static_cast<std::uint32_t>(bindings.size());
  dli.pBindings = bindings.data();
  MEMBRIDGE_VULKAN_READ_VK(fn.vkCreateDescriptorSetLayout(d, &dli, nullptr, &set_layout_));
  const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(std::uint32_t)};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &set_layout_;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &push;
  MEMBRIDGE_VULKAN_READ_VK(fn.vkCreatePipelineLayout(d, &pli, nullptr, &pipeline_layout_));
  VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpi.stage.module = shader_;
  cpi.stage.pName = "main";
  cpi.layout = pipeline_layout_;
  MEMBRIDGE_VULKAN_READ_VK(fn.vkCreateComputePipelines(d, VK_NULL_HANDLE, 1, &cpi, nullptr, &pipeline_));

  // One descriptor set per memory: binding 0 the whole buffer read, binding 1 that memory's sums.
  const VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * memory_count};
  VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.maxSets = memory_count;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &pool_size;
  MEMBRIDGE_VULKAN_READ_VK(fn.vkCreateDescriptorPool(d, &dpi, nullptr, &descriptor_pool_));
  const std::array<VkDescriptorSetLayout, memory_count> layouts{set_layout_, set_layout_};
  VkDescriptorSetAllocateInfo dai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dai.descriptorPool = descriptor_pool_;
  dai.descriptorSetCount = memory_count;
  dai.pSetLayouts = layouts.data();
  MEMBRIDGE_VULKAN_READ_VK(fn.vkAllocateDescriptorSets(d, &dai, sets_.data()));
  for (std::size_t k = 0; k < memory_count; ++k) {
    const bool is_imported = static_cast<memory>(k) == memory::imported;
    const std::array<VkDescriptorBufferInfo, 2> infos{
        VkDescriptorBufferInfo{is_imported ? imported_ : own_, is_imported ? imported_offset_ : 0, bytes_},
        VkDescriptorBufferInfo{sums_[k], 0, sums_bytes}};
    std::array<VkWriteDescriptorSet, 2> writes{};
    for (std::uint32_t i = 0; i < 2; ++i) {
      writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      writes[i].dstSet = sets_[k];
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    fn.vkUpdateDescriptorSets(d, static_cast<std::uint32_t>(writes.size()), writes.data(), 0, nullptr);
  }

  VkQueryPoolCreateInfo qci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qci.queryCount = 2 * memory_count;
  MEMBRIDGE_VULKAN_READ_VK(fn.vkCreateQueryPool(d, &qci, nullptr, &queries_));

  VkCommandPoolCreateInfo cpci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpci.queueFamilyIndex = vk_->graphics_queue().family;
  MEMBRIDGE_VULKAN_READ_VK(fn.vkCreateCommandPool(d, &cpci, nullptr, &command_pool_));
  std::array<VkCommandBuffer, memory_count + 1> cbs{};
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = command_pool_;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = static_cast<std::uint32_t>(cbs.size());
  MEMBRIDGE_VULKAN_READ_VK(fn.vkAllocateCommandBuffers(d, &cai, cbs.data()));
  for (std::size_t k = 0; k < memory_count; ++k) dispatch_cbs_[k] = cbs[k];
  setup_cb_ = cbs[memory_count];
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  MEMBRIDGE_VULKAN_READ_VK(fn.vkCreateFence(d, &fci, nullptr, &fence_));

  for (std::size_t k = 0; k < memory_count; ++k) record(static_cast<memory>(k));
}

void reader::record(memory m) {
  const VolkDeviceTable& fn = vk_->functions();
  const auto k = static_cast<std::size_t>(m);
  const auto first_query = static_cast<std::uint32_t>(2 * k);
  const auto elements = static_cast<std::uint32_t>(bytes_ / 16);
  const VkDeviceSize sums_bytes = VkDeviceSize{groups_} * sizeof(std::uint32_t);
  VkCommandBuffer cb = dispatch_cbs_[k];
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  MEMBRIDGE_VULKAN_READ_VK(fn.vkBeginCommandBuffer(cb, &begin));
  fn.vkCmdResetQueryPool(cb, queries_, first_query, 2);
  fn.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  fn.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_layout_, 0, 1, &sets_[k], 0, nullptr);
  fn.vkCmdPushConstants(cb, pipeline_layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(elements), &elements);
  // The timed part: the dispatch alone (the previous submission finished before this one started).
  fn.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, first_query);
  fn.vkCmdDispatch(cb, groups_, 1, 1);
  fn.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, first_query + 1);
  // Untimed: the sums to the host, then poison them for the next dispatch.
  barrier(fn, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_READ_BIT);
  const VkBufferCopy region{0, 0, sums_bytes};
  fn.vkCmdCopyBuffer(cb, sums_[k], readback_[k], 1, &region);
  barrier(fn, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
          VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT);
  fn.vkCmdFillBuffer(cb, sums_[k], 0, sums_bytes, poison);
  barrier(fn, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  MEMBRIDGE_VULKAN_READ_VK(fn.vkEndCommandBuffer(cb));
}

void reader::submit_and_wait(VkCommandBuffer cb, const std::string& what) {
  const VolkDeviceTable& fn = vk_->functions();
  const VkDevice d = vk_->device();
  MEMBRIDGE_VULKAN_READ_VK(fn.vkResetFences(d, 1, &fence_));
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  check_vk(fn.vkQueueSubmit(vk_->graphics_queue().queue, 1, &si, fence_), "vkQueueSubmit (" + what + ")");
  in_flight_ = true;
  const auto timeout_ns = static_cast<std::uint64_t>(std::chrono::nanoseconds(wait_timeout).count());
  const VkResult rc = fn.vkWaitForFences(d, 1, &fence_, VK_TRUE, timeout_ns);
  if (rc == VK_TIMEOUT)
    throw bench_failure("timeout: " + what + " did not finish within " + std::to_string(wait_timeout.count()) + " s");
  check_vk(rc, "vkWaitForFences (" + what + ")");
  in_flight_ = false;
}

void reader::copy_imported_to_own() {
  const VolkDeviceTable& fn = vk_->functions();
  VkCommandBuffer cb = setup_cb_;
  MEMBRIDGE_VULKAN_READ_VK(fn.vkResetCommandBuffer(cb, 0));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  MEMBRIDGE_VULKAN_READ_VK(fn.vkBeginCommandBuffer(cb, &begin));
  const VkBufferCopy region{imported_offset_, 0, bytes_};
  fn.vkCmdCopyBuffer(cb, imported_, own_, 1, &region);
  for (std::size_t k = 0; k < memory_count; ++k)
    fn.vkCmdFillBuffer(cb, sums_[k], 0, VkDeviceSize{groups_} * sizeof(std::uint32_t), poison);
  barrier(fn, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  MEMBRIDGE_VULKAN_READ_VK(fn.vkEndCommandBuffer(cb));
  submit_and_wait(cb, "copying the imported buffer into the own buffer");
}

dispatch_result reader::dispatch(memory m) {
  const VolkDeviceTable& fn = vk_->functions();
  const auto k = static_cast<std::size_t>(m);
  std::memset(readback_mapped_[k], static_cast<int>(host_poison & 0xFFU), std::size_t{groups_} * sizeof(std::uint32_t));
  submit_and_wait(dispatch_cbs_[k], std::string("the read dispatch over the ") + memory_name(m) + " buffer");
  std::array<std::uint64_t, 2> stamps{};
  MEMBRIDGE_VULKAN_READ_VK(fn.vkGetQueryPoolResults(vk_->device(), queries_, static_cast<std::uint32_t>(2 * k), 2,
                                                    sizeof(stamps), stamps.data(), sizeof(std::uint64_t),
                                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  const std::uint64_t ticks = (stamps[1] - stamps[0]) & timestamp_mask_;
  if (ticks == 0)
    throw bench_failure(std::string("the timestamps around the dispatch over the ") + memory_name(m) +
                        " buffer are equal (" + std::to_string(stamps[0]) + ")");
  return {static_cast<double>(ticks) * limits_.timestamp_period_ns, readback_mapped_[k]};
}

void reader::destroy() noexcept {
  if (vk_ == nullptr || !vk_->valid()) return;
  if (in_flight_) {
    std::fprintf(stderr, "membridge_bench_vulkan_read: a submission did not finish; leaving its Vulkan objects\n");
    return;
  }
  const VolkDeviceTable& fn = vk_->functions();
  const VkDevice d = vk_->device();
  if (fence_ != VK_NULL_HANDLE) fn.vkDestroyFence(d, fence_, nullptr);
  if (command_pool_ != VK_NULL_HANDLE) fn.vkDestroyCommandPool(d, command_pool_, nullptr);  // frees the buffers
  if (queries_ != VK_NULL_HANDLE) fn.vkDestroyQueryPool(d, queries_, nullptr);
  if (descriptor_pool_ != VK_NULL_HANDLE) fn.vkDestroyDescriptorPool(d, descriptor_pool_, nullptr);  // and the sets
  if (pipeline_ != VK_NULL_HANDLE) fn.vkDestroyPipeline(d, pipeline_, nullptr);
  if (pipeline_layout_ != VK_NULL_HANDLE) fn.vkDestroyPipelineLayout(d, pipeline_layout_, nullptr);
  if (set_layout_ != VK_NULL_HANDLE) fn.vkDestroyDescriptorSetLayout(d, set_layout_, nullptr);
  if (shader_ != VK_NULL_HANDLE) fn.vkDestroyShaderModule(d, shader_, nullptr);
  for (std::size_t k = 0; k < memory_count; ++k) {
    if (readback_[k] != VK_NULL_HANDLE) fn.vkDestroyBuffer(d, readback_[k], nullptr);
    if (readback_memory_[k] != VK_NULL_HANDLE) fn.vkFreeMemory(d, readback_memory_[k], nullptr);  // unmaps
    if (sums_[k] != VK_NULL_HANDLE) fn.vkDestroyBuffer(d, sums_[k], nullptr);
    if (sums_memory_[k] != VK_NULL_HANDLE) fn.vkFreeMemory(d, sums_memory_[k], nullptr);
  }
  if (own_ != VK_NULL_HANDLE) fn.vkDestroyBuffer(d, own_, nullptr);
  if (own_memory_ != VK_NULL_HANDLE) fn.vkFreeMemory(d, own_memory_, nullptr);
  vk_ = nullptr;
}

}  // namespace membridge::bench::vulkan_read
