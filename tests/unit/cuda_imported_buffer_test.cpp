// imported_buffer on the scripted driver: chunks another buffer exported, imported in order at fixed
// offsets of one reserved range; refusals that change nothing; truncation; teardown order; and a
// failure at every step of an append leaving the buffer and the driver as they were.
#include "fake_driver_test.hpp"
#include "fake_import_steps.hpp"
#include "fd_leak_listener.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/imported_buffer.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::access;
using membridge::cuda::exported_chunk;
using membridge::cuda::growable_buffer;
using membridge::cuda::imported_buffer;
using membridge::testing::export_all;
using membridge::testing::fail_every_step;
namespace os = membridge::os;

class imported_buffer_test : public membridge::testing::fake_driver_test {
 protected:
  // The exporter: a growable buffer with chunks of 64, 64 and 128 MiB (offsets 0, 64, 128 MiB).
  growable_buffer make_exporter() {
    auto b = growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB});
    if (!b) {
      ADD_FAILURE() << b.error().message();
      return {};
    }
    EXPECT_TRUE(b->grow(128_MiB));
    EXPECT_TRUE(b->grow(256_MiB));
    EXPECT_EQ(b->chunk_count(), 3u);
    return std::move(b).value();
  }

  /// The exporter (make_exporter), each of its chunks exported, and a view reserved for its max_size().
  struct import_setup {
    growable_buffer exporter;
    std::vector<exported_chunk> chunks;
    imported_buffer view;
  };
  import_setup exported_and_reserved() {
    import_setup out;
    out.exporter = make_exporter();
    out.chunks = export_all(out.exporter);
    out.view = reserve(out.exporter.max_size());
    return out;
  }

  imported_buffer reserve(std::size_t bytes) {
    return membridge::testing::value_or_failure(imported_buffer::reserve(dev_, bytes));
  }

  // Each of the view's first chunks must be mapped at its offset, to the same physical memory as the
  // exporter's chunk there, with `rights`; and nothing else may be mapped in the view's range.
  void expect_mirrors(const imported_buffer& view, const growable_buffer& exporter, std::size_t chunks,
                      int rights = CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
    const auto state = fake_.state();
    std::size_t end = 0;
    for (std::size_t i = 0; i < chunks; ++i) {
      const auto c = exporter.chunk(i);
      const auto mine = state.mappings.find(view.address() + c.offset);
      ASSERT_NE(mine, state.mappings.end()) << "chunk " << i << " is not mapped in the view";
      const auto theirs = state.mappings.find(exporter.address() + c.offset);
      ASSERT_NE(theirs, state.mappings.end());
      EXPECT_EQ(mine->second.size, c.size);
      EXPECT_EQ(mine->second.physical_id, theirs->second.physical_id) << "chunk " << i << " is other memory";
      EXPECT_NE(mine->second.handle, theirs->second.handle) << "the view must hold its own imported handle";
      EXPECT_EQ(mine->second.access, rights);
      end = c.offset + c.size;
    }
    EXPECT_EQ(view.capacity(), end);
    EXPECT_EQ(view.chunk_count(), chunks);
    const auto in_view = std::count_if(state.mappings.begin(), state.mappings.end(), [&](const auto& m) {
      return m.first >= view.address() && m.first < view.address() + view.reserved_size();
    });
    EXPECT_EQ(static_cast<std::size_t>(in_view), chunks);
  }

  void TearDown() override {
    dev_ = {};  // drop the test's share of the primary context before the leak check
    fake_driver_test::TearDown();
  }

  membridge::cuda::device dev_ = open_device();
};

TEST_F(imported_buffer_test, reserve_takes_the_whole_range_and_maps_nothing) {
  auto view = reserve(1_GiB + 1);
  EXPECT_TRUE(view.valid());
  EXPECT_NE(view.address(), 0u);
  EXPECT_EQ(view.data<char>(), reinterpret_cast<char*>(view.address()));
  EXPECT_EQ(view.reserved_size(), 1_GiB + 2_MiB);  // rounded up to the granularity
  EXPECT_EQ(view.size(), 0u);
  EXPECT_EQ(view.capacity(), 0u);
  EXPECT_EQ(view.chunk_count(), 0u);
  const auto state = fake_.state();
  EXPECT_EQ(state.ranges.at(view.address()), 1_GiB + 2_MiB);
  EXPECT_TRUE(state.mappings.empty());
  EXPECT_TRUE(state.handles.empty());

  EXPECT_EQ(imported_buffer::reserve(dev_, 0).error().code(), errc::invalid_argument);
  EXPECT_EQ(imported_buffer::reserve({}, 1_GiB).error().code(), errc::invalid_argument);
  EXPECT_EQ(fake_.state().ranges.size(), 1u);
  imported_buffer empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_EQ(empty.reserved_size(), 0u);
}

