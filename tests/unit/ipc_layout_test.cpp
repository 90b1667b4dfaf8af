// unit tier: the layout grammar of element_format::name (ipc/layout.hpp): every form parsed and
// formatted back, every rejection an invalid_argument that names the problem.
#include <membridge/ipc/layout.hpp>

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

namespace membridge::ipc {
namespace {

layout parsed(std::string_view name, std::uint32_t stride = 0) {
  auto l = parse_layout(name, stride);
  EXPECT_TRUE(l) << name << ": " << (l ? std::string() : l.error().message());
  return l ? *l : layout{};
}

void expect_rejected(std::string_view name, std::uint32_t stride, std::string_view says) {
  auto l = parse_layout(name, stride);
  ASSERT_FALSE(l) << "'" << name << "' (stride " << stride << ") was accepted";
  EXPECT_EQ(l.error().code(), errc::invalid_argument) << name;
  EXPECT_NE(l.error().message().find(says), std::string::npos)
      << "'" << name << "': the message '" << l.error().message() << "' does not say '" << says << "'";
}

/// One name parse_layout must reject, with its stride and a piece of the message it must give.
struct rejection {
  std::string_view name;
  std::uint32_t stride;
  std::string_view says;
};

void expect_each_rejected(std::initializer_list<rejection> cases) {
  for (const rejection& r : cases) {
    expect_rejected(r.name, r.stride, r.says);
  }
}

TEST(ipc_layout, points_forms_parse_with_packed_or_wider_strides) {
  const layout f3 = parsed("points:float3");
  EXPECT_EQ(f3.kind, layout_kind::points);
  EXPECT_EQ(f3.position, field_type::float3);
  EXPECT_EQ(f3.colour, field_type::none);
  EXPECT_EQ(f3.stride, 12U);
  EXPECT_EQ(f3.fields_size(), 12U);

  const layout f4 = parsed("points:float4", 16);
  EXPECT_EQ(f4.position, field_type::float4);
  EXPECT_EQ(f4.stride, 16U);

  const layout rgba = parsed("points:float3,rgba8", 32);
  EXPECT_EQ(rgba.colour, field_type::rgba8);
  EXPECT_EQ(rgba.colour_offset(), 12U);
  EXPECT_EQ(rgba.fields_size(), 16U);
  EXPECT_EQ(rgba.stride, 32U) << "extra bytes after the fields are allowed";

  const layout scalar = parsed("points:float4,r32f");
  EXPECT_EQ(scalar.colour, field_type::r32f);
  EXPECT_EQ(scalar.colour_offset(), 16U);
  EXPECT_EQ(scalar.stride, 20U);
  EXPECT_EQ(scalar.min_slot_bytes(), 0U);
}

TEST(ipc_layout, image_heightfield_and_particles_parse) {
  const layout img = parsed("image:rgba8:640x480");
  EXPECT_EQ(img.kind, layout_kind::image);
  EXPECT_EQ(img.colour, field_type::rgba8);
  EXPECT_EQ(img.width, 640U);
  EXPECT_EQ(img.height, 480U);
  EXPECT_EQ(img.stride, 4U);
  EXPECT_EQ(img.min_slot_bytes(), 640U * 480U * 4U);

  const layout r = parsed("image:r32f:1x65536", 4);
  EXPECT_EQ(r.colour, field_type::r32f);
  EXPECT_EQ(r.height, 65536U);

  const layout h = parsed("heightfield:r32f:256x128");
  EXPECT_EQ(h.kind, layout_kind::heightfield);
  EXPECT_EQ(h.colour, field_type::r32f);
  EXPECT_EQ(h.width, 256U);
  EXPECT_EQ(h.height, 128U);

  const layout p = parsed("membridge.particles.v1", 32);
  EXPECT_TRUE(p.particles_v1);
  EXPECT_EQ(p.kind, layout_kind::points);
  EXPECT_EQ(p.position, field_type::float4);
  EXPECT_EQ(p.stride, 32U);
  EXPECT_EQ(parsed("membridge.particles.v1").stride, 32U);
}

TEST(ipc_layout, format_round_trips_every_form) {
  for (const auto& [name, stride] : std::initializer_list<std::pair<std::string, std::uint32_t>>{
           {"points:float3", 12}, {"points:float4", 24}, {"points:float3,rgba8", 16}, {"points:float4,r32f", 32},
           {"image:rgba8:3x5", 4}, {"image:r32f:64x64", 4}, {"heightfield:r32f:7x9", 4},
           {"membridge.particles.v1", 32}}) {
    const layout l = parsed(name, stride);
    EXPECT_EQ(format_layout(l), name);
    const element_format f = to_element_format(l);
    EXPECT_EQ(f.name, name);
    EXPECT_EQ(f.stride, stride);
    auto again = parse_layout(f);
    ASSERT_TRUE(again) << name;
    EXPECT_EQ(*again, l) << name;
  }
}

TEST(ipc_layout, unknown_kinds_and_fields_are_rejected_by_name) {
  expect_each_rejected({
      {"", 0, "empty"},
      {"voxels:r32f:4x4", 0, "unknown kind 'voxels'"},
      {"float4", 16, "unknown kind 'float4'"},
      {"points", 0, "needs its fields"},
      {"points:", 0, "needs its fields"},
      {"points:float2", 0, "position 'float2'"},
      {"points:rgba8", 0, "position 'rgba8'"},
      {"points:float3,float4", 0, "colour 'float4'"},
      {"points:float3,", 0, "colour ''"},
      {"points:float3,rgba8,r32f", 0, "colour 'rgba8,r32f'"},
      {"image:float4:4x4", 0, "image texel 'float4'"},
      {"image:rgba8", 0, "expected <texel>:<W>x<H>"},
      {"heightfield:rgba8:4x4", 0, "heightfield texel 'rgba8'"},
      {"Points:float3", 0, "unknown kind 'Points'"},
  });
}

TEST(ipc_layout, bad_sizes_are_rejected) {
  expect_each_rejected({
      {"image:rgba8:0x4", 0, "width 0 is not in 1..65536"},
      {"image:rgba8:4x0", 0, "height 0"},
      {"image:rgba8:65537x1", 0, "width 65537"},
      {"image:rgba8:4", 0, "not <W>x<H>"},
      {"image:rgba8:x4", 0, "width '' is not a decimal number"},
      {"image:rgba8:4x", 0, "height '' is not a decimal number"},
      {"heightfield:r32f:-4x4", 0, "width '-4'"},
      {"heightfield:r32f:4x4:extra", 0, "height '4:extra'"},
      {"image:r32f:99999999999999999999x4", 0, "not a decimal number"},
      {"image:rgba8:4 x4", 0, "width '4 '"},
  });
}

TEST(ipc_layout, strides_smaller_than_the_fields_or_wrong_for_texels_are_rejected) {
  expect_each_rejected({
      {"points:float3", 8, "stride 8 is smaller than its fields (12 bytes)"},
      {"points:float4,rgba8", 16, "stride 16 is smaller than its fields (20 bytes)"},
      {"image:rgba8:4x4", 8, "stride must be 4"},
      {"heightfield:r32f:4x4", 2, "stride must be 4"},
      {"membridge.particles.v1", 16, "32-byte particles"},
  });
}

TEST(ipc_layout, names_longer_than_max_name_size_are_rejected) {
  std::string name = "points:float3";
  name.append(max_name_size + 1 - name.size(), ' ');
  ASSERT_EQ(name.size(), max_name_size + 1);
  expect_rejected(name, 0, "longer than 64");
}

TEST(ipc_layout, elements_in_slot_counts_points_and_checks_texels) {
  const layout pts = parsed("points:float3,rgba8", 16);
  auto n = elements_in_slot(pts, 16 * 1000 + 7);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 1000U) << "bytes after the last whole point are not drawn";
  auto none = elements_in_slot(pts, 15);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::invalid_argument);

  const layout img = parsed("image:r32f:8x4");
  auto texels = elements_in_slot(img, 8 * 4 * 4 + 100);
  ASSERT_TRUE(texels);
  EXPECT_EQ(*texels, 32U);
  auto small = elements_in_slot(img, 8 * 4 * 4 - 4);
  ASSERT_FALSE(small);
  EXPECT_NE(small.error().message().find("smaller than 8x4 texels (128 bytes)"), std::string::npos)
      << small.error().message();
}

}  // namespace
}  // namespace membridge::ipc
