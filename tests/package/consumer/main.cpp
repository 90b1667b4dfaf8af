// Uses every built module through the umbrella header: proves headers, static libraries and their
// link dependencies reach a consumer. Succeeds with or without a GPU.
#include <membridge/membridge.hpp>

#include <cstdio>
#include <sys/mman.h>

namespace mb = membridge;
using namespace mb::literals;

int main() {
  // core + os
  auto fd = mb::os::unique_fd::from_native(::memfd_create("consumer", MFD_CLOEXEC));
  auto dup = mb::os::borrowed_fd(fd).duplicate();
  if (!dup || !*mb::os::borrowed_fd(*dup).is_close_on_exec()) return 1;
  // cuda: works on a GPU machine, reports driver_unavailable elsewhere; never crashes.
  auto dev = mb::cuda::device::open(0);
  if (dev) {
    auto buffer = mb::cuda::growable_buffer::create(*dev, {.size = 2_MiB, .max_size = 64_MiB});
    if (!buffer || !buffer->grow(4_MiB)) return 2;
    std::printf("device 0: %s, buffer grown to %s\n", dev->name().c_str(), mb::format_bytes(buffer->size()).c_str());
  } else if (dev.error().code() == mb::errc::driver_unavailable) {
    std::printf("no CUDA driver here: %s\n", dev.error().message().c_str());
  } else {
    std::printf("unexpected error: %s\n", dev.error().message().c_str());
    return 3;
  }
#if MEMBRIDGE_HAS_VULKAN
  // vulkan: a context needs a loader; without one the error is driver_unavailable, never a crash.
  auto vk = mb::vulkan::device_context::create();
  if (vk)
    std::printf("Vulkan device: %s (%s)\n", vk->name().c_str(), vk->uuid().to_string().c_str());
  else if (vk.error().code() != mb::errc::driver_unavailable && vk.error().code() != mb::errc::unsupported)
    return 4;
#endif
  // The library linked is the one whose headers were compiled (membridge::version() lives in core).
  const mb::version_info linked = mb::version();
  if (linked.major != MEMBRIDGE_VERSION_MAJOR || linked.minor != MEMBRIDGE_VERSION_MINOR ||
      linked.patch != MEMBRIDGE_VERSION_PATCH || linked.string != MEMBRIDGE_VERSION_STRING) {
    std::printf("headers %s, library %.*s\n", MEMBRIDGE_VERSION_STRING, static_cast<int>(linked.string.size()),
                linked.string.data());
    return 5;
  }
  std::printf("membridge %s consumer ok\n", MEMBRIDGE_VERSION_STRING);
  return 0;
}
