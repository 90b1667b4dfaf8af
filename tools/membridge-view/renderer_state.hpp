// tools/membridge-view/renderer_state.hpp: the renderer's Vulkan objects and how they are made
// (images, render pass, pipelines, buffers, the scratch copy and r32f sampling of a draw item).
// Private to renderer.cpp.
#pragma once

#include "renderer.hpp"
#include "vk_error.hpp"  // samples/common: colour_writes_before_transfer

#include <shaders/view_colour_frag_spv.hpp>
#include <shaders/view_heightfield_vert_spv.hpp>
#include <shaders/view_image_frag_spv.hpp>
#include <shaders/view_image_vert_spv.hpp>
#include <shaders/view_points_vert_spv.hpp>

#include <volk.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace membridge_view {

using membridge::errc;
using membridge::error;
using membridge::result;
using membridge::vulkan::make_vulkan_error;

/// r32f values sampled per buffer and frame for the automatic range.
constexpr std::uint32_t samples_per_item = 256;
/// Buffers with descriptor sets at most.
constexpr std::uint32_t max_items = 64;
constexpr VkFormat colour_format = VK_FORMAT_R8G8B8A8_UNORM;
constexpr VkFormat depth_format = VK_FORMAT_D32_SFLOAT;

/// The push constants every shader reads (shaders/*: draw_constants).
struct push_constants {
  glm::mat4 mvp;
  std::array<float, 4> range;
  std::array<std::uint32_t, 4> info;
  std::array<std::uint32_t, 4> mode;
};
static_assert(sizeof(push_constants) == 112);

/// A buffer or image's memory, allocated for it.
struct allocation {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
};

/// What the renderer keeps per buffer: its descriptor set, scratch buffer and sampled range.
struct item_state {
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkBuffer scratch = VK_NULL_HANDLE;
  allocation scratch_memory;
  std::uint64_t scratch_size = 0;
  std::optional<std::pair<float, float>> sampled;
  std::uint32_t pending_samples = 0;  // samples the frame in flight copies (at index id * samples_per_item)
};


struct renderer::state {
  const membridge::vulkan::device_context* context = nullptr;
  const VolkDeviceTable* fn = nullptr;
  VkDevice device = VK_NULL_HANDLE;
  std::uint32_t width = 0, height = 0;
  colour_map map = colour_map::turbo;
  VkImage colour = VK_NULL_HANDLE, depth = VK_NULL_HANDLE;
  allocation colour_memory, depth_memory;
  VkImageView colour_view = VK_NULL_HANDLE, depth_view = VK_NULL_HANDLE;
  VkRenderPass pass = VK_NULL_HANDLE;
  VkFramebuffer framebuffer = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline points = VK_NULL_HANDLE, heightfield = VK_NULL_HANDLE, image = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkCommandPool commands = VK_NULL_HANDLE;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  bool in_flight = false;
  VkBuffer samples = VK_NULL_HANDLE;
  allocation samples_memory;
  std::map<std::uint32_t, item_state> items;

  ~state() {
    if (device == VK_NULL_HANDLE) return;
    (void)fn->vkDeviceWaitIdle(device);
    for (auto& [id, s] : items) destroy_buffer(s.scratch, s.scratch_memory);
    destroy_buffer(samples, samples_memory);
    if (fence != VK_NULL_HANDLE) fn->vkDestroyFence(device, fence, nullptr);
    if (commands != VK_NULL_HANDLE) fn->vkDestroyCommandPool(device, commands, nullptr);
    if (pool != VK_NULL_HANDLE) fn->vkDestroyDescriptorPool(device, pool, nullptr);
    for (VkPipeline p : {points, heightfield, image})
      if (p != VK_NULL_HANDLE) fn->vkDestroyPipeline(device, p, nullptr);
    if (layout != VK_NULL_HANDLE) fn->vkDestroyPipelineLayout(device, layout, nullptr);
    if (set_layout != VK_NULL_HANDLE) fn->vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
    if (framebuffer != VK_NULL_HANDLE) fn->vkDestroyFramebuffer(device, framebuffer, nullptr);
    if (pass != VK_NULL_HANDLE) fn->vkDestroyRenderPass(device, pass, nullptr);
    for (VkImageView v : {colour_view, depth_view})
      if (v != VK_NULL_HANDLE) fn->vkDestroyImageView(device, v, nullptr);
    for (auto [img, mem] : {std::pair{colour, colour_memory}, std::pair{depth, depth_memory}}) {
      if (img != VK_NULL_HANDLE) fn->vkDestroyImage(device, img, nullptr);
      if (mem.memory != VK_NULL_HANDLE) fn->vkFreeMemory(device, mem.memory, nullptr);
    }
  }

