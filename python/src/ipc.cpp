// python/src/ipc.cpp: the low-level membridge.Publisher and membridge.Subscriber (descriptions and
// fds, no GPU), and a subscriber's imports of a published buffer into CUDA.
#include "errors.hpp"
#include "objects.hpp"

#include <membridge/ipc/publisher.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/os/borrowed_fd.hpp>
#include <membridge/sync/ipc_buffers.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace membridge::python {

namespace {

/// A Python timeout in seconds as milliseconds (negative or NaN refused).
std::chrono::milliseconds to_ms(double seconds, const char* call) {
  if (!(seconds >= 0.0)) raise_invalid_argument(call, "a timeout must be >= 0 seconds");
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000.0)));
}

/// New owned duplicates of caller fds (the caller keeps its own, per membridge's ownership rules).
std::vector<os::unique_fd> duplicate_all(const std::vector<int>& fds) {
  std::vector<os::unique_fd> out;
  out.reserve(fds.size());
  for (const int fd : fds) out.push_back(unwrap(os::borrowed_fd::from_native(fd).duplicate()));
  return out;
}

/// Appends chunks of `sizes` after the description's last chunk.
void append_chunks(ipc::buffer_description& d, const std::vector<std::uint64_t>& sizes) {
  std::uint64_t offset = d.chunks.empty() ? 0 : d.chunks.back().offset + d.chunks.back().size;
  for (const std::uint64_t s : sizes) {
    d.chunks.push_back({offset, s});
    offset += s;
  }
}

std::uint64_t chunk_total(const ipc::buffer_description& d) {
  return d.chunks.empty() ? 0 : d.chunks.back().offset + d.chunks.back().size;
}

ipc::subscriber_role parse_role(const std::string& role) {
  if (role == "observer") return ipc::subscriber_role::observer;
  if (role == "consumer") return ipc::subscriber_role::consumer;
  raise_invalid_argument("Subscriber", "role must be 'observer' or 'consumer', not '" + role + "'");
}

const char* role_name(ipc::subscriber_role role) {
  return role == ipc::subscriber_role::consumer ? "consumer" : "observer";
}

const char* event_kind_name(ipc::subscriber_event::kind k) {
  switch (k) {
    case ipc::subscriber_event::kind::buffer_added: return "buffer_added";
    case ipc::subscriber_event::kind::buffer_changed: return "buffer_changed";
    case ipc::subscriber_event::kind::semaphore_added: return "semaphore_added";
    case ipc::subscriber_event::kind::frame: return "frame";
    case ipc::subscriber_event::kind::disconnected: return "disconnected";
  }
  return "unknown";
}

// ------------------------------------------------------------------------------------ publisher ---

void init_publisher(ipc::publisher* self, std::optional<std::string> name, std::optional<std::string> path,
                    const std::string& publisher_name, std::size_t max_consumers) {
  if (name.has_value() == path.has_value()) raise_invalid_argument("Publisher", "give exactly one of name and path");
  ipc::publisher_options o;
  o.listen.name = name.value_or("");
  o.listen.path = path.value_or("");
  o.publisher_name = publisher_name;
  o.max_consumers = max_consumers;
  auto started = ipc::publisher::start(o);
  if (!started) raise(started.error());
  new (self) ipc::publisher(std::move(started).value());
}

void publish_buffer(ipc::publisher& p, const std::string& name, const std::vector<int>& fds,
                    const std::vector<std::uint64_t>& chunk_sizes, std::optional<std::uint64_t> size,
                    std::optional<std::uint64_t> reserved_size, const std::string& layout, std::uint32_t stride) {
  if (fds.size() != chunk_sizes.size())
    raise_invalid_argument("Publisher.publish_buffer", std::to_string(fds.size()) + " fds for " +
                                                           std::to_string(chunk_sizes.size()) + " chunk sizes");
  ipc::buffer_description d;
  d.name = name;
  d.format = {layout, stride};
  d.generation = 1;
  append_chunks(d, chunk_sizes);
  d.size = size.value_or(chunk_total(d));
  d.reserved_size = reserved_size.value_or(chunk_total(d));
  check(p.publish_buffer(d, duplicate_all(fds)));
}

void update_buffer(ipc::publisher& p, const std::string& name, std::uint64_t size, const std::vector<int>& new_fds,
                   const std::vector<std::uint64_t>& new_chunk_sizes) {
  if (new_fds.size() != new_chunk_sizes.size())
    raise_invalid_argument("Publisher.update_buffer", std::to_string(new_fds.size()) + " fds for " +
                                                          std::to_string(new_chunk_sizes.size()) + " chunk sizes");
  std::optional<ipc::buffer_description> d = p.find_buffer(name);
  if (!d) raise_invalid_argument("Publisher.update_buffer", "no buffer named '" + name + "' is published");
  ++d->generation;
  append_chunks(*d, new_chunk_sizes);
  d->size = size;
  check(p.update_buffer(*d, duplicate_all(new_fds)));
}

