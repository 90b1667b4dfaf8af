// Fixture: plants a cuda source reaching sideways into vulkan by relative path (must be reported:
// cuda may not use vulkan at all).
#include "../vulkan/detail/x.hpp"
