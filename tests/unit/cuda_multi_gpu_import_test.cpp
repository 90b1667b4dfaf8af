// imported_buffer over several GPUs on the scripted driver: chunks whose memory lives on another GPU
// than the importing device (imported when peer access allows, refused naming both GPUs when not),
// grant_access for other GPUs on existing and future chunks, and a failure at every driver step of
// these paths leaving the view, the driver and the process's fds as they were.
#include "fake_driver_test.hpp"
#include "fake_import_steps.hpp"
#include "fd_leak_listener.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/imported_buffer.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::access;
using membridge::cuda::device;
using membridge::cuda::device_access;
using membridge::cuda::exported_chunk;
using membridge::cuda::growable_buffer;
using membridge::cuda::imported_buffer;
using membridge::testing::export_all;
using membridge::testing::fail_every_step;
using membridge::testing::join;

constexpr membridge::cuda::chunk_policy two_mib{.growth_factor = 1.0, .max_chunk = 2_MiB};

class multi_gpu_import_test : public membridge::testing::three_gpu_fake_test {
 protected:
  // The exporter: a buffer on GPU 0 with three 2 MiB chunks on GPUs 0, 1, 0.
  growable_buffer make_exporter() {
    return membridge::testing::value_or_failure(
        growable_buffer::create(d0_, {.size = 6_MiB, .max_size = 64_MiB, .chunks = two_mib,
                                      .access = {{&d1_, access::read_write}},
                                      .placement = {.devices = {&d0_, &d1_}}}));
  }

  static std::vector<imported_buffer::chunk_source> sources(const std::vector<exported_chunk>& chunks,
                                                            std::size_t first, std::size_t last) {
    std::vector<imported_buffer::chunk_source> out;
    for (std::size_t i = first; i < last; ++i) out.push_back({chunks[i].fd, chunks[i].offset, chunks[i].size});
    return out;
  }

  imported_buffer reserve(const device& dev) {
    return membridge::testing::value_or_failure(imported_buffer::reserve(dev, 64_MiB));
  }
};

TEST_F(multi_gpu_import_test, chunks_on_another_gpu_are_imported_with_access_for_the_importing_gpu) {
  auto exporter = make_exporter();
  auto chunks = export_all(exporter);
  // Imported on GPU 2: chunks 0 and 2 live on GPU 0, chunk 1 on GPU 1.
  auto view = reserve(d2_);
  ASSERT_TRUE(view.append_all(sources(chunks, 0, 3)));
  ASSERT_EQ(view.chunk_count(), 3U);
  const std::vector<int> where{0, 1, 0};
  for (std::size_t i = 0; i < 3; ++i) {
    const CUdeviceptr at = view.address() + chunks[i].offset;
    EXPECT_EQ(memory_location(at), where[i]) << i;
    EXPECT_EQ(rights_of(at, 2), CU_MEM_ACCESS_FLAGS_PROT_READWRITE) << i;
    EXPECT_EQ(rights_of(at, 0), CU_MEM_ACCESS_FLAGS_PROT_NONE) << "only the importing GPU has rights, chunk " << i;
  }
  EXPECT_TRUE(fake_.misuse().empty()) << join(fake_.misuse());
}

TEST_F(multi_gpu_import_test, a_chunk_on_a_gpu_without_peer_access_is_refused_naming_both_and_nothing_changes) {
  fake_.no_peer_access = {{2, 1}};
  auto exporter = make_exporter();
  auto chunks = export_all(exporter);
  auto view = reserve(d2_);
  ASSERT_TRUE(view.append(chunks[0].fd, chunks[0].offset, chunks[0].size));  // on GPU 0: fine
  const auto before = fake_.state();
  const auto fds_before = membridge::testing::open_fds();
  const auto r = view.append_all(sources(chunks, 1, 3));  // chunk 1 on GPU 1: GPU 2 cannot reach it
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::unsupported);
  const std::string text = r.error().message();
  EXPECT_NE(text.find("device 2"), std::string::npos) << text;
  EXPECT_NE(text.find("device 1"), std::string::npos) << text;
  EXPECT_NE(text.find("offset 2 MiB"), std::string::npos) << text;
  EXPECT_EQ(fake_.state(), before);
  EXPECT_EQ(membridge::testing::open_fds(), fds_before);
  EXPECT_EQ(view.chunk_count(), 1U);
  EXPECT_EQ(view.capacity(), 2_MiB);
}

