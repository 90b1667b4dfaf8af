// membridge/cuda/peer.hpp: what one GPU may do with another GPU's memory, and access rights for a
// set of GPUs on mapped memory.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/driver.hpp>
#include <membridge/cuda/mapping.hpp>

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace membridge::cuda {

/// What kernels on GPU `from` can do with memory that lives on GPU `to` (cuDeviceCanAccessPeer and
/// cuDeviceGetP2PAttribute). VMM memory needs no cuCtxEnablePeerAccess: a GPU that `access` allows
/// is given rights on a mapping with cuMemSetAccess (set_access below).
struct peer_link {
  int from = 0;                 ///< The accessing GPU (CUDA ordinal).
  int to = 0;                   ///< The GPU whose memory is accessed.
  bool access = false;          ///< `from` can map and use `to`'s memory.
  bool native_atomics = false;  ///< Every CUDA atomic works over the link (false when no access).
  bool array_access = false;    ///< CUDA arrays on `to` are readable from `from` (false when no access).
  int performance_rank = 0;     ///< The driver's relative rank of the link, lower is faster (0 when no access).
};

/// The link from `from` to `to`, two different devices opened through one driver.
/// Errors: invalid_argument for an empty device, the same device twice or devices of two drivers;
/// the driver's (naming the call and both GPUs).
[[nodiscard]] result<peer_link> query_peer(const device& from, const device& to);

/// Every ordered pair of different devices that `drv` sees, (0,1), (0,2) ... (1,0) ...: empty with
/// one GPU. Opens no device and makes no context.
/// Errors: the driver's (naming the call and the pair).
/// Ownership: borrows `drv` for the call.
[[nodiscard]] result<std::vector<peer_link>> peer_matrix(const driver& drv);

/// Succeeds when kernels on `from` may use memory on `to`: the same device, or a peer that
/// cuDeviceCanAccessPeer allows. Errors: unsupported naming both GPUs when it does not;
/// invalid_argument for an empty device or devices of two drivers; the driver's.
[[nodiscard]] result<void> require_peer_access(const device& from, const device& to);

/// One GPU's rights in a set_access call.
struct device_access {
  const device* gpu = nullptr;           ///< Ownership: borrowed for the call.
  access rights = access::read_write;    ///< What its kernels may do.
};

/// Sets, with one cuMemSetAccess, each GPU's rights on `size` bytes at `address`: memory mapped on
/// `owner` (a mapping, or a growable/imported buffer's range). Each GPU other than `owner` is first
/// checked with require_peer_access, so a GPU without peer access is refused with both GPUs named
/// and nothing changes. The rights of GPUs not named stay as they were.
/// Narrowing a GPU's rights while its kernels still use the memory is undefined: wait for them first.
/// Errors: invalid_argument for an empty list, a null or empty device, a device named twice, an
/// address of 0 or a size of 0; unsupported from require_peer_access; the driver's.
/// Ownership: borrows `owner` and the devices for the call; the memory stays the caller's.
[[nodiscard]] result<void> set_access(const device& owner, CUdeviceptr address, std::size_t size,
                                      std::span<const device_access> grants);

}  // namespace membridge::cuda
