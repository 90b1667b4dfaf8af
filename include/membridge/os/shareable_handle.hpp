// membridge/os/shareable_handle.hpp: the handle type another process or API imports memory or a
// semaphore from, named once for both platforms: a POSIX fd on Linux, an NT HANDLE on Windows.
#pragma once

#if defined(_WIN32)
#include <membridge/os/unique_handle.hpp>
#else
#include <membridge/os/borrowed_fd.hpp>
#include <membridge/os/unique_fd.hpp>
#endif

namespace membridge::os {

#if defined(_WIN32)
/// An owned shareable handle: an NT HANDLE on Windows. Ownership: closes it on destruction.
using shareable_handle = unique_handle;
/// A borrowed shareable handle: an NT HANDLE on Windows. Ownership: borrowed.
using borrowed_shareable_handle = borrowed_handle;
#else
/// An owned shareable handle: a POSIX fd on Linux. Ownership: closes it on destruction.
using shareable_handle = unique_fd;
/// A borrowed shareable handle: a POSIX fd on Linux. Ownership: borrowed.
using borrowed_shareable_handle = borrowed_fd;
#endif

}  // namespace membridge::os
