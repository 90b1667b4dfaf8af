#include <membridge/version.hpp>

namespace membridge {

// The values this library was built with (the generated header of this build, not a consumer's).
version_info version() noexcept {
  return {MEMBRIDGE_VERSION_MAJOR, MEMBRIDGE_VERSION_MINOR, MEMBRIDGE_VERSION_PATCH, MEMBRIDGE_VERSION_STRING};
}

}  // namespace membridge
