// membridge_ipc_viewer's --render-device: the CUDA device's GPU, checked against the published buffer's.
#include "render_gpu.hpp"

#include <membridge/cuda/device.hpp>

#include <string>

namespace particles::ipc_viewer {

using membridge::errc;
using membridge::error;

namespace {

constexpr const char* call = "membridge_ipc_viewer --render-device";

/// `CUDA device 1 (NVIDIA H100, GPU GPU-...)`, or the UUID alone when no CUDA device has it here.
std::string describe_gpu(const std::shared_ptr<const membridge::cuda::driver>& drv, const membridge::device_uuid& uuid) {
  auto dev = membridge::cuda::device::open_by_uuid(drv, uuid);
  if (!dev) return "GPU " + uuid.to_string() + " (no CUDA device of this process)";
  return "CUDA device " + std::to_string(dev->ordinal()) + " (" + dev->name() + ", GPU " + uuid.to_string() + ")";
}

}  // namespace

membridge::result<membridge::device_uuid> pick_render_gpu(const std::shared_ptr<const membridge::cuda::driver>& drv,
                                                          int render_device, const membridge::device_uuid& published) {
  MEMBRIDGE_TRY_ASSIGN(const int count, membridge::cuda::device::count(drv).with_context(call));
  if (render_device < 0 || render_device >= count)
    return error(errc::invalid_argument, call,
                 std::to_string(render_device) + ": no such CUDA device (this machine has " +
                     (count == 1 ? std::string("1: 0") : std::to_string(count) + ": 0 to " + std::to_string(count - 1)) +
                     ")");
  MEMBRIDGE_TRY_ASSIGN(const auto dev, membridge::cuda::device::open(drv, render_device).with_context(call));
  if (dev.uuid() == published) return dev.uuid();
  const std::string text = std::to_string(render_device);
  return error(errc::unsupported, call,
               "the producer's buffer lives on " + describe_gpu(drv, published) + " but this viewer renders on " +
                   describe_gpu(drv, dev.uuid()) +
                   ": Vulkan imports memory and frame semaphores only on the GPU that made them (ipc's peer import, "
                   "sync::import_into_cuda, serves CUDA subscribers, not Vulkan). Start the producer with "
                   "--render-device " + text + " (it simulates on --sim-device and moves each frame to GPU " + text +
                   "), or leave --render-device out here to draw on the buffer's GPU");
}

}  // namespace particles::ipc_viewer
