// membridge/ipc/layout.hpp: the "layout" grammar of element_format::name, shared by the C++ producers,
// the Python package and membridge-view: what a published buffer holds, so that anyone can draw it.
//
//   points:POS[,COLOUR]          POS: float3 | float4 (xyz used); COLOUR: rgba8 | r32f (colour-mapped);
//                                fields packed in order from byte 0 of each element;
//                                element_format::stride >= the sum of the field sizes (extra bytes skipped)
//   image:{rgba8|r32f}:WxH       row-major texels, stride = 4
//   heightfield:r32f:WxH         row-major grid of heights, stride 4
//   membridge.particles.v1       sample 03's particles: points:float4 with stride 32 (an alias)
//
// With a frame timeline (`frames.produced`, parameter S) a buffer holds S slots of size / S bytes;
// frame f is slot f % S. Without one the buffer is one slot.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/ipc/resource.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace membridge::ipc {

/// What a buffer holds, drawn as.
enum class layout_kind : std::uint8_t {
  points = 1,       ///< One point per element.
  image = 2,        ///< A 2D image of texels.
  heightfield = 3,  ///< A grid of heights.
};

/// The type of one field of an element.
enum class field_type : std::uint8_t {
  none = 0,    ///< Absent (points without colour).
  float3 = 1,  ///< Three floats (12 bytes).
  float4 = 2,  ///< Four floats (16 bytes; xyz used as a position).
  rgba8 = 3,   ///< Four unsigned normalised bytes (4 bytes).
  r32f = 4,    ///< One float (4 bytes), drawn through a colour map.
};

/// Bytes of one `type` field (0 for none).
[[nodiscard]] constexpr std::uint32_t field_size(field_type type) noexcept {
  switch (type) {
    case field_type::float3: return 12;
    case field_type::float4: return 16;
    case field_type::rgba8:
    case field_type::r32f: return 4;
    case field_type::none: break;
  }
  return 0;
}

/// The name the grammar uses for `type` ("float3", ..., "" for none).
[[nodiscard]] std::string_view field_name(field_type type) noexcept;

/// The most texels per image or heightfield side.
inline constexpr std::uint32_t max_layout_side = 65536;
/// element_format::name of sample 03's particles (an alias of points:float4, stride 32).
inline constexpr std::string_view particles_v1_name = "membridge.particles.v1";

/// A parsed layout.
struct layout {
  layout_kind kind = layout_kind::points;  ///< What is drawn.
  field_type position = field_type::none;  ///< points: float3 or float4; none otherwise.
  /// points: none, rgba8 or r32f (after the position); image: the texel (rgba8 or r32f);
  /// heightfield: r32f.
  field_type colour = field_type::none;
  std::uint32_t width = 0;   ///< image / heightfield: texels per row (0 for points).
  std::uint32_t height = 0;  ///< image / heightfield: rows (0 for points).
  std::uint32_t stride = 0;  ///< Bytes per element (>= fields_size()).
  bool particles_v1 = false; ///< Written as membridge.particles.v1 (formats back to that name).

  /// Bytes of the fields of one element (points: position + colour; image / heightfield: 4).
  [[nodiscard]] std::uint32_t fields_size() const noexcept;
  /// Byte offset of the colour field in an element (points: the position's size; else 0).
  [[nodiscard]] std::uint32_t colour_offset() const noexcept;
  /// Bytes of one slot the layout needs at least: image / heightfield width * height * 4; points 0
  /// (any whole number of elements).
  [[nodiscard]] std::uint64_t min_slot_bytes() const noexcept;
  /// Field-wise equality.
  friend bool operator==(const layout&, const layout&) = default;
};

/// Parses a layout name (element_format::name) with element size `stride` (0: the packed size of
/// the fields).
/// Errors: invalid_argument naming what is wrong: an empty or too long name (> max_name_size), an
/// unknown kind or field type, a missing or malformed `WxH` size (0, > max_layout_side, not a
/// number), a stride smaller than the fields (or not 4 for image / heightfield, not 32 for
/// membridge.particles.v1), trailing text.
[[nodiscard]] result<layout> parse_layout(std::string_view name, std::uint32_t stride = 0);
/// parse_layout(format.name, format.stride).
[[nodiscard]] result<layout> parse_layout(const element_format& format);

/// The grammar's name of `l` (membridge.particles.v1 for such a layout): parse_layout(format_layout(l),
/// l.stride) == l for every valid layout.
[[nodiscard]] std::string format_layout(const layout& l);
/// The element_format a producer publishes for `l`: {format_layout(l), l.stride}.
[[nodiscard]] element_format to_element_format(const layout& l);

/// How many elements a slot of `slot_bytes` holds: points floor(slot_bytes / stride) (bytes after the
/// last whole element are not drawn); image / heightfield width * height.
/// Errors: invalid_argument when a slot holds no whole point, or fewer bytes than width * height * 4
/// (image / heightfield), naming the sizes.
[[nodiscard]] result<std::uint64_t> elements_in_slot(const layout& l, std::uint64_t slot_bytes);

}  // namespace membridge::ipc
