// membridge/membridge.hpp: the umbrella header; includes every public header of the modules this build
// contains (tests/unit/check_umbrella.cmake fails when one is left out).
#pragma once

#include <membridge/config.hpp>
#include <membridge/version.hpp>

#include <membridge/core/chunk_append.hpp>
#include <membridge/core/chunked_view.hpp>
#include <membridge/core/device_uuid.hpp>
#include <membridge/core/error.hpp>
#include <membridge/core/log.hpp>
#include <membridge/core/result.hpp>
#include <membridge/core/units.hpp>

#include <membridge/os/borrowed_fd.hpp>
#include <membridge/os/current_user_security.hpp>
#include <membridge/os/dynamic_library.hpp>
#include <membridge/os/shareable_handle.hpp>
#include <membridge/os/start_thread.hpp>
#include <membridge/os/unique_fd.hpp>
#include <membridge/os/unique_handle.hpp>

#include <membridge/ipc/channel.hpp>
#include <membridge/ipc/layout.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/ipc/resource.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/ipc/wire.hpp>

#if MEMBRIDGE_HAS_CUDA
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/chunk_policy.hpp>
#include <membridge/cuda/chunked_range.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/driver.hpp>
#include <membridge/cuda/external_memory.hpp>
#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/imported_buffer.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/peer.hpp>
#include <membridge/cuda/vmm_allocation.hpp>
#endif

#if MEMBRIDGE_HAS_VULKAN
// Vulkan types only (vulkan_core.h); include <volk.h> yourself to call through device_context::functions().
#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/device_context.hpp>
#include <membridge/vulkan/device_requirements.hpp>
#include <membridge/vulkan/imported_memory.hpp>
#include <membridge/vulkan/instance_api.hpp>
#include <membridge/vulkan/queue_picker.hpp>
#include <membridge/vulkan/shared_buffer.hpp>
#include <membridge/vulkan/shared_image.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>
#endif

#if MEMBRIDGE_HAS_SYNC
#include <membridge/sync/cross_gpu_link.hpp>
#include <membridge/sync/cuda_vulkan_buffer.hpp>
#include <membridge/sync/follow_plan.hpp>
#include <membridge/sync/frame_publisher.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/ipc_buffers.hpp>
#include <membridge/sync/producer_graph.hpp>
#include <membridge/sync/same_gpu.hpp>
#include <membridge/sync/submit2.hpp>
#include <membridge/sync/vulkan_mirror.hpp>
#endif

#if MEMBRIDGE_HAS_GL
// No GL headers: GL names are plain unsigned ints; the caller's own loader declares the functions.
#include <membridge/gl/buffer.hpp>
#include <membridge/gl/chunked_buffer.hpp>
#include <membridge/gl/context.hpp>
#include <membridge/gl/headless_context.hpp>
#include <membridge/gl/memory_object.hpp>
#include <membridge/gl/semaphore.hpp>
#include <membridge/gl/texture.hpp>
#endif

#if MEMBRIDGE_HAS_GL && MEMBRIDGE_HAS_SYNC
#include <membridge/sync/gl_bridge.hpp>
#include <membridge/sync/gl_frame_consumer.hpp>
#endif