void bind_publisher(nb::module_& m) {
  nb::class_<ipc::publisher>(m, "Publisher",
                             "Shares named buffers (chunk fds with a description) with other processes over a "
                             "Unix socket and announces frames. Low level: any fds (e.g. os.memfd_create), no GPU.")
      .def("__init__", &init_publisher, "name"_a = nb::none(), nb::kw_only(), "path"_a = nb::none(),
           "publisher_name"_a = "", "max_consumers"_a = 1,
           "Listens on $XDG_RUNTIME_DIR/membridge/<name>.sock (or `path`).")
      .def("publish_buffer", &publish_buffer, "name"_a, "fds"_a, "chunk_sizes"_a, nb::kw_only(), "size"_a = nb::none(),
           "reserved_size"_a = nb::none(), "layout"_a = "", "stride"_a = 0,
           "Publishes a buffer made of chunks (one fd each, back to back from offset 0) with its element "
           "layout (membridge.layout) and stride. The fds are duplicated: the caller keeps its own.")
      .def("update_buffer", &update_buffer, "name"_a, "size"_a, "new_fds"_a = std::vector<int>{},
           "new_chunk_sizes"_a = std::vector<std::uint64_t>{},
           "Announces that a published buffer's size changed, with the fds of chunks added after its last one.")
      .def("announce_frame", [](ipc::publisher& p, std::uint64_t frame) { check(p.announce_frame(frame)); }, "frame"_a,
           "Announces frame `frame` (frames must increase).")
      .def_prop_ro("subscriber_count", &ipc::publisher::subscriber_count)
      .def_prop_ro("consumer_count", &ipc::publisher::consumer_count)
      .def_prop_ro("last_frame", &ipc::publisher::last_frame)
      .def_prop_ro("path", &ipc::publisher::path, "The socket file subscribers connect to.")
      .def_prop_ro("valid", &ipc::publisher::valid)
      .def("stop", [](ipc::publisher& p) {
             nb::gil_scoped_release nogil;
             p.stop();
           },
           "Says goodbye to every subscriber and closes (subscribers keep what they received).")
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](ipc::publisher& p, nb::args) {
        nb::gil_scoped_release nogil;
        p.stop();
      });
}

// ----------------------------------------------------------------------------------- subscriber ---

void init_subscriber(ipc::subscriber* self, std::optional<std::string> name, std::optional<std::string> path,
                     const std::string& role, const std::string& client_name, double timeout) {
  if (name.has_value() == path.has_value()) raise_invalid_argument("Subscriber", "give exactly one of name and path");
  ipc::subscriber_options o;
  o.name = name.value_or("");
  o.path = path.value_or("");
  o.role = parse_role(role);
  o.client_name = client_name;
  o.timeout = to_ms(timeout, "Subscriber");
  result<ipc::subscriber> connected = [&] {
    nb::gil_scoped_release nogil;
    return ipc::subscriber::connect(o);
  }();
  if (!connected) raise(connected.error());
  new (self) ipc::subscriber(std::move(connected).value());
}

std::optional<ipc::subscriber_event> next_event(ipc::subscriber& s, double timeout) {
  const auto ms = to_ms(timeout, "Subscriber.next_event");
  result<ipc::subscriber_event> e = [&] {
    nb::gil_scoped_release nogil;
    return s.next_event(ms);
  }();
  if (!e && e.error().code() == errc::timeout) return std::nullopt;
  return unwrap(std::move(e));
}

const ipc::received_buffer& received(const ipc::subscriber& s, const std::string& name, const char* call) {
  const ipc::received_buffer* b = s.buffer(name);
  if (b == nullptr) raise_invalid_argument(call, "no buffer named '" + name + "' was received");
  return *b;
}

std::vector<int> buffer_fds(const ipc::subscriber& s, const std::string& name) {
  std::vector<int> out;
  for (const os::unique_fd& fd : received(s, name, "Subscriber.buffer_fds").fds)
    out.push_back(unwrap(os::borrowed_fd::from_native(fd.get()).duplicate()).release());
  return out;
}

py_imported_buffer import_buffer(const ipc::subscriber& s, const py_device& dev, const std::string& name,
                                 const std::string& dtype, const std::vector<std::size_t>& row_shape) {
  const ipc::received_buffer& b = received(s, name, "Subscriber.import_buffer");
  std::vector<std::size_t> shape{0};
  shape.insert(shape.end(), row_shape.begin(), row_shape.end());
  array_layout layout = make_layout(shape, dtype);
  result<cuda::imported_buffer> imported = [&] {
    nb::gil_scoped_release nogil;
    return sync::import_into_cuda(dev.device, b);
  }();
  return py_imported_buffer{unwrap(std::move(imported)), std::move(layout), dev.device.ordinal()};
}

