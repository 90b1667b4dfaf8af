#include <membridge/cuda/peer.hpp>
#include <membridge/sync/ipc_buffers.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace membridge::sync {

namespace {

std::string chunk_label(std::size_t index, std::size_t count) {
  return "chunk " + std::to_string(index) + " of " + std::to_string(count);
}

// Exports chunks [first, last) of `buffer`, in order.
result<std::vector<os::shareable_handle>> export_chunks(const cuda::growable_buffer& buffer, std::size_t first,
                                                 std::size_t last) {
  std::vector<os::shareable_handle> fds;
  if (last <= first) return fds;
  fds.reserve(last - first);
  for (std::size_t i = first; i < last; ++i) {
    MEMBRIDGE_TRY_ASSIGN(auto exported, buffer.export_chunk(i));
    fds.push_back(std::move(exported.fd));
  }
  return fds;
}

// The end of the first `count` chunks of a description (their total size: chunks are contiguous from 0).
std::uint64_t end_of(const ipc::buffer_description& d, std::size_t count) {
  return count == 0 ? 0 : d.chunks[count - 1].offset + d.chunks[count - 1].size;
}

// What every import of a received buffer checks first: the handle kind and one fd per chunk.
result<void> check_received(const ipc::received_buffer& buffer, const char* call) {
  const auto& d = buffer.description;
  if (d.handles != ipc::native_handle_kind)
    return error(errc::invalid_argument, call,
                 "buffer '" + d.name + "' has handle kind " + std::to_string(static_cast<int>(d.handles)) +
                     ", not this platform's (" + std::to_string(static_cast<int>(ipc::native_handle_kind)) + ")");
  if (buffer.fds.size() != d.chunks.size())
    return error(errc::invalid_argument, call,
                 "buffer '" + d.name + "' has " + std::to_string(d.chunks.size()) + " chunks but " +
                     std::to_string(buffer.fds.size()) + " fds");
  return ok();
}

// The received chunks from `first` on, as imported_buffer::append_all takes them (fds borrowed).
std::vector<cuda::imported_buffer::chunk_source> chunk_sources(const ipc::received_buffer& buffer, std::size_t first) {
  std::vector<cuda::imported_buffer::chunk_source> out;
  out.reserve(buffer.description.chunks.size() - std::min(first, buffer.description.chunks.size()));
  for (std::size_t i = first; i < buffer.description.chunks.size(); ++i) {
    const auto& c = buffer.description.chunks[i];
    out.push_back({buffer.fds[i], static_cast<std::size_t>(c.offset), static_cast<std::size_t>(c.size)});
  }
  return out;
}

// What follow_growth does for every view kind: checks that the view's chunks are the buffer's first
// ones (the view knows only its mapped total, `mapped(view)`, which must be where the buffer's next
// chunk starts, or lie past its end when the buffer has fewer chunks), drops chunks the buffer no
// longer has, then appends the new ones with `append_from(view, first)`. Returns whether the chunks
// changed.
template <class View, class Mapped, class AppendFrom>
result<bool> follow_chunks(View& view, const ipc::received_buffer& buffer, Mapped mapped, AppendFrom append_from) {
  constexpr const char* call = "follow_growth";
  if (!view.valid()) return error(errc::invalid_argument, call, "the view is empty");
  MEMBRIDGE_TRY(check_received(buffer, call));
  const auto& d = buffer.description;
  const std::size_t count = d.chunks.size();
  if (d.reserved_size > view.reserved_size())
    return error(errc::invalid_argument, call, "the view reserves fewer bytes than buffer '" + d.name + "'");
  const auto not_ours = [&] {
    return error(errc::invalid_argument, call,
                 "the view's chunks are not those of buffer '" + d.name + "' (was it made from another buffer?)");
  };
  const bool shrinks = view.chunk_count() > count;
  if (shrinks ? mapped(view) <= end_of(d, count) : mapped(view) != end_of(d, view.chunk_count())) return not_ours();
  bool changed = false;
  if (shrinks) {
    MEMBRIDGE_TRY(view.truncate(count));
    changed = true;
    if (mapped(view) != end_of(d, count)) return not_ours();
  }
  if (view.chunk_count() < count) {
    MEMBRIDGE_TRY(append_from(view, view.chunk_count()).with_context("following the growth of '" + d.name + "'"));
    changed = true;
  }
  return changed;
}

// A buffer published from another GPU than `dev`: that GPU must be visible here (opened by UUID
// through `dev`'s driver) and `dev` must have peer access to its memory.
result<void> check_peer_publisher(const cuda::device& dev, const ipc::buffer_description& d) {
  auto publisher_gpu = cuda::device::open_by_uuid(dev.shared_driver(), d.device);
  if (!publisher_gpu)
    return std::move(publisher_gpu)
        .error()
        .add_context("buffer '" + d.name + "' was published on GPU " + d.device.to_string() +
                     ", which this process cannot see; this subscriber's CUDA device " + std::to_string(dev.ordinal()) +
                     " is " + dev.uuid().to_string());
  return cuda::require_peer_access(dev, *publisher_gpu)
      .with_context("buffer '" + d.name + "' lives on GPU " + d.device.to_string() + " (device " +
                    std::to_string(publisher_gpu->ordinal()) + "), the subscriber's device " +
                    std::to_string(dev.ordinal()) + " is " + dev.uuid().to_string());
}

}  // namespace

