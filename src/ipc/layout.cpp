#include <membridge/ipc/layout.hpp>

#include <charconv>
#include <optional>

namespace membridge::ipc {

namespace {

constexpr const char* call = "ipc::parse_layout";

error bad(std::string_view name, const std::string& why) {
  return error(errc::invalid_argument, call, "layout '" + std::string(name) + "': " + why);
}

std::optional<field_type> field_from(std::string_view text) noexcept {
  for (const field_type t : {field_type::float3, field_type::float4, field_type::rgba8, field_type::r32f})
    if (text == field_name(t)) return t;
  return std::nullopt;
}

/// Parses `<W>x<H>` with both sides 1..max_layout_side.
result<std::pair<std::uint32_t, std::uint32_t>> parse_size(std::string_view name, std::string_view text) {
  const auto x = text.find('x');
  if (x == std::string_view::npos)
    return bad(name, "size '" + std::string(text) + "' is not <W>x<H> (e.g. 640x480)");
  const auto side = [&](std::string_view part, const char* what) -> result<std::uint32_t> {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size())
      return bad(name, std::string(what) + " '" + std::string(part) + "' is not a decimal number");
    if (v == 0 || v > max_layout_side)
      return bad(name, std::string(what) + " " + std::string(part) + " is not in 1.." + std::to_string(max_layout_side));
    return static_cast<std::uint32_t>(v);
  };
  MEMBRIDGE_TRY_ASSIGN(const std::uint32_t w, side(text.substr(0, x), "width"));
  MEMBRIDGE_TRY_ASSIGN(const std::uint32_t h, side(text.substr(x + 1), "height"));
  return std::pair{w, h};
}

/// Sets `l.stride` from the published `stride` (0: packed), checking it covers the fields.
result<layout> with_stride(std::string_view name, layout l, std::uint32_t stride) {
  const std::uint32_t fields = l.fields_size();
  if (stride == 0) stride = fields;
  if (l.kind != layout_kind::points && stride != 4)
    return bad(name, "stride " + std::to_string(stride) + " but texels are 4 bytes (stride must be 4)");
  if (stride < fields)
    return bad(name, "stride " + std::to_string(stride) + " is smaller than its fields (" + std::to_string(fields) +
                         " bytes)");
  l.stride = stride;
  return l;
}

result<layout> parse_points(std::string_view name, std::string_view fields, std::uint32_t stride) {
  layout l;
  l.kind = layout_kind::points;
  const auto comma = fields.find(',');
  const std::string_view pos = fields.substr(0, comma);
  const auto p = field_from(pos);
  if (!p || (*p != field_type::float3 && *p != field_type::float4))
    return bad(name, "position '" + std::string(pos) + "' is not float3 or float4");
  l.position = *p;
  if (comma != std::string_view::npos) {
    const std::string_view colour = fields.substr(comma + 1);
    const auto c = field_from(colour);
    if (!c || (*c != field_type::rgba8 && *c != field_type::r32f))
      return bad(name, "colour '" + std::string(colour) + "' is not rgba8 or r32f");
    l.colour = *c;
  }
  return with_stride(name, l, stride);
}

result<layout> parse_grid(std::string_view name, layout_kind kind, std::string_view rest, std::uint32_t stride) {
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos)
    return bad(name, "expected <texel>:<W>x<H> after '" + std::string(kind == layout_kind::image ? "image:" : "heightfield:") + "'");
  const std::string_view texel = rest.substr(0, colon);
  const auto t = field_from(texel);
  if (kind == layout_kind::image && (!t || (*t != field_type::rgba8 && *t != field_type::r32f)))
    return bad(name, "image texel '" + std::string(texel) + "' is not rgba8 or r32f");
  if (kind == layout_kind::heightfield && t != field_type::r32f)
    return bad(name, "heightfield texel '" + std::string(texel) + "' is not r32f");
  MEMBRIDGE_TRY_ASSIGN(const auto size, parse_size(name, rest.substr(colon + 1)));
  layout l;
  l.kind = kind;
  l.colour = *t;
  l.width = size.first;
  l.height = size.second;
  return with_stride(name, l, stride);
}

}  // namespace

