// Fixture: includes that are allowed (must NOT be reported): sync uses cuda's and vulkan's public
// headers, its own private header, and a relative path to a public header.
#include <membridge/cuda/device.hpp>
#include <membridge/vulkan/image.hpp>
#include "allowed_private.hpp"
#include "../../include/membridge/cuda/device.hpp"