ipc::buffer_description describe(const cuda::growable_buffer& buffer, const cuda::device& dev, const std::string& name,
                                 const ipc::element_format& format, std::uint64_t generation) {
  ipc::buffer_description d;
  d.name = name;
  if (dev.valid()) d.device = dev.uuid();
  d.handles = ipc::native_handle_kind;
  d.format = format;
  d.size = buffer.size();
  d.reserved_size = buffer.max_size();
  d.generation = generation;
  d.chunks.reserve(buffer.chunk_count());
  for (const cuda::chunk_info& c : buffer.chunks()) d.chunks.push_back(ipc::buffer_chunk{c.offset, c.size});
  return d;
}

result<void> publish_buffer(ipc::publisher& publisher, const std::string& name, const cuda::growable_buffer& buffer,
                            const cuda::device& dev, const ipc::element_format& format) {
  constexpr const char* call = "publish_buffer";
  if (!buffer.valid() || !dev.valid())
    return error(errc::invalid_argument, call, "the buffer or the device is empty");
  auto description = describe(buffer, dev, name, format, 1);
  auto fds = export_chunks(buffer, 0, buffer.chunk_count());
  if (!fds) return std::move(fds).error().add_context("publishing buffer '" + name + "'");
  return publisher.publish_buffer(description, std::move(fds).value())
      .with_context("publishing buffer '" + name + "'");
}

result<void> publish_growth(ipc::publisher& publisher, const std::string& name, const cuda::growable_buffer& buffer,
                            const cuda::device& dev) {
  constexpr const char* call = "publish_growth";
  if (!buffer.valid() || !dev.valid())
    return error(errc::invalid_argument, call, "the buffer or the device is empty");
  const auto previous = publisher.find_buffer(name);
  if (!previous) return error(errc::invalid_argument, call, "no buffer is published as '" + name + "'");
  auto next = describe(buffer, dev, name, previous->format, previous->generation + 1);
  if (next.device != previous->device || next.reserved_size != previous->reserved_size)
    return error(errc::invalid_argument, call,
                 "buffer '" + name + "' was published from another buffer (device or reserved size differs)");
  const std::size_t kept = std::min(previous->chunks.size(), next.chunks.size());
  for (std::size_t i = 0; i < kept; ++i) {
    const auto& was = previous->chunks[i];
    const auto& now = next.chunks[i];
    if (was.offset != now.offset || was.size != now.size)
      return error(errc::invalid_argument, call,
                   "chunk " + std::to_string(i) + " of '" + name + "' differs from the published one (was it " +
                       "published from another buffer?)");
  }
  if (next.size == previous->size && next.chunks.size() == previous->chunks.size()) return ok();  // no change
  // Only the chunks past the kept ones travel: none when the buffer shrank (found by the GPU soak:
  // exporting [previous count, new count) underflowed on a shrink).
  auto fds = export_chunks(buffer, kept, next.chunks.size());
  if (!fds) return std::move(fds).error().add_context("publishing the growth of '" + name + "'");
  return publisher.update_buffer(next, std::move(fds).value())
      .with_context("publishing the growth of '" + name + "'");
}