TEST_F(multi_gpu_import_test, grant_access_covers_existing_chunks_in_one_call_and_future_appends) {
  auto exporter = make_exporter();
  auto chunks = export_all(exporter);
  auto view = reserve(d0_);
  ASSERT_TRUE(view.append_all(sources(chunks, 0, 2)));
  const std::size_t from = fake_.calls().size();
  const std::vector<device_access> grants{{&d1_, access::read}, {&d2_, access::read_write}};
  ASSERT_TRUE(view.grant_access(grants));
  const std::vector<std::string> made(fake_.calls().begin() + static_cast<std::ptrdiff_t>(from), fake_.calls().end());
  EXPECT_EQ(std::count(made.begin(), made.end(), "cuMemSetAccess"), 1) << join(made);
  for (std::size_t i = 0; i < 2; ++i) {
    const CUdeviceptr at = view.address() + chunks[i].offset;
    EXPECT_EQ(rights_of(at, 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE) << "the importer's rights unchanged, chunk " << i;
    EXPECT_EQ(rights_of(at, 1), CU_MEM_ACCESS_FLAGS_PROT_READ) << i;
    EXPECT_EQ(rights_of(at, 2), CU_MEM_ACCESS_FLAGS_PROT_READWRITE) << i;
  }
  ASSERT_TRUE(view.append(chunks[2].fd, chunks[2].offset, chunks[2].size, access::read));
  const CUdeviceptr third = view.address() + chunks[2].offset;
  EXPECT_EQ(rights_of(third, 0), CU_MEM_ACCESS_FLAGS_PROT_READ);
  EXPECT_EQ(rights_of(third, 1), CU_MEM_ACCESS_FLAGS_PROT_READ);
  EXPECT_EQ(rights_of(third, 2), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  // Granting again changes the rights; the wait at teardown covers all three GPUs once each.
  const std::vector<device_access> wider{{&d1_, access::read_write}};
  ASSERT_TRUE(view.grant_access(wider));
  EXPECT_EQ(rights_of(third, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  const std::size_t synced = fake_.synchronized_devices().size();
  ASSERT_TRUE(view.truncate(0));
  EXPECT_EQ(std::vector<int>(fake_.synchronized_devices().begin() + static_cast<std::ptrdiff_t>(synced),
                             fake_.synchronized_devices().end()),
            (std::vector<int>{0, 1, 2}));
}

TEST_F(multi_gpu_import_test, grant_access_refuses_bad_lists_and_gpus_without_peer_access_changing_nothing) {
  auto exporter = make_exporter();
  auto chunks = export_all(exporter);
  auto view = reserve(d0_);
  ASSERT_TRUE(view.append_all(sources(chunks, 0, 3)));
  const auto before = fake_.state();
  const auto refused = [&](std::vector<device_access> grants, errc code, const std::string& says) {
    const auto r = view.grant_access(grants);
    ASSERT_FALSE(r) << says;
    EXPECT_EQ(r.error().code(), code) << r.error().message();
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
    EXPECT_EQ(fake_.state(), before) << says;
  };
  refused({}, errc::invalid_argument, "no device");
  refused({{nullptr, access::read}}, errc::invalid_argument, "names no device");
  refused({{&d0_, access::read}}, errc::invalid_argument, "the importing device");
  refused({{&d1_, access::read}, {&d1_, access::read}}, errc::invalid_argument, "named twice");
  // GPU 2 cannot reach chunk 1's memory on GPU 1: refused before any access call, naming both.
  fake_.no_peer_access = {{2, 1}};
  refused({{&d1_, access::read}, {&d2_, access::read}}, errc::unsupported, "device 2");
  refused({{&d2_, access::read}}, errc::unsupported, "device 1");
  imported_buffer empty;
  const std::vector<device_access> one{{&d1_, access::read}};
  EXPECT_EQ(empty.grant_access(one).error().code(), errc::invalid_argument);
  // After a refusal, appends still name only the importing device.
  ASSERT_TRUE(view.truncate(2));
  ASSERT_TRUE(view.append(chunks[2].fd, chunks[2].offset, chunks[2].size));
  EXPECT_EQ(rights_of(view.address() + chunks[2].offset, 2), CU_MEM_ACCESS_FLAGS_PROT_NONE);
}

TEST_F(multi_gpu_import_test, a_failure_at_every_step_of_a_cross_gpu_append_leaves_the_view_as_it_was) {
  auto exporter = make_exporter();
  auto chunks = export_all(exporter);
  auto view = reserve(d2_);
  ASSERT_TRUE(view.append(chunks[0].fd, chunks[0].offset, chunks[0].size));
  const std::vector<device_access> grants{{&d1_, access::read}};
  ASSERT_TRUE(view.grant_access(grants));
  const auto rest = sources(chunks, 1, 3);
  const int k = fail_every_step(fake_, view, [&] { return view.append_all(rest); });
  EXPECT_GE(k, 8) << "too few steps: two imports, properties, peer checks, maps and the access call";
  EXPECT_EQ(view.chunk_count(), 3U);
  EXPECT_EQ(rights_of(view.address() + chunks[1].offset, 1), CU_MEM_ACCESS_FLAGS_PROT_READ);
}

TEST_F(multi_gpu_import_test, a_failure_at_every_step_of_grant_access_changes_nothing) {
  auto exporter = make_exporter();
  auto chunks = export_all(exporter);
  auto view = reserve(d2_);
  ASSERT_TRUE(view.append_all(sources(chunks, 0, 3)));
  const std::vector<device_access> grants{{&d0_, access::read}, {&d1_, access::read_write}};
  const int k = fail_every_step(fake_, view, [&] { return view.grant_access(grants); });
  EXPECT_GE(k, 3) << "too few steps: peer checks and the access call";
  EXPECT_EQ(rights_of(view.address(), 0), CU_MEM_ACCESS_FLAGS_PROT_READ);
  EXPECT_EQ(rights_of(view.address(), 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

}  // namespace