TEST_F(imported_buffer_test, appending_in_order_maps_the_exporters_memory_at_a_fixed_address) {
  auto [exporter, chunks, view] = exported_and_reserved();
  ASSERT_EQ(chunks.size(), 3u);
  const CUdeviceptr base = view.address();
  const auto fds_before = membridge::testing::open_fds();
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    ASSERT_TRUE(view.append(chunks[i].fd, chunks[i].offset, chunks[i].size)) << "chunk " << i;
    EXPECT_EQ(view.address(), base);
    expect_mirrors(view, exporter, i + 1);
  }
  EXPECT_EQ(membridge::testing::open_fds(), fds_before) << "the driver's duplicates must be closed";
  for (const auto& c : chunks) EXPECT_NE(::fcntl(c.fd.get(), F_GETFD), -1) << "the caller's fd must stay open";
  EXPECT_EQ(view.capacity(), 256_MiB);
  EXPECT_EQ(view.size(), 0u);  // set by set_size, not by append
  ASSERT_TRUE(view.set_size(200_MiB));
  EXPECT_EQ(view.size(), 200_MiB);
  // The view shares physical memory: nothing new was allocated.
  EXPECT_EQ(fake_.state().free_memory, 80_GiB - 256_MiB);
}

TEST_F(imported_buffer_test, append_grants_the_rights_asked_for) {
  auto [exporter, chunks, view] = exported_and_reserved();
  ASSERT_TRUE(view.append(chunks[0].fd, 0, chunks[0].size, access::read));
  expect_mirrors(view, exporter, 1, CU_MEM_ACCESS_FLAGS_PROT_READ);
}

TEST_F(imported_buffer_test, refused_appends_change_nothing_and_call_no_driver) {
  auto [exporter, chunks, view] = exported_and_reserved();
  ASSERT_TRUE(view.append(chunks[0].fd, 0, chunks[0].size));
  const auto before = fake_.state();
  const int calls = fake_.counted_calls();

  const auto expect_refused = [&](const membridge::result<void>& r, const std::string& words) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), errc::invalid_argument);
    EXPECT_NE(r.error().message().find(words), std::string::npos) << r.error().message();
    EXPECT_EQ(fake_.state(), before);
    EXPECT_EQ(fake_.counted_calls(), calls);
    EXPECT_EQ(view.capacity(), 64_MiB);
    EXPECT_EQ(view.chunk_count(), 1u);
    EXPECT_EQ(view.size(), 0u);
  };
  // Out of order: a gap, a repeat of the first chunk's offset.
  expect_refused(view.append(chunks[2].fd, chunks[2].offset, chunks[2].size), "expected offset");
  expect_refused(view.append(chunks[1].fd, 0, chunks[1].size), "expected offset");
  // Sizes: 0, not a granularity multiple, past the reserved range.
  expect_refused(view.append(chunks[1].fd, 64_MiB, 0), "size is 0");
  expect_refused(view.append(chunks[1].fd, 64_MiB, 3_MiB), "not a multiple of the granularity");
  expect_refused(view.append(chunks[1].fd, 64_MiB, 1_GiB), "does not fit");
  // No fd; an empty view.
  expect_refused(view.append(os::borrowed_fd{}, 64_MiB, chunks[1].size), "fd is empty");
  imported_buffer empty;
  expect_refused(empty.append(chunks[1].fd, 0, chunks[1].size), "empty");
  EXPECT_EQ(empty.capacity(), 0u);
  // The right call still works afterwards.
  ASSERT_TRUE(view.append(chunks[1].fd, chunks[1].offset, chunks[1].size));
  expect_mirrors(view, exporter, 2);
}

