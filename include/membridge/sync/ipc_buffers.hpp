// membridge/sync/ipc_buffers.hpp: a cuda::growable_buffer published to other processes, and the
// subscriber's imports of it into CUDA and Vulkan that follow its growth.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/imported_buffer.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/ipc/resource.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <string>

namespace membridge::sync {

/// The description of `buffer` (on `dev`) under `name`: its chunks, size, reserved size, the
/// device's UUID and `format`, with generation `generation`.
[[nodiscard]] ipc::buffer_description describe(const cuda::growable_buffer& buffer, const cuda::device& dev,
                                               const std::string& name, const ipc::element_format& format,
                                               std::uint64_t generation);

/// Publishes `buffer` under `name`: exports every chunk and hands the fds to `publisher`.
/// Errors: as growable_buffer::export_chunk and ipc::publisher::publish_buffer (e.g. a name in use).
/// Ownership: the exported fds go to the publisher, which keeps the chunks alive for subscribers.
[[nodiscard]] result<void> publish_buffer(ipc::publisher& publisher, const std::string& name,
                                          const cuda::growable_buffer& buffer, const cuda::device& dev,
                                          const ipc::element_format& format = {});

/// Tells subscribers that the buffer published as `name` grew or shrank to `buffer`'s current state:
/// exports only the chunks they do not have yet. Call it after every grow()/shrink() that should
/// reach them (a call without change is a no-op).
/// Errors: invalid_argument when `name` is not published or its kept chunks differ from `buffer`'s
/// (it was published from another buffer); export and publisher errors.
[[nodiscard]] result<void> publish_growth(ipc::publisher& publisher, const std::string& name,
                                          const cuda::growable_buffer& buffer, const cuda::device& dev);

/// Maps a received buffer into this process for CUDA kernels: reserves its reserved size on `dev`,
/// imports and maps every chunk, grants `dev` read-write access and records its size.
/// A buffer published from another GPU than `dev` is imported when `dev` can use that GPU's memory
/// (peer access, cuDeviceCanAccessPeer): the chunks stay in the publisher GPU's memory and `dev`'s
/// kernels reach them over the peer link (NVLink or PCIe).
/// Errors: invalid_argument when the publisher's GPU (its UUID, named) is not visible in this
/// process or the handle kind is not opaque_fd; unsupported when `dev` has no peer access to the
/// publisher's GPU (both GPUs named); the import's errors.
/// Ownership: borrows the received fds (imports hold their own references).
[[nodiscard]] result<cuda::imported_buffer> import_into_cuda(const cuda::device& dev, const ipc::received_buffer& buffer);

/// Brings `view` in step with `buffer` after a buffer_changed event: appends new chunks, truncates
/// dropped ones, updates the size. Returns true when something changed.
/// Errors: invalid_argument when `view` holds chunks that `buffer` does not (another buffer); the
/// import's errors (the view keeps what it imported before the failure).
[[nodiscard]] result<bool> follow_growth(cuda::imported_buffer& view, const ipc::received_buffer& buffer);

/// Imports a received buffer into Vulkan: a chunked_buffer over its reserved size with every chunk
/// bound (sparse where the device can, else one VkBuffer per chunk). `info.reserved_size` 0 means the
/// published reserved size.
/// Errors: invalid_argument when the buffer lives on another GPU than `context`; as
/// vulkan::chunked_buffer::create and append.
/// Ownership: borrows the received fds (Vulkan imports duplicates).
[[nodiscard]] result<vulkan::chunked_buffer> import_into_vulkan(const vulkan::device_context& context,
                                                                const ipc::received_buffer& buffer,
                                                                vulkan::chunked_buffer_info info = {});

/// Brings a Vulkan view in step with `buffer` (new chunks imported and bound, dropped ones
/// released). Returns true when it changed. Import off the render thread: ~10 ms per GiB.
/// Errors: invalid_argument when `view` holds chunks `buffer` does not; the import's errors.
[[nodiscard]] result<bool> follow_growth(vulkan::chunked_buffer& view, const ipc::received_buffer& buffer);

}  // namespace membridge::sync
