// gpu tier, several GPUs, ipc: a subscriber process whose CUDA device is GPU 1 imports a buffer the
// parent published from GPU 0 (sync::import_into_cuda maps the publisher's chunks with access for
// GPU 1 over the peer link), reads the parent's fresh pattern with a kernel on GPU 1 and writes its
// own back, which the parent reads on GPU 0. On one GPU the test is reported as not run;
// MEMBRIDGE_REQUIRE_GPUS=2 turns that into a failure.
#include "ipc_gpu_test.hpp"

#include <membridge/cuda/peer.hpp>

namespace membridge::testing {
namespace {

/// Role "multi_gpu_subscriber" (args: socket path, seed to find, seed to write): subscribes, imports
/// buffer "data" on CUDA device 1, counts the words that differ from the first seed with a kernel on
/// GPU 1, writes the second seed's pattern from GPU 1, waits, and answers.
int multi_gpu_subscriber_child(const std::vector<std::string>& args) {
  if (args.size() != 3) return 20;
  const auto find_seed = static_cast<std::uint32_t>(std::strtoul(args[1].c_str(), nullptr, 10));
  const auto write_seed = static_cast<std::uint32_t>(std::strtoul(args[2].c_str(), nullptr, 10));
  auto dev0 = open_gpu();
  if (!dev0) return send_reply(failure(1, dev0.error().message())) ? 0 : 21;
  auto dev1 = cuda::device::open(dev0->shared_driver(), 1);
  if (!dev1) return send_reply(failure(2, dev1.error().message())) ? 0 : 21;
  auto sub = ipc::subscriber::connect({.path = args[0],
                                       .role = ipc::subscriber_role::observer,
                                       .client_name = "gpu-test subscriber on GPU 1",
                                       .timeout = 10s});
  if (!sub) return send_reply(failure(3, sub.error().message())) ? 0 : 21;
  const ipc::received_buffer* b = sub->buffer(data_name);
  if (b == nullptr) return send_reply(failure(4, "the subscriber received no buffer 'data'")) ? 0 : 21;
  auto view = sync::import_into_cuda(*dev1, *b);
  if (!view) return send_reply(failure(5, view.error().message())) ? 0 : 21;
  reply r;
  r.size = view->size();
  r.chunks = view->chunk_count();
  r.address = view->address();
  if (const cudaError_t rc = cudaSetDevice(1); rc != cudaSuccess)
    return send_reply(failure(6, std::string("cudaSetDevice(1): ") + cudaGetErrorName(rc))) ? 0 : 21;
  if (const cudaError_t rc = gpu::count_mismatches(view->data(), view->size(), find_seed, r.wrong_words);
      rc != cudaSuccess)
    return send_reply(failure(7, std::string("count_mismatches on GPU 1: ") + cudaGetErrorName(rc))) ? 0 : 21;
  cudaError_t rc = gpu::fill_pattern(view->data(), view->size(), write_seed);
  if (rc == cudaSuccess) rc = cudaDeviceSynchronize();
  if (rc != cudaSuccess)
    return send_reply(failure(8, std::string("fill_pattern on GPU 1: ") + cudaGetErrorName(rc))) ? 0 : 21;
  return send_reply(r) ? 0 : 21;
}
const child_role multi_gpu_subscriber_role("multi_gpu_subscriber", &multi_gpu_subscriber_child);

/// ipc_gpu_test's fixture (a socket directory) under a suite name of its own (gtest wants one fixture
/// class per suite, and ipc_gpu_test.cpp's is another translation unit's).
class multi_gpu_ipc_gpu_test : public ipc_gpu_test {};

TEST_F(multi_gpu_ipc_gpu_test, a_subscriber_process_on_the_other_gpu_reads_and_writes_the_publishers_buffer) {
  cuda::device other;
  open_second_gpu(other);
  if (IsSkipped() || HasFatalFailure()) return;
  require_peer_access_or_skip(other, dev_);
  if (IsSkipped() || HasFatalFailure()) return;
  cuda::chunk_policy policy;
  policy.max_chunk = 64_MiB;  // several chunks for the subscriber to import
  auto buffer = cuda::growable_buffer::create(dev_, {.size = 192_MiB, .max_size = 1_GiB, .chunks = policy});
  MB_OK(buffer);
  const std::uint32_t seed = fresh_seed();
  MB_CUDA_OK(gpu::fill_pattern(buffer->data(), buffer->size(), seed));
  MB_CUDA_OK(cudaDeviceSynchronize());
  auto pub = ipc::publisher::start({.listen = {.path = socket_path("other-gpu")}, .publisher_name = "gpu-test GPU 0"});
  MB_OK(pub);
  MB_OK(sync::publish_buffer(*pub, data_name, *buffer, dev_, {.name = "u32", .stride = 4}));

  std::uint32_t answer_seed = fresh_seed();
  while (answer_seed == seed) answer_seed = fresh_seed();
  auto child = spawn_child("multi_gpu_subscriber", {pub->path(), std::to_string(seed), std::to_string(answer_seed)});
  MB_OK(child);
  const reply r = receive_reply(*child, 120s);
  ASSERT_EQ(r.status, 0) << r.message;
  EXPECT_EQ(r.size, buffer->size());
  EXPECT_EQ(r.chunks, buffer->chunk_count());
  EXPECT_EQ(r.wrong_words, 0U) << "the subscriber on GPU 1 does not see the publisher's pattern";
  auto status = child->wait(30s);
  MB_OK(status);
  EXPECT_EQ(*status, 0);
  EXPECT_EQ(mismatches(buffer->data(), buffer->size(), answer_seed), 0ULL)
      << "GPU 0 does not see what the subscriber wrote from GPU 1";
}

}  // namespace
}  // namespace membridge::testing