TEST_F(imported_buffer_test, a_foreign_fd_fails_and_leaves_the_view_and_the_fd_as_they_were) {
  auto [exporter, chunks, view] = exported_and_reserved();
  ASSERT_TRUE(view.append(chunks[0].fd, 0, chunks[0].size));
  const auto before = fake_.state();
  auto foreign = os::unique_fd::from_native(::memfd_create("not-cuda", MFD_CLOEXEC));
  ASSERT_TRUE(foreign.valid());
  const auto r = view.append(foreign, 64_MiB, 64_MiB);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::invalid_argument);
  EXPECT_EQ(r.error().call(), "cuMemImportFromShareableHandle");
  EXPECT_NE(r.error().message().find("importing the chunk at offset 64 MiB"), std::string::npos)
      << r.error().message();
  EXPECT_NE(::fcntl(foreign.get(), F_GETFD), -1);
  EXPECT_EQ(fake_.state(), before);
  EXPECT_EQ(view.capacity(), 64_MiB);
  EXPECT_EQ(view.chunk_count(), 1u);
  expect_mirrors(view, exporter, 1);
}

// Whichever driver call of an append fails (context, import, map, access), the view and the driver
// are exactly as before: no handle, mapping or range left behind, and nothing misused.
TEST_F(imported_buffer_test, a_failure_at_every_step_of_append_leaves_the_view_as_it_was) {
  auto [exporter, chunks, view] = exported_and_reserved();
  ASSERT_TRUE(view.append(chunks[0].fd, 0, chunks[0].size));
  ASSERT_TRUE(view.set_size(10_MiB));
  const int k = fail_every_step(fake_, view, [&] { return view.append(chunks[1].fd, chunks[1].offset, chunks[1].size); });
  EXPECT_GE(k, 3) << "too few steps: the loop did not cover import/map/access";
  expect_mirrors(view, exporter, 2);
  EXPECT_EQ(view.size(), 10_MiB);
}

// append_all: every chunk imported and mapped, then one cuMemSetAccess over all of them.
TEST_F(imported_buffer_test, append_all_maps_every_chunk_and_grants_access_with_one_call) {
  auto [exporter, chunks, view] = exported_and_reserved();
  ASSERT_EQ(chunks.size(), 3u);
  ASSERT_TRUE(view.append(chunks[0].fd, 0, chunks[0].size));
  const auto fds_before = membridge::testing::open_fds();
  const std::size_t calls_before = fake_.calls().size();
  const std::vector<imported_buffer::chunk_source> rest{{chunks[1].fd, chunks[1].offset, chunks[1].size},
                                                        {chunks[2].fd, chunks[2].offset, chunks[2].size}};
  ASSERT_TRUE(view.append_all(rest, access::read));
  const std::vector<std::string> made(fake_.calls().begin() + static_cast<std::ptrdiff_t>(calls_before),
                                      fake_.calls().end());
  EXPECT_EQ(std::count(made.begin(), made.end(), "cuMemSetAccess"), 1) << membridge::testing::join(made);
  EXPECT_EQ(std::count(made.begin(), made.end(), "cuMemMap"), 2) << membridge::testing::join(made);
  EXPECT_EQ(std::count(made.begin(), made.end(), "cuMemImportFromShareableHandle"), 2);
  EXPECT_EQ(membridge::testing::open_fds(), fds_before) << "the driver's duplicates must be closed";
  // The first chunk keeps read_write; the two new ones are read-only.
  const auto state = fake_.state();
  EXPECT_EQ(state.mappings.at(view.address()).access, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(state.mappings.at(view.address() + 64_MiB).access, CU_MEM_ACCESS_FLAGS_PROT_READ);
  EXPECT_EQ(state.mappings.at(view.address() + 128_MiB).access, CU_MEM_ACCESS_FLAGS_PROT_READ);
  EXPECT_EQ(view.capacity(), 256_MiB);
  EXPECT_EQ(view.chunk_count(), 3u);
  EXPECT_TRUE(fake_.misuse().empty()) << membridge::testing::join(fake_.misuse());
  // An empty list changes nothing.
  EXPECT_TRUE(view.append_all({}));
  EXPECT_EQ(view.chunk_count(), 3u);
}

TEST_F(imported_buffer_test, append_all_checks_every_chunk_before_any_driver_call) {
  auto [exporter, chunks, view] = exported_and_reserved();
  const auto before = fake_.state();
  const int calls = fake_.counted_calls();
  // The second chunk is out of order (a gap): the first, valid one is not imported either.
  const std::vector<imported_buffer::chunk_source> gap{{chunks[0].fd, chunks[0].offset, chunks[0].size},
                                                       {chunks[2].fd, chunks[2].offset, chunks[2].size}};
  const auto r = view.append_all(gap);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::invalid_argument);
  EXPECT_NE(r.error().message().find("expected offset"), std::string::npos) << r.error().message();
  EXPECT_EQ(fake_.counted_calls(), calls);
  EXPECT_EQ(fake_.state(), before);
  EXPECT_EQ(view.chunk_count(), 0u);
  const std::vector<imported_buffer::chunk_source> bad_size{{chunks[0].fd, 0, chunks[0].size}, {chunks[1].fd, 64_MiB, 3_MiB}};
  EXPECT_FALSE(view.append_all(bad_size));
  EXPECT_EQ(fake_.counted_calls(), calls);
  EXPECT_EQ(view.capacity(), 0u);
}

