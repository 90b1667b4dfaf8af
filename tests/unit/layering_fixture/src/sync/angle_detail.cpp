// Fixture: plants a <membridge/...> include of another module's detail header (must be reported).
#include <membridge/cuda/detail/y.hpp>
