#include "cuda_support.hpp"

#include <exception>
#include <fstream>
#include <iostream>

namespace membridge::bench {

std::string where_text(const std::source_location& where) {
  std::string_view file = where.file_name();
  if (const auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return std::string(file) + ':' + std::to_string(where.line());
}

std::string cuda_error_text(cudaError_t rc) {
  return std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
}

void check_cuda(cudaError_t rc, std::string_view call, std::source_location where) {
  if (rc != cudaSuccess) throw bench_failure(where_text(where) + ' ' + std::string(call) + ": " + cuda_error_text(rc));
}

void ok_or_fail(const result<void>& r, std::string_view doing) {
  if (!r) throw bench_failure(std::string(doing) + ": " + r.error().message());
}

cuda_stream::cuda_stream() { check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }

cuda_stream::~cuda_stream() {
  if (stream_ != nullptr)
    if (const cudaError_t rc = cudaStreamDestroy(stream_); rc != cudaSuccess)
      std::cerr << "warning: cudaStreamDestroy: " << cuda_error_text(rc) << '\n';
}

void cuda_stream::synchronize() const { check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

cuda_event::cuda_event() { check_cuda(cudaEventCreate(&event_), "cudaEventCreate(&event_)"); }

cuda_event::~cuda_event() {
  if (event_ != nullptr) (void)cudaEventDestroy(event_);
}

double elapsed_ms(const cuda_event& from, const cuda_event& to) {
  float ms = 0.0F;
  check_cuda(cudaEventElapsedTime(&ms, from.get(), to.get()), "cudaEventElapsedTime(&ms, from.get(), to.get())");
  return static_cast<double>(ms);
}

void open_runtime_device(int ordinal) {
  int count = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&count); rc != cudaSuccess)
    throw device_unavailable("cudaGetDeviceCount: " + cuda_error_text(rc));
  if (count == 0) throw device_unavailable("cudaGetDeviceCount reports no device");
  if (ordinal >= count)
    throw device_unavailable("device " + std::to_string(ordinal) + " does not exist (" + std::to_string(count) +
                             " device" + (count == 1 ? "" : "s") + ")");
  if (const cudaError_t rc = cudaSetDevice(ordinal); rc != cudaSuccess)
    throw device_unavailable("cudaSetDevice(" + std::to_string(ordinal) + "): " + cuda_error_text(rc));
  if (const cudaError_t rc = cudaFree(nullptr); rc != cudaSuccess)
    throw device_unavailable("cudaFree(nullptr) (creating the primary context): " + cuda_error_text(rc));
}

std::size_t memory_in_use() {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo(&free_bytes, &total_bytes)");
  return total_bytes - free_bytes;
}

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + '.' + std::to_string((version % 1000) / 10);
}

void write_json_file(const std::string& path, const std::string& line) {
  std::ofstream file(path, std::ios::out | std::ios::trunc);
  file << line << '\n';
  file.flush();
  if (!file) throw bench_failure("cannot write the JSON line to " + path);
}

void emit_json_line(const json& j, const std::string& path) {
  const std::string line = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::cout << line << std::endl;
  if (!path.empty()) write_json_file(path, line);
}

int run_main(std::string_view program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const device_unavailable& e) {
    std::cerr << "no usable CUDA device: " << e.what() << '\n';
    return exit_no_device;
  } catch (const std::exception& e) {
    std::cerr << program << " failed: " << e.what() << '\n';
    return exit_failed;
  }
}

}  // namespace membridge::bench