// Whichever driver call of an append_all of two chunks fails (import or map of either, the one
// access call), nothing stays behind: no handle, no mapping, the view as it was.
TEST_F(imported_buffer_test, a_failure_at_every_step_of_append_all_leaves_the_view_as_it_was) {
  auto [exporter, chunks, view] = exported_and_reserved();
  ASSERT_TRUE(view.append(chunks[0].fd, 0, chunks[0].size));
  const std::vector<imported_buffer::chunk_source> rest{{chunks[1].fd, chunks[1].offset, chunks[1].size},
                                                        {chunks[2].fd, chunks[2].offset, chunks[2].size}};
  const int k = fail_every_step(fake_, view, [&] { return view.append_all(rest); });
  EXPECT_GE(k, 5) << "too few steps: the loop did not cover both imports, both maps and the access call";
  expect_mirrors(view, exporter, 3);
}

TEST_F(imported_buffer_test, mapping_set_access_over_several_mappings_refuses_gaps_and_empty_lists) {
  auto range = membridge::cuda::address_range::reserve(dev_, 256_MiB);
  ASSERT_TRUE(range) << range.error().message();
  auto a = membridge::cuda::vmm_allocation::create(dev_, 64_MiB);
  auto b = membridge::cuda::vmm_allocation::create(dev_, 64_MiB);
  ASSERT_TRUE(a && b);
  std::vector<membridge::cuda::mapping> maps;
  auto ma = membridge::cuda::mapping::map(*range, 0, *a, access::none);
  auto mb = membridge::cuda::mapping::map(*range, 128_MiB, *b, access::none);  // a gap at 64 MiB
  ASSERT_TRUE(ma && mb);
  maps.push_back(std::move(*ma));
  maps.push_back(std::move(*mb));
  const int calls = fake_.counted_calls();
  const auto gap = membridge::cuda::mapping::set_access(maps, access::read_write);
  ASSERT_FALSE(gap);
  EXPECT_EQ(gap.error().code(), errc::invalid_argument);
  EXPECT_NE(gap.error().message().find("does not start where"), std::string::npos) << gap.error().message();
  EXPECT_EQ(fake_.counted_calls(), calls);
  EXPECT_EQ(maps[0].rights(), access::none);
  const auto none = membridge::cuda::mapping::set_access({}, access::read);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::invalid_argument);
  // Adjacent: one call, rights recorded on both.
  maps.pop_back();
  auto mc = membridge::cuda::mapping::map(*range, 64_MiB, *b, access::none);
  ASSERT_TRUE(mc);
  maps.push_back(std::move(*mc));
  const std::size_t calls_before = fake_.calls().size();
  ASSERT_TRUE(membridge::cuda::mapping::set_access(maps, access::read_write));
  EXPECT_EQ(std::count(fake_.calls().begin() + static_cast<std::ptrdiff_t>(calls_before), fake_.calls().end(),
                       "cuMemSetAccess"),
            1);
  EXPECT_EQ(maps[0].rights(), access::read_write);
  EXPECT_EQ(maps[1].rights(), access::read_write);
  EXPECT_EQ(fake_.state().mappings.at(range->base() + 64_MiB).access, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

TEST_F(imported_buffer_test, truncate_waits_then_unmaps_and_releases_the_last_chunks) {
  auto [exporter, chunks, view] = exported_and_reserved();
  for (const auto& c : chunks) ASSERT_TRUE(view.append(c.fd, c.offset, c.size));
  ASSERT_TRUE(view.set_size(250_MiB));
  const CUdeviceptr base = view.address();
  const auto handles_before = fake_.state().handles.size();
  const int syncs = fake_.synchronize_count();

  const auto too_many = view.truncate(4);
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error().code(), errc::invalid_argument);
  EXPECT_EQ(view.chunk_count(), 3u);

  ASSERT_TRUE(view.truncate(3));  // keeping all: nothing to do
  EXPECT_EQ(view.chunk_count(), 3u);
  EXPECT_EQ(fake_.synchronize_count(), syncs);

  ASSERT_TRUE(view.truncate(1));
  EXPECT_EQ(fake_.synchronize_count() - syncs, 1) << "unmapping two chunks waits for the device once, first";
  EXPECT_EQ(view.address(), base);
  EXPECT_EQ(view.capacity(), 64_MiB);
  EXPECT_EQ(view.size(), 64_MiB) << "the size cannot stay past the mapped bytes";
  expect_mirrors(view, exporter, 1);
  EXPECT_EQ(fake_.state().handles.size(), handles_before - 2) << "the dropped imports must be released";
  EXPECT_EQ(fake_.state().free_memory, 80_GiB - 256_MiB) << "the exporter still holds its memory";

  // The view grows again at the same place.
  ASSERT_TRUE(view.append(chunks[1].fd, chunks[1].offset, chunks[1].size));
  expect_mirrors(view, exporter, 2);
  EXPECT_EQ(view.address(), base);
  ASSERT_TRUE(view.truncate(0));
  EXPECT_EQ(view.chunk_count(), 0u);
  EXPECT_EQ(view.capacity(), 0u);
  EXPECT_EQ(view.size(), 0u);
  EXPECT_TRUE(view.valid()) << "the range stays reserved";
  EXPECT_EQ(fake_.state().ranges.count(base), 1u);
}

