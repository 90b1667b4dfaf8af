// samples/03_ipc_viewer/render_gpu.hpp: which GPU membridge_ipc_viewer renders on (--render-device),
// and the refusal when the producer's buffer lives on another one.
#pragma once

#include <membridge/core/device_uuid.hpp>
#include <membridge/core/result.hpp>
#include <membridge/cuda/driver.hpp>

#include <memory>

namespace particles::ipc_viewer {

/// The GPU to render on for `--render-device render_device` (a CUDA ordinal) when the producer's buffer
/// lives on GPU `published`: that GPU's UUID, which must be `published` (Vulkan imports memory and
/// semaphores only on the GPU that made them; the producer moves its frames to another GPU itself with
/// `membridge_ipc_producer --render-device`).
/// Errors: invalid_argument for an ordinal this machine does not have (naming the devices it has);
/// unsupported naming both GPUs (CUDA ordinal, name, UUID) when `published` is another GPU; the driver's.
/// Ownership: borrows `drv` (a loaded CUDA driver) for the call.
[[nodiscard]] membridge::result<membridge::device_uuid> pick_render_gpu(
    const std::shared_ptr<const membridge::cuda::driver>& drv, int render_device,
    const membridge::device_uuid& published);

}  // namespace particles::ipc_viewer