bool follow(const ipc::subscriber& s, py_imported_buffer& view, const std::string& name) {
  const ipc::received_buffer& b = received(s, name, "Subscriber.follow");
  result<bool> changed = [&] {
    nb::gil_scoped_release nogil;
    return sync::follow_growth(view.buffer, b);
  }();
  return unwrap(std::move(changed));
}

void bind_descriptions(nb::module_& m) {
  nb::class_<ipc::buffer_description>(m, "BufferDescription", "A published buffer as its publisher describes it.")
      .def_ro("name", &ipc::buffer_description::name)
      .def_prop_ro("device_uuid", [](const ipc::buffer_description& d) { return d.device.to_string(); })
      .def_prop_ro("layout", [](const ipc::buffer_description& d) { return d.format.name; },
                   "The element layout string (membridge.layout).")
      .def_prop_ro("stride", [](const ipc::buffer_description& d) { return d.format.stride; }, "Bytes per element.")
      .def_ro("size", &ipc::buffer_description::size)
      .def_ro("reserved_size", &ipc::buffer_description::reserved_size)
      .def_ro("generation", &ipc::buffer_description::generation)
      .def_prop_ro("chunks",
                   [](const ipc::buffer_description& d) {
                     std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
                     for (const ipc::buffer_chunk& c : d.chunks) out.emplace_back(c.offset, c.size);
                     return out;
                   },
                   "(offset, size) of every chunk, in order.");
  nb::class_<ipc::subscriber_event>(m, "Event", "Something a publisher told a subscriber.")
      .def_prop_ro("kind", [](const ipc::subscriber_event& e) { return event_kind_name(e.what); },
                   "'buffer_added', 'buffer_changed', 'semaphore_added', 'frame' or 'disconnected'.")
      .def_ro("name", &ipc::subscriber_event::name)
      .def_ro("frame", &ipc::subscriber_event::frame)
      .def_ro("generation", &ipc::subscriber_event::generation)
      .def_ro("reason", &ipc::subscriber_event::reason)
      .def("__repr__", [](const ipc::subscriber_event& e) {
        return std::string("<membridge.Event ") + event_kind_name(e.what) + " name='" + e.name +
               "' frame=" + std::to_string(e.frame) + ">";
      });
}

void bind_subscriber(nb::module_& m) {
  nb::class_<ipc::subscriber>(m, "Subscriber",
                              "A connection to a publisher: the buffers it published (descriptions and fds), "
                              "their growth and its frames. import_buffer() maps a buffer into CUDA as an array.")
      .def("__init__", &init_subscriber, "name"_a = nb::none(), nb::kw_only(), "path"_a = nb::none(),
           "role"_a = "observer", "client_name"_a = "", "timeout"_a = 5.0,
           "Connects and receives the publisher's current state.")
      .def("next_event", &next_event, "timeout"_a = 1.0,
           "The next event (its buffer changes already applied), or None when nothing happened within `timeout` s.")
      .def("buffer", [](const ipc::subscriber& s, const std::string& name) -> std::optional<ipc::buffer_description> {
             const ipc::received_buffer* b = s.buffer(name);
             if (b == nullptr) return std::nullopt;
             return b->description;
           },
           "name"_a, "The description of buffer `name`, or None.")
      .def("buffer_fds", &buffer_fds, "name"_a,
           "New duplicates of buffer `name`'s chunk fds, in chunk order: the caller owns and closes them.")
      .def("buffer_names", &ipc::subscriber::buffer_names)
      .def("_import_buffer", &import_buffer, "device"_a, "name"_a, "dtype"_a, "row_shape"_a)
      .def("follow", &follow, "view"_a, "name"_a,
           "Brings an ImportedBuffer of buffer `name` in step with its growth; True when it changed.")
      .def_prop_ro("last_frame", &ipc::subscriber::last_frame)
      .def_prop_ro("frame_at_join", &ipc::subscriber::frame_at_join)
      .def_prop_ro("role", [](const ipc::subscriber& s) { return role_name(s.role()); })
      .def_prop_ro("publisher_name", &ipc::subscriber::publisher_name)
      .def_prop_ro("publisher_pid", [](const ipc::subscriber& s) { return s.publisher().pid; })
      .def_prop_ro("connected", &ipc::subscriber::connected)
      .def("fileno", [](const ipc::subscriber& s) { return s.native().get(); },
           "The socket (readable: call next_event), for select/poll. Owned by the subscriber.")
      .def("disconnect", &ipc::subscriber::disconnect, "Says goodbye; received state and fds stay.")
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](ipc::subscriber& s, nb::args) { s.disconnect(); });
}

}  // namespace

void bind_ipc(nb::module_& m) {
  bind_descriptions(m);
  bind_publisher(m);
  bind_subscriber(m);
}

}  // namespace membridge::python