TEST_F(imported_buffer_test, a_failed_unmap_during_truncate_keeps_the_view_consistent) {
  auto [exporter, chunks, view] = exported_and_reserved();
  for (const auto& c : chunks) ASSERT_TRUE(view.append(c.fd, c.offset, c.size));
  fake_.fail_function("cuMemUnmap", CUDA_ERROR_INVALID_VALUE);
  const auto r = view.truncate(1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().call(), "cuMemUnmap");
  expect_mirrors(view, exporter, 3);  // the last chunk could not go, so none went
  ASSERT_TRUE(view.truncate(1));
  expect_mirrors(view, exporter, 1);
}

TEST_F(imported_buffer_test, set_size_past_the_capacity_is_refused) {
  auto [exporter, chunks, view] = exported_and_reserved();
  ASSERT_TRUE(view.append(chunks[0].fd, 0, chunks[0].size));
  ASSERT_TRUE(view.set_size(64_MiB));
  const auto r = view.set_size(64_MiB + 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::invalid_argument);
  EXPECT_EQ(view.size(), 64_MiB);
  ASSERT_TRUE(view.set_size(0));
  EXPECT_EQ(view.size(), 0u);
  EXPECT_EQ(imported_buffer{}.set_size(1).error().code(), errc::invalid_argument);
}

TEST_F(imported_buffer_test, destruction_unmaps_releases_then_frees_and_the_memory_outlives_the_exporter) {
  const auto clean = fake_.state();
  CUdeviceptr base = 0;
  {
    imported_buffer view;
    {
      auto exporter = make_exporter();
      auto chunks = export_all(exporter);
      view = reserve(exporter.max_size());
      for (const auto& c : chunks) ASSERT_TRUE(view.append(c.fd, c.offset, c.size));
      base = view.address();
    }
    // The exporter and its fds are gone; the view's imports keep the memory.
    const auto state = fake_.state();
    EXPECT_EQ(state.free_memory, 80_GiB - 256_MiB);
    EXPECT_EQ(state.mappings.size(), 3u);
    EXPECT_EQ(state.handles.size(), 3u);
    EXPECT_EQ(state.ranges.size(), 1u);
  }
  EXPECT_EQ(fake_.state(), clean) << "everything must be released";  // (TearDown checks the rest)
  // Order: every unmap before the releases that follow it, and the range freed last.
  const auto& calls = fake_.calls();
  const auto free = std::find(calls.rbegin(), calls.rend(), "cuMemAddressFree");
  const auto last_release = std::find(calls.rbegin(), calls.rend(), "cuMemRelease");
  const auto last_unmap = std::find(calls.rbegin(), calls.rend(), "cuMemUnmap");
  ASSERT_NE(free, calls.rend());
  EXPECT_LT(free - calls.rbegin(), last_release - calls.rbegin()) << "the range must be freed last";
  EXPECT_LT(last_release - calls.rbegin(), last_unmap - calls.rbegin()) << "release follows unmap";
  EXPECT_NE(base, 0u);
}

