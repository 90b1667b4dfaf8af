// The offscreen particle renderer: per-slot images and command buffers; for points a render pass and a
// point-list pipeline, for splat two compute pipelines (accumulate with atomics, resolve), descriptor
// sets and accumulation buffers; and blocking helpers for uploads and read-back. Every Vulkan call goes
// through the caller's VolkDeviceTable or a function loaded with the caller's vkGetInstanceProcAddr.
#include "particle_renderer.hpp"

#include "vk_error.hpp"

#include <membridge/core/log.hpp>

#include <shaders/particles_frag_spv.hpp>
#include <shaders/particles_resolve_comp_spv.hpp>
#include <shaders/particles_splat_comp_spv.hpp>
#include <shaders/particles_vert_spv.hpp>

#include <glm/ext/matrix_clip_space.hpp>
#include <glm/ext/matrix_transform.hpp>
#include <glm/ext/vector_uint4.hpp>
#include <glm/trigonometric.hpp>
#include <glm/vec4.hpp>
#include <volk.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>

namespace particles {

namespace {

using membridge::errc;
using membridge::error;
using membridge::result;

constexpr std::uint64_t frame_timeout_ns = 10'000'000'000ull;
constexpr std::uint32_t max_frame_slots = 8;

/// The vertex shader's push constants (shaders/particles.vert).
struct push_constants {
  glm::mat4 view_proj;
  glm::vec4 style;  // point size, brightness, hot speed, unused
};
static_assert(sizeof(push_constants) == 80, "push constants must match shaders/particles.vert");

/// The compute shaders' push constants (shaders/particles_splat.comp and particles_resolve.comp).
struct splat_push_constants {
  glm::mat4 view_proj;
  glm::vec4 style;   // point size, brightness, hot speed, unused
  glm::vec4 clear;   // background colour
  glm::uvec4 extent; // width, height, particle count, unused
};
static_assert(sizeof(splat_push_constants) == 112, "push constants must match shaders/particles_*.comp");

/// particles_splat.comp's workgroup width and particles_resolve.comp's tile size.
constexpr std::uint32_t splat_group_size = 256;
constexpr std::uint32_t resolve_tile = 8;
/// The most pixels one splatted particle may cover per side (renderer_options::point_size).
constexpr float max_splat_point_size = 64.0f;

/// A buffer with its own memory, optionally mapped.
struct buffer_allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  std::uint8_t* mapped = nullptr;
  bool coherent = true;
};

/// What one frame slot owns.
struct frame_slot {
  VkImage image = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkImageView view = VK_NULL_HANDLE;
  VkFramebuffer framebuffer = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;  // one pool per slot, reset whole each frame
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  bool recorded = false;   // recorded since its last submit
  bool in_flight = false;  // submitted and its fence not reset since
  // splat only
  buffer_allocation accumulation;          // width * height * 3 uint32 channel sums
  VkDescriptorSet set = VK_NULL_HANDLE;    // 0: particles, 1: accumulation, 2: the image (GENERAL)
  VkBuffer bound_buffer = VK_NULL_HANDLE;  // what binding 0 refers to (VK_NULL_HANDLE: nothing yet)
  VkDeviceSize bound_offset = 0;
  std::uint32_t bound_count = 0;
};

std::uint8_t to_unorm8(float v) noexcept {
  return static_cast<std::uint8_t>(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f));
}

template <class F>
F load_instance_function(const renderer_device& d, const char* name) noexcept {
  return reinterpret_cast<F>(d.get_instance_proc_addr(d.instance, name));
}

}  // namespace

struct particle_renderer::state {
  renderer_device device;
  const VolkDeviceTable* vk = nullptr;
  renderer_options options;
  VkPhysicalDeviceMemoryProperties memory_properties{};
  // points
  VkRenderPass render_pass = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  // splat
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout splat_layout = VK_NULL_HANDLE;
  VkPipeline splat_pipeline = VK_NULL_HANDLE;
  VkPipeline resolve_pipeline = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
  VkDeviceSize storage_offset_alignment = 1;           // minStorageBufferOffsetAlignment
  VkDeviceSize max_storage_range = 0;                  // maxStorageBufferRange
  std::array<std::uint32_t, 2> max_group_count{};      // maxComputeWorkGroupCount[0], [1]
  std::vector<frame_slot> slots;
  VkCommandPool transfer_pool = VK_NULL_HANDLE;
  VkCommandBuffer transfer_commands = VK_NULL_HANDLE;
  VkFence transfer_fence = VK_NULL_HANDLE;
  bool transfer_in_flight = false;
  buffer_allocation readback;
  buffer_allocation staging;
  buffer_allocation vertices;
  std::uint32_t uploaded = 0;
  std::optional<std::uint32_t> last_submitted;

  state(const renderer_device& d, const renderer_options& o) : device(d), vk(d.functions), options(o) {}
  state(const state&) = delete;
  state& operator=(const state&) = delete;
  ~state();

  result<std::uint32_t> memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                                    VkMemoryPropertyFlags preferred) const;
  result<buffer_allocation> make_buffer(VkDeviceSize size, VkBufferUsageFlags usage, VkMemoryPropertyFlags required,
                                        VkMemoryPropertyFlags preferred, const char* what);
  void destroy_buffer(buffer_allocation& b) noexcept;
  result<void> make_render_pass();
  result<void> make_pipeline();
  result<void> make_splat_pipelines();
  result<void> make_descriptors();
  [[nodiscard]] VkPipelineStageFlags particle_stages() const noexcept {
    return options.method == render_method::splat ? VkPipelineStageFlags{VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT}
                                                  : VkPipelineStageFlags{VK_PIPELINE_STAGE_VERTEX_INPUT_BIT};
  }
  [[nodiscard]] VkAccessFlags particle_access() const noexcept {
    return options.method == render_method::splat ? VkAccessFlags{VK_ACCESS_SHADER_READ_BIT}
                                                  : VkAccessFlags{VK_ACCESS_VERTEX_ATTRIBUTE_READ_BIT};
  }
  void record_splat(VkCommandBuffer cmd, const frame_slot& f, std::uint32_t count,
                    const glm::mat4& view_proj) const noexcept;
  result<void> make_commands(VkCommandPool& pool, VkCommandBuffer& commands);
  result<void> make_slot(frame_slot& slot);
  result<void> wait_fence(VkFence fence, std::uint64_t timeout_ns, const char* what) const;
  result<void> wait_frames(std::uint64_t timeout_ns);
  template <class Fill>
  result<void> one_shot(const char* what, Fill&& fill);
};

// ------------------------------------------------------------------------------------ state helpers ---

