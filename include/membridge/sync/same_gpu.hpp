// membridge/sync/same_gpu.hpp: CUDA and Vulkan must run on the same GPU to share memory.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/vulkan/device_context.hpp>

namespace membridge::sync {

/// Succeeds when `cuda_device` and `vulkan_context` are the same physical GPU (equal UUIDs).
/// Errors: invalid_argument naming both devices and UUIDs otherwise (memory of one GPU cannot be
/// imported by another; membridge never falls back to a copy through the host).
[[nodiscard]] result<void> require_same_gpu(const cuda::device& cuda_device, const vulkan::device_context& vulkan_context);

/// Makes a Vulkan context on the GPU that `cuda_device` is, with membridge's extensions
/// (vulkan::device_context::create with `options.uuid` set to the CUDA device's UUID).
/// Errors: as device_context::create; invalid_argument when no Vulkan device is that GPU.
/// Ownership: the context owns its instance and device.
[[nodiscard]] result<vulkan::device_context> create_vulkan_context_for(const cuda::device& cuda_device,
                                                                      vulkan::create_options options = {});

}  // namespace membridge::sync
