// Fixture: a private vulkan header (the target of the planted includes).
#pragma once
namespace membridge::vulkan::detail {
struct x {};
}  // namespace membridge::vulkan::detail
