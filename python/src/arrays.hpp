// python/src/arrays.hpp: device memory seen as a typed array by PyTorch, CuPy, Numba and Warp:
// element types, shapes, __cuda_array_interface__ and DLPack (through nanobind's ndarray).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace membridge::python {

/// An element type: its canonical name ("float32"), __cuda_array_interface__ typestr ("<f4") and
/// DLPack code and size.
struct element_type {
  std::string name;
  std::string typestr;
  nanobind::dlpack::dtype dlpack{};
  std::size_t bytes = 0;
};

/// The element type named `name`: float16/32/64, int8/16/32/64, uint8/16/32/64, bool; a "torch."
/// or "numpy." prefix is ignored, so str(torch.float32) and numpy dtypes work.
/// Errors: raises InvalidArgumentError for another name.
[[nodiscard]] element_type parse_element_type(std::string_view name);

/// How memory at one device address is seen as an array: rows of `row_shape` elements of `type`.
struct array_layout {
  element_type type;
  std::vector<std::size_t> row_shape;  ///< Trailing dimensions (empty: one element per row).
  /// Bytes per row (the element size times the trailing dimensions).
  [[nodiscard]] std::size_t row_bytes() const noexcept;
  /// The whole shape for `rows` rows.
  [[nodiscard]] std::vector<std::size_t> shape(std::size_t rows) const;
};

/// The layout for a shape given from Python (its first dimension is the rows, the rest row_shape)
/// and a dtype name. Errors: raises InvalidArgumentError for an empty shape or a zero trailing dimension.
[[nodiscard]] array_layout make_layout(const std::vector<std::size_t>& shape, std::string_view dtype);

/// The __cuda_array_interface__ (version 3) of `rows` rows at `address`: no stream (the caller orders
/// its work), read-write.
[[nodiscard]] nanobind::dict cuda_array_interface(std::uintptr_t address, const array_layout& layout, std::size_t rows);

/// A DLPack capsule of `rows` rows at `address` on CUDA device `ordinal`, keeping `owner` alive
/// while a consumer holds it. Arguments are those of the array API's __dlpack__ (stream,
/// max_version, dl_device, copy), passed on to nanobind's ndarray.
[[nodiscard]] nanobind::object dlpack_capsule(nanobind::handle owner, std::uintptr_t address, const array_layout& layout,
                                              std::size_t rows, int ordinal, nanobind::args args, nanobind::kwargs kwargs);

}  // namespace membridge::python
