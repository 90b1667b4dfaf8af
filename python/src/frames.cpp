// python/src/frames.cpp: membridge.FramePublisher, a CUDA producer's frame timeline and buffers
// shared with viewer processes (sync::frame_publisher on a Vulkan context made for the device).
#include "errors.hpp"
#include "objects.hpp"

#include <membridge/sync/frame_publisher.hpp>
#include <membridge/sync/ipc_buffers.hpp>
#include <membridge/sync/same_gpu.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

namespace nb = nanobind;
using namespace nb::literals;

namespace membridge::python {

namespace {

/// membridge.FramePublisher's state. Members are destroyed in reverse order: the frame publisher
/// (subscribers see goodbye, then the timeline goes) before the Vulkan context and the device.
/// Ownership: owns the context and the frame publisher; keeps the Python Device alive.
struct py_frame_publisher {
  nb::object device_object;  // the membridge.Device it was made for
  vulkan::device_context context;
  sync::frame_publisher publisher;

  [[nodiscard]] const cuda::device& device() const { return nb::cast<const py_device&>(device_object).device; }
  [[nodiscard]] sync::frame_publisher& open(const char* call) {
    if (!publisher.valid()) raise_invalid_argument(call, "the FramePublisher was closed");
    return publisher;
  }
};

/// A CUDA stream from Python: an int handle (torch.cuda.current_stream().cuda_stream), or an object
/// with `cuda_stream` (torch.cuda.Stream) or `ptr` (cupy.cuda.Stream). 0 is the legacy default stream.
CUstream to_stream(nb::handle stream) {
  nb::handle h = stream;
  nb::object attr;
  if (!nb::isinstance<nb::int_>(h)) {
    if (nb::hasattr(h, "cuda_stream")) attr = h.attr("cuda_stream");
    else if (nb::hasattr(h, "ptr")) attr = h.attr("ptr");
    else raise_invalid_argument("stream", "a stream is an int handle or has `cuda_stream` (torch) or `ptr` (cupy)");
    h = attr;
  }
  const auto value = nb::cast<std::uintptr_t>(h);
  return reinterpret_cast<CUstream>(value);  // NOLINT(performance-no-int-to-ptr)
}

void init_frame_publisher(py_frame_publisher* self, nb::handle_t<py_device> device_handle, std::optional<std::string> name,
                          std::optional<std::string> path, std::uint32_t slots, std::size_t max_consumers,
                          const std::string& timeline_name, const std::string& publisher_name) {
  if (name.has_value() == path.has_value()) raise_invalid_argument("FramePublisher", "give exactly one of name and path");
  nb::object device_object = nb::borrow(device_handle);
  const cuda::device& dev = nb::cast<const py_device&>(device_object).device;
  sync::frame_publisher_options o;
  o.ipc.listen.name = name.value_or("");
  o.ipc.listen.path = path.value_or("");
  o.ipc.publisher_name = publisher_name;
  o.timeline.slots = slots;
  o.timeline_name = timeline_name;
  o.max_consumers = max_consumers;
  result<vulkan::device_context> context = [&] {
    nb::gil_scoped_release nogil;
    return sync::create_vulkan_context_for(dev);
  }();
  if (!context) {
    error e = context.error();
    raise(e.add_context("FramePublisher: the frame timeline's semaphores are Vulkan's"));
  }
  result<sync::frame_publisher> made = [&] {
    nb::gil_scoped_release nogil;
    return sync::frame_publisher::create(context.value(), dev, std::move(o));
  }();
  if (!made) raise(made.error());
  new (self) py_frame_publisher{std::move(device_object), std::move(context).value(), std::move(made).value()};
}

void publish_buffer(py_frame_publisher& p, const std::string& name, const py_growable_buffer& buffer,
                    const std::string& layout, std::optional<std::uint32_t> stride) {
  const std::size_t row = buffer.layout.row_bytes();
  const ipc::element_format format{layout, stride.value_or(static_cast<std::uint32_t>(row))};
  check(sync::publish_buffer(p.open("FramePublisher.publish_buffer").publisher(), name, buffer.buffer, p.device(), format));
}

void close(py_frame_publisher& p) {
  nb::gil_scoped_release nogil;
  p.publisher = sync::frame_publisher();
}

}  // namespace

void bind_frames(nb::module_& m) {
  nb::class_<py_frame_publisher>(
      m, "FramePublisher",
      "A CUDA producer's frames shared with viewer processes (membridge-view --name NAME): publishes "
      "GrowableBuffers with their element layout and a frame timeline of `slots` slots (frame f writes slot "
      "f % slots). Per frame: acquire(stream, f); your kernels on `stream`; release(stream, f); publish_frame(f). "
      "Viewers that consume pace the producer on the GPU; nothing waits on the host.")
      .def("__init__", &init_frame_publisher, "device"_a, "name"_a = nb::none(), nb::kw_only(), "path"_a = nb::none(),
           "slots"_a = 3, "max_consumers"_a = 8, "timeline_name"_a = "frames", "publisher_name"_a = "",
           "Makes a Vulkan context on the device's GPU, the frame timeline, and listens on "
           "$XDG_RUNTIME_DIR/membridge/<name>.sock (or `path`).")
      .def("publish_buffer", &publish_buffer, "name"_a, "buffer"_a, "layout"_a = "", "stride"_a = nb::none(),
           "Publishes `buffer` under `name` with its element layout (membridge.layout; stride defaults to the "
           "buffer's row bytes). With a timeline, a buffer holds `slots` slots of size / slots bytes.")
      .def("publish_growth",
           [](py_frame_publisher& p, const std::string& name, const py_growable_buffer& buffer) {
             check(sync::publish_growth(p.open("FramePublisher.publish_growth").publisher(), name, buffer.buffer,
                                        p.device()));
           },
           "name"_a, "buffer"_a, "Tells subscribers that `buffer` (published as `name`) grew or shrank.")
      .def("acquire",
           [](py_frame_publisher& p, nb::handle stream, std::uint64_t frame) {
             const CUstream s = to_stream(stream);
             const auto& timeline = p.open("FramePublisher.acquire").timeline();
             result<void> r = [&] {
               nb::gil_scoped_release nogil;
               return timeline.cuda_acquire(s, frame);
             }();
             check(r);
           },
           "stream"_a, "frame"_a, "Enqueues on `stream` a wait until frame's slot is free (consumers are done with it).")
      .def("release",
           [](py_frame_publisher& p, nb::handle stream, std::uint64_t frame) {
             const CUstream s = to_stream(stream);
             check(p.open("FramePublisher.release").timeline().cuda_release(s, frame));
           },
           "stream"_a, "frame"_a, "Enqueues on `stream` the signal that frame `frame` is written.")
      .def("publish_frame",
           [](py_frame_publisher& p, std::uint64_t frame) { check(p.open("FramePublisher.publish_frame").publish_frame(frame)); },
           "frame"_a, "Announces frame `frame` to subscribers (after release was enqueued for it).")
      .def("drain",
           [](py_frame_publisher& p, double timeout) {
             if (!(timeout >= 0.0)) raise_invalid_argument("FramePublisher.drain", "a timeout must be >= 0 seconds");
             const auto& timeline = p.open("FramePublisher.drain").timeline();
             const auto ns = std::chrono::nanoseconds(static_cast<long long>(timeout * 1e9));
             result<void> r = [&] {
               nb::gil_scoped_release nogil;
               return timeline.drain(ns);
             }();
             check(r);
           },
           "timeout"_a = 5.0,
           "For a producer that stops: after its stream finished, waits until consumers drew the last frame.")
      .def("wait_consumed",
           [](py_frame_publisher& p, std::uint64_t frame, double timeout) {
             if (!(timeout >= 0.0)) raise_invalid_argument("FramePublisher.wait_consumed", "a timeout must be >= 0 seconds");
             const auto& timeline = p.open("FramePublisher.wait_consumed").timeline();
             const auto ns = std::chrono::nanoseconds(static_cast<long long>(timeout * 1e9));
             result<void> r = [&] {
               nb::gil_scoped_release nogil;
               return timeline.wait_consumed(frame, ns);
             }();
             if (!r && r.error().code() == errc::timeout) return false;
             check(r);
             return true;
           },
           "frame"_a, "timeout"_a = 5.0,
           "Waits on the host (the GIL released) until every current consumer is done with frame `frame` (at once "
           "when none consumes); False after `timeout` seconds. A producer that calls it for frame f - slots before "
           "acquire(stream, f) never runs more than `slots` frames ahead of its viewers, as sample 03's C++ producer "
           "does: the GPU wait acquire enqueues is then already satisfied, so the viewers and the simulation do not "
           "stall each other on the GPU.")
      .def_prop_ro("slots", [](py_frame_publisher& p) { return p.open("FramePublisher.slots").timeline().slots(); })
      .def("slot", [](py_frame_publisher& p, std::uint64_t frame) { return p.open("FramePublisher.slot").timeline().slot(frame); },
           "frame"_a, "The slot frame `frame` writes (frame % slots).")
      .def_prop_ro("subscriber_count",
                   [](py_frame_publisher& p) { return p.open("FramePublisher").publisher().subscriber_count(); })
      .def_prop_ro("consumer_count",
                   [](py_frame_publisher& p) { return p.open("FramePublisher").publisher().consumer_count(); })
      .def_prop_ro("path", [](py_frame_publisher& p) { return p.open("FramePublisher").publisher().path(); },
                   "The socket file subscribers connect to.")
      .def_prop_ro("vulkan_device", [](py_frame_publisher& p) { return p.context.name(); },
                   "The Vulkan device the timeline's semaphores live on.")
      .def("close", &close, "Stops publishing (subscribers see goodbye) and destroys the timeline (drain first).")
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](py_frame_publisher& p, nb::args) { close(p); });
}

}  // namespace membridge::python