result<cuda::imported_buffer> import_into_cuda(const cuda::device& dev, const ipc::received_buffer& buffer) {
  constexpr const char* call = "import_into_cuda";
  if (!dev.valid()) return error(errc::invalid_argument, call, "the device is empty");
  const auto& d = buffer.description;
  const std::string what = "importing buffer '" + d.name + "' into CUDA";
  if (d.device != dev.uuid()) MEMBRIDGE_TRY(check_peer_publisher(dev, d).with_context(what));
  MEMBRIDGE_TRY(check_received(buffer, call));
  auto view = cuda::imported_buffer::reserve(dev, static_cast<std::size_t>(d.reserved_size));
  if (!view) return std::move(view).error().add_context(what);
  // One access call for all chunks (mapping::set_access over the range): the access call is most
  // of a chunk's import cost.
  MEMBRIDGE_TRY(view->append_all(chunk_sources(buffer, 0)).with_context(what));
  MEMBRIDGE_TRY(view->set_size(static_cast<std::size_t>(d.size)).with_context(what));
  return view;
}

result<bool> follow_growth(cuda::imported_buffer& view, const ipc::received_buffer& buffer) {
  MEMBRIDGE_TRY_ASSIGN(bool changed, follow_chunks(
                                         view, buffer, [](const cuda::imported_buffer& v) { return v.capacity(); },
                                         [&](cuda::imported_buffer& v, std::size_t first) {
                                           return v.append_all(chunk_sources(buffer, first));
                                         }));
  if (view.size() != buffer.description.size) {
    MEMBRIDGE_TRY(view.set_size(static_cast<std::size_t>(buffer.description.size)));
    changed = true;
  }
  return changed;
}

result<vulkan::chunked_buffer> import_into_vulkan(const vulkan::device_context& context,
                                                  const ipc::received_buffer& buffer,
                                                  vulkan::chunked_buffer_info info) {
  constexpr const char* call = "import_into_vulkan";
  if (!context.valid()) return error(errc::invalid_argument, call, "the device context is empty");
  const auto& d = buffer.description;
  if (d.device != context.uuid())
    return error(errc::invalid_argument, call,
                 "buffer '" + d.name + "' was published on GPU " + d.device.to_string() + ", this Vulkan device (" +
                     context.name() + ") is " + context.uuid().to_string() + ": memory cannot be shared across GPUs");
  MEMBRIDGE_TRY(check_received(buffer, call));
  if (info.reserved_size == 0) info.reserved_size = static_cast<std::size_t>(d.reserved_size);
  const std::string what = "importing buffer '" + d.name + "' into Vulkan";
  auto view = vulkan::chunked_buffer::create(context, info);
  if (!view) return std::move(view).error().add_context(what);
  for (std::size_t i = 0; i < d.chunks.size(); ++i) {
    const auto& c = d.chunks[i];
    MEMBRIDGE_TRY(view->append(buffer.fds[i], static_cast<std::size_t>(c.offset), static_cast<std::size_t>(c.size))
                      .with_context(chunk_label(i, d.chunks.size()))
                      .with_context(what));
  }
  return view;
}

result<bool> follow_growth(vulkan::chunked_buffer& view, const ipc::received_buffer& buffer) {
  // chunked_buffer::size() is the sum of its chunk sizes (the CUDA view's capacity()).
  return follow_chunks(
      view, buffer, [](const vulkan::chunked_buffer& v) { return v.size(); },
      [&](vulkan::chunked_buffer& v, std::size_t first) -> result<void> {
        const auto& chunks = buffer.description.chunks;
        for (std::size_t i = first; i < chunks.size(); ++i)
          MEMBRIDGE_TRY(v.append(buffer.fds[i], static_cast<std::size_t>(chunks[i].offset),
                                 static_cast<std::size_t>(chunks[i].size))
                            .with_context(chunk_label(i, chunks.size())));
        return ok();
      });
}

}  // namespace membridge::sync
