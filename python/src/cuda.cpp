// python/src/cuda.cpp: membridge.Device, membridge.GrowableBuffer and membridge.ImportedBuffer.
#include "errors.hpp"
#include "objects.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace membridge::python {

namespace {

std::uintptr_t address_of(CUdeviceptr p) { return static_cast<std::uintptr_t>(p); }

/// The shape as a Python tuple.
nb::tuple shape_tuple(const array_layout& layout, std::size_t rows) {
  nb::list l;
  for (const std::size_t d : layout.shape(rows)) l.append(d);
  return nb::tuple(l);
}

/// Opens device `ordinal` (the Python constructor).
void init_device(py_device* self, int ordinal) {
  auto opened = cuda::device::open(ordinal);
  if (!opened) raise(opened.error());
  new (self) py_device{std::move(opened).value()};
}

/// Rows to bytes, refusing overflow.
std::size_t rows_to_bytes(std::size_t rows, const array_layout& layout, const char* call) {
  const std::size_t row = layout.row_bytes();
  if (row != 0 && rows > SIZE_MAX / row) raise_invalid_argument(call, std::to_string(rows) + " rows overflow the size");
  return rows * row;
}

void init_buffer(py_growable_buffer* self, const py_device& dev, const std::vector<std::size_t>& shape,
                 const std::string& dtype, std::optional<std::size_t> max_rows, std::optional<std::size_t> max_bytes,
                 double growth_factor, std::size_t max_chunk) {
  array_layout layout = make_layout(shape, dtype);
  if (max_rows.has_value() == max_bytes.has_value())
    raise_invalid_argument("GrowableBuffer", "give exactly one of max_rows and max_bytes (the address range reserved up front)");
  cuda::growable_buffer_options o;
  o.size = rows_to_bytes(shape[0], layout, "GrowableBuffer");
  o.max_size = max_rows ? rows_to_bytes(*max_rows, layout, "GrowableBuffer") : *max_bytes;
  o.chunks.growth_factor = growth_factor;
  o.chunks.max_chunk = max_chunk;
  auto made = cuda::growable_buffer::create(dev.device, o);
  if (!made) raise(made.error());
  new (self) py_growable_buffer{std::move(made).value(), std::move(layout), dev.device.ordinal()};
}

/// A result<void> call made without the GIL (driver calls may wait for the device).
template <class F>
void call_released(F&& f) {
  result<void> r = [&] {
    nb::gil_scoped_release nogil;
    return f();
  }();
  check(r);
}

void bind_device(nb::module_& m) {
  nb::class_<py_device>(m, "Device",
                        "A CUDA device opened for membridge (retains its primary context: PyTorch, CuPy and "
                        "membridge see the same memory). Raises DriverUnavailableError without a usable driver.")
      .def("__init__", &init_device, "ordinal"_a = 0, "Opens CUDA device `ordinal` (CUDA's numbering).")
      .def_static("count", [] { return unwrap(cuda::device::count()); }, "The number of CUDA devices.")
      .def_prop_ro("ordinal", [](const py_device& d) { return d.device.ordinal(); }, "CUDA's ordinal.")
      .def_prop_ro("name", [](const py_device& d) { return d.device.name(); }, "The marketing name.")
      .def_prop_ro("uuid", [](const py_device& d) { return d.device.uuid().to_string(); },
                   "The device UUID (equal to Vulkan's deviceUUID for the same GPU).")
      .def_prop_ro("pci_bus_id", [](const py_device& d) { return d.device.pci_bus_id(); }, "The PCI bus id.")
      .def_prop_ro("compute_capability",
                   [](const py_device& d) {
                     const auto cc = d.device.compute_capability();
                     return std::make_tuple(cc[0], cc[1]);
                   },
                   "(major, minor).")
      .def_prop_ro("total_memory", [](const py_device& d) { return d.device.total_memory(); }, "Bytes of device memory.")
      .def_prop_ro("granularity", [](const py_device& d) { return d.device.granularity(); },
                   "Every VMM chunk size and offset is a multiple of this (2 MiB on H100).")
      .def("memory",
           [](const py_device& d) {
             const cuda::memory_info info = unwrap(d.device.memory());
             return std::make_tuple(info.free_bytes, info.total_bytes);
           },
           "(free, total) bytes now.")
      .def("synchronize", [](const py_device& d) { call_released([&] { return d.device.synchronize(); }); },
           "Waits for all work queued in the primary context.")
      .def("__repr__", [](const py_device& d) {
        return "<membridge.Device " + std::to_string(d.device.ordinal()) + ": " + d.device.name() + ">";
      });
}

void bind_growable_buffer(nb::module_& m) {
  nb::class_<py_growable_buffer>(
      m, "GrowableBuffer",
      "Device memory at a fixed address that grows without copies, seen as an array of shape "
      "(rows, *row_shape). PyTorch (torch.as_tensor(buf, device='cuda'), torch.from_dlpack(buf)), CuPy "
      "(cupy.asarray(buf)), Numba and Warp see the same memory through __cuda_array_interface__ and "
      "DLPack. grow() keeps the address: make a new view to see the new rows.")
      .def("__init__", &init_buffer, "device"_a, "shape"_a, "dtype"_a = "float32", nb::kw_only(),
           "max_rows"_a = nb::none(), "max_bytes"_a = nb::none(), "growth_factor"_a = 2.0, "max_chunk"_a = 0,
           "Reserves max_rows rows (or max_bytes) of addresses and maps shape[0] rows of dtype elements.")
      .def_prop_ro("shape", [](const py_growable_buffer& b) { return shape_tuple(b.layout, b.rows()); })
      .def_prop_ro("dtype", [](const py_growable_buffer& b) { return b.layout.type.name; })
      .def_prop_ro("rows", &py_growable_buffer::rows, "The first dimension.")
      .def_prop_ro("row_bytes", [](const py_growable_buffer& b) { return b.layout.row_bytes(); },
                   "Bytes per row (the element stride of a published layout).")
      .def_prop_ro("ptr", [](const py_growable_buffer& b) { return address_of(b.buffer.address()); },
                   "The device address; fixed for the buffer's life.")
      .def_prop_ro("device", [](const py_growable_buffer& b) { return b.ordinal; }, "The CUDA ordinal.")
      .def_prop_ro("size", [](const py_growable_buffer& b) { return b.buffer.size(); }, "Bytes in use.")
      .def_prop_ro("capacity", [](const py_growable_buffer& b) { return b.buffer.capacity(); }, "Bytes mapped.")
      .def_prop_ro("max_size", [](const py_growable_buffer& b) { return b.buffer.max_size(); }, "Bytes reserved.")
      .def_prop_ro("chunk_count", [](const py_growable_buffer& b) { return b.buffer.chunk_count(); })
      .def("grow",
           [](py_growable_buffer& b, std::size_t rows) {
             const std::size_t bytes = rows_to_bytes(rows, b.layout, "GrowableBuffer.grow");
             call_released([&] { return b.buffer.grow(bytes); });
           },
           "rows"_a, "Grows to `rows` rows in place (same address, contents kept, new rows uninitialised).")
      .def("shrink",
           [](py_growable_buffer& b, std::size_t rows) {
             const std::size_t bytes = rows_to_bytes(rows, b.layout, "GrowableBuffer.shrink");
             call_released([&] { return b.buffer.shrink(bytes); });
           },
           "rows"_a, "Shrinks to `rows` rows; unmaps whole chunks past them (views of those rows become invalid).")
      .def("reserve",
           [](py_growable_buffer& b, std::size_t rows) {
             const std::size_t bytes = rows_to_bytes(rows, b.layout, "GrowableBuffer.reserve");
             call_released([&] { return b.buffer.reserve(bytes); });
           },
           "rows"_a, "Maps memory for `rows` rows ahead of need (like list reservation); rows stays.")
      .def_prop_ro("__cuda_array_interface__",
                   [](const py_growable_buffer& b) {
                     return cuda_array_interface(address_of(b.buffer.address()), b.layout, b.rows());
                   })
      .def("__dlpack__",
           [](nb::handle self, nb::args args, nb::kwargs kwargs) {
             const auto& b = nb::cast<const py_growable_buffer&>(self);
             return dlpack_capsule(self, address_of(b.buffer.address()), b.layout, b.rows(), b.ordinal, args, kwargs);
           },
           "A DLPack capsule of the rows in use (stream is accepted and not used: order your work yourself).")
      .def("__dlpack_device__", [](const py_growable_buffer& b) { return std::make_tuple(2, b.ordinal); })
      .def("__len__", &py_growable_buffer::rows)
      .def("__repr__", [](const py_growable_buffer& b) {
        return "<membridge.GrowableBuffer rows=" + std::to_string(b.rows()) + " dtype=" + b.layout.type.name +
               " size=" + std::to_string(b.buffer.size()) + " max_size=" + std::to_string(b.buffer.max_size()) + ">";
      });
}

void bind_imported_buffer(nb::module_& m) {
  nb::class_<py_imported_buffer>(
      m, "ImportedBuffer",
      "A buffer another process published, mapped into this one (Subscriber.import_buffer); an array of "
      "shape (rows, *row_shape) like GrowableBuffer. follow() brings it in step with the publisher's growth.")
      .def_prop_ro("shape", [](const py_imported_buffer& b) { return shape_tuple(b.layout, b.rows()); })
      .def_prop_ro("dtype", [](const py_imported_buffer& b) { return b.layout.type.name; })
      .def_prop_ro("rows", &py_imported_buffer::rows)
      .def_prop_ro("ptr", [](const py_imported_buffer& b) { return address_of(b.buffer.address()); })
      .def_prop_ro("device", [](const py_imported_buffer& b) { return b.ordinal; })
      .def_prop_ro("size", [](const py_imported_buffer& b) { return b.buffer.size(); })
      .def_prop_ro("capacity", [](const py_imported_buffer& b) { return b.buffer.capacity(); })
      .def_prop_ro("reserved_size", [](const py_imported_buffer& b) { return b.buffer.reserved_size(); })
      .def_prop_ro("__cuda_array_interface__",
                   [](const py_imported_buffer& b) {
                     return cuda_array_interface(address_of(b.buffer.address()), b.layout, b.rows());
                   })
      .def("__dlpack__",
           [](nb::handle self, nb::args args, nb::kwargs kwargs) {
             const auto& b = nb::cast<const py_imported_buffer&>(self);
             return dlpack_capsule(self, address_of(b.buffer.address()), b.layout, b.rows(), b.ordinal, args, kwargs);
           })
      .def("__dlpack_device__", [](const py_imported_buffer& b) { return std::make_tuple(2, b.ordinal); })
      .def("__len__", &py_imported_buffer::rows);
}

}  // namespace

void bind_cuda(nb::module_& m) {
  bind_device(m);
  bind_growable_buffer(m);
  bind_imported_buffer(m);
}

}  // namespace membridge::python
