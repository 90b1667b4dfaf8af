// python/src/arrays.cpp: element types, __cuda_array_interface__ and DLPack capsules.
#include "arrays.hpp"

#include "errors.hpp"

#include <array>
#include <cstdint>

namespace nb = nanobind;

namespace membridge::python {

namespace {

struct known_type {
  const char* name;
  const char* typestr;
  nb::dlpack::dtype_code code;
  std::uint8_t bits;
};

constexpr std::array<known_type, 12> known_types{{
    {"float16", "<f2", nb::dlpack::dtype_code::Float, 16},
    {"float32", "<f4", nb::dlpack::dtype_code::Float, 32},
    {"float64", "<f8", nb::dlpack::dtype_code::Float, 64},
    {"int8", "|i1", nb::dlpack::dtype_code::Int, 8},
    {"int16", "<i2", nb::dlpack::dtype_code::Int, 16},
    {"int32", "<i4", nb::dlpack::dtype_code::Int, 32},
    {"int64", "<i8", nb::dlpack::dtype_code::Int, 64},
    {"uint8", "|u1", nb::dlpack::dtype_code::UInt, 8},
    {"uint16", "<u2", nb::dlpack::dtype_code::UInt, 16},
    {"uint32", "<u4", nb::dlpack::dtype_code::UInt, 32},
    {"uint64", "<u8", nb::dlpack::dtype_code::UInt, 64},
    {"bool", "|b1", nb::dlpack::dtype_code::Bool, 8},
}};

constexpr int dlpack_cuda = 2;  // kDLCUDA

}  // namespace

element_type parse_element_type(std::string_view name) {
  for (const std::string_view prefix : {std::string_view("torch."), std::string_view("numpy.")})
    if (name.starts_with(prefix)) name.remove_prefix(prefix.size());
  for (const known_type& k : known_types) {
    if (name != k.name) continue;
    element_type t;
    t.name = k.name;
    t.typestr = k.typestr;
    t.dlpack = nb::dlpack::dtype{static_cast<std::uint8_t>(k.code), k.bits, 1};
    t.bytes = k.bits / 8U;
    return t;
  }
  raise_invalid_argument("dtype", "unknown element type '" + std::string(name) +
                                      "' (float16/32/64, int8/16/32/64, uint8/16/32/64, bool)");
}

std::size_t array_layout::row_bytes() const noexcept {
  std::size_t n = type.bytes;
  for (const std::size_t d : row_shape) n *= d;
  return n;
}

std::vector<std::size_t> array_layout::shape(std::size_t rows) const {
  std::vector<std::size_t> s{rows};
  s.insert(s.end(), row_shape.begin(), row_shape.end());
  return s;
}

array_layout make_layout(const std::vector<std::size_t>& shape, std::string_view dtype) {
  if (shape.empty()) raise_invalid_argument("shape", "the shape needs at least one dimension (the rows)");
  array_layout layout{parse_element_type(dtype), {shape.begin() + 1, shape.end()}};
  for (const std::size_t d : layout.row_shape)
    if (d == 0) raise_invalid_argument("shape", "only the first dimension (the rows) may be 0");
  return layout;
}

nb::dict cuda_array_interface(std::uintptr_t address, const array_layout& layout, std::size_t rows) {
  nb::list shape;
  for (const std::size_t d : layout.shape(rows)) shape.append(d);
  nb::dict d;
  d["shape"] = nb::tuple(shape);
  d["typestr"] = nb::str(layout.type.typestr.c_str());
  // A zero-size array may carry a null pointer; keep the real one so every view agrees.
  d["data"] = nb::make_tuple(nb::int_(address), false);
  d["strides"] = nb::none();
  d["version"] = 3;
  return d;
}

nb::object dlpack_capsule(nb::handle owner, std::uintptr_t address, const array_layout& layout, std::size_t rows,
                          int ordinal, nb::args args, nb::kwargs kwargs) {
  const std::vector<std::size_t> shape = layout.shape(rows);
  nb::ndarray<nb::array_api> array(reinterpret_cast<void*>(address),  // NOLINT(performance-no-int-to-ptr)
                                   shape.size(), shape.data(), owner, nullptr, layout.type.dlpack, dlpack_cuda,
                                   ordinal);
  nb::object wrapped = nb::cast(array, nb::rv_policy::reference);
  return wrapped.attr("__dlpack__")(*args, **kwargs);
}

}  // namespace membridge::python