particle_renderer::state::~state() {
  const auto warn = [](const result<void>& r) {
    if (!r) membridge::log(membridge::log_level::warning, "particle_renderer: " + r.error().message());
  };
  for (const frame_slot& slot : slots)
    if (slot.in_flight) warn(wait_fence(slot.fence, frame_timeout_ns, "destroying the renderer"));
  if (transfer_in_flight) warn(wait_fence(transfer_fence, frame_timeout_ns, "destroying the renderer"));
  const VkDevice d = device.device;
  for (frame_slot& slot : slots) {
    vk->vkDestroyFramebuffer(d, slot.framebuffer, nullptr);
    vk->vkDestroyImageView(d, slot.view, nullptr);
    vk->vkDestroyImage(d, slot.image, nullptr);
    vk->vkFreeMemory(d, slot.memory, nullptr);
    vk->vkDestroyFence(d, slot.fence, nullptr);
    vk->vkDestroyCommandPool(d, slot.pool, nullptr);  // frees its command buffer
    destroy_buffer(slot.accumulation);
  }
  vk->vkDestroyDescriptorPool(d, descriptor_pool, nullptr);  // frees the sets
  vk->vkDestroyPipeline(d, splat_pipeline, nullptr);
  vk->vkDestroyPipeline(d, resolve_pipeline, nullptr);
  vk->vkDestroyPipelineLayout(d, splat_layout, nullptr);
  vk->vkDestroyDescriptorSetLayout(d, set_layout, nullptr);
  vk->vkDestroyFence(d, transfer_fence, nullptr);
  vk->vkDestroyCommandPool(d, transfer_pool, nullptr);
  destroy_buffer(readback);
  destroy_buffer(staging);
  destroy_buffer(vertices);
  vk->vkDestroyPipeline(d, pipeline, nullptr);
  vk->vkDestroyPipelineLayout(d, layout, nullptr);
  vk->vkDestroyRenderPass(d, render_pass, nullptr);
}

result<std::uint32_t> particle_renderer::state::memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                                                            VkMemoryPropertyFlags preferred) const {
  std::optional<std::uint32_t> fallback;
  for (std::uint32_t i = 0; i < memory_properties.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags flags = memory_properties.memoryTypes[i].propertyFlags;
    if ((type_bits & (1u << i)) == 0 || (flags & required) != required) continue;
    if ((flags & preferred) == preferred) return i;
    if (!fallback) fallback = i;
  }
  if (fallback) return *fallback;
  return error(errc::unsupported, "particle_renderer::memory_type",
               "no memory type with property flags " + std::to_string(required) + " among types " +
                   std::to_string(type_bits));
}

