#include <membridge/core/units.hpp>
#include <membridge/cuda/peer.hpp>

#include "detail/device_state.hpp"

#include <string>
#include <utility>

namespace membridge::cuda {

namespace {

std::string pair_name(const device& from, const device& to) {
  return from.state()->describe() + " -> " + to.state()->describe();
}

result<void> check_pair(const char* where, const device& from, const device& to) {
  if (!from.valid() || !to.valid()) return error(errc::invalid_argument, where, "an empty device");
  // Two loads of one driver are one driver: compare the functions, not the wrapper objects.
  if (from.get_driver().api().cuDeviceCanAccessPeer != to.get_driver().api().cuDeviceCanAccessPeer)
    return error(errc::invalid_argument, where, "the devices were opened through two different drivers");
  return ok();
}

/// One P2P attribute of the link (handle `from` -> handle `to`).
result<int> p2p_attribute(const driver& drv, CUdevice_P2PAttribute attribute, CUdevice from, CUdevice to,
                          const char* what) {
  int value = 0;
  if (const CUresult rc = drv.api().cuDeviceGetP2PAttribute(&value, attribute, from, to); rc != CUDA_SUCCESS)
    return drv.make_error(rc, "cuDeviceGetP2PAttribute",
                          std::string("reading ") + what + " of the link " + std::to_string(from) + " -> " +
                              std::to_string(to));
  return value;
}

/// The link between two device handles of `drv` (CUDA ordinals: membridge opens device n as handle n).
result<peer_link> link_between(const driver& drv, CUdevice from, CUdevice to) {
  peer_link link;
  link.from = static_cast<int>(from);
  link.to = static_cast<int>(to);
  int can = 0;
  if (const CUresult rc = drv.api().cuDeviceCanAccessPeer(&can, from, to); rc != CUDA_SUCCESS)
    return drv.make_error(rc, "cuDeviceCanAccessPeer",
                          "asking whether device " + std::to_string(from) + " can access device " + std::to_string(to));
  link.access = can != 0;
  if (!link.access) return link;
  MEMBRIDGE_TRY_ASSIGN(const int atomics, p2p_attribute(drv, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, from,
                                                        to, "native atomics"));
  MEMBRIDGE_TRY_ASSIGN(const int arrays, p2p_attribute(drv, CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED,
                                                       from, to, "CUDA array access"));
  MEMBRIDGE_TRY_ASSIGN(link.performance_rank,
                       p2p_attribute(drv, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, from, to, "the performance rank"));
  link.native_atomics = atomics != 0;
  link.array_access = arrays != 0;
  return link;
}

CUmemAccess_flags flags_of(access rights) noexcept {
  switch (rights) {
    case access::none: return CU_MEM_ACCESS_FLAGS_PROT_NONE;
    case access::read: return CU_MEM_ACCESS_FLAGS_PROT_READ;
    case access::read_write: return CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  return CU_MEM_ACCESS_FLAGS_PROT_NONE;
}

}  // namespace

result<peer_link> query_peer(const device& from, const device& to) {
  MEMBRIDGE_TRY(check_pair("cuda::query_peer", from, to));
  if (from.native() == to.native())
    return error(errc::invalid_argument, "cuda::query_peer",
                 "a device is not its own peer (" + from.state()->describe() + ")");
  auto link = link_between(from.get_driver(), from.native(), to.native());
  if (!link) return std::move(link).error().add_context(pair_name(from, to));
  link->from = from.ordinal();
  link->to = to.ordinal();
  return link;
}

result<std::vector<peer_link>> peer_matrix(const driver& drv) {
  int count = 0;
  if (const CUresult rc = drv.api().cuDeviceGetCount(&count); rc != CUDA_SUCCESS)
    return drv.make_error(rc, "cuDeviceGetCount", "counting devices for the peer matrix");
  std::vector<CUdevice> handles;
  for (int i = 0; i < count; ++i) {
    CUdevice handle = 0;
    if (const CUresult rc = drv.api().cuDeviceGet(&handle, i); rc != CUDA_SUCCESS)
      return drv.make_error(rc, "cuDeviceGet", "device " + std::to_string(i) + " of the peer matrix");
    handles.push_back(handle);
  }
  std::vector<peer_link> out;
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < count; ++j) {
      if (i == j) continue;
      MEMBRIDGE_TRY_ASSIGN(peer_link link, link_between(drv, handles[static_cast<std::size_t>(i)],
                                                        handles[static_cast<std::size_t>(j)]));
      link.from = i;
      link.to = j;
      out.push_back(link);
    }
  return out;
}

result<void> require_peer_access(const device& from, const device& to) {
  MEMBRIDGE_TRY(check_pair("cuda::require_peer_access", from, to));
  if (from.native() == to.native()) return ok();
  MEMBRIDGE_TRY_ASSIGN(const peer_link link, query_peer(from, to));
  if (!link.access)
    return error(errc::unsupported, "cuda::require_peer_access",
                 from.state()->describe() + " cannot access the memory of " + to.state()->describe() +
                     " (cuDeviceCanAccessPeer says no: no NVLink or PCIe peer path between them, or peer "
                     "access is disabled); render or read on the GPU that holds the memory, or copy through host "
                     "memory");
  return ok();
}

result<void> set_access(const device& owner, CUdeviceptr address, std::size_t size,
                        std::span<const device_access> grants) {
  constexpr const char* where = "cuda::set_access";
  if (!owner.valid()) return error(errc::invalid_argument, where, "the owning device is empty");
  if (address == 0 || size == 0) return error(errc::invalid_argument, where, "no memory (address or size 0)");
  if (grants.empty()) return error(errc::invalid_argument, where, "no device to grant access to");
  std::vector<CUmemAccessDesc> descs;
  for (std::size_t i = 0; i < grants.size(); ++i) {
    const device* gpu = grants[i].gpu;
    if (gpu == nullptr || !gpu->valid())
      return error(errc::invalid_argument, where, "grant " + std::to_string(i) + " names no device");
    for (std::size_t j = 0; j < i; ++j)
      if (grants[j].gpu->native() == gpu->native())
        return error(errc::invalid_argument, where, gpu->state()->describe() + " is named twice");
    MEMBRIDGE_TRY(require_peer_access(*gpu, owner));
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = gpu->native();
    desc.flags = flags_of(grants[i].rights);
    descs.push_back(desc);
  }
  const auto& s = *owner.state();
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  if (const CUresult rc = s.api().cuMemSetAccess(address, size, descs.data(), descs.size()); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemSetAccess",
                  "granting " + std::to_string(descs.size()) + " device(s) access to " + format_bytes(size));
  return ok();
}

}  // namespace membridge::cuda