  void destroy_buffer(VkBuffer& buffer, allocation& memory) {
    if (buffer != VK_NULL_HANDLE) fn->vkDestroyBuffer(device, buffer, nullptr);
    if (memory.memory != VK_NULL_HANDLE) fn->vkFreeMemory(device, memory.memory, nullptr);
    buffer = VK_NULL_HANDLE;
    memory = {};
  }

  result<allocation> allocate(const VkMemoryRequirements& req, VkMemoryPropertyFlags flags) {
    MEMBRIDGE_TRY_ASSIGN(const std::uint32_t type, context->find_memory_type(req.memoryTypeBits, flags));
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = type;
    allocation a;
    if (VkResult r = fn->vkAllocateMemory(device, &ai, nullptr, &a.memory); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkAllocateMemory", std::to_string(req.size) + " bytes");
    if (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
      if (VkResult r = fn->vkMapMemory(device, a.memory, 0, VK_WHOLE_SIZE, 0, &a.mapped); r != VK_SUCCESS) {
        fn->vkFreeMemory(device, a.memory, nullptr);
        return make_vulkan_error(r, "vkMapMemory");
      }
    }
    return a;
  }

  result<void> make_buffer(std::uint64_t size, VkBufferUsageFlags usage, VkMemoryPropertyFlags flags, VkBuffer& buffer,
                           allocation& memory) {
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = size;
    bi.usage = usage;
    if (VkResult r = fn->vkCreateBuffer(device, &bi, nullptr, &buffer); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkCreateBuffer", std::to_string(size) + " bytes");
    VkMemoryRequirements req{};
    fn->vkGetBufferMemoryRequirements(device, buffer, &req);
    auto a = allocate(req, flags);
    if (!a) {
      destroy_buffer(buffer, memory);
      return std::move(a).error();
    }
    memory = *a;
    if (VkResult r = fn->vkBindBufferMemory(device, buffer, memory.memory, 0); r != VK_SUCCESS) {
      destroy_buffer(buffer, memory);
      return make_vulkan_error(r, "vkBindBufferMemory");
    }
    return membridge::ok();
  }

  result<void> make_image(VkFormat format, VkImageUsageFlags usage, VkImageAspectFlags aspect, VkImage& img,
                          allocation& memory, VkImageView& view) {
    VkImageCreateInfo ii{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    ii.imageType = VK_IMAGE_TYPE_2D;
    ii.format = format;
    ii.extent = {width, height, 1};
    ii.mipLevels = 1;
    ii.arrayLayers = 1;
    ii.samples = VK_SAMPLE_COUNT_1_BIT;
    ii.tiling = VK_IMAGE_TILING_OPTIMAL;
    ii.usage = usage;
    if (VkResult r = fn->vkCreateImage(device, &ii, nullptr, &img); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkCreateImage");
    VkMemoryRequirements req{};
    fn->vkGetImageMemoryRequirements(device, img, &req);
    MEMBRIDGE_TRY_ASSIGN(memory, allocate(req, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT));
    if (VkResult r = fn->vkBindImageMemory(device, img, memory.memory, 0); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkBindImageMemory");
    VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    vi.image = img;
    vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
    vi.format = format;
    vi.subresourceRange = {aspect, 0, 1, 0, 1};
    if (VkResult r = fn->vkCreateImageView(device, &vi, nullptr, &view); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkCreateImageView");
    return membridge::ok();
  }

  result<void> make_pass() {
    std::array<VkAttachmentDescription, 2> at{};
    at[0].format = colour_format;
    at[0].samples = VK_SAMPLE_COUNT_1_BIT;
    at[0].loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
    at[0].storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    at[0].stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
    at[0].stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    at[0].initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    at[0].finalLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    at[1] = at[0];
    at[1].format = depth_format;
    at[1].storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    at[1].finalLayout = VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
    const VkAttachmentReference colour_ref{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    const VkAttachmentReference depth_ref{1, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL};
    VkSubpassDescription sub{};
    sub.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
    sub.colorAttachmentCount = 1;
    sub.pColorAttachments = &colour_ref;
    sub.pDepthStencilAttachment = &depth_ref;
    std::array<VkSubpassDependency, 2> deps{};
    // The previous frame's blit / read-back of the image, and its depth tests, come before this frame's writes.
    deps[0].srcSubpass = VK_SUBPASS_EXTERNAL;
    deps[0].dstSubpass = 0;
    deps[0].srcStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT;
    deps[0].srcAccessMask = VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
    deps[0].dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT | VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT;
    deps[0].dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT |
                            VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT;
    // This frame's colour writes come before the blit / read-back that follows.
    deps[1] = apps::colour_writes_before_transfer;
    VkRenderPassCreateInfo ri{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
    ri.attachmentCount = 2;
    ri.pAttachments = at.data();
    ri.subpassCount = 1;
    ri.pSubpasses = &sub;
    ri.dependencyCount = 2;
    ri.pDependencies = deps.data();
    if (VkResult r = fn->vkCreateRenderPass(device, &ri, nullptr, &pass); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkCreateRenderPass");
    const std::array<VkImageView, 2> views{colour_view, depth_view};
    VkFramebufferCreateInfo fi{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
    fi.renderPass = pass;
    fi.attachmentCount = 2;
    fi.pAttachments = views.data();
    fi.width = width;
    fi.height = height;
    fi.layers = 1;
    if (VkResult r = fn->vkCreateFramebuffer(device, &fi, nullptr, &framebuffer); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkCreateFramebuffer");
    return membridge::ok();
  }

  template <std::size_t N>
  result<VkShaderModule> module(const std::uint32_t (&code)[N]) {
    VkShaderModuleCreateInfo si{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    si.codeSize = sizeof code;
    si.pCode = code;
    VkShaderModule m = VK_NULL_HANDLE;
    if (VkResult r = fn->vkCreateShaderModule(device, &si, nullptr, &m); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkCreateShaderModule");
    return m;
  }

  result<VkPipeline> pipeline(VkShaderModule vert, VkShaderModule frag, VkPrimitiveTopology topology, bool depth_test) {
    std::array<VkPipelineShaderStageCreateInfo, 2> stages{};
    stages[0] = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_VERTEX_BIT, vert, "main", nullptr};
    stages[1] = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_FRAGMENT_BIT, frag, "main", nullptr};
    VkPipelineVertexInputStateCreateInfo vi{VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
    VkPipelineInputAssemblyStateCreateInfo ia{VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
    ia.topology = topology;
    VkPipelineViewportStateCreateInfo vp{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
    vp.viewportCount = 1;
    vp.scissorCount = 1;
    VkPipelineRasterizationStateCreateInfo rs{VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
    rs.polygonMode = VK_POLYGON_MODE_FILL;
    rs.cullMode = VK_CULL_MODE_NONE;
    rs.frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE;
    rs.lineWidth = 1.0f;
    VkPipelineMultisampleStateCreateInfo ms{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
    ms.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
    VkPipelineDepthStencilStateCreateInfo ds{VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO};
    ds.depthTestEnable = depth_test ? VK_TRUE : VK_FALSE;
    ds.depthWriteEnable = depth_test ? VK_TRUE : VK_FALSE;
    ds.depthCompareOp = VK_COMPARE_OP_LESS_OR_EQUAL;
    VkPipelineColorBlendAttachmentState blend{};
    blend.colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT | VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT;
    VkPipelineColorBlendStateCreateInfo cb_state{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
    cb_state.attachmentCount = 1;
    cb_state.pAttachments = &blend;
    const std::array<VkDynamicState, 2> dyn{VK_DYNAMIC_STATE_VIEWPORT, VK_DYNAMIC_STATE_SCISSOR};
    VkPipelineDynamicStateCreateInfo dy{VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO};
    dy.dynamicStateCount = 2;
    dy.pDynamicStates = dyn.data();
    VkGraphicsPipelineCreateInfo pi{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
    pi.stageCount = 2;
    pi.pStages = stages.data();
    pi.pVertexInputState = &vi;
    pi.pInputAssemblyState = &ia;
    pi.pViewportState = &vp;
    pi.pRasterizationState = &rs;
    pi.pMultisampleState = &ms;
    pi.pDepthStencilState = &ds;
    pi.pColorBlendState = &cb_state;
    pi.pDynamicState = &dy;
    pi.layout = layout;
    pi.renderPass = pass;
    VkPipeline p = VK_NULL_HANDLE;
    if (VkResult r = fn->vkCreateGraphicsPipelines(device, VK_NULL_HANDLE, 1, &pi, nullptr, &p); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkCreateGraphicsPipelines");
    return p;
  }

  result<void> make_pipelines() {
    VkDescriptorSetLayoutBinding b{0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                                   VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    li.bindingCount = 1;
    li.pBindings = &b;
    if (VkResult r = fn->vkCreateDescriptorSetLayout(device, &li, nullptr, &set_layout); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkCreateDescriptorSetLayout");
    const VkPushConstantRange pcr{VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof(push_constants)};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set_layout;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &pcr;
    if (VkResult r = fn->vkCreatePipelineLayout(device, &pl, nullptr, &layout); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkCreatePipelineLayout");
    std::array<VkShaderModule, 5> m{};
    const auto destroy_modules = [&] {
      for (VkShaderModule s : m)
        if (s != VK_NULL_HANDLE) fn->vkDestroyShaderModule(device, s, nullptr);
    };
    auto made = [&]() -> result<void> {
      MEMBRIDGE_TRY_ASSIGN(m[0], module(membridge::shaders::view_points_vert_spv));
      MEMBRIDGE_TRY_ASSIGN(m[1], module(membridge::shaders::view_heightfield_vert_spv));
      MEMBRIDGE_TRY_ASSIGN(m[2], module(membridge::shaders::view_colour_frag_spv));
      MEMBRIDGE_TRY_ASSIGN(m[3], module(membridge::shaders::view_image_vert_spv));
      MEMBRIDGE_TRY_ASSIGN(m[4], module(membridge::shaders::view_image_frag_spv));
      MEMBRIDGE_TRY_ASSIGN(points, pipeline(m[0], m[2], VK_PRIMITIVE_TOPOLOGY_POINT_LIST, true));
      MEMBRIDGE_TRY_ASSIGN(heightfield, pipeline(m[1], m[2], VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST, true));
      MEMBRIDGE_TRY_ASSIGN(image, pipeline(m[3], m[4], VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST, false));
      return membridge::ok();
    }();
    destroy_modules();
    return made;
  }

  result<void> make_frame_objects() {
    const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, max_items};
    VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pi.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
    pi.maxSets = max_items;
    pi.poolSizeCount = 1;
    pi.pPoolSizes = &size;
    if (VkResult r = fn->vkCreateDescriptorPool(device, &pi, nullptr, &pool); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkCreateDescriptorPool");
    VkCommandPoolCreateInfo ci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    ci.queueFamilyIndex = context->graphics_queue().family;
    if (VkResult r = fn->vkCreateCommandPool(device, &ci, nullptr, &commands); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = commands;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    if (VkResult r = fn->vkAllocateCommandBuffers(device, &ai, &cb); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (VkResult r = fn->vkCreateFence(device, &fi, nullptr, &fence); r != VK_SUCCESS)
      return make_vulkan_error(r, "vkCreateFence");
    return make_buffer(std::uint64_t{max_items} * samples_per_item * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, samples,
                       samples_memory);
  }

  /// The buffer and offset item `it` is read from this frame (recording the scratch copy if needed).
  result<std::pair<VkBuffer, VkDeviceSize>> source_of(const draw_item& it, item_state& s) {
    const VkDeviceSize align = std::max<VkDeviceSize>(context->properties().limits.minStorageBufferOffsetAlignment, 4);
    for (const auto& seg : it.segments) {
      if (it.offset >= seg.offset && it.offset + it.bytes <= seg.offset + seg.size) {
        const VkDeviceSize at = seg.buffer_offset + (it.offset - seg.offset);
        if (at % align == 0) return std::pair{seg.buffer, at};
      }
    }
    // Spans segments (per-chunk views) or is misaligned: copy the slot into the scratch buffer.
    if (s.scratch_size < it.bytes) {
      destroy_buffer(s.scratch, s.scratch_memory);
      s.scratch_size = 0;
      MEMBRIDGE_TRY(make_buffer(it.bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                              VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, s.scratch, s.scratch_memory)
                        .with_context("making the scratch buffer of a slot that spans chunks"));
      s.scratch_size = it.bytes;
    }
    for (const auto& seg : it.segments) {
      const std::uint64_t from = std::max<std::uint64_t>(it.offset, seg.offset);
      const std::uint64_t to = std::min<std::uint64_t>(it.offset + it.bytes, seg.offset + seg.size);
      if (from >= to) continue;
      fn->vkCmdCopyBuffer(cb, seg.buffer, s.scratch, 1,
                          std::array{VkBufferCopy{seg.buffer_offset + (from - seg.offset), from - it.offset, to - from}}.data());
    }
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    fn->vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, read_stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
    return std::pair{s.scratch, VkDeviceSize{0}};
  }

  result<item_state*> prepare(const draw_item& it) {
    if (it.id >= max_items)
      return error(errc::invalid_argument, "membridge-view", "more than " + std::to_string(max_items) + " buffers");
    if (it.bytes > context->properties().limits.maxStorageBufferRange)
      return error(errc::unsupported, "membridge-view",
                   std::to_string(it.bytes) + " bytes per slot, more than this device binds as one storage buffer (" +
                       std::to_string(context->properties().limits.maxStorageBufferRange) + ")");
    item_state& s = items[it.id];
    if (s.set == VK_NULL_HANDLE) {
      VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
      ai.descriptorPool = pool;
      ai.descriptorSetCount = 1;
      ai.pSetLayouts = &set_layout;
      if (VkResult r = fn->vkAllocateDescriptorSets(device, &ai, &s.set); r != VK_SUCCESS)
        return make_vulkan_error(r, "vkAllocateDescriptorSets");
    }
    MEMBRIDGE_TRY_ASSIGN(const auto source, source_of(it, s));
    const VkDescriptorBufferInfo bi{source.first, source.second, it.bytes};
    VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = s.set;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &bi;
    fn->vkUpdateDescriptorSets(device, 1, &w, 0, nullptr);
    s.pending_samples = 0;
    if (it.sample_range && it.count > 0) record_samples(it, s, source.first, source.second);
    return &s;
  }

  /// Copies up to samples_per_item r32f values of the slot, evenly spread, into the samples buffer.
  void record_samples(const draw_item& it, item_state& s, VkBuffer source, VkDeviceSize base) {
    const std::uint64_t n = std::min<std::uint64_t>(it.count, samples_per_item);
    std::vector<VkBufferCopy> regions(n);
    const std::uint64_t stride = it.layout.kind == membridge::ipc::layout_kind::points ? it.layout.stride : 4;
    const std::uint64_t field = it.layout.kind == membridge::ipc::layout_kind::points ? it.layout.colour_offset() : 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      // Evenly spread, the first and the last element included.
      const std::uint64_t element = n == 1 ? 0 : i * (it.count - 1) / (n - 1);
      regions[i] = VkBufferCopy{base + element * stride + field, (std::uint64_t{it.id} * samples_per_item + i) * 4, 4};
    }
    fn->vkCmdCopyBuffer(cb, source, samples, static_cast<std::uint32_t>(n), regions.data());
    s.pending_samples = static_cast<std::uint32_t>(n);
  }
};

}  // namespace membridge_view
