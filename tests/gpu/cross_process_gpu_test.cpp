// A growable buffer's chunk exported to another process: the child (this binary re-executed) gets the
// fd over a socketpair (SCM_RIGHTS), imports, maps and checks the parent's pattern, writes its own
// back, and the parent sees it. A second case shows an exported fd keeps the memory alive after the
// exporter has unmapped and released it.
#include "child_process.hpp"
#include "gpu_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <array>
#include <chrono>
#include <cstring>

namespace membridge::testing {
namespace {

using namespace membridge::literals;
using namespace std::chrono_literals;

struct chunk_request {
  std::uint64_t size;
  std::uint64_t first_word;  // the chunk's offset in the parent's buffer, in words
  std::uint32_t read_seed;   // what the child must find
  std::uint32_t write_seed;  // what the child writes back (0: write nothing)
};

struct chunk_reply {
  std::int32_t status;  // 0 ok, else the step that failed
  unsigned long long wrong_words;
  char message[400];
};

chunk_reply fail(std::int32_t status, const std::string& why) { return failed_reply<chunk_reply>(status, why); }

// The child's work: import the received fd into its own CUDA context and address space.
chunk_reply import_and_check(const chunk_request& q, os::borrowed_fd fd) {
  auto dev = open_gpu();
  if (!dev) return fail(1, dev.error().message());
  auto memory = cuda::vmm_allocation::import(*dev, fd, q.size);
  if (!memory) return fail(2, memory.error().message());
  auto range = cuda::address_range::reserve(*dev, q.size);
  if (!range) return fail(3, range.error().message());
  auto mapped = cuda::mapping::map(*range, 0, *memory);
  if (!mapped) return fail(4, mapped.error().message());
  void* p = reinterpret_cast<void*>(static_cast<std::uintptr_t>(mapped->address()));
  chunk_reply r{};
  if (gpu::count_mismatches(p, q.size, q.read_seed, r.wrong_words, q.first_word) != cudaSuccess)
    return fail(5, "count_mismatches failed");
  if (q.write_seed != 0) {
    if (gpu::fill_pattern(p, q.size, q.write_seed, q.first_word) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
      return fail(6, "fill_pattern failed");
  }
  return r;
}

int import_chunk_child(const std::vector<std::string>&) { return answer_one_request(&import_and_check); }
const child_role import_chunk_role("import_chunk", &import_chunk_child);

// Sends one exported chunk to a fresh child and returns its reply.
chunk_reply run_child(const chunk_request& q, os::unique_fd fd) {
  auto child = spawn_child("import_chunk");
  if (!child) return fail(100, child.error().message());
  const std::array<os::borrowed_fd, 1> fds{fd};
  if (auto sent = send_value(child->socket(), q, fds); !sent) return fail(101, sent.error().message());
  fd.reset();  // the child has its own copy now
  auto reply = receive_message(child->socket(), sizeof(chunk_reply), 120s);
  if (!reply) return fail(102, reply.error().message());
  chunk_reply r{};
  std::memcpy(&r, reply->payload.data(), sizeof r);
  const auto status = child->wait(30s);
  if (!status || *status != 0) return fail(103, "the child exited with status " + std::to_string(status ? *status : -1));
  return r;
}

TEST_F(gpu_test, a_child_process_imports_a_chunk_reads_the_parents_pattern_and_writes_back) {
  auto b = cuda::growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB});
  MB_OK(b);
  MB_OK(b->grow(192_MiB));  // two chunks: [0, 64 MiB) and [64 MiB, 192 MiB)
  ASSERT_EQ(b->chunk_count(), 2u);
  MB_CUDA_OK(gpu::fill_pattern(b->data(), 192_MiB, 0xAAAA));
  MB_CUDA_OK(cudaDeviceSynchronize());
  auto exported = b->export_chunk(1);
  MB_OK(exported);
  ASSERT_EQ(exported->offset, 64_MiB);
  ASSERT_EQ(exported->size, 128_MiB);

  const chunk_request q{exported->size, exported->offset / 4, 0xAAAA, 0xBBBB};
  const chunk_reply r = run_child(q, std::move(exported->fd));
  ASSERT_EQ(r.status, 0) << r.message;
  EXPECT_EQ(r.wrong_words, 0u) << "the child did not see the parent's data";
  EXPECT_EQ(mismatches(b->data<char>() + 64_MiB, 128_MiB, 0xBBBB, 64_MiB / 4), 0u) << "the child's data is not here";
  EXPECT_EQ(mismatches(b->data(), 64_MiB, 0xAAAA), 0u) << "the chunk the child never saw changed";
}

TEST_F(gpu_test, an_exported_fd_keeps_the_chunk_alive_after_the_buffer_shrinks) {
  auto b = cuda::growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB});
  MB_OK(b);
  MB_OK(b->grow(128_MiB));
  MB_CUDA_OK(gpu::fill_pattern(b->data(), 128_MiB, 0xC0DE));
  MB_CUDA_OK(cudaDeviceSynchronize());
  auto exported = b->export_chunk(1);
  MB_OK(exported);
  MB_OK(b->shrink(64_MiB));  // unmaps and releases chunk 1 in this process
  ASSERT_EQ(b->chunk_count(), 1u);
  const chunk_request q{exported->size, exported->offset / 4, 0xC0DE, 0};
  const chunk_reply r = run_child(q, std::move(exported->fd));
  ASSERT_EQ(r.status, 0) << r.message;
  EXPECT_EQ(r.wrong_words, 0u) << "the memory behind the fd did not survive the release";
}

}  // namespace
}  // namespace membridge::testing
