// samples/01_particles/renderer_pipelines.cpp: the renderer's pipelines: for points a render pass
// and a point-list graphics pipeline, for splat two compute pipelines (accumulate with atomics,
// resolve) with their descriptor sets, and the splat frame's commands.
#include "renderer_state.hpp"

#include <shaders/particles_frag_spv.hpp>
#include <shaders/particles_resolve_comp_spv.hpp>
#include <shaders/particles_splat_comp_spv.hpp>
#include <shaders/particles_vert_spv.hpp>

#include <algorithm>
#include <string>

namespace particles {

using membridge::errc;
using membridge::error;
using namespace renderer_detail;

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
  deps[1] = apps::colour_writes_before_transfer;
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

result<VkPipelineLayout> particle_renderer::state::make_pipeline_layout(const VkPushConstantRange& push,
                                                                        VkDescriptorSetLayout sets,
                                                                        const char* what) const {
  VkPipelineLayoutCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  info.setLayoutCount = sets == VK_NULL_HANDLE ? 0 : 1;
  info.pSetLayouts = &sets;
  info.pushConstantRangeCount = 1;
  info.pPushConstantRanges = &push;
  VkPipelineLayout made = VK_NULL_HANDLE;
  if (const VkResult rc = vk->vkCreatePipelineLayout(device.device, &info, nullptr, &made); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreatePipelineLayout", what);
  return made;
}

result<VkShaderModule> particle_renderer::state::make_shader_module(const std::uint32_t* code, std::size_t size,
                                                                    const char* name) const {
  VkShaderModuleCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  info.pCode = code;
  info.codeSize = size;
  VkShaderModule made = VK_NULL_HANDLE;
  if (const VkResult rc = vk->vkCreateShaderModule(device.device, &info, nullptr, &made); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateShaderModule", name);
  return made;
}

result<void> particle_renderer::state::make_pipeline() {
  const VkDevice d = device.device;
  MEMBRIDGE_TRY_ASSIGN(layout, make_pipeline_layout({VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof(push_constants)},
                                                    VK_NULL_HANDLE, "creating the particle pipeline"));

  VkShaderModule modules[2]{};
  const struct {
    const std::uint32_t* code;
    std::size_t size;
    const char* name;
  } shaders[2] = {{membridge::shaders::particles_vert_spv, sizeof(membridge::shaders::particles_vert_spv),
                   "particles.vert"},
                  {membridge::shaders::particles_frag_spv, sizeof(membridge::shaders::particles_frag_spv),
                   "particles.frag"}};
  const auto destroy_modules = [&] {
    for (VkShaderModule m : modules) vk->vkDestroyShaderModule(d, m, nullptr);
  };
  for (int i = 0; i < 2; ++i) {
    auto module = make_shader_module(shaders[i].code, shaders[i].size, shaders[i].name);
    if (!module) {
      destroy_modules();
      return std::move(module).error();
    }
    modules[i] = *module;
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
  const VkGraphicsPipelineCreateInfo info{.sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO,
                                          .stageCount = 2, .pStages = stages, .pVertexInputState = &vertex_input,
                                          .pInputAssemblyState = &assembly, .pViewportState = &viewport_state,
                                          .pRasterizationState = &raster, .pMultisampleState = &multisample,
                                          .pColorBlendState = &blend_state, .layout = layout,
                                          .renderPass = render_pass, .subpass = 0};
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
  MEMBRIDGE_TRY_ASSIGN(splat_layout,
                       make_pipeline_layout({VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(splat_push_constants)}, set_layout,
                                            "creating the splat pipelines"));

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
    MEMBRIDGE_TRY_ASSIGN(const VkShaderModule module, make_shader_module(shader.code, shader.size, shader.name));
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



void particle_renderer::state::record_splat(VkCommandBuffer cmd, const frame_slot& f, std::uint32_t count,
                                            const glm::mat4& view_proj) const noexcept {
  const VolkDeviceTable& v = *vk;
  // (1) Clear the sums. The slot's previous frame, the last reader of the buffer, has finished (fence).
  v.vkCmdFillBuffer(cmd, f.accumulation.buffer, 0, VK_WHOLE_SIZE, 0);
  // (2) The cleared sums are visible to the splat pass. The image's old contents are discarded
  // (UNDEFINED -> GENERAL) once earlier transfer reads of it (read_back, a caller's blit) are done.
  const VkBufferMemoryBarrier cleared = buffer_barrier(f.accumulation.buffer, VK_ACCESS_TRANSFER_WRITE_BIT,
                                                       VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  const VkImageMemoryBarrier to_general =
      colour_barrier(f.image, 0, VK_ACCESS_SHADER_WRITE_BIT, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL);
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
    const VkBufferMemoryBarrier summed = buffer_barrier(
        f.accumulation.buffer, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT);
    v.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0,
                           nullptr, 1, &summed, 0, nullptr);
  }
  // (5) Background + sums, clamped, into the image.
  v.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, resolve_pipeline);
  v.vkCmdDispatch(cmd, (options.width + resolve_tile - 1) / resolve_tile,
                  (options.height + resolve_tile - 1) / resolve_tile, 1);
  // (6) As the points' render pass leaves it: TRANSFER_SRC_OPTIMAL, writes visible to transfer reads.
  const VkImageMemoryBarrier to_transfer = colour_barrier(f.image, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_TRANSFER_READ_BIT,
                                                          VK_IMAGE_LAYOUT_GENERAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
  v.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0,
                         nullptr, 1, &to_transfer);
}

}  // namespace particles
