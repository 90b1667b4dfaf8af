// Fixture: plants a relative include of another module's detail header (must be reported).
#include "../vulkan/detail/x.hpp"
