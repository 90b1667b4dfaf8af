// The scripted driver's events, stream waits, asynchronous copies and pinned host memory: enough of
// the real driver's rules for sync::cross_gpu_link, checked call by call. Every enqueued operation
// is kept in stream_ops_ (in order) for tests to compare; copies must stay inside mapped device
// memory and live pinned host blocks.
#include "fake_cuda_common.hpp"
#include "fake_cuda_driver.hpp"

#include <string>
#include <utility>

namespace membridge::testing {

namespace {

fake_cuda& active() { return fake_cuda::active(); }

using fake_detail::hex;

// A stream the fake made (or the legacy default stream, null).
bool known_stream(CUstream stream) { return stream == nullptr || active().streams_.count(stream) != 0; }

bool known_event(CUevent event) { return active().events_.count(event) != 0; }

// [address, address + bytes) inside one mapping of the model.
bool mapped(CUdeviceptr address, std::size_t bytes) {
  const auto& maps = active().mappings_;
  auto m = maps.upper_bound(address);
  if (m == maps.begin()) return false;
  --m;
  return address >= m->second.address && address + bytes <= m->second.address + m->second.size;
}

// [pointer, pointer + bytes) inside one live pinned host block.
bool pinned(const void* pointer, std::size_t bytes) {
  const auto p = reinterpret_cast<std::uintptr_t>(pointer);
  const auto& blocks = active().host_sizes_;
  auto b = blocks.upper_bound(p);
  if (b == blocks.begin()) return false;
  --b;
  return p >= b->first && p + bytes <= b->first + b->second;
}

CUresult fake_cuEventCreate(CUevent* out, unsigned int flags) {
  FAKE_ENTER("cuEventCreate");
  FAKE_REQUIRE_CONTEXT("cuEventCreate");
  auto& f = active();
  constexpr unsigned int known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (out == nullptr || (flags & ~known) != 0) {
    f.note_misuse("cuEventCreate with a null output or unknown flags");
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto event = reinterpret_cast<CUevent>(static_cast<std::uintptr_t>(f.next_id_++));
  f.events_.insert(event);
  *out = event;
  return CUDA_SUCCESS;
}

CUresult fake_cuEventDestroy(CUevent event) {
  FAKE_ENTER("cuEventDestroy");
  auto& f = active();
  if (!fake_detail::forget(f.events_, event, "cuEventDestroy of an unknown event")) return CUDA_ERROR_INVALID_HANDLE;
  f.recorded_events_.erase(event);
  return CUDA_SUCCESS;
}

CUresult fake_cuEventRecord(CUevent event, CUstream stream) {
  FAKE_ENTER("cuEventRecord");
  auto& f = active();
  if (!known_event(event) || !known_stream(stream)) {
    f.note_misuse("cuEventRecord of an unknown event or on an unknown stream");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  f.recorded_events_.insert(event);
  f.stream_ops_.push_back({"record", stream, event, 0, 0, 0});
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  FAKE_ENTER("cuStreamWaitEvent");
  auto& f = active();
  if (!known_event(event) || !known_stream(stream) || flags != 0) {
    f.note_misuse("cuStreamWaitEvent on an unknown stream or event, or with flags");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  f.stream_ops_.push_back({"wait", stream, event, 0, 0, 0});
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamSynchronize(CUstream stream) {
  FAKE_ENTER("cuStreamSynchronize");
  auto& f = active();
  if (!known_stream(stream)) {
    f.note_misuse("cuStreamSynchronize of an unknown stream");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  f.stream_ops_.push_back({"sync", stream, nullptr, 0, 0, 0});
  return CUDA_SUCCESS;
}

CUresult fake_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes, CUstream stream) {
  FAKE_ENTER("cuMemcpyDtoDAsync");
  FAKE_REQUIRE_CONTEXT("cuMemcpyDtoDAsync");
  auto& f = active();
  if (!known_stream(stream) || bytes == 0 || !mapped(dst, bytes) || !mapped(src, bytes)) {
    f.note_misuse("cuMemcpyDtoDAsync of " + std::to_string(bytes) + " bytes " + hex(src) + " -> " + hex(dst) +
                  " outside mapped memory or on an unknown stream");
    return CUDA_ERROR_INVALID_VALUE;
  }
  f.stream_ops_.push_back({"dtod", stream, nullptr, dst, src, bytes});
  return CUDA_SUCCESS;
}

CUresult fake_cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, std::size_t bytes, CUstream stream) {
  FAKE_ENTER("cuMemcpyDtoHAsync");
  FAKE_REQUIRE_CONTEXT("cuMemcpyDtoHAsync");
  auto& f = active();
  if (!known_stream(stream) || bytes == 0 || !pinned(dst, bytes) || !mapped(src, bytes)) {
    f.note_misuse("cuMemcpyDtoHAsync outside mapped or pinned memory, or on an unknown stream");
    return CUDA_ERROR_INVALID_VALUE;
  }
  f.stream_ops_.push_back({"dtoh", stream, nullptr, reinterpret_cast<std::uintptr_t>(dst), src, bytes});
  return CUDA_SUCCESS;
}

CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream stream) {
  FAKE_ENTER("cuMemcpyHtoDAsync");
  FAKE_REQUIRE_CONTEXT("cuMemcpyHtoDAsync");
  auto& f = active();
  if (!known_stream(stream) || bytes == 0 || !mapped(dst, bytes) || !pinned(src, bytes)) {
    f.note_misuse("cuMemcpyHtoDAsync outside mapped or pinned memory, or on an unknown stream");
    return CUDA_ERROR_INVALID_VALUE;
  }
  f.stream_ops_.push_back({"htod", stream, nullptr, dst, reinterpret_cast<std::uintptr_t>(src), bytes});
  return CUDA_SUCCESS;
}

CUresult fake_cuMemHostAlloc(void** out, std::size_t bytes, unsigned int flags) {
  FAKE_ENTER("cuMemHostAlloc");
  FAKE_REQUIRE_CONTEXT("cuMemHostAlloc");
  auto& f = active();
  constexpr unsigned int known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (out == nullptr || bytes == 0 || (flags & ~known) != 0) {
    f.note_misuse("cuMemHostAlloc with a null output, 0 bytes or unknown flags");
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto block = std::make_unique<std::byte[]>(bytes);
  const auto p = reinterpret_cast<std::uintptr_t>(block.get());
  f.host_sizes_[p] = bytes;
  f.host_blocks_[p] = std::move(block);
  *out = reinterpret_cast<void*>(p);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemFreeHost(void* pointer) {
  FAKE_ENTER("cuMemFreeHost");
  auto& f = active();
  const auto p = reinterpret_cast<std::uintptr_t>(pointer);
  if (!fake_detail::forget(f.host_blocks_, p, "cuMemFreeHost of memory cuMemHostAlloc did not return"))
    return CUDA_ERROR_INVALID_VALUE;
  f.host_sizes_.erase(p);
  return CUDA_SUCCESS;
}

}  // namespace

void fake_cuda::add_event_leaks(std::vector<std::string>& out) const {
  for (const CUevent event : events_) out.push_back("event " + hex(reinterpret_cast<std::uintptr_t>(event)));
  for (const auto& [p, size] : host_sizes_) out.push_back("pinned host memory " + hex(p) + "+" + std::to_string(size));
}

void fake_cuda::fill_event_table(cuda::driver_api& t) {
  FAKE_FILL(t, cuEventCreate);
  FAKE_FILL(t, cuEventDestroy);
  FAKE_FILL(t, cuEventRecord);
  FAKE_FILL(t, cuStreamWaitEvent);
  FAKE_FILL(t, cuStreamSynchronize);
  FAKE_FILL(t, cuMemcpyDtoDAsync);
  FAKE_FILL(t, cuMemcpyDtoHAsync);
  FAKE_FILL(t, cuMemcpyHtoDAsync);
  FAKE_FILL(t, cuMemHostAlloc);
  FAKE_FILL(t, cuMemFreeHost);
}

}  // namespace membridge::testing
