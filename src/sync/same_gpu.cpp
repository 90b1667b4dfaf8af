#include <membridge/sync/same_gpu.hpp>

#include <string>

namespace membridge::sync {

result<void> require_same_gpu(const cuda::device& cuda_device, const vulkan::device_context& vulkan_context) {
  constexpr const char* call = "require_same_gpu";
  if (!cuda_device.valid() || !vulkan_context.valid())
    return error(errc::invalid_argument, call, "the CUDA device or the Vulkan context is empty");
  if (cuda_device.uuid() == vulkan_context.uuid()) return ok();
  return error(errc::invalid_argument, call,
               "CUDA device " + std::to_string(cuda_device.ordinal()) + " (" + cuda_device.name() + ", UUID " +
                   cuda_device.uuid().to_string() + ") and Vulkan device " + vulkan_context.name() + " (UUID " +
                   vulkan_context.uuid().to_string() +
                   ") are different GPUs: memory can only be shared on one GPU; pick the Vulkan device whose "
                   "deviceUUID equals the CUDA UUID");
}

result<vulkan::device_context> create_vulkan_context_for(const cuda::device& cuda_device,
                                                         vulkan::create_options options) {
  if (!cuda_device.valid())
    return error(errc::invalid_argument, "create_vulkan_context_for", "the CUDA device is empty");
  options.uuid = cuda_device.uuid();
  return vulkan::device_context::create(options);
}

}  // namespace membridge::sync