result<buffer_allocation> particle_renderer::state::make_buffer(VkDeviceSize size, VkBufferUsageFlags usage,
                                                                VkMemoryPropertyFlags required,
                                                                VkMemoryPropertyFlags preferred, const char* what) {
  const VkDevice d = device.device;
  const std::string context = std::string("creating the ") + what + " (" + std::to_string(size) + " bytes)";
  buffer_allocation b;
  b.size = size;
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = size;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (const VkResult rc = vk->vkCreateBuffer(d, &info, nullptr, &b.buffer); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateBuffer", context);
  VkMemoryRequirements needs{};
  vk->vkGetBufferMemoryRequirements(d, b.buffer, &needs);
  auto type = memory_type(needs.memoryTypeBits, required, preferred);
  if (!type) {
    destroy_buffer(b);
    return std::move(type).error().add_context(context);
  }
  b.coherent = (memory_properties.memoryTypes[*type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.allocationSize = needs.size;
  alloc.memoryTypeIndex = *type;
  VkResult rc = vk->vkAllocateMemory(d, &alloc, nullptr, &b.memory);
  if (rc == VK_SUCCESS) rc = vk->vkBindBufferMemory(d, b.buffer, b.memory, 0);
  if (rc != VK_SUCCESS) {
    destroy_buffer(b);
    return vk_error(rc, "vkAllocateMemory/vkBindBufferMemory", context);
  }
  if ((required & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0) {
    void* p = nullptr;
    if (rc = vk->vkMapMemory(d, b.memory, 0, VK_WHOLE_SIZE, 0, &p); rc != VK_SUCCESS) {
      destroy_buffer(b);
      return vk_error(rc, "vkMapMemory", context);
    }
    b.mapped = static_cast<std::uint8_t*>(p);
  }
  return b;
}

void particle_renderer::state::destroy_buffer(buffer_allocation& b) noexcept {
  vk->vkDestroyBuffer(device.device, b.buffer, nullptr);
  vk->vkFreeMemory(device.device, b.memory, nullptr);  // unmaps implicitly
  b = {};
}

result<void> particle_renderer::state::make_render_pass() {
  VkAttachmentDescription colour{};
  colour.format = colour_format;
  colour.samples = VK_SAMPLE_COUNT_1_BIT;
  colour.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
  colour.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
  colour.stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
  colour.stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
  colour.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  colour.finalLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;  // ready for read_back or a caller's blit
  const VkAttachmentReference ref{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
  VkSubpassDescription subpass{};
  subpass.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
  subpass.colorAttachmentCount = 1;
  subpass.pColorAttachments = &ref;
  // Before: earlier frames and transfer reads (read_back, blits) of this image finish before the clear.
  // After: the frame's writes are visible to transfer reads in later submissions.
  VkSubpassDependency deps[2]{};
  deps[0].srcSubpass = VK_SUBPASS_EXTERNAL;
  deps[0].dstSubpass = 0;
  deps[0].srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  deps[0].srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  deps[0].dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  deps[0].dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  deps[1].srcSubpass = 0;
  deps[1].dstSubpass = VK_SUBPASS_EXTERNAL;
  deps[1].srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  deps[1].srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  deps[1].dstStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT;
  deps[1].dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
  VkRenderPassCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO;
  info.attachmentCount = 1;
  info.pAttachments = &colour;
  info.subpassCount = 1;
  info.pSubpasses = &subpass;
  info.dependencyCount = 2;
  info.pDependencies = deps;
  if (const VkResult rc = vk->vkCreateRenderPass(device.device, &info, nullptr, &render_pass); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateRenderPass", "creating the particle render pass");
  return membridge::ok();
}

result<void> particle_renderer::state::make_pipeline() {
  const VkDevice d = device.device;
  VkPushConstantRange push{VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof(push_constants)};
  VkPipelineLayoutCreateInfo layout_info{};
  layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layout_info.pushConstantRangeCount = 1;
  layout_info.pPushConstantRanges = &push;
  if (const VkResult rc = vk->vkCreatePipelineLayout(d, &layout_info, nullptr, &layout); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreatePipelineLayout", "creating the particle pipeline");

  VkShaderModule modules[2]{};
  const std::pair<const std::uint32_t*, std::size_t> code[2] = {
      {membridge::shaders::particles_vert_spv, sizeof(membridge::shaders::particles_vert_spv)},
      {membridge::shaders::particles_frag_spv, sizeof(membridge::shaders::particles_frag_spv)}};
  const auto destroy_modules = [&] {
    for (VkShaderModule m : modules) vk->vkDestroyShaderModule(d, m, nullptr);
  };
  for (int i = 0; i < 2; ++i) {
    VkShaderModuleCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    info.pCode = code[i].first;
    info.codeSize = code[i].second;
    if (const VkResult rc = vk->vkCreateShaderModule(d, &info, nullptr, &modules[i]); rc != VK_SUCCESS) {
      destroy_modules();
      return vk_error(rc, "vkCreateShaderModule", i == 0 ? "particles.vert" : "particles.frag");
    }
  }
  VkPipelineShaderStageCreateInfo stages[2]{};
  for (int i = 0; i < 2; ++i) {
    stages[i].sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    stages[i].stage = i == 0 ? VK_SHADER_STAGE_VERTEX_BIT : VK_SHADER_STAGE_FRAGMENT_BIT;
    stages[i].module = modules[i];
    stages[i].pName = "main";
  }
  const VkVertexInputBindingDescription binding{0, sizeof(particle), VK_VERTEX_INPUT_RATE_VERTEX};
  const VkVertexInputAttributeDescription attributes[2] = {
      {0, 0, VK_FORMAT_R32G32B32A32_SFLOAT, static_cast<std::uint32_t>(offsetof(particle, position))},
      {1, 0, VK_FORMAT_R32G32B32A32_SFLOAT, static_cast<std::uint32_t>(offsetof(particle, velocity))}};
  VkPipelineVertexInputStateCreateInfo vertex_input{};
  vertex_input.sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO;
  vertex_input.vertexBindingDescriptionCount = 1;
  vertex_input.pVertexBindingDescriptions = &binding;
  vertex_input.vertexAttributeDescriptionCount = 2;
  vertex_input.pVertexAttributeDescriptions = attributes;
  VkPipelineInputAssemblyStateCreateInfo assembly{};
  assembly.sType = VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO;
  assembly.topology = VK_PRIMITIVE_TOPOLOGY_POINT_LIST;
  const VkViewport viewport{0.0f, 0.0f, static_cast<float>(options.width), static_cast<float>(options.height), 0.0f, 1.0f};
  const VkRect2D scissor{{0, 0}, {options.width, options.height}};
  VkPipelineViewportStateCreateInfo viewport_state{};
  viewport_state.sType = VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO;
  viewport_state.viewportCount = 1;
  viewport_state.pViewports = &viewport;
  viewport_state.scissorCount = 1;
  viewport_state.pScissors = &scissor;
  VkPipelineRasterizationStateCreateInfo raster{};
  raster.sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO;
  raster.polygonMode = VK_POLYGON_MODE_FILL;
  raster.cullMode = VK_CULL_MODE_NONE;
  raster.frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE;
  raster.lineWidth = 1.0f;
  VkPipelineMultisampleStateCreateInfo multisample{};
  multisample.sType = VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO;
  multisample.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
  VkPipelineColorBlendAttachmentState blend{};  // additive: dense regions glow
  blend.blendEnable = VK_TRUE;
  blend.srcColorBlendFactor = VK_BLEND_FACTOR_ONE;
  blend.dstColorBlendFactor = VK_BLEND_FACTOR_ONE;
  blend.colorBlendOp = VK_BLEND_OP_ADD;
  blend.srcAlphaBlendFactor = VK_BLEND_FACTOR_ZERO;
  blend.dstAlphaBlendFactor = VK_BLEND_FACTOR_ONE;
  blend.alphaBlendOp = VK_BLEND_OP_ADD;
  blend.colorWriteMask =
      VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT | VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT;
  VkPipelineColorBlendStateCreateInfo blend_state{};
  blend_state.sType = VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO;
  blend_state.attachmentCount = 1;
  blend_state.pAttachments = &blend;
  VkGraphicsPipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO;
  info.stageCount = 2;
  info.pStages = stages;
  info.pVertexInputState = &vertex_input;
  info.pInputAssemblyState = &assembly;
  info.pViewportState = &viewport_state;
  info.pRasterizationState = &raster;
  info.pMultisampleState = &multisample;
  info.pColorBlendState = &blend_state;
  info.layout = layout;
  info.renderPass = render_pass;
  info.subpass = 0;
  const VkResult rc = vk->vkCreateGraphicsPipelines(d, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline);
  destroy_modules();
  if (rc != VK_SUCCESS) return vk_error(rc, "vkCreateGraphicsPipelines", "creating the particle pipeline");
  return membridge::ok();
}

result<void> particle_renderer::state::make_splat_pipelines() {
  const VkDevice d = device.device;
  // One set layout for both passes: 0 particles, 1 accumulation, 2 the colour image.
  VkDescriptorSetLayoutBinding bindings[3]{};
  for (std::uint32_t i = 0; i < 3; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = i == 2 ? VK_DESCRIPTOR_TYPE_STORAGE_IMAGE : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set_info{};
  set_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  set_info.bindingCount = 3;
  set_info.pBindings = bindings;
  if (const VkResult rc = vk->vkCreateDescriptorSetLayout(d, &set_info, nullptr, &set_layout); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateDescriptorSetLayout", "creating the splat pipelines");
  const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(splat_push_constants)};
  VkPipelineLayoutCreateInfo layout_info{};
  layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &set_layout;
  layout_info.pushConstantRangeCount = 1;
  layout_info.pPushConstantRanges = &push;
  if (const VkResult rc = vk->vkCreatePipelineLayout(d, &layout_info, nullptr, &splat_layout); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreatePipelineLayout", "creating the splat pipelines");

  const struct {
    const std::uint32_t* code;
    std::size_t size;
    const char* name;
    VkPipeline* pipeline;
  } shaders[2] = {
      {membridge::shaders::particles_splat_comp_spv, sizeof(membridge::shaders::particles_splat_comp_spv),
       "particles_splat.comp", &splat_pipeline},
      {membridge::shaders::particles_resolve_comp_spv, sizeof(membridge::shaders::particles_resolve_comp_spv),
       "particles_resolve.comp", &resolve_pipeline}};
  for (const auto& shader : shaders) {
    VkShaderModuleCreateInfo module_info{};
    module_info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    module_info.pCode = shader.code;
    module_info.codeSize = shader.size;
    VkShaderModule module = VK_NULL_HANDLE;
    if (const VkResult rc = vk->vkCreateShaderModule(d, &module_info, nullptr, &module); rc != VK_SUCCESS)
      return vk_error(rc, "vkCreateShaderModule", shader.name);
    VkComputePipelineCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module;
    info.stage.pName = "main";
    info.layout = splat_layout;
    const VkResult rc = vk->vkCreateComputePipelines(d, VK_NULL_HANDLE, 1, &info, nullptr, shader.pipeline);
    vk->vkDestroyShaderModule(d, module, nullptr);
    if (rc != VK_SUCCESS) return vk_error(rc, "vkCreateComputePipelines", shader.name);
  }
  return membridge::ok();
}

result<void> particle_renderer::state::make_descriptors() {
  const VkDevice d = device.device;
  const auto count = static_cast<std::uint32_t>(slots.size());
  const VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * count},
                                         {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, count}};
  VkDescriptorPoolCreateInfo pool_info{};
  pool_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  pool_info.maxSets = count;
  pool_info.poolSizeCount = 2;
  pool_info.pPoolSizes = sizes;
  if (const VkResult rc = vk->vkCreateDescriptorPool(d, &pool_info, nullptr, &descriptor_pool); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateDescriptorPool", "the splat descriptor sets");
  for (frame_slot& slot : slots) {
    VkDescriptorSetAllocateInfo alloc{};
    alloc.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    alloc.descriptorPool = descriptor_pool;
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &set_layout;
    if (const VkResult rc = vk->vkAllocateDescriptorSets(d, &alloc, &slot.set); rc != VK_SUCCESS)
      return vk_error(rc, "vkAllocateDescriptorSets", "the splat descriptor sets");
    // Bindings 1 and 2 never change; binding 0 (the particles) is written by record().
    const VkDescriptorBufferInfo accumulation{slot.accumulation.buffer, 0, VK_WHOLE_SIZE};
    const VkDescriptorImageInfo image{VK_NULL_HANDLE, slot.view, VK_IMAGE_LAYOUT_GENERAL};
    VkWriteDescriptorSet writes[2]{};
    for (VkWriteDescriptorSet& w : writes) {
      w.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      w.dstSet = slot.set;
      w.descriptorCount = 1;
    }
    writes[0].dstBinding = 1;
    writes[0].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[0].pBufferInfo = &accumulation;
    writes[1].dstBinding = 2;
    writes[1].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
    writes[1].pImageInfo = &image;
    vk->vkUpdateDescriptorSets(d, 2, writes, 0, nullptr);
  }
  return membridge::ok();
}

result<void> particle_renderer::state::make_commands(VkCommandPool& pool, VkCommandBuffer& commands) {
  VkCommandPoolCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  info.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  info.queueFamilyIndex = device.queue_family;
  if (const VkResult rc = vk->vkCreateCommandPool(device.device, &info, nullptr, &pool); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateCommandPool", "queue family " + std::to_string(device.queue_family));
  VkCommandBufferAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  alloc.commandPool = pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  if (const VkResult rc = vk->vkAllocateCommandBuffers(device.device, &alloc, &commands); rc != VK_SUCCESS)
    return vk_error(rc, "vkAllocateCommandBuffers", "the renderer's command buffers");
  return membridge::ok();
}

result<void> particle_renderer::state::make_slot(frame_slot& slot) {
  MEMBRIDGE_TRY(make_commands(slot.pool, slot.commands));
  const VkDevice d = device.device;
  const std::string context = "creating a " + std::to_string(options.width) + "x" + std::to_string(options.height) +
                              " colour image for a frame slot";
  VkImageCreateInfo image{};
  image.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO;
  image.imageType = VK_IMAGE_TYPE_2D;
  image.format = colour_format;
  image.extent = {options.width, options.height, 1};
  image.mipLevels = 1;
  image.arrayLayers = 1;
  image.samples = VK_SAMPLE_COUNT_1_BIT;
  image.tiling = VK_IMAGE_TILING_OPTIMAL;
  // splat writes the image from a compute shader; points draws into it as a colour attachment.
  image.usage = (options.method == render_method::splat ? VK_IMAGE_USAGE_STORAGE_BIT
                                                        : VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT) |
                VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
  image.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  image.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  if (const VkResult rc = vk->vkCreateImage(d, &image, nullptr, &slot.image); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateImage", context);
  VkMemoryRequirements needs{};
  vk->vkGetImageMemoryRequirements(d, slot.image, &needs);
  MEMBRIDGE_TRY_ASSIGN(const std::uint32_t type,
                       memory_type(needs.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0).with_context(context));
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.allocationSize = needs.size;
  alloc.memoryTypeIndex = type;
  if (const VkResult rc = vk->vkAllocateMemory(d, &alloc, nullptr, &slot.memory); rc != VK_SUCCESS)
    return vk_error(rc, "vkAllocateMemory", context);
  if (const VkResult rc = vk->vkBindImageMemory(d, slot.image, slot.memory, 0); rc != VK_SUCCESS)
    return vk_error(rc, "vkBindImageMemory", context);
  VkImageViewCreateInfo view{};
  view.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO;
  view.image = slot.image;
  view.viewType = VK_IMAGE_VIEW_TYPE_2D;
  view.format = colour_format;
  view.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  if (const VkResult rc = vk->vkCreateImageView(d, &view, nullptr, &slot.view); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateImageView", context);
  VkFenceCreateInfo fence{};
  fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  if (const VkResult rc = vk->vkCreateFence(d, &fence, nullptr, &slot.fence); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateFence", context);
  if (options.method == render_method::splat) {
    MEMBRIDGE_TRY_ASSIGN(slot.accumulation,
                         make_buffer(VkDeviceSize{options.width} * options.height * 3 * sizeof(std::uint32_t),
                                     VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                     VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, "splat accumulation buffer"));
    return membridge::ok();
  }
  VkFramebufferCreateInfo fb{};
  fb.sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO;
  fb.renderPass = render_pass;
  fb.attachmentCount = 1;
  fb.pAttachments = &slot.view;
  fb.width = options.width;
  fb.height = options.height;
  fb.layers = 1;
  if (const VkResult rc = vk->vkCreateFramebuffer(d, &fb, nullptr, &slot.framebuffer); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateFramebuffer", context);
  return membridge::ok();
}

result<void> particle_renderer::state::wait_fence(VkFence fence, std::uint64_t timeout_ns, const char* what) const {
  const VkResult rc = vk->vkWaitForFences(device.device, 1, &fence, VK_TRUE, timeout_ns);
  if (rc == VK_SUCCESS) return membridge::ok();
  if (rc == VK_TIMEOUT)
    return error::from_native(errc::timeout, membridge::error_source::vulkan, rc, vk_result_name(rc), "vkWaitForFences",
                              std::string("the GPU did not finish within ") + std::to_string(timeout_ns / 1'000'000) +
                                  " ms: " + what);
  return vk_error(rc, "vkWaitForFences", what);
}

result<void> particle_renderer::state::wait_frames(std::uint64_t timeout_ns) {
  for (const frame_slot& slot : slots)
    if (slot.in_flight) MEMBRIDGE_TRY(wait_fence(slot.fence, timeout_ns, "waiting for the renderer's frames"));
  return membridge::ok();
}

template <class Fill>
result<void> particle_renderer::state::one_shot(const char* what, Fill&& fill) {
  const VkCommandBuffer cmd = transfer_commands;
  if (transfer_in_flight) {  // a previous wait failed: try again before reusing the command buffer
    MEMBRIDGE_TRY(wait_fence(transfer_fence, frame_timeout_ns, what));
    transfer_in_flight = false;
    if (const VkResult rc = vk->vkResetFences(device.device, 1, &transfer_fence); rc != VK_SUCCESS)
      return vk_error(rc, "vkResetFences", what);
  }
  if (const VkResult rc = vk->vkResetCommandPool(device.device, transfer_pool, 0); rc != VK_SUCCESS)
    return vk_error(rc, "vkResetCommandPool", what);
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (const VkResult rc = vk->vkBeginCommandBuffer(cmd, &begin); rc != VK_SUCCESS)
    return vk_error(rc, "vkBeginCommandBuffer", what);
  fill(cmd);
  if (const VkResult rc = vk->vkEndCommandBuffer(cmd); rc != VK_SUCCESS)
    return vk_error(rc, "vkEndCommandBuffer", what);
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  if (const VkResult rc = vk->vkQueueSubmit(device.queue, 1, &submit, transfer_fence); rc != VK_SUCCESS)
    return vk_error(rc, "vkQueueSubmit", what);
  transfer_in_flight = true;
  MEMBRIDGE_TRY(wait_fence(transfer_fence, frame_timeout_ns, what));
  transfer_in_flight = false;
  if (const VkResult rc = vk->vkResetFences(device.device, 1, &transfer_fence); rc != VK_SUCCESS)
    return vk_error(rc, "vkResetFences", what);
  return membridge::ok();
}

void particle_renderer::state::record_splat(VkCommandBuffer cmd, const frame_slot& f, std::uint32_t count,
                                            const glm::mat4& view_proj) const noexcept {
  const VolkDeviceTable& v = *vk;
  const VkImageSubresourceRange colour_range{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  // (1) Clear the sums. The slot's previous frame, the last reader of the buffer, has finished (fence).
  v.vkCmdFillBuffer(cmd, f.accumulation.buffer, 0, VK_WHOLE_SIZE, 0);
  // (2) The cleared sums are visible to the splat pass. The image's old contents are discarded
  // (UNDEFINED -> GENERAL) once earlier transfer reads of it (read_back, a caller's blit) are done.
  VkBufferMemoryBarrier cleared{};
  cleared.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER;
  cleared.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  cleared.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  cleared.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  cleared.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  cleared.buffer = f.accumulation.buffer;
  cleared.offset = 0;
  cleared.size = VK_WHOLE_SIZE;
  VkImageMemoryBarrier to_general{};
  to_general.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER;
  to_general.srcAccessMask = 0;
  to_general.dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  to_general.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  to_general.newLayout = VK_IMAGE_LAYOUT_GENERAL;
  to_general.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  to_general.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  to_general.image = f.image;
  to_general.subresourceRange = colour_range;
  v.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, nullptr, 1,
                         &cleared, 1, &to_general);

  splat_push_constants push{};
  push.view_proj = view_proj;
  push.style = glm::vec4(options.point_size, options.brightness, options.hot_speed, 0.0f);
  const auto& bg = options.clear_colour;
  push.clear = glm::vec4(bg[0], bg[1], bg[2], bg[3]);
  push.extent = glm::uvec4(options.width, options.height, count, 0u);
  v.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, splat_layout, 0, 1, &f.set, 0, nullptr);
  v.vkCmdPushConstants(cmd, splat_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
  if (count > 0) {
    // (3) One thread per particle, in a 2D grid of 256-wide groups (record() checked the limits).
    const std::uint64_t groups = (std::uint64_t{count} + splat_group_size - 1) / splat_group_size;
    const auto groups_x = static_cast<std::uint32_t>(std::min<std::uint64_t>(groups, max_group_count[0]));
    const auto groups_y = static_cast<std::uint32_t>((groups + groups_x - 1) / groups_x);
    v.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, splat_pipeline);
    v.vkCmdDispatch(cmd, groups_x, groups_y, 1);
    // (4) The sums are visible to the resolve pass.
    VkBufferMemoryBarrier summed = cleared;
    summed.srcAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    summed.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
    v.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0,
                           nullptr, 1, &summed, 0, nullptr);
  }
  // (5) Background + sums, clamped, into the image.
  v.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, resolve_pipeline);
  v.vkCmdDispatch(cmd, (options.width + resolve_tile - 1) / resolve_tile,
                  (options.height + resolve_tile - 1) / resolve_tile, 1);
  // (6) As the points' render pass leaves it: TRANSFER_SRC_OPTIMAL, writes visible to transfer reads.
  VkImageMemoryBarrier to_transfer = to_general;
  to_transfer.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  to_transfer.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
  to_transfer.oldLayout = VK_IMAGE_LAYOUT_GENERAL;
  to_transfer.newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
  v.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0,
                         nullptr, 1, &to_transfer);
}

// ----------------------------------------------------------------------------------------- public ---

glm::mat4 orbit_view_proj(float aspect, float yaw, float pitch, float distance) {
  const glm::vec3 eye{distance * std::cos(pitch) * std::cos(yaw), distance * std::cos(pitch) * std::sin(yaw),
                      distance * std::sin(pitch)};
  const glm::mat4 view = glm::lookAtRH(eye, glm::vec3(0.0f), glm::vec3(0.0f, 0.0f, 1.0f));
  glm::mat4 proj = glm::perspectiveRH_ZO(glm::radians(45.0f), aspect, 0.05f, 100.0f);
  proj[1][1] *= -1.0f;  // Vulkan's clip space has y down
  return proj * view;
}

result<particle_renderer> particle_renderer::create(const renderer_device& device, const renderer_options& options) {
  if (device.get_instance_proc_addr == nullptr || device.instance == VK_NULL_HANDLE ||
      device.physical_device == VK_NULL_HANDLE || device.device == VK_NULL_HANDLE || device.functions == nullptr ||
      device.queue == VK_NULL_HANDLE)
    return error(errc::invalid_argument, "particle_renderer::create", "a handle or the function table is null");
  if (device.functions->vkCreateRenderPass == nullptr || device.functions->vkQueueSubmit == nullptr)
    return error(errc::invalid_argument, "particle_renderer::create",
                 "the VolkDeviceTable has no functions (load it with volkLoadDeviceTable or device_context)");
  if (options.frame_slots == 0 || options.frame_slots > max_frame_slots)
    return error(errc::invalid_argument, "particle_renderer::create",
                 "frame_slots must be 1.." + std::to_string(max_frame_slots) + ", not " +
                     std::to_string(options.frame_slots));
  if (options.method != render_method::splat && options.method != render_method::points)
    return error(errc::invalid_argument, "particle_renderer::create",
                 "unknown render method " + std::to_string(static_cast<int>(options.method)));
  const bool splat = options.method == render_method::splat;

  const auto get_properties = load_instance_function<PFN_vkGetPhysicalDeviceProperties>(device, "vkGetPhysicalDeviceProperties");
  const auto get_features = load_instance_function<PFN_vkGetPhysicalDeviceFeatures>(device, "vkGetPhysicalDeviceFeatures");
  const auto get_memory =
      load_instance_function<PFN_vkGetPhysicalDeviceMemoryProperties>(device, "vkGetPhysicalDeviceMemoryProperties");
  if (get_properties == nullptr || get_features == nullptr || get_memory == nullptr)
    return error(errc::driver_unavailable, "vkGetInstanceProcAddr",
                 "vkGetPhysicalDeviceProperties/Features/MemoryProperties did not load");
  VkPhysicalDeviceProperties properties{};
  get_properties(device.physical_device, &properties);
  VkPhysicalDeviceFeatures features{};
  get_features(device.physical_device, &features);
  const VkPhysicalDeviceLimits& limits = properties.limits;
  if (options.width == 0 || options.height == 0 || options.width > limits.maxFramebufferWidth ||
      options.height > limits.maxFramebufferHeight || options.width > limits.maxImageDimension2D ||
      options.height > limits.maxImageDimension2D)
    return error(errc::invalid_argument, "particle_renderer::create",
                 "image size " + std::to_string(options.width) + "x" + std::to_string(options.height) +
                     " is zero or above the device's limit " + std::to_string(limits.maxFramebufferWidth) + "x" +
                     std::to_string(limits.maxFramebufferHeight));
  if (splat) {
    if (!(options.point_size >= 1.0f) || options.point_size > max_splat_point_size)
      return error(errc::unsupported, "particle_renderer::create",
                   "point size " + std::to_string(options.point_size) + " is not drawable by the splat method (1 to " +
                       std::to_string(static_cast<int>(max_splat_point_size)) + " pixels)");
  } else if (!(options.point_size >= 1.0f) || (options.point_size > 1.0f && features.largePoints == VK_FALSE) ||
             options.point_size > limits.pointSizeRange[1]) {
    return error(errc::unsupported, "particle_renderer::create",
                 "point size " + std::to_string(options.point_size) + " is not drawable (largePoints " +
                     (features.largePoints ? "supported" : "unsupported") + ", range up to " +
                     std::to_string(limits.pointSizeRange[1]) + ")");
  }
  if (splat) {
    // The splat method needs compute on the renderer's queue, storage images of the colour format and
    // an accumulation buffer that one storage-buffer descriptor covers.
    const auto get_format =
        load_instance_function<PFN_vkGetPhysicalDeviceFormatProperties>(device, "vkGetPhysicalDeviceFormatProperties");
    const auto get_queues = load_instance_function<PFN_vkGetPhysicalDeviceQueueFamilyProperties>(
        device, "vkGetPhysicalDeviceQueueFamilyProperties");
    if (get_format == nullptr || get_queues == nullptr)
      return error(errc::driver_unavailable, "vkGetInstanceProcAddr",
                   "vkGetPhysicalDeviceFormatProperties/QueueFamilyProperties did not load");
    VkFormatProperties format{};
    get_format(device.physical_device, colour_format, &format);
    if ((format.optimalTilingFeatures & VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT) == 0)
      return error(errc::unsupported, "particle_renderer::create",
                   "the splat method writes the image as a storage image, but the device does not support "
                   "STORAGE_IMAGE for VK_FORMAT_R8G8B8A8_UNORM (optimal tiling): use render_method::points");
    std::uint32_t family_count = 0;
    get_queues(device.physical_device, &family_count, nullptr);
    std::vector<VkQueueFamilyProperties> families(family_count);
    get_queues(device.physical_device, &family_count, families.data());
    if (device.queue_family >= family_count ||
        (families[device.queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT) == 0)
      return error(errc::unsupported, "particle_renderer::create",
                   "the splat method dispatches compute shaders, but queue family " +
                       std::to_string(device.queue_family) + " has no compute: use render_method::points");
    const VkDeviceSize accumulation_bytes = VkDeviceSize{options.width} * options.height * 3 * sizeof(std::uint32_t);
    if (accumulation_bytes > limits.maxStorageBufferRange)
      return error(errc::unsupported, "particle_renderer::create",
                   "the splat accumulation buffer of " + std::to_string(options.width) + "x" +
                       std::to_string(options.height) + " (" + std::to_string(accumulation_bytes) +
                       " bytes) exceeds maxStorageBufferRange (" + std::to_string(limits.maxStorageBufferRange) +
                       "): use a smaller image or render_method::points");
  }

  auto s = std::make_unique<state>(device, options);
  get_memory(device.physical_device, &s->memory_properties);
  s->storage_offset_alignment = std::max<VkDeviceSize>(limits.minStorageBufferOffsetAlignment, 1);
  s->max_storage_range = limits.maxStorageBufferRange;
  s->max_group_count = {limits.maxComputeWorkGroupCount[0], limits.maxComputeWorkGroupCount[1]};
  const VolkDeviceTable& vk = *s->vk;
  if (splat) {
    MEMBRIDGE_TRY(s->make_splat_pipelines());
  } else {
    MEMBRIDGE_TRY(s->make_render_pass());
    MEMBRIDGE_TRY(s->make_pipeline());
  }

  MEMBRIDGE_TRY(s->make_commands(s->transfer_pool, s->transfer_commands));
  VkFenceCreateInfo fence{};
  fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  if (const VkResult rc = vk.vkCreateFence(device.device, &fence, nullptr, &s->transfer_fence); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateFence", "the renderer's transfer fence");

  s->slots.resize(options.frame_slots);
  for (frame_slot& slot : s->slots) MEMBRIDGE_TRY(s->make_slot(slot));
  if (splat) MEMBRIDGE_TRY(s->make_descriptors());
  MEMBRIDGE_TRY_ASSIGN(s->readback,
                       s->make_buffer(VkDeviceSize{options.width} * options.height * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                                      "read-back buffer"));
  return particle_renderer(std::move(s));
}

particle_renderer::particle_renderer() noexcept = default;
particle_renderer::particle_renderer(std::unique_ptr<state> s) noexcept : state_(std::move(s)) {}
particle_renderer::particle_renderer(particle_renderer&& other) noexcept = default;
particle_renderer& particle_renderer::operator=(particle_renderer&& other) noexcept = default;
particle_renderer::~particle_renderer() = default;

std::uint32_t particle_renderer::width() const noexcept { return state_ ? state_->options.width : 0; }
std::uint32_t particle_renderer::height() const noexcept { return state_ ? state_->options.height : 0; }
std::uint32_t particle_renderer::frame_slots() const noexcept {
  return state_ ? static_cast<std::uint32_t>(state_->slots.size()) : 0;
}

std::array<std::uint8_t, 3> particle_renderer::background_rgb8() const noexcept {
  if (!state_) return {};
  const auto& c = state_->options.clear_colour;
  return {to_unorm8(c[0]), to_unorm8(c[1]), to_unorm8(c[2])};
}

VkImage particle_renderer::colour_image(std::uint32_t slot) const noexcept {
  return state_ && slot < state_->slots.size() ? state_->slots[slot].image : VK_NULL_HANDLE;
}

VkFence particle_renderer::fence(std::uint32_t slot) const noexcept {
  return state_ && slot < state_->slots.size() ? state_->slots[slot].fence : VK_NULL_HANDLE;
}

render_method particle_renderer::method() const noexcept {
  return state_ ? state_->options.method : render_method::splat;
}

VkPipelineStageFlags particle_renderer::particle_stages() const noexcept {
  if (!state_) return VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  return state_->particle_stages();
}

void particle_renderer::forget_particle_buffers() noexcept {
  if (!state_) return;
  for (frame_slot& f : state_->slots) {
    f.bound_buffer = VK_NULL_HANDLE;
    f.bound_offset = 0;
    f.bound_count = 0;
  }
}

VkBuffer particle_renderer::particle_buffer() const noexcept { return state_ ? state_->vertices.buffer : VK_NULL_HANDLE; }
std::uint32_t particle_renderer::uploaded_count() const noexcept { return state_ ? state_->uploaded : 0; }

result<VkCommandBuffer> particle_renderer::record(std::uint32_t slot, VkBuffer particles, VkDeviceSize offset,
                                                  std::uint32_t count, const glm::mat4& view_proj) {
  if (!state_) return error(errc::invalid_argument, "particle_renderer::record", "empty renderer");
  state& s = *state_;
  if (slot >= s.slots.size())
    return error(errc::invalid_argument, "particle_renderer::record",
                 "slot " + std::to_string(slot) + " of " + std::to_string(s.slots.size()));
  if (count > 0 && particles == VK_NULL_HANDLE)
    return error(errc::invalid_argument, "particle_renderer::record", "no particle buffer for " + std::to_string(count) + " particles");
  const bool splat = s.options.method == render_method::splat;
  const VkDeviceSize range = VkDeviceSize{count} * sizeof(particle);
  if (splat && count > 0) {
    if (offset % s.storage_offset_alignment != 0)
      return error(errc::invalid_argument, "particle_renderer::record",
                   "offset " + std::to_string(offset) + " is not a multiple of minStorageBufferOffsetAlignment (" +
                       std::to_string(s.storage_offset_alignment) + "), which the splat method's storage buffer needs");
    if (range > s.max_storage_range)
      return error(errc::unsupported, "particle_renderer::record",
                   std::to_string(count) + " particles (" + std::to_string(range) +
                       " bytes) exceed maxStorageBufferRange (" + std::to_string(s.max_storage_range) +
                       ") of the splat method's storage buffer: use render_method::points");
    const std::uint64_t groups = (std::uint64_t{count} + splat_group_size - 1) / splat_group_size;
    const std::uint64_t groups_x = std::min<std::uint64_t>(groups, s.max_group_count[0]);
    if ((groups + groups_x - 1) / groups_x > s.max_group_count[1])
      return error(errc::unsupported, "particle_renderer::record",
                   std::to_string(count) + " particles need more workgroups than maxComputeWorkGroupCount allows");
  }
  frame_slot& f = s.slots[slot];
  const VolkDeviceTable& vk = *s.vk;
  if (f.in_flight) {
    MEMBRIDGE_TRY(s.wait_fence(f.fence, frame_timeout_ns, "waiting for the slot's previous frame"));
    if (const VkResult rc = vk.vkResetFences(s.device.device, 1, &f.fence); rc != VK_SUCCESS)
      return vk_error(rc, "vkResetFences", "recording a frame");
    f.in_flight = false;
  }
  f.recorded = false;
  const VkCommandBuffer cmd = f.commands;
  if (const VkResult rc = vk.vkResetCommandPool(s.device.device, f.pool, 0); rc != VK_SUCCESS)
    return vk_error(rc, "vkResetCommandPool", "recording a frame");
  if (splat && count > 0 && (f.bound_buffer != particles || f.bound_offset != offset || f.bound_count != count)) {
    // The slot's previous frame has finished (its fence) and its command buffer was just reset: the set
    // is in use nowhere.
    const VkDescriptorBufferInfo info{particles, offset, range};
    VkWriteDescriptorSet write{};
    write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    write.dstSet = f.set;
    write.dstBinding = 0;
    write.descriptorCount = 1;
    write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    write.pBufferInfo = &info;
    vk.vkUpdateDescriptorSets(s.device.device, 1, &write, 0, nullptr);
    f.bound_buffer = particles;
    f.bound_offset = offset;
    f.bound_count = count;
  }
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (const VkResult rc = vk.vkBeginCommandBuffer(cmd, &begin); rc != VK_SUCCESS)
    return vk_error(rc, "vkBeginCommandBuffer", "recording a frame");
  if (splat) {
    s.record_splat(cmd, f, count, view_proj);
    if (const VkResult rc = vk.vkEndCommandBuffer(cmd); rc != VK_SUCCESS)
      return vk_error(rc, "vkEndCommandBuffer", "recording a frame");
    f.recorded = true;
    return cmd;
  }
  VkClearValue clear{};
  for (std::size_t i = 0; i < 4; ++i) clear.color.float32[i] = s.options.clear_colour[i];
  VkRenderPassBeginInfo pass{};
  pass.sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO;
  pass.renderPass = s.render_pass;
  pass.framebuffer = f.framebuffer;
  pass.renderArea = {{0, 0}, {s.options.width, s.options.height}};
  pass.clearValueCount = 1;
  pass.pClearValues = &clear;
  vk.vkCmdBeginRenderPass(cmd, &pass, VK_SUBPASS_CONTENTS_INLINE);
  if (count > 0) {
    vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, s.pipeline);
    const push_constants push{view_proj, glm::vec4(s.options.point_size, s.options.brightness, s.options.hot_speed, 0.0f)};
    vk.vkCmdPushConstants(cmd, s.layout, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof push, &push);
    vk.vkCmdBindVertexBuffers(cmd, 0, 1, &particles, &offset);
    vk.vkCmdDraw(cmd, count, 1, 0, 0);
  }
  vk.vkCmdEndRenderPass(cmd);
  if (const VkResult rc = vk.vkEndCommandBuffer(cmd); rc != VK_SUCCESS)
    return vk_error(rc, "vkEndCommandBuffer", "recording a frame");
  f.recorded = true;
  return cmd;
}

result<void> particle_renderer::submit(std::uint32_t slot, const submit_sync& sync) {
  if (!state_) return error(errc::invalid_argument, "particle_renderer::submit", "empty renderer");
  state& s = *state_;
  if (slot >= s.slots.size() || !s.slots[slot].recorded)
    return error(errc::invalid_argument, "particle_renderer::submit",
                 "slot " + std::to_string(slot) + " was not recorded since its last submit");
  frame_slot& f = s.slots[slot];
  std::vector<VkSemaphore> wait_semaphores;
  std::vector<VkPipelineStageFlags> wait_stages;
  std::vector<std::uint64_t> wait_values;
  std::vector<VkSemaphore> signal_semaphores;
  std::vector<std::uint64_t> signal_values;
  bool timeline = false;
  for (const semaphore_wait& w : sync.waits) {
    if (w.semaphore == VK_NULL_HANDLE || w.stages == 0)
      return error(errc::invalid_argument, "particle_renderer::submit", "a wait has no semaphore or no stages");
    wait_semaphores.push_back(w.semaphore);
    // splat reads the particles in a compute shader: a wait written for points (VERTEX_INPUT) covers it too.
    const bool widen = s.options.method == render_method::splat && (w.stages & VK_PIPELINE_STAGE_VERTEX_INPUT_BIT) != 0;
    wait_stages.push_back(widen ? (w.stages | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT) : w.stages);
    wait_values.push_back(w.value);
    timeline = timeline || w.value != 0;
  }
  for (const semaphore_signal& sig : sync.signals) {
    if (sig.semaphore == VK_NULL_HANDLE)
      return error(errc::invalid_argument, "particle_renderer::submit", "a signal has no semaphore");
    signal_semaphores.push_back(sig.semaphore);
    signal_values.push_back(sig.value);
    timeline = timeline || sig.value != 0;
  }
  std::vector<VkCommandBuffer> commands{f.commands};
  commands.insert(commands.end(), sync.extra_commands.begin(), sync.extra_commands.end());

  VkTimelineSemaphoreSubmitInfo values{};
  values.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
  values.waitSemaphoreValueCount = static_cast<std::uint32_t>(wait_values.size());
  values.pWaitSemaphoreValues = wait_values.data();
  values.signalSemaphoreValueCount = static_cast<std::uint32_t>(signal_values.size());
  values.pSignalSemaphoreValues = signal_values.data();
  VkSubmitInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  info.pNext = timeline ? &values : nullptr;
  info.waitSemaphoreCount = static_cast<std::uint32_t>(wait_semaphores.size());
  info.pWaitSemaphores = wait_semaphores.data();
  info.pWaitDstStageMask = wait_stages.data();
  info.commandBufferCount = static_cast<std::uint32_t>(commands.size());
  info.pCommandBuffers = commands.data();
  info.signalSemaphoreCount = static_cast<std::uint32_t>(signal_semaphores.size());
  info.pSignalSemaphores = signal_semaphores.data();
  if (const VkResult rc = s.vk->vkQueueSubmit(s.device.queue, 1, &info, f.fence); rc != VK_SUCCESS)
    return vk_error(rc, "vkQueueSubmit", "submitting frame slot " + std::to_string(slot));
  f.recorded = false;
  f.in_flight = true;
  s.last_submitted = slot;
  return membridge::ok();
}

result<void> particle_renderer::wait_idle(std::uint64_t timeout_ns) {
  if (!state_) return membridge::ok();
  return state_->wait_frames(timeout_ns);
}

result<void> particle_renderer::upload_particles(std::span<const particle> particles) {
  if (!state_) return error(errc::invalid_argument, "particle_renderer::upload_particles", "empty renderer");
  state& s = *state_;
  if (particles.size() > std::numeric_limits<std::uint32_t>::max())
    return error(errc::invalid_argument, "particle_renderer::upload_particles",
                 std::to_string(particles.size()) + " particles is more than one draw takes");
  const VkDeviceSize bytes = particles.size_bytes();
  if (bytes == 0) {
    s.uploaded = 0;
    return membridge::ok();
  }
  if (s.vertices.size < bytes) {
    // Frames submitted earlier may still read the old buffer; recorded ones would refer to it.
    MEMBRIDGE_TRY(s.wait_frames(frame_timeout_ns));
    for (frame_slot& f : s.slots) f.recorded = false;
    s.uploaded = 0;
    s.destroy_buffer(s.vertices);
    s.destroy_buffer(s.staging);
    forget_particle_buffers();  // the new buffer may get the old handle
    // Vertex input (points) and storage buffer (splat).
    const VkBufferUsageFlags usage =
        VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    MEMBRIDGE_TRY_ASSIGN(s.vertices,
                         s.make_buffer(bytes, usage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, "particle buffer"));
    MEMBRIDGE_TRY_ASSIGN(s.staging, s.make_buffer(bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                                  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, "particle staging buffer"));
  }
  std::memcpy(s.staging.mapped, particles.data(), bytes);
  if (!s.staging.coherent) {
    const VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, s.staging.memory, 0, VK_WHOLE_SIZE};
    if (const VkResult rc = s.vk->vkFlushMappedMemoryRanges(s.device.device, 1, &range); rc != VK_SUCCESS)
      return vk_error(rc, "vkFlushMappedMemoryRanges", "uploading particles");
  }
  const VolkDeviceTable& vk = *s.vk;
  MEMBRIDGE_TRY(s.one_shot("uploading particles", [&](VkCommandBuffer cmd) {
    // Earlier frames finish reading the buffer (vertex input or compute) before the copy overwrites it.
    vk.vkCmdPipelineBarrier(cmd, s.particle_stages(), VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0, nullptr, 0,
                            nullptr);
    const VkBufferCopy region{0, 0, bytes};
    vk.vkCmdCopyBuffer(cmd, s.staging.buffer, s.vertices.buffer, 1, &region);
    // The copy is visible to the particle reads (vertex input or compute) of every later submission.
    VkBufferMemoryBarrier after{};
    after.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER;
    after.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    after.dstAccessMask = s.particle_access();
    after.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    after.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    after.buffer = s.vertices.buffer;
    after.offset = 0;
    after.size = bytes;
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, s.particle_stages(), 0, 0, nullptr, 1, &after, 0,
                            nullptr);
  }));
  s.uploaded = static_cast<std::uint32_t>(particles.size());
  return membridge::ok();
}

result<void> particle_renderer::read_back(std::vector<std::uint8_t>& rgba) {
  if (!state_) return error(errc::invalid_argument, "particle_renderer::read_back", "empty renderer");
  state& s = *state_;
  if (!s.last_submitted)
    return error(errc::invalid_argument, "particle_renderer::read_back", "no frame was submitted yet");
  const VkImage image = s.slots[*s.last_submitted].image;
  const VolkDeviceTable& vk = *s.vk;
  MEMBRIDGE_TRY(s.one_shot("reading back the last frame", [&](VkCommandBuffer cmd) {
    // The frame (render pass or the splat's last barrier) made its writes visible to transfer reads;
    // the image is TRANSFER_SRC_OPTIMAL.
    VkBufferImageCopy region{};
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {s.options.width, s.options.height, 1};
    vk.vkCmdCopyImageToBuffer(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, s.readback.buffer, 1, &region);
    VkBufferMemoryBarrier to_host{};
    to_host.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER;
    to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    to_host.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    to_host.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    to_host.buffer = s.readback.buffer;
    to_host.size = VK_WHOLE_SIZE;
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 0, nullptr, 1, &to_host,
                            0, nullptr);
  }));
  if (!s.readback.coherent) {
    const VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, s.readback.memory, 0, VK_WHOLE_SIZE};
    if (const VkResult rc = vk.vkInvalidateMappedMemoryRanges(s.device.device, 1, &range); rc != VK_SUCCESS)
      return vk_error(rc, "vkInvalidateMappedMemoryRanges", "reading back the last frame");
  }
  const std::size_t bytes = std::size_t{s.options.width} * s.options.height * 4;
  rgba.assign(s.readback.mapped, s.readback.mapped + bytes);
  return membridge::ok();
}

}  // namespace particles