TEST_F(imported_buffer_test, moving_keeps_the_address_and_empties_the_source) {
  auto exporter = make_exporter();
  auto chunks = export_all(exporter);
  auto a = reserve(exporter.max_size());
  ASSERT_TRUE(a.append(chunks[0].fd, 0, chunks[0].size));
  ASSERT_TRUE(a.set_size(1_MiB));
  const CUdeviceptr base = a.address();
  imported_buffer b = std::move(a);
  EXPECT_FALSE(a.valid());              // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.size(), 0u);              // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.capacity(), 0u);          // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.chunk_count(), 0u);       // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.address(), base);
  EXPECT_EQ(b.size(), 1_MiB);
  expect_mirrors(b, exporter, 1);

  // Move-assigning releases the target's own chunks and range first.
  auto c = reserve(exporter.max_size());
  ASSERT_TRUE(c.append(chunks[0].fd, 0, chunks[0].size));
  ASSERT_TRUE(c.append(chunks[1].fd, chunks[1].offset, chunks[1].size));
  const CUdeviceptr c_base = c.address();
  c = std::move(b);
  EXPECT_FALSE(b.valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.size(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.address(), base);
  EXPECT_EQ(c.size(), 1_MiB);
  const auto state = fake_.state();
  EXPECT_EQ(state.ranges.count(c_base), 0u) << "the target's old range must be freed";
  EXPECT_EQ(state.ranges.size(), 2u);  // the exporter's and the view's
  EXPECT_EQ(state.mappings.size(), 3u + 1u);
  expect_mirrors(c, exporter, 1);
}

}  // namespace

// Issue 18 item 4: the view's teardown shares growable_buffer's chunk list: ONE context synchronize
// for all its chunks, before the first unmap, and every import released.
TEST_F(imported_buffer_test, destroying_an_n_chunk_view_synchronizes_once_before_the_unmaps) {
  auto [exporter, chunks, view] = exported_and_reserved();
  for (const auto& c : chunks) ASSERT_TRUE(view.append(c.fd, c.offset, c.size));
  ASSERT_EQ(view.chunk_count(), 3u);
  const auto handles_before = fake_.state().handles.size();
  const int syncs = fake_.synchronize_count();
  const std::size_t from = fake_.calls().size();
  view = imported_buffer{};
  const std::vector<std::string> made(fake_.calls().begin() + static_cast<std::ptrdiff_t>(from), fake_.calls().end());
  EXPECT_EQ(fake_.synchronize_count() - syncs, 1) << membridge::testing::join(made);
  EXPECT_EQ(std::count(made.begin(), made.end(), "cuMemUnmap"), 3) << membridge::testing::join(made);
  EXPECT_LT(std::find(made.begin(), made.end(), "cuCtxSynchronize"), std::find(made.begin(), made.end(), "cuMemUnmap"))
      << "the wait must come before the first unmap: " << membridge::testing::join(made);
  EXPECT_EQ(fake_.state().handles.size(), handles_before - 3) << "every import must be released";
  EXPECT_EQ(fake_.state().mappings.size(), 3u) << "only the exporter's three chunks stay mapped";
  // The exporter's own teardown: one more wait for its three chunks.
  const int before_exporter = fake_.synchronize_count();
  exporter = growable_buffer{};
  EXPECT_EQ(fake_.synchronize_count() - before_exporter, 1);
  EXPECT_TRUE(fake_.state().mappings.empty());
  chunks.clear();  // the exported fds: the last references to the memory
  EXPECT_EQ(fake_.state().free_memory, 80_GiB);
}