std::string_view field_name(field_type type) noexcept {
  switch (type) {
    case field_type::float3: return "float3";
    case field_type::float4: return "float4";
    case field_type::rgba8: return "rgba8";
    case field_type::r32f: return "r32f";
    case field_type::none: break;
  }
  return "";
}

std::uint32_t layout::fields_size() const noexcept {
  if (kind != layout_kind::points) return 4;
  return field_size(position) + field_size(colour);
}

std::uint32_t layout::colour_offset() const noexcept { return kind == layout_kind::points ? field_size(position) : 0; }

std::uint64_t layout::min_slot_bytes() const noexcept {
  return kind == layout_kind::points ? 0 : std::uint64_t{width} * height * 4;
}

result<layout> parse_layout(std::string_view name, std::uint32_t stride) {
  if (name.empty()) return bad(name, "no layout (element_format::name is empty)");
  if (name.size() > max_name_size)
    return bad(name.substr(0, 16), "name of " + std::to_string(name.size()) + " bytes is longer than " +
                                       std::to_string(max_name_size));
  if (name == particles_v1_name) {
    if (stride != 0 && stride != 32)
      return bad(name, "stride " + std::to_string(stride) + " but membridge.particles.v1 has 32-byte particles");
    layout l;
    l.kind = layout_kind::points;
    l.position = field_type::float4;
    l.stride = 32;
    l.particles_v1 = true;
    return l;
  }
  const auto colon = name.find(':');
  const std::string_view kind = name.substr(0, colon);
  if (colon == std::string_view::npos || colon + 1 == name.size()) {
    if (kind == "points" || kind == "image" || kind == "heightfield")
      return bad(name, "'" + std::string(kind) + "' needs its fields after a ':'");
    return bad(name, "unknown kind '" + std::string(kind) + "' (expected points, image, heightfield or " +
                         std::string(particles_v1_name) + ")");
  }
  const std::string_view rest = name.substr(colon + 1);
  if (kind == "points") return parse_points(name, rest, stride);
  if (kind == "image") return parse_grid(name, layout_kind::image, rest, stride);
  if (kind == "heightfield") return parse_grid(name, layout_kind::heightfield, rest, stride);
  return bad(name, "unknown kind '" + std::string(kind) + "' (expected points, image, heightfield or " +
                       std::string(particles_v1_name) + ")");
}

result<layout> parse_layout(const element_format& format) { return parse_layout(format.name, format.stride); }

std::string format_layout(const layout& l) {
  if (l.particles_v1) return std::string(particles_v1_name);
  const std::string size = std::to_string(l.width) + "x" + std::to_string(l.height);
  switch (l.kind) {
    case layout_kind::points: {
      std::string text = "points:" + std::string(field_name(l.position));
      if (l.colour != field_type::none) text += "," + std::string(field_name(l.colour));
      return text;
    }
    case layout_kind::image: return "image:" + std::string(field_name(l.colour)) + ":" + size;
    case layout_kind::heightfield: return "heightfield:r32f:" + size;
  }
  return {};
}

element_format to_element_format(const layout& l) { return element_format{format_layout(l), l.stride}; }

result<std::uint64_t> elements_in_slot(const layout& l, std::uint64_t slot_bytes) {
  constexpr const char* elements_call = "ipc::elements_in_slot";
  if (l.kind == layout_kind::points) {
    if (l.stride == 0 || slot_bytes < l.stride)
      return error(errc::invalid_argument, elements_call,
                   "a slot of " + std::to_string(slot_bytes) + " bytes holds no whole " + std::to_string(l.stride) +
                       "-byte point");
    return slot_bytes / l.stride;
  }
  if (slot_bytes < l.min_slot_bytes())
    return error(errc::invalid_argument, elements_call,
                 "a slot of " + std::to_string(slot_bytes) + " bytes is smaller than " + std::to_string(l.width) + "x" +
                     std::to_string(l.height) + " texels (" + std::to_string(l.min_slot_bytes()) + " bytes)");
  return std::uint64_t{l.width} * l.height;
}

}  // namespace membridge::ipc
